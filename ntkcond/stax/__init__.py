"""neural-tangents' ``stax`` interface on ntkcond's layer algebra: code written for
``from neural_tangents import stax`` runs with ``from ntkcond import stax``, on current jax,
with kernels exact to float64.

    from ntkcond import stax
    init_fn, apply_fn, kernel_fn = stax.serial(
        stax.Dense(512, W_std=1.5, b_std=0.05), stax.Erf(),
        stax.Dense(512, W_std=1.5, b_std=0.05), stax.Relu(),
        stax.Dense(1, W_std=1.5, b_std=0.05))
    k = kernel_fn(x1, x2, ("nngp", "ntk"))        # k.nngp, k.ntk: (n1, n2) float64
    ntk = kernel_fn(x1, None, "ntk")              # one string: the bare array
    _, params = init_fn(jax.random.PRNGKey(0), x1.shape)
    y = apply_fn(params, x1)                      # the finite net (NTK parameterisation)
    Θ̂ = ntkcond.empirical_ntk_fn(apply_fn)(params, x1)   # its exact empirical NTK

Every constructor returns a ``Layer``: it unpacks as neural-tangents' triple
``(init_fn, apply_fn, kernel_fn)`` and is also one object (``Layer.spec``, a layer of
``ntkcond.network``), so the same net reaches ``ntkcond.infinite.engine`` — the engine of
``ntkcond.infinite_ntk`` — and a one-activation stack equals ``infinite_ntk`` with the same
``w_std``/``b_std`` (a bias-free stack of the leaky family takes the fast angle recursion,
whatever its weight stds or per-layer slopes).

Conventions (neural-tangents'): inputs (n, d), rows are examples; ``Dense`` in NTK
parameterisation, W_std/√fan_in·xW + b_std·b with W, b ~ N(0, 1), the kernel of the input
x·x′/d; ``kernel_fn(x1, x2=None, get=None)`` returns ``Kernel(nngp, ntk)`` for ``get=None``,
the bare array for one string, a ``Kernel`` of the names asked for, in their order, for a
tuple. Under ``jax.jit`` (``static_argnames="get"``) kernel_fn calls the NumPy engine
through ``jax.pure_callback`` (float64 needs jax's x64 mode, as neural-tangents' does).

Layers: ``serial``, ``parallel``, ``FanOut``, ``FanInSum``, ``Identity``, ``Dense``, and the
activations ``Relu``, ``LeakyRelu(alpha)``, ``Abs``, ``ABRelu(a, b)``, ``Erf(a, b, c)``,
``Gelu(approximate)``, ``Sin(a, b, c)``, ``Tanh``, ``Softplus``, ``Silu``,
``Elementwise(fn)`` (kernels from ``fn`` itself, by Mehler's series or quadrature: an
``nngp_fn`` given for neural-tangents is accepted and not needed), and
``ElementwiseNumerical(fn, deg)`` (the same). Differences from neural-tangents: ``Gelu(
approximate=True)`` has the kernels of the tanh approximation its ``apply_fn`` computes (not
exact GELU's); ``parameterization="standard"`` is refused with a clear error.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import NamedTuple

import numpy as np

from .. import activations as A
from ..infinite.engine import evaluate, evaluate_images
from ..infinite.geometry import pair_geometry
from ..network import KernelRangeError
from ..network import conv as CV
from ..network import layers as L

__all__ = ["Layer", "Kernel", "serial", "parallel", "FanOut", "FanInSum", "Identity", "Dense",
           "Conv", "AvgPool", "GlobalAvgPool", "Flatten",
           "Relu", "LeakyRelu", "Abs", "ABRelu", "Erf", "Gelu", "Sin", "Tanh", "Softplus",
           "Silu", "Elementwise", "ElementwiseNumerical"]

_GETS = ("nngp", "ntk")


class Kernel(NamedTuple):
    """The kernels ``kernel_fn`` returns: (n1, n2) float64 arrays (None where not asked for)."""

    nngp: object = None
    ntk: object = None


@dataclasses.dataclass(frozen=True)
class Layer:
    """A layer (or a stack) as neural-tangents' ``(init_fn, apply_fn, kernel_fn)`` triple and
    as one object: ``spec`` is its ``ntkcond.network`` layer."""

    spec: L.Layer

    # -------------------------------------------------------- neural-tangents' triple
    def __iter__(self):
        return iter((self.init_fn, self.apply_fn, self.kernel_fn))

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i):
        return (self.init_fn, self.apply_fn, self.kernel_fn)[i]

    def init_fn(self, key, input_shape):
        """(output_shape, params) of the finite net: weights N(0, 1), neural-tangents' layout
        (``Dense``: (W, b), b None without bias; ``serial``/``parallel``: tuples)."""
        return self.spec.init(key, tuple(input_shape) if not isinstance(input_shape, list)
                              else input_shape)

    def apply_fn(self, params, x, **kwargs):
        """The finite net's outputs (jax; the dtype of params and x)."""
        return self.spec.apply(params, x)

    def kernel_fn(self, x1, x2=None, get=None, **kwargs):
        """Infinite-width NNGP and NTK of the net on inputs (n1, d) and (n2, d) (x2 None: x1).

        Args:
          x1, x2: inputs, rows are examples.
          get: None (both, as ``Kernel``), "nngp" or "ntk" (the bare array), or a tuple of
            them (a ``Kernel`` with those filled).
          kwargs: neural-tangents' options that change nothing here (``diagonal_batch``,
            ``diagonal_spatial`` False); any other is refused.

        Returns:
          float64 NumPy arrays (n1, n2) (jax arrays under ``jax.jit``).

        Raises:
          ValueError, TypeError: bad inputs or ``get``; ``KernelRangeError`` where a kernel
            leaves float64's range.
        """
        where = "kernel_fn"
        names, single = _get(get, where)
        for key, value in kwargs.items():
            if key not in ("diagonal_batch", "diagonal_spatial") or value:
                raise TypeError(f"{where}: unexpected keyword argument {key}={value!r} (ntkcond "
                                "computes whole kernels; pass x1, x2 and get)")
        if _traced(x1, x2):
            return _callback(self, x1, x2, names, single)
        try:
            if self.spec.spatial:  # a convolutional net: NHWC images
                out = evaluate_images(self.spec, x1, x2, nngp="nngp" in names,
                                      ntk="ntk" in names, where=where)
            else:
                out = evaluate(self.spec, pair_geometry(x1, x2, where), nngp="nngp" in names,
                               ntk="ntk" in names, overwrite=True, where=where)
        except KernelRangeError as err:
            raise KernelRangeError(f"{err}; angles and condition numbers are scale-invariant: "
                                   "rescale x") from None
        result = {"nngp": out.nngp, "ntk": out.ntk}
        if single:
            return result[names[0]]
        return Kernel(**{n: result[n] for n in names})

    def __repr__(self) -> str:
        return f"stax.Layer({self.spec!r})"


