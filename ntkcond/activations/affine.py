"""Scaled and shifted activations, σ(z) = a·φ(b·z) + c, from any activation φ: the kernels of
``Affine`` follow from φ's (neural-tangents' ``Erf(a, b, c)``, ``Sin(a, b, c)`` with a phase in
φ, and ``ABRelu(a, b)``, a scaled or reflected member of the leaky family).

With (u, v) of variances q₁, q₂, covariance c₁₂ and gap D (``ntkcond.activations.base``
eqs. (1)–(2)), φ's duals at (b²q₁, b²q₂, b²c₁₂, b²D) give

    M = a²M_φ + c²,   P = a²P_φ + c²,   Dσ = a²Dσ_φ,
    Ṁ = a²b²Ṁ_φ,      Ṗ = a²b²Ṗ_φ,      Dσ' = a²b²Dσ'_φ                                  (8)

(the shift c adds c² to M only when E[φ] = 0, so c ≠ 0 needs a zero-mean φ: erf, tanh, sin).
σ is positively homogeneous when φ is and c = 0; its angle map is φ's.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Callable

import numpy as np

from .base import ActivationFunction

__all__ = ["Affine"]


@dataclasses.dataclass(frozen=True)
class Affine(ActivationFunction):
    """σ(z) = out_scale·base(in_scale·z) + shift, eq. (8).

    Attributes:
      base: the activation φ; out_scale, in_scale: a ≠ 0 and b ≠ 0 (finite); shift: c
        (finite; nonzero only for a zero-mean φ).
    """

    base: ActivationFunction
    out_scale: float = 1.0
    in_scale: float = 1.0
    shift: float = 0.0

    def __post_init__(self):
        if not isinstance(self.base, ActivationFunction):
            raise TypeError(f"Affine: expected base an activation object, got "
                            f"{type(self.base).__name__}")
        for field, value, nonzero in (("out_scale", self.out_scale, True),
                                      ("in_scale", self.in_scale, True),
                                      ("shift", self.shift, False)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise TypeError(f"Affine: expected {field} a real number, got {value!r}")
            if not math.isfinite(value) or (nonzero and value == 0):
                raise ValueError(f"Affine: expected {field} finite{' and nonzero' if nonzero else ''}"
                                 f", got {value!r}")
            object.__setattr__(self, field, float(value) + 0.0)
        if self.shift and not self.base.zero_mean:
            raise ValueError(f"Affine: a shift c = {self.shift:g} needs a zero-mean base "
                             f"activation (erf, tanh, sin), got {self.base.name!r}")

    # properties the engines read: those of φ, adjusted
    @property
    def homogeneous(self) -> bool:  # type: ignore[override]
        return self.base.homogeneous and self.shift == 0.0

    @property
    def closed_form(self) -> bool:  # type: ignore[override]
        return self.base.closed_form

    @property
    def gaps_for_kernels(self) -> bool:  # type: ignore[override]
        return self.base.gaps_for_kernels

    @property
    def zero_mean(self) -> bool:  # type: ignore[override]
        return self.base.zero_mean and self.shift == 0.0

    @property
    def is_linear(self) -> bool:  # type: ignore[override]
        return self.homogeneous and self.base.is_linear

    @property
    def second_moment(self) -> float:
        """E[σ(z)²] = a²b²E[φ(z)²] (homogeneous φ)."""
        return (self.out_scale * self.in_scale) ** 2 * self.base.second_moment

    @property
    def relu_weight(self) -> float:
        """φ's (the angle map is φ's)."""
        return self.base.relu_weight

    @property
    def linear_weight(self) -> float:
        return self.base.linear_weight

    @property
    def antipodal_weight(self) -> float:
        return self.base.antipodal_weight

    @property
    def angle_activation(self):
        """The leaky activation whose angle map this one has (φ's; homogeneous only)."""
        if not self.homogeneous:
            return super().angle_activation
        return self.base.angle_activation

    @property
    def derivative_slope(self) -> float:
        return self.base.derivative_slope

    @property
    def norm_preserving_scale(self) -> float:
        if not self.homogeneous:
            return super().norm_preserving_scale
        return 1.0 / self.second_moment

    @property
    def name(self) -> str:
        return (f"affine({self.base.name}, a={self.out_scale:g}, b={self.in_scale:g}"
                + (f", c={self.shift:g})" if self.shift else ")"))

    def numpy(self, z):
        return self.out_scale * self.base.numpy(self.in_scale * np.asarray(z, np.float64)) + self.shift

    def derivative(self, z):
        return self.out_scale * self.in_scale * self.base.derivative(
            self.in_scale * np.asarray(z, np.float64))

    def second_derivative(self, z):
        return self.out_scale * self.in_scale**2 * self.base.second_derivative(
            self.in_scale * np.asarray(z, np.float64))

    @property
    def jax_fn(self) -> Callable:
        f, a, b, c = self.base.jax_fn, self.out_scale, self.in_scale, self.shift
        return lambda z: a * f(b * z) + c

    def diagonal(self, q, h_scale=None):
        b2, a2 = self.in_scale**2, self.out_scale**2
        kw = {} if h_scale is None else {"h_scale": h_scale}
        P, Pd = self.base.diagonal(b2 * np.asarray(q, np.float64), **kw)
        return a2 * P + self.shift**2, a2 * b2 * Pd

    def dual(self, q1, q2, c, D, gaps=True, h_scale=None):
        b2, a2 = self.in_scale**2, self.out_scale**2
        kw = {} if h_scale is None else {"h_scale": h_scale}
        q1, q2, c, D = (b2 * np.asarray(x, np.float64) for x in (q1, q2, c, D))
        M, Ds, Md, Dd = self.base.dual(q1, q2, c, D, gaps=gaps, **kw)
        return (a2 * M + self.shift**2, None if Ds is None else a2 * Ds, a2 * b2 * Md,
                None if Dd is None else a2 * b2 * Dd)

    def check_variances(self, q, where: str) -> None:
        self.base.check_variances(self.in_scale**2 * np.asarray(q, np.float64), where)
