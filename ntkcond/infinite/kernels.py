"""Analytic infinite-width NNGP and NTK of bias-free, norm-preserving fully-connected nets.

Network (NTK parameterisation, no biases; L = ``depth`` hidden layers of width m → ∞):

    z⁽¹⁾ = √(c/d) W⁽¹⁾ x,   z⁽ˡ⁺¹⁾ = √(c/m) W⁽ˡ⁺¹⁾ σ(z⁽ˡ⁾),   f(x) = √(1/m) W⁽ᴸ⁺¹⁾ σ(z⁽ᴸ⁾),

with W entries N(0, 1) and c = 2/(1 + α²) (``activations``). L = 0 is the linear model
f(x) = W⁽¹⁾x/√d. This is neural-tangents' ``stax.serial(*[Dense(m, W_std=√c, b_std=None),
act] * L, Dense(1, b_std=None))``.

With ‖·‖ the Euclidean norm and θ₀ the angle between x and x', both kernels factor into a
scale and the angle recursion of ``ntkcond.angles``:

    NNGP(x, x') = ‖x‖‖x'‖/d · cos θ_L                                                  (1)
    NTK(x, x')  = ‖x‖‖x'‖/d · Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j)                      (2)

(``angles`` eqs. (2)–(4)). The diagonal is NTK(x, x) = |S|·‖x‖²/d for every activation and
depth; for linear nets NTK = (L + 1)·G/d with G = XXᵀ, so κ does not change with depth.

Precision: input angles come from the normalised Gram matrix, and pairs within 0.1 rad of 0
or π are recomputed exactly from the original (unnormalised) rows (``geometry`` eq. (1)), so
input angles are exact for the float64 data (~1e-15 relative near 0 and π, at any angle and
any row scale) and the recursion, which never calls arccos, keeps that precision in the kernels
and gradient angles.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np

from .._core.checks import as_data, as_depth, resolve_trainable, sweep_layers
from ..activations import parse_activation
from ..spectrum import argmin_upper
from ._recursion import angle_from, gradient_recursion
from .extremes import extreme_pairs, smallest_from_extremes
from .family import angles_of, family_kernels, resolve_net
from .geometry import PAIR_ARRAYS, check_scale, normalised_rows, pair_geometry

__all__ = [
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "gradient_angles",
    "smallest_gradient_angle",
    "DepthKernel",
    "depth_sweep",
]


_FAMILY_ARGS = """      w_std, b_std, residual: weight std s_w > 0, bias std s_b ≥ 0, residual scale β > 0 of
        the general net of ``ntkcond.infinite.family`` (eqs. (1)–(2); neural-tangents'
        ``Dense(W_std=s_w, b_std=s_b)``). All None (default): the bias-free norm-preserving
        net above, exactly. Activations outside the leaky family need ``w_std``."""


def infinite_nngp(x1, x2=None, *, depth: int, activation="relu", w_std=None, b_std=None,
                  residual=None) -> np.ndarray:
    """Output NNGP kernel E[f(x) f(x')] at infinite width, eq. (1).

    NNGP = ‖x‖‖x'‖/d · cos g^L(θ₀); with ``w_std``/``b_std``/``residual``, Σ^{L+1} of
    ``ntkcond.infinite.family`` eq. (1).

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth: number of hidden layers L ≥ 0.
      activation: "relu", "linear", ("leaky_relu", α) or a slope α ∈ [0, 1].

    Returns:
      (n1, n2) float64 kernel.
    """
    net = resolve_net(activation, w_std, b_std, residual, "infinite_nngp")
    depth = as_depth(depth, "infinite_nngp")
    if net is not None:
        out = next(family_kernels(x1, x2, [depth], net, "last", "infinite_nngp", angles=False))
        return out["nngp"]
    act = parse_activation(activation)
    angle, cos, scale = pair_geometry(x1, x2, "infinite_nngp")
    check_scale(scale, "infinite_nngp")
    _, cos_l, _, _, _ = next(gradient_recursion(angle, cos, [depth], act, "last"))
    return scale * cos_l


def infinite_ntk(x1, x2=None, *, depth: int, activation="relu", trainable="all", w_std=None,
                 b_std=None, residual=None) -> np.ndarray:
    """Infinite-width NTK Θ(x, x') of the bias-free norm-preserving MLP, eq. (2).

    Θ = ‖x‖‖x'‖/d · Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j), with S the trainable layers.
    For all layers trainable, the diagonal is (L + 1)‖x‖²/d; linear nets give (L + 1)·XXᵀ/d.

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth: number of hidden layers L ≥ 0 (L = 0: linear model).
      activation: "relu", "linear", ("leaky_relu", α) or a slope α ∈ [0, 1].
      trainable: "all", "first" (W⁽¹⁾ only, v1 Thm 5.3 / v2 Thm 4.2), "last" (read-out only, the
        NNGP), or 0-based layer indices (0 = W⁽¹⁾, L = read-out).

    Returns:
      (n1, n2) float64 kernel.
    """
    net = resolve_net(activation, w_std, b_std, residual, "infinite_ntk")
    depth = as_depth(depth, "infinite_ntk")
    layers = resolve_trainable(trainable, depth, "infinite_ntk")
    if net is not None:
        out = next(family_kernels(x1, x2, [depth], net, set(layers), "infinite_ntk",
                                  angles=False))
        return np.array(np.broadcast_to(out["ntk"], out["nngp"].shape))
    act = parse_activation(activation)
    angle, cos, scale = pair_geometry(x1, x2, "infinite_ntk")
    check_scale(scale, "infinite_ntk")
    _, T, _, _, _ = next(gradient_recursion(angle, cos, [depth], act, set(layers)))
    return scale * T


def infinite_ntk_layers(x1, x2=None, *, depth: int, activation="relu", w_std=None, b_std=None,
                        residual=None) -> np.ndarray:
    """Per-layer NTK contributions Θ_i = ‖x‖‖x'‖/d · cos θ_i Π_{j=i}^{L−1} ġ(θ_j).

    ``infinite_ntk(..., trainable=S) == infinite_ntk_layers(...)[list(S)].sum(0)``.

    Returns:
      (L + 1, n1, n2) float64; index i is the contribution of W⁽ⁱ⁺¹⁾ (L = read-out).
    """
    net = resolve_net(activation, w_std, b_std, residual, "infinite_ntk_layers")
    depth = as_depth(depth, "infinite_ntk_layers")
    if net is not None:
        layers_out = [next(family_kernels(x1, x2, [depth], net, {i}, "infinite_ntk_layers",
                                          angles=False)) for i in range(depth + 1)]
        return np.stack([np.broadcast_to(o["ntk"], o["nngp"].shape) for o in layers_out])
    act = parse_activation(activation)
    angle, cos, scale = pair_geometry(x1, x2, "infinite_ntk_layers", PAIR_ARRAYS + depth + 1)
    check_scale(scale, "infinite_ntk_layers")
    out = np.empty((depth + 1,) + angle.shape)
    for i in range(depth + 1):
        _, T, _, _, _ = next(gradient_recursion(angle, cos, [depth], act, {i}))
        out[i] = scale * T
    return out


def gradient_angles(x1, x2=None, *, depth: int, activation="relu", trainable="all", w_std=None,
                    b_std=None, residual=None) -> np.ndarray:
    """Angles φ between infinite-width model gradients ∇_w f(x), ∇_w f(x'), in radians.

    Computed from the data with the angle-native recursion (``angles`` eq. (4)), so angles
    keep full relative precision where a kernel matrix cannot resolve them: at θ = 1e-6 rad,
    1 − cos θ = 5e-13 has only ~4 significant digits in a float64 kernel. The input angles are
    exact for the float64 rows (``geometry``: ~1e-15 relative near 0 and π, exactly 0 for rows
    that are exact multiples of each other), and scale-invariant: rows of any finite nonzero
    norm, 1e-300 or 1e300, give the same angles.

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth, activation, trainable: as in ``infinite_ntk``.

    Returns:
      (n1, n2) float64 angles in [0, π]; exact 0 on the diagonal when x2 is None.
    """
    net = resolve_net(activation, w_std, b_std, residual, "gradient_angles")
    return _gradient_angles(x1, x2, depth, activation, trainable, "gradient_angles", net)


def _gradient_angles(x1, x2, depth, activation, trainable, where, net=None):
    depth = as_depth(depth, where)
    layers = resolve_trainable(trainable, depth, where)
    if net is not None:
        return angles_of(next(family_kernels(x1, x2, [depth], net, set(layers), where)),
                         x2 is None)
    act = parse_activation(activation)
    angle, cos, _ = pair_geometry(x1, x2, where)
    if act.is_linear:
        return angle
    _, _, R, Z, _ = next(gradient_recursion(angle, cos, [depth], act, set(layers)))
    phi = angle_from(R, Z)
    if x2 is None:
        np.fill_diagonal(phi, 0.0)
    return phi


def smallest_gradient_angle(x, *, depth: int, activation="relu", trainable="all",
                            method: str = "pairs", w_std=None, b_std=None,
                            residual=None) -> tuple[float, int, int]:
    """Smallest angle between infinite-width model gradients over all pairs of rows of x.

    φ depends on the input angle θ only; where φ_L has no interior minimum between the data's
    smallest and largest input angles (proved or verified by ``unimodal.certify``), the answer
    is at the closest or the farthest pair, found in GEMM blocks without an n × n matrix
    (``extremes``): ``method="pairs"``, the default. Otherwise, or with
    ``method="recursion"``, φ is computed for every pair (n × n matrix, ``gradient_angles``).
    The certificate is proved for bias-free, non-residual leaky-family nets (their gradient
    angles do not depend on w_std); with biases (input norms matter), residual blocks or
    other activations the recursion is used whatever ``method`` says.

    Args:
      x: (n, d) inputs, n ≥ 2, no zero rows.
      depth, activation, trainable, w_std, b_std, residual: as in ``infinite_ntk``.
      method: "pairs" (default) or "recursion".

    Returns:
      (angle in radians, i, j) with i < j; ties to the lowest (i, j) in row-major order.
    """
    where = "smallest_gradient_angle"
    x = as_data(x, where, "x")
    if x.shape[0] < 2:
        raise ValueError(f"{where}: expected n >= 2 rows, got shape {x.shape}")
    if method not in ("pairs", "recursion"):
        raise ValueError(f"{where}: expected method 'pairs' or 'recursion', got {method!r}")
    depth = as_depth(depth, where)
    net = resolve_net(activation, w_std, b_std, residual, where)
    if net is not None and not (net.act.is_leaky and not net.b_std and net.residual is None):
        return argmin_upper(_gradient_angles(x, None, depth, activation, trainable, where, net))
    if method == "pairs":
        parse_activation(activation)
        resolve_trainable(trainable, depth, where)
        xh, _ = normalised_rows(x, where, "x")
        found = smallest_from_extremes(extreme_pairs(xh, x=x), activation, [depth], trainable)[depth]
        if found is not None:
            return found
    phi = _gradient_angles(x, None, depth, activation, trainable, where)
    return argmin_upper(phi)


@dataclasses.dataclass(frozen=True)
class DepthKernel:
    """One depth of ``depth_sweep``.

    Attributes:
      depth: L.
      ntk: (n, n) infinite-width NTK, eq. (2).
      angles: (n, n) gradient angles in radians (angle-native, as ``gradient_angles``).
    """

    depth: int
    ntk: np.ndarray
    angles: np.ndarray


def depth_sweep(x, depths, *, activation="relu", trainable="all", w_std=None, b_std=None,
                residual=None) -> Iterator[DepthKernel]:
    """NTKs and gradient angles of one batch for many depths, in one pass of the recursion.

    The Gram matrix, the input angles and the layer recursion are shared: the cost of all
    depths 0…L is that of depth L alone.

    Args:
      x: (n, d) inputs.
      depths: iterable of depths L ≥ 0 (any order; results come in ascending order).
      activation: as in ``infinite_ntk``.
      trainable: "all", "first", "last", or 0-based indices (valid for every depth).
      w_std, b_std, residual: as in ``infinite_ntk``.

    Yields:
      ``DepthKernel`` per depth, ascending.
    """
    net = resolve_net(activation, w_std, b_std, residual, "depth_sweep")
    depths, layers = sweep_layers(depths, trainable, "depth_sweep")  # fails here, not later
    if net is not None:
        return _family_sweep(x, depths, net, layers)
    return sweep_geometry(pair_geometry(x, None, "depth_sweep", PAIR_ARRAYS + 2), depths,
                          activation, trainable)


def sweep_geometry(geometry, depths, activation, trainable) -> Iterator[DepthKernel]:
    """``depth_sweep`` on a precomputed ``pair_geometry(x, None)``, shared across activations.

    The arguments are checked when this is called, not when the first item is drawn.
    """
    act = parse_activation(activation)
    depths, layers = sweep_layers(depths, trainable, "depth_sweep")
    check_scale(geometry[2], "depth_sweep")
    return _sweep(geometry, depths, act, layers)


def _family_sweep(x, depths, net, layers) -> Iterator[DepthKernel]:
    runs = family_kernels(x, None, depths, net, layers, "depth_sweep")  # checks run here
    return (DepthKernel(depth=out["depth"], ntk=np.array(np.broadcast_to(
        out["ntk"], out["nngp"].shape)), angles=angles_of(out, True)) for out in runs)


def _sweep(geometry, depths, act, layers) -> Iterator[DepthKernel]:
    angle, cos, scale = geometry
    for L, T, R, Z, _ in gradient_recursion(angle, cos, depths, act, layers):
        phi = angle.copy() if act.is_linear else angle_from(R, Z)
        np.fill_diagonal(phi, 0.0)
        yield DepthKernel(depth=L, ntk=scale * T, angles=phi)


