"""Layers of a network: each one object that carries its infinite-width kernel map, its
finite-width ``init``/``apply`` (JAX, neural-tangents' conventions) and the properties the
engines decide on (``homogeneous``). ``ntkcond.stax`` wraps them in neural-tangents'
interface; ``ntkcond.network.mlp`` builds the fully-connected nets of ``infinite_ntk``'s
keywords from the same objects; ``ntkcond.infinite.engine`` evaluates them.

Kernel maps (NTK parameterisation; Jacot et al. 2018, Lee et al. 2019; neural-tangents'
``stax``), on the ``PairState`` of ``ntkcond.network.state`` (NNGP block (q₁, q₂, c, D),
NTK block (A, B, C, G)):

Dense(W_std = s_w, b_std = s_b), trainable:

    q′ = s_w²q + s_b²,  c′ = s_w²c + s_b²,  D′ = s_w²D,
    Θ′ = [trainable]·Σ′ + s_w²Θ,  G′ = [trainable]·D′ + s_w²G                            (1)

Nonlinearity(σ), with (M, Dσ, Ṁ, Dσ′) = σ.dual(q₁, q₂, c, D) and (P, Ṗ) = σ.diagonal(q)
(``ntkcond.activations.base`` eqs. (1)–(2)):

    q′ = P,  c′ = M,  D′ = Dσ,   A′ = Ṗ₁A,  B′ = Ṗ₂B,  C′ = ṀC,
    G′ = ¼(Ṗ₁ − Ṗ₂)(A − B) + ½(Ṗ₁ + Ṗ₂)G + Dσ′·C                                        (2)

(G′ = ½(A′ + B′) − C′ with Ṁ = ½(Ṗ₁ + Ṗ₂) − Dσ′, every term a product of non-negative
factors or of two differences). FanOut(n) copies the state, ``Parallel`` maps each branch,
FanInSum adds the blocks (and their gaps: D is linear in (q₁, q₂, c)), Identity leaves it.
Every map is pure and works on blocks and on lists of pairs alike (shapes broadcast).

Finite width (``init(key, input_shape) -> (output_shape, params)``, ``apply(params, x)``):
Dense computes s_w/√fan_in · x W + s_b·b on the last axis with W, b ~ N(0, 1) (b None for
``b_std=None``), as neural-tangents' ``Dense``; ``Serial`` splits its key per layer and
``Parallel`` per branch as neural-tangents' ``serial``/``parallel`` do.
"""
from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from ..activations import ActivationFunction
from .spatial import SpatialState
from .state import PairState

__all__ = ["Layer", "Dense", "Nonlinearity", "Identity", "FanOut", "FanInSum", "Parallel",
           "Serial", "serial", "leaves", "HomogeneousChain", "homogeneous_chain", "gain_product",
           "affine_kernel",
           "MAX_STD", "check_std"]

#: Largest W_std, b_std accepted (and smallest nonzero): their squares must be normal floats.
MAX_STD = 1e150
#: Range of a layer's weight (and nonzero bias) variance.
MIN_VARIANCE, MAX_VARIANCE = 1e-300, 1e300


def check_std(value, name: str, where: str, *, allow_none: bool, allow_zero: bool):
    """A weight or bias std: a finite real in [1/MAX_STD, MAX_STD] (0 where allowed; None
    where allowed), else TypeError/ValueError naming ``where`` and ``name``."""
    if value is None:
        if allow_none:
            return None
        raise TypeError(f"{where}: expected {name} a real number, got None")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: expected {name} a real number, got {value!r}")
    value = float(value)
    if value == 0.0 and allow_zero:
        return 0.0
    if not (math.isfinite(value) and 1.0 / MAX_STD <= value <= MAX_STD):
        low = "0 or " if allow_zero else ""
        raise ValueError(f"{where}: expected {name} {low}in [{1 / MAX_STD:g}, {MAX_STD:g}] (its "
                         f"square a normal float64), got {value!r}")
    return value