def _get(get, where):
    """(names asked for, whether one bare array is asked)."""
    if get is None:
        return _GETS, False
    if isinstance(get, str):
        if get not in _GETS:
            raise ValueError(f"{where}: expected get 'nngp', 'ntk', a tuple of them or None, "
                             f"got {get!r}")
        return (get,), True
    try:
        names = tuple(get)
    except TypeError:
        raise TypeError(f"{where}: expected get 'nngp', 'ntk', a tuple of them or None, got "
                        f"{type(get).__name__}") from None
    if not names or any(n not in _GETS for n in names) or len(set(names)) != len(names):
        raise ValueError(f"{where}: expected get 'nngp', 'ntk', a tuple of them or None, got "
                         f"{get!r}")
    return names, False


def _traced(*arrays) -> bool:
    import jax

    return any(isinstance(a, jax.core.Tracer) for a in arrays if a is not None)


def _callback(layer, x1, x2, names, single):
    """``kernel_fn`` under ``jax.jit``: the NumPy engine through ``jax.pure_callback``."""
    import jax
    import jax.numpy as jnp

    n1 = x1.shape[0]
    n2 = n1 if x2 is None else x2.shape[0]
    dtype = jnp.zeros((), float).dtype  # float64 with jax's x64 mode, else float32
    shapes = tuple(jax.ShapeDtypeStruct((n1, n2), dtype) for _ in names)

    def host(a, b=None):
        k = layer.kernel_fn(np.asarray(a, np.float64),
                            None if b is None else np.asarray(b, np.float64), names)
        return tuple(np.asarray(getattr(k, n), dtype) for n in names)

    args = (x1,) if x2 is None else (x1, x2)
    out = jax.pure_callback(host, shapes, *args)
    return out[0] if single else Kernel(**dict(zip(names, out)))


