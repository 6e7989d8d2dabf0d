"""The angle recursion behind every infinite-width kernel and angle of ntkcond, carried as
non-negative terms (1 − cos, 1 + cos) so that nothing cancels (``ntkcond.infinite.angles``
eqs. (1)–(4)). Public names of a private module: used by ``angles``, ``kernels`` and the
block engines of ``ntkcond.scale``; works on NumPy arrays and, with ``xp=jax.numpy``, under jit.
"""
from __future__ import annotations

import math

import numpy as np

from ..activations import Activation

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


def one_minus_cos(angle, xp=np):
    return 2.0 * xp.sin(0.5 * angle) ** 2


def one_plus_cos(angle, xp=np):
    return 2.0 * xp.cos(0.5 * angle) ** 2


def angle_from(one_minus_cos, one_plus_cos, xp=np):
    """θ = 2 atan2(√(1 − cos θ), √(1 + cos θ)): exact to rounding from accurate inputs."""
    return 2.0 * xp.arctan2(xp.sqrt(one_minus_cos), xp.sqrt(one_plus_cos))


def layer_step(angle, cos, act: Activation, xp=np):
    """One layer of eq. (2): (θ, cos θ) ↦ (θ', cos θ', 1 − cos θ', 1 + cos θ')."""
    a = act.slope
    u, v = one_minus_cos(angle, xp), one_plus_cos(angle, xp)
    kappa1 = (xp.sin(angle) + (np.pi - angle) * cos) / np.pi
    u_relu = u - sin_minus_angle_cos(angle, xp) / np.pi  # 1 − κ₁ = [π(1 − cos θ) − s(θ)]/π ≥ 0
    w_lin, w_relu = 2.0 * a / (1.0 + a * a), (1.0 - a) ** 2 / (1.0 + a * a)
    cos_new = w_lin * cos + w_relu * kappa1
    u_new = w_lin * u + w_relu * u_relu
    v_new = w_lin * v + w_relu * (1.0 + kappa1)
    return angle_from(u_new, v_new, xp), cos_new, u_new, v_new


def derivative_slope(act: Activation) -> float:
    a = act.slope
    return (1.0 - a) ** 2 / (np.pi * (1.0 + a * a))


def gradient_recursion(angle0, cos0, depths, act: Activation, layers=None, xp=np):
    """Eq. (4) for every depth in ``depths`` (ascending), in one forward pass.

    Yields (depth, T, R, Z, count): with S = ``layers`` ∩ [0, depth] (all layers if None;
    S = {depth} at every depth if ``layers == "last"``),
      T = Σ_{i∈S} cos θ_i Π ġ     (normalised NTK, 1 per layer on the diagonal),
      R = Σ_{i∈S} (1 − cos θ_i Π ġ) = count − T,
      Z = Σ_{i∈S} (1 + cos θ_i Π ġ) = count + T,
    with R and Z built from non-negative terms only:
      R_{k+1} = s·(1 − cos θ_{k+1}) + count_k·βθ_k + ġ(θ_k)·R_k   (s = 1 if k+1 ∈ S)
      Z_{k+1} = s·(1 + cos θ_{k+1}) + count_k·βθ_k + ġ(θ_k)·Z_k
      T_{k+1} = s·cos θ_{k+1} + ġ(θ_k)·T_k.
    Works on any numpy arrays (scalars for closed forms, n1 × n2 matrices for kernels), and on
    jax arrays under jit with ``xp=jax.numpy`` (``ntkcond.scale.streaming``).
    """
    wanted = set(depths)
    beta = derivative_slope(act)
    last_only = layers == "last"  # S = {depth} for each depth of the sweep
    member = (lambda k: True) if layers is None or last_only else (lambda k: k in layers)
    angle, cos = angle0, cos0
    s = 1.0 if member(0) else 0.0
    u, v = one_minus_cos(angle, xp), one_plus_cos(angle, xp)
    T, R, Z, count = s * cos, s * u, s * v, s
    if 0 in wanted:
        yield (0, cos, u, v, 1.0) if last_only else (0, T, R, Z, count)
    for k in range(max(depths)):
        gdot_gap = beta * angle  # 1 − ġ(θ_k) ≥ 0
        gdot = 1.0 - gdot_gap
        if act.is_linear:
            u_new, v_new = u, v
        else:
            angle, cos, u_new, v_new = layer_step(angle, cos, act, xp)
        s = 1.0 if member(k + 1) else 0.0
        T = s * cos + gdot * T
        R = s * u_new + count * gdot_gap + gdot * R
        Z = s * v_new + count * gdot_gap + gdot * Z
        count += s
        if k + 1 in wanted:
            yield (k + 1, cos, u_new, v_new, 1.0) if last_only else (k + 1, T, R, Z, count)


def phi_from_angle(angle0, cos0, depth, act, layers):
    if act.is_linear:
        return np.array(angle0, dtype=np.float64, copy=True)
    _, _, R, Z, _ = next(gradient_recursion(angle0, cos0, [depth], act, set(layers)))
    return angle_from(R, Z)
