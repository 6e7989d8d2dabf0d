import glob
import os

import pytest

from conftest import REPO

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))
# Executed, with checks on their outputs, by their own module's tests:
TESTED_ELSEWHERE = {"biasfree_linear.ipynb": "tests/test_biasfree.py"}
EXECUTE = [p for p in NOTEBOOKS if os.path.basename(p) not in TESTED_ELSEWHERE]


@pytest.mark.parametrize("path", EXECUTE, ids=[os.path.basename(p) for p in EXECUTE])
def test_notebook_runs_top_to_bottom(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # The kernel inherits the environment: make it import this checkout's ntkcond, headless.
    monkeypatch.setenv("PYTHONPATH", REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("NTKCOND_FAST", "1")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


def test_notebooks_use_only_the_public_api():
    nbformat = pytest.importorskip("nbformat")
    for path in NOTEBOOKS:
        source = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        assert "ntkcond._" not in source and "from ntkcond._" not in source, path
