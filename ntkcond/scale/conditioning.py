"""κ_eff of infinite-width NTKs beyond one batch: an exact blockwise route and a matrix-free one.

Kernel tiles (both routes). The n × n kernel is computed in b × b tiles of its upper triangle
(``kernel_tile``): one Gram GEMM per tile and the input angles as ``infinite.geometry.
unit_geometry`` takes them from it (Kahan's formula within 0.1 rad of 0 and π, as
``infinite_ntk``), then eq. (2) of ``infinite`` by ``kernel_recursion``, the angle recursion of
``infinite._recursion`` carried for the kernel alone. Per layer, from θ, cos θ, u = 1 − cos θ,
v = 1 + cos θ and sin θ = √(uv), with s = w_relu (sin θ − θ cos θ)/π:

    u' = u − s,   cos θ' = cos θ + s  (= w_lin cos θ + w_relu κ₁(θ)),   v' = v + s,
    θ' = atan2(√(u'v'), cos θ'),   T' = [layer trainable]·cos θ' + (1 − βθ)·T,

(w_lin + w_relu = 1, w_relu = (1 − α)²/(1 + α²), β = (1 − α)²/(π(1 + α²))): one sqrt and one
atan2 per layer, no sin/cos, 23 ns an entry at depth 3 against 300 for ``gradient_recursion``
(which also carries the terms the gradient *angles* need to full relative precision; the kernel
needs θ to absolute precision only, which the direct sin θ − θ cos θ keeps). T agrees with
``gradient_recursion``'s to 5e-15 absolute up to depth 10 (tested). The elementwise work runs on
cache-sized row chunks, the tiles on worker threads (``_core.threads``), BLAS at one thread each.

Exact route (n up to ~10⁴ on a laptop). The tiles are mirrored into an exactly symmetric
n × n float64 kernel; one float64 ``eigvalsh`` (LAPACK ``syevr``, eigenvalues only,
overwriting the kernel) gives the whole spectrum and ``spectrum`` eq. (1):

    κ_eff = λ_max / min{λᵢ : λᵢ > τ},   τ = max(atol, rtol·λ_max),  rtol = n·eps₆₄.

Memory: 8n² bytes per depth (800 MB at n = 10⁴), checked against the available memory
*before* anything is allocated; too little raises ``InsufficientMemoryError`` pointing to the
matrix-free route. The build is a small part of the time (``timings``): MNIST, n = 10⁴, depth 3,
see ``benchmarks/results/kappa_large_mnist.md``.

Matrix-free route (any n; memory O(n·(b + r + k))). The kernel is never stored: a product K·V
(V of any number of columns) is one pass over the tiles, K_IJ V_J and K_IJᵀ V_I, whose cost is
the tiles' (an n²d GEMM and the recursion), nearly independent of the columns. So each pass
carries many vectors:

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

  MNIST test, ReLU, depth 3: 25 passes at n = 2,000 (was 233: block-Jacobi LOBPCG + Lanczos),
  41 at n = 10⁴, each about 3× its GEMM floor (n²d flops at the machine's GEMM rate); κ_eff
  within 2e-12 (n = 2,000) and 1e-10 (n = 10⁴) of the exact route's
  (``benchmarks/results/kappa_large_mnist.md``). With the sketch rank capped (``default_sketch``)
  the passes grow as about (n/r)^0.43.
  Linear nets: K = c·XXᵀ/d, whose nonzero eigenvalues are those of c·XᵀX/d (d × d), so the
    exact answer costs O(n·d²) at any n, also when n > d makes K rank-deficient.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import math
import time

import numpy as np

from .._core.checks import as_data, as_int, sweep_layers
from .._core.memory import check_memory
from .._core.threads import blas_threads, single_threaded_blas
from ..activations import parse_activation
from ..infinite._recursion import angle_from, derivative_slope
from ..infinite.geometry import kahan_angles, needs_refinement, normalised_rows
from ..spectrum import Conditioning, conditioning_from_eigenvalues, resolve_tolerances

__all__ = [
    "MatrixFreeConditioning",
    "blockwise_ntk",
    "exact_conditioning",
    "kernel_recursion",
    "kernel_tile",
    "matrix_free_conditioning",
]

#: Entries per elementwise chunk of a tile: 8 arrays of them stay in a core's L2 cache.
CHUNK_ENTRIES = 1 << 15


def kernel_recursion(angle, cos, depths, act, layers=None, overwrite: bool = False, refined=None):
    """T of eq. (2) of ``infinite`` for every depth in ``depths`` (ascending), in one pass.

    Same conventions as ``infinite._recursion.gradient_recursion`` (S = ``layers`` ∩ [0, L],
    all layers if None, S = {L} at every depth if ``layers == "last"``), but only T:
    T = Σ_{i∈S} cos θᵢ Π_{j=i}^{L−1} ġ(θⱼ) (module docstring for the recursion; with
    s = w_relu (sin θ − θ cos θ)/π it reads u' = u − s, cos θ' = cos θ + s, v' = v + s, since
    w_lin + w_relu = 1). ``angle`` and ``cos`` are float64 arrays from ``unit_geometry``
    (angles within 0.1 rad of 0 or π exact there); ``overwrite`` lets the recursion use them
    as its buffers; ``refined``: the indices of those angles, if known
    (``np.nonzero(needs_refinement(angle))``).

    Yields:
      (depth, T): T is updated in place by the next step; copy it to keep it.
    """
    depths = sorted(set(depths))
    last_only = layers == "last"
    member = (lambda i: True) if layers is None or last_only else (lambda i: i in layers)
    if act.is_linear:  # angles unchanged, ġ = 1: T = |S ∩ [0, L]|·cos θ₀
        for L in depths:
            count = 1 if last_only else sum(1 for i in range(L + 1) if member(i))
            yield L, count * cos
        return
    a = act.slope
    w_relu = (1.0 - a) ** 2 / (1.0 + a * a)
    beta = derivative_slope(act)
    t, c = (angle, cos) if overwrite else (angle.copy(), cos.copy())
    u, v = 1.0 - c, 1.0 + c
    exact = np.nonzero(needs_refinement(t)) if refined is None else refined  # 1 ∓ cos θ loses digits
    if exact[0].size:
        half = 0.5 * t[exact]
        u[exact], v[exact] = 2.0 * np.sin(half) ** 2, 2.0 * np.cos(half) ** 2
    sn = np.multiply(u, v)
    np.sqrt(sn, out=sn)  # sin θ
    T = c.copy() if member(0) or last_only else np.zeros_like(c)
    g, s = np.empty_like(c), np.empty_like(c)
    if 0 in depths:
        yield 0, T
    for k in range(depths[-1]):
        if not last_only:
            np.multiply(t, -beta, out=g)
            g += 1.0
            T *= g  # ġ(θ_k)·T
        np.multiply(t, c, out=s)
        np.subtract(sn, s, out=s)
        s *= w_relu / np.pi  # s = w_relu (sin θ − θ cos θ)/π
        u -= s
        np.maximum(u, 0.0, out=u)  # 1 − cos θ' ≥ 0 (rounding)
        c += s  # cos θ' = w_lin cos θ + w_relu κ₁(θ)
        v += s
        np.multiply(u, v, out=sn)
        np.sqrt(sn, out=sn)  # sin θ'
        np.arctan2(sn, c, out=t)  # θ'
        if last_only:
            T[...] = c
        elif member(k + 1):
            T += c
        if k + 1 in depths:
            yield k + 1, T


def kernel_tile(xh, norms, d, r0, r1, c0, c1, act, depths, layers):
    """{L: K[r0:r1, c0:c1]} of the infinite-width NTK for every depth: ‖x‖‖x'‖/d · T, with the
    geometry of ``unit_geometry`` and T of ``kernel_recursion``, row chunk by row chunk."""
    ncols = c1 - c0
    out = {L: np.empty((r1 - r0, ncols)) for L in depths}
    step = max(1, CHUNK_ENTRIES // max(ncols, 1))
    xc, nc = xh[c0:c1], norms[c0:c1] / d
    gram = np.clip(xh[r0:r1] @ xc.T, -1.0, 1.0)  # one GEMM for the tile
    for s0 in range(r0, r1, step):
        s1 = min(r1, s0 + step)
        # unit_geometry(xh[s0:s1], xc, False) on the tile's Gram rows (the same operations):
        # Gram route, Kahan's formula within 0.1 rad of 0 or π (the diagonal: exactly 0)
        cos = gram[s0 - r0:s1 - r0]
        angle = angle_from(1.0 - cos, 1.0 + cos)
        refined = rows, cols = np.nonzero(needs_refinement(angle))
        if rows.size:
            exact = kahan_angles(xh[s0:s1], xc, rows, cols)
            angle[rows, cols] = exact
            cos[rows, cols] = np.cos(exact)
        scale = np.outer(norms[s0:s1], nc)
        for L, T in kernel_recursion(angle, cos, depths, act, layers, overwrite=True,
                                     refined=refined):
            np.multiply(scale, T, out=out[L][s0 - r0:s1 - r0])
    return out


class _Tiles:
    """The upper-triangle b × b tiles of the kernel of (xh, norms), run on worker threads."""

    def __init__(self, xh, norms, d, act, depths, layers, block, workers):
        self.xh, self.norms, self.d, self.act = xh, norms, d, act
        self.depths, self.layers, self.block = list(depths), layers, block
        self.n = xh.shape[0]
        self.workers = max(1, int(workers))
        n, b = self.n, block
        self.tiles = [(r0, min(n, r0 + b), c0, min(n, c0 + b))
                      for r0 in range(0, n, b) for c0 in range(r0, n, b)]

    def run(self, visit, make_state=lambda: None):
        """``visit(state, r0, r1, c0, c1, {L: K_tile})`` for every tile on the workers, worker
        w taking tiles w, w + W, w + 2W, … (a fixed split, so sums over a worker's tiles come
        out the same on every run); one ``make_state()`` per worker, returned in order."""
        count = min(self.workers, len(self.tiles))

        def worker(w):
            state = make_state()
            for tile in self.tiles[w::count]:
                blocks = kernel_tile(self.xh, self.norms, self.d, *tile, self.act, self.depths,
                                     self.layers)
                visit(state, *tile, blocks)
            return state

        if count == 1:
            return [worker(0)]
        with single_threaded_blas(), concurrent.futures.ThreadPoolExecutor(count) as pool:
            return list(pool.map(worker, range(count)))


def _as_block(block, where):
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"{where}: expected an integer block size >= 1, got {block!r}")
    return int(block)


def _workers(workers, where):
    return blas_threads() if workers is None else as_int(workers, "workers", where, 1)


def _check_kernel_range(norms, d, where):
    """Kernel entries are ‖x‖‖x'‖/d times a factor in [−(L+1), L+1]: refuse rows whose
    products leave float64's normal range (the kernel and its eigenvalues would be inf or 0)."""
    with np.errstate(over="ignore", under="ignore"):
        hi, lo = np.max(norms) ** 2 / d, np.min(norms) ** 2 / d
    if not (np.isfinite(hi) and lo >= np.finfo(np.float64).tiny):
        raise ValueError(
            f"{where}: expected kernel entries within float64's range, got ‖x‖²/d from "
            f"{lo:.3g} to {hi:.3g}; rescale x (κ is scale-invariant: scaling x by c scales every "
            "eigenvalue by c²)"
        )


