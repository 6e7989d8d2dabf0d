import numpy as np
import pytest
from conftest import orthogonal
from hypothesis import given
from hypothesis import strategies as st

from ntkcond import (
    conditioning,
    effective_condition_number,
    input_angles,
    pairwise_angles,
    smallest_pairwise_angle,
)

EPS = np.finfo(np.float64).eps


def prescribed(eigenvalues, seed=0):
    """Q diag(λ) Qᵀ with a random orthogonal Q: its spectrum is exactly λ up to rounding."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    q = orthogonal(len(lam), np.random.default_rng(seed))
    K = (q * lam) @ q.T
    return 0.5 * (K + K.T)


@pytest.mark.parametrize("kappa", [1.0, 10.0, 1e3, 1e6, 1e9])
@pytest.mark.parametrize("n", [2, 17, 64])
def test_prescribed_spectrum(n, kappa):
    lam = np.geomspace(1.0, 1.0 / kappa, n)
    cond = conditioning(prescribed(lam, seed=n))
    # Forming Q Λ Qᵀ and eigvalsh each perturb eigenvalues by O(n·eps·λ_max) (Weyl), so
    # λ_min has relative error ≲ n·eps·κ; allow 10x that.
    tol = 10 * n * EPS * kappa
    assert cond.rank == n
    assert cond.kappa_eff == pytest.approx(kappa, rel=tol, abs=0)
    assert cond.kappa == cond.kappa_eff
    assert cond.lambda_max == pytest.approx(1.0, rel=10 * n * EPS, abs=0)
    assert not cond.precision_limited


def test_effective_condition_number_skips_exact_zeros():
    lam = np.r_[np.geomspace(4.0, 0.5, 6), np.zeros(4)]
    K = prescribed(lam, seed=3)
    cond = conditioning(K)
    assert cond.rank == 6
    assert cond.kappa == np.inf
    # the nonzero part is resolved to O(n·eps·λ_max)/λ_min relative (see above)
    assert effective_condition_number(K) == pytest.approx(8.0, rel=100 * 10 * EPS * 8, abs=0)
    assert cond.cutoff == pytest.approx(10 * EPS * 4.0, rel=1e-12, abs=0)


def test_gram_with_more_points_than_dimensions():
    # n > d: G = XXᵀ has rank d and its nonzero eigenvalues are the squared singular values
    # of X, which the SVD of X gives to relative accuracy ~eps·κ(X) = eps·sqrt(κ(G)).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 30)) * np.geomspace(1, 1e-2, 30)
    s = np.linalg.svd(X, compute_uv=False)
    cond = conditioning(X @ X.T)
    assert cond.rank == 30
    assert cond.kappa == np.inf
    # eigvalsh of G loses eps·κ(G) ~ 2e-16·1e4 relative on λ_d; allow 100x.
    assert cond.kappa_eff == pytest.approx((s[0] / s[-1]) ** 2, rel=100 * EPS * (s[0] / s[-1]) ** 2, abs=0)


def test_duplicate_inputs_reduce_rank():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((12, 40))
    Xdup = np.vstack([X, X[:5]])  # 5 exact duplicates
    assert conditioning(Xdup @ Xdup.T).rank == 12
    s = np.linalg.svd(X, compute_uv=False)
    # duplicating rows changes the nonzero spectrum, but not the rank; exact spectrum from SVD:
    s_dup = np.linalg.svd(Xdup, compute_uv=False)[:12]
    assert effective_condition_number(Xdup @ Xdup.T) == pytest.approx(
        (s_dup[0] / s_dup[-1]) ** 2, rel=1e-10, abs=0)
    assert conditioning(X @ X.T).rank == 12 and s.size == 12


def test_one_by_one():
    assert effective_condition_number([[3.0]]) == 1.0
    c = conditioning(np.array([[2.5]]))
    assert (c.rank, c.kappa, c.kappa_eff) == (1, 1.0, 1.0)


def test_cutoffs():
    K = prescribed([1.0, 1e-3, 1e-8], seed=2)
    assert effective_condition_number(K) == pytest.approx(1e8, rel=1e-6, abs=0)
    assert effective_condition_number(K, rtol=1e-6) == pytest.approx(1e3, rel=1e-9, abs=0)
    assert effective_condition_number(K, atol=1e-2) == 1.0
    # τ = max(atol, rtol·λmax), λmax = 1 to ~n·eps (``prescribed``)
    assert conditioning(K, rtol=1e-6, atol=1e-9).cutoff == pytest.approx(1e-6, rel=1e-14, abs=0)


def test_float32_kernel_is_flagged():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((512, 784))
    X[1] = X[0] + 1e-3 * rng.standard_normal(784)  # a near-duplicate pair: κ ≈ 1e7
    K32 = (X @ X.T).astype(np.float32)
    c32 = conditioning(K32)
    assert c32.dtype == "float32"
    # float32 resolves κ only up to ~1/(n·eps32) = 1.6e4: the flag must say so. Its noise
    # eigenvalues (|λ| ~ n·eps32·λmax, either sign) are tolerated, not reported as "not PSD".
    assert c32.precision_limited
    assert c32.kappa_eff > 0.1 / (512 * np.finfo(np.float32).eps)
    c64 = conditioning(X @ X.T)
    assert not c64.precision_limited and c64.kappa_eff > 1e6
    # the same float32 values cast up still count as a float32 kernel when told so
    assert conditioning(K32.astype(np.float64), dtype=np.float32).precision_limited


@given(
    scale=st.floats(1e-100, 1e100),
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 12),
)
def test_scale_and_permutation_invariance(scale, seed, n):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n + 2))
    K = X @ X.T
    base = effective_condition_number(K)
    perm = rng.permutation(n)
    # Scaling by a float multiplies every entry with one rounding (relative eps); permuting is
    # exact. eigvalsh's error on λ_min is O(n·eps·λ_max), i.e. relative n·eps·κ on κ.
    tol = 20 * n * EPS * base
    assert effective_condition_number(scale * K) == pytest.approx(base, rel=tol, abs=0)
    assert effective_condition_number(K[np.ix_(perm, perm)]) == pytest.approx(base, rel=tol, abs=0)
    a = pairwise_angles(K)
    assert np.allclose(pairwise_angles(K[np.ix_(perm, perm)]), a[np.ix_(perm, perm)], rtol=0, atol=1e-12)


def test_pairwise_angles_of_gram_are_input_angles():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 10))
    A = pairwise_angles(X @ X.T)
    assert np.all(np.diagonal(A) == 0.0)
    # Angles ≥ 0.1 rad from a float64 Gram matrix are exact to ~eps/θ² ≤ 1e-13 relative.
    mask = ~np.eye(30, dtype=bool)
    assert np.allclose(A[mask], input_angles(X)[mask], rtol=1e-12, atol=0)
    angle, i, j = smallest_pairwise_angle(X @ X.T)
    assert i < j and angle == A[i, j] == A[mask].min()


def test_smallest_pairwise_angle_finds_planted_pair():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 20))
    X[37] = X[11] + 1e-3 * rng.standard_normal(20)
    angle, i, j = smallest_pairwise_angle(X @ X.T)
    assert (i, j) == (11, 37)
    assert angle == pytest.approx(input_angles(X)[11, 37], rel=1e-6, abs=0)


@pytest.mark.parametrize(
    "K, match",
    [
        (np.ones((2, 3)), r"square \(n, n\) matrix, got shape \(2, 3\)"),
        (np.ones((0, 0)), "non-empty"),
        (np.ones(3), "square"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "finite entries, got nan"),
        (np.array([[1.0, 0.0], [0.0, np.inf]]), "finite entries, got inf"),
        (np.array([[1.0, 0.5], [0.4, 1.0]]), r"symmetric matrix, got \|K\[0,1\] - K\[1,0\]\| = 0.1"),
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "positive semi-definite matrix, got eigenvalue -1"),
        (np.zeros((3, 3)), "nonzero kernel"),
        ([[1.0, 0.0], [0.0]], "expected a 2-D array, got a nested sequence that is not rectangular"),
    ],
)
def test_bad_kernels(K, match):
    with pytest.raises(ValueError, match=match):
        conditioning(K)
    with pytest.raises(ValueError):
        effective_condition_number(K)


def test_bad_types_and_tolerances():
    with pytest.raises(TypeError, match="conditioning: expected a real matrix .*got dtype complex128"):
        conditioning(np.eye(2, dtype=complex))
    with pytest.raises(TypeError, match="2-D array"):
        conditioning("K")
    with pytest.raises(ValueError, match="rtol >= 0"):
        conditioning(np.eye(2), rtol=-1.0)


def test_round_off_asymmetry_is_accepted():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((40, 7))
    K = X @ X.T
    K_noisy = K + 1e-15 * np.abs(K).max() * np.triu(rng.standard_normal(K.shape), 1)
    assert conditioning(K_noisy).rank == 7


def test_zero_norm_row_rejected():
    K = np.array([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"positive diagonal.*K\[1,1\] = 0"):
        pairwise_angles(K)
    with pytest.raises(ValueError, match="positive diagonal"):
        smallest_pairwise_angle(K)
    with pytest.raises(ValueError, match="n >= 2"):
        smallest_pairwise_angle([[1.0]])


# --- scale invariance (issue 14) ------------------------------------------------------------


def integer_kernel(n=6, seed=0):
    """X Xᵀ + I with small integer X: exact in float64 and under any power-of-two scaling."""
    X = np.random.default_rng(seed).integers(-3, 4, (n, 4)).astype(float)
    return X @ X.T + np.eye(n)


def test_huge_entries_do_not_overflow():
    # (K + Kᵀ) of diag(1e308, 1e308) overflowed to inf: lambda_max was nan.
    c = conditioning(np.diag([1e308, 1e308]))
    assert (c.lambda_max, c.lambda_min_nonzero, c.kappa_eff, c.kappa, c.rank) == (1e308, 1e308, 1.0, 1.0, 2)
    # eigenvalues beyond float64 are reported as inf (docstring); κ, rank are still exact
    c = conditioning(1e308 * np.ones((2, 2)))
    assert c.lambda_max == np.inf and c.eigenvalues[0] == 0.0
    assert (c.kappa_eff, c.rank, c.kappa) == (1.0, 1, np.inf)


def test_subnormal_kernels_are_exact():
    # 1e-320·K was off by 5e-4 in κ or rejected as not PSD (eigvalsh on subnormals). A kernel
    # of subnormal entries is scaled up by a power of two (exact) first.
    K = integer_kernel()
    exact = conditioning(K)
    tiny = conditioning(K * 2.0**-1070)  # entries k·2^-1070: exact subnormals
    assert (tiny.kappa_eff, tiny.kappa, tiny.rank) == (exact.kappa_eff, exact.kappa, exact.rank)
    assert np.array_equal(tiny.eigenvalues, np.ldexp(exact.eigenvalues, -1070))  # rounded there
    # 1e-320·K rounds its entries to the subnormal grid (relative 2^-1074/1e-320 ≈ 5e-4): the
    # matrix given is analysed exactly, as the same matrix scaled up by 2^1000 would be.
    K320 = 1e-320 * K
    assert conditioning(K320).kappa_eff == conditioning(K320 * 2.0**1000).kappa_eff


@pytest.mark.parametrize("c", [2.0**600, 1e160, 1e300, 1e-160, 1e-300, 2.0**-1000])
def test_pairwise_angles_are_scale_invariant(c):
    # NaN for c ≥ 1e160 (K² overflowed) and wrong for c ≤ 1e-160 (underflowed) before.
    K = integer_kernel()
    A = pairwise_angles(K)
    got = pairwise_angles(c * K)
    if np.log2(c).is_integer():
        assert np.array_equal(got, A)  # powers of two change no bit
    else:
        # c·K rounds each entry (eps relative): angles ≥ 0.3 rad here move by ≲ 10 eps
        assert np.min(A[~np.eye(6, dtype=bool)]) > 0.3
        np.testing.assert_allclose(got, A, rtol=1e-14, atol=0)
    assert smallest_pairwise_angle(c * K)[1:] == smallest_pairwise_angle(K)[1:]


def test_pairwise_angles_rounding_level_excess_is_zero_angle():
    # |K_01| above √(K_00 K_11) by an ulp is rounding (a duplicated input): angle 0, not an error
    K = np.array([[1.0, np.nextafter(1.0, 2.0)], [np.nextafter(1.0, 2.0), 1.0]])
    assert pairwise_angles(K)[0, 1] == 0.0


# --- validation (issue 14) --------------------------------------------------------------------


@pytest.mark.parametrize("call, err, match", [
    (lambda: pairwise_angles([[1.0, 0.5], [0.4, 1.0]]), ValueError,
     r"pairwise_angles: expected a symmetric matrix, got \|K\[0,1\] - K\[1,0\]\| = 0.1"),
    (lambda: smallest_pairwise_angle([[1.0, 0.5], [0.4, 1.0]]), ValueError,
     r"smallest_pairwise_angle: expected a symmetric matrix, got \|K\[0,1\] - K\[1,0\]\| = 0.1"),
    (lambda: pairwise_angles([[1.0, 2.0], [2.0, 1.0]]), ValueError,
     r"pairwise_angles: expected \|K\[i,j\]\| <= sqrt\(K\[i,i\]\*K\[j,j\]\) \(a Gram matrix.*"
     r"got \|K\[0,1\]\| = 2 > sqrt\(K\[0,0\]\*K\[1,1\]\) = 1"),
    (lambda: smallest_pairwise_angle([[4.0, -2.5], [-2.5, 1.0]]), ValueError,
     r"smallest_pairwise_angle: expected \|K\[i,j\]\| <= sqrt.*got \|K\[0,1\]\| = 2.5 > .* = 2"),
    (lambda: conditioning(np.eye(2), rtol="1e-3"), TypeError,
     r"conditioning: expected rtol as a real number >= 0 or None, got '1e-3'"),
    (lambda: conditioning(np.eye(2), atol=True), TypeError,
     r"conditioning: expected atol as a real number >= 0 or None, got True"),
    (lambda: conditioning(np.eye(2), rtol=float("nan")), ValueError,
     r"conditioning: expected rtol >= 0 and finite, got nan"),
    (lambda: effective_condition_number(np.eye(2), atol=-1e-3), ValueError,
     r"^effective_condition_number: expected atol >= 0 and finite, got -0.001"),
    (lambda: conditioning(np.eye(2), dtype="foo"), TypeError,
     r"conditioning: expected dtype as a floating-point dtype \(float16, bfloat16, float32, "
     r"float64\) or None, got 'foo'"),
    (lambda: conditioning(np.eye(2), dtype=np.int32), TypeError,
     r"conditioning: expected dtype as a floating-point dtype .*got <class 'numpy.int32'>"),
    (lambda: conditioning(np.eye(2), dtype="1e-3"), TypeError,
     r"conditioning: expected dtype as a floating-point dtype .*got '1e-3'"),
    (lambda: conditioning(np.eye(3, dtype=np.complex64)), TypeError,
     r"conditioning: expected a real matrix \(integer or floating dtype.*\), got dtype complex64"),
])
def test_bad_arguments_name_function_expectation_and_value(call, err, match):
    with pytest.raises(err, match=match):
        call()


def float16_indefinite(n=512, seed=0):
    """Eigenvalues 1 … 0.01 and one of −0.4, stored in float16."""
    q = orthogonal(n, np.random.default_rng(seed))
    lam = np.r_[np.linspace(1.0, 0.01, n - 1), -0.4]
    return ((q * lam) @ q.T).astype(np.float16)


def test_low_precision_psd_tolerance_is_capped():
    # The old floor n·eps·λmax was 0.5·λmax for float16 at n = 512: an eigenvalue of −0.4·λmax
    # passed as rounding. Now −max(τ, eps·‖K‖_F, min(n·eps, 0.01)·λmax) ≈ −0.013·λmax here.
    K16 = float16_indefinite()
    for K, dtype in ((K16, None), (K16.astype(np.float64), np.float16)):
        with pytest.raises(ValueError, match=r"conditioning: expected a positive semi-definite "
                                             r"matrix, got eigenvalue -0.(4|39)\d* < -0.01\d* .*float16"):
            conditioning(K, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_low_precision_kernels_keep_their_rounding_noise(dtype):
    # A rank-deficient Gram matrix stored in float16/bfloat16: its 48 zero eigenvalues become
    # noise of either sign, bounded by ‖δK‖₂ ≤ eps/2·‖K‖_F (storage rounding), which the rule
    # tolerates; the result is flagged as precision-limited.
    import ml_dtypes  # noqa: F401  (registers "bfloat16"; installed with jax)

    X = np.random.default_rng(2).standard_normal((64, 16))
    K = (X @ X.T).astype(dtype)
    c = conditioning(K)
    eps = 2.0**-10 if dtype is np.float16 else 2.0**-7
    assert c.dtype == np.dtype(dtype).name and c.precision_limited
    assert c.eigenvalues[0] < 0  # there is noise below zero, and it was accepted
    assert c.rank <= 64 and c.kappa_eff >= 1
    assert -c.eigenvalues[0] <= eps * np.sqrt(np.sum(c.eigenvalues**2))


def test_repr_is_short_and_leads_with_the_answer():
    # It printed the whole eigenvalue array: 10,000 characters at n = 512.
    lam = np.r_[np.geomspace(1e3, 1.0, 500), np.zeros(12)]
    c = conditioning(prescribed(lam, seed=8))
    text = repr(c)
    assert len(text) < 300 and "\n" not in text and str(c) == text
    keys = ["kappa_eff=", "lambda_max=", "lambda_min_nonzero=", "rank=500/512",
            "precision_limited=False", "dtype='float64'", "eigenvalues=<512 in ["]
    positions = [text.index(k) for k in keys]
    assert positions == sorted(positions) and text.startswith("Conditioning(kappa_eff=")
    assert f"kappa_eff={c.kappa_eff:.6g}," in text and f"lambda_max={c.lambda_max:.6g}," in text
    lo, hi = text.split("eigenvalues=<512 in [")[1].rstrip("])>").split(", ")
    # the range is printed with 4 significant digits: relative rounding ≤ 5e-4
    assert float(lo) == pytest.approx(c.eigenvalues[0], rel=1e-3, abs=0)
    assert float(hi) == pytest.approx(c.eigenvalues[-1], rel=1e-3, abs=0)


def _plain_pair_lower_eigenvalues(a, b, c):
    """λ₋ = det/λ₊ of [[a, c], [c, b]] as plain expressions: Dekker products for ab and c²
    (the reference the in-place ``interlacing._pair_lower_eigenvalues`` must equal bit for bit)."""
    from ntkcond.spectrum.interlacing import _split

    def two_product(x, y):
        p = x * y
        xh, xl = _split(x)
        yh, yl = _split(y)
        return p, ((xh * yh - p) + xh * yl + xl * yh) + xl * yl

    p_ab, e_ab = two_product(a, b)
    p_cc, e_cc = two_product(c, c)
    det = (p_ab - p_cc) + (e_ab - e_cc)
    lam_plus = 0.5 * (a + b) + np.hypot(0.5 * (a - b), c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(lam_plus > 0, det / np.where(lam_plus > 0, lam_plus, 1.0), 0.0)


def _plain_lambda_min_upper_bound(K):
    """The bound as computed before the row blocks: every pair of the full matrix at once (K
    scaled by 2^(−e), max|K|·2^(−e) in [0.5, 1), as lambda_min_upper_bound does)."""
    e = int(np.frexp(np.max(np.abs(K)))[1])
    Ks = np.ldexp(K, -e)
    sym = 0.5 * (Ks + Ks.T)
    n = K.shape[0]
    diag = np.diagonal(sym).copy()
    lam = _plain_pair_lower_eigenvalues(diag[:, None], diag[None, :], sym)
    lam = np.where(np.arange(n)[None, :] > np.arange(n)[:, None], lam, np.inf)
    i, j = divmod(int(np.argmin(lam)), n)
    return float(np.ldexp(lam[i, j], e)), i, j


@pytest.mark.parametrize("n", [2, 3, 63, 64, 65, 130, 300])
def test_fast_paths_are_bitwise_the_plain_expressions(n):
    """The in-place, blocked and transpose-once paths of conditioning, pairwise_angles and
    lambda_min_upper_bound give the plain expressions' numbers bit for bit (ties included:
    duplicate rows make equal pairs)."""
    from ntkcond import lambda_min_upper_bound
    from ntkcond.spectrum.interlacing import _pair_lower_eigenvalues

    rng = np.random.default_rng(n)
    g = rng.standard_normal((n, max(1, n // 2)))
    g[min(2, n - 1)] = g[0]  # a duplicate row: tied closest pairs
    for K in (g @ g.T, 1e-3 * (g @ g.T) + np.eye(n)):
        assert lambda_min_upper_bound(K) == _plain_lambda_min_upper_bound(K)
        d = np.diagonal(K).copy()
        c = K[: n // 2 + 1, 1:]
        work = np.empty(7 * c.size)
        fast = _pair_lower_eigenvalues(d[: n // 2 + 1, None], d[None, 1:], c, work)
        assert fast.tobytes() == _plain_pair_lower_eigenvalues(d[: n // 2 + 1, None], d[None, 1:], c).tobytes()
        Ks = np.ldexp(K, -int(np.frexp(np.max(np.abs(K)))[1]))
        lam = np.linalg.eigvalsh(0.5 * (Ks + Ks.T))
        assert conditioning(K).eigenvalues.tobytes() == np.ldexp(lam, int(np.frexp(np.max(np.abs(K)))[1])).tobytes()
        half = np.frexp(np.diagonal(K))[1] // 2
        Kh = np.ldexp(K, -(half[:, None] + half[None, :]))
        ds = np.diagonal(Kh).copy()
        plain = np.arctan2(np.sqrt(np.maximum(np.outer(ds, ds) - Kh**2, 0.0)), Kh)
        np.fill_diagonal(plain, 0.0)
        assert pairwise_angles(K).tobytes() == plain.tobytes()


def test_cores_on_a_trusted_kernel_are_the_public_functions_bit_for_bit():
    """The unchecked cores on ``scale_trusted`` (no checks: an exactly symmetric float64 kernel;
    ``symmetrise=True`` for one symmetric only up to rounding) give the public functions'
    results bit for bit: same scaled symmetric matrix, same eigensolver and pair loop."""
    from ntkcond.spectrum import (conditioning_core, lambda_min_upper_bound,
                                  lambda_min_upper_bound_core, pairwise_angles_core,
                                  resolve_tolerances, scale_trusted)

    g = np.random.default_rng(3).standard_normal((40, 55))
    K = g @ g.T  # one A @ A.T: exactly symmetric
    assert np.array_equal(K, K.T)
    K_rounded = K.copy()
    K_rounded[3, 7] = np.nextafter(K[3, 7], np.inf)  # asymmetric by one ulp
    for kernel, symmetrise in ((K, False), (K_rounded, True)):
        before = kernel.copy()
        scaled = scale_trusted(kernel, "test", symmetrise=symmetrise)
        rtol, atol = resolve_tolerances(None, None, 40, "test")
        core = conditioning_core(scaled, rtol, atol, "test")
        public = conditioning(kernel)
        assert core.eigenvalues.tobytes() == public.eigenvalues.tobytes()
        assert repr(core) == repr(public)
        assert lambda_min_upper_bound_core(scaled, "test") == lambda_min_upper_bound(kernel)
        assert pairwise_angles_core(kernel, EPS, "test").tobytes() == pairwise_angles(kernel).tobytes()
        assert np.array_equal(kernel, before)  # the cores and scale_trusted leave K unchanged


@pytest.mark.parametrize("fn", [effective_condition_number, conditioning, smallest_pairwise_angle,
                                pairwise_angles])
def test_messages_name_the_public_function_called(fn):
    """Each public function checks once and its messages name it, not the helper it calls
    (``effective_condition_number`` used to report as ``conditioning``)."""
    with pytest.raises(ValueError, match=rf"^{fn.__name__}: expected a (nonzero kernel|positive diagonal)"):
        fn(np.zeros((3, 3)))
def test_float32_symmetry_tolerance_is_the_documented_one():
    """conditioning's docstring: |K − Kᵀ| ≤ (1e4·eps₆₄ + 64·eps)·max|K| of K's dtype is rounding,
    7.6e-6·max|K| in float32. Issue 34: a float32 kernel 0.1% off symmetric was accepted (the
    old 1e4·eps₃₂ = 1.2e-3); now refused, while 32 ulps of float32 still pass."""
    from ntkcond.spectrum._kernel_checks import symmetry_tolerance

    assert symmetry_tolerance(float(np.finfo(np.float32).eps)) == pytest.approx(7.63e-6, rel=1e-2, abs=0)
    K = np.array([[2.0, 1.0], [1.0, 2.0]])
    K32 = K.astype(np.float32)
    K32[0, 1] += np.float32(32 * np.finfo(np.float32).eps * 2.0)  # 32 ulps of max|K|: rounding
    assert conditioning(K32).rank == 2
    with pytest.raises(ValueError, match="symmetric matrix"):
        conditioning(K32.astype(np.float64))  # the same matrix in float64: far beyond rounding
    K32 = K.astype(np.float32)
    K32[0, 1] *= np.float32(1.001)  # 0.1% asymmetry of one entry
    with pytest.raises(ValueError, match=r"^conditioning: expected a symmetric matrix, got "
                                         r"\|K\[0,1\] - K\[1,0\]\| = 0.001 \(> 7.6e-06\*max\|K\|"):
        conditioning(K32)
    assert conditioning((K32 + K32.T) / 2).rank == 2  # the fix the message names


def test_effective_rank_of_a_spectrum():
    import math

    from ntkcond.spectrum import effective_rank

    assert effective_rank([2.0, 2.0, 2.0, 2.0]) == pytest.approx(4.0, rel=1e-15, abs=0)
    assert effective_rank([0.0, -1e-18, 5.0]) == 1.0  # zeros and rounding below zero left out
    p = np.array([1.0, 1.0, 2.0]) / 4  # exp of the entropy, written out
    assert effective_rank([1.0, 1.0, 2.0]) == pytest.approx(math.exp(-np.sum(p * np.log(p))), rel=1e-15, abs=0)
    assert effective_rank(np.array([1.0, 1.0, 2.0]) * 1e-300) == pytest.approx(effective_rank([1, 1, 2]), rel=1e-14, abs=0)
    with pytest.raises(ValueError, match="effective_rank: expected at least one positive value"):
        effective_rank([0.0, -1.0])
