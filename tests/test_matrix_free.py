"""Matrix-free κ_eff (``ntkcond.scale.matrix_free``) against the exact route and prescribed
spectra: agreement, the tile cache, the pass count and the deflated null space."""
import numpy as np
import pytest

from ntkcond import datasets
from ntkcond.scale.conditioning import exact_conditioning
from ntkcond.scale.matrix_free import default_sketch, matrix_free_conditioning


@pytest.fixture(scope="module")
def digits():
    return datasets.load("digits").x


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
    # the passes' wall time is part of the whole, and holds at least the median pass
    assert mf.seconds_per_pass <= mf.seconds_in_passes <= mf.seconds
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


# --- reliability III -----------------------------------------------------------------------

def _x40():
    return np.random.default_rng(0).standard_normal((40, 6))


def test_null_space_that_k_does_not_annihilate_is_refused():
    x = _x40()
    Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((40, 3)))
    with pytest.raises(ValueError, match=r"matrix_free_conditioning: expected null_space to span null "
                                         r"vectors of K .* got \|\|K N\|\|_2 = "):
        matrix_free_conditioning(x, depth=2, null_space=Q)


def test_a_true_null_space_is_accepted_and_deflated():
    """Row 40 is 2·row 0: e_0/‖x_0‖ − e_40/‖x_40‖ is null (found automatically too); passing it
    gives the exact κ_eff (rel 1e-9: the LOBPCG tolerance 1e-10 against the exact route)."""
    x = _x40()
    xd = np.vstack([x, 2 * x[:1]])
    v = np.zeros(41)
    v[0], v[40] = 1 / np.linalg.norm(xd[0]), -1 / np.linalg.norm(xd[40])
    res = matrix_free_conditioning(xd, depth=2, null_space=v)
    exact = exact_conditioning(xd, depths=[2])[2]
    assert res.converged and abs(res.kappa_eff / exact.kappa_eff - 1) <= 1e-9


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(null_space=np.ones((39, 2))), ValueError, r"expected null_space of shape \(n, m\) = \(40, m\) with m < 40 .*got shape \(39, 2\)"),
    (dict(null_space=np.ones((40, 2, 2))), ValueError, r"expected null_space of shape .* got shape \(40, 2, 2\)"),
    (dict(null_space=np.full((40, 1), np.nan)), ValueError, "expected finite null_space entries"),
    (dict(null_space="abc"), TypeError, "expected null_space as an"),
    (dict(seed=-1), ValueError, "expected seed as an integer >= 0, got -1"),
    (dict(seed=2.5), TypeError, "expected seed as an integer >= 0, got float 2.5"),
    (dict(maxiter=0), ValueError, "expected maxiter as an integer >= 1, got 0"),
    (dict(lobpcg_tol=float("nan")), ValueError, "expected lobpcg_tol > 0"),
    (dict(lanczos_tol=-1.0), ValueError, "expected lanczos_tol > 0"),
    (dict(lobpcg_tol="a"), TypeError, "expected lobpcg_tol as a real number"),
    (dict(max_deflations=-1), ValueError, "expected max_deflations as an integer >= 0"),
])
def test_bad_arguments_are_refused_naming_them(kwargs, exc, match):
    with pytest.raises(exc, match=f"matrix_free_conditioning: {match}"):
        matrix_free_conditioning(_x40(), depth=2, **kwargs)


def test_too_few_rows_names_n_not_a_k_never_passed():
    with pytest.raises(ValueError, match=r"expected n >= 4 rows .* got n = 3; use ntkcond.exact_conditioning"):
        matrix_free_conditioning(_x40()[:3], depth=1)
    assert matrix_free_conditioning(_x40()[:4], depth=1).converged
