"""Run directories: one configuration, append-only JSONL records, a lock, and safe resumption.

A run directory holds

  ``config.json``    everything that determines the results, including a fingerprint of the
                     data after preprocessing (``data_fingerprint``), and under
                     ``"provenance"`` one entry per invocation that wrote the run (the start,
                     then each resume: versions, command line, time; ``runs.provenance``);
  ``records.jsonl``  one JSON object per finished work item, appended and fsynced as each one
                     finishes, so a killed run loses at most the item in flight;
  ``.lock``          held (``filelock``) while a run writes there; ``.lock.owner`` names the
                     process holding it;
  and whatever outputs the run writes from its records (tables, figures), all atomically.

Policy, the same for every script that writes a run:
  * a directory holding a run is never replaced silently: without ``resume`` or ``overwrite``
    opening it raises ``ValueError`` naming both flags;
  * ``resume`` continues the run there: the stored configuration (data fingerprint included;
    its provenance aside) must equal the new one, and the records already there are not
    recomputed;
  * ``overwrite`` empties the records and then deletes the old run's derived files (the
    ``outputs`` the caller names: tables, figures, checkpoints, spectra; and stray temporary
    files) *before* it writes the new configuration, so a crash in between never leaves old
    records or outputs under a new configuration;
  * nothing is written through a symbolic link: a run directory holding a symlink (e.g. a
    planted ``.lock.owner`` or ``records.jsonl``) is refused before anything is opened, and
    the files written in place are opened with ``O_NOFOLLOW``;
  * a refusal leaves ``--out`` as it was: when the run fails with ``ValueError``/``TypeError``
    (or ``ArithmeticError``: bad input found after the directory was opened, ``REFUSALS``)
    before its first record and before it
    wrote anything else, ``RunDir`` undoes what ``open_run`` did — a new run's files (and the
    folder, if it made it) are removed, and an overwritten run is put back from
    ``.overwritten/``, where ``overwrite`` moves it until the new run's first record (or its
    clean end) commits the overwrite; a ``.overwritten/`` left by a killed process is deleted
    at the next ``open_run`` (the overwrite had been asked for);
  * a second run into a directory in use fails at once with ``RunLockedError`` naming the holder;
  * ``records.jsonl`` is repaired only where the damage is provably a torn final line (the last
    line, without its newline, that does not parse); any other bad line is refused with its
    line number, and so is a record that fails the caller's ``validate`` (field by field:
    types, ranges, consistency with the configuration), so a tampered record is never trusted.
"""
from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import math
import numbers
import os
import shutil
import socket

import numpy as np

from .._core.io import append_jsonl, atomic_write, fsync_dir, write_nofollow
from .provenance import provenance

__all__ = ["RunDir", "MemoryRun", "RunLockedError", "open_run", "data_fingerprint",
           "check_record_fields", "check_known_fields", "FIELD_KINDS", "read_records"]

CONFIG = "config.json"
#: The key of config.json that lists the invocations that wrote the run (``runs.provenance``).
PROVENANCE = "provenance"
RECORDS = "records.jsonl"
LOCK = ".lock"
BACKUP = ".overwritten"  # the run an overwrite replaces, until the new run commits (above)

#: The errors that end a run as a refusal (bad input found after the folder was opened): before
#: the first record, with nothing else written, ``RunDir`` undoes ``open_run`` (module docstring).
REFUSALS = (ValueError, TypeError, ArithmeticError)


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

    def __init__(self, path, config, key_fields, records, lock, undo=None):
        self.path, self.config, self.key_fields = path, config, tuple(key_fields)
        self.records = list(records)
        self.done = {self.key(r) for r in self.records}
        self._lock = lock
        self._undo = undo  # ``_Undo`` of open_run until the first record commits the run

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
        append_jsonl(self.file(RECORDS), record)  # O_NOFOLLOW: never through a link
        self.records.append(record)
        self.done.add(k)
        self._commit()

    def _commit(self) -> None:
        """The run is under way: an overwritten run's backup goes, nothing is undone now."""
        if self._undo is not None:
            self._undo.commit()
            self._undo = None

    def close(self, error: BaseException | None = None) -> None:
        """Release the lock (idempotent). ``error``: the exception the run ends with; one of
        ``REFUSALS`` before the first record, with nothing else written, undoes what
        ``open_run`` did (module docstring)."""
        if self._lock is None:
            return
        undo, self._undo = self._undo, None
        refused = isinstance(error, REFUSALS) and undo is not None
        if refused and undo.untouched():
            undo.rollback(lambda: _unlock(self.path, self._lock))
        else:
            if undo is not None:
                undo.commit()
            _unlock(self.path, self._lock)
        self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(exc)


