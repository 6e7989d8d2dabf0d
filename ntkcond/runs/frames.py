"""A run directory's records as a pandas DataFrame: ``ntkcond.runs.load(path)``.

    import ntkcond.runs
    df = ntkcond.runs.load("runs/cond_vs_depth")        # one row per record
    df.attrs["batch"], df.attrs["data_fingerprint"]     # the run's config.json
    df[df.width == "inf"].groupby(["activation", "depth"]).kappa_eff.median()

Needs pandas (``pip install 'ntkcond[pandas]'``); imported only when ``load`` is called.
"""
from __future__ import annotations

import json
import os

from .rundir import CONFIG, RECORDS, check_known_fields, read_records

__all__ = ["load"]


def load(path):
    """The records of the run directory ``path`` as a ``pandas.DataFrame``, its config as attrs.

    Args:
      path: a folder written by a sweep or check (``ntkcond cond-vs-depth``, ``min-angle``, …;
        ``ntkcond.runs.rundir``) holding ``config.json`` (a JSON object) and ``records.jsonl``.

    Returns:
      DataFrame with one row per record of ``records.jsonl``, in file order, and one column per
      record field (the union over records, in order of first appearance; a field a record
      lacks is missing there). JSON values stay as they are: ``null`` (e.g. ``kappa`` = ∞ of a
      singular kernel, ``seed`` of an infinite-width record) is NaN in a numeric column and
      None otherwise, lists and objects are Python lists and dicts, and ``width`` holds "inf"
      beside integers (object dtype). ``df.attrs`` is the run's config (a dict, e.g.
      ``df.attrs["dataset"]``, ``df.attrs["preprocessing"]``). A run still writing is read
      as it stands: a final line torn mid-append is left out, and nothing is written.

    Raises:
      ImportError: pandas is not installed (the ``pandas`` extra).
      ValueError: ``path`` is not a run directory (no such folder, no ``config.json`` or
        ``records.jsonl`` or either of them a folder, a config that is not a JSON object, a
        damaged record line, or a record field of another kind than the commands write:
        ``runs.rundir.FIELD_KINDS``, e.g. a kappa_eff that is a string), naming file and line.
    """
    where = "ntkcond.runs.load"
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(f"{where}: needs pandas: pip install 'ntkcond[pandas]' (or pip install "
                          "pandas)") from None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: expected path as a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.isdir(path):
        what = "a file" if os.path.exists(path) else "no such folder"
        raise ValueError(f"{where}: expected a run directory (config.json and records.jsonl), "
                         f"got {path!r}: {what}")
    for name in (CONFIG, RECORDS):
        file = os.path.join(path, name)
        if os.path.exists(file) and not os.path.isfile(file):
            raise ValueError(f"{where}: expected {name} in {path!r} to be a file, got a "
                             f"{'folder' if os.path.isdir(file) else 'special file'}")
    missing = [f for f in (CONFIG, RECORDS) if not os.path.isfile(os.path.join(path, f))]
    if missing:
        raise ValueError(f"{where}: expected a run directory (config.json and records.jsonl), "
                         f"got {path!r} without {' and '.join(missing)}")
    config = _read_config(os.path.join(path, CONFIG), where)
    records = read_records(os.path.join(path, RECORDS), (), where, check_known_fields,
                           repair=False)
    frame = pd.DataFrame.from_records(records) if records else pd.DataFrame()
    frame.attrs = config
    return frame


def _read_config(path: str, where: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{where}: {path} is not valid JSON ({err})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected {path} to hold a JSON object, got "
                         f"{type(config).__name__}")
    return config
