"""κ_eff of infinite-width NTKs beyond one batch: an exact blockwise route and a matrix-free one.

Exact route (n up to ~10⁴ on a laptop). The n × n float64 kernel is built in b × b blocks of
the upper triangle (Gram block → angle recursion, ``ntkcond.infinite`` eq. (2)) and mirrored,
so it is exactly symmetric; one float64 ``eigvalsh`` (LAPACK ``syevr``, eigenvalues only,
overwriting the kernel) gives the whole spectrum and ``spectrum`` eq. (1):

    κ_eff = λ_max / min{λᵢ : λᵢ > τ},   τ = max(atol, rtol·λ_max),  rtol = n·eps₆₄.

Memory: 8n² bytes per depth (800 MB at n = 10⁴), checked against the available memory
*before* anything is allocated; too little raises ``InsufficientMemoryError`` pointing to the
matrix-free route.

Matrix-free route (any n; memory O(n·b + n·d)). The kernel is never stored: a product K·V
(V of k columns) streams the blocks, K_IJ V_J and K_IJᵀ V_I, at the cost of one kernel pass.

  λ_max: Lanczos (``scipy.sparse.linalg.eigsh``, ARPACK, which="LA") with relative eigenvalue
    tolerance ``lanczos_tol`` (default 1e-10).
  λ_min⁺ (smallest eigenvalue above τ): LOBPCG (``scipy.sparse.linalg.lobpcg``, largest=False)
    on a block of ``k`` vectors (default 8) with a block-Jacobi preconditioner (pseudo-inverses of the b × b
    diagonal blocks), stopping when every residual ‖Kx − λx‖ ≤ ``lobpcg_tol``·λ_max (default
    1e-8) or after ``maxiter`` iterations. The returned value is the Rayleigh quotient of the
    lowest vector v, with its residual r = ‖Kv − λv‖ recomputed: for symmetric K an eigenvalue
    lies within r of it (and within r²/gap when the gap to the next is known). Converged eigenvectors with λ ≤ τ span (part of) the null space: they are
    moved into the constraint set (deflated) and LOBPCG is restarted orthogonal to them, until
    the smallest converged value is above τ. A known null-space basis can be passed.
  Linear nets: K = c·XXᵀ/d, whose nonzero eigenvalues are those of c·XᵀX/d (d × d), so the
    exact answer costs O(n·d²) at any n, also when n > d makes K rank-deficient.
"""
from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np

from .._core.checks import as_data, sweep_layers
from .._core.memory import check_memory
from ..activations import parse_activation
from ..infinite.geometry import normalised_rows
from ..spectrum import Conditioning, conditioning_from_eigenvalues, resolve_tolerances
from .blocks import numpy_kernel_blocks

__all__ = [
    "MatrixFreeConditioning",
    "blockwise_ntk",
    "exact_conditioning",
    "matrix_free_conditioning",
]


def _as_block(block, where):
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"{where}: expected an integer block size >= 1, got {block!r}")
    return int(block)


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
    # x is kept: the pairs near 0 or π get their angles exactly from it (``unit_geometry``)
    return xh, norms, x.shape[1], act, depths, layers, _as_block(block, where), x


def blockwise_ntk(
    x,
    *,
    depths,
    activation="relu",
    trainable="all",
    block: int = 1024,
    backend: str = "numpy",
    devices=None,
    memory_limit: int | None = None,
) -> dict[int, np.ndarray]:
    """Infinite-width NTKs (n × n, float64) for several depths, built block by block.

    Entry for entry the kernel of ``infinite_ntk(x, depth=L, ...)`` (eq. (2) of ``infinite``),
    computed on the upper-triangle blocks and mirrored (exactly symmetric); all depths share one
    Gram block and one pass of the recursion.

    Args:
      x: (n, d) inputs without zero rows.
      depths: iterable of depths L ≥ 0.
      activation, trainable: as in ``infinite_ntk``.
      block: block size b.
      backend: "numpy", or "jax" to shard the blocks of each block row over JAX devices
        (``ntkcond.scale.sharded``; float64).
      devices: jax backend: None (all), a count, or a list of devices.
      memory_limit: bytes allowed (default: the available memory).

    Returns:
      {L: (n, n) float64 kernel}.

    Raises:
      InsufficientMemoryError: the kernels (8n² bytes per depth) do not fit.
    """
    return _blockwise_ntk(x, depths, activation, trainable, block, backend, devices, memory_limit,
                          "blockwise_ntk")


