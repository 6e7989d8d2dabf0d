"""Blockwise kernels and angles on every JAX device, through ``jax.sharding`` and ``shard_map``.

One block row of pairs (b rows × the columns right of them) is cut into chunks of D·b columns,
D the number of devices; each chunk is laid out over a 1-D device mesh ("d") with
``NamedSharding(mesh, P("d"))``, every device computing its b × b block with the same
recursion as the numpy path (``ntkcond.infinite.recursion.recursion`` with ``xp=jax.numpy``,
under ``jax.jit``), and returning its block minima, or its kernel block. No home-made distribution layer:
XLA places and runs the blocks; the host merges a few numbers per device.

It runs unchanged on one CPU, several GPUs or a TPU slice:

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python scripts/min_angle.py ...  # 4 CPU devices
    python scripts/min_angle.py --backend jax ...                                       # all GPUs/TPUs

Pairs within 0.1 rad of 0 or π are flagged on the device (up to ``_REFINE_CAPACITY`` per block)
and recomputed on the host in float64, exactly from the original rows
(``ntkcond.infinite.geometry.pair_list_geometry``), with the numpy recursion, as in
``ntkcond.infinite.kernels``; a block with more flagged pairs is recomputed on the host whole.

The pairs route of ``streaming_smallest_angles`` (``ShardedExtremeBlocks``) needs only the
Gram blocks: each device returns its block's max/min cosine over pairs i < j and the pairs
within the screening margin of them (``ntkcond.infinite.extremes``), rechecked on the host.

float64 is scoped with a context manager (``x64``), never switched on globally.
"""
from __future__ import annotations

import functools

import numpy as np

from .._core.x64 import x64
from ..infinite.geometry import REFINE_WITHIN, pair_list_geometry
from ..infinite.engine import sweep
from ..infinite.recursion import PairGeometry, angle_from
from .blocks import INPUT, merge_candidates, numpy_angle_block, numpy_kernel_blocks
from .processes import current_share

__all__ = ["device_mesh"]

_REFINE_CAPACITY = 4096  # flagged pairs per device block handed to the host




def _shard_map():
    try:
        from jax import shard_map  # jax ≥ 0.7
    except ImportError:
        from jax.experimental.shard_map import shard_map
    return shard_map


def _devices(devices, where: str):
    import jax

    available = jax.local_devices()  # this process's: other processes sweep other blocks
    if devices is None:
        return available
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        if not 1 <= devices <= len(available):
            raise ValueError(
                f"{where}: expected 1 <= devices <= {len(available)} (available JAX devices), got {devices}"
            )
        return available[: int(devices)]
    devices = list(devices)
    if not devices:
        raise ValueError(f"{where}: expected at least one device, got none")
    return devices


def device_mesh(devices=None):
    """A 1-D ``jax.sharding.Mesh`` named ("d",) over ``devices`` (default: all of this
    process's JAX devices; across processes the sweeps split their blocks, ``scale.processes``).

    Args:
      devices: None, a count (the first k devices) or a list of ``jax.Device``.
    """
    from jax.sharding import Mesh

    return Mesh(np.array(_devices(devices, "device_mesh")), ("d",))