# ------------------------------------------------------------------------------ combinators
def _spec(layer, where):
    if not isinstance(layer, Layer):
        raise TypeError(f"{where}: expected layers of ntkcond.stax (Dense(...), Relu(), ...), got "
                        f"{type(layer).__name__}; a neural-tangents triple cannot be mixed in")
    return layer.spec


def serial(*layers) -> Layer:
    """The layers applied in turn (neural-tangents' ``stax.serial``)."""
    if not layers:
        raise ValueError("serial: expected at least one layer, got none")
    return Layer(L.serial(*(_spec(x, "serial") for x in layers)))


def parallel(*layers) -> Layer:
    """Branches applied to the elements of a list input, after ``FanOut`` (neural-tangents'
    ``stax.parallel``)."""
    if not layers:
        raise ValueError("parallel: expected at least one branch, got none")
    return Layer(L.Parallel(tuple(_spec(x, "parallel") for x in layers)))


def FanOut(num: int) -> Layer:
    """``num`` copies of the input, for ``parallel`` branches."""
    return Layer(L.FanOut(num))


def FanInSum() -> Layer:
    """The sum of the branches' outputs (kernels add)."""
    return Layer(L.FanInSum())


def Identity() -> Layer:
    """The identity."""
    return Layer(L.Identity())


def Dense(out_dim: int, W_std: float = 1.0, b_std: float | None = None, batch_axis: int = 0,
          channel_axis: int = -1, parameterization: str = "ntk", s=(1, 1)) -> Layer:
    """A fully-connected layer: W_std/√fan_in·xW + b_std·b (NTK parameterisation),
    ``ntkcond.network.layers`` eq. (1).

    Args:
      out_dim: the width (of the finite net; the kernels are those of infinite width).
      W_std: weight std in [1e-150, 1e150]; b_std: bias std (None: no bias; 0 or in that range).
      batch_axis, channel_axis: neural-tangents' defaults (0, -1) only.
      parameterization: "ntk" ("standard" is refused: not supported).
      s: neural-tangents' width scalings of "standard"; (1, 1) only.
    """
    where = "Dense"
    if isinstance(parameterization, str) and parameterization.lower() == "standard":
        raise ValueError(f"{where}: parameterization 'standard' is not supported by ntkcond.stax; "
                         "use 'ntk' (neural-tangents' default)")
    if not isinstance(parameterization, str) or parameterization.lower() != "ntk":
        raise ValueError(f"{where}: expected parameterization 'ntk', got {parameterization!r}")
    if (batch_axis, channel_axis) != (0, -1) or tuple(s) != (1, 1):
        raise ValueError(f"{where}: expected batch_axis=0, channel_axis=-1, s=(1, 1), got "
                         f"{batch_axis}, {channel_axis}, {tuple(s)}")
    if isinstance(out_dim, (bool, np.bool_)) or not isinstance(out_dim, numbers.Integral):
        raise TypeError(f"{where}: expected out_dim a positive integer, got {out_dim!r}")
    return Layer(L.Dense.of_std(int(out_dim), W_std, b_std, where=where))


