"""Exact blockwise and matrix-free κ_eff against dense kernels and prescribed spectra."""
import numpy as np
import pytest

from ntkcond import conditioning, datasets, infinite_ntk
from ntkcond import InsufficientMemoryError
from ntkcond.activations import parse_activation
from ntkcond.infinite._recursion import gradient_recursion
from ntkcond.scale.conditioning import (
    blockwise_ntk,
    default_sketch,
    exact_conditioning,
    kernel_recursion,
    matrix_free_conditioning,
)


@pytest.fixture(scope="module")
def digits():
    return datasets.load("digits").x


def test_blockwise_kernel_equals_dense_kernel(digits):
    x = digits[:150]
    kernels = blockwise_ntk(x, depths=[0, 2, 5], block=40)  # 150 = 3·40 + 30: ragged blocks
    for L, K in kernels.items():
        # Same formula entry for entry; only the Gram products are blocked (≤ 1e-15 relative).
        np.testing.assert_allclose(K, infinite_ntk(x, depth=L), rtol=1e-13, atol=1e-15)
        assert np.array_equal(K, K.T)


@pytest.mark.parametrize("activation", ["relu", "linear"])
def test_exact_route_equals_dense_conditioning(digits, activation):
    x = digits[:150]
    exact = exact_conditioning(x, depths=[1, 4], activation=activation, block=64)
    for L, c in exact.items():
        dense = conditioning(infinite_ntk(x, depth=L, activation=activation))
        # Two LAPACK drivers on matrices equal to ~1e-15: eigenvalues agree to ~n·eps·λ_max,
        # i.e. ≲ κ·n·eps ≈ 1e-9 relative for λ_min at κ ≲ 1e5. The ranks can be compared
        # because no eigenvalue lies within 100x of the cutoff either way (the design, checked:
        # rounding moves eigenvalues by ~eps·λ_max, far less than that margin)
        lam = np.abs(dense.eigenvalues)
        assert not np.any((lam > dense.cutoff / 100) & (lam < 100 * dense.cutoff)), activation
        assert c.rank == dense.rank
        np.testing.assert_allclose(c.kappa_eff, dense.kappa_eff, rtol=1e-8)
        np.testing.assert_allclose(c.lambda_max, dense.lambda_max, rtol=1e-12)


def test_linear_rank_deficient_prescribed_spectrum():
    rng = np.random.default_rng(0)
    n, d = 120, 20
    U = np.linalg.qr(rng.standard_normal((n, d)))[0]
    V = np.linalg.qr(rng.standard_normal((d, d)))[0]
    s = np.geomspace(1.0, 30.0, d)
    x = (U * s) @ V.T  # singular values s: K = (L+1)·XXᵀ/d has nonzero eigenvalues (L+1)s²/d
    expected = (s[-1] / s[0]) ** 2
    c = exact_conditioning(x, depths=[3], activation="linear", block=50)[3]
    assert c.rank == d
    np.testing.assert_allclose(c.kappa_eff, expected, rtol=1e-9)
    mf = matrix_free_conditioning(x, depth=3, activation="linear")
    assert mf.method == "feature-space" and mf.null_dimension == n - d
    np.testing.assert_allclose(mf.kappa_eff, expected, rtol=1e-9)
    np.testing.assert_allclose(mf.lambda_max, 4 * s[-1] ** 2 / d, rtol=1e-12)


@pytest.mark.parametrize("activation", ["relu", ("leaky_relu", 0.1), ("leaky_relu", 0.9), "linear"])
@pytest.mark.parametrize("layers", [None, "last", {0}, {0, 2}])
def test_kernel_recursion_equals_gradient_recursion(activation, layers):
    # Both compute T of eq. (2); the kernel-only recursion keeps θ to absolute precision (its
    # errors enter T through ġ = 1 − βθ and cos θ), so T agrees to a few eps absolute, angles
    # down to 1e-12 rad and up to π − 1e-12 rad included (3e-15 measured at depth 10).
    rng = np.random.default_rng(0)
    angle = np.concatenate([np.geomspace(1e-12, 0.1, 300), rng.uniform(0, np.pi, 300),
                            np.pi - np.geomspace(1e-12, 0.1, 300), [0.0, np.pi]])
    cos = np.cos(angle)
    act = parse_activation(activation)
    ref = {L: T.copy() for L, T, _, _, _ in gradient_recursion(angle, cos, [0, 1, 3, 10], act, layers)}
    kept = angle.copy()
    for L, T in kernel_recursion(angle, cos, [0, 1, 3, 10], act, layers):
        assert np.max(np.abs(T - ref[L])) <= 5e-15 * max(1.0, np.max(np.abs(ref[L])))
    assert np.array_equal(angle, kept)  # inputs untouched without overwrite=True


