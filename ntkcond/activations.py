"""Activations: the leaky family a·s + b·|s| (ReLU, |s|, linear), erf, GELU, sin, tanh,
softplus, SiLU and any elementwise callable — one parser, ``parse_activation``.

Leaky family. σ_α(z) = max(z, αz) = a·z + b·|z| with a = (1 + α)/2, b = (1 − α)/2 and slope
α ∈ [−1, 1]: α = 0 is ReLU, α = 1 the identity (a linear network), α = −1 the absolute value
|z| (``"abs"``). Up to scale this is the whole a·s + b·|s| family of Terjék &
González-Sánchez (arXiv 2501.13225), with Δ_φ = b²/(a² + b²) = (1 − α)²/(2(1 + α²)).
With ``w_std=None`` the bias-free networks of ``ntkcond.infinite.kernels`` are
norm-preserving: each pre-activation is scaled by √c with

    c = 1 / E_{z~N(0,1)}[σ_α(z)²] = 2 / (1 + α²)                                  (1)

(c = 2 for ReLU, 1 for linear and |z|), so that E[(√c σ(z))²] = E[z²] and the kernel diagonal
does not change with depth (Liu & Hui, arXiv 2305.08813; He et al. 2015 for ReLU).

Smooth activations (``SmoothActivation``): ``"erf"``, ``"gelu"`` (exact, z·Φ(z)), ``"sin"``,
``"tanh"``, ``"softplus"`` (log(1 + eᶻ)), ``"silu"`` (z/(1 + e⁻ᶻ)). They are not homogeneous,
so no c makes them norm-preserving: networks with them need an explicit ``w_std``.
Any elementwise function ``f`` of arrays (``CallableActivation``; derivatives by jax).

Accepted spellings (``parse_activation``): ``"relu"``, ``"linear"`` (also ``"identity"``),
``"abs"``, ``("leaky_relu", α)``, a real slope α, ``"leaky:α"`` / ``"leaky_relu:α"``, the
smooth names above, an ``Activation``/``SmoothActivation``/``CallableActivation``, or a
callable.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from typing import Callable

import numpy as np

__all__ = [
    "Activation",
    "SmoothActivation",
    "CallableActivation",
    "SMOOTH_NAMES",
    "parse_activation",
    "parse_activations",
    "norm_preserving_scale",
    "require_leaky",
    "parse_unit_slope",
    "Net",
    "resolve_net",
]


@dataclasses.dataclass(frozen=True)
class Activation:
    """A leaky-family activation σ(z) = max(z, slope·z) = a·z + b·|z|, slope α ∈ [−1, 1].

    Attributes:
      slope: α. 0 is ReLU, 1 is linear, −1 is |z|.
    """

    slope: float

    is_leaky = True

    @property
    def name(self) -> str:
        """Canonical name: ``relu``, ``linear``, ``abs`` or ``leaky:α``."""
        if self.slope == 0.0:
            return "relu"
        if self.slope == 1.0:
            return "linear"
        if self.slope == -1.0:
            return "abs"
        return f"leaky:{self.slope:g}"

    @property
    def is_linear(self) -> bool:
        return self.slope == 1.0

    @property
    def ab(self) -> tuple[float, float]:
        """(a, b) of σ(z) = a·z + b·|z|: ((1 + α)/2, (1 − α)/2)."""
        return 0.5 * (1.0 + self.slope), 0.5 * (1.0 - self.slope)

    @property
    def scale(self) -> float:
        """c = 2 / (1 + α²), eq. (1): the norm-preserving variance factor."""
        return 2.0 / (1.0 + self.slope**2)

    def __call__(self, z):
        """σ(z) = max(z, αz), elementwise; works on numpy and jax arrays."""
        if self.slope == 1.0:
            return z
        return z * ((z > 0) + self.slope * (z <= 0))

    def derivative(self, z):
        """σ'(z) = 1 for z > 0, α for z ≤ 0 (numpy arrays)."""
        z = np.asarray(z, dtype=np.float64)
        return np.where(z > 0, 1.0, self.slope)

    def __str__(self) -> str:
        return self.name


def _gelu(z):
    from scipy.special import ndtr

    return z * ndtr(z)


def _gelu_d1(z):
    from scipy.special import ndtr

    return ndtr(z) + z * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _gelu_d2(z):
    return (2.0 - z * z) * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _erf(z):
    from scipy.special import erf

    return erf(z)


