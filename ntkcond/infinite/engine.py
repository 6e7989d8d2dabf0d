"""The one engine of ntkcond's infinite-width kernels: a network object (``ntkcond.network``)
evaluated on the input geometry of a block of pairs (``ntkcond.infinite.geometry``).

Every route — ``infinite_ntk``, ``infinite_nngp``, ``infinite_ntk_layers``,
``gradient_angles``, ``depth_sweep``, the tiles and blocks of ``ntkcond.scale`` and
``ntkcond.stax``'s ``kernel_fn`` — calls ``evaluate`` (one net), ``evaluate_family`` (an
``MLPFamily`` at one depth, without building its layers) or ``sweep`` (an ``MLPFamily`` at
many depths), which decide their path from what the object reports:

* a ``HomogeneousChain`` (bias-free Dense layers and positively homogeneous activations, in
  any spelling: the default net, ``w_std=√c``, ``w_std=1.5``, a stax stack mixing slopes)
  takes the fast angle recursion of ``ntkcond.infinite.recursion``: K = ‖x‖‖x′‖/d·G·T(θ₀);
* every other net takes the layer maps of ``ntkcond.network.layers`` on a ``PairState``:
  for homogeneous nets (no biases) from unit rows (q = 1, c = cos θ₀, D = 2 sin²(θ₀/2),
  exact for the data), times ‖x‖‖x′‖/d at the end — so the gap D never carries the norms'
  difference ½(‖x‖ − ‖x′‖)²/d, and near-duplicate pairs of unequal norm keep full relative
  precision in their angles; for nets with biases (whose kernels depend on the norms) from
  q = ‖x‖²/d, c = x·x′/d and D = ½(‖x‖ − ‖x′‖)²/d + ‖x‖‖x′‖/d·2 sin²(θ₀/2) (no
  cancellation).

Gradient angles come from the NTK block (A, B, C, G) as φ = 2 atan2(√(1 − cos φ),
√(1 + cos φ)) with 1 − cos φ = (G − ½(√A − √B)²)/√(AB) and 1 + cos φ = (√(AB) + C)/√(AB)
(``ntkcond.activations._bivariate.angle_terms``): relative precision ~eps for pairs of equal
norms (every homogeneous net), ~eps·|‖x‖ − ‖x′‖|/(‖x‖θ²) for nets with biases.

Kernels whose values leave float64's range raise ``KernelRangeError`` (a ValueError) naming
the depth; angles never do (the scales are carried apart from the blocks).

Depth costs what it must, and no more (issue 34): the angle recursion runs compiled
(``ntkcond.infinite.chain_loops``) and is bounded up front (``recursion.check_cost``); an
``MLPFamily``'s layer maps stop at the fixed point of its blocks and finish in closed form
(``ntkcond.network.fixed_point``), and where there is none within ``layer_budget`` blocks a
deeper depth is one ValueError naming the function, the depth that fits and the depth asked.
Measured, five rows at depth 10⁶ (one process, load ~3 on 2 cores): ReLU angles 0.6 s (was
112 s), erf/GELU 0.6–2.7 s and tanh ~4 s at w_std = 1.5 (were > 2 minutes).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._core.checks import MAX_PAIR_BLOCKS, QUADRATURE_WEIGHT, depth_budget
from ..activations._bivariate import angle_terms
from ..network import KernelRangeError, MLPFamily, PairState, homogeneous_chain
from ..network.layers import Serial
from .images import STATE_ARRAYS, diagonal_state, full_state, image_pair
from .recursion import ChainPlan, GainTable, PairGeometry, angle_from, recursion

__all__ = ["Evaluated", "chain_plan", "evaluate", "evaluate_family", "layer_budget",
           "evaluate_images", "sweep", "sweep_images",
           "input_state", "angle_terms_of", "KernelRangeError"]


def chain_plan(family: MLPFamily, top: int, layers) -> ChainPlan | None:
    """The ``ChainPlan`` of ``family`` for depths up to ``top`` if it is a plain bias-free
    homogeneous net (its layers form a ``HomogeneousChain`` at every depth), else None.

    G_L multiplies in the order of ``HomogeneousChain.gain``, so that ``evaluate`` of
    ``family.network(L)`` and this plan give the same kernel to the last bit.
    """
    if not (family.homogeneous and family.plain):
        return None
    act, m = family.act, family.act.second_moment
    hidden, readout = family.hidden_variance(), family.readout_variance()
    return ChainPlan((act,) * top, layers, GainTable.of(readout, hidden, m, top))


def _layer_set(trainable) -> frozenset | None:
    flags = list(trainable)
    return None if all(flags) else frozenset(i for i, t in enumerate(flags) if t)


def _is_unit(geometry: PairGeometry) -> bool:
    return geometry.norms1 is None


def input_state(geometry: PairGeometry, *, unit: bool, gaps: bool, angles: bool) -> PairState:
    """The ``PairState`` of the inputs (x·x′/d; module docstring): from unit rows (``unit``:
    q = 1, c = cos θ₀, D = 2 sin²(θ₀/2)) or from the norms; the NTK zero (no layer yet), its
    gap tracked with ``angles``; ``gaps``: D exact (else the cheap ½(q₁ + q₂) − c may follow)."""
    angle = np.asarray(geometry.angle)
    cos = np.asarray(geometry.cos)
    D1 = 2.0 * np.sin(0.5 * angle) ** 2  # 1 − cos θ₀ from the exact angle
    if unit or _is_unit(geometry):
        if angle.ndim == 2:
            q1, q2 = np.ones((angle.shape[0], 1)), np.ones((1, angle.shape[1]))
        else:
            q1 = q2 = np.ones(angle.shape)
        c, D = cos, D1
    else:
        r1 = np.asarray(geometry.norms1, dtype=np.float64)
        r2 = np.asarray(geometry.norms2, dtype=np.float64)
        d = geometry.d
        if angle.ndim == 2 and angle.shape == (r1.size, r2.size):  # a block: rows × columns
            r1c, r2r = r1[:, None], r2[None, :]
        else:  # a list of pairs: norms per pair
            r1c, r2r = r1.reshape(angle.shape), r2.reshape(angle.shape)
        with np.errstate(over="ignore", under="ignore"):
            scale = r1c * r2r / d
            dn = (r1c - r2r) / np.sqrt(d)
            D = 0.5 * dn * dn + scale * D1
            D = np.where(angle == 0, 0.5 * dn * dn, D)
            q1, q2, c = r1c * r1c / d, r2r * r2r / d, scale * cos
    zero = 0.0
    return PairState(q1, q2, c, D, zero, zero, zero, zero if angles else None,
                     exact_gaps=gaps or angles)


def angle_terms_of(s: PairState):
    """(1 − cos φ, 1 + cos φ) of the NTK block (A, B, C, G) (module docstring)."""
    _, um, up, _, _, _ = angle_terms(s.A, s.B, s.C, s.G)
    return um, up


def _scaled(block, scale, where: str):
    """‖x‖‖x′‖/d · block (unit-row evaluation), ``KernelRangeError`` out of float64's range."""
    if scale is None:
        return block
    with np.errstate(over="ignore", under="ignore"):
        out = scale * block
    if not np.all(np.isfinite(out)):
        raise KernelRangeError(f"{where} leaves float64's range (above 1.8e308)")
    return out


