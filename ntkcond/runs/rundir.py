"""Run directories: a configuration, append-only JSONL records, and safe resumption.

A run directory holds ``config.json`` (everything that determines the results) and
``records.jsonl`` (one JSON object per finished work item, appended and fsynced as each one
finishes, so a killed run loses at most the item in flight). Resuming reads the records back,
drops a torn last line, and refuses a directory whose configuration differs: records of
different configurations are never mixed.
"""
from __future__ import annotations

import dataclasses
import json
import os

from .._core.io import append_jsonl, atomic_write

__all__ = ["Run", "open_run", "record_key"]

#: The fields that identify a work item within one configuration.
KEY_FIELDS = ("batch_index", "depth", "activation", "width", "seed")


def record_key(record: dict) -> tuple:
    """(batch_index, depth, activation, width as str, seed) of a record."""
    return (
        int(record["batch_index"]),
        int(record["depth"]),
        str(record["activation"]),
        str(record["width"]),
        record.get("seed"),
    )


@dataclasses.dataclass(frozen=True)
class Run:
    """An opened run directory.

    Attributes:
      path: the folder.
      records: records already finished (empty unless resuming).
      done: their ``record_key`` values.
    """

    path: str
    records: tuple
    done: frozenset

    @property
    def records_path(self) -> str:
        return os.path.join(self.path, "records.jsonl")

    def append(self, record: dict) -> None:
        """Append one finished record (fsynced)."""
        append_jsonl(self.records_path, record)


def _read_records(path: str) -> list[dict]:
    records, torn = [], False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if k >= len(lines) - 2:  # the last line, cut by a kill mid-write
                torn = True
                continue
            raise ValueError(f"open_run: {path} line {k + 1} is not valid JSON") from None
    if torn:  # rewrite without the torn line, so appends start on a clean line
        atomic_write(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return records


def open_run(path: str, config: dict, *, resume: bool = False, overwrite: bool = False) -> Run:
    """Create, resume or overwrite a run directory.

    Args:
      path: folder for config.json and records.jsonl.
      config: JSON-serialisable description of everything that determines the results.
      resume: continue the records there (the stored config must equal ``config``).
      overwrite: discard the records there and start over.

    Raises:
      ValueError: records exist and neither resume nor overwrite was asked for; the stored
        configuration differs from ``config`` (the differing keys are named); both flags.
    """
    if resume and overwrite:
        raise ValueError("open_run: expected at most one of resume and overwrite, got both")
    config = json.loads(json.dumps(config))  # normalise (tuples → lists) for comparison
    os.makedirs(path, exist_ok=True)
    config_path = os.path.join(path, "config.json")
    records_path = os.path.join(path, "records.jsonl")
    has_records = os.path.exists(records_path) and os.path.getsize(records_path) > 0
    records: list[dict] = []
    if resume and os.path.exists(config_path):
        with open(config_path, encoding="utf-8") as f:
            stored = json.load(f)
        if stored != config:
            keys = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
            raise ValueError(
                f"open_run: refusing to resume {path}: its configuration differs in {keys} "
                f"(stored {[stored.get(k) for k in keys]}, asked {[config.get(k) for k in keys]}); "
                "use another --out or --overwrite"
            )
        if has_records:
            records = _read_records(records_path)
    elif has_records and not overwrite:
        raise ValueError(
            f"open_run: {records_path} already holds results; pass --resume to continue that run "
            "or --overwrite to start over"
        )
    atomic_write(config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")
    if not records:
        atomic_write(records_path, "")
    keys = [record_key(r) for r in records]
    if len(set(keys)) != len(keys):
        raise ValueError(f"open_run: {records_path} holds duplicate records")
    return Run(path=path, records=tuple(records), done=frozenset(keys))