class _Undo:
    """What ``open_run`` changed in a run directory, and how to put it back (module docstring).

    Attributes:
      path: the run directory; made: the highest folder open_run created (None: none);
        before: the names in it before (a fresh run in an existing folder removes only its own
        files); backup: the folder holding an overwritten run (None for a fresh run);
        snapshot: (name → (size, mtime)) right after open_run, to tell a refusal from a run
        that wrote something.
    """

    def __init__(self, path: str, made: str | None, before: set, backup: str | None):
        self.path, self.made, self.before, self.backup = path, made, before, backup
        self.snapshot = self._listing()

    def _listing(self) -> dict:
        out = {}
        with os.scandir(self.path) as entries:
            for e in entries:
                if e.name not in (LOCK, LOCK + ".owner", BACKUP):
                    st = e.stat(follow_symlinks=False)
                    out[e.name] = (st.st_size, st.st_mtime_ns)
        return out

    def untouched(self) -> bool:
        """Nothing written since open_run (no record, no output, no checkpoint)."""
        try:
            return self._listing() == self.snapshot
        except OSError:
            return False

    def commit(self) -> None:
        if self.backup is not None and os.path.isdir(self.backup):
            shutil.rmtree(self.backup, ignore_errors=True)
            fsync_dir(self.path)

    def rollback(self, unlock) -> None:
        """Remove the new run's config and records; put an overwritten run back (config last,
        so a kill in between leaves records without a config: refused at the next open, never
        old records under a new configuration); release the lock; remove the lock file and the
        folder where this run made them."""
        for name in (CONFIG, RECORDS):
            if name not in self.before or self.backup is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.path, name))
        if self.backup is not None:
            names = sorted(os.listdir(self.backup), key=lambda n: n == CONFIG)
            for name in names:
                os.replace(os.path.join(self.backup, name), os.path.join(self.path, name))
            os.rmdir(self.backup)
        fsync_dir(self.path)
        unlock()
        if LOCK not in self.before:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.path, LOCK))
        if self.made is not None:  # only folders left empty: never anything not ours
            _remove_empty(self.path, self.made)


class MemoryRun(RunDir):
    """A run without a directory (``open_run(None, ...)``): the same configuration
    (provenance included), keys and records, held in memory; ``append`` only remembers,
    ``file`` is None (callers write no outputs), nothing is locked."""

    def __init__(self, config, key_fields):
        super().__init__(None, config, key_fields, [], None)

    def file(self, name: str) -> None:
        return None

    def append(self, record: dict) -> None:
        k = self.key(record)
        if k in self.done:
            raise ValueError(f"MemoryRun.append: record {dict(zip(self.key_fields, k))} is "
                             "already done")
        self.records.append(record)
        self.done.add(k)


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
    try:
        write_nofollow(owner_path, f"pid {os.getpid()} on {socket.gethostname()}\n", where)
    except BaseException:
        lock.release()
        raise
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


def read_records(path: str, key_fields, where: str = "read_records", validate=None, *,
                 repair: bool = True) -> list[dict]:
    """Records of a ``records.jsonl``; repairs a torn final line (see the module docstring).

    ``validate``: optional callable(record) raising ``ValueError``/``TypeError`` for a record
    that is not one the run could have written; the error is re-raised naming the file and
    the line. Lines are numbered from 1 in the file as it is (blank lines counted).
    With ``repair=False`` (a reader beside a run that may still be writing) the torn line is
    dropped from the result and the file is left as it is."""
    if os.path.isdir(path):
        raise ValueError(f"{where}: expected {path} to be a file, got a directory")
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # tail: bytes after the last newline (b'' if none)
    records = []
    for k, line in enumerate(complete):
        if not line.strip():
            continue
        records.append(_parse_record(line, path, k + 1, key_fields, where, validate))
    repaired = False
    if tail.strip():
        try:
            rec = _parse_record(tail, path, len(lines), key_fields, where, None)
        except ValueError:
            repaired = True  # the final line, cut mid-write by a kill: provably torn, dropped
        else:
            if validate is not None:  # complete JSON: a record like any other, checked as such
                _validated(rec, path, len(lines), where, validate)
            records.append(rec)
            repaired = True  # a complete record missing only its newline: kept
    if repaired and repair:
        atomic_write(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return records


def _validated(rec, path, lineno, where, validate) -> None:
    try:
        validate(rec)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}: {path} line {lineno}: {err}; the record was not written by "
                        "this run as it stands (edited or damaged): fix it or use --overwrite") from None


