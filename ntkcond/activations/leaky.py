"""The leaky family σ_α(z) = max(z, αz) = a·z + b·|z|, a = (1 + α)/2, b = (1 − α)/2, slope
α ∈ [−1, 1]: α = 0 is ReLU, α = 1 the identity (a linear net), α = −1 the absolute value.

Up to scale this is the whole a·s + b·|s| family of Terjék & González-Sánchez (arXiv
2501.13225), with Δ = b²/(a² + b²) = (1 − α)²/(2(1 + α²)); scaled and reflected members
(neural-tangents' ``ABRelu(a, b)``) are ``ntkcond.activations.affine.Affine`` of one of
these. Every member is positively homogeneous, σ(λz) = λσ(z) for λ > 0, so kernels of
bias-free nets are the norms times a function of the input angle.

Norm-preserving scale (He et al. 2015 for ReLU; Liu & Hui, arXiv 2305.08813):

    c = 1/E_{z~N(0,1)}[σ_α(z)²] = 2/(1 + α²)                                          (1)

Dual kernels (Cho & Saul 2009's arc-cosine kernels; notation of
``ntkcond.activations.base`` eqs. (1)–(2)), with θ the angle of (u, v), r = √(q₁q₂),
s = √q₁ − √q₂, k(θ) = (2 sin θ + (π − 2θ) cos θ)/π = E[|u||v|]/r and, for
θ' = min(θ, π − θ), 1 − k(θ) = (1 − cos θ') − 2(sin θ' − θ' cos θ')/π (no cancellation
near 0 or π):

    M  = a²c + b²r k(θ),              Dσ  = a²D + b²[½s² + r(1 − k(θ))]
    Ṁ  = a² + b²(1 − 2θ/π),           Dσ' = 2b²θ/π,     P = (a² + b²)q,  Ṗ = a² + b².    (2)

Normalised by the variances (unit rows), one layer maps the angle θ to g(θ) with

    cos g(θ) = cos θ + w_relu (sin θ − θ cos θ)/π,   w_relu = (1 − α)²/(1 + α²) = 2Δ,
    ġ(θ) = Ṁ/(a² + b²) = 1 − βθ,   β = w_relu/π                                       (3)

(``ntkcond.infinite.angles`` eqs. (1)–(3); the fast angle recursion of
``ntkcond.infinite.recursion``). sin θ − θ cos θ is ``sin_minus_angle_cos`` (a series below
1 rad: no cancellation).
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Callable, ClassVar

import numpy as np

from ._bivariate import angle_terms
from .base import ActivationFunction, add

__all__ = ["Activation", "SMC_COEFFS", "SMC_SERIES_BELOW", "sin_minus_angle_cos", "RELU",
           "LINEAR", "ABS"]

# Taylor coefficients of sin θ − θ cos θ = Σ_{k≥1} (−1)^{k+1} 2k θ^{2k+1} / (2k+1)!, in θ².
SMC_COEFFS = [(-1) ** (k + 1) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 14)]

SMC_SERIES_BELOW = 1.0  # rad; the 13-term series is exact to < 1e-18 relative there


def sin_minus_angle_cos(angle, xp=np):
    """s(θ) = sin θ − θ cos θ ≥ 0 without cancellation (series below 1 rad).

    ``xp`` is the array namespace (numpy, or jax.numpy under jit).
    """
    t = angle * angle
    series = xp.zeros_like(angle)
    for coef in reversed(SMC_COEFFS):
        series = series * t + coef
    series = series * angle * t
    direct = xp.sin(angle) - angle * xp.cos(angle)
    return xp.where(angle < SMC_SERIES_BELOW, series, direct)


@dataclasses.dataclass(frozen=True)
class Activation(ActivationFunction):
    """A leaky-family activation σ(z) = max(z, slope·z) = a·z + b·|z|, slope α ∈ [−1, 1].

    Attributes:
      slope: α. 0 is ReLU, 1 is linear, −1 is |z|.

    Raises:
      TypeError: a slope that is not a real number; ValueError: one outside [−1, 1] or NaN.
    """

    slope: float

    homogeneous: ClassVar[bool] = True
    closed_form: ClassVar[bool] = True
    gaps_for_kernels: ClassVar[bool] = True

    def __post_init__(self):
        s = self.slope
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Real):
            raise TypeError(f"Activation: expected slope a real number in [-1, 1], got {s!r}")
        if not (math.isfinite(float(s)) and -1.0 <= float(s) <= 1.0):
            raise ValueError(f"Activation: expected slope in [-1, 1], got {s!r}")
        object.__setattr__(self, "slope", float(s) + 0.0)  # -0.0 → 0.0

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
    def is_linear(self) -> bool:  # type: ignore[override]
        return self.slope == 1.0

    @property
    def ab(self) -> tuple[float, float]:
        """(a, b) of σ(z) = a·z + b·|z|: ((1 + α)/2, (1 − α)/2)."""
        return 0.5 * (1.0 + self.slope), 0.5 * (1.0 - self.slope)

    @property
    def scale(self) -> float:
        """c = 2/(1 + α²), eq. (1)."""
        return 2.0 / (1.0 + self.slope**2)

    @property
    def norm_preserving_scale(self) -> float:
        """c = 2/(1 + α²), eq. (1)."""
        return self.scale

    @property
    def second_moment(self) -> float:
        """E[σ(z)²] = a² + b² = (1 + α²)/2 for z ~ N(0, 1): a layer's variance gain."""
        a, b = self.ab
        return a * a + b * b

    @property
    def angle_activation(self) -> "Activation":
        """The leaky activation whose angle map (eq. (3)) this one has: itself."""
        return self

    @property
    def linear_weight(self) -> float:
        """w_lin = 2α/(1 + α²) = 1 − w_relu: cos g(θ) = w_lin cos θ + w_relu κ₁(θ)."""
        a = self.slope
        return 2.0 * a / (1.0 + a * a)

    @property
    def antipodal_weight(self) -> float:
        """2 − w_relu = (1 + α)²/(1 + α²), without cancellation: 1 − cos g(π) (eq. (3))."""
        a = self.slope
        return (1.0 + a) ** 2 / (1.0 + a * a)

    @property
    def relu_weight(self) -> float:
        """w_relu = (1 − α)²/(1 + α²) of eq. (3)."""
        a = self.slope
        return (1.0 - a) ** 2 / (1.0 + a * a)

    @property
    def derivative_slope(self) -> float:
        """β of ġ(θ) = 1 − βθ, eq. (3): (1 − α)²/(π(1 + α²))."""
        return self.relu_weight / np.pi

    def numpy(self, z):
        """σ(z) = max(z, αz), elementwise; works on numpy and jax arrays."""
        if self.slope == 1.0:
            return z
        return z * ((z > 0) + self.slope * (z <= 0))

    __call__ = numpy

    def derivative(self, z):
        """σ'(z) = 1 for z > 0, α for z ≤ 0 (numpy arrays)."""
        z = np.asarray(z, dtype=np.float64)
        return np.where(z > 0, 1.0, self.slope)

    def second_derivative(self, z):
        """σ''(z) = 0 (away from z = 0)."""
        return np.zeros_like(np.asarray(z, dtype=np.float64))

    @property
    def jax_fn(self) -> Callable:
        a = self.slope

        def leaky(z):
            import jax.numpy as jnp

            return z if a == 1.0 else jnp.where(z > 0, z, a * z)

        return leaky

    @property
    def jax_derivative(self) -> Callable:
        a = self.slope

        def leaky_derivative(z):
            import jax.numpy as jnp

            return jnp.where(z > 0, 1.0, a).astype(jnp.result_type(z))

        return leaky_derivative

    def diagonal(self, q, h_scale=None):
        """(P, Ṗ) = ((a² + b²)q, a² + b²), eq. (2)."""
        q = np.asarray(q, dtype=np.float64)
        m = self.second_moment
        return m * q, np.full_like(q, m)

    def dual(self, q1, q2, c, D, gaps=True, h_scale=None):
        """(M, Dσ, Ṁ, Dσ') of eq. (2); the gaps always (they are cheap and the kernels need
        them: ``gaps_for_kernels``)."""
        q1, q2, c, D = (np.asarray(x, dtype=np.float64) for x in (q1, q2, c, D))
        a, b = self.ab
        a2, b2 = a * a, b * b
        theta, um, up, _, s, r = angle_terms(q1, q2, c, D)
        near = np.minimum(theta, np.pi - theta)
        one_minus_k = 2.0 * np.sin(0.5 * near) ** 2 - 2.0 * sin_minus_angle_cos(near) / np.pi
        M = a2 * c + b2 * r * (1.0 - one_minus_k)
        gap = a2 * D + b2 * (0.5 * s * s + r * one_minus_k)
        Md = a2 + b2 * (1.0 - 2.0 * theta / np.pi)
        gapd = 2.0 * b2 * theta / np.pi
        return M, gap, Md, gapd

    def __str__(self) -> str:
        return self.name


#: The named members of the family (``REGISTRY`` entries: ``parse_activation`` and the help).
RELU, LINEAR, ABS = Activation(0.0), Activation(1.0), Activation(-1.0)
add("relu", RELU)
add("linear", LINEAR)
add("abs", ABS)
