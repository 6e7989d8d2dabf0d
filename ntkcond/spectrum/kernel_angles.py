"""Angles between model gradients read off a kernel, eq. (2) of ``ntkcond.spectrum``:
atan2(√(K_ii K_jj − K_ij²), K_ij), scale-invariant and Gram-checked."""
from __future__ import annotations

import math

import numpy as np

from ._kernel_checks import SYMMETRY_EPS_FACTOR, as_square_kernel, check_symmetric, float_eps, scale_exponent

__all__ = ["argmin_upper", "pairwise_angles", "pairwise_angles_core", "smallest_pairwise_angle"]


def _checked_angles(K, where: str, min_rows: int = 1) -> np.ndarray:
    """``pairwise_angles``' checks, once (real, square with n ≥ ``min_rows``, finite, nonzero,
    symmetric up to (1e4·eps₆₄ + 64·eps)·max|K|), then ``pairwise_angles_core``; messages name
    ``where``."""
    K64, kdtype = as_square_kernel(K, where)
    n = K64.shape[0]
    if n < min_rows:
        raise ValueError(f"{where}: expected n >= {min_rows} rows to form a pair, got n = {n}")
    eps = float_eps(kdtype)
    diag = np.diagonal(K64)
    if np.any(diag <= 0):  # before the symmetry test, as the core would
        _nonpositive_diagonal(diag, where)
    e = scale_exponent(K64, where)
    with np.errstate(under="ignore"):
        Ks = np.ldexp(K64, -e)
    check_symmetric(Ks, e, eps, where)
    return pairwise_angles_core(K64, eps, where, out=Ks)  # Ks: reused as scratch


def _nonpositive_diagonal(diag: np.ndarray, where: str):
    i = int(np.argmax(diag <= 0))
    raise ValueError(
        f"{where}: expected a positive diagonal (every gradient nonzero), got K[{i},{i}] = {diag[i]}"
    )


def pairwise_angles_core(K64: np.ndarray, eps: float, where: str, *, out=None) -> np.ndarray:
    """Eq. (2) for a float64 K that is finite, square and symmetric (checked by the caller, or
    so by construction; read, not changed): scale-invariant (rows and columns scaled by powers
    of two so that every K_ii is in [0.5, 2), exact). The domain of eq. (2) is checked here, as
    part of the formula: a positive diagonal and |K_ij| ≤ √(K_ii K_jj)·(1 + 1e4·eps), eps of
    the dtype K was computed in; ValueError naming ``where``, the public function called.
    ``out``: an (n, n) float64 scratch buffer (not K64) to use, else one is allocated."""
    diag = np.diagonal(K64).copy()
    if np.any(diag <= 0):
        _nonpositive_diagonal(diag, where)
    half = np.frexp(diag)[1] // 2  # K_ii·4^(−half_i) in [0.5, 2)
    # the elementwise passes below write into the buffers they read where they can (the same
    # operations on the same values as the plain expressions, fewer n × n temporaries)
    shift = np.add.outer(half, half)
    np.negative(shift, out=shift)
    with np.errstate(over="ignore", under="ignore"):  # under: |cos| < 1e-300, angle π/2 anyway
        Ks = np.ldexp(K64, shift, out=out)
    del shift
    ds = np.diagonal(Ks).copy()
    outer = np.multiply.outer(ds, ds)
    bound = np.sqrt(outer)
    bound *= 1.0 + SYMMETRY_EPS_FACTOR * eps
    excess = np.abs(Ks)
    excess -= bound  # |K_ij| − √(K_ii K_jj)·(1 + 1e4·eps)
    if np.any(excess > 0):
        i, j = np.unravel_index(int(np.argmax(excess)), Ks.shape)
        raise ValueError(
            f"{where}: expected |K[i,j]| <= sqrt(K[i,i]*K[j,j]) (a Gram matrix; up to "
            f"{SYMMETRY_EPS_FACTOR:g}*eps for rounding), got |K[{i},{j}]| = {abs(K64[i, j]):.6g} > "
            f"sqrt(K[{i},{i}]*K[{j},{j}]) = {math.sqrt(diag[i]) * math.sqrt(diag[j]):.6g}"
        )
    sin_part = np.multiply(Ks, Ks, out=bound)  # √max(K_ii K_jj − K_ij², 0)
    np.subtract(outer, sin_part, out=sin_part)
    np.maximum(sin_part, 0.0, out=sin_part)
    np.sqrt(sin_part, out=sin_part)
    angles = np.arctan2(sin_part, Ks, out=excess)
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
        (|K − Kᵀ| > (1e4·eps₆₄ + 64·eps)·max|K|, as ``conditioning``), has a diagonal entry ≤ 0,
        or an entry with |K_ij| > √(K_ii K_jj)·(1 + 1e4·eps) (not a Gram matrix: no angle
        exists).

    Examples:
      >>> import numpy as np, ntkcond
      >>> np.degrees(ntkcond.pairwise_angles(np.array([[2.0, 1.0], [1.0, 2.0]]))).round(6)
      array([[ 0., 60.],
             [60.,  0.]])
    """
    return _checked_angles(K, "pairwise_angles")


def smallest_pairwise_angle(K) -> tuple[float, int, int]:
    """The smallest off-diagonal angle of eq. (2) and its pair.

    Args:
      K: (n, n) symmetric kernel, n ≥ 2, positive diagonal (checked as ``pairwise_angles``).

    Returns:
      (angle in radians, i, j) with i < j. Ties go to the first pair in row-major order.

    Examples:
      >>> import numpy as np, ntkcond
      >>> K = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
      >>> angle, i, j = ntkcond.smallest_pairwise_angle(K)
      >>> round(float(np.degrees(angle)), 6), i, j
      (60.0, 0, 1)
    """
    return argmin_upper(_checked_angles(K, "smallest_pairwise_angle", min_rows=2))


def argmin_upper(angles: np.ndarray) -> tuple[float, int, int]:
    """Smallest entry strictly above the diagonal of a square matrix: (value, i, j), i < j."""
    n = angles.shape[0]
    masked = np.where(np.tri(n, dtype=bool), np.inf, angles)  # hide the diagonal and below
    i, j = divmod(int(np.argmin(masked)), n)
    return float(angles[i, j]), i, j