def _erf_d1(z):
    return 2.0 / math.sqrt(math.pi) * np.exp(-z * z)


def _erf_d2(z):
    return -4.0 / math.sqrt(math.pi) * z * np.exp(-z * z)


def _tanh_d1(z):
    return 1.0 / np.cosh(z) ** 2


def _tanh_d2(z):
    return -2.0 * np.tanh(z) / np.cosh(z) ** 2


def _softplus(z):
    return np.logaddexp(0.0, z)


def _sigmoid(z):
    from scipy.special import expit

    return expit(z)


def _sigmoid_d1(z):
    s = _sigmoid(z)
    return s * _sigmoid(-z)


def _silu(z):
    return z * _sigmoid(z)


def _silu_d1(z):
    s = _sigmoid(z)
    return s + z * s * _sigmoid(-z)


def _silu_d2(z):
    s, t = _sigmoid(z), _sigmoid(-z)
    return s * t * (2.0 + z * (t - s))


# name: (σ, σ', σ'', jax σ); σ, σ', σ'' act on float64 numpy arrays.
_SMOOTH = {
    "erf": (_erf, _erf_d1, _erf_d2),
    "gelu": (_gelu, _gelu_d1, _gelu_d2),
    "sin": (np.sin, np.cos, lambda z: -np.sin(z)),
    "tanh": (np.tanh, _tanh_d1, _tanh_d2),
    "softplus": (_softplus, _sigmoid, _sigmoid_d1),
    "silu": (_silu, _silu_d1, _silu_d2),
}

#: Names of the smooth activations ``parse_activation`` knows.
SMOOTH_NAMES = tuple(_SMOOTH)


def _jax_smooth(name):
    import jax
    import jax.numpy as jnp

    return {
        "erf": jax.scipy.special.erf,
        "gelu": lambda z: jax.nn.gelu(z, approximate=False),
        "sin": jnp.sin,
        "tanh": jnp.tanh,
        "softplus": jax.nn.softplus,
        "silu": jax.nn.silu,
    }[name]


class _NotLeaky:
    """What the smooth and callable activations share: they are not of the leaky family."""

    is_leaky = False
    is_linear = False

    @property
    def slope(self) -> float:
        """Not defined: raises ValueError for the routes of the leaky family only."""
        raise ValueError(
            f"activation {self.name!r} is not of the leaky family (no slope): this route takes "
            "relu, linear, abs or leaky:<alpha>; the general net (w_std=, b_std=) of "
            "ntkcond.infinite_ntk and the functions that take w_std covers it"
        )


@dataclasses.dataclass(frozen=True)
class SmoothActivation(_NotLeaky):
    """A named smooth activation: ``erf``, ``gelu`` (z·Φ(z)), ``sin``, ``tanh``,
    ``softplus``, ``silu``. Kernels: closed forms for erf, gelu and sin
    (``ntkcond.infinite.duals``), Mehler's series or the trapezoid for the others
    (``ntkcond.infinite.mehler``, ``ntkcond.infinite.trapezoid``).

    Attributes:
      name: one of ``SMOOTH_NAMES``.
    """

    name: str

    @property
    def scale(self) -> float:
        raise ValueError(
            f"activation {self.name!r} is not homogeneous: no norm-preserving scale exists; "
            "pass w_std (and b_std)"
        )

    def __call__(self, z):
        """σ(z) on numpy arrays (float64), or on jax arrays through ``jax_fn``."""
        if type(z).__module__.startswith("jax"):
            return self.jax_fn(z)
        return _SMOOTH[self.name][0](np.asarray(z, dtype=np.float64))

    @property
    def jax_fn(self) -> Callable:
        """σ written in jax.numpy (for finite-width networks)."""
        return _jax_smooth(self.name)

    def derivative(self, z):
        """σ'(z) on float64 numpy arrays."""
        return _SMOOTH[self.name][1](np.asarray(z, dtype=np.float64))

    def second_derivative(self, z):
        """σ''(z) on float64 numpy arrays."""
        return _SMOOTH[self.name][2](np.asarray(z, dtype=np.float64))

    def __str__(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True, eq=False)
