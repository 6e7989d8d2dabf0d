"""Tests of the docs site's generated pages (docs/_mkdocs/gen_pages.py, check_site.py).

`make docs` builds the site strictly (in CI, after `make test`); these tests check, without
mkdocs, that the generated API reference has one entry for every name in ``ntkcond.__all__``
and that the links of the README and the docs pages are rewritten for the site.
"""
import importlib.util
import os
import re

import pytest

import ntkcond
from conftest import REPO

DOCS_TOOLS = os.path.join(REPO, "docs", "_mkdocs")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(DOCS_TOOLS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen():
    return load("gen_pages")


def facade_groups(gen):
    with open(os.path.join(REPO, "ntkcond", "__init__.py"), encoding="utf-8") as f:
        return gen.facade_groups(f.read())


def test_reference_has_one_entry_for_every_public_name(gen):
    text = gen.reference_markdown(list(ntkcond.__all__), facade_groups(gen))
    entries = re.findall(r"^::: ntkcond\.(\S+)$", text, flags=re.M)
    assert sorted(entries) == sorted(ntkcond.__all__)  # each name once, nothing else
    assert len(entries) == len(ntkcond.__all__) >= 40
    for name in ("from_flax", "from_nnx", "from_equinox", "empirical_ntk_fn", "datasets"):
        assert f"::: ntkcond.{name}\n" in text
    # every name is grouped by the subpackage the facade imports it from
    groups = facade_groups(gen)
    assert groups["from_flax"] == "finite" and groups["conditioning"] == "spectrum"
    assert groups["datasets"] == "datasets"
    # a name added to __all__ later gets its entry (under "Other" if the facade defines it)
    assert "::: ntkcond.brand_new\n" in gen.reference_markdown(["conditioning", "brand_new"], groups)


def test_built_site_check_sees_a_missing_entry():
    check = load("check_site")
    html = "".join(f'<h3 id="ntkcond.{name}">' for name in ntkcond.__all__)
    assert check.missing_entries(html, ntkcond.__all__) == []
    planted = html.replace('id="ntkcond.from_flax"', 'id="ntkcond.from_flax_"')
    assert check.missing_entries(planted, ntkcond.__all__) == ["from_flax"]


def test_links_are_rewritten_for_the_site(gen):
    readme = ("[a](docs/finite_width.md) ![f](docs/results/x.png) [nb](notebooks/cond_vs_depth.ipynb) "
              "[s](scripts/cond_vs_depth.py) [w](https://example.org/a.md) [h](#quick-start) "
              "[m](docs/models.md#flax)")
    assert gen.rewrite_links(readme, "README.md") == (
        "[a](finite_width.md) ![f](results/x.png) [nb](notebooks/cond_vs_depth.ipynb) "
        "s [w](https://example.org/a.md) [h](#quick-start) [m](models.md#flax)")
    assert gen.rewrite_links("[← README](../README.md)", "docs/bias_free.md") == "[← README](index.md)"
    assert (gen.rewrite_links("[c](claims_full/a.png) [t](../finite_width.md)", "docs/results/claims_full.md")
            == "[c](claims_full/a.png) [t](../finite_width.md)")
    # a broken link inside docs/ is kept, so that the strict build reports it
    assert gen.rewrite_links("[x](nope.md)", "docs/models.md") == "[x](nope.md)"


def test_every_docs_page_and_notebook_is_in_the_nav(gen):
    with open(os.path.join(REPO, "mkdocs.yml"), encoding="utf-8") as f:
        nav = f.read().split("\nnav:", 1)[1]
    pages = list(gen.docs_pages()) + [  # the results pages too
        f"notebooks/{f}" for f in os.listdir(os.path.join(REPO, "notebooks")) if f.endswith(".ipynb")]
    assert "models.md" in pages
    for page in pages:
        assert page in nav, page


def test_strict_build_ignores_plain_text_indices_only():
    # docs/_mkdocs/hooks.py: "K[i][j]" in a docstring is not a cross-reference; a dotted one is
    import logging

    hooks = load("hooks")
    keep = hooks._PlainIndexFilter().filter
    record = lambda target: logging.LogRecord(
        "mkdocs.plugins.mkdocs_autorefs", logging.WARNING, __file__, 1,
        f"mkdocs_autorefs: reference.md: from x.py:3: (ntkcond.f) Could not find cross-reference target '{target}'",
        None, None)
    assert not keep(record("j")) and not keep(record("0"))
    assert keep(record("ntkcond.no_such_name"))
    assert keep(logging.LogRecord("mkdocs", logging.WARNING, __file__, 1, "Doc file 'a.md' contains a link", None, None))


def test_readme_counts_the_subcommands_of_the_registry():
    """The README's number of subcommands is len(COMMANDS) (derived, not counted by hand)."""
    import re

    from ntkcond.command import COMMANDS

    words = {"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
    text = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    counts = [words.get(m, None) or int(m) for m in
              re.findall(r"the (\w+) subcommands", text) if m in words or m.isdigit()]
    assert counts and all(c == len(COMMANDS) for c in counts), counts


def test_readme_lists_the_registered_activations():
    """The README's list of the activations the commands take is the registry's (one list:
    ``ntkcond.activations.REGISTRY``), so a new activation cannot go unmentioned."""
    import re

    from ntkcond.activations import activation_names

    text = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    start = text.index("Every command (and script) takes the network flags")
    sentence = text[start:text.index("every record", start)]
    listed = re.findall(r"`([a-z_]+)`", sentence.split("and the activations", 1)[1])
    assert listed == list(activation_names())


def _examples(obj) -> str:
    doc = obj.__doc__ or ""
    return doc.split("Examples:", 1)[1] if "Examples:" in doc else ""


def test_at_least_twelve_public_functions_have_examples_that_run():
    """The API reference's Examples sections (Google style, doctest format): at least 12 public
    names have one, and every one of them runs and prints what it shows (the floats shown are
    rounded, so BLAS differences below 1e-6 do not matter)."""
    import doctest

    import ntkcond

    named = [n for n in ntkcond.__all__ if ">>>" in _examples(getattr(ntkcond, n))]
    assert len(named) >= 12, named
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for name in named:
        for test in finder.find(getattr(ntkcond, name), name, globs={}):
            result = runner.run(test, out=lambda text: None)
            assert result.failed == 0, (name, result)


def test_notebooks_are_stored_with_their_outputs():
    """The site renders the notebooks as stored (mkdocs-jupyter, execute: false): every code
    cell has run (an execution count), and the stored outputs hold no local paths;
    tests/test_notebooks.py re-executes them."""
    import json

    for name in sorted(os.listdir(os.path.join(REPO, "notebooks"))):
        if not name.endswith(".ipynb"):
            continue
        text = open(os.path.join(REPO, "notebooks", name), encoding="utf-8").read()
        cells = [c for c in json.loads(text)["cells"] if c["cell_type"] == "code"]
        assert cells and all(c.get("execution_count") for c in cells), name
        assert any(c.get("outputs") for c in cells), name
        assert "/work/" not in text and "/tmp/" not in text, name
