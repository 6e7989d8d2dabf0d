"""Closed-form angle maps of bias-free, norm-preserving (leaky) ReLU networks.

All angles are in radians and all functions act elementwise on arrays of angles.

Notation (Liu & Hui, arXiv 2305.08813; Cho & Saul 2009 for the arc-cosine kernel):
  θ     angle between two inputs, or between two hidden representations;
  φ     angle between the two model gradients ∇_w f(x), ∇_w f(x') at infinite width;
  α     leaky-ReLU slope (0 = ReLU, 1 = linear), c = 2/(1 + α²) (``activations``).

One layer, post-activations (Liu & Hui's one-layer map for ReLU; Cho & Saul's arc-cosine kernel
of degree 1):

    κ₁(θ) = (sin θ + (π − θ) cos θ) / π                                             (1)
    cos g(θ) = [2α cos θ + (1 − α)² κ₁(θ)] / (1 + α²)                               (2)

which is cos g(θ) = κ₁(θ) for ReLU and g(θ) = θ for linear. The derivative kernel
c·E[σ'(u)σ'(v)] / (unit variances) is

    ġ(θ) = [2α + (1 − α)² (π − θ)/π] / (1 + α²) = 1 − β θ,   β = (1−α)² / (π(1+α²))   (3)

(ġ = (π − θ)/π for ReLU). With θ₀ the input angle and θ_k = g(θ_{k−1}) the angle after k
layers, the weights of layer i (0-based, W⁽ⁱ⁺¹⁾; i = L is the read-out) contribute the
normalised NTK term cos θ_i · Π_{j=i}^{L−1} ġ(θ_j), each equal to 1 on the diagonal, so

    cos φ = (1/|S|) Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j)                               (4)

for trainable layers S. Small angles (Liu & Hui's small-angle law for ReLU):

    cos φ = (1 − β L θ₀ / 2 + o(θ₀)) cos θ₀,  i.e. (1 − Lθ₀/(2π)) cos θ₀ for ReLU.     (5)

Infinite depth (ReLU, all layers): θ_l ~ 3π/l, cos φ → 1/4, and the normalised NTK of n
unit-norm, pairwise non-parallel inputs tends to ¾I + ¼·11ᵀ, with condition number

    κ_∞ = (n + 3)/3.                                                                 (6)

(The paper prints (n + 4)/3; its own limit matrix gives (n + 3)/3. ``tests/test_angles.py``
settles this numerically.)

Accuracy. Everything is carried as angles, never through arccos: 1 − cos and 1 + cos are
propagated by recursions whose terms are all non-negative, so there is no cancellation, and
φ = 2·atan2(√(1 − cos φ), √(1 + cos φ)). Relative accuracy is ~1e-14 for all angles down to
1e-150 rad (below that, 1 − cos θ ≈ θ²/2 underflows to 0).
"""
from __future__ import annotations

import numpy as np

from .._core.checks import as_depth, resolve_trainable
from ..activations import parse_angle_activation
from .recursion import (
    angle_from,
    check_cost,
    derivative_slope,
    gradient_recursion,
    layer_step,
    phi_from_angle,
)

__all__ = [
    "relu_kappa1",
    "angle_map",
    "angle_map_iterate",
    "derivative_factor",
    "gradient_angle",
    "small_angle_gradient_cos",
    "embedding_angle_asymptote",
    "RELU_INFINITE_DEPTH_COS",
    "relu_infinite_depth_angle",
    "infinite_depth_kappa",
]

#: cos φ of two non-parallel inputs' gradients in an infinitely deep ReLU net, eq. (6).
RELU_INFINITE_DEPTH_COS = 0.25


def _as_angle(angle, where: str) -> np.ndarray:
    arr = np.asarray(angle, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > np.pi):
        raise ValueError(f"{where}: expected angles in [0, pi] radians, got values outside it")
    return arr


def relu_kappa1(angle):
    """κ₁(θ) = (sin θ + (π − θ) cos θ)/π, eq. (1): cos of the ReLU post-activation angle.

    Args:
      angle: array of angles θ in [0, π], radians.
    """
    angle = _as_angle(angle, "relu_kappa1")
    return (np.sin(angle) + (np.pi - angle) * np.cos(angle)) / np.pi


