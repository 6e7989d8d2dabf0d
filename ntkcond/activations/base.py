"""What an activation is: an elementwise σ with its derivatives, its jax form and its dual
kernels — the Gaussian expectations the infinite-width layer maps need — in one object.

For a centred Gaussian pair (u, v) with variances q₁, q₂ and covariance c, written with the
Euclidean gap D = ½E[(u − v)²] = ½(q₁ + q₂) − c ≥ 0 (carried exactly by the layer maps of
``ntkcond.network``, never formed as a difference), an activation's ``dual`` returns

    M  = E[σ(u)σ(v)],     Dσ  = ½E[(σ(u) − σ(v))²]   = ½(P₁ + P₂) − M        ≥ 0     (1)
    Ṁ  = E[σ'(u)σ'(v)],   Dσ' = ½E[(σ'(u) − σ'(v))²] = ½(Ṗ₁ + Ṗ₂) − Ṁ      ≥ 0     (2)

and ``diagonal`` returns (P, Ṗ) = (E[σ(u)²], E[σ'(u)²]) for u ~ N(0, q). The gaps are what
carries 1 − ρ through the layers: read off M they would lose all digits at small angles.

An activation with closed forms overrides ``dual`` and ``diagonal`` (the leaky family, erf,
sin, GELU). Every other one (tanh, softplus, SiLU, a user's callable) gets them from this
base class: Mehler's series (``ntkcond.activations.mehler``, eq. (7)) or, where it does not
converge within its table, the 2-D trapezoid (``ntkcond.activations.trapezoid``), and the
small gaps (below ``GAP_RECOMPUTE_BELOW`` of the diagonal) by the trapezoid's divided
differences. Adding an activation is one class here or in ``ntkcond.activations.smooth``
with ``@register``: σ, σ', σ'' on float64 NumPy arrays and σ in jax.numpy.

Arrays broadcast (q₁ as a column, q₂ as a row, c and D as blocks); results are float64.
"""
from __future__ import annotations

import functools
from typing import Callable, ClassVar

import numpy as np

from .mehler import mehler_dual
from .trapezoid import (H_SCALE, quadrature_check, quadrature_diagonal, quadrature_dual,
                        quadrature_gaps)

__all__ = ["ActivationFunction", "GAP_RECOMPUTE_BELOW", "REGISTRY", "add", "register",
           "is_jax_array"]

#: Cheap gaps ½(P₁ + P₂) − M are recomputed by a cancellation-free route where they are below
#: this fraction of ½(P₁ + P₂) (likewise Dσ').
GAP_RECOMPUTE_BELOW = 1e-3

#: canonical name → the activation object that name stands for (filled by ``register``; read
#: by ``parse_activation``, the command-line help and the docs).
REGISTRY: dict = {}


def add(name: str, activation) -> None:
    """``REGISTRY[name] = activation`` (one name, one object)."""
    if name in REGISTRY:
        raise ValueError(f"activation name {name!r} registered twice")
    REGISTRY[name] = activation


def register(name: str):
    """Class decorator: ``add(name, cls())``, the class's default instance under ``name``."""
    def decorate(cls):
        add(name, cls())
        return cls

    return decorate


def is_jax_array(z) -> bool:
    """True for jax arrays and tracers (σ is then applied in jax.numpy)."""
    return type(z).__module__.startswith("jax")


