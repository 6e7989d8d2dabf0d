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
or π are recomputed as θ = 2 atan2(‖x̂ − x̂'‖, ‖x̂ + x̂'‖) (Kahan), so angles keep full relative
precision down to 1e-150 rad; the recursion never calls arccos.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np

from .activations import parse_activation
from .angles import _angle_from, _as_depth, _gradient_recursion, resolve_trainable
from .spectrum import _argmin_upper

__all__ = [
    "input_angles",
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "gradient_angles",
    "smallest_gradient_angle",
    "DepthKernel",
    "depth_sweep",
]

# Angles this close to 0 or π (radians) are recomputed from the vectors, not the Gram matrix:
# there the Gram route's error eps/θ² would exceed 1e-12 relative.
_REFINE_WITHIN = 0.1
_REFINE_CHUNK_ELEMS = 1 << 22


def _as_data(x, where: str, name: str) -> np.ndarray:
    if not (hasattr(x, "__array__") or isinstance(x, (list, tuple))):
        raise TypeError(f"{where}: expected {name} as an (n, d) array, got {type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{where}: expected {name} with a real dtype, got {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"{where}: expected {name} of shape (n, d), got shape {arr.shape} "
            "(flatten images with x.reshape(len(x), -1))"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{where}: expected {name} with n >= 1 rows and d >= 1 columns, got {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        row = int(np.argmax(~np.all(np.isfinite(arr), axis=1)))
        raise ValueError(f"{where}: expected finite {name}, got NaN or Inf in row {row}")
    return arr


def _pair(x1, x2, where: str):
    x1 = _as_data(x1, where, "x1")
    x2 = x1 if x2 is None else _as_data(x2, where, "x2")
    if x1.shape[1] != x2.shape[1]:
        raise ValueError(
            f"{where}: expected x1 and x2 of the same dimension d, got {x1.shape} and {x2.shape}"
        )
    return x1, x2


def _normalised(x: np.ndarray, where: str, name: str):
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise ValueError(
            f"{where}: expected nonzero rows of {name} (angles are undefined), "
            f"got a zero row at index {int(np.argmax(norms == 0))}"
        )
    return x / norms[:, None], norms


def _geometry(x1, x2, where: str):
    """(θ₀, cos θ₀, scale) for all pairs: (n1, n2) arrays; scale = ‖x‖‖x'‖/d, eq. (1)."""
    same = x2 is None
    x1, x2 = _pair(x1, x2, where)
    xh1, n1 = _normalised(x1, where, "x1")
    xh2, n2 = (xh1, n1) if same else _normalised(x2, where, "x2")
    angle, cos = _unit_geometry(xh1, xh2, same)
    scale = np.outer(n1, n2) / x1.shape[1]
    return angle, cos, scale


def _unit_geometry(xh1: np.ndarray, xh2: np.ndarray, same: bool):
    """(θ₀, cos θ₀) between unit rows: Gram route, Kahan's formula within 0.1 rad of 0 or π.

    ``same``: xh1 is xh2 (the diagonal is set to exactly 0). Used by ``_geometry`` and, block by
    block, by ``ntkcond.streaming``.
    """
    cos = np.clip(xh1 @ xh2.T, -1.0, 1.0)
    angle = _angle_from(1.0 - cos, 1.0 + cos)
    refine = _needs_refinement(angle)
    if same:
        np.fill_diagonal(refine, False)
    rows, cols = np.nonzero(refine)
    if rows.size:
        exact = _kahan_angles(xh1, xh2, rows, cols)
        angle[rows, cols] = exact
        cos[rows, cols] = np.cos(exact)
    if same:
        np.fill_diagonal(angle, 0.0)
        np.fill_diagonal(cos, 1.0)
    return angle, cos


def _needs_refinement(angle):
    return (angle < _REFINE_WITHIN) | (angle > np.pi - _REFINE_WITHIN)


def _kahan_angles(xh1, xh2, rows, cols) -> np.ndarray:
    """θ = 2 atan2(‖x̂ − x̂'‖, ‖x̂ + x̂'‖) for the pairs (xh1[rows], xh2[cols]): (k,) radians."""
    out = np.empty(rows.size)
    chunk = max(1, _REFINE_CHUNK_ELEMS // xh1.shape[1])
    for start in range(0, rows.size, chunk):
        r, c = rows[start : start + chunk], cols[start : start + chunk]
        diff = np.linalg.norm(xh1[r] - xh2[c], axis=1)
        summ = np.linalg.norm(xh1[r] + xh2[c], axis=1)
        out[start : start + chunk] = 2.0 * np.arctan2(diff, summ)
    return out


def input_angles(x1, x2=None) -> np.ndarray:
    """Angles between inputs, arccos(x·x'/(‖x‖‖x'‖)) computed stably, in radians.

    Args:
      x1: (n1, d) inputs; x2: (n2, d) inputs, default x1.

    Returns:
      (n1, n2) float64 angles in [0, π]; the diagonal is exactly 0 when x2 is None.
    """
    return _geometry(x1, x2, "input_angles")[0]


def infinite_nngp(x1, x2=None, *, depth: int, activation="relu") -> np.ndarray:
    """Output NNGP kernel E[f(x) f(x')] at infinite width, eq. (1).

    NNGP = ‖x‖‖x'‖/d · cos g^L(θ₀).

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth: number of hidden layers L ≥ 0.
      activation: "relu", "linear", ("leaky_relu", α) or a slope α ∈ [0, 1].

    Returns:
      (n1, n2) float64 kernel.
    """
    act = parse_activation(activation)
    depth = _as_depth(depth, "infinite_nngp")
    angle, cos, scale = _geometry(x1, x2, "infinite_nngp")
    _, cos_l, _, _, _ = next(_gradient_recursion(angle, cos, [depth], act, "last"))
    return scale * cos_l


def infinite_ntk(x1, x2=None, *, depth: int, activation="relu", trainable="all") -> np.ndarray:
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
    act = parse_activation(activation)
    depth = _as_depth(depth, "infinite_ntk")
    layers = resolve_trainable(trainable, depth, "infinite_ntk")
    angle, cos, scale = _geometry(x1, x2, "infinite_ntk")
    _, T, _, _, _ = next(_gradient_recursion(angle, cos, [depth], act, set(layers)))
    return scale * T


def infinite_ntk_layers(x1, x2=None, *, depth: int, activation="relu") -> np.ndarray:
    """Per-layer NTK contributions Θ_i = ‖x‖‖x'‖/d · cos θ_i Π_{j=i}^{L−1} ġ(θ_j).

    ``infinite_ntk(..., trainable=S) == infinite_ntk_layers(...)[list(S)].sum(0)``.

    Returns:
      (L + 1, n1, n2) float64; index i is the contribution of W⁽ⁱ⁺¹⁾ (L = read-out).
    """
    act = parse_activation(activation)
    depth = _as_depth(depth, "infinite_ntk_layers")
    angle, cos, scale = _geometry(x1, x2, "infinite_ntk_layers")
    out = np.empty((depth + 1,) + angle.shape)
    for i in range(depth + 1):
        _, T, _, _, _ = next(_gradient_recursion(angle, cos, [depth], act, {i}))
        out[i] = scale * T
    return out


def gradient_angles(x1, x2=None, *, depth: int, activation="relu", trainable="all") -> np.ndarray:
    """Angles φ between infinite-width model gradients ∇_w f(x), ∇_w f(x'), in radians.

    Computed from the data with the angle-native recursion (``angles`` eq. (4)), so angles
    keep full relative precision where a kernel matrix cannot resolve them: at θ = 1e-6 rad,
    1 − cos θ = 5e-13 has only ~4 significant digits in a float64 kernel.

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth, activation, trainable: as in ``infinite_ntk``.

    Returns:
      (n1, n2) float64 angles in [0, π]; exact 0 on the diagonal when x2 is None.
    """
    act = parse_activation(activation)
    depth = _as_depth(depth, "gradient_angles")
    layers = resolve_trainable(trainable, depth, "gradient_angles")
    angle, cos, _ = _geometry(x1, x2, "gradient_angles")
    if act.is_linear:
        return angle
    _, _, R, Z, _ = next(_gradient_recursion(angle, cos, [depth], act, set(layers)))
    phi = _angle_from(R, Z)
    if x2 is None:
        np.fill_diagonal(phi, 0.0)
    return phi


def smallest_gradient_angle(x, *, depth: int, activation="relu", trainable="all") -> tuple[float, int, int]:
    """Smallest angle between infinite-width model gradients over all pairs of rows of x.

    Args:
      x: (n, d) inputs, n ≥ 2, no zero rows.
      depth, activation, trainable: as in ``infinite_ntk``.

    Returns:
      (angle in radians, i, j) with i < j.
    """
    x = _as_data(x, "smallest_gradient_angle", "x")
    if x.shape[0] < 2:
        raise ValueError(f"smallest_gradient_angle: expected n >= 2 rows, got shape {x.shape}")
    phi = gradient_angles(x, depth=depth, activation=activation, trainable=trainable)
    return _argmin_upper(phi)


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


def depth_sweep(x, depths, *, activation="relu", trainable="all") -> Iterator[DepthKernel]:
    """NTKs and gradient angles of one batch for many depths, in one pass of the recursion.

    The Gram matrix, the input angles and the layer recursion are shared: the cost of all
    depths 0…L is that of depth L alone.

    Args:
      x: (n, d) inputs.
      depths: iterable of depths L ≥ 0 (any order; results come in ascending order).
      activation: as in ``infinite_ntk``.
      trainable: "all", "first", "last", or 0-based indices (valid for every depth).

    Yields:
      ``DepthKernel`` per depth, ascending.
    """
    return _sweep(_geometry(x, None, "depth_sweep"), depths, activation, trainable)


def _sweep(geometry, depths, activation, trainable) -> Iterator[DepthKernel]:
    """``depth_sweep`` on a precomputed ``_geometry(x, None)``, shared across activations."""
    act = parse_activation(activation)
    depths, layers = _sweep_layers(depths, trainable, "depth_sweep")
    angle, cos, scale = geometry
    for L, T, R, Z, _ in _gradient_recursion(angle, cos, depths, act, layers):
        phi = angle.copy() if act.is_linear else _angle_from(R, Z)
        np.fill_diagonal(phi, 0.0)
        yield DepthKernel(depth=L, ntk=scale * T, angles=phi)


def _sweep_layers(depths, trainable, where: str):
    """(sorted depths, ``layers`` argument of ``_gradient_recursion``) for a depth sweep."""
    depths = sorted({_as_depth(L, where) for L in depths})
    if not depths:
        raise ValueError(f"{where}: expected at least one depth, got none")
    if isinstance(trainable, str) and trainable.lower() == "last":
        layers = "last"
    elif isinstance(trainable, str) and trainable.lower() in ("all", "first"):
        layers = None if trainable.lower() == "all" else {0}
    else:
        layers = set(resolve_trainable(trainable, depths[0], where))
    return depths, layers
