"""Input angles and gradient angles from float64 data, against 60-digit mpmath.

The float64 rows are the exact inputs: the references (``_reference``) take their exact dot
products at 60 digits, so they measure the error of ntkcond alone, including the error of
normalising rows, which the exact route of ``ntkcond.infinite.geometry`` avoids.

Tolerance: 1e-12 relative (the issue's target). Measured: ≤ 4.2e-16 for every case below
(one or two ulps: the exact route leaves ~eps relative in θ₀ and the recursion a few eps).
"""
import numpy as np
import pytest

import _reference as ref
from ntkcond import (
    InsufficientMemoryError,
    gradient_angles,
    infinite_nngp,
    infinite_ntk,
    input_angles,
    smallest_gradient_angle,
)
from ntkcond.infinite import geometry
from ntkcond.scale.conditioning import blockwise_ntk
from ntkcond.scale.streaming import streaming_smallest_angles

RTOL = 1e-12


def near_pair(d, angle, rng):
    """Rows x, y of dimension d at about ``angle`` radians (the exact float64 angle differs:
    the references are computed from the rows, never from ``angle``), different norms."""
    x = rng.standard_normal(d)
    w = rng.standard_normal(d)
    w -= (w @ x) / (x @ x) * x
    y = np.cos(angle) * x / np.linalg.norm(x) + np.sin(angle) * w / np.linalg.norm(w)
    return x, y * 2.7 * np.linalg.norm(x)


def batch_with_pair(d, angle, seed):
    """4 rows: the near pair at rows 1 and 3, two unrelated rows."""
    rng = np.random.default_rng(seed)
    x, y = near_pair(d, angle, rng)
    return np.vstack([rng.standard_normal(d), x, rng.standard_normal(d), y])


def rel(got, exact):
    exact = float(exact)
    return abs(got - exact) / exact


@pytest.mark.parametrize("d", [3, 784])
@pytest.mark.parametrize("angle", [1e-6, 1e-7])
def test_input_and_gradient_angles_from_data_are_exact(d, angle):
    # Before the exact route: 5e-12…9e-11 at 1e-6 rad and 1.3e-10 at 1e-7 (normalising rows
    # in float64 moves them by ~eps, an error eps/θ).
    X = batch_with_pair(d, angle, seed=d)
    x, y = X[1], X[3]
    assert rel(input_angles(X)[1, 3], ref.input_angle(x, y)) <= RTOL
    for activation, slope in (("relu", 0.0), ("linear", 1.0)):
        for depth in (0, 1, 3, 10):
            exact = ref.gradient_angle(x, y, depth, slope)
            phi = gradient_angles(X, depth=depth, activation=activation)
            assert rel(phi[1, 3], exact) <= RTOL, (activation, depth)
            assert phi[3, 1] == phi[1, 3]
            value, i, j = smallest_gradient_angle(X, depth=depth, activation=activation)
            assert (i, j) == (1, 3) and rel(value, exact) <= RTOL


@pytest.mark.parametrize("angle", [1e-3, 1e-9, 1e-12, 1e-15, 1e-17])
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["near0", "nearpi"])
def test_input_angles_exact_at_any_angle(angle, sign):
    # Beyond the range: the exact route has no 1/θ in its error. Near π the angle is
    # π − (small) and its relative error is that of a float64 near π.
    for d in (3, 30, 784):
        X = batch_with_pair(d, angle, seed=int(d / angle) % 2**32)
        X[3] *= sign
        assert rel(input_angles(X)[1, 3], ref.input_angle(X[1], X[3])) <= RTOL


def test_multiples_are_exactly_parallel():
    rng = np.random.default_rng(7)
    x = np.round(rng.standard_normal(50) * 2**30) / 2**30  # 3·x is exact in float64
    X = np.vstack([x, 3 * x, -0.5 * x, rng.standard_normal(50), 2.0**-990 * x, 2.0**900 * x])
    A = input_angles(X)
    # before: 8.7e-9 rad for (x, 3x); exactly 0 / π now, at any scale (powers of two are exact)
    assert A[0, 1] == 0.0 and A[0, 4] == 0.0 and A[0, 5] == 0.0 and A[1, 5] == 0.0
    assert A[0, 2] == np.pi and A[1, 2] == np.pi
    # ratios that are no float (1/3 after the rows' power-of-two scaling, 5/3) as well
    Z = np.vstack([3 * x, x, 5 * x, -7 * x, 2.0**900 * x])
    sign = np.array([1, 1, 1, -1, 1])
    assert np.array_equal(input_angles(Z), np.where(np.outer(sign, sign) > 0, 0.0, np.pi))
    for depth in (1, 5):
        assert gradient_angles(X, depth=depth)[0, 1] == 0.0
        assert smallest_gradient_angle(X, depth=depth)[0] == 0.0
    # fl(3·y) for a general y is not an exact multiple: its tiny true angle, not 0
    y = rng.standard_normal(50)
    Y = np.vstack([y, 3 * y])
    exact = ref.input_angle(y, 3 * y)
    assert 0 < float(exact) < 1e-15
    assert rel(input_angles(Y)[0, 1], exact) <= RTOL


def test_only_the_refined_pairs_take_the_exact_route(monkeypatch, digits_batch):
    # The cost stays that of the Gram route unless pairs are within 0.1 rad of 0 or π.
    seen = []
    original = geometry.exact_angles_near

    def spy(x1, x2, rows, cols):
        seen.append(len(rows))
        return original(x1, x2, rows, cols)

    monkeypatch.setattr(geometry, "exact_angles_near", spy)
    x = digits_batch[:60].copy()
    A = input_angles(x)
    assert A[~np.eye(60, dtype=bool)].min() > 0.1 and seen == []
    x[40] = x[7] * 1.5 + 1e-6
    input_angles(x)
    assert seen == [1]  # one pair, once (its mirror image is copied)


