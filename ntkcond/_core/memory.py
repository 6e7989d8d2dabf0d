"""Memory checks before large allocations: a clear error naming the cheaper route instead of
a MemoryError (or the OOM killer) half-way through."""
from __future__ import annotations

import math
import numbers
import os


class InsufficientMemoryError(MemoryError, ValueError):
    """The exact route would need more memory than is available (checked before allocating)."""


def available_memory() -> int:
    """Bytes of memory available to a new allocation (``MemAvailable`` of /proc/meminfo, else
    the free physical pages)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62  # unknown: do not refuse


MATRIX_FREE_ROUTE = (
    "use the matrix-free route ntkcond.matrix_free_conditioning (memory O(n·block)), a "
    "smaller n, or fewer depths at once"
)


def check_memory(needed: int, what: str, memory_limit, where: str, alternative: str = MATRIX_FREE_ROUTE) -> None:
    """Raise ``InsufficientMemoryError`` if ``needed`` bytes exceed ``memory_limit`` (default:
    the available memory); the message names ``where``, ``what``, both sizes and ``alternative``."""
    limit = available_memory() if memory_limit is None else as_memory_limit(memory_limit, where)
    if needed > limit:
        raise InsufficientMemoryError(
            f"{where}: {what} needs {format_bytes(needed)} but only {format_bytes(limit)} is "
            f"available; {alternative}"
        )


def format_bytes(n: int) -> str:
    """A byte count for messages: '512 bytes', '3.50 MiB', '74.51 GiB' (GiB from 1 GiB up)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} bytes"


def as_memory_limit(value, where: str, name: str = "memory_limit") -> int | None:
    """``value`` as a number of bytes: None (the available memory), or an integer ≥ 0 (a float
    with an integer value such as 8e9 too); TypeError for anything else (a str, a bool, a
    list), ValueError below 0 or not finite."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: expected {name} as an integer number of bytes or None, got "
                        f"{type(value).__name__} {value!r}")
    if not (math.isfinite(value) and value >= 0 and float(value).is_integer()):
        raise ValueError(f"{where}: expected {name} as an integer number of bytes >= 0 or None, "
                         f"got {value!r}")
    return int(value)


def array_bytes(shape, itemsize: int = 8) -> int:
    """Bytes of an array of ``shape`` (Python ints: no overflow)."""
    total = int(itemsize)
    for s in shape:
        total *= int(s)
    return total