def _prepare(x, depths, activation, trainable, block, where):
    x = as_data(x, where, "x")
    act = parse_activation(activation)
    depths, layers = sweep_layers(depths, trainable, where)
    xh, norms = normalised_rows(x, where, "x")
    _check_kernel_range(norms, x.shape[1], where)
    return xh, norms, x.shape[1], act, depths, layers, _as_block(block, where)


def blockwise_ntk(
    x,
    *,
    depths,
    activation="relu",
    trainable="all",
    block: int = 512,
    backend: str = "numpy",
    devices=None,
    memory_limit: int | None = None,
    workers: int | None = None,
) -> dict[int, np.ndarray]:
    """Infinite-width NTKs (n × n, float64) for several depths, built block by block.

    The kernel of ``infinite_ntk(x, depth=L, ...)`` (eq. (2) of ``infinite``) to rounding
    (≤ 3e-15 of its scale; module docstring), computed on the upper-triangle tiles and mirrored
    (exactly symmetric); all depths share one Gram tile and one pass of the recursion.

    Args:
      x: (n, d) inputs without zero rows.
      depths: iterable of depths L ≥ 0.
      activation, trainable: as in ``infinite_ntk``.
      block: tile size b.
      backend: "numpy" (tiles on ``workers`` threads), or "jax" to shard the blocks of each
        block row over JAX devices (``ntkcond.scale.sharded``; float64).
      devices: jax backend: None (all), a count, or a list of devices.
      memory_limit: bytes allowed (default: the available memory).
      workers: numpy backend: threads (default the BLAS thread count).

    Returns:
      {L: (n, n) float64 kernel}.

    Raises:
      InsufficientMemoryError: the kernels (8n² bytes per depth) do not fit.
    """
    return _blockwise_ntk(x, depths, activation, trainable, block, backend, devices, memory_limit,
                          workers, "blockwise_ntk")


