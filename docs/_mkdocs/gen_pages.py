"""Pages made at build time by mkdocs-gen-files (mkdocs.yml; `make docs`).

- ``index.md``: the README, its links rewritten for the site.
- every ``docs/`` page: links rewritten the same way (``../README.md`` → ``index.md``; links to
  repository files the site does not hold become plain text).
- ``notebooks/*.ipynb``: the three notebooks, rendered with the outputs stored in them (not
  executed here; tests/test_notebooks.py re-executes them) by mkdocs-jupyter.
- ``reference.md``: one mkdocstrings entry (``::: ntkcond.NAME``) for every name in
  ``ntkcond.__all__``, grouped by the subpackage the facade imports it from, so that names
  added to the facade appear without editing this file.

The functions are pure (tests/test_docs.py imports them); only ``main`` writes.
"""
from __future__ import annotations

import ast
import os
import posixpath
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
GROUP_TITLES = {
    "spectrum": "Spectrum: κ and angles read off a kernel",
    "activations": "Activations",
    "infinite": "Infinite width",
    "finite": "Finite width",
    "optimization": "Optimisation",
    "scale": "Whole data sets",
    "datasets": "Data",
}


def site_path(repo_path: str) -> str | None:
    """Where the repository file ``repo_path`` (posix, relative to the root) is in the site:
    README.md is the home page, docs/X is X, notebooks/X.ipynb stays; None for any other
    file (the site does not hold it). A docs/ path that does not exist is still mapped, so
    that mkdocs reports the broken link."""
    if repo_path == "README.md":
        return "index.md"
    if repo_path.startswith("docs/"):
        return repo_path[len("docs/"):]
    if repo_path.startswith("notebooks/") and repo_path.endswith(".ipynb"):
        return repo_path
    return None


def rewrite_links(text: str, source: str) -> str:
    """The relative links of the repository file ``source``, rewritten for its page in the
    site; a link to a file the site does not hold (a script, a test) becomes its text."""
    target_page = site_path(source)
    page_dir = posixpath.dirname(target_page)

    def fix(match):
        bang, label, target = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:|#|/", target):  # absolute URL, anchor, site-absolute
            return match.group(0)
        path, _, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        where = site_path(repo_path)
        if where is None:
            return label if not bang else match.group(0)
        new = posixpath.relpath(where, page_dir or ".") + (f"#{anchor}" if anchor else "")
        return f"{bang}[{label}]({new})"

    return LINK.sub(fix, text)


def facade_groups(init_source: str) -> dict[str, str]:
    """name → the subpackage of ``ntkcond`` the facade imports it from (``from .finite import
    mlp`` → "finite"; ``from . import datasets`` → "datasets")."""
    groups = {}
    for node in ast.parse(init_source).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                name = alias.asname or alias.name
                groups[name] = node.module.split(".")[0] if node.module else name
    return groups


def reference_markdown(names, groups) -> str:
    """The API reference: every name once, under its group's heading, in ``__all__`` order."""
    order = list(dict.fromkeys(groups.get(n, "other") for n in names))
    lines = ["# API reference", "",
             "Every public name of `ntkcond` (`ntkcond.__all__`), rendered from its docstring.", ""]
    for group in order:
        lines += [f"## {GROUP_TITLES.get(group, group.capitalize())}", ""]
        for name in names:
            if groups.get(name, "other") == group:
                lines += [f"::: ntkcond.{name}", ""]
    return "\n".join(lines)


def docs_pages() -> list[str]:
    """The Markdown files under docs/ (posix, relative to docs/), _mkdocs/ left out."""
    root = os.path.join(REPO, "docs")
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        rel = os.path.relpath(folder, root)
        out += [posixpath.normpath(posixpath.join(rel.replace(os.sep, "/"), f))
                for f in sorted(files) if f.endswith(".md")]
    return out


def main():
    import mkdocs_gen_files

    import ntkcond

    notebooks = sorted(f for f in os.listdir(os.path.join(REPO, "notebooks")) if f.endswith(".ipynb"))
    pages = docs_pages()
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with mkdocs_gen_files.open("index.md", "w") as out:
        out.write(rewrite_links(readme, "README.md"))
    for page in pages:
        with open(os.path.join(REPO, "docs", page), encoding="utf-8") as f:
            text = f.read()
        new = rewrite_links(text, f"docs/{page}")
        if new != text:
            with mkdocs_gen_files.open(page, "w") as out:
                out.write(new)
    for name in notebooks:
        with open(os.path.join(REPO, "notebooks", name), encoding="utf-8") as f, \
                mkdocs_gen_files.open(f"notebooks/{name}", "w") as out:
            out.write(f.read())
    with open(os.path.join(REPO, "ntkcond", "__init__.py"), encoding="utf-8") as f:
        groups = facade_groups(f.read())
    with mkdocs_gen_files.open("reference.md", "w") as out:
        out.write(reference_markdown(list(ntkcond.__all__), groups))


if __name__ != "gen_pages":  # run by mkdocs-gen-files; imported by the tests as gen_pages
    main()