def _true(s: PairState, which: str, where: str, scale):
    block = s.ntk(where) if which == "ntk" else s.nngp(where)
    return _scaled(block, scale, where)


def _check_diagonal(s: PairState, which: str, where: str, scale):
    """``KernelRangeError`` where the diagonal underflows (the kernel is then 0 or subnormal:
    no float64 value represents it)."""
    d1, d2, e = (s.A, s.B, s.ntk_exp) if which == "ntk" else (s.q1, s.q2, s.nngp_exp)
    tiny = np.finfo(np.float64).tiny
    with np.errstate(over="ignore", under="ignore"):
        low = min(float(np.min(np.ldexp(np.asarray(d), e))) for d in (d1, d2))
        if scale is not None:
            low = low * float(np.min(scale)) if np.size(scale) else low
    if low < tiny:
        raise KernelRangeError(f"{where} leaves float64's range (below 2.2e-308)")


@dataclasses.dataclass(frozen=True)
class Evaluated:
    """What ``evaluate`` computed for a block: ``nngp``, ``ntk`` (true values, or None where not
    asked for) and the gradient angles' terms ``R`` = 1 − cos φ, ``Z`` = 1 + cos φ (scaled
    alike; None without ``angles``)."""

    nngp: object = None
    ntk: object = None
    R: object = None
    Z: object = None

    def angles(self):
        """φ = 2 atan2(√R, √Z), radians."""
        return angle_from(self.R, self.Z)


