"""The kernel tiles of the large-n routes: the n × n infinite-width NTK in b × b tiles.

The n × n kernel is computed in b × b tiles of its upper triangle (``kernel_tile``): one Gram
GEMM per tile, then per cache-sized row chunk the input geometry of
``ntkcond.infinite.geometry.block_geometry`` (exact from the data within 0.1 rad of 0 and π,
as ``infinite_ntk``) and eq. (2) of ``ntkcond.infinite.kernels`` by
``ntkcond.infinite.recursion.recursion`` (its kernel-only state: the first layer in place, the
later ones in the compiled loop of ``ntkcond.infinite.chain_loops``, ~5–10 ns an entry and
layer). These are the functions ``infinite_ntk``
calls on the whole matrix: the engine only tiles, schedules and reduces. The tiles run on
worker threads (``Tiles``; ``_core.threads``), BLAS at one thread each.

Used by ``scale.conditioning`` (the exact route: tiles mirrored into the kernel) and
``scale.matrix_free`` (one pass over the tiles per product K·V).
"""
from __future__ import annotations

import concurrent.futures

import numpy as np

from .._core.checks import as_block, as_data, as_int, sweep_layers
from .._core.threads import blas_threads, single_threaded_blas
from ..infinite.engine import sweep
from ..infinite.geometry import block_geometry, normalised_rows
from ..network import resolve_mlp

__all__ = [
    "CHUNK_ENTRIES",
    "Tiles",
    "check_kernel_range",
    "kernel_tile",
    "prepare",
    "resolve_workers",
]

#: Entries per elementwise chunk of a tile: 8 arrays of them stay in a core's L2 cache.
CHUNK_ENTRIES = 1 << 15


def kernel_tile(xh, norms, d, r0, r1, c0, c1, net, depths, layers, x=None):
    """{L: K[r0:r1, c0:c1]} of the infinite-width NTK for every depth: one Gram GEMM for the
    tile, then, row chunk by row chunk, the geometry of ``infinite.geometry.block_geometry``
    and the kernel of ``infinite.engine.sweep`` of the net — the functions ``infinite_ntk`` calls
    on the whole matrix, so the entries are the same to the last bit where the Gram products
    round the same. ``x``: the rows xh was normalised from (pairs near 0 or π exact for them)."""
    ncols = c1 - c0
    out = {L: np.empty((r1 - r0, ncols)) for L in depths}
    step = max(1, CHUNK_ENTRIES // max(ncols, 1))
    gram = np.clip(xh[r0:r1] @ xh[c0:c1].T, -1.0, 1.0)  # one GEMM for the tile
    for s0 in range(r0, r1, step):
        s1 = min(r1, s0 + step)
        geometry = block_geometry(xh, xh, s0, s1, c0, c1, symmetric=True, x1=x,
                                  gram=gram[s0 - r0:s1 - r0], norms1=norms, norms2=norms, d=d)
        chunk = {L: out[L][s0 - r0:s1 - r0] for L in depths}
        for _ in sweep(geometry, net, depths, layers, out=chunk, overwrite=True):
            pass
    return out


class Tiles:
    """The upper-triangle b × b tiles of the kernel of (xh, norms), run on worker threads.

    ``cache_bytes``: tiles kept after their first computation, the first ones in row order
    until their float64 entries (all depths) would exceed it; later ``run`` calls reuse them
    instead of recomputing (same values: ``kernel_tile`` is deterministic). 0: none kept.
    ``share``: a ``scale.processes.Share``: process p of P keeps the tiles p, p + P, … only
    (so its workers' sums are those of workers p, p + P, … of one process of P·W workers).
    """

    def __init__(self, xh, norms, d, net, depths, layers, block, workers, cache_bytes: int = 0,
                 x=None, share=None):
        self.xh, self.norms, self.d, self.net, self.x = xh, norms, d, net, x
        self.depths, self.layers, self.block = list(depths), layers, block
        self.n = xh.shape[0]
        self.workers = max(1, int(workers))
        n, b = self.n, block
        self.tiles = [(r0, min(n, r0 + b), c0, min(n, c0 + b))
                      for r0 in range(0, n, b) for c0 in range(r0, n, b)]
        if share is not None:
            self.tiles = self.tiles[share.index::share.count]
        sizes = np.array([8 * (r1 - r0) * (c1 - c0) * len(self.depths)
                          for r0, r1, c0, c1 in self.tiles], dtype=np.int64)
        self.cached_tiles = int(np.searchsorted(np.cumsum(sizes), max(0, int(cache_bytes)), side="right"))
        self.cache_bytes = int(sizes[:self.cached_tiles].sum())
        self.cached_fraction = self.cache_bytes / int(sizes.sum()) if sizes.size else 0.0
        self._cache: list = [None] * self.cached_tiles

    def run(self, visit, make_state=lambda: None):
        """``visit(state, r0, r1, c0, c1, {L: K_tile})`` for every tile on the workers, worker
        w taking tiles w, w + W, w + 2W, … (a fixed split, so sums over a worker's tiles come
        out the same on every run); one ``make_state()`` per worker, returned in order."""
        count = max(1, min(self.workers, len(self.tiles)))  # no tiles (a process's share): one

        def worker(w):
            state = make_state()
            for i in range(w, len(self.tiles), count):
                tile = self.tiles[i]
                blocks = self._cache[i] if i < self.cached_tiles else None
                if blocks is None:
                    blocks = kernel_tile(self.xh, self.norms, self.d, *tile, self.net,
                                         self.depths, self.layers, self.x)
                    if i < self.cached_tiles:  # only worker w touches tile i: no lock needed
                        self._cache[i] = blocks
                visit(state, *tile, blocks)
            return state

        if count == 1:
            return [worker(0)]
        with single_threaded_blas(), concurrent.futures.ThreadPoolExecutor(count) as pool:
            return list(pool.map(worker, range(count)))


def resolve_workers(workers, where):
    """Worker threads for the tiles: the BLAS thread count unless given."""
    return blas_threads() if workers is None else as_int(workers, "workers", where, 1)


def check_kernel_range(norms, d, where):
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


def prepare(x, depths, activation, trainable, block, where, w_std=None, b_std=None,
            residual=None):
    """Validated inputs of both routes: (x, x̂, ‖x‖, d, net, depths, layers, block), x as
    float64 (``as_data``), the net (``ntkcond.network.MLPFamily``) built once here from
    ``activation``, ``w_std``, ``b_std``, ``residual`` (``resolve_mlp``)."""
    x = as_data(x, where, "x")
    net = resolve_mlp(activation, w_std, b_std, residual, where=where)
    depths, layers = sweep_layers(depths, trainable, where)
    xh, norms = normalised_rows(x, where, "x")
    check_kernel_range(norms, x.shape[1], where)
    net.check_variances(norms * norms / x.shape[1], max(depths), where)
    return x, xh, norms, x.shape[1], net, depths, layers, as_block(block, where, 1)
