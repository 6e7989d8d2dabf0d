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

import math
import numbers

import numpy as np

from .activations import Activation, parse_activation

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

# Taylor coefficients of sin θ − θ cos θ = Σ_{k≥1} (−1)^{k+1} 2k θ^{2k+1} / (2k+1)!, in θ².
_SMC_COEFFS = [(-1) ** (k + 1) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 14)]
_SMC_SERIES_BELOW = 1.0  # rad; the 13-term series is exact to < 1e-18 relative there


def _sin_minus_angle_cos(angle, xp=np):
    """s(θ) = sin θ − θ cos θ ≥ 0 without cancellation (series below 1 rad).

    ``xp`` is the array namespace (numpy, or jax.numpy under jit); the same for every helper here.
    """
    t = angle * angle
    series = xp.zeros_like(angle)
    for coef in reversed(_SMC_COEFFS):
        series = series * t + coef
    series = series * angle * t
    direct = xp.sin(angle) - angle * xp.cos(angle)
    return xp.where(angle < _SMC_SERIES_BELOW, series, direct)


def _one_minus_cos(angle, xp=np):
    return 2.0 * xp.sin(0.5 * angle) ** 2


def _one_plus_cos(angle, xp=np):
    return 2.0 * xp.cos(0.5 * angle) ** 2


def _angle_from(one_minus_cos, one_plus_cos, xp=np):
    """θ = 2 atan2(√(1 − cos θ), √(1 + cos θ)): exact to rounding from accurate inputs."""
    return 2.0 * xp.arctan2(xp.sqrt(one_minus_cos), xp.sqrt(one_plus_cos))


def _as_angle(angle, where: str) -> np.ndarray:
    arr = np.asarray(angle, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > np.pi):
        raise ValueError(f"{where}: expected angles in [0, pi] radians, got values outside it")
    return arr


def _layer(angle, cos, act: Activation, xp=np):
    """One layer of eq. (2): (θ, cos θ) ↦ (θ', cos θ', 1 − cos θ', 1 + cos θ')."""
    a = act.slope
    u, v = _one_minus_cos(angle, xp), _one_plus_cos(angle, xp)
    kappa1 = (xp.sin(angle) + (np.pi - angle) * cos) / np.pi
    u_relu = u - _sin_minus_angle_cos(angle, xp) / np.pi  # 1 − κ₁ = [π(1 − cos θ) − s(θ)]/π ≥ 0
    w_lin, w_relu = 2.0 * a / (1.0 + a * a), (1.0 - a) ** 2 / (1.0 + a * a)
    cos_new = w_lin * cos + w_relu * kappa1
    u_new = w_lin * u + w_relu * u_relu
    v_new = w_lin * v + w_relu * (1.0 + kappa1)
    return _angle_from(u_new, v_new, xp), cos_new, u_new, v_new


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
    act = parse_activation(activation)
    angle = _as_angle(angle, "angle_map")
    if act.is_linear:
        return angle.copy()
    return _layer(angle, np.cos(angle), act)[0]


def angle_map_iterate(angle, layers: int, activation="relu"):
    """gˡ(θ): the angle between post-activations after ``layers`` layers, radians."""
    act = parse_activation(activation)
    angle = _as_angle(angle, "angle_map_iterate")
    layers = _as_depth(layers, "angle_map_iterate", "layers")
    cos = np.cos(angle)
    for _ in range(0 if act.is_linear else layers):
        angle, cos, _, _ = _layer(angle, cos, act)
    return angle.copy()


def derivative_factor(angle, activation="relu"):
    """ġ(θ) = 1 − βθ with β = (1 − α)²/(π(1 + α²)), eq. (3); (π − θ)/π for ReLU.

    The normalised derivative kernel c·E[σ'(u)σ'(v)] of pre-activations at angle θ.

    Args:
      angle: array of pre-activation angles in [0, π], radians.
    """
    act = parse_activation(activation)
    angle = _as_angle(angle, "derivative_factor")
    return 1.0 - _beta(act) * angle


def _beta(act: Activation) -> float:
    a = act.slope
    return (1.0 - a) ** 2 / (np.pi * (1.0 + a * a))


def _as_depth(depth, where: str, name: str = "depth") -> int:
    if isinstance(depth, bool) or not isinstance(depth, numbers.Integral):
        if isinstance(depth, numbers.Real) and float(depth).is_integer():
            depth = int(depth)
        else:
            raise TypeError(f"{where}: expected an integer {name}, got {depth!r}")
    depth = int(depth)
    if depth < 0:
        raise ValueError(f"{where}: expected {name} >= 0, got {depth}")
    return depth


