"""Condition numbers and gradient angles read off a kernel matrix.

For a symmetric positive semi-definite kernel K (n × n) with eigenvalues
λ₁ ≥ λ₂ ≥ … ≥ λₙ ≥ 0, gradient descent on the linearised model converges along eigendirection
i at rate (1 − ηλᵢ); directions with λᵢ = 0 are never moved and never matter for the training
loss on the range of K. The quantity that governs the speed is therefore the effective
condition number

    κ_eff = λ_max / min{ λᵢ : λᵢ > τ },     τ = max(atol, rtol · λ_max),          (1)

with default rtol = n·eps of float64, the convention of ``numpy.linalg.matrix_rank`` and
``scipy.linalg.pinvh``: eigenvalues below τ are indistinguishable from rounding in a float64
matrix. The plain κ = λ_max / λ_min is reported beside it (∞ when the numerical rank is below n).

A kernel computed in lower precision (float32) carries eigenvalue noise of order
n·eps₃₂·λ_max of either sign. It is accepted (negative eigenvalues down to that level are not a
PSD violation), its κ_eff then reflects that noise, and ``precision_limited`` says so: κ_eff
within 10x of 1/(n·eps) of the dtype the kernel was computed in (≈ 1.6e3 for float32, n = 512;
≈ 8.8e11 for float64) is not a measurement of the kernel but of its rounding.

Angles between model gradients are read off the kernel: for K = J Jᵀ,

    angle(i, j) = atan2( sqrt(K_ii K_jj − K_ij²), K_ij )   ∈ [0, π] radians,      (2)

the stable form of arccos(K_ij / sqrt(K_ii K_jj)). A kernel matrix cannot resolve angles much
below sqrt(eps) ≈ 1e-8 rad (1 − cos θ is lost in rounding); ``ntkcond.infinite.gradient_angles``
computes them from the data instead.
"""
from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

__all__ = [
    "Conditioning",
    "conditioning",
    "effective_condition_number",
    "pairwise_angles",
    "smallest_pairwise_angle",
]

# Entries of K − Kᵀ up to this many eps (of the kernel's dtype) times max|K| count as rounding;
# so do entries |K_ij| up to this many eps above √(K_ii K_jj) in ``pairwise_angles``.
_SYMMETRY_EPS_FACTOR = 1e4

# The PSD test never takes more than this fraction of λ_max for rounding noise (see
# ``conditioning``): it binds only where n·eps of the dtype exceeds it (float16 from n = 11,
# bfloat16 from n = 2, float32 from n = 83,887).
_NOISE_CAP = 1e-2

_EPS64 = float(np.finfo(np.float64).eps)


@dataclasses.dataclass(frozen=True, repr=False)
class Conditioning:
    """Spectrum summary of a PSD kernel (all values float64).

    Eigenvalues, ``lambda_max``, ``lambda_min_nonzero`` and ``cutoff`` are in the units of K.
    Where such a value lies outside float64's range (K near 1e308 or below 1e-300), it is
    reported as ``inf`` (above 1.8e308) or rounded to a subnormal or 0 (below 2.2e-308); the
    other attributes are computed on K scaled by a power of two (exact) and do not depend on
    the scale of K.

    Attributes:
      eigenvalues: (n,) ascending eigenvalues of (K + Kᵀ)/2.
      lambda_max: largest eigenvalue λ_max.
      lambda_min_nonzero: smallest eigenvalue above ``cutoff``.
      rank: number of eigenvalues above ``cutoff``.
      kappa_eff: λ_max / lambda_min_nonzero, eq. (1).
      kappa: plain λ_max / λ_min; ``inf`` when ``rank < n``.
      cutoff: τ = max(atol, rtol·λ_max).
      precision_limited: True when kappa_eff ≥ 0.1 / (n·eps) of the dtype the kernel was
        computed in: the value is then at the resolution limit of that dtype and says little
        beyond "at least this large". A float32 kernel of n = 512 is limited from κ ≈ 1.6e3.
      dtype: name of the dtype the kernel was computed in.

    ``repr`` is one line: κ_eff, λ_max, λ_min⁺, rank/n, the precision flag and dtype first, the
    eigenvalues summarised by their number and range.
    """

    eigenvalues: np.ndarray
    lambda_max: float
    lambda_min_nonzero: float
    rank: int
    kappa_eff: float
    kappa: float
    cutoff: float
    precision_limited: bool
    dtype: str

    def __repr__(self) -> str:
        w = np.asarray(self.eigenvalues)
        spread = f"[{w[0]:.4g}, {w[-1]:.4g}]" if w.size else "[]"
        return (
            f"Conditioning(kappa_eff={self.kappa_eff:.6g}, lambda_max={self.lambda_max:.6g}, "
            f"lambda_min_nonzero={self.lambda_min_nonzero:.6g}, rank={self.rank}/{w.size}, "
            f"precision_limited={self.precision_limited}, dtype={self.dtype!r}, "
            f"kappa={self.kappa:.6g}, cutoff={self.cutoff:.3g}, "
            f"eigenvalues=<{w.size} in {spread}>)"
        )