def angle_map(angle, activation="relu"):
    """g(θ): the post-activation angle after one norm-preserving layer, eq. (2), radians.

    cos g(θ) = [2α cos θ + (1 − α)² (sin θ + (π − θ) cos θ)/π] / (1 + α²).
    For ReLU this is Liu & Hui's one-layer map of post-activation angles.

    Args:
      angle: array of input angles in [0, π], radians.
      activation: any spelling accepted by ``parse_activation``.
    """
    act = parse_angle_activation(activation, "angle_map")
    angle = _as_angle(angle, "angle_map")
    if act.is_linear:
        return angle.copy()
    return layer_step(angle, np.cos(angle), act)[0]


def angle_map_iterate(angle, layers: int, activation="relu"):
    """gˡ(θ): the angle between post-activations after ``layers`` layers, radians (the
    recursion of ``gradient_recursion`` with the read-out alone trained: its last angle)."""
    act = parse_angle_activation(activation, "angle_map_iterate")
    angle = _as_angle(angle, "angle_map_iterate")
    layers = as_depth(layers, "angle_map_iterate", "layers")
    if act.is_linear or layers == 0:
        return angle.copy()
    check_cost(angle, np.cos(angle), layers, "angle_map_iterate")
    _, _, u, v, _ = next(gradient_recursion(angle, np.cos(angle), [layers], act, "last"))
    return np.array(angle_from(u, v), dtype=np.float64)


def derivative_factor(angle, activation="relu"):
    """ġ(θ) = 1 − βθ with β = (1 − α)²/(π(1 + α²)), eq. (3); (π − θ)/π for ReLU.

    The normalised derivative kernel c·E[σ'(u)σ'(v)] of pre-activations at angle θ.

    Args:
      angle: array of pre-activation angles in [0, π], radians.
    """
    act = parse_angle_activation(activation, "derivative_factor")
    angle = _as_angle(angle, "derivative_factor")
    return 1.0 - derivative_slope(act) * angle


def gradient_angle(angle_in, depth: int, activation="relu", trainable="all"):
    """φ(θ_in, L): angle between infinite-width model gradients, eq. (4), radians.

    φ = 2·atan2(√(1 − cos φ), √(1 + cos φ)) with both terms accumulated without
    cancellation; exact (φ = θ_in) for linear nets.

    Args:
      angle_in: array of input angles θ_in in [0, π], radians.
      depth: number of hidden layers L ≥ 0.
      activation: any spelling accepted by ``parse_activation``.
      trainable: which weights count ("all", "first", "last", or 0-based indices).

    Returns:
      Array of φ, same shape as ``angle_in``.
    """
    act = parse_angle_activation(activation, "gradient_angle")
    angle_in = _as_angle(angle_in, "gradient_angle")
    depth = as_depth(depth, "gradient_angle")
    layers = resolve_trainable(trainable, depth, "gradient_angle")
    return phi_from_angle(angle_in, np.cos(angle_in), depth, act, layers, "gradient_angle")


def small_angle_gradient_cos(angle_in, depth: int, activation="relu"):
    """Leading-order small-angle law, eq. (5): cos φ ≈ (1 − βLθ/2) cos θ.

    For ReLU β = 1/π, giving Liu & Hui's (1 − Lθ/(2π)) cos θ. All layers trainable.
    The error is o(θ) as θ → 0 (``scripts/check_claims.py`` measures its rate).
    """
    act = parse_angle_activation(activation, "small_angle_gradient_cos")
    angle_in = _as_angle(angle_in, "small_angle_gradient_cos")
    depth = as_depth(depth, "small_angle_gradient_cos")
    return (1.0 - 0.5 * derivative_slope(act) * depth * angle_in) * np.cos(angle_in)


def embedding_angle_asymptote(layers):
    """gˡ(θ) ~ 3π/l for large l (ReLU): the post-activation angles collapse like 1/l."""
    return 3.0 * np.pi / np.asarray(layers, dtype=np.float64)


def relu_infinite_depth_angle() -> float:
    """lim_{L→∞} φ = arccos(1/4) ≈ 1.3181 rad (75.52°) for non-parallel inputs, ReLU."""
    return float(np.arccos(RELU_INFINITE_DEPTH_COS))


def infinite_depth_kappa(n: int) -> float:
    """κ of ¾I + ¼·11ᵀ (n × n), the L → ∞ normalised ReLU NTK, eq. (6): (n + 3)/3."""
    n = as_depth(n, "infinite_depth_kappa", "n", maximum=None)
    if n < 1:
        raise ValueError(f"infinite_depth_kappa: expected n >= 1, got {n}")
    return (n + 3.0) / 3.0
