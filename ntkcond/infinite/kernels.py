"""Analytic infinite-width NNGP and NTK of bias-free, norm-preserving fully-connected nets.

Network (NTK parameterisation, no biases; L = ``depth`` hidden layers of width m → ∞):

    z⁽¹⁾ = √(c/d) W⁽¹⁾ x,   z⁽ˡ⁺¹⁾ = √(c/m) W⁽ˡ⁺¹⁾ σ(z⁽ˡ⁾),   f(x) = √(1/m) W⁽ᴸ⁺¹⁾ σ(z⁽ᴸ⁾),

with W entries N(0, 1) and c = 2/(1 + α²) (``activations``). L = 0 is the linear model
f(x) = W⁽¹⁾x/√d. This is neural-tangents' ``stax.serial(*[Dense(m, W_std=√c, b_std=None),
act] * L, Dense(1, b_std=None))``.

With ‖·‖ the Euclidean norm and θ₀ the angle between x and x', both kernels factor into a
scale and the angle recursion of ``ntkcond.infinite.angles``:

    NNGP(x, x') = ‖x‖‖x'‖/d · cos θ_L                                                  (1)
    NTK(x, x')  = ‖x‖‖x'‖/d · Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j)                      (2)

(``ntkcond.infinite.angles`` eqs. (2)–(4)), computed by ``ntkcond.infinite.recursion``. The diagonal is NTK(x, x) = |S|·‖x‖²/d for every activation and
depth; for linear nets NTK = (L + 1)·G/d with G = XXᵀ, so κ does not change with depth.

Precision: input angles come from the normalised Gram matrix, and pairs within 0.1 rad of 0
or π are recomputed exactly from the original (unnormalised) rows (``geometry`` eq. (1)), so
input angles are exact for the float64 data (~1e-15 relative near 0 and π, at any angle and
any row scale) and the recursion, which never calls arccos, keeps that precision in the kernels
and gradient angles. Entries are exact to a few eps relative to √(K(x, x)K(x', x')); relative
to |K(x, x')| itself only where |cos θ₀| is not tiny: near-orthogonal entries of linear and
depth-0 kernels carry the rounding of the Gram product (~eps·√d absolute in cos θ₀).
Near-antipodal entries (θ₀ = π − δ) are relatively exact (``ntkcond.infinite.recursion``);
x and −x give exactly 0 in the ReLU NNGP.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np

from .._core.checks import as_data, as_depth, resolve_trainable, sweep_layers
from ..activations import parse_activation
from ..spectrum import argmin_upper
from .recursion import angle_from, recursion
from .extremes import extreme_pairs, smallest_from_extremes
from ..activations import resolve_net
from .family import check_net
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


def infinite_nngp(x1, x2=None, *, depth: int, activation="relu", w_std=None, b_std=None,
                  residual=None) -> np.ndarray:
    """Output NNGP kernel E[f(x) f(x')] at infinite width, eq. (1).

    NNGP = ‖x‖‖x'‖/d · cos g^L(θ₀); with ``w_std``, ``b_std`` or ``residual``, Σ^{L+1} of
    the general net (``ntkcond.infinite.family`` eqs. (1)–(2)).

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth: number of hidden layers L ≥ 0.
      activation: "relu", "linear", "abs", "leaky:α" (α ∈ [−1, 1]), "erf", "gelu", "sin",
        "tanh", "softplus", "silu" or an elementwise callable (``parse_activation``).
      w_std, b_std, residual: weight std s_w > 0, bias std s_b ≥ 0 and residual scale β > 0
        of the general net (neural-tangents' ``Dense(W_std=s_w, b_std=s_b)``); all None
        (default): the bias-free norm-preserving net, exactly. Activations outside the leaky
        family need ``w_std``.

    Returns:
      (n1, n2) float64 kernel.
    """
    act = parse_activation(activation, "infinite_nngp")
    net = resolve_net(act, w_std, b_std, residual, "infinite_nngp")
    depth = as_depth(depth, "infinite_nngp")
    geometry = pair_geometry(x1, x2, "infinite_nngp")
    check_scale(geometry, "infinite_nngp")
    check_net(net, _all_norms(geometry), geometry.d, depth, "infinite_nngp")
    return next(recursion(geometry, act, [depth], "last", overwrite=True, net=net))[1]


def _all_norms(geometry):
    return np.concatenate([np.ravel(geometry.norms1), np.ravel(geometry.norms2)])


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
        NNGP), or 0-based layer indices (0 = W⁽¹⁾, L = read-out; with biases a layer is its
        W and b).
      w_std, b_std, residual: as in ``infinite_nngp`` (``ntkcond.infinite.family``).

    Returns:
      (n1, n2) float64 kernel.
    """
    act = parse_activation(activation, "infinite_ntk")
    net = resolve_net(act, w_std, b_std, residual, "infinite_ntk")
    depth = as_depth(depth, "infinite_ntk")
    layers = resolve_trainable(trainable, depth, "infinite_ntk")
    geometry = pair_geometry(x1, x2, "infinite_ntk")
    check_scale(geometry, "infinite_ntk")
    check_net(net, _all_norms(geometry), geometry.d, depth, "infinite_ntk")
    return next(recursion(geometry, act, [depth], set(layers), overwrite=True, net=net))[1]


def infinite_ntk_layers(x1, x2=None, *, depth: int, activation="relu", w_std=None, b_std=None,
                        residual=None) -> np.ndarray:
    """Per-layer NTK contributions Θ_i = ‖x‖‖x'‖/d · cos θ_i Π_{j=i}^{L−1} ġ(θ_j).

    ``infinite_ntk(..., trainable=S) == infinite_ntk_layers(...)[list(S)].sum(0)``.

    Returns:
      (L + 1, n1, n2) float64; index i is the contribution of W⁽ⁱ⁺¹⁾ (L = read-out).
    """
    act = parse_activation(activation, "infinite_ntk_layers")
    net = resolve_net(act, w_std, b_std, residual, "infinite_ntk_layers")
    depth = as_depth(depth, "infinite_ntk_layers")
    geometry = pair_geometry(x1, x2, "infinite_ntk_layers", PAIR_ARRAYS + depth + 1)
    check_scale(geometry, "infinite_ntk_layers")
    check_net(net, _all_norms(geometry), geometry.d, depth, "infinite_ntk_layers")
    out = np.empty((depth + 1,) + geometry.angle.shape)
    for i in range(depth + 1):
        next(recursion(geometry, act, [depth], {i}, out={depth: out[i]}, net=net))
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
      depth, activation, trainable, w_std, b_std, residual: as in ``infinite_ntk``. With
        biases or residual blocks φ depends on the norms too; near-duplicate pairs keep
        relative precision ~eps·max(1, |‖x‖ − ‖x'‖|/(‖x‖θ²)) (``ntkcond.infinite.family``).

    Returns:
      (n1, n2) float64 angles in [0, π]; exact 0 on the diagonal when x2 is None.
    """
    where = "gradient_angles"
    act = parse_activation(activation, "gradient_angles")
    net = resolve_net(act, w_std, b_std, residual, where)
    depth = as_depth(depth, where)
    layers = resolve_trainable(trainable, depth, where)
    geometry = pair_geometry(x1, x2, where)
    check_net(net, _all_norms(geometry), geometry.d, depth, where)
    return _gradient_angles(geometry, x2 is None, depth, act, layers, net)


def _gradient_angles(geometry, same, depth, act, layers, net=None):
    """``gradient_angles`` on checked arguments: the geometry, the parsed activation, layers."""
    if act.is_linear and (net is None or (not net.b_std and net.residual is None)):
        return geometry.angle
    _, _, R, Z = next(recursion(geometry, act, [depth], set(layers), kernel=False, angles=True,
                                net=net))
    phi = angle_from(R, Z)
    if same:
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
    act = parse_activation(activation, "smallest_gradient_angle")
    net = resolve_net(act, w_std, b_std, residual, where)
    depth = as_depth(depth, where)
    layers = resolve_trainable(trainable, depth, where)
    if net is not None and not (act.is_leaky and not net.b_std and net.residual is None):
        geometry = pair_geometry(x, None, where)
        check_net(net, _all_norms(geometry), geometry.d, depth, where)
        return argmin_upper(_gradient_angles(geometry, True, depth, act, layers, net))
    if method == "pairs":
        xh, _ = normalised_rows(x, where, "x")
        found = smallest_from_extremes(extreme_pairs(xh, x=x), act, [depth], trainable)[depth]
        if found is not None:
            return found
    phi = _gradient_angles(pair_geometry(x, None, where), True, depth, act, layers)
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
    act = parse_activation(activation, "depth_sweep")
    net = resolve_net(act, w_std, b_std, residual, "depth_sweep")
    depths, layers = sweep_layers(depths, trainable, "depth_sweep")  # fails here, not on iteration
    geometry = pair_geometry(x, None, "depth_sweep", PAIR_ARRAYS + 2)
    check_scale(geometry, "depth_sweep")
    check_net(net, _all_norms(geometry), geometry.d, max(depths), "depth_sweep")
    return _sweep(geometry, depths, act, layers, net)


def sweep_geometry(geometry, depths, activation, trainable,
                   where: str = "depth_sweep") -> Iterator[DepthKernel]:
    """``depth_sweep`` on a precomputed ``pair_geometry(x, None)``, shared across activations
    (left unchanged).

    The arguments are checked when this is called, not when the first item is drawn; messages
    name ``where``, the public function called (``depth_sweep``, or a caller such as
    ``ntkcond.runs.depth.measure_infinite_batch``).
    """
    act = parse_activation(activation, "sweep_geometry")
    depths, layers = sweep_layers(depths, trainable, where)
    check_scale(geometry, where)
    return _sweep(geometry, depths, act, layers)


def _sweep(geometry, depths, act, layers, net=None) -> Iterator[DepthKernel]:
    """The sweep on checked arguments: kernels and angles from one ``recursion``."""
    plain = act.is_linear and net is None
    for L, K, R, Z in recursion(geometry, act, depths, layers, angles=not plain, net=net):
        phi = geometry.angle.copy() if plain else angle_from(R, Z)
        np.fill_diagonal(phi, 0.0)
        yield DepthKernel(depth=L, ntk=K, angles=phi)