class Layer:
    """Base class of the layers (module docstring). Subclasses are frozen dataclasses."""

    #: needs every pixel pair of images (pooling), not only the spatial diagonal
    #: (``ntkcond.network.spatial``): a property stacks aggregate
    needs_pixel_pairs = False

    #: acts on images (a convolution, pooling or read-out): the net takes NHWC inputs
    spatial = False

    #: positively homogeneous of degree 1 in its input (no biases, homogeneous activations)
    @property
    def homogeneous(self) -> bool:  # pragma: no cover - every layer says
        raise NotImplementedError

    def kernel(self, state):  # pragma: no cover
        """The infinite-width map of the layer on a ``PairState`` (a list for multi-input
        layers), eqs. (1)–(2)."""
        raise NotImplementedError

    def variance(self, q):
        """The map of the diagonal alone: the variance Σ(x, x) after the layer from the one
        before (true units; a list for multi-input layers) — the diagonal of ``kernel``."""
        return q

    def output_shape(self, input_shape):
        return input_shape

    def init(self, key, input_shape):
        """(output_shape, params) of the finite-width layer (``params`` () for layers without)."""
        return self.output_shape(input_shape), ()

    def apply(self, params, x):  # pragma: no cover
        raise NotImplementedError


def affine_kernel(s: PairState, sw2: float, sb2: float, trainable: bool, pairs=None, row=None,
                  col=None, gap=None) -> PairState:
    """Eq. (1) for any linear weight layer: q′ = s_w²·f(q) + s_b², c′ = s_w²·f(c) + s_b²,
    D′ = s_w²·f(D), Θ′ = [trainable]·Σ′ + s_w²·f(Θ), G′ = [trainable]·D′ + s_w²·f(G), with f the
    layer's linear map on the pair arrays (``pairs``: c, D, C, G), the rows' variances
    (``row``: q₁, A) and the columns' (``col``: q₂, B); the identity for ``Dense``, the filter
    average for a convolution (``ntkcond.network.spatial`` eq. (1)); ``gap(arr, rows, cols)``
    the map of a gap array given its sides' variances (default ``pairs``). s_b² enters in the
    stored frame (2^−nngp_exp)."""
    same = lambda a: a  # noqa: E731
    fp, fr, fc = pairs or same, row or same, col or same
    fg = gap or (lambda a, rows, cols: fp(a))
    b = 0.0
    if sb2:
        with np.errstate(under="ignore"):
            b = np.ldexp(sb2, -s.nngp_exp) if s.nngp_exp else sb2
    q1, q2, c = sw2 * fr(s.q1) + b, sw2 * fc(s.q2) + b, sw2 * fp(s.c) + b
    D = sw2 * fg(s.D, s.q1, s.q2)
    out = s.replace(q1=q1, q2=q2, c=c, D=D, layer=s.layer + 1)
    if s.A is not None:
        shift = s.nngp_exp - s.ntk_exp
        t = (lambda a: a if shift == 0 else np.ldexp(a, shift)) if trainable else None
        A = sw2 * fr(s.A) + (t(q1) if t else 0.0)
        B = sw2 * fc(s.B) + (t(q2) if t else 0.0)
        C = sw2 * fp(s.C) + (t(c) if t else 0.0)
        G = None if s.G is None else sw2 * fg(s.G, s.A, s.B) + (t(D) if t else 0.0)
        out = out.replace(A=A, B=B, C=C, G=G)
    return out.rescaled()


def _highest():
    import jax

    return jax.lax.Precision.HIGHEST