def float_eps(dtype) -> float | None:
    """Machine epsilon of a floating dtype: numpy's (float16/32/64, longdouble) or ml_dtypes'
    (bfloat16, float8_*, which jax uses); None for any other dtype."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.floating):
        return float(np.finfo(dtype).eps)
    if dtype.kind != "V":  # ml_dtypes' floating types have kind 'V'
        return None
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes comes with jax
        return None
    try:
        return float(ml_dtypes.finfo(dtype).eps)
    except (ValueError, TypeError):
        return None


def _as_square_kernel(K, where: str) -> tuple[np.ndarray, np.dtype]:
    """Validate K and return it as float64 together with the dtype it arrived in."""
    if hasattr(K, "__array__") or isinstance(K, (list, tuple)):
        arr = np.asarray(K)
    else:
        raise TypeError(f"{where}: expected a 2-D array, got {type(K).__name__}")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or float_eps(arr.dtype) is not None
    ):
        raise TypeError(
            f"{where}: expected a real matrix (integer or floating dtype: float16, bfloat16, "
            f"float32, float64), got dtype {arr.dtype}"
        )
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{where}: expected a square (n, n) matrix, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{where}: expected a non-empty matrix, got shape {arr.shape}")
    dtype = np.dtype(np.float64) if np.issubdtype(arr.dtype, np.integer) else arr.dtype
    K64 = arr.astype(np.float64)
    if not np.all(np.isfinite(K64)):
        bad = np.argwhere(~np.isfinite(K64))[0]
        raise ValueError(
            f"{where}: expected finite entries, got {K64[tuple(bad)]} (NaN or Inf) at {tuple(bad)}"
        )
    return K64, dtype


def _as_float_dtype(dtype, where: str) -> np.dtype:
    """The ``dtype`` argument of ``conditioning`` as a floating numpy dtype."""
    if isinstance(dtype, str):
        try:  # registers "bfloat16" and friends with numpy
            import ml_dtypes  # noqa: F401
        except ImportError:  # pragma: no cover
            pass
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):  # numpy: "data type 'foo' not understood", bad format strings
        dt = None
    if dt is None or float_eps(dt) is None:
        raise TypeError(
            f"{where}: expected dtype as a floating-point dtype (float16, bfloat16, float32, "
            f"float64) or None, got {dtype!r}"
        )
    return dt


def resolve_tolerances(rtol, atol, n: int, where: str) -> tuple[float, float]:
    """(rtol, atol) as floats, defaults n·eps₆₄ and 0; TypeError for non-numbers (strings,
    bools), ValueError for negative or non-finite values. Shared with ``ntkcond.scale``."""
    out = []
    for name, value, default in (("rtol", rtol, n * _EPS64), ("atol", atol, 0.0)):
        if value is None:
            out.append(default)
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: expected {name} as a real number >= 0 or None, got {value!r}")
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{where}: expected {name} >= 0 and finite, got {value!r}")
        out.append(float(value))
    return out[0], out[1]


def _scale_exponent(K64: np.ndarray, where: str) -> int:
    """e with max|K|·2^(−e) in [0.5, 1); ValueError for the zero matrix."""
    peak = float(np.max(np.abs(K64)))
    if peak == 0.0:
        n = K64.shape[0]
        raise ValueError(f"{where}: expected a nonzero kernel, got the {n}x{n} zero matrix")
    return int(np.frexp(peak)[1])


def _check_symmetric(Ks: np.ndarray, e: int, eps: float, where: str) -> None:
    """Ks = K·2^(−e), max|Ks| in [0.5, 1): |K − Kᵀ| ≤ 1e4·eps·max|K| or ValueError."""
    diff = np.abs(Ks - Ks.T)
    asym = float(np.max(diff))
    tol = _SYMMETRY_EPS_FACTOR * eps * float(np.max(np.abs(Ks)))
    if asym > tol:
        i, j = np.unravel_index(int(np.argmax(diff)), Ks.shape)
        with np.errstate(over="ignore", under="ignore"):
            got, limit = math.ldexp(asym, e), math.ldexp(tol, e)
        raise ValueError(
            f"{where}: expected a symmetric matrix, got |K[{i},{j}] - K[{j},{i}]| = {got:.3g} "
            f"(> {_SYMMETRY_EPS_FACTOR:g}*eps*max|K| = {limit:.3g})"
        )


def _ldexp(value, e: int):
    """value·2^e in float64: ``inf`` above float64's range, subnormal or 0 below it."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(value, e)


