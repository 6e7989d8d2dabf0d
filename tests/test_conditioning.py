"""Exact blockwise κ_eff (``ntkcond.scale.conditioning``: ``blockwise_ntk``, ``exact_conditioning``)
against dense kernels and prescribed spectra; its bad inputs (matrix-free ones included)."""
import numpy as np
import pytest

from ntkcond import conditioning, datasets, infinite_ntk
from ntkcond import InsufficientMemoryError
from ntkcond.scale.conditioning import blockwise_ntk, exact_conditioning, matrix_free_conditioning


@pytest.fixture(scope="module")
def digits():
    return datasets.load("digits").x


def test_blockwise_kernel_equals_dense_kernel(digits):
    x = digits[:150]
    kernels = blockwise_ntk(x, depths=[0, 2, 5], block=40)  # 150 = 3·40 + 30: ragged blocks
    for L, K in kernels.items():
        # Same geometry and recursion entry for entry; only the Gram products are blocked
        # (their rounding: ≤ 1e-15 relative).
        np.testing.assert_allclose(K, infinite_ntk(x, depth=L), rtol=1e-13, atol=1e-15)
        assert np.array_equal(K, K.T)


@pytest.mark.parametrize("activation", ["relu", "linear", ("leaky_relu", 0.1)])
def test_blockwise_kernel_is_infinite_ntk_bit_for_bit(digits, activation):
    # One tile (n ≤ block): the same Gram product, geometry and recursion as infinite_ntk.
    x = digits[:300]
    kernels = blockwise_ntk(x, depths=[1, 3, 10], activation=activation, backend="numpy")
    for L, K in kernels.items():
        assert np.array_equal(K, infinite_ntk(x, depth=L, activation=activation))


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


def test_blockwise_kernel_does_not_depend_on_the_workers(digits):
    x = digits[:150]
    one = blockwise_ntk(x, depths=[3], block=40, workers=1)[3]
    two = blockwise_ntk(x, depths=[3], block=40, workers=3)[3]
    assert np.array_equal(one, two)  # each tile is computed alone, whoever computes it


def test_exact_route_reports_its_phases(digits):
    timings = {}
    exact_conditioning(digits[:100], depths=[2], block=32, timings=timings)
    assert set(timings) == {"build", "eigvalsh"} and all(v >= 0 for v in timings.values())


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
