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


# ------------------------------------------------------------------ deep nets: the compiled loop
# ``ntkcond.infinite.chain_loops``: the layers after the first run compiled, pair by pair. The
# exact answer is the 30-digit recursion of eq. (4) of ``angles`` (``_mp_phi``); the route it
# replaced (NumPy, one call per operation and layer: ``_numpy_phi``, the operations of
# ``layer_step``) drifts from it by up to ~2e-14·L (3.9e-10 rad at L = 2·10⁴ for leaky:0.2,
# measured), the compiled loop stays within a few eps (4.4e-15 rad there).

def _mp_phi(theta0, depth, alpha):
    """φ_L of eq. (4) (every layer trained) at 30 digits from the exact float64 θ₀."""
    with mpmath.workdps(30):
        a = mpmath.mpf(alpha)
        w = (1 - a) ** 2 / (1 + a * a)
        th = mpmath.mpf(float(theta0))
        c = mpmath.cos(th)
        T = c
        for _ in range(depth):
            g = 1 - w / mpmath.pi * th
            c = c + w * (mpmath.sin(th) - th * mpmath.cos(th)) / mpmath.pi
            th = mpmath.acos(c)
            T = c + g * T
        return float(mpmath.acos(T / (depth + 1)))


def _numpy_phi(theta0, depth, act):
    """φ_L by the route before the compiled loop: ``layer_step`` per layer in NumPy."""
    from ntkcond.infinite.recursion import angle_from, layer_step, one_minus_cos, one_plus_cos

    angle = np.array(theta0, dtype=np.float64)
    cos = np.cos(angle)
    beta = act.derivative_slope
    T, R, Z, count = cos, one_minus_cos(angle), one_plus_cos(angle), 1.0
    for _ in range(depth):
        gap = beta * angle
        angle, cos, u, v = layer_step(angle, cos, act)
        T = cos + (1.0 - gap) * T
        R = u + count * gap + (1.0 - gap) * R
        Z = v + count * gap + (1.0 - gap) * Z
        count += 1.0
    return angle_from(R, Z)


@pytest.mark.parametrize("name,alpha", [("relu", 0.0), ("leaky:0.2", 0.2), ("abs", -1.0)])
def test_compiled_loop_against_30_digits_and_the_numpy_route(name, alpha):
    # Input angles 1e-6 … 2.9 rad: at L = 2000 the compiled loop is within 1e-13 relative of
    # the 30-digit recursion (measured ≤ 4e-15). (At π − 1e-6 both float64 routes start from
    # cos θ₀, whose 1 + cos θ₀ = 5e-13 carries 4e-4 relative rounding: compared with the
    # NumPy route only.) The NumPy route agrees within 64·L·eps (its measured drift:
    # ≤ 2.3e-10 rad at L = 2·10⁴, ≤ 1.2e-11 at L = 2000).
    act = parse_activation(name, "test")
    theta = np.array([1e-6, 1e-3, 0.4, 1.3, 2.9])
    L = 2000
    got = ntkcond.infinite.angles.gradient_angle(theta, L, name)
    want = np.array([_mp_phi(t, L, alpha) for t in theta])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    planted = ntkcond.infinite.angles.gradient_angle(theta, L + 1, name)  # one layer off
    assert not np.allclose(planted, want, rtol=1e-13, atol=0)
    theta = np.append(theta, np.pi - 1e-6)
    got = ntkcond.infinite.angles.gradient_angle(theta, L, name)
    assert np.all(np.abs(got - _numpy_phi(theta, L, act)) <= 64 * L * np.finfo(float).eps)


@pytest.mark.slow
def test_compiled_loop_at_depth_2e4():
    # The depth where the replaced route still costs seconds. Against the 30 digits: 1e-13
    # relative (measured ≤ 4.4e-15 rad). Against the replaced route: its own drift, 3.9e-10
    # rad at θ₀ = 1e-3 (measured), within 256·L·eps = 1.1e-9 rad.
    act = parse_activation("leaky:0.2", "test")
    theta = np.array([1e-3, 0.7, 2.5])
    L = 20000
    got = ntkcond.infinite.angles.gradient_angle(theta, L, "leaky:0.2")
    np.testing.assert_allclose(got, [_mp_phi(t, L, 0.2) for t in theta], rtol=1e-13, atol=0)
    assert np.all(np.abs(got - _numpy_phi(theta, L, act)) <= 256 * L * np.finfo(float).eps)


@pytest.mark.parametrize("activation", ["relu", "leaky:0.2", "abs"])
def test_depth_1e6_costs_seconds(activation, compiled_kernels):
    # Issue 34: gradient_angles(X, depth=10**6) took 112 s (ReLU) on this machine; the
    # compiled loop runs 11 distinct pairs × 10⁶ layers in ~0.6 s (bound 10 s for CI).
    import time

    x = np.random.default_rng(0).standard_normal((5, 4))
    x[1] = x[0] + 1e-3
    t0 = time.perf_counter()
    phi = ntkcond.gradient_angles(x, depth=10**6, activation=activation)
    K = ntkcond.infinite_ntk(x, depth=10**6, activation=activation)
    assert time.perf_counter() - t0 < 10.0
    assert np.all(np.isfinite(phi)) and np.all(np.isfinite(K))
    if activation == "relu":  # the layer-by-layer route's answer (issue 34), 5 digits
        assert abs(phi[0, 1] - 1.31713) < 5e-6
    # deep nets approach arccos(1/4) (angles eq. (6)) from below
    off = phi[~np.eye(5, dtype=bool)]
    assert np.all(off < ntkcond.infinite.angles.relu_infinite_depth_angle() + 1e-3)


def test_a_pair_does_not_depend_on_its_block_or_the_depths_asked():
    # Distinct entries (DISTINCT_AFTER), segments between the depths asked and threads do not
    # change a pair's float64 operations: bit for bit.
    x = np.random.default_rng(1).standard_normal((6, 5))
    depths = [1, 2, 33, 34, 35, 500]
    full = {L: (ntkcond.gradient_angles(x, depth=L), ntkcond.infinite_ntk(x, depth=L))
            for L in depths}
    for item in ntkcond.depth_sweep(x, depths):
        assert np.array_equal(item.angles, full[item.depth][0])
        assert np.array_equal(item.ntk, full[item.depth][1])
    sub = ntkcond.gradient_angles(x[[4, 1]], depth=500)
    assert sub[0, 1] == full[500][0][4, 1]


def test_depth_cost_is_bounded_up_front():
    # 256 rows at depth 10⁶ would be 32 641 distinct pairs × 10⁶ layers (~30 min): refused
    # before any layer runs, naming the function, the depth that fits and the depth asked.
    import time

    x = np.random.default_rng(0).standard_normal((256, 8))
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"^gradient_angles: expected depth <= 16447 for 32641 "
                                         r"distinct input angle\(s\).*got depth 1000000$"):
        ntkcond.gradient_angles(x, depth=10**6)
    with pytest.raises(ValueError, match=r"^gradient_angle: expected depth <= \d+ .*got depth"):
        ntkcond.infinite.angles.gradient_angle(np.linspace(0, 3, 10**4), 10**6)
    assert time.perf_counter() - t0 < 10.0
    assert ntkcond.infinite_ntk(x, depth=1000).shape == (256, 256)  # FREE_DEPTH always runs