@dataclasses.dataclass(frozen=True)
class Dense(Layer):
    """A fully-connected layer in NTK parameterisation, eq. (1).

    Built from stds with ``Dense.of_std`` (neural-tangents' ``W_std``, ``b_std``); stored as
    variances, so that a variance given exactly (the norm-preserving c = 2/(1 + α²)) stays
    exact.

    Attributes:
      out_dim: output width (None: unspecified, infinite width only).
      weight_variance: s_w² (a normal float64 in [1e-300, 1e300]).
      bias_variance: s_b² ≥ 0, or None for no bias (0 keeps a zero-variance bias, as
        neural-tangents does for ``b_std=0``: the same kernel).
      trainable: whether W and b are trained (their term in Θ, eq. (1)).
    """

    out_dim: int | None = None
    weight_variance: float = 1.0
    bias_variance: float | None = None
    trainable: bool = True

    def __post_init__(self):
        where = "Dense"
        if self.out_dim is not None:
            if isinstance(self.out_dim, (bool, np.bool_)) or not isinstance(self.out_dim, numbers.Integral):
                raise TypeError(f"{where}: expected out_dim a positive integer, got {self.out_dim!r}")
            if self.out_dim < 1:
                raise ValueError(f"{where}: expected out_dim >= 1, got {self.out_dim}")
            object.__setattr__(self, "out_dim", int(self.out_dim))
        for name, value, none in (("weight_variance", self.weight_variance, False),
                                  ("bias_variance", self.bias_variance, True)):
            if value is None and none:
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise TypeError(f"{where}: expected {name} a real number, got {value!r}")
            value = float(value)
            ok = math.isfinite(value) and (value == 0.0 and none or
                                           MIN_VARIANCE <= value <= MAX_VARIANCE)
            if not ok:
                raise ValueError(f"{where}: expected {name} in [{MIN_VARIANCE:g}, "
                                 f"{MAX_VARIANCE:g}]{' or 0' if none else ''}, got {value!r}")
            object.__setattr__(self, name, value)
        if not isinstance(self.trainable, (bool, np.bool_)):
            raise TypeError(f"{where}: expected trainable a bool, got {self.trainable!r}")
        object.__setattr__(self, "trainable", bool(self.trainable))

    @classmethod
    def of_std(cls, out_dim=None, W_std=1.0, b_std=None, *, trainable=True, where="Dense"):
        """The layer of neural-tangents' ``Dense(out_dim, W_std, b_std)``: stds checked
        (``W_std`` in [1e-150, 1e150]; ``b_std`` None, 0 or in that range), then squared."""
        w = check_std(W_std, "W_std", where, allow_none=False, allow_zero=False)
        b = check_std(b_std, "b_std", where, allow_none=True, allow_zero=True)
        return cls(out_dim, w * w, None if b is None else b * b, trainable)

    @property
    def W_std(self) -> float:
        return math.sqrt(self.weight_variance)

    @property
    def b_std(self) -> float | None:
        return None if self.bias_variance is None else math.sqrt(self.bias_variance)

    @property
    def homogeneous(self) -> bool:
        return not self.bias_variance

    def variance(self, q):
        """q′ = s_w²q + s_b², eq. (1): the diagonal alone (true units)."""
        return self.weight_variance * q + (self.bias_variance or 0.0)

    def kernel(self, s: PairState) -> PairState:
        if not isinstance(s, PairState) or np.ndim(s.c) > 2:
            raise ValueError("Dense: a read-out is missing before Dense: the state still has "
                             "pixels; add stax.Flatten() or stax.GlobalAvgPool() after the "
                             "convolutions")
        return affine_kernel(s, self.weight_variance, self.bias_variance or 0.0, self.trainable)

    def output_shape(self, input_shape):
        if self.out_dim is None:
            raise ValueError("Dense: a finite-width net needs out_dim (the layer's width), got None")
        return tuple(input_shape[:-1]) + (self.out_dim,)

    def init(self, key, input_shape):
        import jax

        shape = self.output_shape(input_shape)
        k1, k2 = jax.random.split(key)
        W = jax.random.normal(k1, (input_shape[-1], self.out_dim))
        b = None if self.bias_variance is None else jax.random.normal(k2, (self.out_dim,))
        return shape, (W, b)

    def apply(self, params, x):
        import jax.numpy as jnp

        W, b = params
        out = math.sqrt(self.weight_variance / x.shape[-1]) * jnp.matmul(x, W, precision=_highest())
        if b is not None:
            out = out + self.b_std * b
        return out


