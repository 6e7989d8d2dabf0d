"""Every ``pytest.approx`` in the tests states its tolerance: ``rel=`` never comes without
``abs=``, and no call relies on the defaults (rel 1e-6, abs 1e-12).

pytest's default abs = 1e-12 silently turns ``approx(x, rel=1e-12)`` into a check of
|got − x| ≤ 1e-12 + 1e-12·|x|, which is no relative check at all for |x| ≲ 1: a gradient angle
of 3e-4 rad with a real error of 2.5e-10 (relative 1e-6) passed such a test.
"""
import ast
import os

TESTS = os.path.dirname(os.path.abspath(__file__))


def unstated_tolerances(source: str, filename: str = "<test>") -> list[str]:
    """'file:line' of every approx(...) call with rel= but no abs=, or with neither."""
    out = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name != "approx":
            continue
        keys = {k.arg for k in node.keywords}
        if None in keys:  # approx(x, **tolerances): stated elsewhere
            continue
        if "abs" not in keys:
            out.append(f"{filename}:{node.lineno}")
    return out


def test_every_approx_states_abs():
    bad = []
    for folder, _, files in os.walk(TESTS):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path, encoding="utf-8") as fh:
                    bad += unstated_tolerances(fh.read(), os.path.relpath(path, TESTS))
    assert bad == [], "approx without an explicit abs= (state it, usually abs=0): " + ", ".join(bad)


def test_the_scanner_sees_unstated_tolerances():
    src = (
        "import pytest\nfrom pytest import approx\n"
        "assert 1 == pytest.approx(1, rel=1e-12)\n"  # line 3: rel without abs
        "assert 1 == approx(1)\n"  # line 4: defaults
        "assert 1 == pytest.approx(1, rel=1e-12, abs=0)\n"
        "assert 1 == approx(1, abs=1e-9)\n"
        "assert 1 == approx(1, **{'rel': 1e-9, 'abs': 0})\n"
    )
    assert unstated_tolerances(src) == ["<test>:3", "<test>:4"]
