"""κ_eff of infinite-width NTKs beyond one batch: an exact blockwise route and a matrix-free one.

Both routes compute the kernel in tiles (``scale.tiles``: one Gram GEMM per b × b tile of the
upper triangle and the kernel-only angle recursion, on worker threads).

Exact route (n up to ~10⁴ on a laptop). The tiles are mirrored into an exactly symmetric
n × n float64 kernel; one float64 ``eigvalsh`` (LAPACK ``syevr``, eigenvalues only,
overwriting the kernel) gives the whole spectrum and ``spectrum`` eq. (1):

    κ_eff = λ_max / min{λᵢ : λᵢ > τ},   τ = max(atol, rtol·λ_max),  rtol = n·eps₆₄.

Memory: 8n² bytes per depth (800 MB at n = 10⁴), checked against the available memory
*before* anything is allocated; too little raises ``InsufficientMemoryError`` pointing to the
matrix-free route. The build is a small part of the time (``timings``): MNIST, n = 10⁴, depth 3,
see ``benchmarks/results/kappa_large_mnist.md``.

Matrix-free route (any n; memory O(n·(b + r + k)) plus a tile cache of at most half the
available memory by default): ``scale.matrix_free``, re-exported here — Nyström-preconditioned
LOBPCG on products K·V, one pass over the tiles each (kept tiles only multiplied). MNIST,
n = 10⁴, depth 3: 38.7 s against the exact route's 54 s (``cache=0``: 107 s).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from .._core.checks import as_data
from .._core.memory import as_memory_limit, check_memory
from ..network import NetFamily
from ..spectrum import Conditioning, conditioning_from_eigenvalues, resolve_tolerances
from .matrix_free import MatrixFreeConditioning, default_sketch, matrix_free_conditioning
from .processes import current_share, exchange_tiles
from .tiles import Tiles, kernel_tile, prepare, resolve_workers

__all__ = [
    "MatrixFreeConditioning",
    "blockwise_ntk",
    "default_sketch",
    "exact_conditioning",
    "kernel_tile",
    "matrix_free_conditioning",
]


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
    w_std=None,
    b_std=None,
    residual=None,
) -> dict[int, np.ndarray]:
    """Infinite-width NTKs (n × n, float64) for several depths, built block by block.

    The kernel of ``infinite_ntk(x, depth=L, ...)`` (``ntkcond.infinite.kernels`` eq. (2)),
    computed on the upper-triangle tiles by the same geometry and recursion
    (``ntkcond.scale.tiles``) and mirrored (exactly symmetric); all depths share one Gram tile
    and one pass of the recursion. numpy backend: equal to ``infinite_ntk`` bit for bit where
    the blocked Gram products round as the whole one (n ≤ ``block``: one tile), else to the
    rounding of those products; jax backend: the same formula in jax.numpy (XLA's sqrt/atan2
    differ in the last bits: ≲ 1e-14 of max|K|).

    Args:
      x: (n, d) inputs without zero rows, or NHWC images (n, H, W, C) for a convolutional
        net.
      depths: iterable of depths L ≥ 0.
      activation, trainable: as in ``infinite_ntk``; ``activation`` may be a net object
        (``ntkcond.network.MLPFamily``, or a ``CNNFamily`` for images: its kernels by the
        compiled route, by blocks of rows, every depth in one pass; backend "numpy").
      block: tile size b.
      backend: "numpy" (tiles on ``workers`` threads), or "jax" to shard the blocks of each
        block row over JAX devices (``ntkcond.scale.sharded``; float64). Across the
        processes of JAX's multi-controller runtime each computes its share of the tiles and
        every process gets the whole kernel (``ntkcond.scale.processes``).
      devices: jax backend: None (all), a count, or a list of devices.
      memory_limit: bytes allowed (default: the available memory).
      workers: numpy backend: threads (default the BLAS thread count).
      w_std, b_std, residual: the general net of ``infinite_ntk`` (numpy backend only).

    Returns:
      {L: (n, n) float64 kernel}.

    Raises:
      InsufficientMemoryError: the kernels (8n² bytes per depth) do not fit.
    """
    return _blockwise_ntk(x, depths, activation, trainable, block, backend, devices, memory_limit,
                          workers, "blockwise_ntk", (w_std, b_std, residual))


def _blockwise_ntk(x, depths, activation, trainable, block, backend, devices, memory_limit,
                   workers, where, options=(None, None, None)):
    """``blockwise_ntk`` with the caller's name in its errors."""
    memory_limit = as_memory_limit(memory_limit, where)
    if isinstance(activation, NetFamily) and activation.takes_images:
        return _image_kernels(x, activation, depths, trainable, backend, memory_limit, where,
                              options)
    x, xh, norms, d, net, depths, layers, block = prepare(x, depths, activation, trainable, block,
                                                          where, *options)
    if backend == "jax" and not net.angle_chain:
        raise ValueError(f"{where}: nets with biases, residual blocks or activations outside the "
                         "leaky family run on backend 'numpy' only, got backend 'jax'")
    n = xh.shape[0]
    check_memory(8 * n * n * len(depths), f"{len(depths)} float64 kernel(s) of {n} x {n}",
                  memory_limit, where)
    if backend not in ("numpy", "jax"):
        raise ValueError(f"{where}: expected backend 'numpy' or 'jax', got {backend!r}")
    out = {L: np.empty((n, n)) for L in depths}
    share = current_share()  # across processes: each computes its tiles, then all are exchanged
    mine = []

    def place(r0, r1, c0, c1, blocks):
        for L, K in blocks.items():
            out[L][r0:r1, c0:c1] = K
            if c0 != r0:
                out[L][c0:c1, r0:r1] = K.T

    def place_own(_, r0, r1, c0, c1, blocks):
        place(r0, r1, c0, c1, blocks)
        if share.distributed:
            mine.append((r0, r1, c0, c1, blocks))

    if backend == "jax":
        from .sharded import ShardedKernelBlocks

        rows = ShardedKernelBlocks(xh, norms, d, block, net, depths, layers, devices, where, x).row
        for r0 in range(0, n, block):
            for c0, c1, blocks in rows(r0, min(n, r0 + block)):
                place_own(None, r0, min(n, r0 + block), c0, c1, blocks)
    else:
        Tiles(xh, norms, d, net, depths, layers, block, resolve_workers(workers, where), x=x,
              share=share).run(place_own)
    exchange_tiles(share, mine, place)
    return out


