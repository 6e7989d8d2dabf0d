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


def compile_numba_kernels():
    """Compile numba's kernels (or load them from their on-disk cache, ``__pycache__`` beside
    the sources): every kernel of the conv chain (``ntkcond.infinite.conv_chain``; ~50 s on a
    cold cache, i.e. in a fresh clone as in CI) and the layer loop of the angle recursion
    (``ntkcond.infinite.chain_loops``, ~5 s). Each has one signature in the suite, so tiny
    inputs compile all of them."""
    from ntkcond import gradient_angles, stax

    x = np.random.default_rng(0).uniform(-1, 1, (3, 5, 5, 2))
    for readout in (stax.Flatten(), stax.GlobalAvgPool()):
        kernel_fn = stax.serial(stax.Conv(4, (3, 3), padding="SAME", b_std=0.1), stax.Relu(),
                                readout, stax.Dense(1))[2]
        kernel_fn(x, None, "ntk")
        kernel_fn(x, x[:2], "ntk")
    gradient_angles(x.reshape(3, -1), depth=300)  # beyond 128 layers: the compiled loop


@pytest.fixture(scope="session")
def compiled_kernels():
    """numba's kernels compiled in this process before a test that bounds a call's seconds, so
    that the bound is the call's cost and not the one-off compilation, whichever test (or
    pytest-xdist worker) ran first."""
    compile_numba_kernels()


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
