"""ntkcond.infinite.recursion: one layer step for every route, and its precision against mpmath."""
import os

import mpmath
import numpy as np
import pytest

import ntkcond
from ntkcond import datasets
from ntkcond.activations import parse_activation
from ntkcond.infinite.engine import chain_plan
from ntkcond.infinite.recursion import PairGeometry, gradient_recursion, recursion
from ntkcond.network import resolve_mlp


def _plan(act, depths, layers):
    """The fast recursion's plan of the norm-preserving bias-free net of ``act``."""
    return chain_plan(resolve_mlp(act, where="test"), max(depths), layers)

from conftest import SHARED_DATA

ACTIVATIONS = ["relu", "linear", ("leaky_relu", 0.1)]


def _mnist300():
    path = os.path.join(SHARED_DATA, "mnist_test.npz")
    if not os.path.exists(path):
        pytest.skip("../shared/data/mnist_test.npz not present")
    return datasets.load(path, preset="mnist").x[:300]


def _gaussian300():
    return np.random.default_rng(3).standard_normal((300, 64))


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("data", ["mnist", "gaussian", "digits"])
def test_blockwise_numpy_is_infinite_ntk_bit_for_bit(data, activation):
    # The same geometry (one Gram product: n = 300 ≤ block) and the same recursion.
    x = {"mnist": _mnist300, "gaussian": _gaussian300,
         "digits": lambda: datasets.load("digits").x[:300]}[data]()
    blocks = ntkcond.blockwise_ntk(x, depths=[1, 3, 10], activation=activation, backend="numpy")
    for L, K in blocks.items():
        assert np.array_equal(K, ntkcond.infinite_ntk(x, depth=L, activation=activation))


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_depth_sweep_kernel_is_infinite_ntk_bit_for_bit(activation):
    x = _gaussian300()[:120]
    for item in ntkcond.depth_sweep(x, [0, 2, 5], activation=activation):
        assert np.array_equal(item.ntk, ntkcond.infinite_ntk(x, depth=item.depth, activation=activation))


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("data", ["mnist", "gaussian"])
def test_blockwise_jax_within_5e14_of_max(data, activation):
    pytest.importorskip("jax")
    x = _mnist300() if data == "mnist" else _gaussian300()
    blocks = ntkcond.blockwise_ntk(x, depths=[1, 3, 10], activation=activation, backend="jax",
                                   block=128)
    for L, K in blocks.items():
        ref = ntkcond.infinite_ntk(x, depth=L, activation=activation)
        # The same formula; XLA's Gram product (its dot) differs from OpenBLAS's by ~√d·eps:
        # 7.6e-15 of max|K| at depth 0 on 300 MNIST images, 1.5e-14 at depth 10 with jax 0.5.3
        # (errors in θ₀ grow with depth); the newest jax's atan2 adds more: 3.1e-14 at depth 10.
        assert np.max(np.abs(K - ref)) <= 5e-14 * np.max(np.abs(ref))


def _mp_angle(a, b):
    """The angle between float64 rows a, b, exactly for the data (60 digits)."""
    with mpmath.workdps(60):
        a = [mpmath.mpf(float(v)) for v in a]
        b = [mpmath.mpf(float(v)) for v in b]
        dot = mpmath.fsum(p * q for p, q in zip(a, b))
        na = mpmath.sqrt(mpmath.fsum(p * p for p in a))
        nb = mpmath.sqrt(mpmath.fsum(q * q for q in b))
        cross = mpmath.sqrt(mpmath.fsum((p * nb - q * na) ** 2 for p, q in zip(a, b)))
        summ = mpmath.sqrt(mpmath.fsum((p * nb + q * na) ** 2 for p, q in zip(a, b)))
        return 2 * mpmath.atan2(cross, summ), na, nb, dot


def _mp_relu_nngp(a, b):
    with mpmath.workdps(60):
        theta, na, nb, _ = _mp_angle(a, b)
        kappa1 = (mpmath.sin(theta) + (mpmath.pi - theta) * mpmath.cos(theta)) / mpmath.pi
        return na * nb / len(a) * kappa1


@pytest.mark.parametrize("delta", [1e-2, 1e-3, 1e-4, 1e-6])
@pytest.mark.parametrize("d", [3, 50])
def test_near_antipodal_relu_nngp_against_mpmath(delta, d):
    # θ₀ = π − δ: κ₁ ≈ δ³/(3π) comes from sin δ − δ cos δ with δ exact (no float π).
    rng = np.random.default_rng(d)
    a = rng.standard_normal(d)
    u = rng.standard_normal(d)
    u -= (u @ a) / (a @ a) * a
    b = -np.cos(delta) * a / np.linalg.norm(a) + np.sin(delta) * u / np.linalg.norm(u)
    x = np.stack([a, b])
    ref = _mp_relu_nngp(a, b)
    for K in (ntkcond.infinite_nngp(x, depth=1),
              ntkcond.infinite_ntk(x, depth=1, trainable="last")):
        got = K[0, 1]
        assert abs(mpmath.mpf(got) - ref) <= 1e-12 * abs(ref), (got, ref)
        assert K[1, 0] == got


