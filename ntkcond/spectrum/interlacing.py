"""An upper bound on λ_min from the closest pair: Cauchy interlacing on 2 × 2 principal
submatrices, with an error-free determinant (eq. (3); Liu & Hui, arXiv 2305.08813, Prop. 4.1)."""
from __future__ import annotations

import numpy as np

from ._kernel_checks import ScaledKernel, as_square_kernel, float_eps, ldexp, scale_checked

__all__ = ["lambda_min_upper_bound", "lambda_min_upper_bound_core"]

_VELTKAMP = 134217729.0  # 2^27 + 1: splits a float64 into two 26-bit halves


#: Entries per row block of ``lambda_min_upper_bound`` (64 rows of a 512 × 512 kernel): one
#: work buffer of seven block-sized arrays serves every block (no n × n temporaries, each
#: freshly faulted in), and the blocks cover the upper triangle (plus the sliver below it in
#: each block) instead of the whole matrix.
_PAIR_BLOCK_ENTRIES = 1 << 15


def _row_blocks(n: int, rows: int):
    """(start, stop) of consecutive blocks of ``rows`` (at least 1) rows covering 0..n-1."""
    rows = max(1, rows)
    return [(start, min(start + rows, n)) for start in range(0, n, rows)]


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp split: x = hi + lo exactly, each half with at most 26 significant bits."""
    t = _VELTKAMP * x
    hi = t - (t - x)
    return hi, x - hi


def _pair_lower_eigenvalues(a: np.ndarray, b: np.ndarray, c: np.ndarray, work: np.ndarray) -> np.ndarray:
    """λ₋ of [[a, c], [c, b]] as det/λ₊, the determinant ab − c² formed error-free.

    (a + b)/2 − √(((a − b)/2)² + c²) cancels catastrophically for a close pair (λ₋ ≪ λ₊);
    λ₋ = (ab − c²)/λ₊ with λ₊ = (a + b)/2 + √(((a − b)/2)² + c²) does not: ab and c² come
    from Dekker products (x·y = p + e exactly, from Veltkamp splits), whose leading parts
    cancel exactly (Sterbenz) when ab ≈ c², so det = (p_ab − p_cc) + (e_ab − e_cc) of the
    stored entries has a relative error of a few eps. λ₊ = 0 only for the zero submatrix,
    whose λ₋ is 0.

    a: (r, 1), b: (1, k), c: (r, k). Written into ``work`` (at least 7 × c.size float64
    entries; the result is a view of it): the plain expression allocates some twenty r × k
    temporaries per call, and allocating and freeing that many large buffers makes glibc hand
    memory back to the OS and fault it in again (page faults cost more than the arithmetic
    here), so ``lambda_min_upper_bound`` passes one work buffer for all its row blocks. The
    operations are those of the plain expression in the same order (tested bit for bit).
    """
    shape, size = c.shape, c.size
    P, E, Q, F, H, L, T = (work[i * size:(i + 1) * size].reshape(shape) for i in range(7))
    xh, xl = _split(a)  # (r, 1) and (1, k): small
    yh, yl = _split(b)
    np.multiply(a, b, out=P)  # p_ab, e_ab: Dekker's a·b
    np.multiply(xh, yh, out=E)
    E -= P
    E += np.multiply(xh, yl, out=T)
    E += np.multiply(xl, yh, out=T)
    E += np.multiply(xl, yl, out=T)
    np.multiply(c, c, out=Q)  # p_cc, e_cc: Dekker's c·c, c split as in _split
    np.multiply(_VELTKAMP, c, out=T)
    np.subtract(T, c, out=H)
    np.subtract(T, H, out=H)  # hi = t − (t − c)
    np.subtract(c, H, out=L)  # lo = c − hi
    np.multiply(H, H, out=F)
    F -= Q
    F += np.multiply(H, L, out=T)
    F += np.multiply(L, H, out=T)
    F += np.multiply(L, L, out=T)
    P -= Q  # det = (p_ab − p_cc) + (e_ab − e_cc)
    E -= F
    P += E
    det = P
    np.add(a, b, out=Q)  # λ₊ = 0.5·(a + b) + hypot(0.5·(a − b), c)
    Q *= 0.5
    np.subtract(a, b, out=F)
    F *= 0.5
    np.hypot(F, c, out=F)
    Q += F
    positive = Q > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        Q[~positive] = 1.0
        np.divide(det, Q, out=det)
    det[~positive] = 0.0
    return det


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
    (1e4·eps₆₄ + 64·eps)·max|K| (the symmetric part (K + Kᵀ)/2 is used). Positive
    semi-definiteness is only checked where it is cheap: every λ₋ (a 2 × 2 principal minor's eigenvalue, ≥ λ_min(K)) must
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

    Examples:
      >>> import numpy as np, ntkcond
      >>> ntkcond.lambda_min_upper_bound(np.array([[2.0, 1.0], [1.0, 2.0]]))  # λmin is 1 here
      (1.0, 0, 1)
    """
    where = "lambda_min_upper_bound"
    K64, kdtype = as_square_kernel(K, where)  # K64: this call's own float64 copy
    return lambda_min_upper_bound_core(scale_checked(K64, kdtype, where), where)


def lambda_min_upper_bound_core(kernel: ScaledKernel, where: str) -> tuple[float, int, int]:
    """``lambda_min_upper_bound`` of a kernel already checked (``ScaledKernel``, read and not
    changed): no argument is checked; the 2 × 2 PSD test raises ValueError naming ``where``,
    the public function called. The eps of ``kernel.dtype`` sets that test's tolerance."""
    # K·2^(−e) with max|K| in [0.5, 1): exact (a power of two), so the products below neither
    # overflow (K near 1e308) nor lose the error-free determinant to underflow (K near 1e-300)
    sym, e = kernel.matrix, kernel.exponent
    n = sym.shape[0]
    eps = float_eps(kernel.dtype)
    diag = np.diagonal(sym).copy()
    floor = n * eps * float(np.max(np.sum(np.abs(sym), axis=1)))  # ‖K‖_∞ ≥ λ_max
    if n == 1:
        best, bi, bj = float(diag[0]), 0, 0
    else:
        best, bi, bj = np.inf, 0, 1
        blocks = _row_blocks(n - 1, _PAIR_BLOCK_ENTRIES // n)
        work = np.empty(7 * (blocks[0][1] - blocks[0][0]) * (n - 1))
        for start, stop in blocks:
            # pairs i < j of rows start..stop-1: columns start+1.. only (the upper triangle
            # and a sliver below it, masked), each λ₋ computed entrywise as on the full row
            lam = _pair_lower_eigenvalues(diag[start:stop, None], diag[None, start + 1:],
                                          sym[start:stop, start + 1:], work)
            lam[np.tri(stop - start, n - start - 1, -1, dtype=bool)] = np.inf  # j <= i
            r, k = divmod(int(np.argmin(lam)), lam.shape[1])
            if lam[r, k] < best:  # blocks in row order: ties keep the first pair row-major
                best, bi, bj = float(lam[r, k]), start + r, start + 1 + k
    if best < -floor:
        raise ValueError(
            f"{where}: expected a positive semi-definite matrix, got the 2x2 principal submatrix "
            f"of rows ({bi}, {bj}) with eigenvalue {float(ldexp(best, e)):.6g} < "
            f"{float(ldexp(-floor, e)):.3g}"
        )
    return float(ldexp(best, e)), bi, bj