def Conv(out_chan: int, filter_shape, strides=None, padding: str = "VALID", W_std: float = 1.0,
         b_std: float | None = None, dimension_numbers=None, parameterization: str = "ntk",
         s=(1, 1)) -> Layer:
    """A 2-D convolution of NHWC images: W_std/√(k_h k_w C_in)·(x ⋆ W) + b_std·b (NTK
    parameterisation), ``ntkcond.network.conv`` eq. (1).

    Args:
      out_chan: channels (of the finite net; the kernels are those of infinitely many).
      filter_shape: (k_h, k_w); strides: (s_h, s_w), default (1, 1).
      padding: "VALID", "SAME" or "CIRCULAR".
      W_std, b_std: as ``Dense``.
      dimension_numbers: neural-tangents' default (None: NHWC/HWIO) only.
      parameterization, s: "ntk" and (1, 1) only.
    """
    where = "Conv"
    if dimension_numbers not in (None, ("NHWC", "HWIO", "NHWC")):
        raise ValueError(f"{where}: expected dimension_numbers None (NHWC images, HWIO filters), "
                         f"got {dimension_numbers!r}")
    if not isinstance(parameterization, str) or parameterization.lower() != "ntk" or \
            tuple(s) != (1, 1):
        raise ValueError(f"{where}: expected parameterization 'ntk' and s=(1, 1), got "
                         f"{parameterization!r}, {tuple(s)}")
    if isinstance(out_chan, (bool, np.bool_)) or not isinstance(out_chan, numbers.Integral):
        raise TypeError(f"{where}: expected out_chan a positive integer, got {out_chan!r}")
    return Layer(CV.Conv.of_std(int(out_chan), filter_shape, strides, padding, W_std, b_std))


def AvgPool(window_shape, strides=None, padding: str = "VALID", normalize_edges: bool = False,
            batch_axis: int = 0, channel_axis: int = -1) -> Layer:
    """Average pooling of NHWC images over windows (``ntkcond.network.conv`` eq. (2));
    ``strides`` default (1, 1), as neural-tangents'. Needs every pixel pair (the kernel's cost
    is (HW)² per image pair)."""
    if normalize_edges or (batch_axis, channel_axis) != (0, -1):
        raise ValueError("AvgPool: expected normalize_edges=False, batch_axis=0, channel_axis=-1 "
                         f"(NHWC), got {normalize_edges}, {batch_axis}, {channel_axis}")
    return Layer(CV.AvgPool.of(window_shape, strides, padding))


def GlobalAvgPool(batch_axis: int = 0, channel_axis: int = -1) -> Layer:
    """The read-out averaging over all pixels (``ntkcond.network.conv`` eq. (4)); needs every
    pixel pair."""
    if (batch_axis, channel_axis) != (0, -1):
        raise ValueError(f"GlobalAvgPool: expected batch_axis=0, channel_axis=-1 (NHWC), got "
                         f"{batch_axis}, {channel_axis}")
    return Layer(CV.GlobalAvgPool())


def Flatten(batch_axis: int = 0, batch_axis_out: int = 0) -> Layer:
    """The read-out flattening pixels and channels (``ntkcond.network.conv`` eq. (3)): only the
    spatial diagonal of the kernel is needed, never the (HW)² pixel pairs."""
    if (batch_axis, batch_axis_out) != (0, 0):
        raise ValueError(f"Flatten: expected batch_axis=0, batch_axis_out=0, got {batch_axis}, "
                         f"{batch_axis_out}")
    return Layer(CV.Flatten())


# ----------------------------------------------------------------------------- activations
def _act(activation) -> Layer:
    return Layer(L.Nonlinearity(activation))


def _real(value, name, where):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value):
        raise ValueError(f"{where}: expected {name} a finite real number, got {value!r}")
    return float(value)


