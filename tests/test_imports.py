import json
import subprocess
import sys

import ntkcond

HEAVY = ("tensorflow", "neural_tangents", "tensorflow_datasets")


def test_import_does_not_pull_heavy_dependencies():
    # A fresh interpreter: this test process may already have imported them elsewhere.
    code = (
        "import sys, json, ntkcond; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_public_api_is_exported():
    for name in ntkcond.__all__:
        assert hasattr(ntkcond, name), name
    for name in ("effective_condition_number", "conditioning", "pairwise_angles",
                 "smallest_pairwise_angle", "gradient_angles", "smallest_gradient_angle",
                 "infinite_ntk", "infinite_nngp", "angles"):
        assert name in ntkcond.__all__
    assert all(not name.startswith("_") for name in ntkcond.__all__)