def evaluate(network, geometry: PairGeometry, *, nngp: bool = True, ntk: bool = True,
             angles: bool = False, overwrite: bool = False, where: str = "the kernel") -> Evaluated:
    """The kernels of the layer stack ``network`` on the pairs of ``geometry`` (module
    docstring): the fast angle recursion for a ``HomogeneousChain``, the layer maps otherwise.

    Raises:
      KernelRangeError: a kernel asked for leaves float64's range (``where`` names it).
    """
    chain = homogeneous_chain(network)
    if chain is not None:
        L = chain.depth
        plan = ChainPlan(chain.acts, _layer_set(chain.trainable), (None,) * L + (chain.gain(),))
        item = next(recursion(geometry, plan, [L], kernel=ntk, angles=angles, nngp=nngp,
                              overwrite=overwrite and not angles, where=where))
        return _chain_outputs(item, nngp, where)
    unit = network.homogeneous
    state = network.kernel(input_state(geometry, unit=unit, gaps=_needs_gaps(network),
                                       angles=angles))
    scale = geometry.scale() if unit and not _is_unit(geometry) else None
    return _outputs(state, np.shape(geometry.angle), nngp, ntk, angles, where, scale)


def evaluate_family(family: MLPFamily, depth: int, geometry: PairGeometry, layers=None, *,
                    nngp: bool = True, ntk: bool = True, angles: bool = False,
                    overwrite: bool = False, where: str = "the kernel") -> Evaluated:
    """``evaluate(family.network(depth, layers), geometry, …)`` without building the net's
    layers (a net of depth 10⁶ is two million objects): the plan of ``chain_plan`` for a
    plain bias-free homogeneous net, else ``MLPFamily.sweep_states`` at the one depth — the
    same layer maps in the same order, so the same values to the last bit.

    Raises:
      KernelRangeError: a kernel asked for leaves float64's range (``where`` names it).
    """
    plan = chain_plan(family, depth, layers)
    if plan is not None:
        item = next(recursion(geometry, plan, [depth], kernel=ntk, angles=angles, nngp=nngp,
                              overwrite=overwrite and not angles, where=where))
        return _chain_outputs(item, nngp, where)
    unit = family.homogeneous
    state0 = input_state(geometry, unit=unit, gaps=family.act.gaps_for_kernels, angles=angles)
    _, state = next(family.sweep_states(state0, [depth], layers,
                                        max_layers=layer_budget(family, geometry), where=where))
    scale = geometry.scale() if unit and not _is_unit(geometry) else None
    return _outputs(state, np.shape(geometry.angle), nngp, ntk, angles, where, scale)


def layer_budget(family: MLPFamily, geometry: PairGeometry) -> int:
    """Blocks the layer maps may run on ``geometry``'s pairs before a fixed point
    (``ntkcond._core.checks.MAX_PAIR_BLOCKS``; activations without closed forms weigh
    ``QUADRATURE_WEIGHT``)."""
    weight = 1 if family.act.closed_form else QUADRATURE_WEIGHT
    return depth_budget(weight * max(1, int(np.size(geometry.angle))), MAX_PAIR_BLOCKS)


def _chain_outputs(item, nngp, where) -> Evaluated:
    """The ``Evaluated`` of one item of ``recursion`` (range-checked kernels)."""
    K, R, Z = item[1:4]
    N = item[4] if nngp else None
    for block, name in ((K, "NTK"), (N, "NNGP")):
        if block is not None and not np.all(np.isfinite(block)):
            raise KernelRangeError(f"{where}: the {name} leaves float64's range (above "
                                   "1.8e308)")
    return Evaluated(N, K, R, Z)


def _needs_gaps(network) -> bool:
    """Some activation of the net needs exact gaps for its kernels alone."""
    return any(layer.act.gaps_for_kernels for layer in _nonlinearities(network))


def _outputs(state, shape, nngp, ntk, angles, where, scale=None) -> Evaluated:
    """The true kernels (range-checked) and angle terms of a network's output state."""
    out = {}
    for which, wanted in (("nngp", nngp), ("ntk", ntk)):
        if wanted:
            label = f"{where}: the {which.upper()}"
            _check_diagonal(state, which, label, scale)
            out[which] = np.broadcast_to(_true(state, which, label, scale), shape).copy()
    R = Z = None
    if angles:
        R, Z = (np.broadcast_to(a, shape) for a in angle_terms_of(state))
    return Evaluated(out.get("nngp"), out.get("ntk"), R, Z)


