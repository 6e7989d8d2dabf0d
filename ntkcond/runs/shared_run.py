"""One run directory for all the processes of a distributed run (``runs.launcher``).

Process 0 opens, locks and writes the run directory (``runs.rundir.open_run``); every other
process gets a ``RunView`` of it — the same configuration, records and done keys, an
``append`` that only remembers — so all of them take the same decisions (what is left to do,
what is resumed) and call the same collective routes, while only process 0 touches the files.
The configurations (data fingerprint included) are compared across processes first: processes
given other data or flags refuse to start, in every process. Alone (the usual case) it is
``open_run`` itself.
"""
from __future__ import annotations

import contextlib
import json

from ..scale.processes import current_share
from .rundir import RunDir, open_run

__all__ = ["RunView", "shared_run"]


class RunView(RunDir):
    """Process p ≠ 0's copy of process 0's ``RunDir``: records in memory, no files, no lock."""

    def append(self, record: dict) -> None:
        k = self.key(record)
        if k in self.done:
            raise ValueError(f"RunView.append: record {dict(zip(self.key_fields, k))} is already done")
        self.records.append(record)
        self.done.add(k)


@contextlib.contextmanager
def shared_run(out: str, config: dict, *, key_fields, resume: bool = False,
               overwrite: bool = False, where: str = "open_run", outputs=(), validate=None,
               versions=()):
    """``open_run`` in process 0, a ``RunView`` of it in the others (module docstring).

    Raises (in every process): what ``open_run`` raises in process 0, or ValueError when the
    processes' configurations differ (naming the keys).
    """
    share = current_share()
    if not share.distributed:
        with open_run(out, config, key_fields=key_fields, resume=resume, overwrite=overwrite,
                      where=where, outputs=outputs, validate=validate,
                      versions=versions) as run:
            yield run
        return
    configs = share.allgather(json.loads(json.dumps(config)))
    differ = sorted({k for c in configs[1:] for k in set(c) | set(configs[0])
                     if c.get(k) != configs[0].get(k)})
    if differ:
        raise ValueError(f"{where}: the processes were given different runs (they differ in "
                         f"{differ}); start every process with the same data and flags")

    run = error = None
    if share.is_root:
        try:
            run = open_run(out, config, key_fields=key_fields, resume=resume,
                           overwrite=overwrite, where=where, outputs=outputs, validate=validate,
                           versions=versions)
        except Exception as err:  # noqa: BLE001 (raised in every process below)
            error = err
    state = share.broadcast((None if run is None else (run.path, run.config, run.records), error))
    if state[1] is not None:
        raise error if error is not None else state[1]  # process 0 keeps its error's class
    if share.is_root:
        with run:
            yield run
    else:
        path, stored, records = state[0]
        yield RunView(path, stored, key_fields, records, None)
