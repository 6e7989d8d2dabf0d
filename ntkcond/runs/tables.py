"""Text tables for the terminal and plain CSV files, shared by every run.

CSV files are plain: the header on line 1 and one row per line, loadable as is with
``pandas.read_csv`` or ``csv.DictReader`` (the configuration lives in ``config.json``).
"""
from __future__ import annotations

import csv
import io

from .._core.io import atomic_write

__all__ = ["csv_text", "write_csv", "text_table", "net_title"]


def csv_text(rows, fields=None) -> str:
    """CSV of ``rows`` (dicts): columns ``fields`` (default: the first row's keys, in order)."""
    rows = list(rows)
    fields = list(fields if fields is not None else (rows[0] if rows else []))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_csv(path: str, rows, fields=None) -> str:
    """Write ``csv_text(rows, fields)`` to ``path`` atomically; returns ``path``."""
    atomic_write(path, csv_text(rows, fields))
    return path


def text_table(header, rows, *, rule: bool = True) -> str:
    """Right-aligned fixed-width columns: ``header`` (strings) above ``rows`` (lists of strings)."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    fmt = lambda cells: "  ".join(f"{str(c):>{w}}" for c, w in zip(cells, widths))  # noqa: E731
    lines = [fmt(header)] + (["-" * len(fmt(header))] if rule else []) + [fmt(r) for r in rows]
    return "\n".join(lines)


def net_title(opts: dict) -> str:
    """', w_std = 1.5, b_std = 0.1, residual = 0.5' of the options set ('' for the default net;
    a convolutional net's: ', arch = cnn, readout = gap, filter = 3'): the nets of a title,
    from what ran (``NetFamily.options``)."""
    return "".join(f", {k} = {v:g}" if isinstance(v, float) else f", {k} = {v}"
                   for k, v in opts.items())