def conditioning(K, *, rtol: float | None = None, atol: float | None = None, dtype=None) -> Conditioning:
    """Eigenvalues, rank and (effective) condition numbers of a PSD kernel, eq. (1).

    Scale: K is first multiplied by the power of two 2^(−e) that brings max|K| into [0.5, 1)
    (exact, barring entries 2^-1022 below max|K|, which cannot move an eigenvalue by more than
    1e-308·λ_max), so κ, κ_eff, rank and the checks do not depend on the scale of K:
    ``diag([1e308, 1e308])`` and ``2^-1070·K`` (subnormal entries) are handled exactly. The
    eigenvalues are reported in the units of K (times 2^e), as ``inf`` where they exceed
    1.8e308 and rounded where they fall below 2.2e-308 (``Conditioning``).

    Args:
      K: (n, n) symmetric PSD matrix (numpy, jax or nested lists; integer or floating dtype,
        bfloat16 included). It is symmetrised as (K + Kᵀ)/2 and diagonalised with a float64
        ``eigvalsh``.
      rtol: relative cutoff (a real number ≥ 0); default n·eps of float64 (numpy
        ``matrix_rank``'s convention).
      atol: absolute cutoff (a real number ≥ 0, in the units of K); default 0. The cutoff is
        τ = max(atol, rtol·λ_max).
      dtype: the floating dtype K was *computed* in, when it differs from K's dtype (e.g. a
        float32 kernel cast to float64 afterwards). Sets the rounding noise tolerated below zero
        and the ``precision_limited`` threshold.

    PSD rule: with eps that of the dtype K was computed in, an eigenvalue counts as rounding
    noise down to

        −max(τ, eps·‖K‖_F, min(n·eps, 0.01)·λ_max):

    n·eps·λ_max is the accumulated rounding of a computed n × n kernel (Weyl), eps·‖K‖_F bounds
    twice the effect of storing K in the dtype (|δK_ij| ≤ eps/2·|K_ij|, so ‖δK‖₂ ≤ eps/2·‖K‖_F),
    and the cap of 1% of λ_max keeps the test meaningful where n·eps approaches 1 (float16 and
    bfloat16): an eigenvalue of −0.5·λ_max is never rounding. Below −0.01·λ_max, a kernel is
    accepted only if storing it in its dtype can explain it.

    Returns:
      ``Conditioning``.

    Raises:
      TypeError: K is not a real numeric array; rtol or atol is not a real number; dtype is not
        a floating dtype.
      ValueError: K is empty, not square, not finite, asymmetric beyond rounding
        (|K − Kᵀ| > 1e4·eps·max|K|), zero, or has an eigenvalue below the PSD rule's bound;
        rtol or atol is negative or not finite.
    """
    where = "conditioning"
    K64, kdtype = _as_square_kernel(K, where)
    if dtype is not None:
        kdtype = _as_float_dtype(dtype, where)
    n = K64.shape[0]
    rtol, atol = resolve_tolerances(rtol, atol, n, where)
    e = _scale_exponent(K64, where)
    with np.errstate(under="ignore"):
        Ks = np.ldexp(K64, -e)
    _check_symmetric(Ks, e, float_eps(kdtype), where)
    eigenvalues = np.linalg.eigvalsh(0.5 * (Ks + Ks.T))
    return conditioning_from_eigenvalues(eigenvalues, kdtype, rtol, atol, where, exponent=e)