def _blockwise_ntk(x, depths, activation, trainable, block, backend, devices, memory_limit, where):
    xh, norms, d, act, depths, layers, block, x = _prepare(x, depths, activation, trainable, block, where)
    n = xh.shape[0]
    check_memory(8 * n * n * len(depths), f"{len(depths)} float64 kernel(s) of {n} x {n}",
                  memory_limit, where)
    out = {L: np.empty((n, n)) for L in depths}
    if backend == "jax":
        from .sharded import ShardedKernelBlocks

        rows = ShardedKernelBlocks(xh, norms, d, block, act, depths, layers, devices, where, x).row
    elif backend == "numpy":
        def rows(r0, r1):
            for c0 in range(r0, n, block):
                c1 = min(n, c0 + block)
                yield c0, c1, numpy_kernel_blocks(xh, norms, d, r0, r1, c0, c1, act, depths, layers, x)
    else:
        raise ValueError(f"{where}: expected backend 'numpy' or 'jax', got {backend!r}")
    for r0 in range(0, n, block):
        r1 = min(n, r0 + block)
        for c0, c1, blocks in rows(r0, r1):
            for L, K in blocks.items():
                out[L][r0:r1, c0:c1] = K
                if c0 != r0:
                    out[L][c0:c1, r0:r1] = K.T
    return out


def exact_conditioning(
    x,
    *,
    depths,
    activation="relu",
    trainable="all",
    block: int = 1024,
    rtol: float | None = None,
    atol: float | None = None,
    backend: str = "numpy",
    memory_limit: int | None = None,
) -> dict[int, Conditioning]:
    """Exact κ_eff of the infinite-width NTK of all rows of x, per depth (module docstring).

    One float64 ``eigvalsh`` per depth of the kernel built by ``blockwise_ntk``, overwritten in
    place. Memory 8n² bytes per depth, checked first.

    Args:
      x, depths, activation, trainable, block, backend: as ``blockwise_ntk``.
      rtol, atol: cutoff τ = max(atol, rtol·λ_max), default rtol = n·eps₆₄ (``conditioning``).
      memory_limit: bytes allowed (default: the available memory).

    Returns:
      {L: ``Conditioning``}.

    Raises:
      InsufficientMemoryError: the kernels do not fit (the message names the matrix-free route).
      TypeError, ValueError: bad data, depths or block; rtol or atol not a real number ≥ 0;
        kernel entries ‖x‖²/d outside float64's normal range.
    """
    import scipy.linalg

    where = "exact_conditioning"
    n = as_data(x, where, "x").shape[0]
    rtol, atol = resolve_tolerances(rtol, atol, n, where)
    kernels = _blockwise_ntk(x, depths, activation, trainable, block, backend, None, memory_limit,
                             where)
    out = {}
    for L in sorted(kernels):
        K = kernels.pop(L)
        # K is symmetric, so K.T is the same matrix in Fortran order: no copy is made.
        w = scipy.linalg.eigvalsh(K.T, overwrite_a=True, check_finite=False, driver="evr")
        del K
        out[L] = conditioning_from_eigenvalues(np.asarray(w, dtype=np.float64), np.dtype(np.float64), rtol, atol, where)
    return out