def _image_kernels(x, family, depths, trainable, backend, memory_limit, where, options):
    """{L: (n, n) NTK} of a convolutional net on NHWC images x: the compiled route by blocks
    of rows, every depth's read-out in one pass (``ntkcond.infinite.engine.sweep_images``);
    exactly symmetric (mirrored from the upper triangle)."""
    from ..infinite.kernels import sweep_images_of

    if backend != "numpy" or any(v is not None for v in options):
        raise ValueError(f"{where}: a convolutional net (CNNFamily, which carries its options) "
                         f"runs on backend 'numpy' without w_std/b_std/residual, got backend "
                         f"{backend!r} and options {options}")
    n = int(np.shape(x)[0])
    items = sweep_images_of(x, family, depths, trainable, where, angles=False)
    check_memory(8 * n * n * (len(set(depths)) + 2), f"{len(set(depths))} float64 kernel(s) of "
                 f"{n} x {n} and their angles", memory_limit, where)
    return {item.depth: item.ntk for item in items}


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
    w_std=None,
    b_std=None,
    residual=None,
) -> dict[int, Conditioning]:
    """Exact κ_eff of the infinite-width NTK of all rows of x, per depth (module docstring).

    One float64 ``eigvalsh`` per depth of the kernel built by ``blockwise_ntk``, overwritten in
    place. Memory 8n² bytes per depth, checked first.

    Args:
      x, depths, activation, trainable, block, backend, workers, w_std, b_std, residual: as
        ``blockwise_ntk``.
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
    if timings is not None and not isinstance(timings, dict):
        raise TypeError(f"{where}: expected timings as a dict to fill (or None), got "
                        f"{type(timings).__name__} {timings!r}")
    images = isinstance(activation, NetFamily) and activation.takes_images
    n = int(np.shape(x)[0]) if images else as_data(x, where, "x").shape[0]
    rtol, atol = resolve_tolerances(rtol, atol, n, where)
    start = time.perf_counter()
    kernels = _blockwise_ntk(x, depths, activation, trainable, block, backend, None, memory_limit,
                             workers, where, (w_std, b_std, residual))
    built = time.perf_counter()
    out = {}
    share = current_share()  # across processes: depth k's eigvalsh on process k mod P
    for k, L in enumerate(sorted(kernels)):
        K = kernels.pop(L)
        if k % share.count == share.index:
            # K is symmetric, so K.T is the same matrix in Fortran order: no copy is made.
            w = scipy.linalg.eigvalsh(K.T, overwrite_a=True, check_finite=False, driver="evr")
            out[L] = conditioning_from_eigenvalues(np.asarray(w, dtype=np.float64),
                                                   np.dtype(np.float64), rtol, atol, where)
        del K
    if share.distributed:  # Conditioning crosses as its fields (data, never objects)
        fields = {L: dataclasses.asdict(c) for L, c in out.items()}
        for part in share.allgather(fields):
            out.update({L: Conditioning(**f) for L, f in part.items()})
        out = dict(sorted(out.items()))
    if timings is not None:
        timings.update(build=built - start, eigvalsh=time.perf_counter() - built)
    return out
