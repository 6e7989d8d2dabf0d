"""mkdocs hooks (mkdocs.yml): keep the strict build strict about real cross-references only,
and serve MathJax from the site.

MathJax 2 (the ``static`` folder of the ``jupyter-server-mathjax`` package, the docs extra) is
copied to ``site/javascripts/mathjax/`` after the build (``on_post_build``), so the pages'
formulas (``pymdownx.arithmatex``) typeset without a network; a build without the package
fails, naming it.

Docstrings index arrays in plain text, e.g. ``K[i][j]`` or ``params[2][0]``; Markdown reads
``[i][j]`` as a reference-style link and mkdocs-autorefs then warns that it cannot find the
target ``j``, which would fail the strict build whenever someone writes such an index. Those
warnings are dropped when the target is not a dotted name; a cross-reference to an object
(``[text][ntkcond.no_such_name]``) still fails the build.
"""
from __future__ import annotations

import logging
import os
import re
import shutil

_PLAIN_INDEX = re.compile(r"Could not find cross-reference target '([^'.]*)'$")


class _PlainIndexFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _PLAIN_INDEX.search(record.getMessage()) is None


def on_pre_build(config) -> None:  # noqa: ARG001 (after mkdocs adds its strict-mode counter)
    for handler in logging.getLogger("mkdocs").handlers:
        if not any(isinstance(f, _PlainIndexFilter) for f in handler.filters):
            handler.addFilter(_PlainIndexFilter())


def mathjax_folder() -> str:
    """The folder holding MathJax.js (the ``jupyter_server_mathjax`` package's static files)."""
    import importlib.util

    spec = importlib.util.find_spec("jupyter_server_mathjax")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("docs: the formulas need MathJax from jupyter-server-mathjax: "
                           "pip install -e '.[docs]'")
    folder = os.path.join(list(spec.submodule_search_locations)[0], "static")
    if not os.path.isfile(os.path.join(folder, "MathJax.js")):
        raise RuntimeError(f"docs: expected MathJax.js in {folder}, got none")
    return folder


def on_post_build(config) -> None:
    target = os.path.join(config["site_dir"], "javascripts", "mathjax")
    if os.path.isdir(target):
        shutil.rmtree(target)
    shutil.copytree(mathjax_folder(), target)