def test_input_angles_symmetric_with_refined_pairs():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((30, 9))
    x[10:20] = x[:10] + 1e-5 * rng.standard_normal((10, 9))
    A = input_angles(x)
    assert np.array_equal(A, A.T) and np.all(np.diagonal(A) == 0)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_streaming_route_is_exact_too(backend):
    # streaming_smallest_angles uses the same exact route block by block (and on the host for
    # pairs the jax backend flags on its devices).
    rng = np.random.default_rng(11)
    x = rng.standard_normal((70, 784))
    a, b = near_pair(784, 1e-7, rng)
    x[23], x[58] = a, b
    res = streaming_smallest_angles(x, depths=[0, 3, 10], activations=["relu", "linear"],
                                    block=32, backend=backend)
    assert res.input_pair == (23, 58)
    assert rel(res.input_angle, ref.input_angle(a, b)) <= RTOL
    for r in res.results:
        assert r.pair == (23, 58)
        exact = ref.gradient_angle(a, b, r.depth, 0.0 if r.activation == "relu" else 1.0)
        assert rel(r.angle, exact) <= RTOL, r


def test_blockwise_kernel_uses_the_exact_route():
    # K of a pair 1e-7 rad apart is |S|·‖x‖‖y‖/d·(1 − O(θ)); the blockwise kernel equals the
    # dense one entry for entry and both match the 60-digit reference.
    rng = np.random.default_rng(12)
    x = rng.standard_normal((40, 20))
    x[5], x[33] = near_pair(20, 1e-7, rng)
    K = blockwise_ntk(x, depths=[3], block=16)[3]
    np.testing.assert_allclose(K, infinite_ntk(x, depth=3), rtol=1e-13, atol=0)
    _, ntk, _ = ref.kernels(x[5], x[33], 3, 0.0)
    assert rel(K[5, 33], ntk) <= RTOL


SCALES = [2.0**-600, 1e-170, 1e-160, 1e154, 1e200, 1e300]


@pytest.mark.parametrize("scale", SCALES, ids=[f"{s:.0e}" for s in SCALES])
def test_angles_are_scale_invariant(scale):
    # Before: off by 0.55 rad for rows of norm > 1e154, by 2.7e-4 rad at 1e-160, and rows of
    # norm 1e-170 were called "zero". Rows are scaled by powers of two (exact) before anything
    # else, so the angles are those of the scaled float64 rows to 1e-12 relative.
    rng = np.random.default_rng(13)
    x = rng.standard_normal((5, 16))
    x[4] = x[1] + 1e-6 * rng.standard_normal(16)
    xs = x * scale
    assert np.all(np.isfinite(xs)) and np.all(np.abs(xs).max(axis=1) > 0)
    A = input_angles(xs)
    phi = gradient_angles(xs, depth=3)
    for i in range(5):
        for j in range(i + 1, 5):
            assert rel(A[i, j], ref.input_angle(xs[i], xs[j])) <= RTOL
            assert rel(phi[i, j], ref.gradient_angle(xs[i], xs[j], 3, 0.0)) <= RTOL
    if np.log2(scale).is_integer():  # a power of two changes no bit of the angles
        assert np.array_equal(A, input_angles(x))
        assert np.array_equal(phi, gradient_angles(x, depth=3))


@pytest.mark.parametrize("scale", [1e-170, 1e200])
@pytest.mark.parametrize("kernel", [infinite_ntk, infinite_nngp])
def test_kernels_outside_float64_range_are_refused(scale, kernel):
    # ‖x‖‖x'‖/d of 1e-340 or 1e400 is not a float64: a ValueError, not zeros or infs.
    x = np.random.default_rng(14).standard_normal((4, 10)) * scale
    name = kernel.__name__
    with pytest.raises(ValueError, match=rf"{name}: expected kernel entries within float64's "
                                         r"range, got ‖x‖‖x'‖/d (above 1.8e308|below 2.2e-308)"):
        kernel(x, depth=2)


@pytest.mark.parametrize("call, where", [
    (lambda x: infinite_ntk(x, depth=1), "infinite_ntk"),
    # the default pairs route needs no n × n matrix; the recursion route does
    (lambda x: smallest_gradient_angle(x, depth=1, method="recursion"), "smallest_gradient_angle"),
    (lambda x: gradient_angles(x, depth=1), "gradient_angles"),
])
def test_too_many_rows_are_refused_before_allocating(call, where):
    # n = 200,000 needs 24 float64 n × n arrays (7.7 TB): refused before any is allocated,
    # with the streaming route named, instead of numpy's MemoryError.
    x = np.ones((200_000, 2))
    x[:, 1] = np.arange(200_000)
    with pytest.raises(InsufficientMemoryError,
                       match=rf"{where}: the 200000 x 200000 pairwise computation .* needs "
                             r"[0-9.]+ GiB but only [0-9.]+ GiB is available; .*"
                             r"streaming_smallest_angles.*exact_conditioning") as err:
        call(x)
    assert isinstance(err.value, ValueError)


def test_memory_factor_covers_the_measured_peak():
    # PAIR_ARRAYS is the peak of float64 (n, n) arrays alive in the kernel functions (measured
    # 24.0 at n = 400 with tracemalloc); this keeps it honest if the recursion changes.
    import tracemalloc

    x = np.random.default_rng(15).standard_normal((300, 20))
    for call in (lambda: gradient_angles(x, depth=3), lambda: infinite_ntk(x, depth=3),
                 lambda: infinite_nngp(x, depth=3)):
        call()
        tracemalloc.start()
        call()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak <= geometry.PAIR_ARRAYS * 8 * 300 * 300 * 1.05
