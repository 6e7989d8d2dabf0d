"""The package's design, checked: no import cycles (function-level imports included), no
``_name`` taken from another module, a curated facade that loads neither ``runs`` nor
``papers``, and the import-linter contracts of pyproject.toml (run by ``make test`` too)."""
import ast
import json
import os
import subprocess
import sys

import pytest

import ntkcond

PACKAGE = os.path.dirname(ntkcond.__file__)
REPO = os.path.dirname(PACKAGE)


def _modules() -> dict:
    """Dotted module name → path, for every module of the package."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), REPO)[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(folder, f)
    return out


def _imports(modules: dict):
    """(edges: module → set of ntkcond modules it imports anywhere, private: [(importer, target, name)])."""
    edges, private = {m: set() for m in modules}, []
    for mod, path in modules.items():
        package = mod if path.endswith("__init__.py") else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if not base.startswith("ntkcond"):
                    continue
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        edges[mod].add(f"{base}.{alias.name}")
                    elif base in modules:
                        edges[mod].add(base)
                        if alias.name.startswith("_"):
                            private.append((mod, base, alias.name))
            elif isinstance(node, ast.Import):
                edges[mod].update(a.name for a in node.names if a.name in modules)
    return edges, private


def _cycles(edges: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_and_no_private_cross_imports():
    modules = _modules()
    edges, private = _imports(modules)
    # Parents import their children (package __init__ re-exports); that is not a cycle to break.
    edges = {m: {t for t in ts if not t.startswith(m + ".") or not modules[m].endswith("__init__.py")}
             for m, ts in edges.items()}
    assert _cycles(edges) == []
    assert private == []


def test_the_checker_sees_a_planted_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_scripts_and_notebooks_use_public_names_only():
    for folder in ("scripts", "notebooks"):
        for f in sorted(os.listdir(os.path.join(REPO, folder))):
            text = open(os.path.join(REPO, folder, f), encoding="utf-8").read()
            for line in text.splitlines():
                if "import" in line and "ntkcond" in line:
                    words = line.replace(",", " ").replace('"', " ").replace("\\n", " ").split()
                    assert not any(w.startswith("_") or "._" in w for w in words if w != "__future__"), (f, line)



@pytest.mark.parametrize("name", ["cond_vs_depth", "cond_vs_batch", "min_angle", "check_claims",
                                  "biasfree_dynamics", "train_vs_depth"])
def test_every_script_follows_the_cli_convention(name, capsys):
    from conftest import load_script

    path = os.path.join(REPO, "scripts", f"{name}.py")
    assert len(open(path, encoding="utf-8").read().splitlines()) <= 150
    script = load_script(name)
    with pytest.raises(SystemExit) as exit_:
        script.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "--out" in text and "--overwrite" in text and "--no-progress" in text
    assert "(default: runs" in text  # defaults shown
    if name in ("cond_vs_depth", "cond_vs_batch", "min_angle", "train_vs_depth"):
        assert "--resume" in text and "--dataset" in text and "--depths" in text
    with pytest.raises(SystemExit) as exit_:
        script.main((["all"] if name == "biasfree_dynamics" else []) + ["--no-such-flag"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "--no-such-flag" in err


def test_facade_is_curated_and_does_not_load_runs_or_papers():
    assert len(ntkcond.__all__) <= 50
    assert all(hasattr(ntkcond, name) for name in ntkcond.__all__)
    code = ("import sys, json, ntkcond; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ntkcond'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(m.startswith(("ntkcond.runs", "ntkcond.papers")) for m in loaded), loaded
    assert len(loaded) <= 0.6 * len(_modules()), (len(loaded), len(_modules()))


def test_moved_names_resolve_with_a_warning():
    from ntkcond.papers.zhang_saxe_latham.nets import biasfree

    with pytest.warns(DeprecationWarning, match="papers.zhang_saxe_latham"):
        assert ntkcond.mirrored_init is biasfree.mirrored_init
    with pytest.warns(DeprecationWarning, match="papers.zhang_saxe_latham.experiments"):
        assert ntkcond.biasfree_experiments.ExperimentResult is not None
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ntkcond.no_such_name


def test_import_linter_contracts_are_kept():
    exe = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    if not os.path.exists(exe):
        pytest.skip("import-linter is not installed (the test extra)")
    out = subprocess.run([exe], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "0 broken" in out.stdout
    kept = out.stdout.count(" KEPT")
    assert kept >= 3, out.stdout
