"""``ntkcond.lambda_min_upper_bound`` (spectrum/interlacing.py, eq. (3)): the closest-pair interlacing bound
λ_min(K) ≤ min_{i<j} λ₋(i, j), and the record fields ``runs.depth.spectrum_record`` derives from
it."""
import mpmath
import numpy as np
import pytest
from conftest import orthogonal
from hypothesis import given
from hypothesis import strategies as st

from ntkcond import conditioning, lambda_min_upper_bound

EPS = np.finfo(np.float64).eps


def prescribed(eigenvalues, seed=0):
    """Q diag(λ) Qᵀ with a random orthogonal Q: its spectrum is λ up to O(n·eps·λ_max)."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    q = orthogonal(len(lam), np.random.default_rng(seed))
    K = (q * lam) @ q.T
    return 0.5 * (K + K.T)


def reference_pairs(K):
    """min over i < j of eigvalsh of each 2 × 2 principal submatrix, and its pair (a loop)."""
    n = K.shape[0]
    best = (np.inf, -1, -1)
    for i in range(n):
        for j in range(i + 1, n):
            lam = np.linalg.eigvalsh(K[np.ix_([i, j], [i, j])])[0]
            if lam < best[0]:
                best = (lam, i, j)
    return best


def exact_lower_2x2(a, b, c):
    """λ₋ of [[a, c], [c, b]] for the stored float64 entries, in 60-digit arithmetic."""
    with mpmath.workdps(60):
        a, b, c = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(c)
        return float((a + b) / 2 - mpmath.sqrt(((a - b) / 2) ** 2 + c**2))


@pytest.mark.parametrize("a, b, c", [
    (1.0, 1.0, float(np.cos(1e-6))),      # a close pair: λ₋ ≈ 5e-13, λ₊ ≈ 2
    (1.0, 1.0, -float(np.cos(1e-4))),     # anti-parallel: λ₋ = 1 − |c|
    (3.0, 1e-3, 0.05),                    # unequal diagonal
    (2.0, 5.0, 0.0),                      # diagonal: λ₋ = min(a, b)
    (4.0, 9.0, 6.0 * (1 - 2**-30)),       # nearly singular, ab − c² ≈ 72·2^-30
    (2.0, 3.0, float(np.sqrt(6.0) * np.cos(1e-7))),  # close pair, unequal diagonal
])
def test_two_by_two_is_exact(a, b, c):
    bound, i, j = lambda_min_upper_bound([[a, c], [c, b]])
    # det/λ₊ with an error-free determinant: a few roundings (hypot, sums, the division), each
    # ≤ eps/2 relative; 8 eps covers them.
    assert (i, j) == (0, 1)
    assert bound == pytest.approx(exact_lower_2x2(a, b, c), rel=8 * EPS, abs=0.0)


def test_two_by_two_close_pair_defeats_the_naive_formulas():
    # The test above can fail: for a close pair with unequal diagonal (φ = 1e-7, λ₋ ≈ 1.2e-14)
    # the textbook (a + b)/2 − √(…) and a plain (ab − c²)/λ₊ both keep only ~3 digits.
    a, b = 2.0, 3.0
    c = float(np.sqrt(a * b) * np.cos(1e-7))
    exact = exact_lower_2x2(a, b, c)
    naive = (a + b) / 2 - np.sqrt(((a - b) / 2) ** 2 + c**2)
    plain = (a * b - c * c) / ((a + b) / 2 + np.hypot((a - b) / 2, c))
    assert abs(naive - exact) > 1e-4 * exact and abs(plain - exact) > 1e-4 * exact
    assert lambda_min_upper_bound([[a, c], [c, b]])[0] == pytest.approx(exact, rel=8 * EPS, abs=0.0)


@pytest.mark.parametrize("kappa", [1.0, 10.0, 1e3, 1e6])
@pytest.mark.parametrize("n", [2, 9, 40])
def test_prescribed_spectrum(n, kappa):
    lam = np.geomspace(1.0, 1.0 / kappa, n)
    K = prescribed(lam, seed=n)
    bound, i, j = lambda_min_upper_bound(K)
    # Forming QΛQᵀ moves eigenvalues by O(n·eps·λ_max) (Weyl): allow 10x that below λ_min.
    assert bound >= lam[-1] - 10 * n * EPS
    assert bound <= np.min(np.diag(K)) + 4 * EPS
    ref, ri, rj = reference_pairs(K)
    # eigvalsh of a 2 × 2 is accurate to ~eps·λ₊ ≤ 2 eps·max|K|; 10 eps of margin.
    assert bound == pytest.approx(ref, rel=0.0, abs=10 * EPS * np.abs(K).max())
    assert i < j
    assert lambda_min_upper_bound(K[np.ix_([i, j], [i, j])])[0] == bound


@pytest.mark.parametrize("k", [-1000, -500, 0, 500, 1000, 1020])
def test_scale_invariant_up_to_1e308(k):
    # K·2^k is exact while its entries stay normal (|K_ij| ≥ 0.01 here, so down to 2^-1000),
    # and so is the bound: the same pair and exactly 2^k times the value (the plain products
    # overflowed at |K| ~ 1e154 and lost the error-free determinant below ~1e-145)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 3))
    K = x @ x.T
    K[0, 1] = K[1, 0] = np.sqrt(K[0, 0] * K[1, 1]) * (1 - 1e-9)  # a close pair dominates
    assert np.min(np.abs(K)) >= 0.01
    bound, i, j = lambda_min_upper_bound(K)
    assert lambda_min_upper_bound(np.ldexp(K, k)) == (np.ldexp(bound, k), i, j)
    assert lambda_min_upper_bound(np.diag([1e308, 1e308])) == (1e308, 0, 1)


def test_one_by_one_is_the_eigenvalue():
    assert lambda_min_upper_bound([[2.5]]) == (2.5, 0, 0)


def test_blocks_ties_and_the_pair_found_in_a_later_block():
    # n = 1500 is processed in row blocks of 699: plant the closest pair in the third block,
    # then a tie in the first block, which wins (first in row-major order).
    n = 1500
    K = np.eye(n)
    K[5, 900] = K[900, 5] = 0.8
    K[1450, 1499] = K[1499, 1450] = 0.9
    assert lambda_min_upper_bound(K) == (pytest.approx(0.1, rel=4 * EPS, abs=0.0), 1450, 1499)
    K[3, 7] = K[7, 3] = -0.9
    bound, i, j = lambda_min_upper_bound(K)
    assert (i, j) == (3, 7) and bound == pytest.approx(0.1, rel=4 * EPS, abs=0.0)


@st.composite
def gram_matrices(draw):
    n = draw(st.integers(2, 12))
    d = draw(st.integers(1, 15))
    seed = draw(st.integers(0, 2**31 - 1))
    scale = draw(st.floats(1e-3, 1e3))
    x = np.random.default_rng(seed).standard_normal((n, d))
    dup = draw(st.booleans())
    if dup:  # a near-duplicate row: a close pair
        x[1] = x[0] + draw(st.floats(1e-7, 1e-1)) * np.random.default_rng(seed + 1).standard_normal(d)
    return scale * (x @ x.T)


@given(gram_matrices())
def test_bound_is_above_the_smallest_eigenvalue(K):
    bound, i, j = lambda_min_upper_bound(K)
    lam = np.linalg.eigvalsh(K)
    # eigvalsh is backward stable: its λ_min is within ~n·eps·λ_max of the true one; 10x that.
    assert bound >= lam[0] - 10 * K.shape[0] * EPS * lam[-1]
    assert bound <= np.min(np.diag(K)) + 4 * EPS * np.abs(K).max()
    assert 0 <= i < j < K.shape[0]


@given(st.floats(1e-6, 1.0), st.integers(3, 10), st.integers(0, 2**31 - 1))
def test_tight_for_one_close_pair_in_a_block_diagonal_kernel(phi, n, seed):
    # K = P blockdiag([[1, c], [c, 1]], M) Pᵀ, c = cos φ, φ ≤ 1 rad (so 1 − c < 0.46), with
    # λ_min(M) ≥ 1: λ_min(K) = 1 − c, attained by the close pair; every other pair's λ₋ is ≥ 1
    # (interlacing inside M, or min(a, b) ≥ 1 across the blocks, where c = 0).
    rng = np.random.default_rng(seed)
    c = float(np.cos(phi))
    M = prescribed(rng.uniform(1.0, 3.0, n - 2), seed=seed)
    K = np.zeros((n, n))
    K[:2, :2] = [[1.0, c], [c, 1.0]]
    K[2:, 2:] = M
    perm = rng.permutation(n)
    K = K[np.ix_(perm, perm)]
    bound, i, j = lambda_min_upper_bound(K)
    where = sorted(int(np.flatnonzero(perm == k)[0]) for k in (0, 1))
    assert [i, j] == where
    # 1 − c is exact for c ≥ 1/2 (Sterbenz) and within eps otherwise; the determinant form adds
    # a few roundings: 8 eps relative.
    assert bound == pytest.approx(1.0 - c, rel=8 * EPS, abs=0.0)
    # and λ_min from eigvalsh equals it up to eigvalsh's n·eps·λ_max (λ_max ≤ 3): 10x that.
    assert np.linalg.eigvalsh(K)[0] == pytest.approx(bound, rel=0.0, abs=10 * n * EPS * 3.0)


def test_unit_diagonal_kernel_gives_one_minus_cos_of_the_smallest_angle():
    # Prop 4.1 of Liu & Hui: with K_ij = cos φ_ij, the bound is 1 − cos φ_min = 2 sin²(φ_min/2).
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20, 30))
    x[7] = x[2] + 1e-3 * rng.standard_normal(30)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    K = x @ x.T
    np.fill_diagonal(K, 1.0)
    bound, i, j = lambda_min_upper_bound(K)
    assert (i, j) == (2, 7)
    # angle from the data: φ = 2 asin(‖x_i − x_j‖/2) for unit vectors, stable for small φ
    phi = 2 * np.arcsin(np.linalg.norm(x[2] - x[7]) / 2)
    # 1 − K_27 against 2 sin²(φ/2): K_27 = x_2·x_7 is rounded to ~d·eps absolute, which is
    # d·eps/(φ²/2) relative (φ ≈ 1.4e-3): 30·2.2e-16/1e-6 ≈ 7e-9; allow 1e-7.
    assert bound == pytest.approx(2 * np.sin(phi / 2) ** 2, rel=1e-7, abs=0.0)
    assert conditioning(K).eigenvalues[0] <= bound + 10 * 20 * EPS * conditioning(K).lambda_max


def test_float32_kernel_accepted_like_conditioning():
    # A float32 Gram matrix with a near-duplicate row: its 2 × 2 minor may come out slightly
    # negative in float32; conditioning accepts the kernel, and so must the bound.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    x[1] = x[0]
    K = x @ x.T
    conditioning(K)
    bound, _, _ = lambda_min_upper_bound(K)
    assert abs(bound) <= 64 * np.finfo(np.float32).eps * np.abs(K).sum(1).max()


@pytest.mark.parametrize("K, exc, match", [
    ("abc", TypeError, "expected a 2-D array, got str"),
    (np.array([["a", "b"], ["c", "d"]]), TypeError, "expected a real matrix"),
    (np.ones((2, 3)), ValueError, r"square \(n, n\) matrix, got shape \(2, 3\)"),
    (np.ones((2, 2, 2)), ValueError, "square"),
    (np.zeros((0, 0)), ValueError, "non-empty"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), ValueError, "finite"),
    (np.zeros((3, 3)), ValueError, "nonzero kernel"),
    (np.array([[1.0, 0.5], [0.4, 1.0]]), ValueError, "symmetric"),
    (np.array([[1.0, 2.0], [2.0, 1.0]]), ValueError, r"positive semi-definite.*rows \(0, 1\)"),
    (np.array([[-1.0]]), ValueError, "positive semi-definite"),
])
def test_bad_input(K, exc, match):
    with pytest.raises(exc, match=match) as info:
        lambda_min_upper_bound(K)
    assert str(info.value).startswith("lambda_min_upper_bound:")


def test_spectrum_record_carries_the_bound_and_the_ratio():
    from ntkcond.runs.depth import RECORD_KEYS, spectrum_record

    assert {"lambda_min_upper_bound", "lambda_min_bound_ratio"} <= set(RECORD_KEYS)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 12))
    x[4] = x[9] + 1e-2 * rng.standard_normal(12)
    K = x @ x.T
    from ntkcond import pairwise_angles

    rec = spectrum_record(K, pairwise_angles(K), np.arange(10))
    lam = np.linalg.eigvalsh(K)
    assert rec["lambda_min_upper_bound"] == lambda_min_upper_bound(K)[0]
    assert rec["lambda_min_bound_ratio"] == rec["lambda_min_nonzero"] / rec["lambda_min_upper_bound"]
    # full rank: the ratio is λ_min/bound ≤ 1, up to eigvalsh's n·eps·λ_max/bound
    assert 0 < rec["lambda_min_bound_ratio"] <= 1 + 100 * 10 * EPS * lam[-1] / rec["lambda_min_upper_bound"]
