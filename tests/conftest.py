import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # tests/_reference.py

settings.register_profile(
    "ntkcond", deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ntkcond")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(REPO, "..", "shared", "data")


@pytest.fixture(scope="session")
def digits_batch():
    """First 128 images of scikit-learn's digits, scaled to [0, 1] and normalised (x-0.5)/0.5."""
    from ntkcond import datasets

    return datasets.load("digits").x[:128]


@pytest.fixture(scope="session")
def mnist_batch():
    """512 MNIST test images with the papers' normalisation; skipped without ../shared/data."""
    path = os.path.join(SHARED_DATA, "mnist_test.npz")
    if not os.path.exists(path):
        pytest.skip("../shared/data/mnist_test.npz not present")
    from ntkcond import datasets

    return datasets.load(path, mean=0.5, std=0.5).x[:512]


def orthogonal(n, rng):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def load_script(name):
    """Import scripts/<name>.py as a module (scripts are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "scripts", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rel_err(a, b):
    """max |a − b| / max |b|, in float64."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.fixture
def x64():
    """Scoped jax float64 for the test (restored afterwards)."""
    from ntkcond._core.x64 import x64

    with x64():
        yield