@dataclasses.dataclass(frozen=True)
class Nonlinearity(Layer):
    """An elementwise activation layer, eq. (2).

    Attributes:
      act: the activation object (``ntkcond.activations``).
    """

    act: ActivationFunction

    def __post_init__(self):
        if not isinstance(self.act, ActivationFunction):
            raise TypeError(f"Nonlinearity: expected an activation object, got "
                            f"{type(self.act).__name__}")

    @property
    def homogeneous(self) -> bool:
        return self.act.homogeneous

    def variance(self, q):
        """P(q) = E[σ(u)²], u ~ N(0, q)."""
        return self.act.diagonal(q)[0]

    def kernel(self, s: PairState) -> PairState:
        if isinstance(s, SpatialState):  # pixel by pixel, in every part
            return s.map(self.kernel)
        act = self.act
        if not act.homogeneous:  # its duals depend on the absolute variance
            s = s.true_nngp(f"the NNGP entering activation {act.name!r} after layer {s.layer}")
        gaps = s.exact_gaps or act.gaps_for_kernels
        M, Ds, Md, Dd = act.dual(s.q1, s.q2, s.c, s.D, gaps=gaps)
        P1, Pd1 = act.diagonal(s.q1)
        P2, Pd2 = act.diagonal(s.q2)
        D = Ds if Ds is not None else np.maximum(0.5 * (P1 + P2) - M, 0.0)
        # identical inputs (gap 0, equal variances) stay identical: M = P, Ṁ = Ṗ, gaps 0
        # exactly, not to rounding, which a chaotic layer map (tanh at s_w = 1.5) amplifies
        # by ~1.14 a layer until the self-pair decorrelates (after ~300 layers)
        same = (np.asarray(s.D) == 0) & (np.asarray(s.q1) == np.asarray(s.q2))
        if np.any(same):
            M, Md, D = np.where(same, P1, M), np.where(same, Pd1, Md), np.where(same, 0.0, D)
            Dd = None if Dd is None else np.where(same, 0.0, Dd)
        exact = s.exact_gaps and Ds is not None
        out = s.replace(q1=P1, q2=P2, c=M, D=D, exact_gaps=exact)
        if s.A is not None:
            G = None
            if exact and s.G is not None and Dd is not None:
                G = 0.25 * (Pd1 - Pd2) * (s.A - s.B) + 0.5 * (Pd1 + Pd2) * s.G + Dd * s.C
            out = out.replace(A=Pd1 * s.A, B=Pd2 * s.B, C=Md * s.C, G=G)
        return out.rescaled()

    def apply(self, params, x):
        return self.act.jax_fn(x)


@dataclasses.dataclass(frozen=True)
class Identity(Layer):
    """The identity."""

    @property
    def homogeneous(self) -> bool:
        return True

    def kernel(self, s):
        return s

    def apply(self, params, x):
        return x


@dataclasses.dataclass(frozen=True)
class FanOut(Layer):
    """``num`` copies of its input (a list), for ``Parallel`` branches."""

    num: int = 2

    def __post_init__(self):
        if isinstance(self.num, (bool, np.bool_)) or not isinstance(self.num, numbers.Integral) \
                or self.num < 1:
            raise ValueError(f"FanOut: expected num a positive integer, got {self.num!r}")

    @property
    def homogeneous(self) -> bool:
        return True

    def kernel(self, s):
        return [s] * self.num

    variance = kernel

    def output_shape(self, input_shape):
        return [input_shape] * self.num

    def apply(self, params, x):
        return [x] * self.num