class CallableActivation(_NotLeaky):
    """A user's elementwise activation f (jax-traceable), derivatives by ``jax.grad``.

    Checked once by ``parse_activation``: f maps shapes to the same shape, acts elementwise
    (f of a vector equals f of each entry) and is finite with finite first and second
    derivatives on [−30, 30]. Kernels by Mehler's series or the trapezoid
    (``ntkcond.infinite.mehler``, ``ntkcond.infinite.trapezoid``).

    Attributes:
      fn: the function; name: for records (default ``fn.__name__``).
    """

    fn: Callable
    name: str = "callable"

    @property
    def scale(self) -> float:
        raise ValueError(
            f"activation {self.name!r} is a callable: no norm-preserving scale is defined; "
            "pass w_std (and b_std)"
        )

    @property
    def jax_fn(self) -> Callable:
        return self.fn

    @functools.cached_property
    def _jitted(self):
        import jax

        fn = self.fn
        fs = [lambda t: fn(t.reshape(1)).reshape(-1)[0]]  # scalar in, scalar out
        for _ in range(2):
            fs.append(jax.grad(fs[-1]))
        return [jax.jit(jax.vmap(f)) for f in fs]

    def _numpy(self, order, z):
        from ._core.x64 import x64

        import jax.numpy as jnp

        z = np.asarray(z, dtype=np.float64)
        with x64():
            out = self._jitted[order](jnp.asarray(z.ravel(), jnp.float64))
            return np.asarray(out, dtype=np.float64).reshape(z.shape)

    def __call__(self, z):
        if type(z).__module__.startswith("jax"):
            return self.fn(z)
        return self._numpy(0, z)

    def derivative(self, z):
        return self._numpy(1, z)

    def second_derivative(self, z):
        return self._numpy(2, z)

    def __repr__(self) -> str:
        return f"CallableActivation({self.name!r})"

    def __str__(self) -> str:
        return self.name


_NAMES = {"relu": 0.0, "linear": 1.0, "identity": 1.0, "abs": -1.0}

_EXPECTED = (
    "'relu', 'linear', 'abs', 'leaky:<alpha>' with alpha in [-1, 1], "
    + ", ".join(repr(n) for n in SMOOTH_NAMES)
    + ", ('leaky_relu', alpha), a real slope or an elementwise callable"
)