def resolve_trainable(trainable, depth: int, where: str = "resolve_trainable") -> tuple[int, ...]:
    """Trainable layers as sorted 0-based indices into the weight list [W⁽¹⁾, …, W⁽ᴸ⁺¹⁾].

    Args:
      trainable: "all", "first" (W⁽¹⁾, index 0), "last" (the read-out, index ``depth``),
        an int, or an iterable of ints in [0, depth].
      depth: number of hidden layers L.
    """
    if isinstance(trainable, str):
        key = trainable.lower()
        if key == "all":
            return tuple(range(depth + 1))
        if key == "first":
            return (0,)
        if key == "last":
            return (depth,)
        raise ValueError(
            f"{where}: expected trainable 'all', 'first', 'last' or layer indices, got {trainable!r}"
        )
    if isinstance(trainable, numbers.Integral) and not isinstance(trainable, bool):
        trainable = (trainable,)
    try:
        layers = sorted({int(i) for i in trainable})
    except (TypeError, ValueError):
        raise TypeError(
            f"{where}: expected trainable 'all', 'first', 'last' or layer indices, got {trainable!r}"
        ) from None
    if not layers or layers[0] < 0 or layers[-1] > depth:
        raise ValueError(
            f"{where}: expected a nonempty set of layer indices in [0, {depth}] "
            f"(0 = first layer, {depth} = read-out), got {trainable!r}"
        )
    return tuple(layers)


def _gradient_recursion(angle0, cos0, depths, act: Activation, layers=None, xp=np):
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
    jax arrays under jit with ``xp=jax.numpy`` (``ntkcond.streaming``).
    """
    wanted = set(depths)
    beta = _beta(act)
    last_only = layers == "last"  # S = {depth} for each depth of the sweep
    member = (lambda k: True) if layers is None or last_only else (lambda k: k in layers)
    angle, cos = angle0, cos0
    s = 1.0 if member(0) else 0.0
    u, v = _one_minus_cos(angle, xp), _one_plus_cos(angle, xp)
    T, R, Z, count = s * cos, s * u, s * v, s
    if 0 in wanted:
        yield (0, cos, u, v, 1.0) if last_only else (0, T, R, Z, count)
    for k in range(max(depths)):
        gdot_gap = beta * angle  # 1 − ġ(θ_k) ≥ 0
        gdot = 1.0 - gdot_gap
        if act.is_linear:
            u_new, v_new = u, v
        else:
            angle, cos, u_new, v_new = _layer(angle, cos, act, xp)
        s = 1.0 if member(k + 1) else 0.0
        T = s * cos + gdot * T
        R = s * u_new + count * gdot_gap + gdot * R
        Z = s * v_new + count * gdot_gap + gdot * Z
        count += s
        if k + 1 in wanted:
            yield (k + 1, cos, u_new, v_new, 1.0) if last_only else (k + 1, T, R, Z, count)


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
    act = parse_activation(activation)
    angle_in = _as_angle(angle_in, "gradient_angle")
    depth = _as_depth(depth, "gradient_angle")
    layers = resolve_trainable(trainable, depth, "gradient_angle")
    return _phi_from_angle(angle_in, np.cos(angle_in), depth, act, layers)


def _phi_from_angle(angle0, cos0, depth, act, layers):
    if act.is_linear:
        return np.array(angle0, dtype=np.float64, copy=True)
    _, _, R, Z, _ = next(_gradient_recursion(angle0, cos0, [depth], act, set(layers)))
    return _angle_from(R, Z)


def small_angle_gradient_cos(angle_in, depth: int, activation="relu"):
    """Leading-order small-angle law, eq. (5): cos φ ≈ (1 − βLθ/2) cos θ.

    For ReLU β = 1/π, giving Liu & Hui's (1 − Lθ/(2π)) cos θ. All layers trainable.
    The error is o(θ) as θ → 0 (``scripts/check_claims.py`` measures its rate).
    """
    act = parse_activation(activation)
    angle_in = _as_angle(angle_in, "small_angle_gradient_cos")
    depth = _as_depth(depth, "small_angle_gradient_cos")
    return (1.0 - 0.5 * _beta(act) * depth * angle_in) * np.cos(angle_in)


def embedding_angle_asymptote(layers):
    """gˡ(θ) ~ 3π/l for large l (ReLU): the post-activation angles collapse like 1/l."""
    return 3.0 * np.pi / np.asarray(layers, dtype=np.float64)


def relu_infinite_depth_angle() -> float:
    """lim_{L→∞} φ = arccos(1/4) ≈ 1.3181 rad (75.52°) for non-parallel inputs, ReLU."""
    return float(np.arccos(RELU_INFINITE_DEPTH_COS))


def infinite_depth_kappa(n: int) -> float:
    """κ of ¾I + ¼·11ᵀ (n × n), the L → ∞ normalised ReLU NTK, eq. (6): (n + 3)/3."""
    n = _as_depth(n, "infinite_depth_kappa", "n")
    if n < 1:
        raise ValueError(f"infinite_depth_kappa: expected n >= 1, got {n}")
    return (n + 3.0) / 3.0