def conditioning_from_eigenvalues(eigenvalues: np.ndarray, kdtype, rtol: float, atol: float, where: str,
                                  exponent: int = 0) -> Conditioning:
    """``Conditioning`` from the ascending float64 eigenvalues of a kernel computed in ``kdtype``.

    ``eigenvalues`` are in units of 2^exponent of K's units (``conditioning`` scales K by a
    power of two first); ``atol`` is in K's units. The PSD rule is that of ``conditioning``.
    """
    n = eigenvalues.shape[0]
    eps = float_eps(kdtype)
    lambda_max = float(eigenvalues[-1])
    atol_scaled = float(_ldexp(atol, -exponent))
    cutoff = max(atol_scaled, rtol * max(lambda_max, 0.0))
    frobenius = float(np.sqrt(np.sum(eigenvalues * eigenvalues)))
    noise = max(eps * frobenius, min(n * eps, _NOISE_CAP) * max(lambda_max, 0.0))
    floor = max(cutoff, noise)
    if eigenvalues[0] < -floor:
        raise ValueError(
            f"{where}: expected a positive semi-definite matrix, got eigenvalue "
            f"{_ldexp(eigenvalues[0], exponent):.6g} < {-_ldexp(floor, exponent):.3g} "
            f"(lambda_max = {_ldexp(lambda_max, exponent):.6g}; rounding noise of {kdtype} "
            f"tolerated down to -max(cutoff, eps*||K||_F, min(n*eps, {_NOISE_CAP:g})*lambda_max))"
        )
    above = eigenvalues > cutoff
    rank = int(np.count_nonzero(above))
    if rank == 0:
        raise ValueError(
            f"{where}: expected at least one eigenvalue above the cutoff "
            f"{_ldexp(cutoff, exponent):.3g}, got lambda_max = {_ldexp(lambda_max, exponent):.3g}"
        )
    lambda_min_nonzero = float(eigenvalues[above][0])
    kappa_eff = lambda_max / lambda_min_nonzero
    kappa = lambda_max / float(eigenvalues[0]) if rank == n else float("inf")
    precision_limited = bool(kappa_eff >= 0.1 / (n * eps))
    return Conditioning(
        eigenvalues=_ldexp(eigenvalues, exponent),
        lambda_max=float(_ldexp(lambda_max, exponent)),
        lambda_min_nonzero=float(_ldexp(lambda_min_nonzero, exponent)),
        rank=rank,
        kappa_eff=float(kappa_eff),
        kappa=float(kappa),
        cutoff=float(_ldexp(cutoff, exponent)),
        precision_limited=precision_limited,
        dtype=str(kdtype),
    )


