"""Shared checks and constants of ``ntkcond.spectrum``: kernel validation, the dtype's eps,
the tolerances of eq. (1) and exact power-of-two scaling (public names of a private module).

Validated once: the public functions of ``ntkcond.spectrum`` check a kernel (``as_square_kernel``:
one float64 copy and one finiteness pass; ``scale_checked``: one transpose for the symmetry test
and the symmetric part) and hand the result, a ``ScaledKernel``, to unchecked cores
(``conditioning_core``, ``lambda_min_upper_bound_core``; ``pairwise_angles_core`` reads the
float64 K itself). A caller that built the kernel itself, float64, finite (checked where it
was built) and exactly symmetric by construction, skips the checks with ``scale_trusted``: one
scaled copy, no finiteness pass, no transpose; one ``ScaledKernel`` serves every core.
"""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

__all__ = [
    "EPS64",
    "NOISE_CAP",
    "SYMMETRY_EPS_FACTOR",
    "ASYMMETRY_ULPS",
    "symmetry_tolerance",
    "ScaledKernel",
    "as_float_dtype",
    "as_square_kernel",
    "check_symmetric",
    "checked_kernel",
    "float_eps",
    "ldexp",
    "resolve_tolerances",
    "scale_checked",
    "scale_exponent",
    "scale_trusted",
]

# Entries |K_ij| up to this many eps (of the kernel's dtype) above √(K_ii K_jj) count as
# rounding in ``pairwise_angles``.
SYMMETRY_EPS_FACTOR = 1e4

# |K − Kᵀ| ≤ (1e4·eps₆₄ + ASYMMETRY_ULPS·eps)·max|K| counts as rounding (``symmetry_tolerance``):
# the float64 rounding of a Gram product of ~10⁸ terms computed in two orders, plus 64 units
# of the kernel's own dtype for storing it (2.2e-12·max|K| in float64, 7.6e-6 in float32, so a
# float32 kernel 0.1% off symmetric is refused; kernels computed symmetrically have none).
ASYMMETRY_ULPS = 64

# The PSD test never takes more than this fraction of λ_max for rounding noise (see
# ``conditioning``): it binds only where n·eps of the dtype exceeds it (float16 from n = 11,
# bfloat16 from n = 2, float32 from n = 83,887).
NOISE_CAP = 1e-2

EPS64 = float(np.finfo(np.float64).eps)


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


def as_square_kernel(K, where: str) -> tuple[np.ndarray, np.dtype]:
    """Validate K and return it as float64 together with the dtype it arrived in."""
    if hasattr(K, "__array__") or isinstance(K, (list, tuple)):
        try:
            arr = np.asarray(K)
        except (ValueError, TypeError):  # e.g. a ragged nested list
            raise ValueError(f"{where}: expected a 2-D array, got a nested sequence that is not "
                             "rectangular (rows of different lengths)") from None
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
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(K64))[0])
        raise ValueError(
            f"{where}: expected finite entries, got {K64[bad]} (NaN or Inf) at {bad}"
        )
    return K64, dtype


def as_float_dtype(dtype, where: str) -> np.dtype:
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
    for name, value, default in (("rtol", rtol, n * EPS64), ("atol", atol, 0.0)):
        if value is None:
            out.append(default)
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: expected {name} as a real number >= 0 or None, got {value!r}")
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{where}: expected {name} >= 0 and finite, got {value!r}")
        out.append(float(value))
    return out[0], out[1]


def max_abs(a: np.ndarray) -> float:
    """max|a| of a finite, non-empty float array as max(max a, −min a): the same value as
    ``np.max(np.abs(a))`` without an n × n temporary."""
    return float(max(a.max(), -a.min()))