def _check_callable(fn, name):
    """Elementwise, shape-preserving and finite (with two derivatives) on [−30, 30]."""
    from ._core.x64 import x64

    import jax
    import jax.numpy as jnp

    grid = np.linspace(-30.0, 30.0, 241)

    def call(what, g):
        try:
            with x64():
                return np.asarray(g(), dtype=np.float64)
        except Exception as err:  # jax tracing errors of non-scalar or non-traceable functions
            raise ValueError(
                f"parse_activation: the callable {name!r} must be an elementwise jax-traceable "
                f"function of arrays; {what} failed with {type(err).__name__}: {err}"
            ) from None

    def zs_():
        return jnp.asarray(grid, jnp.float64)

    whole = call("f(z)", lambda: fn(zs_()))
    each = call("f(z[i:i+1])", lambda: jax.vmap(lambda t: fn(t.reshape(1)).reshape(-1)[0])(zs_()))
    mat = call("f(z[:, None] * ones(3))", lambda: fn(zs_().reshape(-1, 1) * jnp.ones((1, 3))))
    scale = np.maximum(np.abs(np.nan_to_num(whole)), 1.0)
    with np.errstate(invalid="ignore"):
        mismatch = (whole.shape != grid.shape or mat.shape != (grid.size, 3)
                    or not np.all(np.abs(each - whole) <= 1e-12 * scale)
                    or not np.all(np.abs(mat - whole[:, None]) <= 1e-12 * scale[:, None]))
    if mismatch:
        if np.all(np.isfinite(whole)) or whole.shape != grid.shape:
            raise ValueError(
                f"parse_activation: the callable {name!r} is not elementwise (f of a vector "
                f"differs from f of its entries, or changes the shape {grid.shape})"
            )
    d1 = call("its derivative", lambda: jax.vmap(jax.grad(lambda t: fn(t.reshape(1))[0]))(zs_()))
    d2 = call("its second derivative",
              lambda: jax.vmap(jax.grad(jax.grad(lambda t: fn(t.reshape(1))[0])))(zs_()))
    for label, arr in (("values", whole), ("first derivative", d1), ("second derivative", d2)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(
                f"parse_activation: the callable {name!r} gives non-finite {label} on [-30, 30]"
            )


def parse_activation(activation, where: str | None = None):
    """Turn any accepted spelling of an activation into an activation object.

    Args:
      activation: ``"relu"``, ``"linear"``, ``"abs"``, ``("leaky_relu", α)``, a real α in
        [−1, 1], ``"leaky:α"``, one of ``SMOOTH_NAMES`` (``"erf"``, ``"gelu"``, ``"sin"``,
        ``"tanh"``, ``"softplus"``, ``"silu"``), an activation object, or an elementwise
        callable (checked: elementwise, finite with two finite derivatives on [−30, 30]).
      where: the public function to name in errors (``"infinite_ntk: activation: …"``);
        None: ``parse_activation`` itself.

    Returns:
      ``Activation`` (leaky family), ``SmoothActivation`` or ``CallableActivation``.

    Raises:
      ValueError: unknown name, slope outside [−1, 1], a callable that is not elementwise or
        not finite.
      TypeError: a value of an unsupported type.
    """
    if where is None:
        return _parse_activation(activation)
    try:
        return _parse_activation(activation)
    except (TypeError, ValueError) as err:  # name the caller, not the parser
        message = str(err).removeprefix("parse_activation: ")
        raise type(err)(f"{where}: activation: {message}") from None


def _parse_activation(activation):
    if isinstance(activation, (Activation, SmoothActivation, CallableActivation)):
        return activation
    slope = None
    if isinstance(activation, str):
        key = activation.strip().lower()
        if key in _NAMES:
            slope = _NAMES[key]
        elif key in _SMOOTH:
            return SmoothActivation(key)
        elif ":" in key and key.split(":", 1)[0] in ("leaky", "leaky_relu"):
            try:
                slope = float(key.split(":", 1)[1])
            except ValueError:
                raise ValueError(
                    f"parse_activation: expected 'leaky:<slope>' with a number, got {activation!r}"
                ) from None
        else:
            raise ValueError(f"parse_activation: expected {_EXPECTED}, got {activation!r}")
    elif isinstance(activation, tuple) and len(activation) == 2 and activation[0] in (
        "leaky_relu",
        "leaky",
    ):
        slope = activation[1]
        if not isinstance(slope, numbers.Real) or isinstance(slope, bool):
            raise TypeError(
                f"parse_activation: expected a real slope in ('leaky_relu', alpha), got {slope!r}"
            )
    elif isinstance(activation, numbers.Real) and not isinstance(activation, bool):
        slope = activation
    elif isinstance(activation, tuple):
        raise ValueError(
            f"parse_activation: expected ('leaky_relu', alpha), got the tuple {activation!r}"
        )
    elif callable(activation) and not isinstance(activation, type):
        name = getattr(activation, "__name__", None) or type(activation).__name__
        _check_callable(activation, name)
        return CallableActivation(activation, name)
    else:
        raise TypeError(
            "parse_activation: expected a str, a ('leaky_relu', alpha) tuple, a float slope or "
            f"an elementwise callable, got {type(activation).__name__}"
        )
    slope = float(slope)
    if not np.isfinite(slope) or not -1.0 <= slope <= 1.0:
        raise ValueError(f"parse_activation: expected a leaky-ReLU slope in [-1, 1], got {slope!r}")
    return Activation(slope + 0.0)  # -0.0 → 0.0


def parse_activations(activations, where: str) -> list:
    """A list of activations: one spelling (a str such as "relu", or an activation object) is
    one activation; otherwise an iterable of spellings (``parse_activation``). ValueError for
    none, or for the same activation twice (also spelled differently, e.g. "relu" and
    "ReLU"), naming ``where``."""
    if isinstance(activations, (str, Activation, SmoothActivation, CallableActivation)) or (
            callable(activations) and not isinstance(activations, type)):
        activations = [activations]
    try:
        items = list(activations)
    except TypeError:
        raise TypeError(f"{where}: expected activations as a spelling such as 'relu' or a list of "
                        f"them, got {type(activations).__name__} {activations!r}") from None
    try:
        acts = [parse_activation(a) for a in items]
    except (TypeError, ValueError) as err:  # name the caller, not the parser
        message = str(err).removeprefix("parse_activation: ")
        raise type(err)(f"{where}: activations: {message}") from None
    if not acts:
        raise ValueError(f"{where}: expected at least one activation, got none")
    names = [a.name for a in acts]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{where}: expected each activation once, got {dup} more than once in "
                         f"{items!r}")
    return acts