def _parse_record(line: bytes, path, lineno, key_fields, where, validate) -> dict:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: {path} line {lineno} is not UTF-8 text (byte "
                         f"{line[err.start:err.start + 1]!r} at column {err.start + 1}); the file "
                         "is damaged beyond a torn last line: fix it or use --overwrite") from None
    try:
        rec = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"{where}: {path} line {lineno} is not a JSON record; the file is "
                         "damaged beyond a torn last line: fix it or use --overwrite") from None
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: {path} line {lineno}: expected a JSON object, got "
                         f"{type(rec).__name__}")
    missing = [f for f in key_fields if f not in rec]
    if missing:
        raise ValueError(f"{where}: {path} line {lineno}: record lacks the key fields {missing}")
    if validate is not None:
        _validated(rec, path, lineno, where, validate)
    return rec


def check_record_fields(rec: dict, fields: dict) -> None:
    """Check a record field by field: ``fields`` maps a name to its kind, one of

      "int" (an integer, not a bool), "int>=0", "int>=1", "float" (a finite real number),
      "float>=0", "float>0", "angle" (a finite real in [0, 180], degrees), "bool", "str",
      "pair" (a list of two integers >= 0), a tuple of allowed values,
      or any of these with "|None" appended (None allowed too).

    ValueError/TypeError names the field, what was expected and what was got (the caller
    adds the file and line: ``read_records``)."""
    for name, kind in fields.items():
        if name not in rec:
            raise ValueError(f"expected a field {name!r}, got none")
        value = rec[name]
        optional = isinstance(kind, str) and kind.endswith("|None")
        if optional:
            kind = kind[: -len("|None")]
            if value is None:
                continue
        if not _field_ok(value, kind):
            shown = repr(value) if len(repr(value)) < 60 else repr(value)[:57] + "..."
            want = f"one of {list(kind)}" if isinstance(kind, tuple) else _KINDS[kind]
            raise ValueError(f"expected {name} as {want}{' or null' if optional else ''}, "
                             f"got {shown}")


#: The kind of every record field the package's commands write (``check_record_fields``
#: kinds; the weakest over the commands: e.g. kappa_eff is null for a dead net of
#: ``train_vs_depth``). ``check_known_fields`` holds a record to it whichever command wrote it
#: (``ntkcond.runs.load``); each command's own validator checks more (ranges, consistency).
FIELD_KINDS = {
    "dataset": "str", "split": "str", "activation": "str", "trainable": "str", "name": "str",
    "batch_index": "int>=0", "n": "int>=1", "d": "int>=1", "depth": "int>=0", "rank": "int>=0",
    "seed": "int|None", "i": "int>=0", "j": "int>=0", "steps": "int>=0|None",
    "predicted_steps": "int>=0|None", "steps_run": "int>=0|None", "max_steps": "int>=1",
    "lambda_max": "float>=0", "lambda_min_nonzero": "float>0|None", "kappa_eff": "float>0|None",
    "kappa": "float>0|None", "lambda_min_upper_bound": "float", "lambda_min_bound_ratio":
    "float|None", "seconds": "float>=0", "angle_rad": "float>=0", "angle_deg": "angle",
    "min_grad_angle_deg": "angle", "min_input_angle_deg": "angle", "min_grad_angle_pair": "pair",
    "lr": "float>0|None", "loss0": "float>=0", "rel_loss_at_stop": "float>=0|None",
    "predicted_rel_loss_at_stop": "float>=0", "ntk_drift": "float>=0|None",
    "kappa_target": "float>0|None", "rel_target": "float>0", "kappa_eff_end": "float>0|None",
    "lambda_max_end": "float>=0|None", "w_std": "float>0|None", "b_std": "float>=0",
    "residual": "float>0", "precision_limited": "bool", "predicted_finite": "bool",
    "reached": "bool|None", "diverged": "bool|None", "dead": "bool", "center": "bool",
    "target": "str"}


def check_known_fields(rec: dict) -> None:
    """``check_record_fields`` of the fields of ``rec`` that ``FIELD_KINDS`` knows."""
    check_record_fields(rec, {k: v for k, v in FIELD_KINDS.items() if k in rec})


_KINDS = {"int": "an integer", "int>=0": "an integer >= 0", "int>=1": "an integer >= 1",
          "float": "a finite number", "float>=0": "a finite number >= 0",
          "float>0": "a finite number > 0", "angle": "an angle in [0, 180] degrees",
          "bool": "true or false", "str": "a string", "pair": "a pair [i, j] of indices >= 0"}


