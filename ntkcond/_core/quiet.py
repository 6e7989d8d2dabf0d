"""Importing tensorflow-based packages without their native log lines.

tensorflow (under neural-tangents and tensorflow-datasets) logs from C++ while its shared
libraries load — "WARNING: All log messages before absl::InitializeLog() …", "oneDNN custom
operations are on …", "Could not find cuda drivers …" — straight to file descriptor 2, before
``TF_CPP_MIN_LOG_LEVEL`` is read. ``quiet_import(name)`` imports a module with descriptor 2
pointed at /dev/null for the duration of the import only (Python's own ``sys.stderr`` is
flushed first and untouched; an import error is raised as usual, after stderr is restored),
and sets ``TF_CPP_MIN_LOG_LEVEL=2`` unless the environment already chose a level, for the
log lines tensorflow writes later.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import sys

__all__ = ["quiet_import", "native_stderr_silenced"]


@contextlib.contextmanager
def native_stderr_silenced():
    """File descriptor 2 to /dev/null within the block (restored on exit, also on errors)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (a detached process): nothing to silence
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def quiet_import(name: str):
    """``importlib.import_module(name)`` without the native log lines of tensorflow (module
    docstring); a module already imported is returned as it is."""
    if name in sys.modules and sys.modules[name] is not None:
        return sys.modules[name]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with native_stderr_silenced():
        return importlib.import_module(name)