def _blockwise_ntk(x, depths, activation, trainable, block, backend, devices, memory_limit,
                   workers, where):
    """``blockwise_ntk`` with the caller's name in its errors."""
    xh, norms, d, act, depths, layers, block = _prepare(x, depths, activation, trainable, block, where)
    n = xh.shape[0]
    check_memory(8 * n * n * len(depths), f"{len(depths)} float64 kernel(s) of {n} x {n}",
                  memory_limit, where)
    if backend not in ("numpy", "jax"):
        raise ValueError(f"{where}: expected backend 'numpy' or 'jax', got {backend!r}")
    out = {L: np.empty((n, n)) for L in depths}

    def place(_, r0, r1, c0, c1, blocks):
        for L, K in blocks.items():
            out[L][r0:r1, c0:c1] = K
            if c0 != r0:
                out[L][c0:c1, r0:r1] = K.T

    if backend == "jax":
        from .sharded import ShardedKernelBlocks

        rows = ShardedKernelBlocks(xh, norms, d, block, act, depths, layers, devices, where).row
        for r0 in range(0, n, block):
            for c0, c1, blocks in rows(r0, min(n, r0 + block)):
                place(None, r0, min(n, r0 + block), c0, c1, blocks)
    else:
        _Tiles(xh, norms, d, act, depths, layers, block, _workers(workers, where)).run(place)
    return out