def _field_ok(v, kind) -> bool:
    if isinstance(kind, tuple):
        return any(v == k and type(v) is type(k) for k in kind)
    is_int = isinstance(v, numbers.Integral) and not isinstance(v, bool)
    is_real = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
    if kind == "int":
        return is_int
    if kind == "int>=0":
        return is_int and v >= 0
    if kind == "int>=1":
        return is_int and v >= 1
    if kind == "float":
        return is_real
    if kind == "float>=0":
        return is_real and v >= 0
    if kind == "float>0":
        return is_real and v > 0
    if kind == "angle":
        return is_real and 0 <= v <= 180
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "str":
        return isinstance(v, str)
    if kind == "pair":
        return (isinstance(v, list) and len(v) == 2
                and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v))
    raise AssertionError(kind)


def open_run(path: str, config: dict, *, key_fields, resume: bool = False,
             overwrite: bool = False, where: str = "open_run", outputs=(),
             validate=None, versions=()) -> RunDir:
    """Create, resume or overwrite a run directory, and lock it.

    Args:
      path: the folder (created if missing; its parent must be writable), or None for a run
        held in memory (``MemoryRun``: no files, no lock; ``resume`` and ``overwrite`` are
        meaningless there and refused).
      config: JSON-serialisable description of everything that determines the results (put a
        ``data_fingerprint(x)`` in it).
      key_fields: record fields identifying a work item, e.g. ("batch_index", "depth", ...).
      resume: continue the run there; its stored config must equal ``config``.
      overwrite: discard what is there and start over: the records, then every file
        matching ``outputs``, then the new configuration.
      where: the caller's name for error messages.
      outputs: names (``fnmatch`` patterns; a folder name removes the folder) of the files the
        run derives from its records, e.g. ("summary.csv", "figure.png"); deleted on
        ``overwrite`` before the new configuration is written.
      validate: callable(record) raising ValueError/TypeError for a record this run could not
        have written (``check_record_fields`` helps); run on every record read on ``resume``.
      versions: distributions beyond ``runs.provenance.VERSIONED`` whose versions this
        invocation's provenance entry records (e.g. ("optax",)).

    Returns:
      a locked ``RunDir``; close it (or use ``with``) when the run ends.

    Raises:
      ValueError: a run is there and neither flag was given; the stored configuration differs
        (the differing keys are named); both flags; damaged state or a record failing
        ``validate`` (named file and line); a symbolic link in the run directory.
      RunLockedError: another process holds the directory.
    """
    if resume and overwrite:
        raise ValueError(f"{where}: expected at most one of --resume and --overwrite, got both")
    if path is None:
        if resume or overwrite:
            raise ValueError(f"{where}: expected a run directory (out) to "
                             f"{'resume' if resume else 'overwrite'}, got None (a run in memory)")
        config = json.loads(json.dumps(config))
        if PROVENANCE in config:
            raise ValueError(f"{where}: expected a configuration without {PROVENANCE!r} "
                             "(open_run records it), got one")
        config[PROVENANCE] = [provenance(where, versions=versions)]
        return MemoryRun(config, key_fields)
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"{where}: expected --out as a nonempty directory path, got {path!r}")
    config = json.loads(json.dumps(config))  # normalise (tuples → lists) for comparison
    if PROVENANCE in config:
        raise ValueError(f"{where}: expected a configuration without {PROVENANCE!r} (open_run "
                         "records it), got one")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{where}: expected --out to be a directory, got the file {path}")
    made = _first_missing(path)  # the top folder this call makes (None: --out existed)
    os.makedirs(path, exist_ok=True)
    _refuse_symlinks(path, where)
    before = set(os.listdir(path))
    lock = _lock(path, where)
    try:
        return _open_locked(path, config, tuple(key_fields), resume, overwrite, where, lock,
                            tuple(outputs), validate, tuple(versions), made, before)
    except BaseException:
        _unlock(path, lock)
        if made is not None:  # refused before anything was written: the folders go again
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(path, LOCK))
            _remove_empty(path, made)
        raise


def _first_missing(path: str) -> str | None:
    """The highest folder of ``path`` (itself or an ancestor) that does not exist yet."""
    path = os.path.abspath(path)
    top = None
    while not os.path.exists(path):
        top, parent = path, os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return top


def _remove_empty(path: str, top: str) -> None:
    """Remove ``path`` and its ancestors up to ``top`` while they are empty (what this run
    made; a folder holding anything else stays)."""
    path, top = os.path.abspath(path), os.path.abspath(top)
    while True:
        try:
            os.rmdir(path)
        except OSError:
            return
        if path == top or not path.startswith(top + os.sep):
            return
        path = os.path.dirname(path)