def _aligned(blocks, exps):
    """The blocks brought to the largest exponent (exact powers of two), and that exponent."""
    e = max(exps)
    with np.errstate(under="ignore"):
        return [b if x == e else np.ldexp(b, x - e) for b, x in zip(blocks, exps)], e


@dataclasses.dataclass(frozen=True)
class FanInSum(Layer):
    """The sum of its inputs (a list): kernels, and their gaps, add."""

    @property
    def homogeneous(self) -> bool:
        return True

    def kernel(self, states):
        states = _as_list(states, "FanInSum")
        if isinstance(states[0], SpatialState):
            return SpatialState(self.kernel([s.pairs for s in states]),
                                self.kernel([s.self1 for s in states]),
                                None if states[0].self2 is None else
                                self.kernel([s.self2 for s in states]))
        fields = {}
        for names, exp in ((("q1", "q2", "c", "D"), "nngp_exp"), (("A", "B", "C", "G"), "ntk_exp")):
            if any(getattr(s, names[0]) is None for s in states):
                fields.update({n: None for n in names})
                continue
            e = max(getattr(s, exp) for s in states)
            for n in names:
                parts = [getattr(s, n) for s in states]
                if any(p is None for p in parts):
                    fields[n] = None
                    continue
                aligned, e = _aligned(parts, [getattr(s, exp) for s in states])
                total = aligned[0]
                for p in aligned[1:]:
                    total = total + p
                fields[n] = total
            fields[exp] = e
        exact = all(s.exact_gaps for s in states)
        return states[0].replace(exact_gaps=exact, layer=max(s.layer for s in states),
                                 **fields).rescaled()

    def variance(self, qs):
        qs = _as_list(qs, "FanInSum")
        total = qs[0]
        for q in qs[1:]:
            total = total + q
        return total

    def output_shape(self, input_shape):
        shapes = _as_list(input_shape, "FanInSum")
        if any(tuple(s) != tuple(shapes[0]) for s in shapes):
            raise ValueError(f"FanInSum: expected inputs of one shape, got {shapes}")
        return shapes[0]

    def apply(self, params, x):
        xs = _as_list(x, "FanInSum")
        total = xs[0]
        for v in xs[1:]:
            total = total + v
        return total


def _as_list(x, where):
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{where}: expected a list of inputs (after FanOut), got one input")
    return list(x)


@dataclasses.dataclass(frozen=True)
class Parallel(Layer):
    """Branches applied to the elements of a list input (neural-tangents' ``parallel``)."""

    branches: tuple

    @property
    def homogeneous(self) -> bool:
        return all(b.homogeneous for b in self.branches)

    @property
    def needs_pixel_pairs(self) -> bool:
        return any(b.needs_pixel_pairs for b in self.branches)

    @property
    def spatial(self) -> bool:
        return any(b.spatial for b in self.branches)

    def _pairs(self, xs, where):
        xs = _as_list(xs, where)
        if len(xs) != len(self.branches):
            raise ValueError(f"{where}: expected {len(self.branches)} inputs (one per branch), "
                             f"got {len(xs)}")
        return zip(self.branches, xs)

    def kernel(self, states):
        return [b.kernel(s) for b, s in self._pairs(states, "parallel")]

    def variance(self, qs):
        return [b.variance(q) for b, q in self._pairs(qs, "parallel")]

    def output_shape(self, input_shape):
        return [b.output_shape(s) for b, s in self._pairs(input_shape, "parallel")]

    def init(self, key, input_shape):
        import jax

        keys = jax.random.split(key, len(self.branches))
        out = [b.init(k, s) for b, k, s in zip(self.branches, keys,
                                               _as_list(input_shape, "parallel"))]
        return [o[0] for o in out], tuple(o[1] for o in out)

    def apply(self, params, x):
        return [b.apply(p, v) for b, p, v in zip(self.branches, params, _as_list(x, "parallel"))]