def exact_conditioning(
    x,
    *,
    depths,
    activation="relu",
    trainable="all",
    block: int = 512,
    rtol: float | None = None,
    atol: float | None = None,
    backend: str = "numpy",
    memory_limit: int | None = None,
    workers: int | None = None,
    timings: dict | None = None,
) -> dict[int, Conditioning]:
    """Exact κ_eff of the infinite-width NTK of all rows of x, per depth (module docstring).

    One float64 ``eigvalsh`` per depth of the kernel built by ``blockwise_ntk``, overwritten in
    place. Memory 8n² bytes per depth, checked first.

    Args:
      x, depths, activation, trainable, block, backend, workers: as ``blockwise_ntk``.
      rtol, atol: cutoff τ = max(atol, rtol·λ_max), default rtol = n·eps₆₄ (``conditioning``).
      memory_limit: bytes allowed (default: the available memory).
      timings: a dict to receive the wall seconds of the phases: "build" (all depths'
        kernels) and "eigvalsh" (summed over depths).

    Returns:
      {L: ``Conditioning``}.

    Raises:
      InsufficientMemoryError: the kernels do not fit (the message names the matrix-free route).
    """
    import scipy.linalg

    where = "exact_conditioning"
    n = as_data(x, where, "x").shape[0]
    rtol, atol = resolve_tolerances(rtol, atol, n, where)
    start = time.perf_counter()
    kernels = _blockwise_ntk(x, depths, activation, trainable, block, backend, None, memory_limit,
                             workers, where)
    built = time.perf_counter()
    out = {}
    for L in sorted(kernels):
        K = kernels.pop(L)
        # K is symmetric, so K.T is the same matrix in Fortran order: no copy is made.
        w = scipy.linalg.eigvalsh(K.T, overwrite_a=True, check_finite=False, driver="evr")
        del K
        out[L] = conditioning_from_eigenvalues(np.asarray(w, dtype=np.float64), np.dtype(np.float64), rtol, atol, where)
    if timings is not None:
        timings.update(build=built - start, eigvalsh=time.perf_counter() - built)
    return out


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
        passes carry r columns and are slower); nan without passes.
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


