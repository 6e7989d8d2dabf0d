"""The kernel tiles of the large-n routes: the n × n infinite-width NTK in b × b tiles.

The n × n kernel is computed in b × b tiles of its upper triangle (``kernel_tile``): one Gram
GEMM per tile and the input angles as ``infinite.geometry.unit_geometry`` takes them from it
(Kahan's formula within 0.1 rad of 0 and π, as ``infinite_ntk``), then eq. (2) of
``infinite`` by ``kernel_recursion``, the angle recursion of ``infinite._recursion`` carried
for the kernel alone. Per layer, from θ, cos θ, u = 1 − cos θ, v = 1 + cos θ and
sin θ = √(uv), with s = w_relu (sin θ − θ cos θ)/π:

    u' = u − s,   cos θ' = cos θ + s  (= w_lin cos θ + w_relu κ₁(θ)),   v' = v + s,
    θ' = atan2(√(u'v'), cos θ'),   T' = [layer trainable]·cos θ' + (1 − βθ)·T,

(w_lin + w_relu = 1, w_relu = (1 − α)²/(1 + α²), β = (1 − α)²/(π(1 + α²))): one sqrt and one
atan2 per layer (none after the last), no sin/cos, about 20 ns an entry at depth 3 against
300 for ``gradient_recursion`` (which also carries the terms the gradient *angles* need to full
relative precision; the kernel needs θ to absolute precision only, which the direct
sin θ − θ cos θ keeps). T agrees with ``gradient_recursion``'s to 5e-15 absolute up to depth
10 (tested). The elementwise work runs on cache-sized row chunks, the tiles on worker threads
(``Tiles``; ``_core.threads``), BLAS at one thread each.

Used by ``scale.conditioning`` (the exact route: tiles mirrored into the kernel) and
``scale.matrix_free`` (one pass over the tiles per product K·V).
"""
from __future__ import annotations

import concurrent.futures

import numpy as np

from .._core.checks import as_block, as_data, as_int, sweep_layers
from .._core.threads import blas_threads, single_threaded_blas
from ..activations import parse_activation
from ..infinite._recursion import angle_from, derivative_slope
from ..infinite.geometry import kahan_angles, needs_refinement, normalised_rows

__all__ = [
    "CHUNK_ENTRIES",
    "Tiles",
    "check_kernel_range",
    "kernel_recursion",
    "kernel_tile",
    "prepare",
    "resolve_workers",
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
        c += s  # cos θ' = w_lin cos θ + w_relu κ₁(θ)
        if k + 1 < depths[-1]:  # θ' is needed by a next layer only
            u -= s
            np.maximum(u, 0.0, out=u)  # 1 − cos θ' ≥ 0 (rounding)
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


class Tiles:
    """The upper-triangle b × b tiles of the kernel of (xh, norms), run on worker threads.

    ``cache_bytes``: tiles kept after their first computation, the first ones in row order
    until their float64 entries (all depths) would exceed it; later ``run`` calls reuse them
    instead of recomputing (same values: ``kernel_tile`` is deterministic). 0: none kept.
    ``share``: a ``scale.processes.Share``: process p of P keeps the tiles p, p + P, … only
    (so its workers' sums are those of workers p, p + P, … of one process of P·W workers).
    """

    def __init__(self, xh, norms, d, act, depths, layers, block, workers, cache_bytes: int = 0,
                 share=None):
        self.xh, self.norms, self.d, self.act = xh, norms, d, act
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
                    blocks = kernel_tile(self.xh, self.norms, self.d, *tile, self.act,
                                         self.depths, self.layers)
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


def prepare(x, depths, activation, trainable, block, where):
    """Validated inputs of both routes: (x̂, ‖x‖, d, activation, depths, layers, block)."""
    x = as_data(x, where, "x")
    act = parse_activation(activation)
    depths, layers = sweep_layers(depths, trainable, where)
    xh, norms = normalised_rows(x, where, "x")
    check_kernel_range(norms, x.shape[1], where)
    return xh, norms, x.shape[1], act, depths, layers, as_block(block, where, 1)