@dataclasses.dataclass(frozen=True)
class Serial(Layer):
    """Layers applied in turn (neural-tangents' ``serial``)."""

    layers: tuple

    @property
    def homogeneous(self) -> bool:
        return all(layer.homogeneous for layer in self.layers)

    @property
    def needs_pixel_pairs(self) -> bool:
        return any(layer.needs_pixel_pairs for layer in self.layers)

    @property
    def spatial(self) -> bool:
        return any(layer.spatial for layer in self.layers)

    def kernel(self, state):
        for layer in self.layers:
            state = layer.kernel(state)
        return state

    def variance(self, q):
        for layer in self.layers:
            q = layer.variance(q)
        return q

    def output_shape(self, input_shape):
        for layer in self.layers:
            input_shape = layer.output_shape(input_shape)
        return input_shape

    def init(self, key, input_shape):
        import jax

        params = []
        for layer in self.layers:
            key, sub = jax.random.split(key)
            input_shape, p = layer.init(sub, input_shape)
            params.append(p)
        return input_shape, tuple(params)

    def apply(self, params, x):
        for layer, p in zip(self.layers, params):
            x = layer.apply(p, x)
        return x


def serial(*layers) -> Serial:
    """``Serial`` of the layers, nested serials flattened (the same kernel and the same
    layer order; parameters follow the flattened order)."""
    return Serial(tuple(leaves(Serial(tuple(layers)))))


def leaves(layer):
    """The layers of nested ``Serial`` stacks, in order (other layers are leaves)."""
    if isinstance(layer, Serial):
        return [leaf for item in layer.layers for leaf in leaves(item)]
    return [layer]


@dataclasses.dataclass(frozen=True)
class HomogeneousChain:
    """A plain bias-free stack Dense (σ Dense)* with positively homogeneous σ: what the fast
    angle recursion of ``ntkcond.infinite.recursion`` computes.

    Attributes:
      variances: s_w² of each Dense, in order (the last is the read-out).
      acts: the activation after each hidden Dense (len(variances) − 1).
      trainable: whether each Dense is trained.
    """

    variances: tuple
    acts: tuple
    trainable: tuple

    @property
    def depth(self) -> int:
        return len(self.acts)

    def gain(self) -> tuple:
        """G = s₀²·Π_{k≥1} s_k² E[σ_{k−1}(z)²], the output variance over ‖x‖²/d (the NTK and
        NNGP are ‖x‖‖x′‖/d·G times the normalised angle recursion), as (m, e) with
        G = m·2^e, m ∈ [0.5, 1) (``gain_product``: no overflow or underflow at any depth)."""
        return gain_product(self.variances[0], ((s2, act.second_moment) for s2, act in
                                                zip(self.variances[1:], self.acts)))


def gain_product(first: float, factors) -> tuple:
    """(m, e) with m·2^e = first·Π (s²·E[σ²]) over ``factors`` ((s², E[σ²]) pairs), multiplied
    in that order and renormalised by powers of two after each step (exact: the mantissas are
    those of the plain float product wherever that stays in range)."""
    m, e = math.frexp(first)
    for s2, moment in factors:
        m, k = math.frexp(m * (s2 * moment))
        e += k
    return m, e


def homogeneous_chain(layer) -> HomogeneousChain | None:
    """The ``HomogeneousChain`` of ``layer`` if it is one (after flattening serials), else
    None: a property of the object, whatever way it was spelled."""
    items = leaves(layer)
    if not items or len(items) % 2 != 1:
        return None
    dense, acts = items[0::2], items[1::2]
    if not all(isinstance(d, Dense) and not d.bias_variance for d in dense):
        return None
    if not all(isinstance(a, Nonlinearity) and a.act.homogeneous for a in acts):
        return None
    return HomogeneousChain(tuple(d.weight_variance for d in dense), tuple(a.act for a in acts),
                            tuple(d.trainable for d in dense))