class _KernelOperator:
    """K·V for the infinite-width NTK without storing K: one pass over the tiles per product."""

    def __init__(self, xh, norms, d, act, depth, layers, block, workers):
        self.tiles = _Tiles(xh, norms, d, act, [depth], layers, block, workers)
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
        self.passes += 1
        self.seconds.append((V.shape[1], time.perf_counter() - start))
        return out.ravel() if vec else out

    __call__ = matmat


def _orthonormal(V, against=(), drop: float = 1e-7):
    """Columns spanning V minus its components along the (orthonormal) ``against`` bases,
    orthonormal: two rounds of Gram–Schmidt, then twice V ← V·Q·w^(−1/2) from the eigenpairs
    (w, Q) of VᵀV (Cholesky-QR2 by eigenvalues: n·m² flops in one GEMM, against n·m²·O(10)
    for an SVD), the first time dropping directions with singular values below ``drop`` of the
    largest (w below drop²·w_max): their direction is lost to rounding."""
    for _ in range(2):
        for B in against:
            if B is not None and B.shape[1]:
                V = V - B @ (B.T @ V)
    for rounds in range(2):
        if V.shape[1] == 0:
            return V
        w, Q = np.linalg.eigh(V.T @ V)
        keep = w > max(drop * drop * w[-1], 1e-300) if rounds == 0 else slice(None)
        V = (V @ Q[:, keep]) / np.sqrt(w[keep])
    return V