def norm_preserving_scale(activation) -> float:
    """c = 1/E[σ(z)²] = 2/(1 + α²) for z ~ N(0, 1): 2 for ReLU, 1 for linear and |z|. Eq. (1).

    Raises ValueError for activations outside the leaky family (not homogeneous).
    """
    act = parse_activation(activation, "norm_preserving_scale")
    if not act.is_leaky:
        raise ValueError(
            f"norm_preserving_scale: activation {act.name!r} is not homogeneous; "
            "the norm-preserving scale exists for the leaky family only"
        )
    return act.scale


def parse_unit_slope(activation, where: str = "parse_activation"):
    """``parse_activation`` restricted to leaky slopes α ∈ [0, 1] (ReLU … linear): the range
    of the bias-free theory of Zhang, Saxe & Latham (arXiv 2406.12615)."""
    try:
        act = parse_activation(activation, where)
    except ValueError as err:
        if "slope in [-1, 1]" not in str(err):
            raise
        raise ValueError(f"{where}: expected a leaky-ReLU slope in [0, 1], got "
                         f"{activation!r}") from None
    if not act.is_leaky or not 0.0 <= act.slope <= 1.0:
        raise ValueError(f"{where}: expected a leaky-ReLU slope in [0, 1], got {act.name!r}")
    return act


def require_leaky(act, where: str):
    """``act`` if it is of the leaky family, else a ValueError naming ``where``: for routes
    that exist only for bias-free leaky nets (closed-form angle maps, finite sweeps)."""
    if not act.is_leaky:
        raise ValueError(
            f"{where}: activation {act.name!r} is supported here only through w_std/b_std "
            "(the general recursion); this route takes relu, linear, abs or leaky:<alpha>"
        )
    return act


@dataclasses.dataclass(frozen=True)
class Net:
    """A network of ``ntkcond.infinite.family`` eqs. (1)–(2): activation, weight and bias
    stds, residual scale (``resolve_net`` builds it from a public call's arguments).

    ``w_std=None`` is the norm-preserving bias-free net of ``ntkcond.infinite.kernels``
    (hidden layers s_w² = c = 2/(1 + α²), read-out 1; leaky family only).

    Attributes:
      act: parsed activation; w_std: s_w > 0 or None; b_std: s_b ≥ 0; residual: β > 0 or None.
    """

    act: object
    w_std: float | None = None
    b_std: float = 0.0
    residual: float | None = None

    #: Engines' shortcuts for linear bias-free nets never apply to a general net.
    is_linear = False

    @property
    def name(self) -> str:
        """e.g. ``erf,w_std=1.5,b_std=0.1`` (``residual=β`` appended when set)."""
        parts = [self.act.name]
        if self.w_std is not None:
            parts.append(f"w_std={self.w_std:g}")
        if self.b_std:
            parts.append(f"b_std={self.b_std:g}")
        if self.residual is not None:
            parts.append(f"residual={self.residual:g}")
        return ",".join(parts)

    def __repr__(self) -> str:
        return (f"Net({self.act.name}, w_std={self.w_std}, b_std={self.b_std}, "
                f"residual={self.residual})")


def resolve_net(activation, w_std, b_std, residual, where: str):
    """The ``Net`` of a public call, or None for the default bias-free norm-preserving net
    (``w_std``, ``b_std``, ``residual`` all None or b_std = 0 with a leaky activation), which
    keeps its own exact route. One clear ValueError/TypeError naming ``where`` otherwise."""
    act = parse_activation(activation, where)
    vals = {}
    for name, val, lower, strict in (("w_std", w_std, 0.0, True), ("b_std", b_std, 0.0, False),
                                     ("residual", residual, 0.0, True)):
        if val is None:
            vals[name] = None
            continue
        if isinstance(val, (bool, np.bool_)) or not isinstance(val, (int, float, np.number)):
            raise TypeError(f"{where}: expected {name} as a real number, got {val!r}")
        val = float(val)
        if not np.isfinite(val) or (val <= lower if strict else val < lower):
            cmp = ">" if strict else ">="
            raise ValueError(f"{where}: expected a finite {name} {cmp} 0, got {val!r}")
        vals[name] = val
    if vals["w_std"] is None and not act.is_leaky:
        raise ValueError(
            f"{where}: activation {act.name!r} is not homogeneous, so there is no "
            "norm-preserving default; pass w_std (e.g. w_std=1.5) and b_std"
        )
    if vals["w_std"] is None and not vals["b_std"] and vals["residual"] is None:
        return None
    return Net(act, vals["w_std"], vals["b_std"] or 0.0, vals["residual"])