class _MeshedRows:
    """The unit rows xh padded to whole device chunks, and the mesh they are sharded over.

    Sets n, mesh, n_devices, chunk (= devices × block columns per step), xpad (xh with zero
    rows up to (row blocks + devices) × block, so every column chunk is full), and the two
    shardings: columns split over the devices ("d") and replicated rows.
    """

    def __init__(self, xh, block, devices, dtype, where):
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        self.n = xh.shape[0]
        self.mesh = device_mesh(_devices(devices, where))
        self.n_devices = self.mesh.devices.size
        self.chunk = self.n_devices * block
        n_rows = -(-self.n // block)
        self.xpad = np.zeros(((n_rows + self.n_devices) * block, xh.shape[1]), dtype=dtype)
        self.xpad[: self.n] = xh
        self.col_sharding = NamedSharding(self.mesh, P("d"))
        self.replicated = NamedSharding(self.mesh, P())
        self.share = current_share()

    def chunk_starts(self, r0):
        """First columns of the device chunks of the block row at r0 that this process
        sweeps (all of them alone; ``Share.span`` of them across processes)."""
        lo, hi = self.share.span(r0, self.n, self.chunk)
        return range(lo, hi, self.chunk)


class ShardedAngleBlocks(_MeshedRows):
    """Block-row minima of ``blocks.AnglePlan`` targets, sharded over a device mesh."""

    def __init__(self, xh, block, plan, *, devices=None, dtype="float64", where="sharding", x=None):
        import jax
        from jax.sharding import PartitionSpec as P

        self.xh, self.block, self.plan, self.where = xh, block, plan, where
        self.x = x  # the rows xh was normalised from: flagged pairs are exact from them
        super().__init__(xh, block, devices, dtype, where)
        self.dtype = dtype
        with x64():
            self.fn = jax.jit(_shard_map()(
                functools.partial(_device_block, n=self.n, plan=plan),
                mesh=self.mesh,
                in_specs=(P(), P("d"), P(), P()),
                out_specs=(P("d"),) * 6,
            ))

    def row(self, I):
        import jax

        b, n = self.block, self.n
        r0 = I * b
        out = []
        with x64():
            xr = jax.device_put(self.xpad[r0 : r0 + b], self.replicated)
            for c0 in self.chunk_starts(r0):
                xc = jax.device_put(self.xpad[c0 : c0 + self.chunk], self.col_sharding)
                res = self.fn(xr, xc, np.int64(r0), np.int64(c0))
                res = [np.asarray(a) for a in jax.device_get(res)]
                for dev in range(self.n_devices):
                    out.append(self._candidates(r0, c0 + dev * b, [a[dev] for a in res]))
        return out

    def _candidates(self, r0, c0, res):
        """Host side of one device block: targets' minima plus the refined (flagged) pairs."""

        ks, keys, first, second, flagged, count = res
        b, n = self.block, self.n
        if count > _REFINE_CAPACITY:  # too many near-parallel pairs: the whole block on the host
            return numpy_angle_block(self.xh, r0, min(n, r0 + b), c0, min(n, c0 + b), self.plan, self.x)
        cand = {}
        for t, key in enumerate(self.plan.targets):
            if not np.isfinite(keys[t]):
                continue
            i, j = divmod(int(ks[t]), b)
            value = float(first[t]) if key == INPUT else float(angle_from(first[t], second[t]))
            cand[key] = (value, r0 + i, c0 + j)
        if count:
            i, j = np.divmod(flagged[:count].astype(np.int64), b)
            rows, cols = r0 + i, c0 + j
            _merge_refined(cand, self.xh, rows, cols, self.plan, self.x)
        return cand


def _merge_refined(cand, xh, rows, cols, plan, x=None):
    """Exact angles of flagged pairs (from the rows x when given, else Kahan on the unit rows;
    ``ntkcond.infinite.geometry.kahan_angles``) and the numpy recursion, merged into ``cand``."""

    geometry = pair_list_geometry(xh, rows, cols, x)

    def best_of(values):
        k = np.lexsort((cols, rows, values))[0]  # smallest value, then row-major first
        return float(values[k]), int(rows[k]), int(cols[k])

    found = {INPUT: best_of(geometry.angle)}
    for net in plan.nonlinear:
        for L, _, R, Z in sweep(geometry, net, plan.depths, plan.layers, kernel=False,
                                angles=True):
            found[(net.name, L)] = best_of(angle_from(R, Z))
    merge_candidates(cand, found)


def _device_block(xr, xc, r0, c0, *, n, plan):
    """One device's b × b block: minima per target, in the layout ``out_specs`` stacks."""
    import jax
    import jax.numpy as jnp

    b, bl = xr.shape[0], xc.shape[0]
    cols = c0 + jax.lax.axis_index("d") * bl + jnp.arange(bl)
    rows = r0 + jnp.arange(b)
    valid = (rows[:, None] < cols[None, :]) & (cols[None, :] < n)
    cos = jnp.clip(jnp.matmul(xr, xc.T, precision=jax.lax.Precision.HIGHEST), -1.0, 1.0)
    angle = angle_from(1.0 - cos, 1.0 + cos, jnp)
    flagged = valid & ((angle < REFINE_WITHIN) | (angle > np.pi - REFINE_WITHIN))
    ok = valid & ~flagged
    ks, keys, first, second = [], [], [], []

    def pick(key_values, a, c):
        masked = jnp.where(ok, key_values, jnp.inf).ravel()
        k = jnp.argmin(masked)
        ks.append(k)
        keys.append(masked[k])
        first.append(a.ravel()[k])
        second.append(c.ravel()[k])

    pick(angle, angle, angle)
    geometry = PairGeometry(angle, cos)
    for net in plan.nonlinear:
        for _, _, R, Z in sweep(geometry, net, plan.depths, plan.layers, kernel=False,
                                angles=True, xp=jnp):
            pick(R / Z, R, Z)
    (idx,) = jnp.nonzero(flagged.ravel(), size=_REFINE_CAPACITY, fill_value=0)
    count = jnp.sum(flagged)
    stack = lambda v: jnp.stack(v)[None]  # noqa: E731
    return stack(ks), stack(keys), stack(first), stack(second), idx[None], count[None]


class ShardedExtremeBlocks(_MeshedRows):
    """Block rows of screened cosines for ``ExtremeSearch`` (the pairs route), sharded.

    Each device computes its b × b block of x̂x̂ᵀ under ``jax.jit`` (``dtype`` float64, or
    float32 at HIGHEST matmul precision), the block's largest and smallest cosine over pairs
    i < j, and the pairs within the search's margin of max(running, block) extremes (up to
    ``_REFINE_CAPACITY``; a block with more is recomputed on the host in float64). The host
    merges them into the search, which rechecks candidates exactly in float64.
    """

    def __init__(self, xh, block, search, *, devices=None, dtype="float64", where="sharding"):
        import jax
        from jax.sharding import PartitionSpec as P

        self.xh, self.block, self.search = xh, block, search
        super().__init__(xh, block, devices, dtype, where)
        with x64():
            self.fn = jax.jit(_shard_map()(
                functools.partial(_device_extremes, n=self.n, margin=search.margin,
                                  capacity=_REFINE_CAPACITY),
                mesh=self.mesh,
                in_specs=(P(), P("d"), P(), P(), P(), P()),
                out_specs=(P("d"),) * 8,
            ))

    def row(self, I):
        import jax

        b, n, search = self.block, self.n, self.search
        r0 = I * b
        with x64():
            xr = jax.device_put(self.xpad[r0 : r0 + b], self.replicated)
            for c0 in self.chunk_starts(r0):
                xc = jax.device_put(self.xpad[c0 : c0 + self.chunk], self.col_sharding)
                res = self.fn(xr, xc, np.int64(r0), np.int64(c0), np.float64(search.hi),
                              np.float64(search.lo))
                bmax, bmin, k_hi, v_hi, n_hi, k_lo, v_lo, n_lo = (
                    np.asarray(a) for a in jax.device_get(res))
                for dev in range(self.n_devices):
                    cd = c0 + dev * b
                    if cd >= n:
                        break
                    if max(n_hi[dev], n_lo[dev]) > _REFINE_CAPACITY:  # the block on the host
                        r1, c1 = min(n, r0 + b), min(n, cd + b)
                        search.add_block(self.xh[r0:r1] @ self.xh[cd:c1].T, r0, cd)
                        continue
                    i_hi, j_hi = np.divmod(k_hi[dev, : n_hi[dev]].astype(np.int64), b)
                    i_lo, j_lo = np.divmod(k_lo[dev, : n_lo[dev]].astype(np.int64), b)
                    search.add_summary(bmax[dev], bmin[dev],
                                       r0 + i_hi, cd + j_hi, v_hi[dev, : n_hi[dev]],
                                       r0 + i_lo, cd + j_lo, v_lo[dev, : n_lo[dev]])


def _device_extremes(xr, xc, r0, c0, hi, lo, *, n, margin, capacity):
    """One device's b × b block of screened cosines: extremes and the pairs near them."""
    import jax
    import jax.numpy as jnp

    b, bl = xr.shape[0], xc.shape[0]
    cols = c0 + jax.lax.axis_index("d") * bl + jnp.arange(bl)
    rows = r0 + jnp.arange(b)
    valid = (rows[:, None] < cols[None, :]) & (cols[None, :] < n)
    G = jnp.matmul(xr, xc.T, precision=jax.lax.Precision.HIGHEST).astype(jnp.float64)
    bmax = jnp.max(jnp.where(valid, G, -jnp.inf))
    bmin = jnp.min(jnp.where(valid, G, jnp.inf))
    near_hi = valid & (G >= jnp.maximum(hi, bmax) - margin)
    near_lo = valid & (G <= jnp.minimum(lo, bmin) + margin)
    (k_hi,) = jnp.nonzero(near_hi.ravel(), size=capacity, fill_value=0)
    (k_lo,) = jnp.nonzero(near_lo.ravel(), size=capacity, fill_value=0)
    flat = G.ravel()
    return (bmax[None], bmin[None], k_hi[None], flat[k_hi][None], jnp.sum(near_hi)[None],
            k_lo[None], flat[k_lo][None], jnp.sum(near_lo)[None])


class ShardedKernelBlocks(_MeshedRows):
    """NTK blocks of one block row for several depths, sharded over a device mesh (float64)."""

    def __init__(self, xh, norms, d, block, net, depths, layers, devices, where, x=None):
        import jax
        from jax.sharding import PartitionSpec as P

        self.xh, self.norms, self.d, self.block = xh, norms, d, block
        self.x = x  # the rows xh was normalised from: flagged pairs are exact from them
        self.net, self.depths, self.layers = net, depths, layers
        super().__init__(xh, block, devices, np.float64, where)
        with x64():
            self.fn = jax.jit(_shard_map()(
                functools.partial(_device_kernel_block, n=self.n, net=net, depths=depths, layers=layers),
                mesh=self.mesh,
                in_specs=(P(), P("d"), P(), P()),
                out_specs=(P("d"),) * 3,
            ))

    def row(self, r0, r1):
        """Yields (c0, c1, {L: K[r0:r1, c0:c1]}) for the column blocks c0 ≥ r0."""
        import jax


        b, n = self.block, self.n
        with x64():
            xr = jax.device_put(self.xpad[r0 : r0 + b], self.replicated)
            for g0 in self.chunk_starts(r0):
                xc = jax.device_put(self.xpad[g0 : g0 + self.chunk], self.col_sharding)
                T, flagged, count = (np.asarray(a) for a in jax.device_get(self.fn(xr, xc, np.int64(r0), np.int64(g0))))
                for dev in range(self.n_devices):
                    c0 = g0 + dev * b
                    if c0 >= n:
                        break
                    c1 = min(n, c0 + b)
                    if count[dev] > _REFINE_CAPACITY:
                        yield c0, c1, numpy_kernel_blocks(self.xh, self.norms, self.d, r0, r1, c0, c1,
                                                           self.net, self.depths, self.layers, self.x)
                        continue
                    blocks = {L: T[dev, t, : r1 - r0, : c1 - c0].copy() for t, L in enumerate(self.depths)}
                    if count[dev]:
                        i, j = np.divmod(flagged[dev, : count[dev]].astype(np.int64), b)
                        rows, cols = r0 + i, c0 + j
                        geometry = pair_list_geometry(self.xh, rows, cols, self.x)
                        for L, Tr, _, _ in sweep(geometry, self.net, self.depths, self.layers):
                            blocks[L][i, j] = Tr
                    scale = np.outer(self.norms[r0:r1], self.norms[c0:c1]) / self.d
                    yield c0, c1, {L: scale * K for L, K in blocks.items()}


def _device_kernel_block(xr, xc, r0, c0, *, n, net, depths, layers):
    """One device's block of the normalised NTK T for every depth, and its flagged pairs."""
    import jax
    import jax.numpy as jnp

    b, bl = xr.shape[0], xc.shape[0]
    cols = c0 + jax.lax.axis_index("d") * bl + jnp.arange(bl)
    rows = r0 + jnp.arange(b)
    valid = (rows[:, None] < n) & (cols[None, :] < n)
    cos = jnp.clip(jnp.matmul(xr, xc.T, precision=jax.lax.Precision.HIGHEST), -1.0, 1.0)
    angle = angle_from(1.0 - cos, 1.0 + cos, jnp)
    flagged = valid & ((angle < REFINE_WITHIN) | (angle > np.pi - REFINE_WITHIN))
    T = jnp.stack([Tl for _, Tl, _, _ in sweep(PairGeometry(angle, cos), net, depths, layers,
                                                  xp=jnp)])
    (idx,) = jnp.nonzero(flagged.ravel(), size=_REFINE_CAPACITY, fill_value=0)
    return T[None], idx[None], jnp.sum(flagged)[None]