class _Lobpcg:
    """One LOBPCG block (Knyazev 2001) in an orthonormal basis [X, P, W]: the smallest
    (``largest`` False) or largest ``k`` Ritz pairs of K on the complement of ``Y``.

    P is the part of the previous X outside the new one, formed in the small coefficient
    space (Hetmaniuk & Lehoucq 2006), so every basis column stays orthonormal and every
    product K·(basis) is a combination of computed products with orthonormal coefficients."""

    def __init__(self, X, largest: bool):
        self.X, self.AX, self.P, self.AP = X, None, None, None
        self.largest = largest
        self.theta = None

    def start(self, AX):
        self._ritz([self.X], [AX], self.X.shape[1], keep_p=False)

    def residuals(self):
        R = self.AX - self.X * self.theta
        return R, np.linalg.norm(R, axis=0)

    def directions(self, R, precondition, Y):
        W = R if precondition is None else precondition(R)
        return _orthonormal(W, (Y, self.X, self.P))

    def update(self, W, AW):
        parts = [self.X] + ([self.P] if self.P is not None else []) + ([W] if W.shape[1] else [])
        aparts = [self.AX] + ([self.AP] if self.P is not None else []) + ([AW] if W.shape[1] else [])
        self._ritz(parts, aparts, self.X.shape[1], keep_p=True)

    def _ritz(self, parts, aparts, k, keep_p):
        S, AS = np.hstack(parts), np.hstack(aparts)
        H = S.T @ AS
        H = 0.5 * (H + H.T)
        theta, C = np.linalg.eigh(H)
        pick = slice(len(theta) - k, None) if self.largest else slice(0, k)
        Cx = C[:, pick]
        if self.largest:
            Cx, theta = Cx[:, ::-1], theta[pick][::-1]
        else:
            theta = theta[pick]
        kx = parts[0].shape[1]
        X, AX = S @ Cx, AS @ Cx
        if keep_p and S.shape[1] > kx:
            # span{X_old, X_new} = span{X_new, P}: X_old's coefficients outside Cx, orthonormal
            Z = np.zeros((S.shape[1], kx))
            Z[:kx] = np.eye(kx)
            # singular values: sines of the angles between old and new X; below 1e-10 the
            # direction is rounding, not a step (its singular vector is arbitrary)
            Z, sines, _ = np.linalg.svd(Z - Cx @ (Cx.T @ Z), full_matrices=False)
            Z = Z[:, sines > 1e-10]
            self.P, self.AP = _clean_against(S @ Z, AS @ Z, X, AX) if Z.shape[1] else (None, None)
        self.X, self.AX, self.theta = X, AX, theta


def _clean_against(P, AP, X, AX):
    """P made orthonormal to X again, AP following it: near convergence P = S·Z is orthogonal to
    X only to eps/‖Z before normalising‖. One Gram–Schmidt step against X (AP − AX·C, no
    division), columns that were mostly X dropped, then a QR whose R is close to I."""
    C = X.T @ P
    P, AP = P - X @ C, AP - AX @ C
    keep = np.linalg.norm(P, axis=0) > 0.5  # the columns had norm 1
    if not np.any(keep):
        return None, None
    P, AP = P[:, keep], AP[:, keep]
    # PᵀP = I + O(rounding): one Cholesky-QR step, R = chol(PᵀP)ᵀ close to I
    R = np.linalg.cholesky(P.T @ P).T
    return (np.linalg.solve(R.T, P.T).T, np.linalg.solve(R.T, AP.T).T)


def _known_null_space(xh, norms, d, act, layers, depth, cutoff_floor, rng):
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
        K = kernel_tile(xh[rows], norms[rows], d, 0, 2, 0, 2, act, [depth], layers)[depth]
        v = np.array([1.0 / norms[i], -1.0 / norms[j]])
        if (v @ K @ v) / (v @ v) <= cutoff_floor:
            full = np.zeros(n)
            full[[i, j]] = v
            vectors.append(full)
    if not vectors:
        return np.zeros((n, 0))
    return _orthonormal(np.stack(vectors, axis=1))


