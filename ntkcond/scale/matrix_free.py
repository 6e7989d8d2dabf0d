"""κ_eff of the infinite-width NTK of any number of inputs without storing the kernel.

Matrix-free route (any n; memory O(n·(b + r + k)) plus an optional tile cache). The kernel is
never stored whole: a product K·V (V of any number of columns) is one pass over the tiles,
K_IJ V_J and K_IJᵀ V_I, whose cost is the tiles' (an n²d GEMM and the recursion), nearly
independent of the columns. So each pass carries many vectors:

  1. Known null space: rows of x with the same direction give kernel rows in proportion
     (K(x, ·) = ‖x‖·h(x/‖x‖)), so e_i/‖x_i‖ − e_j/‖x_j‖ is a null vector of K. Rows within
     1e-10 of each other after a random projection are checked (the vector's Rayleigh quotient
     from their 2 × 2 kernel block at most τ) and deflated from the start, with ``null_space``.
  2. Randomised Nyström sketch (Tropp, Yurtsever, Udell & Cevher 2017; a pass K·Ω with
     r = ``sketch`` Gaussian columns, ``power`` more passes of subspace iteration):
     K ≈ U Λ̂ Uᵀ of rank r. The passes' products also start both LOBPCG blocks (Ritz vectors on
     their spans), so no pass is spent on starting vectors.
  3. LOBPCG (Knyazev 2001; orthonormal basis [X, P, W], P as in Hetmaniuk & Lehoucq 2006) on a
     block of ``k`` vectors for the smallest eigenvalue above τ, preconditioned by the Nyström
     inverse U(Λ̂ + μ)⁻¹Uᵀ + (I − UUᵀ)/(λ̂_r + μ) (Frangella, Tropp & Udell 2023), μ the current
     smallest Ritz value: it flattens the top r eigenvalues, so the iteration sees the
     condition λ_{r+1}/λ_min of the tail instead of κ. A second block (``top`` vectors) rides
     along in the same passes for λ_max. Converged Ritz vectors with values ≤ τ are null
     directions: they are locked into the deflated set and the block restarts.
  4. A last pass recomputes K·v for both returned vectors: λ = vᵀKv and the residual
     r = ‖Kv − λv‖. For symmetric K an eigenvalue lies within r of λ (rigorous), and within
     r²/gap when the gap to the next eigenvalue is known; ``error_estimate`` uses the gap to the
     next Ritz value for it (an estimate, not a bound).
  5. Tile cache: tiles that fit in ``cache`` bytes (default: half the available memory) are
     kept after the first pass and only multiplied later; the others are recomputed every
     pass. The values are those ``kernel_tile`` computes each time, so the result does not
     depend on the cache (tested bit for bit); ``cache=0`` keeps memory at O(n·(b + r + k)).
     The dense algebra between passes (tall n × m blocks) is split by rows over the tile
     workers (``_lobpcg.RowSplit``) instead of a multi-threaded BLAS, whose spinning threads
     would slow the next pass.
  6. Across the processes of JAX's multi-controller runtime (``scale.processes``) each
     process computes the partial product of its tiles (p, p + P, …); the parts are gathered
     and added in process order, so every process holds the same K·V and runs the same
     solver on it (the blocks multiplied are checked to agree: processes whose dense algebra
     diverged raise a ValueError instead of waiting on each other). ``cache`` is per process.

  MNIST test, ReLU, depth 3: 25 passes at n = 2,000 (was 233: block-Jacobi LOBPCG + Lanczos),
  41 at n = 10⁴; a pass without the cache is 1.1–1.5× its floor (the n²d Gram GEMM at the
  machine's GEMM rate plus the elementwise recursion); κ_eff within 2e-12 (n = 2,000) and
  1e-10 (n = 10⁴) of the exact route's; times against the exact route in
  ``benchmarks/results/kappa_large_mnist.md``. With the sketch rank capped (``default_sketch``)
  the passes grow as about (n/r)^0.43.
  Linear nets: K = c·XXᵀ/d, whose nonzero eigenvalues are those of c·XᵀX/d (d × d), so the
    exact answer costs O(n·d²) at any n, also when n > d makes K rank-deficient.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time

import numpy as np

from .._core.checks import as_count, as_int, positive
from .._core.memory import available_memory
from .._core.threads import single_threaded_blas
from ..spectrum import resolve_tolerances
from ._lobpcg import Lobpcg, RowSplit, nystrom, orthonormal
from .processes import Share, current_share, local_process_count
from .tiles import Tiles, kernel_tile, prepare, resolve_workers

__all__ = [
    "KernelOperator",
    "MatrixFreeConditioning",
    "default_sketch",
    "known_null_space",
    "matrix_free_conditioning",
]


@dataclasses.dataclass(frozen=True)
class MatrixFreeConditioning:
    """Result of ``matrix_free_conditioning``.

    Attributes:
      n: number of inputs.
      lambda_max: largest eigenvalue (Rayleigh quotient of the top LOBPCG vector).
      lambda_min_nonzero: smallest eigenvalue above ``cutoff`` (Rayleigh quotient of the
        bottom LOBPCG vector, null space deflated).
      kappa_eff: lambda_max / lambda_min_nonzero.
      cutoff: τ = max(atol, rtol·λ_max).
      null_dimension: number of directions deflated as null (known from the data and found).
      matvecs: kernel passes used (a pass multiplies K by a block of vectors).
      converged: whether both residuals met their tolerances.
      residual: ‖Kv − λv‖/λ_max of the returned smallest pair (unit v, K·v recomputed); for
        symmetric K some eigenvalue lies within residual·λ_max of lambda_min_nonzero (a
        rigorous error bound).
      method: "nystrom+lobpcg", or "feature-space" for linear nets (exact).
      seconds: wall time.
      residual_max: the same for the largest pair: an eigenvalue lies within
        residual_max·λ_max of lambda_max.
      error_estimate: estimated relative error of kappa_eff, r²/gap for both ends, with the
        gap to the next Ritz value (not a bound: a missed eigenvalue in the gap would void it;
        0 for the feature-space route).
      known_null: null directions known before iterating (duplicate directions in x, and
        ``null_space``), part of ``null_dimension``.
      sketch: rank r of the Nyström preconditioner (0: none).
      block_size: LOBPCG block size k for the smallest eigenvalue.
      seconds_per_pass: median wall seconds of a pass with the LOBPCG blocks (the sketch
        passes carry r columns and are slower; with cached tiles the first pass computes them
        and later ones reuse them); nan without passes.
      seconds_in_passes: wall seconds in all kernel passes together (across processes, the
        part that splits: ``seconds`` − ``seconds_in_passes`` is the dense algebra every
        process repeats); 0 for the feature-space route.
      cache_bytes: bytes of kernel tiles kept between passes (``cache``).
      cached_fraction: the fraction of the kernel's tiles (by entries) kept between passes:
        a pass recomputes the other 1 − cached_fraction.
    """

    n: int
    lambda_max: float
    lambda_min_nonzero: float
    kappa_eff: float
    cutoff: float
    null_dimension: int
    matvecs: int
    converged: bool
    residual: float
    method: str
    seconds: float
    residual_max: float = 0.0
    error_estimate: float = 0.0
    known_null: int = 0
    sketch: int = 0
    block_size: int = 0
    seconds_per_pass: float = math.nan
    seconds_in_passes: float = 0.0
    cache_bytes: int = 0
    cached_fraction: float = 0.0

    def __repr__(self) -> str:
        return (f"MatrixFreeConditioning(kappa_eff={self.kappa_eff:.6g}, lambda_max={self.lambda_max:.6g}, "
                f"lambda_min_nonzero={self.lambda_min_nonzero:.6g}, n={self.n}, "
                f"null_dimension={self.null_dimension}, converged={self.converged}, "
                f"residual={self.residual:.1e}, method={self.method!r}, passes={self.matvecs}, "
                f"cached={100 * self.cached_fraction:.0f}%, seconds={self.seconds:.3g})")


class KernelOperator:
    """K·V for the infinite-width NTK without storing K: one pass over the tiles per product
    (tiles within ``cache_bytes`` kept after the first pass: ``Tiles``)."""

    def __init__(self, xh, norms, d, net, depth, layers, block, workers, cache_bytes: int = 0,
                 x=None, share: Share = Share()):
        # across processes (``scale.processes``): this process's tiles; products summed
        self.tiles = Tiles(xh, norms, d, net, [depth], layers, block, workers, cache_bytes, x,
                           share=share)
        self.share = share
        self.cache_bytes = sum(share.allgather(self.tiles.cache_bytes))  # all processes'
        total = 8 * sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in _all_tiles(xh.shape[0], block))
        self.cached_fraction = self.cache_bytes / total if total else 0.0
        self.depth = depth
        self.n = xh.shape[0]
        self.passes = 0
        self.seconds: list = []  # (columns, wall seconds) per pass

    def matmat(self, V):
        V = np.ascontiguousarray(V, dtype=np.float64)
        vec = V.ndim == 1
        V = V.reshape(self.n, -1)
        start = time.perf_counter()
        depth = self.depth

        def visit(out, r0, r1, c0, c1, blocks):
            K = blocks[depth]
            out[r0:r1] += K @ V[c0:c1]
            if c0 != r0:
                out[c0:c1] += K.T @ V[r0:r1]

        parts = self.tiles.run(visit, lambda: np.zeros_like(V))
        out = parts[0]
        for part in parts[1:]:
            out += part
        out = self.share.sum_in_order(out, check=V, where="matrix_free_conditioning")
        self.passes += 1
        self.seconds.append((V.shape[1], time.perf_counter() - start))
        return out.ravel() if vec else out

    __call__ = matmat


def _all_tiles(n, b):
    return [(r0, min(n, r0 + b), c0, min(n, c0 + b)) for r0 in range(0, n, b) for c0 in range(r0, n, b)]


def known_null_space(xh, norms, d, net, layers, depth, cutoff_floor, rng):
    """Orthonormal null vectors of K known from x: rows with the same direction up to
    rounding give kernel rows in proportion (K(x, ·) = ‖x‖·h(x/‖x‖)), so e_i/‖x_i‖ − e_j/‖x_j‖
    is null.

    Candidates: rows adjacent after sorting a random projection of x/‖x‖, within 1e-10 of
    each other there (any pair within 1e-10 rad is adjacent or linked through such rows);
    kept when the Rayleigh quotient of their vector (from the 2 × 2 kernel block) is at most
    ``cutoff_floor`` (τ for the largest diagonal entry, ≤ τ): the test the iteration applies
    to the vectors it locks.
    """
    n = xh.shape[0]
    g = rng.standard_normal(xh.shape[1])
    p = xh @ (g / np.linalg.norm(g))
    order = np.argsort(p, kind="stable")
    close = np.nonzero(np.diff(p[order]) <= 1e-10)[0]
    vectors = []
    for t in close:
        i, j = int(order[t]), int(order[t + 1])
        rows = np.array([i, j])
        K = kernel_tile(xh[rows], norms[rows], d, 0, 2, 0, 2, net, [depth], layers)[depth]
        v = np.array([1.0 / norms[i], -1.0 / norms[j]])
        if (v @ K @ v) / (v @ v) <= cutoff_floor:
            full = np.zeros(n)
            full[[i, j]] = v
            vectors.append(full)
    if not vectors:
        return np.zeros((n, 0))
    return orthonormal(np.stack(vectors, axis=1))


def default_sketch(n: int) -> int:
    """The default Nyström rank of ``matrix_free_conditioning``: min(n/4, max(512, n/5), 2048)."""
    return int(min(n // 4, max(512, n // 5), 2048))


def matrix_free_conditioning(
    x,
    *,
    depth: int,
    activation="relu",
    trainable="all",
    block: int = 512,
    k: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    lanczos_tol: float = 1e-10,
    lobpcg_tol: float = 1e-10,
    maxiter: int = 300,
    null_space=None,
    max_deflations: int = 8,
    seed: int = 0,
    sketch: int | None = None,
    power: int = 1,
    top: int = 4,
    workers: int | None = None,
    cache: int | None = None,
    w_std=None,
    b_std=None,
    residual=None,
) -> MatrixFreeConditioning:
    """κ_eff of the infinite-width NTK of all rows of x without storing the kernel.

    Nyström-preconditioned LOBPCG for the smallest eigenvalue above τ, with the null space
    deflated, and LOBPCG for λ_max in the same passes (module docstring). Memory
    O(n·(b + r + k)) plus the tile cache; the kernel tiles run on ``workers`` threads.

    Args:
      x: (n, d) inputs without zero rows.
      depth, activation, trainable: as in ``infinite_ntk``.
      block: tile size b of the kernel passes.
      k: LOBPCG block size for the smallest eigenvalue (1 ≤ k < n/2; default min(64, n/4):
        MNIST, n = 2000: 43, 34, 25, 22 passes at k = 16, 32, 64, 96; a pass's cost barely
        depends on k, the dense algebra between passes grows as n·k²).
      rtol, atol: cutoff τ = max(atol, rtol·λ_max); default rtol = n·eps₆₄, as the exact route.
      lanczos_tol: λ_max is converged when its residual ≤ lanczos_tol·λ_max (the name is
        kept from the Lanczos version of this route).
      lobpcg_tol: λ_min⁺ is converged when its residual ≤ lobpcg_tol·λ_max (the error of
        λ_min⁺ is then about residual²/gap: 1e-10 gives κ_eff to ~1e-12 on MNIST, n = 2000).
      maxiter: passes at most before the final one (sketch passes and deflation restarts
        included); unconverged results say so (``converged``, ``residual``).
      null_space: optional (n, m) basis (m < n; or one (n,) vector) of a known null space,
        deflated from the start (as are the null vectors of duplicated input directions). It
        is checked first, in one pass K·[N, 1]: with N orthonormalised, ‖KN‖₂ must be at most
        max(τ̂, 16·√n·eps·λ̂), τ̂ = max(atol, rtol·λ̂) the cutoff at λ̂ = max(max_i K_ii, 1ᵀK1/n) ≤
        λ_max (a lower bound, so the test errs on the strict side); a basis that K does not
        annihilate would deflate real eigenvalues and give a wrong κ_eff, and is refused.
      max_deflations: times converged null directions may be locked before giving up.
      seed: seed of the random sketch and starting blocks.
      sketch: rank r of the Nyström preconditioner (at most n/4; 0: none); default
        ``default_sketch(n)``: min(n/4, max(512, n/5), 2048). Passes fall as r grows (MNIST,
        depth 3, k = 32: n = 10⁴ needs 89, 64, 48 passes at r = 512, 1024, 2048) while a
        sketch pass costs 2n²r more flops and the sketch n·r·8 bytes (a few copies live).
      power: subspace-iteration passes that sharpen the sketch.
      top: LOBPCG block size for λ_max.
      workers: threads for the kernel tiles (default the BLAS thread count).
      cache: bytes of kernel tiles to keep between passes (the first tiles in row order; a
        pass then recomputes only the others: MNIST, n = 2000, all tiles kept: 25 passes in
        about a third of the time). Default None: up to half the memory available at the
        call, less the solver's own n × (r + 8k) arrays; 0: none, memory O(n·(b + r + k))
        only. The result reports ``cache_bytes`` and ``cached_fraction``.
      w_std, b_std, residual: the general net of ``infinite_ntk`` (``ntkcond.network.mlp``).

    Returns:
      ``MatrixFreeConditioning``.

    Raises:
      TypeError, ValueError: bad sizes (n < 4 rows: use ``exact_conditioning``), counts,
        tolerances or seed; a ``null_space`` of the wrong shape, not finite, or not null for
        K; a null space not exhausted after ``max_deflations`` lockings.
    """
    where = "matrix_free_conditioning"
    start = time.perf_counter()
    x, xh, norms, d, net, depths, layers, block = prepare(x, [depth], activation, trainable, block,
                                                          where, w_std, b_std, residual)
    n = xh.shape[0]
    rtol, atol = resolve_tolerances(rtol, atol, n, where)
    lanczos_tol = positive(lanczos_tol, "lanczos_tol", where)
    lobpcg_tol = positive(lobpcg_tol, "lobpcg_tol", where)
    maxiter = as_count(maxiter, "maxiter", where, 1)
    max_deflations = as_count(max_deflations, "max_deflations", where, 0)
    seed = as_count(seed, "seed", where, 0)
    null_space = _as_null_space(null_space, n, where)
    if net.is_linear and net.plain:
        c = net.linear_factor(depths[0], layers)
        return _linear_feature_space(xh, norms, d, c, rtol, atol, start)
    if n < 4:
        raise ValueError(f"{where}: expected n >= 4 rows for the iterative route (a LOBPCG block "
                         f"of k >= 1 vectors needs k < n/2), got n = {n}; use "
                         "ntkcond.exact_conditioning for so few rows")
    k = min(64, max(1, n // 4)) if k is None else as_int(k, "k", where, 1)
    if not 1 <= k < n // 2:
        raise ValueError(f"{where}: expected 1 <= k < n/2 = {n // 2} (n = {n} rows), got k = {k}")
    rank = default_sketch(n) if sketch is None else min(as_int(sketch, "sketch", where, 0), n // 4)
    top = min(as_int(top, "top", where, 1), max(1, n // 4))
    power = as_int(power, "power", where, 0)
    workers = resolve_workers(workers, where)
    import scipy.linalg  # noqa: F401  (loaded before the BLAS limit below: it applies to it too)

    share = current_share()  # across processes: the tiles split, the products summed
    if cache is None:  # half the available memory, less the solver's blocks, per process here
        cache = max(0, available_memory() // (2 * local_process_count(share))
                    - 8 * n * (3 * rank + 8 * k + 4 * top))
    cache = as_int(cache, "cache", where, 0)
    op = KernelOperator(xh, norms, d, net, depths[0], layers, block, workers, cache, x, share)
    # BLAS at one thread throughout when the tiles run on threads; the dense algebra between
    # passes runs on the same threads by row slices (``RowSplit``): a multi-threaded BLAS
    # would leave its threads spinning into the next pass.
    with (single_threaded_blas() if workers > 1 else contextlib.nullcontext()), RowSplit(workers) as rs:
        return _solve(op, xh, norms, (d, net, layers, depths[0]), k, rank, power, top, rtol, atol,
                      lanczos_tol, lobpcg_tol, maxiter, null_space, max_deflations, seed, start,
                      where, rs)


def _as_null_space(null_space, n: int, where: str):
    """``null_space`` as a finite float64 (n, m) array with m < n (an (n,) vector: m = 1), or
    None; TypeError/ValueError naming what is wrong."""
    if null_space is None:
        return None
    if not (hasattr(null_space, "__array__") or isinstance(null_space, (list, tuple))):
        raise TypeError(f"{where}: expected null_space as an (n, m) array, got "
                        f"{type(null_space).__name__}")
    try:
        arr = np.asarray(null_space)
    except (ValueError, TypeError):
        raise ValueError(f"{where}: expected null_space as an (n, m) array, got a nested sequence "
                         "that is not rectangular") from None
    if arr.dtype == object or arr.dtype == np.bool_ or not (
            np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{where}: expected null_space with a real dtype, got {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] >= n:
        raise ValueError(f"{where}: expected null_space of shape (n, m) = ({n}, m) with m < {n} "
                         f"(one column per null vector), got shape {np.shape(null_space)}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where}: expected finite null_space entries, got NaN or Inf")
    return arr


def _check_null_space(op, N, diag_max, rtol, atol, where, rs):
    """Refuse a user null space that K does not annihilate (``matrix_free_conditioning``,
    ``null_space``): one pass K·[N, 1] with N orthonormalised."""
    n = N.shape[0]
    ones = np.ones((n, 1)) / math.sqrt(n)
    prods = op(np.hstack([N, ones]))
    KN, K1 = prods[:, :-1], prods[:, -1]
    lam_lo = max(diag_max, float(ones[:, 0] @ K1))
    limit = max(atol, rtol * lam_lo, 16 * math.sqrt(n) * np.finfo(np.float64).eps * lam_lo)
    s = np.linalg.svd(KN, compute_uv=False)
    norm = float(s[0]) if s.size else 0.0
    if norm > limit:
        raise ValueError(f"{where}: expected null_space to span null vectors of K (||K N||_2 <= "
                         f"{limit:.3g} for N orthonormalised, the cutoff at lambda_max >= "
                         f"{lam_lo:.4g}), got ||K N||_2 = {norm:.3g}: deflating it would remove "
                         "real eigenvalues and give a wrong kappa_eff")


def _solve(op, xh, norms, net, k, rank, power, top, rtol, atol, lanczos_tol, lobpcg_tol,
           maxiter, null_space, max_deflations, seed, start, where, rs):
    """The solver of ``matrix_free_conditioning`` (steps 1–4 of the module docstring)."""
    n = xh.shape[0]
    rng = np.random.default_rng(seed)
    d, family, layers, depth = net  # the kernel's: K_ii = G·T(0)‖x_i‖²/d ≤ λ_max
    diag = kernel_tile(xh[:1], np.ones(1), 1, 0, 1, 0, 1, family, [depth], layers)[depth][0, 0]
    floor = max(atol, rtol * float(diag) * float(np.max(norms)) ** 2 / d)
    Y = known_null_space(xh, norms, d, family, layers, depth, floor, rng)
    if null_space is not None and null_space.shape[1]:
        extra = orthonormal(null_space, rs=rs)
        diag_max = float(diag) * float(np.max(norms)) ** 2 / d
        _check_null_space(op, extra, diag_max, rtol, atol, where, rs)
        Y = orthonormal(np.hstack([Y, extra]), rs=rs)
    known = Y.shape[1]
    low, high = None, Lobpcg(orthonormal(rng.standard_normal((n, top)), (Y,), rs=rs), True, rs)
    if rank >= max(k, top):
        U, lam, (X0, AX0), (Z0, AZ0) = nystrom(op, n, rank, power, Y, rng, k, top, rs)
        low, high = Lobpcg(X0, False, rs), Lobpcg(Z0, True, rs)
        low.start(AX0)
        high.start(AZ0)
    else:
        rank, U, lam = 0, np.zeros((n, 0)), np.zeros(0)

    def precondition(R, mu):
        UR = rs.tmm(U, R)
        # (K̂ + μI)⁻¹ on span U; the rest weighted as by the sketch's smallest value λ̂_r + μ
        # (Frangella, Tropp & Udell 2023): K is not μ there, and 1/μ would let W ignore
        # U-components that the sketch got wrong (a null vector partly in span U stalls)
        rest = 1.0 / (lam[-1] + mu)
        return rs.mm(U, UR * (1.0 / (lam + mu) - rest)[:, None]) + rest * R

    cutoff, deflations, converged = None, 0, False
    while True:
        if low is None:  # (re)start the bottom block on the complement of U and Y
            X0 = orthonormal(rng.standard_normal((n, k)), (Y, U), rs=rs)
            if X0.shape[1] < k:  # n too small for the complement: any directions ⊥ Y
                X0 = orthonormal(rng.standard_normal((n, k)), (Y,), rs=rs)
            low = Lobpcg(X0, False, rs)
            blocks = [low.X] + ([high.X] if high.theta is None else [])
            prods = op(np.hstack(blocks))
            low.start(prods[:, :low.X.shape[1]])
            if high.theta is None:
                high.start(prods[:, low.X.shape[1]:])
        lam_max = float(high.theta[0])
        cutoff = max(atol, rtol * lam_max)
        R_low, r_low = low.residuals()
        R_high, r_high = high.residuals()
        tol_low, tol_high = lobpcg_tol * lam_max, lanczos_tol * lam_max
        null = (low.theta <= cutoff) & (r_low <= max(tol_low, cutoff))
        if np.any(null):  # converged null directions: lock them and restart the bottom block
            deflations += 1
            if deflations > max_deflations:
                raise ValueError(
                    f"{where}: null space not exhausted after {max_deflations} deflations "
                    f"({Y.shape[1]} directions); pass null_space= or a larger max_deflations")
            Y = orthonormal(np.hstack([Y, low.X[:, null]]), rs=rs)
            low = None
            continue
        done_low = r_low[0] <= tol_low and low.theta[0] > cutoff
        done_high = r_high[0] <= tol_high
        if (done_low and done_high) or op.passes >= maxiter:
            converged = done_low and done_high
            break
        mu = max(float(low.theta[0]), cutoff, np.finfo(np.float64).tiny)
        W_low = low.directions(R_low, (lambda R: precondition(R, mu)) if rank else None, Y)
        W_high = (high.directions(R_high, None, Y) if not done_high
                  else np.zeros((n, 0)))
        AW = op(np.hstack([W_low, W_high]))
        low.update(W_low, AW[:, :W_low.shape[1]])
        high.update(W_high, AW[:, W_low.shape[1]:])
    v, z = low.X[:, 0], high.X[:, 0]
    v, z = v / np.linalg.norm(v), z / np.linalg.norm(z)
    Kvz = op(np.stack([v, z], axis=1))  # fresh products: Rayleigh quotients and residuals
    lam_min, lam_max = float(v @ Kvz[:, 0]), float(z @ Kvz[:, 1])
    residual = float(np.linalg.norm(Kvz[:, 0] - lam_min * v)) / lam_max
    residual_max = float(np.linalg.norm(Kvz[:, 1] - lam_max * z)) / lam_max
    cutoff = max(atol, rtol * lam_max)
    gap_low = (low.theta[1] - low.theta[0]) if low.theta.size > 1 else lam_min
    gap_high = (high.theta[0] - high.theta[1]) if high.theta.size > 1 else lam_max
    estimate = ((residual * lam_max) ** 2 / max(gap_low, 1e-300) / lam_min
                + (residual_max * lam_max) ** 2 / max(gap_high, 1e-300) / lam_max)
    per_pass = [s for cols, s in op.seconds if cols <= k + top]
    return MatrixFreeConditioning(
        n=n, lambda_max=lam_max, lambda_min_nonzero=lam_min, kappa_eff=lam_max / lam_min,
        cutoff=float(cutoff), null_dimension=Y.shape[1], matvecs=op.passes,
        converged=bool(converged and residual <= lobpcg_tol and residual_max <= lanczos_tol),
        residual=residual, method="nystrom+lobpcg", seconds=time.perf_counter() - start,
        residual_max=residual_max, error_estimate=float(estimate), known_null=known,
        sketch=rank, block_size=k,
        seconds_per_pass=float(np.median(per_pass)) if per_pass else math.nan,
        seconds_in_passes=float(sum(seconds for _, seconds in op.seconds)),
        cache_bytes=op.cache_bytes, cached_fraction=op.cached_fraction,
    )


def _linear_feature_space(xh, norms, d, c, rtol, atol, start):
    """Bias-free linear nets: K = c·XXᵀ/d (``MLPFamily.linear_factor``: c = |S| for the
    norm-preserving net, 1 on 'last'); eigenvalues of c·XᵀX/d, exact."""
    X = xh * norms[:, None]
    w = np.linalg.eigvalsh(c * (X.T @ X) / d)
    lam_max = float(w[-1])
    cutoff = max(atol, rtol * lam_max)
    above = w[w > cutoff]
    return MatrixFreeConditioning(
        n=xh.shape[0], lambda_max=lam_max, lambda_min_nonzero=float(above[0]),
        kappa_eff=lam_max / float(above[0]), cutoff=cutoff,
        null_dimension=xh.shape[0] - above.size, matvecs=0, converged=True, residual=0.0,
        method="feature-space", seconds=time.perf_counter() - start,
    )