class ActivationFunction:
    """Base class of every activation: the protocol the layer maps, the finite nets and the
    fast paths read (module docstring, eqs. (1)–(2)).

    Class attributes (properties the engines decide on, never names):
      homogeneous: σ(λz) = λσ(z) for λ > 0 (the leaky family a·z + b·|z|): kernels of
        bias-free nets are then the norms times a function of the input angle.
      closed_form: ``dual`` and ``diagonal`` are closed forms (no series or quadrature).
      gaps_for_kernels: the kernels alone need the exact gaps (not only the angles): the
        leaky family's Ṁ depends on θ, not on cos θ, near θ = 0; GELU's large-variance Ṁ on
        q₁q₂ − c².
      zero_mean: E[σ(u)] = 0 for every variance (odd σ): an output shift adds a constant.
    """

    homogeneous: ClassVar[bool] = False
    closed_form: ClassVar[bool] = False
    gaps_for_kernels: ClassVar[bool] = False
    zero_mean: ClassVar[bool] = False
    #: linear (σ(z) = z): angles never change
    is_linear: ClassVar[bool] = False

    # ------------------------------------------------------------------ the function itself
    @property
    def name(self) -> str:  # pragma: no cover - every subclass names itself
        raise NotImplementedError

    def numpy(self, z):  # pragma: no cover
        """σ(z) on float64 NumPy arrays."""
        raise NotImplementedError

    def derivative(self, z):  # pragma: no cover
        """σ'(z) on float64 NumPy arrays."""
        raise NotImplementedError

    def second_derivative(self, z):  # pragma: no cover
        """σ''(z) on float64 NumPy arrays."""
        raise NotImplementedError

    @property
    def jax_fn(self) -> Callable:  # pragma: no cover
        """σ in jax.numpy (finite-width nets)."""
        raise NotImplementedError

    def __call__(self, z):
        """σ(z): jax.numpy on jax arrays, float64 NumPy otherwise."""
        if is_jax_array(z):
            return self.jax_fn(z)
        return self.numpy(np.asarray(z, dtype=np.float64))

    @property
    def jax_derivative(self) -> Callable:
        """σ' in jax.numpy (elementwise, by ``jax.grad`` unless overridden)."""
        return _jax_grad(self.jax_fn)

    def __str__(self) -> str:
        return self.name

    @property
    def norm_preserving_scale(self) -> float:
        """c = 1/E[σ(z)²], z ~ N(0, 1): the weight variance that keeps E[z²] through a layer;
        defined for homogeneous activations only (ValueError otherwise)."""
        raise ValueError(
            f"activation {self.name!r} is not homogeneous, so no weight variance keeps the "
            "norm through every layer at every scale; pass w_std (and b_std)")

    @property
    def angle_activation(self):
        """The leaky-family ``Activation`` whose angle map a homogeneous activation has (the
        closed-form angle maps, certificates and power series are written for it); ValueError
        for activations that are not homogeneous."""
        raise ValueError(
            f"activation {self.name!r} is not homogeneous: the closed-form angle maps cover the "
            "leaky family (relu, linear, abs, leaky:<alpha>) and its scalings only")

    # ------------------------------------------------------------ dual kernels, eqs. (1)–(2)
    def diagonal(self, q, h_scale=H_SCALE):
        """(P, Ṗ) = (E[σ(u)²], E[σ'(u)²]) for u ~ N(0, q), elementwise in q (float64)."""
        return quadrature_diagonal(self, np.asarray(q, dtype=np.float64), h_scale)

    def expectations(self, q1, q2, c, D, h_scale=H_SCALE):
        """(M, Ṁ) of eqs. (1)–(2): Mehler's series (7), or the 2-D trapezoid where the series
        does not converge within its table."""
        found = mehler_dual(self, q1, q2, c)
        return found if found is not None else quadrature_dual(self, q1, q2, c, D, h_scale)

    def small_gaps(self, q1, q2, c, D, h_scale=H_SCALE):
        """(Dσ, Dσ') without cancellation for 1-D arrays of pairs whose cheap gaps lose digits:
        the divided-difference quadrature (``trapezoid.quadrature_gaps``)."""
        return quadrature_gaps(self, q1, q2, c, D, h_scale=h_scale)

    def dual(self, q1, q2, c, D, gaps=True, h_scale=H_SCALE):
        """(M, Dσ, Ṁ, Dσ') of eqs. (1)–(2); ``gaps=False``: (M, None, Ṁ, None).

        The gaps are ½(P₁ + P₂) − M (½(Ṗ₁ + Ṗ₂) − Ṁ) where that is at least
        ``GAP_RECOMPUTE_BELOW`` of the mean, else ``small_gaps``; pairs with D = 0 and
        q₁ = q₂ have exact 0 gaps.
        """
        q1, q2, c, D = (np.asarray(a, dtype=np.float64) for a in (q1, q2, c, D))
        M, Md = self.expectations(q1, q2, c, D, h_scale)
        if not gaps:
            return M, None, Md, None
        P1, Pd1 = self.diagonal(q1, h_scale)
        P2, Pd2 = self.diagonal(q2, h_scale)
        mean, meand = 0.5 * (P1 + P2), 0.5 * (Pd1 + Pd2)
        gap, gapd = mean - M, meand - Md
        equal = (D == 0) & (q1 == q2)
        small = ((gap < GAP_RECOMPUTE_BELOW * mean) | (gapd < GAP_RECOMPUTE_BELOW * meand)) & ~equal
        shape = np.broadcast_shapes(q1.shape, q2.shape, c.shape, D.shape)
        gap = np.broadcast_to(np.where(equal, 0.0, gap), shape).copy()
        gapd = np.broadcast_to(np.where(equal, 0.0, gapd), shape).copy()
        small = np.broadcast_to(small, shape)
        if np.any(small):
            b = [np.broadcast_to(a, shape)[small] for a in (q1, q2, c, D)]
            gap[small], gapd[small] = self.small_gaps(*b, h_scale=h_scale)
        return M, np.maximum(gap, 0.0), Md, np.maximum(gapd, 0.0)

    def check_variances(self, q, where: str) -> None:
        """ValueError naming ``where`` unless the duals are exact at every variance in ``q``:
        the quadrature's step-halving check (``trapezoid.quadrature_check``); nothing for
        closed forms."""
        if not self.closed_form:
            quadrature_check(self, q, where)


@functools.lru_cache(maxsize=64)
def _jax_grad(fn):
    import jax

    scalar = jax.grad(lambda t: fn(t.reshape(1)).reshape(-1)[0])

    def derivative(z):
        import jax.numpy as jnp

        return jnp.reshape(jax.vmap(scalar)(jnp.ravel(z)), jnp.shape(z))

    return derivative