def _nystrom(op, n, r, power, Y, rng, k, top):
    """Randomised Nyström approximation K ≈ U diag(lam) Uᵀ of rank r on the complement of Y
    (Tropp, Yurtsever, Udell & Cevher 2017, with the shift ν for stability): 1 + power passes.

    The passes' products also start both LOBPCG blocks without a pass of their own: the k
    lowest Ritz pairs on the random span of the first pass, the ``top`` highest on the span
    of the last.

    Returns:
      U, lam, (X0, K·X0) for the bottom block, (Z0, K·Z0) for the top block.
    """
    def ritz(omega, prods, count, lowest):
        H = omega.T @ prods
        _, C = np.linalg.eigh(0.5 * (H + H.T))
        C = C[:, :count] if lowest else C[:, ::-1][:, :count]
        return omega @ C, prods @ C

    def orth(V):  # Householder QR: Ω needs orthonormal columns, not a rank decision
        if Y.shape[1]:
            V = V - Y @ (Y.T @ V)
        return np.linalg.qr(V)[0]

    omega = orth(rng.standard_normal((n, r)))
    sketch = op(omega)
    low = ritz(omega, sketch, k, True)
    for _ in range(power):
        omega = orth(sketch)
        del sketch
        sketch = op(omega)
    high = ritz(omega, sketch, top, False)
    nu = math.sqrt(n) * np.finfo(np.float64).eps * np.linalg.norm(sketch)  # ≥ its 2-norm
    shifted = sketch + nu * omega
    core = omega.T @ shifted
    chol = np.linalg.cholesky(0.5 * (core + core.T))
    import scipy.linalg

    B = scipy.linalg.solve_triangular(chol, shifted.T, lower=True).T
    # B = UΣVᵀ from the r × r eigenproblem BᵀB = VΣ²Vᵀ (U = BVΣ⁻¹; the preconditioner needs
    # U and Σ² to a few digits, not an SVD's accuracy): n·r² GEMMs instead of an n × r SVD
    w, V = np.linalg.eigh(B.T @ B)
    w, V = w[::-1], V[:, ::-1]
    keep = w > w[0] * np.finfo(np.float64).eps * r
    U = (B @ V[:, keep]) / np.sqrt(w[keep])
    return U, np.maximum(w[keep] - nu, 0.0), low, high


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
) -> MatrixFreeConditioning:
    """κ_eff of the infinite-width NTK of all rows of x without storing the kernel.

    Nyström-preconditioned LOBPCG for the smallest eigenvalue above τ, with the null space
    deflated, and LOBPCG for λ_max in the same passes (module docstring). Memory
    O(n·(b + r + k)); the kernel tiles run on ``workers`` threads.

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
      null_space: optional (n, m) basis of a known null space, deflated from the start (as are
        the null vectors of duplicated input directions).
      max_deflations: times converged null directions may be locked before giving up.
      seed: seed of the random sketch and starting blocks.
      sketch: rank r of the Nyström preconditioner (at most n/4; 0: none); default
        ``default_sketch(n)``: min(n/4, max(512, n/5), 2048). Passes fall as r grows (MNIST,
        depth 3, k = 32: n = 10⁴ needs 89, 64, 48 passes at r = 512, 1024, 2048) while a
        sketch pass costs 2n²r more flops and the sketch n·r·8 bytes (a few copies live).
      power: subspace-iteration passes that sharpen the sketch.
      top: LOBPCG block size for λ_max.
      workers: threads for the kernel tiles (default the BLAS thread count).

    Returns:
      ``MatrixFreeConditioning``.

    Raises:
      ValueError: bad sizes, or a null space not exhausted after ``max_deflations`` lockings.
    """
    where = "matrix_free_conditioning"
    start = time.perf_counter()
    xh, norms, d, act, depths, layers, block = _prepare(x, [depth], activation, trainable, block, where)
    n = xh.shape[0]
    rtol, atol = resolve_tolerances(rtol, atol, n, where)
    if act.is_linear:
        return _linear_feature_space(xh, norms, d, depths[0], layers, rtol, atol, start)
    k = min(64, max(1, n // 4)) if k is None else as_int(k, "k", where, 1)
    if not 1 <= k < n // 2:
        raise ValueError(f"{where}: expected 1 <= k < n/2 = {n // 2}, got k = {k}")
    rank = default_sketch(n) if sketch is None else min(as_int(sketch, "sketch", where, 0), n // 4)
    top = min(as_int(top, "top", where, 1), max(1, n // 4))
    power = as_int(power, "power", where, 0)
    workers = _workers(workers, where)
    import scipy.linalg  # noqa: F401  (loaded before the BLAS limit below: it applies to it too)

    op = _KernelOperator(xh, norms, d, act, depths[0], layers, block, workers)
    # BLAS at one thread throughout when the tiles run on threads: the solver's dense algebra
    # is small (n × 3k blocks), and a multi-threaded BLAS on a shared machine spins.
    with single_threaded_blas() if workers > 1 else contextlib.nullcontext():
        return _solve(op, xh, norms, (d, act, layers, depths[0]), k, rank, power, top, rtol, atol,
                      lanczos_tol, lobpcg_tol, maxiter, null_space, max_deflations, seed, start,
                      where)


def _solve(op, xh, norms, net, k, rank, power, top, rtol, atol, lanczos_tol, lobpcg_tol,
           maxiter, null_space, max_deflations, seed, start, where):
    """The solver of ``matrix_free_conditioning`` (steps 1–4 of the module docstring)."""
    n = xh.shape[0]
    rng = np.random.default_rng(seed)
    d, act, layers, depth = net  # the kernel's: K_ii = T(0)‖x_i‖²/d ≤ λ_max
    diag = kernel_tile(xh[:1], np.ones(1), 1, 0, 1, 0, 1, act, [depth], layers)[depth][0, 0]
    floor = max(atol, rtol * float(diag) * float(np.max(norms)) ** 2 / d)
    Y = _known_null_space(xh, norms, d, act, layers, depth, floor, rng)
    if null_space is not None:
        extra = np.asarray(null_space, dtype=np.float64).reshape(n, -1)
        Y = _orthonormal(np.hstack([Y, extra]))
    known = Y.shape[1]
    low, high = None, _Lobpcg(_orthonormal(rng.standard_normal((n, top)), (Y,)), largest=True)
    if rank >= max(k, top):
        U, lam, (X0, AX0), (Z0, AZ0) = _nystrom(op, n, rank, power, Y, rng, k, top)
        low, high = _Lobpcg(X0, largest=False), _Lobpcg(Z0, largest=True)
        low.start(AX0)
        high.start(AZ0)
    else:
        rank, U, lam = 0, np.zeros((n, 0)), np.zeros(0)

    def precondition(R, mu):
        UR = U.T @ R
        # (K̂ + μI)⁻¹ on span U; the rest weighted as by the sketch's smallest value λ̂_r + μ
        # (Frangella, Tropp & Udell 2023): K is not μ there, and 1/μ would let W ignore
        # U-components that the sketch got wrong (a null vector partly in span U stalls)
        rest = 1.0 / (lam[-1] + mu)
        return U @ (UR * (1.0 / (lam + mu) - rest)[:, None]) + rest * R

    cutoff, deflations, converged = None, 0, False
    while True:
        if low is None:  # (re)start the bottom block on the complement of U and Y
            X0 = _orthonormal(rng.standard_normal((n, k)), (Y, U))
            if X0.shape[1] < k:  # n too small for the complement: any directions ⊥ Y
                X0 = _orthonormal(rng.standard_normal((n, k)), (Y,))
            low = _Lobpcg(X0, largest=False)
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
            Y = _orthonormal(np.hstack([Y, low.X[:, null]]))
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
    )


def _linear_feature_space(xh, norms, d, depth, layers, rtol, atol, start):
    """Linear nets: K = c·XXᵀ/d with c = |S| (1 on 'last'); eigenvalues of c·XᵀX/d, exact."""
    X = xh * norms[:, None]
    count = 1 if layers == "last" else (depth + 1 if layers is None else len([i for i in layers if i <= depth]))
    w = np.linalg.eigvalsh(count * (X.T @ X) / d)
    lam_max = float(w[-1])
    cutoff = max(atol, rtol * lam_max)
    above = w[w > cutoff]
    return MatrixFreeConditioning(
        n=xh.shape[0], lambda_max=lam_max, lambda_min_nonzero=float(above[0]),
        kappa_eff=lam_max / float(above[0]), cutoff=cutoff,
        null_dimension=xh.shape[0] - above.size, matvecs=0, converged=True, residual=0.0,
        method="feature-space", seconds=time.perf_counter() - start,
    )