def _refuse_symlinks(path: str, where: str) -> None:
    """ValueError if an entry of the run directory is a symbolic link (module docstring)."""
    with os.scandir(path) as entries:
        links = sorted(e.name for e in entries if e.is_symlink())
    if links:
        target = os.readlink(os.path.join(path, links[0]))
        raise ValueError(
            f"{where}: expected regular files in the run directory {path}, got the symbolic "
            f"link{'s' if len(links) > 1 else ''} {', '.join(links)} ({links[0]} -> {target!r}); "
            "nothing is written through a link: remove it or choose another --out")


def _remove_outputs(path: str, outputs) -> None:
    """Delete the files (and folders) of ``path`` matching ``outputs`` and stray temporary
    files of ``atomic_write``; never the configuration, the records or the lock."""
    keep = {CONFIG, RECORDS, LOCK, LOCK + ".owner"}
    patterns = tuple(outputs) + (".tmp-*",)
    with os.scandir(path) as entries:
        doomed = [e for e in entries if e.name not in keep
                  and any(fnmatch.fnmatchcase(e.name, p) for p in patterns)]
    for e in doomed:
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path)
        else:
            os.unlink(e.path)
    fsync_dir(path)


def _back_up(path: str, outputs, has_config: bool, has_records: bool) -> str:
    """Move the run that ``overwrite`` replaces into ``BACKUP``: its records first (never old
    records under a new configuration), then its outputs, then a copy of its configuration
    (which the new one replaces in place)."""
    backup = os.path.join(path, BACKUP)
    os.mkdir(backup)
    if has_records:
        os.replace(os.path.join(path, RECORDS), os.path.join(backup, RECORDS))
    keep = {CONFIG, RECORDS, LOCK, LOCK + ".owner", BACKUP}
    with os.scandir(path) as entries:
        derived = [e.name for e in entries if e.name not in keep
                   and any(fnmatch.fnmatchcase(e.name, p) for p in tuple(outputs) + (".tmp-*",))]
    for name in derived:
        os.replace(os.path.join(path, name), os.path.join(backup, name))
    if has_config:
        shutil.copy2(os.path.join(path, CONFIG), os.path.join(backup, CONFIG))
    fsync_dir(backup)
    fsync_dir(path)
    return backup


def _open_locked(path, config, key_fields, resume, overwrite, where, lock, outputs=(),
                 validate=None, versions=(), made=None, before=frozenset()) -> RunDir:
    config_path, records_path = os.path.join(path, CONFIG), os.path.join(path, RECORDS)
    stale = os.path.join(path, BACKUP)
    if os.path.lexists(stale):  # a killed overwrite's: that overwrite had been asked for
        if os.path.isdir(stale) and not os.path.islink(stale):
            shutil.rmtree(stale)
        else:
            os.unlink(stale)
        before = before - {BACKUP}
    has_config, has_records = os.path.exists(config_path), os.path.exists(records_path)
    records: list[dict] = []
    earlier: list = []  # the provenance of the run resumed
    backup = None
    if overwrite:
        if has_config or has_records:
            backup = _back_up(path, outputs, has_config, has_records)
        atomic_write(records_path, "")  # an empty record file before the new configuration
        _remove_outputs(path, outputs)  # stray temporary files too
    elif has_config or has_records:
        if not resume:
            raise ValueError(f"{where}: {path} already holds a run; pass --resume to continue it "
                             "or --overwrite to start over")
        if not has_config:
            raise ValueError(f"{where}: cannot resume {path}: {records_path} exists but "
                             f"{config_path} is missing; use --overwrite to start over")
        stored = _read_json_object(config_path, where)
        earlier = stored.pop(PROVENANCE, [])
        if stored != config:
            keys = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
            what = ("the data differ from those the run was started with"
                    if keys == ["data_fingerprint"] else f"its configuration differs in {keys}")
            raise ValueError(
                f"{where}: refusing to resume {path}: {what} (stored "
                f"{[stored.get(k) for k in keys]}, asked {[config.get(k) for k in keys]}); "
                "use another --out or --overwrite")
        if has_records:
            records = read_records(records_path, key_fields, where, validate)
    config[PROVENANCE] = list(earlier) + [provenance(where, versions=versions,
                                                     resumed=len(records))]
    atomic_write(config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")
    if not records and not overwrite:
        atomic_write(records_path, "")
    fsync_dir(path)
    fresh = backup is not None or not (has_config or has_records)
    undo = _Undo(path, made, set(before), backup) if fresh else None
    run = RunDir(path, config, key_fields, records, lock, undo)
    if len(run.done) != len(records):
        raise ValueError(f"{where}: {records_path} holds duplicate records")
    return run
