"""The angle recursion of bias-free homogeneous nets, written once: every kernel and angle of
such nets at infinite width (``ntkcond.infinite.engine`` for ``ntkcond.infinite.kernels`` and
``ntkcond.stax``, ``ntkcond.infinite.angles``, the tiles of ``ntkcond.scale.tiles``, the blocks
of ``ntkcond.scale.blocks`` and, with ``xp=jax.numpy``, the device blocks of
``ntkcond.scale.sharded``) is computed by ``recursion``.

The fast path of bias-free homogeneous nets. With θ₀ the input angle, θ_k the angle after k
layers and ġ(θ) = 1 − βθ, ``ntkcond.infinite.angles`` eqs. (1)–(4):

    cos θ_{k+1} = w_lin cos θ_k + w_relu κ₁(θ_k),   κ₁(θ) = (sin θ + (π − θ) cos θ)/π,
    T_L = Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j),      K = ‖x‖‖x'‖/d · T_L

(``ntkcond.infinite.kernels`` eq. (2); w_lin = 2α/(1 + α²), w_relu = (1 − α)²/(1 + α²),
β = w_relu/π).

The stacks this serves: a ``ntkcond.network.HomogeneousChain`` — bias-free Dense layers
(any W_std) and positively homogeneous activations (the leaky family, any slope per layer).
Their kernels are the norms times a function of the input angle, whatever the weight stds:
with G_L = s₀²·Π_{k≥1} s_k² E[σ_{k−1}(z)²] the output variance over ‖x‖²/d
(``HomogeneousChain.gain``), K = ‖x‖‖x'‖/d · G_L · T_L, and T_L is the same for every
spelling of the net (``ntkcond.network.layers`` eqs. (1)–(2) reduce to it). ``ChainPlan``
holds what the recursion reads: the activation after each hidden layer (its w_relu and β),
the trainable layers, and G_L per depth. Everything else (biases, residual blocks,
non-homogeneous activations) takes the general layer maps of ``ntkcond.network``
(``ntkcond.infinite.engine``); the two agree on the nets both serve.

Interface: ``recursion(geometry, plan, depths, kernel=True, angles=False, nngp=False, out=None,
xp=np, where="recursion")`` is a generator; per depth L of ``depths`` (ascending) it yields
``(L, K, R, Z)`` (with ``nngp=True``: ``(L, K, R, Z, N)``):

* ``geometry`` (``PairGeometry``): a block of pairs — θ₀ and cos θ₀ (any shape, the same for
  both), the rows' and columns' norms ‖x‖, ‖x'‖ and the dimension d (``norms`` None: unit rows,
  K is then G·T), and the pairs within 0.1 rad of 0 or π (``refined``: the indices, ``near``:
  their angle from the nearer end, min(θ₀, π − θ₀), exact for the data).
  ``ntkcond.infinite.geometry.block_geometry`` builds it.
* ``K``: the NTK block for depth L (written into ``out[L]`` when ``out`` is given, else a new
  array; ``kernel=False``: None). ``N``: the NNGP block ‖x‖‖x'‖/d·G_L·cos θ_L. ``R``, ``Z``
  (``angles=True``, else None): the non-negative angle terms R = Σ_{i∈S}(1 − cos θ_i Π ġ),
  Z = Σ_{i∈S}(1 + cos θ_i Π ġ) of the gradient angle φ = 2 atan2(√R, √Z)
  (``gradient_recursion``).

Two state functions, one per need; both take the first layer in array operations (NumPy, or
jax.numpy with ``xp``) and, on NumPy, every later layer in the compiled loop
``ntkcond.infinite.chain_loops.advance`` (each pair alone, ~30 ns a pair and layer for the
kernel, ~60 ns with the angle terms, on a loaded 2-core machine), on the distinct entries of
the block beyond ``DISTINCT_AFTER`` layers:

* ``_chain_kernel`` (``kernel=True``): per layer k, from θ, cos θ, u = 1 − cos θ,
  v = 1 + cos θ and sin θ = √(uv), with s = w_relu,k (sin θ − θ cos θ)/π,

      u' = u − s,   cos θ' = cos θ + s,   v' = v + s,   θ' = atan2(√(u'v'), cos θ'),
      T' = [layer trainable]·cos θ' + (1 − β_k θ)·T

  (the first layer in place on float64 buffers; the compiled loop takes θ and s from
  min(u, v) by the half-angle polynomials, without cancellation). Near π at the input layer
  (θ₀ = π − δ, δ from ``near``) the first step is cos θ₁ = −w_lin cos δ + w_relu (sin δ −
  δ cos δ)/π and ġ(θ₀) = w_lin + βδ, with sin δ − δ cos δ by its series: no cancellation, so
  the ReLU NNGP of x and −x is exactly 0 and near-antipodal entries are relatively exact.
* ``gradient_recursion`` (``angles=True``): the terms 1 ∓ cos carried as sums of non-negative
  terms, so gradient angles keep full relative precision down to 1e-150 rad. When ``kernel``
  and ``angles`` are both asked for, K comes from the first, so every route yields the same
  kernel to the last bit.

Depth. The angle of two inputs converges to 0 only algebraically (1 − cos θ_L ~ c/L² for
ReLU), so no fixed point shortens the recursion: depth L costs L passes over the distinct
pairs, ~0.6 s for five rows at L = 10⁶ (it was ~112 s one NumPy call per operation and layer
at a time). ``check_cost`` refuses up front (naming the public function) a depth whose
distinct pairs × layers exceed ``ntkcond._core.checks.MAX_PAIR_LAYERS`` beyond
``FREE_DEPTH``. Precision at depth: within a few eps of 30-digit references at L = 2·10⁴
(``tests/test_recursion.py``); the NumPy expressions it replaced drifted by up to ~2e-14·L.

Precision of the kernels: each entry is exact to a few eps relative to √(K(x, x)K(x', x'))
(the diagonal scale), not to |K(x, x')|: entries of linear and depth-0 kernels carry the
rounding of the Gram product x̂·x̂' (absolute ~eps·√d), which is large against tiny
|cos θ₀| (1e-11 relative at |cos θ₀| ≈ 5e-6). κ and angles are unaffected.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._core.checks import FREE_DEPTH, MAX_PAIR_LAYERS, check_depth_cost
from ..activations.leaky import SMC_COEFFS, SMC_SERIES_BELOW, sin_minus_angle_cos
from ..network.layers import gain_product

__all__ = [
    "PairGeometry",
    "ChainPlan",
    "CHUNK_ENTRIES",
    "GainTable",
    "SMC_COEFFS",
    "SMC_SERIES_BELOW",
    "angle_from",
    "check_cost",
    "derivative_slope",
    "gradient_recursion",
    "layer_step",
    "near_pi_step",
    "one_minus_cos",
    "one_plus_cos",
    "phi_from_angle",
    "recursion",
    "relu_weights",
    "sin_minus_angle_cos",
]


#: Entries per chunk of the kernel state's in-place layer step: its arrays stay in a core's L2.
CHUNK_ENTRIES = 1 << 15


@dataclasses.dataclass(frozen=True)
class PairGeometry:
    """A block of pairs as the recursion takes it (module docstring).

    Attributes:
      angle: θ₀ in radians, any shape (n1, n2), (k,), …; float64 (or a jax array).
      cos: cos θ₀, the same shape.
      norms1, norms2: ‖x‖ of the block's rows (n1,) and columns (n2,); None: unit rows (the
        recursion then yields G·T, the normalised kernel).
      d: the input dimension (the kernel is ‖x‖‖x'‖/d · G · T).
      refined: indices (a tuple of index arrays, as ``np.nonzero``) of the pairs within 0.1 rad
        of 0 or π, whose θ₀ is exact for the data; None: none known.
      near: (k,) their angle from the nearer end, min(θ₀, π − θ₀), exact (not π − θ₀ rounded).
    """

    angle: object
    cos: object
    norms1: object = None
    norms2: object = None
    d: int = 1
    refined: tuple | None = None
    near: object = None

    def __repr__(self) -> str:
        return f"PairGeometry(shape={tuple(np.shape(self.angle))}, d={self.d})"

    def scale(self):
        """‖x‖‖x'‖/d for the block's pairs (n1, n2); None for unit rows."""
        if self.norms1 is None:
            return None
        with np.errstate(over="ignore", under="ignore"):
            return np.outer(self.norms1, self.norms2) / self.d


@dataclasses.dataclass(frozen=True)
class ChainPlan:
    """What ``recursion`` reads of a bias-free homogeneous net (module docstring).

    Attributes:
      acts: the homogeneous activation after each hidden layer k = 0, 1, … (at least as many
        as the deepest depth asked for).
      layers: trainable layers: None (all), "last" (S = {L} at every depth), or a frozenset of
        0-based indices.
      gains: G_L for L = 0 … len(acts), the output variance over ‖x‖²/d (1 for the
        norm-preserving net), each as (m, e) with G_L = m·2^e (``gain_product``; a
        ``GainTable`` or a tuple); None where a depth is not asked for.
    """

    acts: tuple
    layers: object
    gains: tuple

    @property
    def linear(self) -> bool:
        """Every activation linear: angles never change, ġ = 1."""
        return all(a.is_linear for a in self.acts)


@dataclasses.dataclass(frozen=True)
class GainTable:
    """G_L for L = 0 … top of a plain net (``ChainPlan.gains`` without a tuple per depth):
    ``table[L]`` = (m, e), G_L = m·2^e, m ∈ [0.5, 1).

    Attributes:
      mantissas: (top + 1,) float64; exponents: (top + 1,) int64.
    """

    mantissas: np.ndarray
    exponents: np.ndarray

    @classmethod
    def of(cls, readout: float, hidden: float, moment: float, top: int) -> "GainTable":
        """G_0 = s_r² and G_L = s₀²·(s²E[σ²])^(L−1)·s_r²E[σ²] (hidden variance s² = ``hidden``
        for every weight layer but the read-out's s_r² = ``readout``; E[σ²] = ``moment``),
        multiplied in the order of ``HomogeneousChain.gain`` and renormalised after every
        product (``ntkcond.network.layers.gain_product``), so that a plan and the net's
        ``HomogeneousChain`` give the same gains to the last bit."""
        from .chain_loops import gain_sequence

        m = np.empty(top + 1)
        e = np.empty(top + 1, dtype=np.int64)
        m[0], e[0] = math.frexp(readout)
        m0, e0 = gain_product(hidden, ())
        gain_sequence(m0, e0, readout * moment, hidden * moment, top, m, e)
        return cls(m, e)

    def __len__(self) -> int:
        return self.mantissas.size

    def __getitem__(self, L: int) -> tuple:
        return float(self.mantissas[L]), int(self.exponents[L])


def recursion(geometry: PairGeometry, plan: ChainPlan, depths, *, kernel=True, angles=False,
              nngp=False, out=None, overwrite=False, xp=np, where: str = "recursion"):
    """The fast angle recursion of a bias-free homogeneous net (module docstring).

    Args:
      geometry: the block (``PairGeometry``).
      plan: the net (``ChainPlan``).
      depths: sorted depths L ≥ 0 (at most len(plan.acts)).
      kernel: yield the NTK K (``_chain_kernel``); nngp: also yield the NNGP N (5-tuples).
      angles: yield R, Z (``gradient_recursion``).
      out: {L: buffer} to write K into (numpy); K is then that buffer.
      overwrite: the kernel recursion may use ``geometry.angle`` and ``cos`` as its buffers
        (only without ``angles``).
      xp: numpy, or jax.numpy under jit (no ``refined`` pairs, no ``out``).
      where: the public function named by ``check_cost``'s ValueError (NumPy only).

    Yields:
      (L, K, R, Z) per depth, ascending (``nngp``: (L, K, R, Z, N)); K and R, Z None where
      not asked for. With ``out=None`` K is a new array; R, Z may be updated in place by the
      next step.
    """
    depths = sorted(set(depths))
    if xp is np:
        check_cost(np.asarray(geometry.angle), np.asarray(geometry.cos), depths[-1], where)
    ks = _chain_kernel(geometry, plan, depths, overwrite and not angles, out, xp, nngp) \
        if kernel or nngp else None
    gs = gradient_recursion(geometry.angle, geometry.cos, depths, plan.acts, plan.layers, xp,
                            _near_pi(geometry) if xp is np else None) if angles else None
    for L in depths:
        K = N = None
        if ks is not None:
            _, K, N = next(ks)
        R = Z = None
        if gs is not None:
            _, _, R, Z, _ = next(gs)
        yield (L, K if kernel else None, R, Z, N) if nngp else (L, K, R, Z)


def check_cost(angle, cos, depth: int, where: str) -> None:
    """ValueError naming ``where`` where ``depth`` layers over the distinct (θ₀, cos θ₀) of
    the block cost more than ``ntkcond._core.checks.MAX_PAIR_LAYERS`` pair-layers (depths
    up to ``FREE_DEPTH`` always run)."""
    if depth <= FREE_DEPTH or np.size(angle) == 0:
        return
    rows = np.stack(np.broadcast_arrays(np.asarray(angle, dtype=np.float64),
                                        np.asarray(cos, dtype=np.float64)), axis=-1)
    rows = np.ascontiguousarray(rows.reshape(-1, 2))
    distinct = np.unique(rows.view(np.dtype((np.void, 16))).ravel()).size
    check_depth_cost(depth, distinct, MAX_PAIR_LAYERS, where,
                     f"{distinct} distinct input angle(s) in the compiled angle recursion")


def _near_pi(geometry: PairGeometry):
    """(indices, δ) of the refined pairs of ``geometry`` at θ₀ = π − δ, or None."""
    if geometry.refined is None or not geometry.refined[0].size:
        return None
    near = np.asarray(geometry.near)
    side = np.asarray(geometry.angle)[geometry.refined] > 0.5 * np.pi
    if not side.any():
        return None
    return tuple(ix[side] for ix in geometry.refined), near[side]


class _InPlace:
    """NumPy ufuncs writing into the given buffer."""

    mul, add, sub, sqrt = np.multiply, np.add, np.subtract, np.sqrt
    atan2, maximum = np.arctan2, np.maximum

    @staticmethod
    def call(f, *args, out):
        return f(*args, out=out)


class _Pure:
    """The same operations as new arrays (jax.numpy: arrays are immutable)."""

    def __init__(self, xp):
        self.mul, self.add, self.sub, self.sqrt = xp.multiply, xp.add, xp.subtract, xp.sqrt
        self.atan2, self.maximum = xp.arctan2, xp.maximum

    @staticmethod
    def call(f, *args, out):
        return f(*args)


def relu_weights(act) -> tuple[float, float]:
    """(w_lin, w_relu) of eq. (2) of ``ntkcond.infinite.angles``: 2α/(1+α²), (1−α)²/(1+α²)
    for the leaky family (the activation's ``linear_weight``, ``relu_weight``)."""
    return act.linear_weight, act.relu_weight


def _chain_kernel(geometry: PairGeometry, plan: ChainPlan, depths, overwrite, out, xp, nngp):
    """(L, K, N) for every depth, ascending, in one pass (module docstring).

    With ``out`` K is ``out[L]``; else a new array (G·T itself for unit rows and G = 1,
    updated in place by the next step: copy it to keep it). N (``nngp``) is always new.
    """
    layers = plan.layers
    last_only = layers == "last"
    member = (lambda i: True) if layers is None or last_only else (lambda i: i in layers)
    scale = geometry.scale() if xp is np else None

    def scaled(L, T, buffer=None):
        m, e = plan.gains[L]
        if (m, e) == (0.5, 1):  # G = 1 (the norm-preserving net): nothing to multiply by
            if scale is None:
                return T if buffer is None else np.copyto(buffer, T) or buffer
            factor = scale
        else:
            with np.errstate(over="ignore", under="ignore"):
                factor = np.ldexp(m if scale is None else scale * m, e)  # = scale·G exactly
            _check_factor(factor, L)
        return factor * T if buffer is None else np.multiply(factor, T, out=buffer)

    def emit(L, T, c):
        K = scaled(L, T, None if out is None else out[L])
        N = None
        if nngp:
            unit = xp is np and scale is None and plan.gains[L] == (0.5, 1)
            N = scaled(L, c.copy() if unit else c)
        return L, K, N

    cos0 = geometry.cos
    if plan.linear:  # angles unchanged, ġ = 1: T = |S ∩ [0, L]|·cos θ₀
        for L in depths:
            count = 1 if last_only else sum(1 for i in range(L + 1) if member(i))
            yield emit(L, count * cos0, cos0)
        return
    ops = _InPlace if xp is np else _Pure(xp)
    call = ops.call
    top = depths[-1]
    w_relu = _per_layer(plan.acts, top, lambda a: a.relu_weight / np.pi)
    beta = _per_layer(plan.acts, top, lambda a: a.derivative_slope)
    t, c = (geometry.angle, cos0) if overwrite or xp is not np else (geometry.angle.copy(), cos0.copy())
    u, v = 1.0 - c, 1.0 + c
    exact, pi_side, delta = (), None, None
    if xp is np and geometry.refined is not None and geometry.refined[0].size:
        exact = geometry.refined  # 1 ∓ cos θ loses digits there: from the exact angle
        near = np.asarray(geometry.near)
        pi_side = t[exact] > 0.5 * np.pi
        sin2, cos2 = 2.0 * np.sin(0.5 * near) ** 2, 2.0 * np.cos(0.5 * near) ** 2
        u[exact], v[exact] = np.where(pi_side, cos2, sin2), np.where(pi_side, sin2, cos2)
        if pi_side.any():
            delta = near[pi_side]
            at_pi = tuple(ix[pi_side] for ix in exact)
    sn = xp.sqrt(u * v)  # sin θ
    first = member(0) or last_only
    T = (c.copy() if xp is np else c) if first else xp.zeros_like(c)
    fix0 = None  # layer 0 at θ₀ = π − δ: (flat indices, ġ(θ₀), cos θ₁, 1 ∓ cos θ₁), exact
    if delta is not None and depths[-1] > 0:
        flat = np.ravel_multi_index(at_pi, t.shape) if t.ndim > 1 else at_pi[0]
        order = np.argsort(flat, kind="stable")
        fix0 = (flat[order],) + tuple(a[order] for a in near_pi_step(plan.acts[0], delta))
    if 0 in depths:
        yield emit(0, T, c)

    def layer(k, t, c, u, v, sn, T, g, s, fix):
        """One layer on (views of) the state; returns it (new arrays under jax)."""
        if not last_only:
            g = call(ops.mul, t, -beta[k], out=g)
            g = call(ops.add, g, 1.0, out=g)
            if fix is not None:
                g[fix[0]] = fix[1]
            T = call(ops.mul, T, g, out=T)  # ġ(θ_k)·T
        s = call(ops.mul, t, c, out=s)
        s = call(ops.sub, sn, s, out=s)
        s = call(ops.mul, s, w_relu[k], out=s)  # s = w_relu (sin θ − θ cos θ)/π
        c = call(ops.add, c, s, out=c)  # cos θ' = w_lin cos θ + w_relu κ₁(θ)
        if fix is not None:
            c[fix[0]] = fix[2]
        if k + 1 < depths[-1]:  # θ' is needed by a next layer only
            u = call(ops.sub, u, s, out=u)
            u = call(ops.maximum, u, 0.0, out=u)  # 1 − cos θ' ≥ 0 (rounding)
            v = call(ops.add, v, s, out=v)
            if fix is not None:  # 1 ∓ cos θ₁ of the pairs near π, without cancellation
                u[fix[0]], v[fix[0]] = fix[3], fix[4]
            sn = call(ops.mul, u, v, out=sn)
            sn = call(ops.sqrt, sn, out=sn)  # sin θ'
            t = call(ops.atan2, sn, c, out=t)  # θ'
        if last_only:
            if xp is np:
                T[...] = c
            else:
                T = c
        elif member(k + 1):
            T = call(ops.add, T, c, out=T)
        return t, c, u, v, sn, T

    if xp is not np:
        for k in range(depths[-1]):
            t, c, u, v, sn, T = layer(k, t, c, u, v, sn, T, None, None, None)
            if k + 1 in depths:
                yield emit(k + 1, T, c)
        return
    # NumPy: layer 0 over cache-sized chunks of the (contiguous) state, in place (it carries
    # the exact first step of the pairs near π); the rest in the compiled loop, pair by pair
    state = [np.ascontiguousarray(a) for a in (t, c, u, v, sn, T)]
    T, c = state[5], state[1]
    views = [a.reshape(-1) for a in state]
    size = views[0].size
    step = CHUNK_ENTRIES
    g, s = np.empty(min(size, step)), np.empty(min(size, step))
    if top >= 1:
        if size <= step:  # one chunk (the tiles of ``ntkcond.scale.tiles``)
            layer(0, *views, g, s, fix0)
        else:
            for a in range(0, size, step):
                b = min(size, a + step)
                fix = None
                if fix0 is not None:
                    lo, hi = np.searchsorted(fix0[0], [a, b])
                    if hi > lo:
                        fix = (fix0[0][lo:hi] - a,) + tuple(f[lo:hi] for f in fix0[1:])
                layer(0, *(x[a:b] for x in views), g[:b - a], s[:b - a], fix)
        if 1 in depths:
            yield emit(1, T, c)
    if top <= 1:
        return
    from .chain_loops import advance

    flat, back = _distinct([views[1], views[2], views[3], views[5]], top)
    inside = _members(layers, top)
    counts = np.cumsum(inside, dtype=np.float64)
    negative = _negatives(plan.acts, top)
    unused = np.empty(0)
    k0 = 1
    for L in depths:
        if L <= 1:
            continue
        advance(*flat, unused, unused, k0, L, counts, w_relu, beta, negative, inside,
                last_only, False)
        k0 = L
        if back is None:
            yield emit(L, T, c)
        else:
            yield emit(L, flat[3][back].reshape(T.shape), flat[0][back].reshape(c.shape))


def _per_layer(acts, top: int, value) -> np.ndarray:
    """(top,) float64: ``value(act)`` of the activation after each hidden layer k < top (one
    call when every layer has the same activation object, as a family's plan has)."""
    acts = acts[:top]
    if top and all(a is acts[0] for a in acts):
        return np.full(top, float(value(acts[0])))
    return np.array([float(value(a)) for a in acts], dtype=np.float64).reshape(top)


def _negatives(acts, top: int) -> np.ndarray:
    """(top,) bool: ġ < 0 is possible after layer k (w_relu > 1: slopes α < 0)."""
    return _per_layer(acts, top, lambda a: a.relu_weight > 1.0) != 0


def _members(layers, top: int) -> np.ndarray:
    """(top + 1,) bool: layer k is in S (``layers`` None or "last": every layer)."""
    if layers is None or layers == "last":
        return np.ones(top + 1, dtype=bool)
    inside = np.zeros(top + 1, dtype=bool)
    inside[[i for i in layers if 0 <= i <= top]] = True
    return inside


#: Layers beyond which the compiled loop runs on the distinct entries of a block only (equal
#: states after layer 0 — the two triangles of a symmetric block, the diagonal — computed once;
#: the sort costs ~1.6 µs an entry, what ~50 layers of the loop do).
DISTINCT_AFTER = 128


def _distinct(views, top):
    """(the state on its distinct entries, the inverse index) where the loops go deeper than
    ``DISTINCT_AFTER`` layers, else (the state itself, None). Entries are equal when every
    state array holds the same float64 bits: their layers are then the same operations."""
    n = views[0].size
    if top - 1 <= DISTINCT_AFTER or n < 2:
        return [np.ascontiguousarray(x) for x in views], None
    rows = np.ascontiguousarray(np.stack(views, axis=1))
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, back = np.unique(keys, return_index=True, return_inverse=True)
    if first.size == n:
        return [np.ascontiguousarray(x) for x in views], None
    return [np.ascontiguousarray(x[first]) for x in views], back.reshape(-1)


def _check_factor(factor, depth):
    """``KernelRangeError`` where ‖x‖‖x′‖/d·G_L leaves float64's normal range (the kernel of
    every pair is that times a number of order 1)."""
    from ..network import KernelRangeError

    f = np.abs(np.asarray(factor))
    if not np.all(np.isfinite(f)) or np.min(f) < np.finfo(np.float64).tiny:
        side = "above 1.8e308" if not np.all(np.isfinite(f)) else "below 2.2e-308"
        raise KernelRangeError(f"the kernel at depth {depth} leaves float64's range ({side}: "
                               "the weight variances' product times ‖x‖‖x′‖/d)")


def one_minus_cos(angle, xp=np):
    return 2.0 * xp.sin(0.5 * angle) ** 2


def one_plus_cos(angle, xp=np):
    return 2.0 * xp.cos(0.5 * angle) ** 2


def angle_from(one_minus_cos, one_plus_cos, xp=np):
    """θ = 2 atan2(√(1 − cos θ), √(1 + cos θ)): exact to rounding from accurate inputs."""
    return 2.0 * xp.arctan2(xp.sqrt(one_minus_cos), xp.sqrt(one_plus_cos))


def layer_step(angle, cos, act, xp=np):
    """One layer of eq. (2) of ``ntkcond.infinite.angles`` for a homogeneous activation:
    (θ, cos θ) ↦ (θ', cos θ', 1 − cos θ', 1 + cos θ'), the terms non-negative."""
    u, v = one_minus_cos(angle, xp), one_plus_cos(angle, xp)
    kappa1 = (xp.sin(angle) + (np.pi - angle) * cos) / np.pi
    u_relu = u - sin_minus_angle_cos(angle, xp) / np.pi  # 1 − κ₁ = [π(1 − cos θ) − s(θ)]/π ≥ 0
    w_lin, w_relu = relu_weights(act)
    cos_new = w_lin * cos + w_relu * kappa1
    u_new = w_lin * u + w_relu * u_relu
    v_new = w_lin * v + w_relu * (1.0 + kappa1)
    return angle_from(u_new, v_new, xp), cos_new, u_new, v_new


def near_pi_step(act, delta):
    """The first layer at θ₀ = π − δ (δ ≥ 0 exact, from the data), without cancellation:
    (ġ(θ₀), cos θ₁, 1 − cos θ₁, 1 + cos θ₁), with s = sin δ − δ cos δ (its series),
    e = 1 − cos δ = 2 sin²(δ/2), w_lin + w_relu = 1 and A = 2 − w_relu = (1 + α)²/(1 + α²):

        ġ(θ₀) = w_lin + βδ,                cos θ₁ = −w_lin cos δ + w_relu s/π,
        1 − cos θ₁ = A − w_lin e − w_relu s/π,   1 + cos θ₁ = w_relu + w_lin e + w_relu s/π.

    For α < 0 the pair maps near 0 (|z| maps x, −x to one point), where 1 − cos θ₁ ~ δ²
    must not come from a difference of numbers near 2."""
    w_lin, w_relu = relu_weights(act)
    s = w_relu * sin_minus_angle_cos(delta) / np.pi
    e = 2.0 * np.sin(0.5 * delta) ** 2
    return (w_lin + act.derivative_slope * delta, s - w_lin * np.cos(delta),
            np.maximum(act.antipodal_weight - w_lin * e - s, 0.0), w_relu + w_lin * e + s)


def derivative_slope(act) -> float:
    """β of ġ(θ) = 1 − βθ, eq. (3) of ``ntkcond.infinite.angles``: (1 − α)²/(π(1 + α²))."""
    return act.derivative_slope


def gradient_recursion(angle0, cos0, depths, acts, layers=None, xp=np, near_pi=None):
    """Eq. (4) of ``ntkcond.infinite.angles`` for every depth in ``depths`` (ascending), in one
    forward pass: the angle state of ``recursion`` (``angles=True``).

    ``acts``: one homogeneous activation (every layer), or a sequence with the activation
    after each hidden layer k = 0, 1, ….  ``near_pi``: (indices, δ) of the pairs at θ₀ = π − δ
    with δ exact (NumPy): their first layer by ``near_pi_step``, without cancellation.

    Yields (depth, T, R, Z, count): with S = ``layers`` ∩ [0, depth] (all layers if None;
    S = {depth} at every depth if ``layers == "last"``),
      T = Σ_{i∈S} cos θ_i Π ġ     (normalised NTK, 1 per layer on the diagonal),
      R = Σ_{i∈S} (1 − cos θ_i Π ġ) = count − T,
      Z = Σ_{i∈S} (1 + cos θ_i Π ġ) = count + T,
    with R and Z built from non-negative terms only:
      R_{k+1} = s·(1 − cos θ_{k+1}) + count_k·β_kθ_k + ġ(θ_k)·R_k   (s = 1 if k+1 ∈ S)
      Z_{k+1} = s·(1 + cos θ_{k+1}) + count_k·β_kθ_k + ġ(θ_k)·Z_k
      T_{k+1} = s·cos θ_{k+1} + ġ(θ_k)·T_k,
    and where ġ(θ_k) < 0 (slopes α < 0, θ_k > π/w_relu), with T_k = Z_k − count_k instead,
      R_{k+1} = s·(1 − cos θ_{k+1}) + count_k·(1 + ġ(θ_k)) + |ġ(θ_k)|·Z_k,
      Z_{k+1} = s·(1 + cos θ_{k+1}) + count_k·(1 + ġ(θ_k)) + |ġ(θ_k)|·R_k
    (1 + ġ = 2 − βθ ≥ 0; at θ₀ = π − δ, (2 − w_relu) + βδ from the exact δ).
    Works on any numpy arrays (scalars for closed forms, n1 × n2 matrices for kernels), and on
    jax arrays under jit with ``xp=jax.numpy`` (``ntkcond.scale.sharded``). Kernels come from
    ``recursion`` (its T agrees with this T to a few eps absolute).
    """
    wanted = set(depths)
    top = max(depths)
    acts = (acts,) * top if not isinstance(acts, (tuple, list)) else tuple(acts)
    last_only = layers == "last"  # S = {depth} for each depth of the sweep
    member = (lambda k: True) if layers is None or last_only else (lambda k: k in layers)
    angle, cos = angle0, cos0
    s = 1.0 if member(0) else 0.0
    u, v = one_minus_cos(angle, xp), one_plus_cos(angle, xp)
    T, R, Z, count = s * cos, s * u, s * v, s
    if 0 in wanted:
        yield (0, cos, u, v, 1.0) if last_only else (0, T, R, Z, count)
    compiled = xp is np and top > 1  # layers 1 … top − 1 in the compiled loop (``chain_loops``)
    for k in range(1 if compiled else top):
        act = acts[k]
        gdot_gap = act.derivative_slope * angle  # 1 − ġ(θ_k) ≥ 0
        gdot = 1.0 - gdot_gap
        negative = act.relu_weight > 1.0  # ġ < 0 is possible (θ > π/w_relu): slopes α < 0
        if negative:
            one_plus = 2.0 - gdot_gap  # 1 + ġ(θ_k) ≥ 0
        if act.is_linear:
            u_new, v_new = u, v
        else:
            angle, cos, u_new, v_new = layer_step(angle, cos, act, xp)
            if k == 0 and near_pi is not None and near_pi[1].size:
                at, delta = near_pi
                _, c1, u1, v1 = near_pi_step(act, delta)
                cos[at], u_new[at], v_new[at] = c1, u1, v1
                angle[at] = angle_from(u1, v1)
                if negative:  # 1 + ġ(π − δ) = (2 − w_relu) + βδ, not 2 − β(π − δ)
                    one_plus = np.array(one_plus, dtype=np.float64)
                    one_plus[at] = act.antipodal_weight + act.derivative_slope * delta
        s = 1.0 if member(k + 1) else 0.0
        T = s * cos + gdot * T
        if negative:  # where ġ < 0: T_k = Z_k − count_k keeps every term non-negative
            neg = gdot < 0
            R, Z = (s * u_new + xp.where(neg, count * one_plus - gdot * Z, count * gdot_gap + gdot * R),
                    s * v_new + xp.where(neg, count * one_plus - gdot * R, count * gdot_gap + gdot * Z))
        else:
            R = s * u_new + count * gdot_gap + gdot * R
            Z = s * v_new + count * gdot_gap + gdot * Z
        count += s
        u, v = u_new, v_new
        if k + 1 in wanted:
            yield (k + 1, cos, u_new, v_new, 1.0) if last_only else (k + 1, T, R, Z, count)
    if compiled:
        yield from _compiled_gradient(cos, u, v, T, R, Z, sorted(wanted), acts, layers)


def _compiled_gradient(cos, u, v, T, R, Z, depths, acts, layers):
    """``gradient_recursion``'s layers 1 … max(depths) − 1 in the compiled loop
    (``chain_loops.advance``) on the distinct entries of the state after layer 0;
    yields as it does (new arrays; NumPy scalars for scalar inputs)."""
    from .chain_loops import advance

    top = depths[-1]
    last_only = layers == "last"
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64)
                                   for a in (cos, u, v, T, R, Z)))
    shape = arrays[0].shape
    flat, back = _distinct([a.reshape(-1).copy() for a in arrays], top)
    inside = _members(layers, top)
    counts = np.cumsum(inside, dtype=np.float64)  # |S ∩ [0, k]|
    w = _per_layer(acts, top, lambda a: a.relu_weight / np.pi)
    beta = _per_layer(acts, top, lambda a: a.derivative_slope)
    negative = _negatives(acts, top)

    def out(i):
        full = flat[i] if back is None else flat[i][back]
        full = full.reshape(shape)
        return full[()] if full.ndim == 0 else full.copy() if back is None else full

    k0 = 1
    for L in depths:
        if L <= 1:
            continue
        advance(*flat, k0, L, counts, w, beta, negative, inside, last_only, not last_only)
        k0 = L
        if last_only:
            yield L, out(0), out(1), out(2), 1.0
        else:
            yield L, out(3), out(4), out(5), float(counts[L])


def phi_from_angle(angle0, cos0, depth, act, layers, where: str = "phi_from_angle"):
    """φ_L(θ₀) of eq. (4) of ``ntkcond.infinite.angles`` (all shapes), radians, for the
    bias-free net of one homogeneous activation (``check_cost`` first, naming ``where``)."""
    check_cost(angle0, cos0, depth, where)
    if act.is_linear:
        return np.array(angle0, dtype=np.float64, copy=True)
    _, _, R, Z, _ = next(gradient_recursion(angle0, cos0, [depth], act, set(layers)))
    return angle_from(R, Z)
