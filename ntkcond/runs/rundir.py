"""Run directories: one configuration, append-only JSONL records, a lock, and safe resumption.

A run directory holds

  ``config.json``    everything that determines the results, including a fingerprint of the
                     data after preprocessing (``data_fingerprint``);
  ``records.jsonl``  one JSON object per finished work item, appended and fsynced as each one
                     finishes, so a killed run loses at most the item in flight;
  ``.lock``          held (``filelock``) while a run writes there; ``.lock.owner`` names the
                     process holding it;
  and whatever outputs the run writes from its records (tables, figures), all atomically.

Policy, the same for every script that writes a run:
  * a directory holding a run is never replaced silently: without ``resume`` or ``overwrite``
    opening it raises ``ValueError`` naming both flags;
  * ``resume`` continues the run there: the stored configuration (data fingerprint included)
    must equal the new one, and the records already there are not recomputed;
  * ``overwrite`` empties the records *before* it writes the new configuration, so a crash in
    between never leaves old records under a new configuration;
  * a second run into a directory in use fails at once with ``RunLockedError`` naming the holder;
  * ``records.jsonl`` is repaired only where the damage is provably a torn final line (the last
    line, without its newline, that does not parse); any other bad line is refused with its
    line number.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket

import numpy as np

from .._core.io import append_jsonl, atomic_write, fsync_dir

__all__ = ["RunDir", "RunLockedError", "open_run", "data_fingerprint"]

CONFIG = "config.json"
RECORDS = "records.jsonl"
LOCK = ".lock"


class RunLockedError(ValueError):
    """Another process is writing to the run directory."""


def data_fingerprint(*arrays) -> str:
    """sha256 over the dtype, shape and bytes of each array (the data after preprocessing).

    Two runs resume into one directory only if their fingerprints agree, so replacing the
    ``.npz`` behind a path, or changing its preprocessing, is detected.
    """
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.data)
    return "sha256:" + h.hexdigest()


class RunDir:
    """An opened (and locked) run directory; use as a context manager or call ``close``.

    Attributes:
      path: the folder.
      config: the configuration written to ``config.json``.
      key_fields: record fields that identify a work item within one configuration.
      records: records finished so far (those found when resuming, then those appended).
      done: the set of their keys.
    """

    def __init__(self, path, config, key_fields, records, lock):
        self.path, self.config, self.key_fields = path, config, tuple(key_fields)
        self.records = list(records)
        self.done = {self.key(r) for r in self.records}
        self._lock = lock

    def __repr__(self) -> str:
        return f"RunDir({self.path!r}, {len(self.records)} records)"

    def key(self, record: dict) -> tuple:
        """The identifying fields of a record, as a hashable tuple (str for non-scalars)."""
        return tuple(_hashable(record.get(f)) for f in self.key_fields)

    def file(self, name: str) -> str:
        """Path of a file in the run directory."""
        return os.path.join(self.path, name)

    def append(self, record: dict) -> None:
        """Append one finished record (fsynced). Refuses a record whose key is already done."""
        k = self.key(record)
        if k in self.done:
            raise ValueError(f"RunDir.append: record {dict(zip(self.key_fields, k))} is already in {self.path}")
        append_jsonl(self.file(RECORDS), record)
        self.records.append(record)
        self.done.add(k)

    def close(self) -> None:
        """Release the lock (idempotent)."""
        if self._lock is not None:
            _unlock(self.path, self._lock)
            self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _hashable(v):
    return json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v


def _lock(path: str, where: str):
    import filelock

    lock = filelock.FileLock(os.path.join(path, LOCK), timeout=0)
    owner_path = os.path.join(path, LOCK + ".owner")
    try:
        lock.acquire()
    except filelock.Timeout:
        try:
            with open(owner_path, encoding="utf-8") as f:
                owner = f.read().strip() or "unknown process"
        except OSError:
            owner = "unknown process"
        raise RunLockedError(f"{where}: {path} is in use by another run ({owner}); wait for it "
                             "to finish or choose another --out") from None
    with open(owner_path, "w", encoding="utf-8") as f:
        f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    return lock


def _unlock(path: str, lock) -> None:
    try:
        os.unlink(os.path.join(path, LOCK + ".owner"))
    except OSError:
        pass
    lock.release()


def _read_json_object(path: str, where: str) -> dict:
    if os.path.isdir(path):
        raise ValueError(f"{where}: expected {path} to be a JSON file, got a directory")
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{where}: {path} is not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected {path} to hold a JSON object, got {type(value).__name__}")
    return value


def read_records(path: str, key_fields, where: str = "read_records", *, repair: bool = True) -> list[dict]:
    """Records of a ``records.jsonl``; repairs a torn final line (see the module docstring).

    With ``repair=False`` (a reader beside a run that may still be writing) the torn line is
    dropped from the result and the file is left as it is."""
    if os.path.isdir(path):
        raise ValueError(f"{where}: expected {path} to be a file, got a directory")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    lines = (text if text is not None else raw.decode("utf-8", "replace")).split("\n")
    complete, tail = lines[:-1], lines[-1]  # tail: text after the last newline ('' if none)
    records = []
    for k, line in enumerate(complete):
        if not line.strip():
            continue
        records.append(_parse_record(line, path, k + 1, key_fields, where, text is None))
    repaired = False
    if tail.strip():
        try:
            records.append(_parse_record(tail, path, len(lines), key_fields, where, False))
        except ValueError:
            repaired = True  # the final line, cut mid-write by a kill: provably torn, dropped
        else:
            repaired = True  # a complete record missing only its newline: kept
    if repaired and repair:
        atomic_write(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return records


def _parse_record(line, path, lineno, key_fields, where, undecodable) -> dict:
    try:
        if undecodable:
            raise json.JSONDecodeError("not UTF-8", line, 0)
        rec = json.loads(line)
    except json.JSONDecodeError:
        raise ValueError(f"{where}: {path} line {lineno} is not a JSON record; the file is "
                         "damaged beyond a torn last line: fix it or use --overwrite") from None
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: {path} line {lineno}: expected a JSON object, got "
                         f"{type(rec).__name__}")
    missing = [f for f in key_fields if f not in rec]
    if missing:
        raise ValueError(f"{where}: {path} line {lineno}: record lacks the key fields {missing}")
    return rec


def open_run(path: str, config: dict, *, key_fields, resume: bool = False,
             overwrite: bool = False, where: str = "open_run") -> RunDir:
    """Create, resume or overwrite a run directory, and lock it.

    Args:
      path: the folder (created if missing; its parent must be writable).
      config: JSON-serialisable description of everything that determines the results (put a
        ``data_fingerprint(x)`` in it).
      key_fields: record fields identifying a work item, e.g. ("batch_index", "depth", ...).
      resume: continue the run there; its stored config must equal ``config``.
      overwrite: discard what is there and start over.
      where: the caller's name for error messages.

    Returns:
      a locked ``RunDir``; close it (or use ``with``) when the run ends.

    Raises:
      ValueError: a run is there and neither flag was given; the stored configuration differs
        (the differing keys are named); both flags; damaged state (named file and line).
      RunLockedError: another process holds the directory.
    """
    if resume and overwrite:
        raise ValueError(f"{where}: expected at most one of --resume and --overwrite, got both")
    config = json.loads(json.dumps(config))  # normalise (tuples → lists) for comparison
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{where}: expected --out to be a directory, got the file {path}")
    os.makedirs(path, exist_ok=True)
    lock = _lock(path, where)
    try:
        return _open_locked(path, config, tuple(key_fields), resume, overwrite, where, lock)
    except BaseException:
        _unlock(path, lock)
        raise


def _open_locked(path, config, key_fields, resume, overwrite, where, lock) -> RunDir:
    config_path, records_path = os.path.join(path, CONFIG), os.path.join(path, RECORDS)
    has_config, has_records = os.path.exists(config_path), os.path.exists(records_path)
    records: list[dict] = []
    if overwrite:
        atomic_write(records_path, "")  # records go first: never old records under a new config
    elif has_config or has_records:
        if not resume:
            raise ValueError(f"{where}: {path} already holds a run; pass --resume to continue it "
                             "or --overwrite to start over")
        if not has_config:
            raise ValueError(f"{where}: cannot resume {path}: {records_path} exists but "
                             f"{config_path} is missing; use --overwrite to start over")
        stored = _read_json_object(config_path, where)
        if stored != config:
            keys = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
            what = ("the data differ from those the run was started with"
                    if keys == ["data_fingerprint"] else f"its configuration differs in {keys}")
            raise ValueError(
                f"{where}: refusing to resume {path}: {what} (stored "
                f"{[stored.get(k) for k in keys]}, asked {[config.get(k) for k in keys]}); "
                "use another --out or --overwrite")
        if has_records:
            records = read_records(records_path, key_fields, where)
    atomic_write(config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")
    if not records and not overwrite:
        atomic_write(records_path, "")
    fsync_dir(path)
    run = RunDir(path, config, key_fields, records, lock)
    if len(run.done) != len(records):
        raise ValueError(f"{where}: {records_path} holds duplicate records")
    return run
