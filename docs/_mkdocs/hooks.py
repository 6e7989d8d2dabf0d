"""mkdocs hooks (mkdocs.yml): keep the strict build strict about real cross-references only.

Docstrings index arrays in plain text, e.g. ``K[i][j]`` or ``params[2][0]``; Markdown reads
``[i][j]`` as a reference-style link and mkdocs-autorefs then warns that it cannot find the
target ``j``, which would fail the strict build whenever someone writes such an index. Those
warnings are dropped when the target is not a dotted name; a cross-reference to an object
(``[text][ntkcond.no_such_name]``) still fails the build.
"""
from __future__ import annotations

import logging
import re

_PLAIN_INDEX = re.compile(r"Could not find cross-reference target '([^'.]*)'$")


class _PlainIndexFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _PLAIN_INDEX.search(record.getMessage()) is None


def on_pre_build(config) -> None:  # noqa: ARG001 (after mkdocs adds its strict-mode counter)
    for handler in logging.getLogger("mkdocs").handlers:
        if not any(isinstance(f, _PlainIndexFilter) for f in handler.filters):
            handler.addFilter(_PlainIndexFilter())
