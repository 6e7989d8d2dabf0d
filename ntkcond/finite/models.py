"""Finite-width bias-free, norm-preserving MLPs in NTK parameterisation (JAX).

The network is exactly the one of ``ntkcond.infinite`` with finite widths m₁, …, m_L
(rows of ``x`` are examples, weights are stored (fan_in, fan_out) as in neural-tangents'
``stax.Dense``):

    A⁰ = x,   zˡ = sₗ₋₁ Aˡ⁻¹ Wˡ,   Aˡ = σ(zˡ)  (l = 1 … L),   f = s_L A^L W^{L+1},        (1)

    sₗ₋₁ = √(c / mₗ₋₁) for the hidden layers l ≤ L,   s_L = √(1 / m_L) for the read-out,

with m₀ = d, c = 2/(1 + α²) (``ntkcond.activations``) and all weight entries N(0, 1).
Depth L = 0 is the linear model f = x W¹/√d (read-out factor 1, not c). As all widths
→ ∞ the NTK of this net tends to ``ntkcond.infinite_ntk`` (Jacot et al. 2018). The same net
in neural-tangents is ``stax.serial(*[Dense(m, W_std=√c, b_std=None), LeakyRelu(α)] * L,
Dense(1, b_std=None))``.

Parameters are a plain list [W¹, …, W^{L+1}] of shapes (d, m₁), (m₁, m₂), …, (m_L, 1);
index i of the list is layer index i of ``resolve_trainable`` (0 = first, L = read-out).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers

import numpy as np

from .._core.arrays import float_dtype
from .._core.checks import as_depth
from .._core.x64 import scoped_dtype, x64
from ..activations import Activation, parse_activation
from ..network import MLPFamily, resolve_mlp

__all__ = ["MLP", "GeneralMLP", "mlp"]


def _highest():
    import jax

    return jax.lax.Precision.HIGHEST


@dataclasses.dataclass(frozen=True)
class MLP:
    """A bias-free norm-preserving MLP, eq. (1). Build with ``mlp``.

    Attributes:
      depth: number of hidden layers L ≥ 0.
      widths: (m₁, …, m_L), hidden widths (empty for L = 0).
      activation: the ``Activation`` σ (slope α).
    """

    depth: int
    widths: tuple
    activation: Activation

    def shapes(self, d: int) -> list[tuple[int, int]]:
        """Weight shapes [(d, m₁), (m₁, m₂), …, (m_L, 1)] for input dimension d."""
        dims = (int(d),) + tuple(self.widths) + (1,)
        return [(dims[i], dims[i + 1]) for i in range(self.depth + 1)]

    def scales(self, d: int) -> list[float]:
        """Layer factors [s₀, …, s_L] of eq. (1): √(c/fan_in), and √(1/m_L) for the read-out."""
        c = self.activation.scale
        return [math.sqrt((c if i < self.depth else 1.0) / fan_in)
                for i, (fan_in, _) in enumerate(self.shapes(d))]

    def num_params(self, d: int) -> int:
        """P = d·m₁ + Σ mₗmₗ₊₁ + m_L."""
        return sum(a * b for a, b in self.shapes(d))

    def init(self, key, d: int, dtype=None) -> list:
        """Draw weights with N(0, 1) entries.

        Args:
          key: a ``jax.random`` key.
          d: input dimension (≥ 1).
          dtype: real floating dtype; default jax's default float (float64 only under x64).
            ``numpy.float64`` gives float64 weights with or without jax's x64 mode (drawn in a
            scoped x64 block; the global setting is left alone).

        Returns:
          list of L + 1 arrays of shapes ``self.shapes(d)``.
        """
        import jax
        import jax.numpy as jnp

        where = "MLP.init"
        d = _as_width(d, where, "d")
        if dtype is not None:
            dtype = float_dtype(dtype, where)
        with x64() if dtype == np.float64 else contextlib.nullcontext():
            dtype = jnp.zeros((), dtype if dtype is not None else float).dtype
            keys = jax.random.split(key, self.depth + 1)
            return [jax.random.normal(k, shape, dtype) for k, shape in zip(keys, self.shapes(d))]

    def apply(self, params, x):
        """f(x), eq. (1).

        Args:
          params: list of L + 1 weight arrays (``shapes``); x: (n, d) inputs.

        Returns:
          (n,) outputs, in the dtype of params and x (float64 whenever one of them is, with or
          without jax's x64 mode).
        """
        import jax.numpy as jnp

        check_params(self, params, jnp.shape(x), "MLP.apply")
        with scoped_dtype(x, *params):
            h = x
            slope, hi = self.activation.slope, _highest()
            for i, (w, s) in enumerate(zip(params, self.scales(jnp.shape(x)[1]))):
                z = s * jnp.matmul(h, w, precision=hi)
                h = z if i == self.depth else jnp.where(z > 0, z, slope * z)
            return h[:, 0]


def _as_width(m, where: str, name: str) -> int:
    if isinstance(m, bool) or not isinstance(m, numbers.Integral):
        raise TypeError(f"{where}: expected an integer {name}, got {m!r}")
    if m < 1:
        raise ValueError(f"{where}: expected {name} >= 1, got {m}")
    return int(m)


def mlp(depth: int, width=512, activation="relu", *, w_std=None, b_std=None,
        residual=None):
    """A bias-free norm-preserving MLP with L = ``depth`` hidden layers, eq. (1), or with
    ``w_std``/``b_std``/``residual`` the general net of eq. (2) (``GeneralMLP``).

    Args:
      depth: L ≥ 0 (0: the linear model x W¹/√d).
      width: hidden width m (int ≥ 1) or a sequence (m₁, …, m_L) of length ``depth``.
      activation: any spelling of ``ntkcond.activations.parse_activation`` (relu, linear,
        abs, leaky:α with α ∈ [−1, 1], erf, gelu, sin, tanh, softplus, silu, a callable).
      w_std, b_std, residual: s_w > 0, s_b ≥ 0, β > 0 of eq. (2) (as
        ``ntkcond.infinite_ntk``); all None: eq. (1). Activations outside the leaky family
        need ``w_std``; residual blocks need equal hidden widths.

    Returns:
      ``MLP`` or ``GeneralMLP`` with ``init(key, d) -> params`` and
      ``apply(params, x) -> (n,)``.

    Examples:
      >>> import jax, ntkcond
      >>> net = ntkcond.mlp(3, 512)                        # depth 3, width 512, ReLU
      >>> params = net.init(jax.random.PRNGKey(0), 784)    # the input dimension
      >>> [w.shape for w in params]
      [(784, 512), (512, 512), (512, 512), (512, 1)]
    """
    act = parse_activation(activation, "mlp")
    depth = as_depth(depth, "mlp")
    if isinstance(width, numbers.Integral) and not isinstance(width, bool):
        widths = (_as_width(width, "mlp", "width"),) * depth
    else:
        try:
            widths = tuple(width)
        except TypeError:
            raise TypeError(f"mlp: expected width as an int or a sequence of ints, got {width!r}") from None
        if len(widths) != depth:
            raise ValueError(
                f"mlp: expected {depth} widths (one per hidden layer), got {len(widths)}: {widths}")
        widths = tuple(_as_width(m, "mlp", "width") for m in widths)
    family = resolve_mlp(act, w_std, b_std, residual, where="mlp")
    if not family.options() and isinstance(act, Activation):  # the net of eq. (1)
        return MLP(depth=depth, widths=widths, activation=act)
    if family.residual is not None and len(set(widths)) > 1:
        raise ValueError(f"mlp: residual blocks need equal hidden widths, got {widths}")
    return GeneralMLP(depth=depth, widths=widths, net=family)


@dataclasses.dataclass(frozen=True)
class GeneralMLP:
    """The MLP of eq. (2): weight std s_w, bias std s_b, any activation, residual blocks.

        z¹ = t₀ b¹ + s₀ x W¹,   zⁱ⁺¹ = [residual] zⁱ + tᵢ bⁱ⁺¹ + sᵢ σ(zⁱ) Wⁱ⁺¹,
        f = t_L b^{L+1} + s_L σ(z^L) W^{L+1},                                             (2)

    sᵢ = s_w/√fan_inᵢ and tᵢ = s_b, times β for the residual layers i = 1 … L − 1
    (``residual=β``; z^{i+1} = z^i + β(…)). With ``w_std=None`` (leaky family with biases),
    s_w² = c = 2/(1 + α²) for the hidden layers and 1 for the read-out. All entries of W and
    b are N(0, 1). The infinite-width NTK of this net is ``ntkcond.infinite_ntk(x, depth=L,
    activation=…, w_std=…, b_std=…, residual=…)`` (``ntkcond.network.mlp``); in
    neural-tangents ``stax.serial(*[Dense(m, W_std=s_w, b_std=s_b), act] * L,
    Dense(1, W_std=s_w, b_std=s_b))``.

    Parameters are a flat list [W¹, …, W^{L+1}, b¹, …, b^{L+1}] (W of shape (fan_in,
    fan_out), b of shape (fan_out,)); layer index i of ``resolve_trainable`` is (Wⁱ⁺¹, bⁱ⁺¹).
    """

    depth: int
    widths: tuple
    net: MLPFamily

    @property
    def activation(self):
        return self.net.act

    @property
    def w_std(self):
        return self.net.w_std

    @property
    def b_std(self):
        return self.net.b_std

    @property
    def residual(self):
        return self.net.residual

    def shapes(self, d: int) -> list[tuple]:
        """[(d, m₁), …, (m_L, 1), (m₁,), …, (1,)]: weights, then biases."""
        dims = (int(d),) + tuple(self.widths) + (1,)
        w = [(dims[i], dims[i + 1]) for i in range(self.depth + 1)]
        return w + [(dims[i + 1],) for i in range(self.depth + 1)]

    def factors(self, d: int) -> list[tuple[float, float]]:
        """[(sᵢ, tᵢ)] of eq. (2) for i = 0 … L: √(s_w²/fan_in) and s_b of layer i of the
        net's stack (``MLPFamily.dense``: residual layers scaled by β)."""
        dims = (int(d),) + tuple(self.widths)
        out = []
        for i in range(self.depth + 1):
            layer = self.net.dense(i, self.depth)
            out.append((math.sqrt(layer.weight_variance / dims[i]), layer.b_std or 0.0))
        return out

    def num_params(self, d: int) -> int:
        return sum(math.prod(shape) for shape in self.shapes(d))

    def init(self, key, d: int, dtype=None) -> list:
        """Draw all weights and biases N(0, 1) (dtype as ``MLP.init``)."""
        import jax
        import jax.numpy as jnp

        where = "GeneralMLP.init"
        d = _as_width(d, where, "d")
        if dtype is not None:
            dtype = float_dtype(dtype, where)
        with x64() if dtype == np.float64 else contextlib.nullcontext():
            dtype = jnp.zeros((), dtype if dtype is not None else float).dtype
            shapes = self.shapes(d)
            keys = jax.random.split(key, len(shapes))
            return [jax.random.normal(k, shape, dtype) for k, shape in zip(keys, shapes)]

    def apply(self, params, x):
        """f(x), eq. (2): (n,) outputs in the dtype of params and x."""
        import jax.numpy as jnp

        check_params(self, params, jnp.shape(x), "GeneralMLP.apply")
        sigma = self.activation.jax_fn
        L = self.depth
        with scoped_dtype(x, *params):
            hi = _highest()
            f = self.factors(jnp.shape(x)[1])
            ws, bs = params[: L + 1], params[L + 1:]
            z = f[0][0] * jnp.matmul(x, ws[0], precision=hi) + f[0][1] * bs[0]
            for i in range(1, L + 1):
                step = f[i][0] * jnp.matmul(sigma(z), ws[i], precision=hi) + f[i][1] * bs[i]
                z = z + step if (self.residual is not None and i < L) else step
            return z[:, 0]


def check_params(net, params, x_shape, where: str) -> None:
    """Raise ValueError/TypeError unless params match ``net.shapes(d)`` for x of shape (n, d)."""
    if len(x_shape) != 2 or x_shape[0] < 1 or x_shape[1] < 1:
        raise ValueError(f"{where}: expected x of shape (n, d) with n, d >= 1, got shape {tuple(x_shape)}")
    if not isinstance(params, (list, tuple)):
        what = (f"{net.depth + 1} weight arrays" if isinstance(net, MLP)
                else f"{2 * net.depth + 2} arrays (weights, then biases)")
        raise TypeError(f"{where}: expected params as a list of {what}, "
                        f"got {type(params).__name__}")
    expected = net.shapes(x_shape[1])
    got = [tuple(getattr(w, "shape", ())) for w in params]
    if got != expected:
        raise ValueError(f"{where}: expected params of shapes {expected} for x of shape "
                         f"{tuple(x_shape)}, got {got}")
