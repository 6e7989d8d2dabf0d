"""A run directory's records as a pandas DataFrame: ``ntkcond.runs.load(path)``.

    import ntkcond.runs
    df = ntkcond.runs.load("runs/cond_vs_depth")        # one row per record
    df.attrs["batch"], df.attrs["data_fingerprint"]     # the run's config.json
    df[df.width == "inf"].groupby(["activation", "depth"]).kappa_eff.median()

A run's library call returns the same table without reading the disk: every result type
(``DepthSweep``, ``BatchSweep``, ``MinAngleRun``, ``TrainSweep``, ``TrackRun``,
``StudyResult``, ``ClaimsReport``) is a ``RunResult`` whose ``frame()`` is ``frame(records, config)``, equal
to ``load`` of its run directory (and available when the call ran without one, ``out=None``).

Needs pandas (``pip install 'ntkcond[pandas]'``); imported only when a frame is made.
"""
from __future__ import annotations

import json
import os

from .rundir import CONFIG, RECORDS, check_known_fields, read_records

__all__ = ["load", "frame", "RunResult"]


def _pandas(where: str):
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(f"{where}: needs pandas: pip install 'ntkcond[pandas]' (or pip install "
                          "pandas)") from None
    return pd


def frame(records, config: dict):
    """The DataFrame ``load`` makes of a run directory holding ``config`` and ``records``:
    each record as JSON reads it back (tuples become lists), one row per record, columns in
    order of first appearance, ``attrs`` the config."""
    pd = _pandas("ntkcond.runs.frames.frame")
    records = [json.loads(json.dumps(r)) for r in records]
    out = pd.DataFrame.from_records(records) if records else pd.DataFrame()
    out.attrs = json.loads(json.dumps(config))
    return out


class RunResult:
    """What every run's result carries: ``records`` (one dict per record, as appended to
    ``records.jsonl``) and ``config`` (as in ``config.json``, provenance included); ``frame()``
    is their DataFrame, equal to ``ntkcond.runs.load`` of the run directory the call wrote
    (subclasses are frozen dataclasses with these two fields)."""

    records: tuple
    config: dict

    def frame(self):
        """The records as a pandas DataFrame, ``attrs`` the config (``frames.frame``): each
        record with its keys sorted, as ``records.jsonl`` stores it (``append_jsonl``)."""
        return frame([json.loads(json.dumps(r, sort_keys=True)) for r in self.records],
                     self.config)


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
    _pandas(where)
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
    return frame(records, config)


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
