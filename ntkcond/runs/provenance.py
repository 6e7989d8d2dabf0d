"""What made a run: the versions, the command line, the call and the time, recorded in every
``config.json`` (``runs.rundir.open_run`` adds it) and read back by ``runs.load``.

``provenance(call)`` is one entry::

    {"ntkcond": "0.9.0", "python": "3.11.9", "jax": "0.5.3", "jaxlib": "0.5.3",
     "numpy": "2.2.6", "scipy": "1.15.3", "platform": "Linux-…-x86_64",
     "command": ["ntkcond", "cond-vs-depth", "--depths", "0,1"], "call": "cond_vs_depth",
     "resumed_records": 0, "time": "2026-12-02T00:12:03+00:00"}

``command`` is the command line of the ``ntkcond`` subcommand (or ``scripts/<name>.py``)
that is running, set by ``runs.cli.run_main`` through ``command_line``; None when a library
function is called directly (``call`` names it). Versions come from the installed
distributions' metadata (nothing is imported for them): ``VERSIONED`` always, and the further
distributions a call depends on (``versions``: ``optax`` for ``train_track``); a package that
is not installed is None. ``resumed_records`` is how many records the run held when this
invocation opened it (0 for a start; a resume's count tells which records it computed).
``time`` is UTC, to the second (``utc_now``).
"""
from __future__ import annotations

import contextlib
import contextvars
import datetime
import platform

__all__ = ["provenance", "command_line", "current_command", "utc_now", "VERSIONED"]

#: The distributions whose versions every entry records.
VERSIONED = ("jax", "jaxlib", "numpy", "scipy")

_COMMAND: contextvars.ContextVar = contextvars.ContextVar("ntkcond_command_line", default=None)


@contextlib.contextmanager
def command_line(words):
    """Within the block, ``provenance`` records ``words`` (a list of str) as the command."""
    token = _COMMAND.set([str(w) for w in words])
    try:
        yield
    finally:
        _COMMAND.reset(token)


def current_command():
    """The command line set by ``command_line`` (a list of str), or None."""
    value = _COMMAND.get()
    return None if value is None else list(value)


def _version(name: str):
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def utc_now() -> str:
    """The time now in UTC, to the second, as ISO 8601 ('2026-12-02T00:12:03+00:00')."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def provenance(call: str, *, versions=(), resumed: int = 0) -> dict:
    """One provenance entry (module docstring) for the library call ``call``: the versions of
    ntkcond, Python, ``VERSIONED`` and the distributions ``versions``; ``resumed`` is its
    ``resumed_records``."""
    import ntkcond

    entry = {"ntkcond": ntkcond.__version__, "python": platform.python_version()}
    entry.update({name: _version(name) for name in (*VERSIONED, *versions)})
    entry.update(platform=platform.platform(), command=current_command(), call=call,
                 resumed_records=int(resumed), time=utc_now())
    return entry
