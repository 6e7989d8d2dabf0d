"""Smooth activations without closed-form dual kernels: tanh, softplus (log(1 + eᶻ)), SiLU
(z/(1 + e⁻ᶻ)) and Mish (z·tanh(softplus z)). Their kernels come from ``ntkcond.activations.base.ActivationFunction``:
Mehler's series (eq. (7) of ``ntkcond.activations.mehler``), or the trapezoid where the series
does not converge, and the small gaps by the trapezoid's divided differences.

Adding such an activation is one class here: ``name``, σ, σ', σ'' on float64 NumPy arrays,
σ in jax.numpy, and ``@register("name")`` (which puts it in ``REGISTRY``: the command-line
help, ``parse_activation`` and the docs read it), plus its tests.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import numpy as np

from .base import ActivationFunction, register

__all__ = ["Tanh", "Softplus", "Silu", "Mish"]


def _sigmoid(z):
    from scipy.special import expit

    return expit(z)


@register("tanh")
@dataclasses.dataclass(frozen=True)
class Tanh(ActivationFunction):
    """σ(z) = tanh z."""

    zero_mean: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return "tanh"

    def numpy(self, z):
        return np.tanh(z)

    def derivative(self, z):
        return 1.0 / np.cosh(np.asarray(z, dtype=np.float64)) ** 2

    def second_derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        return -2.0 * np.tanh(z) / np.cosh(z) ** 2

    @property
    def jax_fn(self) -> Callable:
        import jax.numpy as jnp

        return jnp.tanh


@register("softplus")
@dataclasses.dataclass(frozen=True)
class Softplus(ActivationFunction):
    """σ(z) = log(1 + eᶻ); σ' is the logistic sigmoid."""

    @property
    def name(self) -> str:
        return "softplus"

    def numpy(self, z):
        return np.logaddexp(0.0, z)

    def derivative(self, z):
        return _sigmoid(np.asarray(z, dtype=np.float64))

    def second_derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        return _sigmoid(z) * _sigmoid(-z)

    @property
    def jax_fn(self) -> Callable:
        import jax

        return jax.nn.softplus


@register("silu")
@dataclasses.dataclass(frozen=True)
class Silu(ActivationFunction):
    """SiLU (swish), σ(z) = z/(1 + e⁻ᶻ)."""

    @property
    def name(self) -> str:
        return "silu"

    def numpy(self, z):
        return z * _sigmoid(z)

    def derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        s = _sigmoid(z)
        return s + z * s * _sigmoid(-z)

    def second_derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        s, t = _sigmoid(z), _sigmoid(-z)
        return s * t * (2.0 + z * (t - s))

    @property
    def jax_fn(self) -> Callable:
        import jax

        return jax.nn.silu


@register("mish")
@dataclasses.dataclass(frozen=True)
class Mish(ActivationFunction):
    """Mish (Misra 2019, arXiv 1908.08681), σ(z) = z·tanh(softplus(z)); with t = tanh(softplus
    z) and s the logistic sigmoid, σ' = t + z(1 − t²)s and σ'' = (1 − t²)s[2 + z(1 − s − 2ts)]."""

    @property
    def name(self) -> str:
        return "mish"

    @staticmethod
    def _ts(z):
        z = np.asarray(z, dtype=np.float64)
        return z, np.tanh(np.logaddexp(0.0, z)), _sigmoid(z)

    def numpy(self, z):
        z, t, _ = self._ts(z)
        return z * t

    def derivative(self, z):
        z, t, s = self._ts(z)
        return t + z * (1.0 - t * t) * s

    def second_derivative(self, z):
        z, t, s = self._ts(z)
        return (1.0 - t * t) * s * (2.0 + z * (1.0 - s - 2.0 * t * s))

    @property
    def jax_fn(self) -> Callable:
        def mish(z):
            import jax
            import jax.numpy as jnp

            return z * jnp.tanh(jax.nn.softplus(z))

        return mish