@dataclasses.dataclass(frozen=True)
class MatrixFreeConditioning:
    """Result of ``matrix_free_conditioning``.

    Attributes:
      n: number of inputs.
      lambda_max: largest eigenvalue (Lanczos).
      lambda_min_nonzero: smallest eigenvalue above ``cutoff`` (LOBPCG with deflation).
      kappa_eff: lambda_max / lambda_min_nonzero.
      cutoff: τ = max(atol, rtol·λ_max).
      null_dimension: number of directions deflated as null (λ ≤ τ).
      matvecs: kernel passes used (a pass multiplies K by a block of vectors).
      converged: whether the residual met ``lobpcg_tol``.
      residual: ‖Kv − λv‖/λ_max of the returned smallest pair (unit v); for symmetric K some
        eigenvalue lies within residual·λ_max of lambda_min_nonzero (a rigorous error bound).
      method: "lanczos+lobpcg", or "feature-space" for linear nets (exact).
      seconds: wall time.
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


class _KernelOperator:
    """K·V for the infinite-width NTK without storing K: one blockwise pass per product."""

    def __init__(self, xh, norms, d, act, depth, layers, block, x=None):
        self.xh, self.norms, self.d, self.act, self.x = xh, norms, d, act, x
        self.depth, self.layers, self.block = depth, layers, block
        self.n = xh.shape[0]
        self.passes = 0

    def blocks(self):
        n, b = self.n, self.block
        for r0 in range(0, n, b):
            r1 = min(n, r0 + b)
            for c0 in range(r0, n, b):
                c1 = min(n, c0 + b)
                K = numpy_kernel_blocks(self.xh, self.norms, self.d, r0, r1, c0, c1, self.act,
                                         [self.depth], self.layers, self.x)[self.depth]
                yield r0, r1, c0, c1, K

    def matmat(self, V):
        V = np.asarray(V, dtype=np.float64)
        vec = V.ndim == 1
        V = V.reshape(self.n, -1)
        out = np.zeros_like(V)
        for r0, r1, c0, c1, K in self.blocks():
            out[r0:r1] += K @ V[c0:c1]
            if c0 != r0:
                out[c0:c1] += K.T @ V[r0:r1]
        self.passes += 1
        return out.ravel() if vec else out

    def jacobi(self, floor):
        """Block-Jacobi preconditioner: V ↦ pinv(K_II) V_I per diagonal block (eigenvalues ≥ floor)."""
        n, b = self.n, self.block
        factors = []
        for r0 in range(0, n, b):
            r1 = min(n, r0 + b)
            K = numpy_kernel_blocks(self.xh, self.norms, self.d, r0, r1, r0, r1, self.act,
                                     [self.depth], self.layers, self.x)[self.depth]
            w, Q = np.linalg.eigh(K)
            factors.append((r0, r1, Q, 1.0 / np.maximum(w, floor)))

        def apply(V):
            V = np.asarray(V, dtype=np.float64)
            out = np.empty_like(V)
            for r0, r1, Q, inv in factors:
                out[r0:r1] = Q @ (inv[:, None] * (Q.T @ V[r0:r1])) if V.ndim == 2 else Q @ (inv * (Q.T @ V[r0:r1]))
            return out

        return apply


def matrix_free_conditioning(
    x,
    *,
    depth: int,
    activation="relu",
    trainable="all",
    block: int = 1024,
    k: int = 8,
    rtol: float | None = None,
    atol: float | None = None,
    lanczos_tol: float = 1e-10,
    lobpcg_tol: float = 1e-8,
    maxiter: int = 300,
    null_space=None,
    max_deflations: int = 8,
    seed: int = 0,
) -> MatrixFreeConditioning:
    """κ_eff of the infinite-width NTK of all rows of x without storing the kernel.

    Lanczos for λ_max, LOBPCG with block-Jacobi preconditioning and null-space deflation for the
    smallest eigenvalue above τ (module docstring for the tolerances). Memory O(n·b + n·d).

    Args:
      x: (n, d) inputs without zero rows.
      depth, activation, trainable: as in ``infinite_ntk``.
      block: block size b of the kernel passes and of the preconditioner.
      k: LOBPCG block size (vectors iterated together).
      rtol, atol: cutoff τ = max(atol, rtol·λ_max); default rtol = n·eps₆₄, as the exact route.
      lanczos_tol: ARPACK relative tolerance on λ_max.
      lobpcg_tol: LOBPCG stops when all residual norms ≤ lobpcg_tol·λ_max.
      maxiter: LOBPCG iterations per round.
      null_space: optional (n, m) basis of a known null space, deflated from the start.
      max_deflations: rounds of LOBPCG restarted after deflating null directions.
      seed: seed of the random starting block.

    Returns:
      ``MatrixFreeConditioning``.
    """
    import scipy.sparse.linalg as sla

    where = "matrix_free_conditioning"
    start = time.perf_counter()
    xh, norms, d, act, depths, layers, block, x = _prepare(x, [depth], activation, trainable, block, where)
    n = xh.shape[0]
    rtol, atol = resolve_tolerances(rtol, atol, n, where)
    if act.is_linear:
        return _linear_feature_space(xh, norms, d, depths[0], layers, rtol, atol, start)
    if not 1 <= k < n // 2:
        raise ValueError(f"{where}: expected 1 <= k < n/2 = {n // 2}, got k = {k}")
    op = _KernelOperator(xh, norms, d, act, depths[0], layers, block, x)
    A = sla.LinearOperator((n, n), matvec=op.matmat, matmat=op.matmat, dtype=np.float64)
    rng = np.random.default_rng(seed)
    lam_max = float(sla.eigsh(A, k=1, which="LA", tol=lanczos_tol,
                              v0=rng.standard_normal(n), return_eigenvectors=False)[0])
    cutoff = max(atol, rtol * lam_max)
    precond = op.jacobi(floor=max(cutoff, 1e-10 * lam_max))  # bounded: null directions of blocks
    M = sla.LinearOperator((n, n), matvec=precond, matmat=precond, dtype=np.float64)
    Y = None if null_space is None else np.linalg.qr(np.asarray(null_space, dtype=np.float64))[0]
    lam_min, converged, residual = np.nan, False, np.inf
    for _ in range(max_deflations + 1):
        X0 = rng.standard_normal((n, k))
        with warnings.catch_warnings():  # non-convergence is reported through ``residual``
            warnings.simplefilter("ignore", UserWarning)
            w, V = sla.lobpcg(A, X0, M=M, Y=Y, tol=lobpcg_tol * lam_max, maxiter=maxiter,
                              largest=False)
        order = np.argsort(w)
        w, V = w[order], V[:, order]
        null = w <= cutoff
        if not np.any(null):
            v = V[:, 0] / np.linalg.norm(V[:, 0])
            lam_min = float(v @ op.matmat(v))  # Rayleigh quotient, and its residual:
            residual = float(np.linalg.norm(op.matmat(v) - lam_min * v)) / lam_max
            converged = residual <= lobpcg_tol
            break
        Y = V[:, null] if Y is None else np.linalg.qr(np.hstack([Y, V[:, null]]))[0]
    else:
        raise ValueError(
            f"{where}: null space not exhausted after {max_deflations} deflation rounds "
            f"({0 if Y is None else Y.shape[1]} directions); pass null_space= or a larger max_deflations"
        )
    return MatrixFreeConditioning(
        n=n, lambda_max=lam_max, lambda_min_nonzero=lam_min, kappa_eff=lam_max / lam_min,
        cutoff=cutoff, null_dimension=0 if Y is None else Y.shape[1], matvecs=op.passes,
        converged=bool(converged), residual=residual, method="lanczos+lobpcg",
        seconds=time.perf_counter() - start,
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