def effective_condition_number(K, *, rtol: float | None = None, atol: float | None = None) -> float:
    """κ_eff = λ_max / (smallest eigenvalue above τ = max(atol, rtol·λ_max)), eq. (1).

    Args:
      K: (n, n) symmetric PSD kernel.
      rtol: default n·eps of float64.
      atol: default 0.

    Returns:
      κ_eff as a Python float; 1.0 for a 1 × 1 kernel.

    See ``conditioning`` for the checks and the full spectrum summary.
    """
    return conditioning(K, rtol=rtol, atol=atol).kappa_eff


def _kernel_angles(K64: np.ndarray, kdtype, where: str) -> np.ndarray:
    """Eq. (2) for a validated float64 K: scale-invariant (rows and columns scaled by powers of
    two so that every K_ii is in [0.5, 2), exact), symmetric and Cauchy–Schwarz checked."""
    eps = float_eps(kdtype)
    diag = np.diagonal(K64).copy()
    if np.any(diag <= 0):
        i = int(np.argmax(diag <= 0))
        raise ValueError(
            f"{where}: expected a positive diagonal (every gradient nonzero), got K[{i},{i}] = {diag[i]}"
        )
    e = _scale_exponent(K64, where)
    with np.errstate(under="ignore"):
        _check_symmetric(np.ldexp(K64, -e), e, eps, where)
    half = np.frexp(diag)[1] // 2  # K_ii·4^(−half_i) in [0.5, 2)
    with np.errstate(over="ignore", under="ignore"):  # under: |cos| < 1e-300, angle π/2 anyway
        Ks = np.ldexp(K64, -(half[:, None] + half[None, :]))
    ds = np.diagonal(Ks).copy()
    bound = np.sqrt(np.outer(ds, ds))
    excess = np.abs(Ks) - bound * (1.0 + _SYMMETRY_EPS_FACTOR * eps)
    if np.any(excess > 0):
        i, j = np.unravel_index(int(np.argmax(excess)), Ks.shape)
        raise ValueError(
            f"{where}: expected |K[i,j]| <= sqrt(K[i,i]*K[j,j]) (a Gram matrix; up to "
            f"{_SYMMETRY_EPS_FACTOR:g}*eps for rounding), got |K[{i},{j}]| = {abs(K64[i, j]):.6g} > "
            f"sqrt(K[{i},{i}]*K[{j},{j}]) = {math.sqrt(diag[i]) * math.sqrt(diag[j]):.6g}"
        )
    sin_part = np.sqrt(np.maximum(np.outer(ds, ds) - Ks**2, 0.0))
    angles = np.arctan2(sin_part, Ks)
    np.fill_diagonal(angles, 0.0)
    return angles


def pairwise_angles(K) -> np.ndarray:
    """Angles between model gradients read off a kernel, eq. (2), in radians.

    angle(i, j) = atan2(sqrt(K_ii K_jj − K_ij²), K_ij), with the diagonal exactly 0.
    For K = X Xᵀ these are the angles between the inputs. Scale-invariant: row i and column i
    are scaled by the power of two that brings K_ii into [0.5, 2) (exact), so c·K gives the
    angles of K for any c > 0 that keeps the entries finite and nonzero (1e-300 to 1e300).

    Args:
      K: (n, n) symmetric kernel with positive diagonal, |K_ij| ≤ √(K_ii K_jj) (integer or
        floating dtype, bfloat16 included).

    Returns:
      (n, n) float64 array of angles in [0, π], exactly symmetric.

    Raises:
      TypeError: K is not a real numeric array.
      ValueError: K is not square, empty or finite, is asymmetric beyond rounding
        (|K − Kᵀ| > 1e4·eps·max|K|, as ``conditioning``), has a diagonal entry ≤ 0, or an entry
        with |K_ij| > √(K_ii K_jj)·(1 + 1e4·eps) (not a Gram matrix: no angle exists).
    """
    K64, kdtype = _as_square_kernel(K, "pairwise_angles")
    return _kernel_angles(K64, kdtype, "pairwise_angles")


