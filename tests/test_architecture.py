"""The package's design, checked: no import cycles (function-level imports included), no
``_name`` taken from another module, a curated facade that loads neither ``runs`` nor
``papers``, the import-linter contracts of pyproject.toml (run by ``make test`` too), names
that say one thing (no two modules share a file name, none shares a package's name, no
re-export hubs), tests that mirror the tree, and text whose dotted ``ntkcond.…`` names all
resolve."""
import ast
import glob
import importlib
import json
import os
import re
import subprocess
import sys
import warnings

import pytest

from ntkcond.command import COMMANDS

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



@pytest.mark.parametrize("name", [c.script for c in COMMANDS])
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
    if name in ("cond_vs_depth", "cond_vs_batch", "min_angle", "train_vs_depth", "train_track"):
        assert "--resume" in text and "--dataset" in text and "--depths" in text
    with pytest.raises(SystemExit) as exit_:
        script.main((["all"] if name == "biasfree_dynamics" else []) + ["--no-such-flag"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "--no-such-flag" in err


def test_facade_is_curated_and_does_not_load_runs_or_papers():
    assert len(ntkcond.__all__) <= 50  # result types (PowerSeries, ConditionBounds, ...) live in their modules
    assert all(hasattr(ntkcond, name) for name in ntkcond.__all__)
    code = ("import sys, json, ntkcond; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ntkcond'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(m.startswith(("ntkcond.runs", "ntkcond.papers")) for m in loaded), loaded
    assert len(loaded) <= 0.6 * len(_modules()), (len(loaded), len(_modules()))


def test_the_flat_names_of_0_1_are_gone():
    # No deprecation shims: the old flat modules and names (ntkcond.biasfree, ntkcond.claims,
    # ntkcond.mirrored_init, ...) live only in their papers' packages.
    for name in ("biasfree", "claims", "mirrored_init", "no_such_name"):
        with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
            getattr(ntkcond, name)


def test_import_linter_contracts_are_kept():
    exe = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    if not os.path.exists(exe):
        pytest.skip("import-linter is not installed (the test extra)")
    out = subprocess.run([exe], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "0 broken" in out.stdout
    kept = out.stdout.count(" KEPT")
    assert kept >= 3, out.stdout


# --------------------------------------------------------------------------- names that say one thing


def _stem(path: str) -> str:
    """A module's or package's name without leading underscores (``_checks`` and ``checks`` clash)."""
    return os.path.splitext(os.path.basename(path))[0].lstrip("_")


def _packages() -> list:
    return sorted(folder for folder, _, files in os.walk(PACKAGE) if "__init__.py" in files)


def name_clashes(module_paths, package_paths) -> list:
    """[(name, paths)] for names used by two modules, or by a module and a package."""
    by_name = {}
    for path in module_paths:
        by_name.setdefault(_stem(path), []).append(path)
    for path in package_paths:
        by_name.setdefault(_stem(path), []).append(path + os.sep)
    return sorted((name, sorted(paths)) for name, paths in by_name.items() if len(paths) > 1)


def test_no_two_modules_share_a_name_and_none_shares_a_package_name():
    modules = [p for p in _modules().values() if not p.endswith("__init__.py")]
    assert name_clashes(modules, _packages()) == []
    # planted: the two angles.py of 0.1 and a module beside a package of its name
    planted = name_clashes(["a/infinite/angles.py", "a/spectrum/angles.py", "a/papers/finite.py",
                            "a/x/_checks.py", "a/y/checks.py"], ["a/finite"])
    assert [name for name, _ in planted] == ["angles", "checks", "finite"]


def reexport_hubs(modules: dict) -> list:
    """Modules outside an ``__init__.py`` whose body is only imports, ``__all__`` and a docstring."""
    out = []
    for mod, path in sorted(modules.items()):
        if path.endswith("__init__.py"):
            continue
        body = ast.parse(open(path, encoding="utf-8").read()).body
        plain = [n for n in body
                 if not isinstance(n, (ast.Import, ast.ImportFrom))
                 and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
                 and not (isinstance(n, (ast.Assign, ast.AnnAssign))
                          and "__all__" in {getattr(t, "id", None) for t in
                                            (n.targets if isinstance(n, ast.Assign) else [n.target])})]
        if not plain:
            out.append(mod)
    return out


def test_no_reexport_hubs(tmp_path):
    assert reexport_hubs(_modules()) == []
    hub = tmp_path / "hub.py"
    hub.write_text('"""A hub."""\nfrom .a import f\nfrom .b import g\n__all__ = ["f", "g"]\n')
    real = tmp_path / "real.py"
    real.write_text('"""Not a hub."""\nfrom .a import f\n\n\ndef g():\n    return f()\n')
    assert reexport_hubs({"hub": str(hub), "real": str(real)}) == ["hub"]


# Test modules that check the project across modules rather than one module of ntkcond.
CROSS_CUTTING = {
    "test_architecture",  # this file: the package's design
    "test_imports",       # what ``import ntkcond`` loads
    "test_notebooks",     # notebooks/ run top to bottom
    "test_scripts",       # scripts/ and their command-line conventions
    "test_benchmarks",    # benchmarks/ smoke tests
    "test_tolerances",    # every approx in tests/ states its tolerance
    "test_docs",          # the docs site's generated pages (docs/_mkdocs)
    "test_wheel",         # the wheel pyproject.toml builds: its files, console script, version
    "test_hostile",       # issue 34's hostile sweep: bad input across the public surface
}


def unmirrored_tests(test_files, module_paths, package_paths) -> list:
    """Test modules whose name is neither test_<module or package of ntkcond> nor cross-cutting."""
    names = {_stem(p) for p in list(module_paths) + list(package_paths)}
    out = []
    for path in test_files:
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem in CROSS_CUTTING:
            continue
        if not (stem.startswith("test_") and stem[len("test_"):] in names):
            out.append(stem)
    return sorted(out)


def test_test_modules_mirror_the_package():
    tests = os.path.join(REPO, "tests")
    files = sorted(glob.glob(os.path.join(tests, "test_*.py")))
    assert unmirrored_tests(files, _modules().values(), _packages()) == []
    others = {f for f in os.listdir(tests) if f.endswith(".py") and not f.startswith("test_")}
    assert others <= {"conftest.py", "_reference.py", "_family_reference.py",
                      "_conv_reference.py"}, others  # fixtures, references
    assert unmirrored_tests(["t/test_largescale.py", "t/test_spectrum.py", "t/test_lobpcg.py"],
                            ["a/scale/_lobpcg.py"], ["a/spectrum"]) == ["test_largescale"]


# --------------------------------------------------------------------------- text that points where the code is

DOTTED = re.compile(r"\bntkcond(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def dotted_names(text: str) -> set:
    return set(DOTTED.findall(text))


def _text_files() -> list:
    files = [os.path.join(REPO, "README.md")]
    files += glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    files += glob.glob(os.path.join(REPO, "notebooks", "*.ipynb"))
    files += glob.glob(os.path.join(REPO, "scripts", "*.py"))
    files += glob.glob(os.path.join(REPO, "benchmarks", "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(REPO, "benchmarks", "**", "*.md"), recursive=True)
    files += list(_modules().values())
    return sorted(files)


def resolves(name: str) -> bool:
    """Whether ``name`` is an importable module or an attribute of one (DeprecationWarning = error)."""
    parts = name.split(".")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError as err:
                if err.name is not None and not ".".join(parts[:cut]).startswith(err.name):
                    raise  # a real import error inside the module, not a missing name
                continue
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
    return False


def test_every_dotted_name_in_the_text_resolves():
    unresolved = {}
    for path in _text_files():
        text = open(path, encoding="utf-8").read()
        for name in sorted(dotted_names(text)):
            if not resolves(name):
                unresolved.setdefault(name, []).append(os.path.relpath(path, REPO))
    assert unresolved == {}
    # planted: an old flat name and a misspelt attribute are caught, real ones pass
    assert dotted_names("see ``ntkcond.biasfree`` and ntkcond.spectrum.conditioning.") == {
        "ntkcond.biasfree", "ntkcond.spectrum.conditioning"}
    assert not resolves("ntkcond.biasfree") and not resolves("ntkcond.spectrum.no_such_function")
    assert resolves("ntkcond.spectrum.conditioning") and resolves("ntkcond.papers.liu_hui.Claim")