def test_blockwise_kernel_does_not_depend_on_the_workers(digits):
    x = digits[:150]
    one = blockwise_ntk(x, depths=[3], block=40, workers=1)[3]
    two = blockwise_ntk(x, depths=[3], block=40, workers=3)[3]
    assert np.array_equal(one, two)  # each tile is computed alone, whoever computes it


def test_exact_route_reports_its_phases(digits):
    timings = {}
    exact_conditioning(digits[:100], depths=[2], block=32, timings=timings)
    assert set(timings) == {"build", "eigvalsh"} and all(v >= 0 for v in timings.values())


def test_matrix_free_agrees_with_exact(digits):
    x = digits[:200]
    exact = exact_conditioning(x, depths=[3], block=64)[3]
    mf = matrix_free_conditioning(x, depth=3, block=64)
    assert mf.converged and mf.method == "nystrom+lobpcg"
    # The residual bounds are rigorous: an eigenvalue lies within r·λ_max of each returned
    # value (+ rounding of the exact route, n·eps·λ_max), and the closest ones are the ends here.
    rounding = 200 * 2.3e-16 * exact.lambda_max
    assert abs(mf.lambda_min_nonzero - exact.lambda_min_nonzero) <= mf.residual * mf.lambda_max + rounding
    assert abs(mf.lambda_max - exact.lambda_max) <= mf.residual_max * mf.lambda_max + rounding
    # Residuals ≤ 1e-10·λ_max give the eigenvalues to ~r²/gap: κ_eff to 1e-8 with room.
    assert mf.residual <= 1e-10 and mf.residual_max <= 1e-10
    np.testing.assert_allclose(mf.kappa_eff, exact.kappa_eff, rtol=1e-8)
    assert mf.null_dimension == mf.known_null == 0
    assert mf.sketch == default_sketch(200) == 50 and mf.block_size == 50
    # a short repr: the numbers a user reads first, 6 digits
    assert repr(mf).startswith(f"MatrixFreeConditioning(kappa_eff={mf.kappa_eff:.6g}, lambda_max=")
    assert "converged=True" in repr(mf) and "cached=100%" in repr(mf) and len(repr(mf)) < 300


@pytest.mark.parametrize("cache", [None, 0, 100_000])
def test_matrix_free_tile_cache_changes_time_not_results(digits, cache):
    # Kept tiles are the same values kernel_tile computes (deterministic), so every pass, and
    # the result, is bit for bit the one without a cache; only the recomputed share changes.
    x = digits[:300]
    plain = matrix_free_conditioning(x, depth=3, block=64, cache=0)
    mf = matrix_free_conditioning(x, depth=3, block=64, cache=cache)
    assert (mf.kappa_eff, mf.lambda_min_nonzero, mf.matvecs) == (
        plain.kappa_eff, plain.lambda_min_nonzero, plain.matvecs)
    tiles = 8 * sum(min(64, 300 - r) * min(64, 300 - c)  # 5 × 5 grid, upper triangle
                    for r in range(0, 300, 64) for c in range(r, 300, 64))
    if cache is None:  # default: half the available memory, far above 0.7 MB here
        assert mf.cached_fraction == 1.0 and mf.cache_bytes == tiles
    elif cache == 0:
        assert mf.cached_fraction == 0.0 and mf.cache_bytes == 0
    else:  # the first tiles in row order whose bytes fit in 100 kB: three 64 × 64 tiles
        assert mf.cache_bytes == 3 * 8 * 64 * 64 <= cache
        assert mf.cached_fraction == pytest.approx(mf.cache_bytes / tiles, rel=1e-12, abs=0)


def test_matrix_free_pass_count(digits):
    # One sketch pass + ``power`` sharpening passes start both blocks; then one pass per LOBPCG
    # iteration and one final pass for the residuals. The Nyström preconditioner is what keeps
    # the count low: without it (sketch=0) the same block and tolerance take several times more.
    x = digits[:400]
    mf = matrix_free_conditioning(x, depth=3, block=64, k=16)
    assert mf.converged and mf.sketch == 100 and mf.matvecs <= 50  # 40 here
    plain = matrix_free_conditioning(x, depth=3, block=64, k=16, sketch=0, maxiter=3 * mf.matvecs)
    assert plain.sketch == 0 and not plain.converged and plain.matvecs == 3 * mf.matvecs + 1
    capped = matrix_free_conditioning(x, depth=3, block=64, k=16, maxiter=10)
    assert capped.matvecs == 11 and not capped.converged  # the cap, then the final pass
    assert capped.residual > 1e-10