def smallest_pairwise_angle(K) -> tuple[float, int, int]:
    """The smallest off-diagonal angle of eq. (2) and its pair.

    Args:
      K: (n, n) symmetric kernel, n ≥ 2, positive diagonal (checked as ``pairwise_angles``).

    Returns:
      (angle in radians, i, j) with i < j. Ties go to the first pair in row-major order.
    """
    K64, kdtype = _as_square_kernel(K, "smallest_pairwise_angle")
    n = K64.shape[0]
    if n < 2:
        raise ValueError(f"smallest_pairwise_angle: expected n >= 2 rows to form a pair, got n = {n}")
    angles = _kernel_angles(K64, kdtype, "smallest_pairwise_angle")
    return argmin_upper(angles)


def argmin_upper(angles: np.ndarray) -> tuple[float, int, int]:
    """Smallest entry strictly above the diagonal of a square matrix: (value, i, j), i < j."""
    n = angles.shape[0]
    masked = np.where(np.tri(n, dtype=bool), np.inf, angles)  # hide the diagonal and below
    i, j = divmod(int(np.argmin(masked)), n)
    return float(angles[i, j]), i, j


# ------------------------------------------------------------------------------------------
# An upper bound on λ_min from the closest pair (Cauchy interlacing on 2 × 2 submatrices)
# ------------------------------------------------------------------------------------------

__all__ += ["lambda_min_upper_bound"]

_VELTKAMP = 134217729.0  # 2^27 + 1: splits a float64 into two 26-bit halves


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp split: x = hi + lo exactly, each half with at most 26 significant bits."""
    t = _VELTKAMP * x
    hi = t - (t - x)
    return hi, x - hi


def _two_product(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's error-free product: x·y = p + e exactly (barring over/underflow)."""
    p = x * y
    xh, xl = _split(x)
    yh, yl = _split(y)
    return p, ((xh * yh - p) + xh * yl + xl * yh) + xl * yl


