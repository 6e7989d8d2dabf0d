"""sin with a phase, σ(z) = sin(z + φ), and its dual kernels in closed form.

Notation of ``ntkcond.activations.base`` eqs. (1)–(2). With S = q₁ + q₂,
E sin u sin v = e^{−S/2} sinh c, E cos u cos v = e^{−S/2} cosh c, E sin u cos v = 0, and the
gaps of sin and of its derivative cos without cancellation,

    D_sin = ½[−expm1(−D) + e^{−S} expm1(D) − ½(e^{−q₁} − e^{−q₂})²],
    D_cos = ½[−expm1(−D) − e^{−S} expm1(D) + ½(e^{−q₁} − e^{−q₂})²],                   (5)

sin(z + φ) = cos φ sin z + sin φ cos z gives M = cos²φ E sin sin + sin²φ E cos cos,
Ṁ = cos²φ E cos cos + sin²φ E sin sin, Dσ = cos²φ D_sin + sin²φ D_cos and
Dσ' = cos²φ D_cos + sin²φ D_sin: sums of non-negative terms. neural-tangents'
``Sin(a, b, c)`` = a·sin(b·z + c) is ``Affine(Sin(phase=c), a, b)``.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Callable, ClassVar

import numpy as np

from .base import ActivationFunction, add

__all__ = ["Sin", "SIN"]


@dataclasses.dataclass(frozen=True)
class Sin(ActivationFunction):
    """σ(z) = sin(z + phase), eq. (5).

    Attributes:
      phase: φ in radians (finite); 0 is sin.
    """

    phase: float = 0.0

    closed_form: ClassVar[bool] = True

    def __post_init__(self):
        p = self.phase
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not math.isfinite(p):
            raise ValueError(f"Sin: expected a finite real phase, got {p!r}")
        object.__setattr__(self, "phase", float(p) + 0.0)

    @property
    def zero_mean(self) -> bool:  # type: ignore[override]
        """E[sin(u + φ)] = sin φ e^{−q/2}: zero for φ = 0 only."""
        return self.phase == 0.0

    @property
    def name(self) -> str:
        return "sin" if self.phase == 0.0 else f"sin(phase={self.phase:g})"

    def _weights(self):
        return math.cos(self.phase) ** 2, math.sin(self.phase) ** 2

    def numpy(self, z):
        return np.sin(z + self.phase) if self.phase else np.sin(z)

    def derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        return np.cos(z + self.phase) if self.phase else np.cos(z)

    def second_derivative(self, z):
        return -self.numpy(np.asarray(z, dtype=np.float64))

    @property
    def jax_fn(self) -> Callable:
        phase = self.phase

        def sin(z):
            import jax.numpy as jnp

            return jnp.sin(z + phase) if phase else jnp.sin(z)

        return sin

    def diagonal(self, q, h_scale=None):
        """(P, Ṗ): E sin² = −½expm1(−2q), E cos² = ½(1 + e^{−2q}), mixed by the phase."""
        q = np.asarray(q, dtype=np.float64)
        ps, pc = -0.5 * np.expm1(-2.0 * q), 0.5 * (1.0 + np.exp(-2.0 * q))
        if not self.phase:
            return ps, pc
        w1, w2 = self._weights()
        return w1 * ps + w2 * pc, w1 * pc + w2 * ps

    def dual(self, q1, q2, c, D, gaps=True, h_scale=None):
        """(M, Dσ, Ṁ, Dσ') of eq. (5)."""
        q1, q2, c, D = (np.asarray(x, dtype=np.float64) for x in (q1, q2, c, D))
        S = q1 + q2
        e = np.exp(-0.5 * S)
        ss, cc = e * np.sinh(c), e * np.cosh(c)
        de = np.exp(-q1) - np.exp(-q2)
        em, ep = -np.expm1(-D), np.exp(-S) * np.expm1(D)
        gs = np.maximum(0.5 * (em + ep - 0.5 * de * de), 0.0)
        gc = np.maximum(0.5 * (em - ep + 0.5 * de * de), 0.0)
        if not self.phase:
            return ss, gs, cc, gc
        w1, w2 = self._weights()
        return w1 * ss + w2 * cc, w1 * gs + w2 * gc, w1 * cc + w2 * ss, w1 * gc + w2 * gs


SIN = Sin()
add("sin", SIN)
