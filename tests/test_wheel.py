"""The wheel (pyproject.toml): built from the checkout it ships the package and no tests,
declares the ``ntkcond`` console script, and takes its version from ``ntkcond.__version__``."""
import configparser
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import ntkcond
from conftest import REPO

_TOP = {".git", "build", "dist", "runs", "site"}  # the checkout's outputs, at its root only
_ANY = {"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints"}


def _ignore(folder, names):
    top = os.path.samefile(folder, REPO)
    return [n for n in names if n in _ANY or (top and (n in _TOP or n.startswith(".venv")))
            or n.endswith(".egg-info")]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """Build the wheel offline (no build isolation) from a copy of the checkout."""
    try:
        from importlib.metadata import version

        setuptools_major = int(version("setuptools").split(".")[0])
    except Exception:  # noqa: BLE001 - any failure means: cannot build here
        setuptools_major = 0
    if setuptools_major < 77 or importlib.util.find_spec("wheel") is None:
        pytest.skip("building offline needs setuptools >= 77 (PEP 639 licence) and wheel in "
                    "this environment (the test extra)")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=_ignore)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                          "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    (path,) = (tmp / "dist").glob("ntkcond-*.whl")
    return path


def test_wheel_ships_the_package_and_no_tests(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    info = f"ntkcond-{ntkcond.__version__}.dist-info/"
    assert all(n.startswith(("ntkcond/", info)) for n in names), [n for n in names if not n.startswith(("ntkcond/", info))]
    assert not [n for n in names if "/tests/" in f"/{n}" or os.path.basename(n).startswith("test_")
                or n.startswith(("scripts/", "notebooks/", "benchmarks/", "docs/"))]
    package = os.path.join(REPO, "ntkcond")
    sources = {os.path.relpath(os.path.join(d, f), REPO).replace(os.sep, "/")
               for d, _, files in os.walk(package) for f in files if f.endswith(".py")}
    assert sources == {n for n in names if n.endswith(".py")}  # every module, nothing else
    assert f"{info}licenses/LICENSE" in names  # PEP 639: the licence file under licenses/


def test_wheel_declares_the_console_script_and_one_version(wheel):
    z = zipfile.ZipFile(wheel)
    info = f"ntkcond-{ntkcond.__version__}.dist-info/"
    entry = configparser.ConfigParser()
    entry.read_string(z.read(f"{info}entry_points.txt").decode())
    assert dict(entry["console_scripts"]) == {"ntkcond": "ntkcond.command:main"}
    meta = z.read(f"{info}METADATA").decode()
    assert f"\nVersion: {ntkcond.__version__}\n" in meta
    # PEP 639: the SPDX expression, no licence classifier (setuptools warns on those)
    assert "\nProvides-Extra: pandas\n" in meta and "\nLicense-Expression: Apache-2.0\n" in meta
    assert "Classifier: License ::" not in meta
    # one place for the version: pyproject reads ntkcond.__version__
    text = open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8").read()
    assert 'dynamic = ["version"]' in text and 'attr = "ntkcond.__version__"' in text
    assert "ntkcond/py.typed" in z.namelist()  # PEP 561


def test_citation_and_changelog_carry_the_version_and_its_date():
    import re

    cff = open(os.path.join(REPO, "CITATION.cff"), encoding="utf-8").read()
    version = re.search(r'^version: "([^"]+)"$', cff, re.M).group(1)
    released = re.search(r'^date-released: "(\d{4}-\d{2}-\d{2})"$', cff, re.M).group(1)
    assert version == ntkcond.__version__
    changelog = open(os.path.join(REPO, "CHANGELOG.md"), encoding="utf-8").read()
    entry = re.search(rf"^## {re.escape(version)} — (\d{{4}}-\d{{2}}-\d{{2}})$", changelog, re.M)
    assert entry is not None and entry.group(1) == released


def test_license_and_citation_files():
    license_text = open(os.path.join(REPO, "LICENSE"), encoding="utf-8").read()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text  # the full text, not a pointer
    cff = open(os.path.join(REPO, "CITATION.cff"), encoding="utf-8").read()
    assert cff.startswith("cff-version: 1.2.0") and "license: Apache-2.0" in cff
    for arxiv in ("arXiv:2305.08813", "arXiv:2406.12615"):
        assert arxiv in cff