def evaluate_images(network, x1, x2=None, *, nngp: bool = True, ntk: bool = True,
                    angles: bool = False, where: str = "the kernel",
                    memory_limit=None) -> Evaluated:
    """The kernels of a convolutional net on NHWC images (n1, H, W, C) and (n2, H, W, C):
    ``ntkcond.infinite.images``' input state, per pixel where the net's read-out needs only
    the spatial diagonal (``Flatten``), per pixel pair where it pools (``needs_pixel_pairs``:
    then by blocks of image pairs that fit in memory, each block with its images'
    self-covariances; x2 None: the blocks of one triangle, mirrored).

    Raises:
      ValueError: images that are not (n, H, W, C) alike, a net without a read-out (its
        output still has pixels), a filter larger than a VALID image;
      InsufficientMemoryError: not even one image pair's pixel-pair state fits.
    """
    x1, x2 = image_pair(x1, x2, where)
    return _evaluate_images(network, x1, x2, nngp, ntk, angles, where, memory_limit)


def _evaluate_images(network, x1, x2, nngp, ntk, angles, where, memory_limit):
    """``evaluate_images`` on checked images."""
    fast = _conv_chain_route(network, x1, x2, nngp, ntk, angles, where, memory_limit)
    if fast is not None:
        return fast[0]
    gaps = _needs_gaps(network)
    if not network.needs_pixel_pairs:
        state = network.kernel(diagonal_state(x1, x2, angles=angles, gaps=gaps))
        return _outputs(_readout_checked(state, where), (len(x1), len(x1 if x2 is None else x2)),
                        nngp, ntk, angles, where)
    n1, n2 = len(x1), len(x1 if x2 is None else x2)
    block = _pair_block(x1.shape, max(n1, n2), where, memory_limit)
    out = {k: np.empty((n1, n2)) for k, w in (("nngp", nngp), ("ntk", ntk), ("R", angles),
                                              ("Z", angles)) if w}
    for r0 in range(0, n1, block):
        for c0 in range(r0 if x2 is None else 0, n2, block):
            a = x1[r0:r0 + block]
            same = x2 is None and c0 == r0
            b = None if same else (x1 if x2 is None else x2)[c0:c0 + block]
            state = network.kernel(full_state(a, b, angles=angles, where=where,
                                              memory_limit=memory_limit))
            part = _outputs(_readout_checked(state, where),
                            (len(a), len(a) if b is None else len(b)), nngp, ntk, angles, where)
            values = {"nngp": part.nngp, "ntk": part.ntk, "R": part.R, "Z": part.Z}
            for key in out:
                value = values[key]
                out[key][r0:r0 + len(a), c0:c0 + value.shape[1]] = value
                if x2 is None and not same:  # K(x′, x) = K(x, x′)
                    out[key][c0:c0 + value.shape[1], r0:r0 + len(a)] = value.T
    return Evaluated(out.get("nngp"), out.get("ntk"), out.get("R"), out.get("Z"))


def sweep_images(x, family, depths, *, x2=None, nngp: bool = False, angles: bool = True,
                 where: str = "the sweep"):
    """(L, ``Evaluated`` of ``family.network(L)`` on images x (n1, H, W, C) and x2 (n2, H, W,
    C); x2 None: x itself, the kernel exactly symmetric) for the depths (ascending, checked):
    one pass of the compiled route over the deepest net's chain with the read-out taken after
    every depth's last activation (stage 2L: each depth's kernel is its own net's, as
    ``evaluate_images`` computes it), else (nets it does not take) ``evaluate_images`` per
    depth."""
    x, x2 = image_pair(x, x2, where)
    top = family.network(max(depths))
    out = _conv_chain_route(top, x, x2, nngp, True, angles, where,
                            stages=[2 * L for L in depths])
    if out is not None:
        yield from zip(depths, out)
        return
    for L in depths:
        yield L, _evaluate_images(family.network(L), x, x2, nngp, True, angles, where, None)


#: Bytes of read-out sums one block of rows of the compiled route may hold (the rows of a
#: block × every column × stages × 4 float64).
CHAIN_BLOCK_BYTES = 1 << 28