def _pair_lower_eigenvalues(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """λ₋ of [[a, c], [c, b]] as det/λ₊, the determinant ab − c² formed error-free.

    (a + b)/2 − √(((a − b)/2)² + c²) cancels catastrophically for a close pair (λ₋ ≪ λ₊);
    λ₋ = (ab − c²)/λ₊ with λ₊ = (a + b)/2 + √(((a − b)/2)² + c²) does not: ab and c² come
    from Dekker products, whose leading parts cancel exactly (Sterbenz) when ab ≈ c², so the
    determinant of the stored entries has a relative error of a few eps. λ₊ = 0 only for the
    zero submatrix, whose λ₋ is 0.
    """
    p_ab, e_ab = _two_product(a, b)
    p_cc, e_cc = _two_product(c, c)
    det = (p_ab - p_cc) + (e_ab - e_cc)
    lam_plus = 0.5 * (a + b) + np.hypot(0.5 * (a - b), c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(lam_plus > 0, det / np.where(lam_plus > 0, lam_plus, 1.0), 0.0)


def lambda_min_upper_bound(K) -> tuple[float, int, int]:
    """An upper bound on λ_min(K) from the closest pair: Cauchy interlacing on 2 × 2 blocks.

    The eigenvalues of a principal submatrix interlace those of the symmetric K, so
    λ_min(K) ≤ λ_min([[a, c], [c, b]]) for every pair i ≠ j, a = K_ii, b = K_jj, c = K_ij:

        λ_min(K) ≤ λ₋(i, j) = (a + b)/2 − √(((a − b)/2)² + c²) = (ab − c²)/λ₊(i, j),     (3)

    λ₊ = (a + b)/2 + √(((a − b)/2)² + c²); also λ_min ≤ min_i K_ii, which (3) already implies
    for n ≥ 2 (λ₋(i, j) ≤ min(a, b)). The bound returned is min over pairs of λ₋, computed in
    the cancellation-free form det/λ₊ with an error-free determinant (relative error a few
    eps of the stored entries), so it is rigorous up to that rounding; O(n²) time, no
    eigendecomposition, memory O(n) per row block. K is first scaled by a power of two to
    max|K| in [0.5, 1) (exact), so the error-free products hold at any scale of K, from
    subnormal to 1e308 (entries below 2⁻⁹⁶⁰·max|K| lose digits to underflow there, far below
    the bound's rounding).

    For a kernel of gradients K = JJᵀ normalised to unit diagonal (K_ij = cos φ_ij), (3) is
    λ₋(i, j) = 1 − |cos φ_ij|, so λ_min ≤ 1 − max_{i≠j} |cos φ_ij| ≤ 1 − cos φ_min
    = 2 sin²(φ_min/2) ≈ φ_min²/2, and κ = λ_max/λ_min ≥ λ_max/(1 − cos φ_min): Liu & Hui,
    arXiv 2305.08813, Prop. 4.1 (λ_min = O(φ²), κ = Ω(1/φ²)). The bound is tight when one
    close pair dominates (a block-diagonal K with one near-parallel pair attains it).

    Validation as in ``conditioning``: real, square, finite, nonzero, symmetric up to
    1e4·eps·max|K| (the symmetric part (K + Kᵀ)/2 is used). Positive semi-definiteness is only
    checked where it is cheap: every λ₋ (a 2 × 2 principal minor's eigenvalue, ≥ λ_min(K)) must
    be ≥ −n·eps·‖K‖_∞, a tolerance no smaller than ``conditioning``'s, so every kernel
    ``conditioning`` accepts is accepted (a non-PSD K whose 2 × 2 blocks pass still gets a valid
    upper bound: interlacing holds for any symmetric matrix).

    Args:
      K: (n, n) symmetric PSD kernel, n ≥ 1 (numpy, jax or nested lists), any units: the bound
        has K's units.

    Returns:
      (bound, i, j): float bound ≥ λ_min(K) and the pair i < j attaining it (ties go to the
      first pair in row-major order, as in ``smallest_pairwise_angle``); (K_00, 0, 0) for n = 1,
      where it is λ_min itself.

    Raises:
      TypeError: K is not a real numeric array.
      ValueError: K is empty, not square, not finite, zero, asymmetric beyond rounding, or has a
        2 × 2 principal submatrix with λ₋ < −n·eps·‖K‖_∞ (not PSD).
    """
    where = "lambda_min_upper_bound"
    K64, kdtype = _as_square_kernel(K, where)
    n = K64.shape[0]
    eps = float_eps(kdtype)
    # K·2^(−e) with max|K| in [0.5, 1): exact (a power of two), so the products below neither
    # overflow (K near 1e308) nor lose the error-free determinant to underflow (K near 1e-300)
    e = _scale_exponent(K64, where)
    Ks = _ldexp(K64, -e)
    _check_symmetric(Ks, e, eps, where)
    sym = 0.5 * (Ks + Ks.T)
    diag = np.diagonal(sym).copy()
    floor = n * eps * float(np.max(np.sum(np.abs(sym), axis=1)))  # ‖K‖_∞ ≥ λ_max
    if n == 1:
        best, bi, bj = float(diag[0]), 0, 0
    else:
        best, bi, bj = np.inf, 0, 1
        block = max(1, (1 << 20) // n)  # rows per block: ~1M pairs at a time
        cols = np.arange(n)
        for start in range(0, n - 1, block):
            rows = np.arange(start, min(start + block, n - 1))
            lam = _pair_lower_eigenvalues(diag[rows, None], diag[None, :], sym[rows])
            lam = np.where(cols[None, :] > rows[:, None], lam, np.inf)  # pairs i < j only
            r, j = divmod(int(np.argmin(lam)), n)
            if lam[r, j] < best:
                best, bi, bj = float(lam[r, j]), int(rows[r]), j
    if best < -floor:
        raise ValueError(
            f"{where}: expected a positive semi-definite matrix, got the 2x2 principal submatrix "
            f"of rows ({bi}, {bj}) with eigenvalue {float(_ldexp(best, e)):.6g} < "
            f"{float(_ldexp(-floor, e)):.3g}"
        )
    return float(_ldexp(best, e)), bi, bj