def _affine(base, a=1.0, b=1.0, c=0.0, where="Affine"):
    """σ(z) = a·base(b·z) + c (the base itself for a = b = 1, c = 0)."""
    a, b, c = _real(a, "a", where), _real(b, "b", where), _real(c, "c", where)
    if (a, b, c) == (1.0, 1.0, 0.0):
        return base
    try:
        return A.Affine(base, a, b, c)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {str(err).removeprefix('Affine: ')}") from None


def _ab_relu(a, b, where):
    """a·min(z, 0) + b·max(z, 0) as a leaky activation, scaled (and reflected) where needed:
    b·σ_{a/b} for |a| ≤ |b|, −a·σ_{b/a}(−z) otherwise."""
    a, b = _real(a, "a", where), _real(b, "b", where)
    if a == 0.0 and b == 0.0:
        raise ValueError(f"{where}: expected a and b not both 0 (the zero function), got 0, 0")
    if abs(a) <= abs(b):
        return _affine(A.Activation(a / b), b, 1.0, where=where)
    return _affine(A.Activation(b / a), -a, -1.0, where=where)


def Relu(do_stabilize: bool = False) -> Layer:
    """max(z, 0). (``do_stabilize``: accepted; the angle recursion needs no stabilising.)"""
    return _act(A.RELU)


def LeakyRelu(alpha: float, do_stabilize: bool = False) -> Layer:
    """max(z, αz) for |α| ≤ 1; in general α·min(z, 0) + max(z, 0) (neural-tangents')."""
    return _act(_ab_relu(alpha, 1.0, "LeakyRelu"))


def Abs(do_stabilize: bool = False) -> Layer:
    """|z|."""
    return _act(A.ABS)


def ABRelu(a: float, b: float, do_stabilize: bool = False) -> Layer:
    """a·min(z, 0) + b·max(z, 0): any member of the leaky family, scaled."""
    return _act(_ab_relu(a, b, "ABRelu"))


def Erf(a: float = 1.0, b: float = 1.0, c: float = 0.0) -> Layer:
    """a·erf(b·z) + c (closed-form kernels, ``ntkcond.activations.erf``)."""
    return _act(_affine(A.ERF, a, b, c, "Erf"))


def Gelu(approximate: bool = False) -> Layer:
    """GELU z·Φ(z) (closed-form kernels); ``approximate=True``: its tanh approximation, with
    the kernels of that function (Mehler's series)."""
    return _act(A.GeluTanh() if approximate else A.GELU)


def Sin(a: float = 1.0, b: float = 1.0, c: float = 0.0) -> Layer:
    """a·sin(b·z + c) (closed-form kernels, ``ntkcond.activations.sin``)."""
    base = A.SIN if c == 0 else A.Sin(phase=_real(c, "c", "Sin"))
    return _act(_affine(base, a, b, 0.0, "Sin"))


def Tanh() -> Layer:
    """tanh z (not in neural-tangents; kernels by Mehler's series)."""
    return _act(A.REGISTRY["tanh"])


def Softplus() -> Layer:
    """log(1 + eᶻ) (kernels by Mehler's series)."""
    return _act(A.REGISTRY["softplus"])


def Silu() -> Layer:
    """z/(1 + e⁻ᶻ) (kernels by Mehler's series)."""
    return _act(A.REGISTRY["silu"])


def Elementwise(fn=None, nngp_fn=None, d_nngp_fn=None) -> Layer:
    """Any elementwise jax function ``fn``; its kernels come from ``fn`` itself (Mehler's series
    or quadrature, checked to 1e-13), so ``nngp_fn``/``d_nngp_fn`` are not needed (accepted
    for neural-tangents' code)."""
    if fn is None:
        raise ValueError("Elementwise: expected fn, an elementwise jax function, got None")
    return _act(A.parse_activation(fn, "Elementwise"))


def ElementwiseNumerical(fn, deg: int = 25, df=None) -> Layer:
    """``Elementwise(fn)``: the kernels by ntkcond's series or quadrature (``deg`` and ``df``
    accepted for neural-tangents' code; the accuracy is checked, not set by a degree)."""
    return Elementwise(fn)