def test_matrix_free_deflates_the_null_space_of_duplicates(digits):
    x = digits[:120].copy()
    # duplicated directions, bit for bit, scaled, and equal to ~1e-15 (not bit for bit):
    # kernel rows in proportion up to rounding, a 3-dimensional null space known from x
    x[7], x[30] = x[2], 2.0 * x[11]
    x[40] = 3.0 * x[3] * (1 + 1e-15 * np.arange(x.shape[1]))
    exact = exact_conditioning(x, depths=[2], block=64)[2]
    assert exact.rank == 117
    mf = matrix_free_conditioning(x, depth=2, block=32)
    assert mf.known_null == 3 and mf.null_dimension == 3  # deflated from the start
    assert mf.converged and mf.matvecs <= 40
    np.testing.assert_allclose(mf.lambda_min_nonzero, exact.lambda_min_nonzero, rtol=1e-8)


def test_matrix_free_finds_null_directions_it_was_not_told(digits, monkeypatch):
    # The same null space hidden from the data check: the iteration finds both directions
    # (Ritz values below τ = n·eps·λ_max, converged) and locks them.
    import ntkcond.scale.matrix_free as matrix_free

    monkeypatch.setattr(matrix_free, "known_null_space", lambda xh, *a: np.zeros((len(xh), 0)))
    x = digits[:120].copy()
    x[7] = x[2] * (1 + 1e-15 * np.arange(x.shape[1]))
    x[40] = x[3] + 1e-15 * x[5]
    exact = exact_conditioning(x, depths=[2], block=64)[2]
    mf = matrix_free_conditioning(x, depth=2, block=32, k=4)
    assert mf.known_null == 0 and mf.null_dimension == 120 - exact.rank == 2
    np.testing.assert_allclose(mf.lambda_min_nonzero, exact.lambda_min_nonzero, rtol=1e-8)
    assert mf.converged


def test_too_little_memory_is_refused_before_allocating():
    x = np.ones((1_000_000, 2))  # the kernel would need 8 TB
    x[:, 1] = np.arange(1_000_000)
    with pytest.raises(InsufficientMemoryError, match="matrix_free_conditioning") as err:
        exact_conditioning(x, depths=[1])
    assert isinstance(err.value, MemoryError) and isinstance(err.value, ValueError)
    with pytest.raises(InsufficientMemoryError, match="needs 0.00 GiB but only 0.00 GiB"):
        blockwise_ntk(np.eye(20), depths=[1], memory_limit=100)


def test_bad_input(digits):
    with pytest.raises(ValueError, match="backend 'numpy' or 'jax'"):
        blockwise_ntk(digits[:10], depths=[1], backend="torch")
    with pytest.raises(ValueError, match="block size >= 1"):
        blockwise_ntk(digits[:10], depths=[1], block=0)
    with pytest.raises(ValueError, match="1 <= k < n/2"):
        matrix_free_conditioning(digits[:10], depth=1, k=8)
    with pytest.raises(ValueError, match="expected sketch as an integer >= 0"):
        matrix_free_conditioning(digits[:40], depth=1, sketch=-1)
    with pytest.raises(ValueError, match="expected workers as an integer >= 1"):
        blockwise_ntk(digits[:10], depths=[1], workers=0)
    with pytest.raises(ValueError, match="^matrix_free_conditioning: expected cache as an integer >= 0, got -1$"):
        matrix_free_conditioning(digits[:40], depth=1, cache=-1)
    with pytest.raises(ValueError, match="expected cache as an integer >= 0, got '1GB'"):
        matrix_free_conditioning(digits[:40], depth=1, cache="1GB")


@pytest.mark.parametrize("call, err, match", [
    (lambda x: exact_conditioning(x, depths=[1], rtol=-1), ValueError,
     r"^exact_conditioning: expected rtol >= 0 and finite, got -1$"),
    (lambda x: exact_conditioning(x, depths=[1], rtol=float("nan")), ValueError,
     r"^exact_conditioning: expected rtol >= 0 and finite, got nan$"),
    (lambda x: exact_conditioning(x, depths=[1], atol="0"), TypeError,
     r"^exact_conditioning: expected atol as a real number >= 0 or None, got '0'$"),
    (lambda x: matrix_free_conditioning(x, depth=1, rtol=float("inf")), ValueError,
     r"^matrix_free_conditioning: expected rtol >= 0 and finite, got inf$"),
    (lambda x: exact_conditioning(x * 1e200, depths=[1]), ValueError,
     r"^exact_conditioning: expected kernel entries within float64's range, got ‖x‖²/d from "
     r"inf to inf; rescale x \(κ is scale-invariant"),
    (lambda x: blockwise_ntk(x * 1e-170, depths=[1]), ValueError,
     r"^blockwise_ntk: expected kernel entries within float64's range, got ‖x‖²/d from 0 to "),
    (lambda x: exact_conditioning(x, depths=5), TypeError,
     r"^exact_conditioning: expected depths as an iterable of integers .*got 5$"),
])
def test_bad_tolerances_and_scales(digits, call, err, match):
    # rtol = -1 or NaN was accepted with a cutoff of 0; rows of norm 1e200 gave an inf kernel.
    with pytest.raises(err, match=match):
        call(digits[:20])
