"""Progress on stderr that respects where it goes: one progress helper for every command.

``progress_bar(...)`` returns

* nothing visible (a silent stand-in) when ``disable`` is true or the environment sets
  ``TQDM_DISABLE`` (any value but ``""``, ``0``, ``false``, ``no``, as tqdm reads it);
* a tqdm bar when stderr is a terminal;
* otherwise (a log file, a pipe, CI) ``LineProgress``: plain lines, no carriage returns —
  ``desc: 12/110 kernels (11%), 3.2 s`` when another tenth of the total is done and at least
  ``MIN_SECONDS`` passed since the last line (or every ``LINE_SECONDS`` when the total is
  unknown), and one closing line with the final count: a quick job prints one line.

Each has ``update(n)``, ``set_postfix_str(text)`` and ``close()``, works as a context manager
and, given an iterable, iterates it. Totals are given wherever they are known (an iterable
with a length gives its own).
"""
from __future__ import annotations

import os
import sys
import time

__all__ = ["progress_bar", "LineProgress", "progress_disabled", "LINE_SECONDS", "MIN_SECONDS"]

#: Seconds between the plain lines of ``LineProgress`` when the total is unknown.
LINE_SECONDS = 60.0
#: Fewest seconds between two lines of ``LineProgress`` (the closing line aside).
MIN_SECONDS = 5.0


def progress_disabled() -> bool:
    """``TQDM_DISABLE`` is set (tqdm's convention: not "", "0", "false" or "no")."""
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false", "no")


class LineProgress:
    """Plain-line progress for a stream that is not a terminal (module docstring); silent
    when ``disable``."""

    def __init__(self, iterable=None, *, total=None, desc: str = "", unit: str = "it",
                 initial: int = 0, disable: bool = False, stream=None, **_ignored):
        self.iterable = iterable
        if total is None and iterable is not None:
            try:
                total = len(iterable)
            except TypeError:
                total = None
        self.total, self.desc, self.unit = total, desc, unit
        self.n = int(initial)
        self.disable = disable
        self.stream = sys.stderr if stream is None else stream
        self.postfix = ""
        self.start = self.last_time = time.monotonic()
        self.last_tenth = self._tenth()
        self.last_n = self.n
        self.closed = False

    def _tenth(self) -> int:
        return -1 if not self.total else int(10 * self.n // self.total)

    def _line(self) -> str:
        units = self.unit + ("s" if self.unit and not self.unit.endswith("s") else "")
        done = (f"{self.n}/{self.total} {units} ({100 * self.n / self.total:.0f}%)"
                if self.total else f"{self.n} {units}")
        post = f" [{self.postfix}]" if self.postfix else ""
        return f"{self.desc}: {done}, {time.monotonic() - self.start:.1f} s{post}"

    def _emit(self) -> None:
        print(self._line(), file=self.stream, flush=True)
        self.last_time = time.monotonic()
        self.last_tenth = self._tenth()
        self.last_n = self.n

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.disable:
            return
        since = time.monotonic() - self.last_time
        if (self.total and self._tenth() > self.last_tenth and since >= MIN_SECONDS) or \
                since >= LINE_SECONDS:
            self._emit()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = str(text)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not self.disable and self.n != self.last_n:  # the final count, once
            self._emit()

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress_bar(iterable=None, *, total=None, desc: str = "", unit: str = "it",
                 initial: int = 0, disable: bool = False, leave: bool = True,
                 unit_scale: bool = False):
    """A progress display on stderr (module docstring): tqdm on a terminal, plain lines
    elsewhere, nothing when ``disable`` or ``TQDM_DISABLE``."""
    disable = bool(disable) or progress_disabled()
    if disable or not _is_terminal(sys.stderr):
        return LineProgress(iterable, total=total, desc=desc, unit=unit, initial=initial,
                            disable=disable)
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, leave=leave,
                unit_scale=unit_scale)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
