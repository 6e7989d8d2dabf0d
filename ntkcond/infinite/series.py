"""s(θ) = sin θ − θ cos θ without cancellation: the one series the infinite-width recursion
(``ntkcond.infinite.recursion``) and the leaky dual kernels (``ntkcond.infinite.duals``) share,
in a module of its own so that neither imports the other.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["SMC_COEFFS", "SMC_SERIES_BELOW", "sin_minus_angle_cos"]

# Taylor coefficients of sin θ − θ cos θ = Σ_{k≥1} (−1)^{k+1} 2k θ^{2k+1} / (2k+1)!, in θ².
SMC_COEFFS = [(-1) ** (k + 1) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 14)]

SMC_SERIES_BELOW = 1.0  # rad; the 13-term series is exact to < 1e-18 relative there


def sin_minus_angle_cos(angle, xp=np):
    """s(θ) = sin θ − θ cos θ ≥ 0 without cancellation (series below 1 rad).

    ``xp`` is the array namespace (numpy, or jax.numpy under jit); the same for every helper here.
    """
    t = angle * angle
    series = xp.zeros_like(angle)
    for coef in reversed(SMC_COEFFS):
        series = series * t + coef
    series = series * angle * t
    direct = xp.sin(angle) - angle * xp.cos(angle)
    return xp.where(angle < SMC_SERIES_BELOW, series, direct)
