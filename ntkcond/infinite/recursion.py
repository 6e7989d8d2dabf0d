"""The layer step of the infinite-width recursion, written once: every kernel and angle of
ntkcond at infinite width (``ntkcond.infinite.kernels``, ``ntkcond.infinite.angles``, the
tiles of ``ntkcond.scale.tiles``, the blocks of ``ntkcond.scale.blocks`` and, with
``xp=jax.numpy``, the device blocks of ``ntkcond.scale.sharded``) is computed by ``recursion``.

The net: bias-free, norm-preserving MLP of ``ntkcond.infinite.kernels`` (NTK
parameterisation, activation ``ntkcond.activations.Activation``). With θ₀ the input angle,
θ_k the angle after k layers and ġ(θ) = 1 − βθ, ``ntkcond.infinite.angles`` eqs. (1)–(4):

    cos θ_{k+1} = w_lin cos θ_k + w_relu κ₁(θ_k),   κ₁(θ) = (sin θ + (π − θ) cos θ)/π,
    T_L = Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j),      K = ‖x‖‖x'‖/d · T_L

(``ntkcond.infinite.kernels`` eq. (2); w_lin = 2α/(1 + α²), w_relu = (1 − α)²/(1 + α²),
β = w_relu/π).

Interface (the one an engine calls; how a new activation/bias/residual plugs in: one function)
-------------------------------------------------------------------------------------------
``recursion(geometry, act, depths, layers, kernel=True, angles=False, out=None, xp=np)``
is a generator; per depth L of ``depths`` (ascending) it yields ``(L, K, R, Z)``:

* ``geometry`` (``PairGeometry``): a block of pairs — θ₀ and cos θ₀ (any shape, the same for
  both), the rows' and columns' norms ‖x‖, ‖x'‖ and the dimension d (``norms`` None: unit rows,
  K is then T, the normalised kernel), and the pairs within 0.1 rad of 0 or π (``refined``: the
  indices, ``near``: their angle from the nearer end, min(θ₀, π − θ₀), exact for the data).
  ``ntkcond.infinite.geometry.block_geometry`` builds it; the squared norms/d the
  bias-carrying kernels need are ``norms1**2 / d`` and ``norms2**2 / d``.
* ``act``: the parsed activation (``ntkcond.activations.parse_activation`` once, at the
  public boundary); ``depths``: sorted depths; ``layers``: the trainable layers (a set of
  0-based indices, None for all, "last" for S = {L} at every depth).
* ``K``: the kernel block for depth L (written into ``out[L]`` when ``out`` is given, else a
  new array; ``kernel=False``: None). ``R``, ``Z`` (``angles=True``, else None): the
  non-negative angle terms R = Σ_{i∈S}(1 − cos θ_i Π ġ), Z = Σ_{i∈S}(1 + cos θ_i Π ġ) of the
  gradient angle φ = 2 atan2(√R, √Z) (``gradient_recursion``).

A new net (biases b_std, weight std w_std, residual blocks, another activation) is one new
state function beside ``_bias_free_kernel``: it receives the same ``PairGeometry`` (including
the norms, since with biases the per-pair state is the two variances and the covariance, not
an angle) and yields T-free kernels K per depth; ``recursion`` dispatches on the net. The
engines — whole matrices in ``kernels``, cache-sized tiles in ``scale.tiles``, device blocks
in ``scale.sharded`` — stay as they are.

Two state functions, one per need:

* ``_bias_free_kernel`` (``kernel=True``): per layer, from θ, cos θ, u = 1 − cos θ,
  v = 1 + cos θ and sin θ = √(uv), with s = w_relu (sin θ − θ cos θ)/π,

      u' = u − s,   cos θ' = cos θ + s,   v' = v + s,   θ' = atan2(√(u'v'), cos θ'),
      T' = [layer trainable]·cos θ' + (1 − βθ)·T,

  in place on float64 buffers (about 20 ns an entry at depth 3). θ is kept to absolute
  precision, which is what the kernel needs. Near π at the input layer (θ₀ = π − δ, δ from
  ``near``) the first step is cos θ₁ = −w_lin cos δ + w_relu (sin δ − δ cos δ)/π and
  ġ(θ₀) = w_lin + βδ, with sin δ − δ cos δ by its series: no cancellation, so the ReLU
  NNGP of x and −x is exactly 0 and near-antipodal entries are relatively exact.
* ``gradient_recursion`` (``angles=True``): the terms 1 ∓ cos carried as sums of non-negative
  terms, so gradient angles keep full relative precision down to 1e-150 rad (~300 ns an
  entry). When ``kernel`` and ``angles`` are both asked for, K comes from the first, so every
  route yields the same kernel to the last bit.

Precision of the kernels: each entry is exact to a few eps relative to √(K(x, x)K(x', x'))
(the diagonal scale), not to |K(x, x')|: entries of linear and depth-0 kernels carry the
rounding of the Gram product x̂·x̂' (absolute ~eps·√d), which is large against tiny
|cos θ₀| (1e-11 relative at |cos θ₀| ≈ 5e-6). κ and angles are unaffected.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..activations import Activation, Net
from .series import SMC_COEFFS, SMC_SERIES_BELOW, sin_minus_angle_cos

__all__ = [
    "PairGeometry",
    "CHUNK_ENTRIES",
    "SMC_COEFFS",
    "SMC_SERIES_BELOW",
    "angle_from",
    "derivative_slope",
    "gradient_recursion",
    "layer_step",
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
        recursion then yields T, the normalised kernel).
      d: the input dimension (the kernel is ‖x‖‖x'‖/d · T).
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


def recursion(geometry: PairGeometry, act: Activation, depths, layers=None, *, kernel=True,
              angles=False, out=None, overwrite=False, xp=np, net=None):
    """The dispatch of the infinite-width recursion (module docstring: the interface).

    Args:
      geometry: the block (``PairGeometry``).
      act: parsed activation.
      depths: sorted depths L ≥ 0.
      layers: trainable layers: None (all), "last" (S = {L}), or a set of 0-based indices.
      kernel: yield the kernel K (``_bias_free_kernel``).
      angles: yield R, Z (``gradient_recursion``).
      out: {L: buffer} to write K into (numpy); K is then that buffer.
      overwrite: the kernel recursion may use ``geometry.angle`` and ``cos`` as its buffers
        (only without ``angles``).
      xp: numpy, or jax.numpy under jit (no ``refined`` pairs, no ``out``).
      net: None for the bias-free norm-preserving net; a ``ntkcond.activations.Net``
        (w_std, b_std, residual, any activation; also accepted as ``act``, so that engines
        pass it through unchanged) for the general recursion
        (``ntkcond.infinite.family.family_state``; NumPy only; R, Z are then 1 ∓ cos φ).

    Yields:
      (L, K, R, Z) per depth, ascending; K and R, Z None where not asked for. With
      ``out=None`` K is a new array; R, Z may be updated in place by the next step.
    """
    depths = sorted(set(depths))
    if net is None and isinstance(act, Net):  # a general net in the activation's place
        net = act
    if net is None and not act.is_leaky:
        raise ValueError(
            f"activation {act.name!r} is not homogeneous: the bias-free norm-preserving "
            "recursion covers the leaky family only; pass w_std (and b_std) to the public "
            "function for the general net")
    if net is not None:
        from .family import family_state

        yield from family_state(geometry, net, depths, layers, kernel=kernel, angles=angles,
                                out=out, xp=xp)
        return
    ks = _bias_free_kernel(geometry, act, depths, layers, overwrite and not angles, out, xp) \
        if kernel else None
    gs = gradient_recursion(geometry.angle, geometry.cos, depths, act, layers, xp) \
        if angles else None
    for L in depths:
        K = next(ks)[1] if ks is not None else None
        R = Z = None
        if gs is not None:
            _, _, R, Z, _ = next(gs)
        yield L, K, R, Z


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


def relu_weights(act: Activation) -> tuple[float, float]:
    """(w_lin, w_relu) of eq. (2) of ``ntkcond.infinite.angles``: 2α/(1+α²), (1−α)²/(1+α²)."""
    a = act.slope
    return 2.0 * a / (1.0 + a * a), (1.0 - a) ** 2 / (1.0 + a * a)


def _bias_free_kernel(geometry: PairGeometry, act, depths, layers, overwrite, out, xp):
    """K (or T for unit rows) for every depth, ascending, in one pass (module docstring).

    Yields (L, K): with ``out`` K is ``out[L]``; else a new array (T itself for unit rows,
    updated in place by the next step: copy it to keep it).
    """
    last_only = layers == "last"
    member = (lambda i: True) if layers is None or last_only else (lambda i: i in layers)
    scale = geometry.scale() if xp is np else None

    def emit(L, T):
        if out is None:
            return L, (T if scale is None else scale * T)
        if scale is None:
            np.copyto(out[L], T)
        else:
            np.multiply(scale, T, out=out[L])
        return L, out[L]

    cos0 = geometry.cos
    if act.is_linear:  # angles unchanged, ġ = 1: T = |S ∩ [0, L]|·cos θ₀
        for L in depths:
            count = 1 if last_only else sum(1 for i in range(L + 1) if member(i))
            yield emit(L, count * cos0)
        return
    ops = _InPlace if xp is np else _Pure(xp)
    call = ops.call
    w_lin, w_relu = relu_weights(act)
    beta = derivative_slope(act)
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
    fix0 = None  # layer 0 at θ₀ = π − δ: (flat indices, ġ(θ₀), cos θ₁), without cancellation
    if delta is not None:
        flat = np.ravel_multi_index(at_pi, t.shape) if t.ndim > 1 else at_pi[0]
        order = np.argsort(flat, kind="stable")
        fix0 = (flat[order], (w_lin + beta * delta)[order],  # ġ(π − δ) = 1 − βπ + βδ
                (w_relu * sin_minus_angle_cos(delta) / np.pi - w_lin * np.cos(delta))[order])
    if 0 in depths:
        yield emit(0, T)

    def layer(k, t, c, u, v, sn, T, g, s, fix):
        """One layer on (views of) the state; returns it (new arrays under jax)."""
        if not last_only:
            g = call(ops.mul, t, -beta, out=g)
            g = call(ops.add, g, 1.0, out=g)
            if fix is not None:
                g[fix[0]] = fix[1]
            T = call(ops.mul, T, g, out=T)  # ġ(θ_k)·T
        s = call(ops.mul, t, c, out=s)
        s = call(ops.sub, sn, s, out=s)
        s = call(ops.mul, s, w_relu / np.pi, out=s)  # s = w_relu (sin θ − θ cos θ)/π
        c = call(ops.add, c, s, out=c)  # cos θ' = w_lin cos θ + w_relu κ₁(θ)
        if fix is not None:
            c[fix[0]] = fix[2]
        if k + 1 < depths[-1]:  # θ' is needed by a next layer only
            u = call(ops.sub, u, s, out=u)
            u = call(ops.maximum, u, 0.0, out=u)  # 1 − cos θ' ≥ 0 (rounding)
            v = call(ops.add, v, s, out=v)
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
                yield emit(k + 1, T)
        return
    # NumPy: each layer over cache-sized chunks of the (contiguous) state, in place
    state = [np.ascontiguousarray(a) for a in (t, c, u, v, sn, T)]
    T = state[5]
    views = [a.reshape(-1) for a in state]
    size = views[0].size
    step = CHUNK_ENTRIES
    g, s = np.empty(min(size, step)), np.empty(min(size, step))
    for k in range(depths[-1]):
        if size <= step:  # one chunk (the tiles of ``ntkcond.scale.tiles``)
            layer(k, *views, g, s, fix0 if k == 0 else None)
        else:
            for a in range(0, size, step):
                b = min(size, a + step)
                fix = None
                if k == 0 and fix0 is not None:
                    lo, hi = np.searchsorted(fix0[0], [a, b])
                    if hi > lo:
                        fix = (fix0[0][lo:hi] - a, fix0[1][lo:hi], fix0[2][lo:hi])
                layer(k, *(x[a:b] for x in views), g[:b - a], s[:b - a], fix)
        if k + 1 in depths:
            yield emit(k + 1, T)


def one_minus_cos(angle, xp=np):
    return 2.0 * xp.sin(0.5 * angle) ** 2


def one_plus_cos(angle, xp=np):
    return 2.0 * xp.cos(0.5 * angle) ** 2


def angle_from(one_minus_cos, one_plus_cos, xp=np):
    """θ = 2 atan2(√(1 − cos θ), √(1 + cos θ)): exact to rounding from accurate inputs."""
    return 2.0 * xp.arctan2(xp.sqrt(one_minus_cos), xp.sqrt(one_plus_cos))


def layer_step(angle, cos, act: Activation, xp=np):
    """One layer of eq. (2) of ``ntkcond.infinite.angles``:
    (θ, cos θ) ↦ (θ', cos θ', 1 − cos θ', 1 + cos θ'), the terms non-negative."""
    u, v = one_minus_cos(angle, xp), one_plus_cos(angle, xp)
    kappa1 = (xp.sin(angle) + (np.pi - angle) * cos) / np.pi
    u_relu = u - sin_minus_angle_cos(angle, xp) / np.pi  # 1 − κ₁ = [π(1 − cos θ) − s(θ)]/π ≥ 0
    w_lin, w_relu = relu_weights(act)
    cos_new = w_lin * cos + w_relu * kappa1
    u_new = w_lin * u + w_relu * u_relu
    v_new = w_lin * v + w_relu * (1.0 + kappa1)
    return angle_from(u_new, v_new, xp), cos_new, u_new, v_new


def derivative_slope(act: Activation) -> float:
    """β of ġ(θ) = 1 − βθ, eq. (3) of ``ntkcond.infinite.angles``: (1 − α)²/(π(1 + α²))."""
    a = act.slope
    return (1.0 - a) ** 2 / (np.pi * (1.0 + a * a))


def gradient_recursion(angle0, cos0, depths, act: Activation, layers=None, xp=np):
    """Eq. (4) of ``ntkcond.infinite.angles`` for every depth in ``depths`` (ascending), in one
    forward pass: the angle state of ``recursion`` (``angles=True``).

    Yields (depth, T, R, Z, count): with S = ``layers`` ∩ [0, depth] (all layers if None;
    S = {depth} at every depth if ``layers == "last"``),
      T = Σ_{i∈S} cos θ_i Π ġ     (normalised NTK, 1 per layer on the diagonal),
      R = Σ_{i∈S} (1 − cos θ_i Π ġ) = count − T,
      Z = Σ_{i∈S} (1 + cos θ_i Π ġ) = count + T,
    with R and Z built from non-negative terms only:
      R_{k+1} = s·(1 − cos θ_{k+1}) + count_k·βθ_k + ġ(θ_k)·R_k   (s = 1 if k+1 ∈ S)
      Z_{k+1} = s·(1 + cos θ_{k+1}) + count_k·βθ_k + ġ(θ_k)·Z_k
      T_{k+1} = s·cos θ_{k+1} + ġ(θ_k)·T_k.
    Works on any numpy arrays (scalars for closed forms, n1 × n2 matrices for kernels), and on
    jax arrays under jit with ``xp=jax.numpy`` (``ntkcond.scale.sharded``). Kernels come from
    ``recursion`` (its T agrees with this T to a few eps absolute).
    """
    wanted = set(depths)
    beta = derivative_slope(act)
    last_only = layers == "last"  # S = {depth} for each depth of the sweep
    member = (lambda k: True) if layers is None or last_only else (lambda k: k in layers)
    angle, cos = angle0, cos0
    s = 1.0 if member(0) else 0.0
    u, v = one_minus_cos(angle, xp), one_plus_cos(angle, xp)
    T, R, Z, count = s * cos, s * u, s * v, s
    if 0 in wanted:
        yield (0, cos, u, v, 1.0) if last_only else (0, T, R, Z, count)
    for k in range(max(depths)):
        gdot_gap = beta * angle  # 1 − ġ(θ_k) ≥ 0
        gdot = 1.0 - gdot_gap
        if act.is_linear:
            u_new, v_new = u, v
        else:
            angle, cos, u_new, v_new = layer_step(angle, cos, act, xp)
        s = 1.0 if member(k + 1) else 0.0
        T = s * cos + gdot * T
        R = s * u_new + count * gdot_gap + gdot * R
        Z = s * v_new + count * gdot_gap + gdot * Z
        count += s
        if k + 1 in wanted:
            yield (k + 1, cos, u_new, v_new, 1.0) if last_only else (k + 1, T, R, Z, count)


def phi_from_angle(angle0, cos0, depth, act, layers):
    """φ_L(θ₀) of eq. (4) of ``ntkcond.infinite.angles`` (all shapes), radians."""
    if act.is_linear:
        return np.array(angle0, dtype=np.float64, copy=True)
    _, _, R, Z, _ = next(gradient_recursion(angle0, cos0, [depth], act, set(layers)))
    return angle_from(R, Z)