def _conv_chain_route(network, x1, x2, nngp, ntk, angles, where, memory_limit=None,
                      stages=None):
    """The compiled route (``ntkcond.infinite.conv_chain``) where it takes the net and its
    per-image diagonals stay in range, else None: one ``Evaluated`` per stage of ``stages``
    (default: the chain's end; the net after the read-out the same at every stage), built by
    blocks of rows (``CHAIN_BLOCK_BYTES`` of read-out sums at a time); x2 None: the pairs
    j ≥ i of each block, the kernel mirrored from its upper triangle (exactly symmetric)."""
    from .conv_chain import LANES, ConvChain  # numba: compiled on first use

    plan = ConvChain.of(network, x1.shape[1:3])
    if plan is None:
        return None
    from .._core.memory import check_memory

    check_memory(plan.image_bytes(x1.shape, columns=x2 is None)
                 + (0 if x2 is None else plan.image_bytes(x2.shape, columns=True)),
                 f"the per-pixel variances of {len(x1) + (0 if x2 is None else len(x2))} "
                 f"{x1.shape[1]} x {x1.shape[2]} images at {plan.stages} stages and their roots",
                 memory_limit, where, alternative="pass fewer images (the kernel of a subset, "
                 "or of blocks of rows and columns through x2)")
    side1 = plan.prepare(x1, columns=x2 is None)
    side2 = side1 if x2 is None else plan.prepare(x2, columns=True)
    if not plan.in_range(side1.q, side1.a, side2.q, side2.a):
        return None
    if plan.pools:
        _check_pair_buffers(plan, x1.shape, where, memory_limit)
    n1, n2 = len(side1.x), len(side2.x)
    stages = (plan.stages - 1,) if stages is None else tuple(stages)
    wanted = [k for k, w in (("nngp", nngp), ("ntk", ntk), ("R", angles), ("Z", angles)) if w]
    out = [{k: np.empty((n1, n2)) for k in wanted} for _ in stages]
    rest = Serial(plan.rest)
    rows = max(1, min(n1, CHAIN_BLOCK_BYTES // (32 * n2 * len(stages))))
    if rows < n1:  # whole groups of column images: a block's columns keep their layout
        rows = max(LANES, rows - rows % LANES)
    whole = x2 is None and rows >= n1
    sums = None
    if whole:  # one tile: the selves are its diagonal (not computed twice)
        sums = plan.tile(side1, side1, upper=True, angles=angles, stages=stages)
        selves1 = selves2 = np.ascontiguousarray(sums[np.arange(n1), np.arange(n1)])
        if not plan.pools:  # Flatten's selves: the per-image diagonals (exactly, D = G = 0)
            selves1 = selves2 = plan.selves(side1, angles=angles, stages=stages)
    else:
        selves1 = plan.selves(side1, angles=angles, stages=stages)
        selves2 = selves1 if x2 is None else plan.selves(side2, angles=angles, stages=stages)
    for r0 in range(0, n1, rows):
        r1 = min(n1, r0 + rows)
        c0 = r0 if x2 is None else 0  # x2 None: columns from the block's first row, j ≥ i
        if not whole:
            sums = plan.tile(side1[r0:r1], side2[c0:], upper=x2 is None, angles=angles,
                             stages=stages)
        for k in range(len(stages)):
            state = rest.kernel(plan.readout_state(sums[:, :, k], selves1[r0:r1, k],
                                                   selves2[c0:, k], angles=angles).rescaled())
            part = _outputs(_readout_checked(state, where), (r1 - r0, n2 - c0), nngp, ntk,
                            angles, where)
            for key in wanted:
                out[k][key][r0:r1, c0:] = getattr(part, key)
    if x2 is None:  # K(x′, x) = K(x, x′): the lower triangle from the upper
        lower = np.tril_indices(n1, -1)
        for part in out:
            for key in wanted:
                part[key][lower] = part[key].T[lower]
    return [Evaluated(*(part.get(k) for k in ("nngp", "ntk", "R", "Z"))) for part in out]


def _check_pair_buffers(plan, shape, where, memory_limit):
    """The full mode's per-thread buffers (``ConvChain.pair_buffer_bytes``) fit, else
    ``InsufficientMemoryError`` naming the way out."""
    from numba import get_num_threads

    from .._core.memory import check_memory

    check_memory(plan.pair_buffer_bytes(get_num_threads()),
                 f"the pixel-pair buffers of {get_num_threads()} thread(s) for {shape[1]} x "
                 f"{shape[2]} images", memory_limit, where,
                 alternative="use smaller images (e.g. average-pooled), fewer threads "
                 "(NUMBA_NUM_THREADS), or a Flatten read-out, which needs only the spatial "
                 "diagonal")


def _readout_checked(state, where):
    if not isinstance(state, PairState) or np.ndim(state.c) != 2:
        raise ValueError(f"{where}: expected a read-out (stax.Flatten() or stax.GlobalAvgPool()) "
                         "before the output, got a net whose output still has pixels")
    return state


def _pair_block(shape, n: int, where: str, memory_limit=None) -> int:
    """Images per side of a block of image pairs whose pixel-pair state fits in memory."""
    from .._core.memory import available_memory, check_memory

    P = shape[1] * shape[2]
    per = 8 * STATE_ARRAYS * P * P  # bytes per image pair (and per self pair)
    budget = (available_memory() if memory_limit is None else memory_limit) // 2
    b = n
    while b > 1 and (b * b + 2 * b) * per > budget:
        b = (b + 1) // 2
    check_memory((b * b + 2 * b) * per, f"the pixel-pair kernel state of one pair of "
                 f"{shape[1]} x {shape[2]} images ({STATE_ARRAYS} float64 arrays of 3 x {P}² "
                 "entries)", memory_limit, where,
                 alternative="use smaller images (e.g. average-pooled), or a Flatten read-out, "
                 "which needs only the spatial diagonal")
    return b


def _nonlinearities(layer):
    """The ``Nonlinearity`` layers of a stack, at any depth of nesting."""
    from ..network.layers import Nonlinearity, Parallel, Serial

    if isinstance(layer, Nonlinearity):
        return [layer]
    if isinstance(layer, Serial):
        return [n for item in layer.layers for n in _nonlinearities(item)]
    if isinstance(layer, Parallel):
        return [n for item in layer.branches for n in _nonlinearities(item)]
    return []


def sweep(geometry: PairGeometry, family: MLPFamily, depths, layers=None, *, kernel=True,
          angles=False, out=None, overwrite=False, xp=np, where: str = "the kernel"):
    """Kernels and angle terms of ``family`` at every depth of ``depths`` in one pass.

    Args:
      geometry: the block (``PairGeometry``).
      family: the net (``MLPFamily``).
      depths: sorted depths L ≥ 0; layers: trainable layers (None: all; "last": the read-out
        at every depth; a frozenset of 0-based indices).
      kernel: yield the NTK K (true values: ``KernelRangeError`` out of range); angles: yield
        R, Z (1 − cos φ, 1 + cos φ, any common scale).
      out: {L: buffer} to write K into; overwrite: the geometry's arrays may serve as buffers.
      xp: numpy, or jax.numpy (the fast path only).

    Yields:
      (L, K, R, Z) per depth, ascending.
    """
    depths = sorted(set(depths))
    plan = chain_plan(family, depths[-1], layers)
    if plan is not None:
        yield from recursion(geometry, plan, depths, kernel=kernel, angles=angles, out=out,
                             overwrite=overwrite, xp=xp, where=where)
        return
    if xp is not np:
        raise ValueError(
            f"activation {family.act.name!r} with w_std/b_std/residual runs on the NumPy "
            "engines only (the JAX device engine serves bias-free homogeneous nets)")
    unit = family.homogeneous
    state0 = input_state(geometry, unit=unit, gaps=family.act.gaps_for_kernels, angles=angles)
    scale = geometry.scale() if unit and not _is_unit(geometry) else None
    shape = np.shape(geometry.angle)
    for L, s in family.sweep_states(state0, depths, layers,
                                    max_layers=layer_budget(family, geometry), where=where):
        K = R = Z = None
        if kernel:
            label = f"{where}: the NTK at depth {L}"
            _check_diagonal(s, "ntk", label, scale)
            K = np.broadcast_to(_true(s, "ntk", label, scale), shape)
            if out is not None and L in out:
                out[L][...] = K
                K = out[L]
            else:
                K = np.array(K)
        if angles:
            R, Z = (np.broadcast_to(a, shape) for a in angle_terms_of(s))
        yield L, K, R, Z