def test_antipodal_rows_give_exactly_zero():
    x = np.random.default_rng(0).standard_normal((1, 30))
    x = np.vstack([x, -x, -0.25 * x])  # exact multiples (fl(-3x) is not one)
    K = ntkcond.infinite_nngp(x, depth=1)
    assert K[0, 1] == 0.0 and K[0, 2] == 0.0 and K[1, 0] == 0.0
    assert ntkcond.infinite_ntk(x, depth=1, trainable="last")[0, 1] == 0.0
    assert ntkcond.blockwise_ntk(x, depths=[1], trainable="last")[1][0, 1] == 0.0


@pytest.mark.parametrize("depth", [0, 3])
def test_near_orthogonal_entries_bounded_relative_to_the_diagonal(depth):
    # Linear/depth-0 entries carry the Gram product's rounding: exact to a few eps relative
    # to √(K(x, x)K(x', x')) (the stated bound), not to |K(x, x')| (a cancelling dot product).
    rng = np.random.default_rng(1)
    d = 200
    a = rng.standard_normal(d)
    u = rng.standard_normal(d)
    u -= (u @ a) / (a @ a) * a
    x = np.stack([a, u + 1e-8 * a])  # cos θ₀ ≈ 1e-8
    K = ntkcond.infinite_ntk(x, depth=depth, activation="linear")
    with mpmath.workdps(60):
        _, na, nb, dot = _mp_angle(x[0], x[1])
        ref = (depth + 1) * dot / d
        bound = 8 * np.finfo(float).eps * np.sqrt(K[0, 0] * K[1, 1])
        assert abs(mpmath.mpf(K[0, 1]) - ref) <= bound


def test_one_dispatch_yields_kernel_and_angle_terms():
    act = parse_activation("relu")
    angle = np.linspace(0.2, 3.0, 7)
    geometry = PairGeometry(angle, np.cos(angle))
    out = [(L, K.copy(), R.copy(), Z.copy())  # unit rows: T, updated in place by the next step
           for L, K, R, Z in recursion(geometry, _plan(act, [1, 2], None), [1, 2], kernel=True,
                                       angles=True)]
    assert [item[0] for item in out] == [1, 2]
    for _, K, R, Z in out:
        assert K.shape == angle.shape and np.all(R >= 0) and np.all(Z >= 0)
        # R = |S| − T, Z = |S| + T (gradient_recursion), T the same kernel to a few eps
        np.testing.assert_allclose((Z - R) / 2, K, rtol=0, atol=1e-15)


def test_scale_imports_only_public_modules_of_infinite():
    import ast
    import pathlib

    root = pathlib.Path(ntkcond.__file__).parent
    for path in (root / "scale").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and "infinite" in node.module:
                module = node.module.split("infinite", 1)[1]
                assert not module.startswith("._"), (path.name, node.module)
                assert not any(a.name.startswith("_") for a in node.names), (path.name, node.module)


@pytest.mark.parametrize("activation", ["relu", ("leaky_relu", 0.1), ("leaky_relu", 0.9), "linear"])
@pytest.mark.parametrize("layers", [None, "last", {0}, {0, 2}])
def test_kernel_state_equals_angle_state(activation, layers):
    # Both states compute T of eq. (2); the kernel state keeps θ to absolute precision (its
    # errors enter T through ġ = 1 − βθ and cos θ), so T agrees to a few eps absolute, angles
    # down to 1e-12 rad and up to π − 1e-12 rad included (3e-15 measured at depth 10).
    rng = np.random.default_rng(0)
    angle = np.concatenate([np.geomspace(1e-12, 0.1, 300), rng.uniform(0, np.pi, 300),
                            np.pi - np.geomspace(1e-12, 0.1, 300), [0.0, np.pi]])
    cos = np.cos(angle)
    act = parse_activation(activation)
    ref = {L: T.copy() for L, T, _, _, _ in gradient_recursion(angle, cos, [0, 1, 3, 10], act, layers)}
    kept = angle.copy()
    refined = np.nonzero((angle < 0.1) | (angle > np.pi - 0.1))
    near = np.minimum(angle, np.pi - angle)[refined]
    geometry = PairGeometry(angle, cos, refined=refined, near=near)
    for L, T, R, Z in recursion(geometry, _plan(act, [0, 1, 3, 10], layers), [0, 1, 3, 10]):
        assert R is None and Z is None
        assert np.max(np.abs(T - ref[L])) <= 5e-15 * max(1.0, np.max(np.abs(ref[L])))
    assert np.array_equal(angle, kept)  # inputs untouched without overwrite=True