def symmetric_part(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """0.5·(a + aᵀ), bit for bit, written over ``at`` (aᵀ as its own C-contiguous array, from
    ``check_symmetric``): the sum, then halved in place. Reading a.T down its columns costs
    ~10x a contiguous pass (0.8 ms at n = 512), so the callers transpose once for the check
    and the symmetric part."""
    out = np.add(a, at, out=at)
    out *= 0.5
    return out


def scale_exponent(K64: np.ndarray, where: str) -> int:
    """e with max|K|·2^(−e) in [0.5, 1); ValueError for the zero matrix."""
    peak = max_abs(K64)
    if peak == 0.0:
        n = K64.shape[0]
        raise ValueError(f"{where}: expected a nonzero kernel, got the {n}x{n} zero matrix")
    return int(np.frexp(peak)[1])


def symmetry_tolerance(eps: float) -> float:
    """(1e4·eps₆₄ + ``ASYMMETRY_ULPS``·eps): the relative asymmetry |K − Kᵀ|/max|K| that a
    kernel of a dtype with this eps may have from rounding (module constants)."""
    return SYMMETRY_EPS_FACTOR * float(np.finfo(np.float64).eps) + ASYMMETRY_ULPS * eps


def check_symmetric(Ks: np.ndarray, e: int, eps: float, where: str) -> np.ndarray:
    """Ks = K·2^(−e), max|Ks| in [0.5, 1): |K − Kᵀ| ≤ ``symmetry_tolerance(eps)``·max|K| or
    ValueError.

    Returns Ksᵀ as a new C-contiguous array (for ``symmetric_part``)."""
    Kt = np.ascontiguousarray(Ks.T)
    diff = np.subtract(Ks, Kt)
    np.abs(diff, out=diff)
    asym = float(np.max(diff))
    rel = symmetry_tolerance(eps)
    tol = rel * max_abs(Ks)
    if asym > tol:
        i, j = np.unravel_index(int(np.argmax(diff)), Ks.shape)
        with np.errstate(over="ignore", under="ignore"):
            got, limit = math.ldexp(asym, e), math.ldexp(tol, e)
        raise ValueError(
            f"{where}: expected a symmetric matrix, got |K[{i},{j}] - K[{j},{i}]| = {got:.3g} "
            f"(> {rel:.2g}*max|K| = {limit:.3g}, the rounding allowed for its dtype: "
            f"1e4*eps64 + {ASYMMETRY_ULPS}*eps); symmetrise it, (K + K.T)/2, if that is meant"
        )
    return Kt


def ldexp(value, e: int):
    """value·2^e in float64: ``inf`` above float64's range, subnormal or 0 below it."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(value, e)


class ScaledKernel(NamedTuple):
    """A kernel as the unchecked cores of ``ntkcond.spectrum`` take it.

    Attributes:
      matrix: (n, n) float64, exactly symmetric: (K + Kᵀ)/2 · 2^(−exponent), with
        max|matrix| in [0.5, 1) (a power of two: exact, barring entries 2^-1022 below max|K|).
      exponent: the power of two e; K's units are matrix · 2^e.
      dtype: the floating dtype K was computed in (its eps sets the PSD rule's rounding noise
        and ``Conditioning.precision_limited``).
    """

    matrix: np.ndarray
    exponent: int
    dtype: np.dtype


def scale_checked(K64: np.ndarray, kdtype, where: str) -> ScaledKernel:
    """``ScaledKernel`` of a float64 K from ``as_square_kernel`` (its own copy, overwritten):
    the zero matrix refused, K scaled in place by 2^(−e), |K − Kᵀ| ≤ ``symmetry_tolerance``·max|K| checked
    (``check_symmetric``: the one transpose) and (K + Kᵀ)/2 written over that transpose."""
    e = scale_exponent(K64, where)
    with np.errstate(under="ignore"):
        Ks = np.ldexp(K64, -e, out=K64)
    Kt = check_symmetric(Ks, e, float_eps(kdtype), where)
    return ScaledKernel(symmetric_part(Ks, Kt), e, np.dtype(kdtype))


def checked_kernel(K, where: str, dtype=None) -> ScaledKernel:
    """The checks of ``conditioning`` on K, once, as a ``ScaledKernel`` (``as_square_kernel``,
    ``dtype`` as K's computed-in dtype, ``scale_checked``): one float64 copy, one finiteness
    pass, one transpose."""
    K64, kdtype = as_square_kernel(K, where)
    if dtype is not None:
        kdtype = as_float_dtype(dtype, where)
    return scale_checked(K64, kdtype, where)


def scale_trusted(K64: np.ndarray, where: str, *, symmetrise: bool = False) -> ScaledKernel:
    """``ScaledKernel`` of a float64 kernel the caller built, finite (checked where it was
    built) and symmetric by construction; neither is checked again.

    symmetrise False: K is exactly symmetric (K = Kᵀ bit for bit, so (K + Kᵀ)/2 = K): one
    scaled copy, no transpose. True: symmetric up to rounding only (e.g. a jax Gram J Jᵀ):
    (K + Kᵀ)/2 formed without the tolerance test, one scaled copy and one transpose. K is left
    unchanged; only the zero matrix is refused (ValueError naming ``where``)."""
    e = scale_exponent(K64, where)
    with np.errstate(under="ignore"):
        Ks = np.ldexp(K64, -e)
    if symmetrise:
        Ks = symmetric_part(Ks, np.ascontiguousarray(Ks.T))
    return ScaledKernel(Ks, e, np.dtype(np.float64))
