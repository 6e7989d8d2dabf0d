"""Analytic infinite-width NNGP and NTK of fully-connected nets, gradient angles computed from
the data, and depth sweeps sharing one pass.

The net (``ntkcond.network.mlp`` eq. (1); NTK parameterisation, L = ``depth`` hidden layers of
width m → ∞, activation σ, weight std s_w = ``w_std``, bias std s_b = ``b_std``, optional
residual blocks of scale β = ``residual``) is neural-tangents'
``stax.serial(*[Dense(m, W_std=s_w, b_std=s_b), act] * L, Dense(1, W_std=s_w, b_std=s_b))``.
By default (``w_std=None``) it is the bias-free norm-preserving net of Liu & Hui (arXiv
2305.08813): hidden layers s_w² = c = 2/(1 + α²) for the leaky family σ_α, read-out 1,

    z⁽¹⁾ = √(c/d) W⁽¹⁾ x,   z⁽ˡ⁺¹⁾ = √(c/m) W⁽ˡ⁺¹⁾ σ(z⁽ˡ⁾),   f(x) = √(1/m) W⁽ᴸ⁺¹⁾ σ(z⁽ᴸ⁾).

Every function here builds the net once (``ntkcond.network.resolve_mlp``: the same layer
objects ``ntkcond.stax`` builds) and evaluates it with ``ntkcond.infinite.engine``. For a
bias-free net with a homogeneous activation (the leaky family), whatever w_std, both kernels
factor into a scale and the angle recursion of ``ntkcond.infinite.angles``:

    NNGP(x, x') = ‖x‖‖x'‖/d · G_L · cos θ_L                                             (1)
    NTK(x, x')  = ‖x‖‖x'‖/d · G_L · Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j)                (2)

with G_L the output variance over ‖x‖²/d (1 for the norm-preserving net; then the diagonal
is NTK(x, x) = |S|·‖x‖²/d at every depth, and linear nets give (L + 1)·XXᵀ/d, so κ does not
change with depth). Other nets (biases, residual blocks, erf, GELU, tanh, sin, softplus,
SiLU, a callable) take the general layer maps (``ntkcond.network.layers`` eqs. (1)–(2)).

Precision: input angles are exact for the float64 data (``geometry``), and neither route
calls arccos. Entries are exact to a few eps relative to √(K(x, x)K(x', x')); relative to
|K(x, x')| itself only where |cos θ₀| is not tiny (near-orthogonal entries of linear and
depth-0 kernels carry the Gram product's rounding, ~eps·√d absolute in cos θ₀).
Near-antipodal entries of the bias-free homogeneous nets are relatively exact; x and −x give
exactly 0 in the ReLU NNGP. Gradient angles of homogeneous nets keep ~eps relative precision
at every input angle, whatever the norms of the two inputs (they are evaluated from unit
rows); with biases, ~eps·max(1, |‖x‖ − ‖x'‖|/(‖x‖θ²)) (``ntkcond.infinite.engine``).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterator

import numpy as np

from .._core.checks import MAX_PAIR_LAYERS, as_data, as_depth, resolve_trainable, sweep_layers
from ..network import CNNFamily, KernelRangeError, MLPFamily, resolve_mlp
from ..spectrum import argmin_upper
from .engine import evaluate_family, sweep, sweep_images
from .images import image_pair
from .extremes import extreme_pairs, smallest_from_extremes
from .geometry import PAIR_ARRAYS, check_scale, normalised_rows, pair_geometry

__all__ = [
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "gradient_angles",
    "smallest_gradient_angle",
    "DepthKernel",
    "depth_sweep",
    "sweep_geometry",
    "sweep_images_of",
]

_SCALE_FREE = ("angles and condition numbers are scale-invariant: gradient_angles, "
               "ntkcond.conditioning of a rescaled kernel")


def _layers(trainable, depth, where):
    """The trainable set as the engine takes it: None for all layers."""
    layers = resolve_trainable(trainable, depth, where)
    return None if len(layers) == depth + 1 else frozenset(layers)


def _prepare(x1, x2, family: MLPFamily, depth: int, where: str, arrays: int = PAIR_ARRAYS,
             kernels: bool = True):
    geometry = pair_geometry(x1, x2, where, arrays)
    if kernels:
        check_scale(geometry, where)
    norms = np.concatenate([np.ravel(geometry.norms1), np.ravel(geometry.norms2)])
    family.check_variances(norms * norms / geometry.d, depth, where)
    return geometry


def _range(where: str):
    """Re-raise ``KernelRangeError`` as one message naming ``where`` and the way out."""
    class _Guard:
        def __enter__(self):
            return self

        def __exit__(self, kind, err, tb):
            if kind is not None and issubclass(kind, KernelRangeError):
                message = str(err).removeprefix(f"{where}: ")
                raise KernelRangeError(f"{where}: {message}; {_SCALE_FREE}") from None
            return False

    return _Guard()


def infinite_nngp(x1, x2=None, *, depth: int, activation="relu", w_std=None, b_std=None,
                  residual=None) -> np.ndarray:
    """Output NNGP kernel E[f(x) f(x')] at infinite width, eq. (1) (or the general net's).

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth: number of hidden layers L ≥ 0.
      activation: any spelling of ``ntkcond.parse_activation`` (relu, linear, abs, leaky:α,
        erf, gelu, gelu_tanh, sin, tanh, softplus, silu, an activation object or an
        elementwise callable).
      w_std, b_std, residual: weight std s_w, bias std s_b ≥ 0 and residual scale β of the
        net (neural-tangents' ``Dense(W_std=s_w, b_std=s_b)``; ``ntkcond.network.mlp``);
        all None (default): the bias-free norm-preserving net. Activations that are not
        homogeneous need ``w_std``.

    Returns:
      (n1, n2) float64 kernel.

    Raises:
      ValueError, TypeError: bad inputs or options (``resolve_mlp``); a kernel outside
        float64's range (``KernelRangeError``).

    Example:
      >>> K = ntkcond.infinite_nngp(x, depth=3, activation="erf", w_std=1.5, b_std=0.1)
    """
    where = "infinite_nngp"
    family = resolve_mlp(activation, w_std, b_std, residual, where=where)
    depth = as_depth(depth, where)
    geometry = _prepare(x1, x2, family, depth, where)
    with _range(where):
        return evaluate_family(family, depth, geometry, ntk=False, overwrite=True,
                               where=where).nngp


def infinite_ntk(x1, x2=None, *, depth: int, activation="relu", trainable="all", w_std=None,
                 b_std=None, residual=None) -> np.ndarray:
    """Infinite-width NTK Θ(x, x'), eq. (2) (or the general net's).

    Θ = ‖x‖‖x'‖/d · G_L · Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} ġ(θ_j) for bias-free homogeneous nets,
    with S the trainable layers. For the default net and all layers trainable, the diagonal is
    (L + 1)‖x‖²/d; linear nets give (L + 1)·XXᵀ/d.

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth: number of hidden layers L ≥ 0 (L = 0: the linear model).
      activation: as in ``infinite_nngp``.
      trainable: "all", "first" (W⁽¹⁾ only, Liu & Hui v1 Thm 5.3 / v2 Thm 4.2), "last" (the
        read-out only: the NNGP), or 0-based layer indices (0 = W⁽¹⁾, L = read-out; with
        biases a layer is its W and b).
      w_std, b_std, residual: as in ``infinite_nngp``.

    Returns:
      (n1, n2) float64 kernel.

    Examples:
      >>> import numpy as np, ntkcond
      >>> x = np.array([[1.0, 0.0], [np.cos(0.1), np.sin(0.1)]])  # two inputs 0.1 rad apart
      >>> ntkcond.infinite_ntk(x, depth=3).round(6)              # the papers' ReLU net
      array([[2.      , 1.898592],
             [1.898592, 2.      ]])
      >>> K = ntkcond.infinite_ntk(x, depth=3, activation="tanh", w_std=1.5, b_std=0.05)
    """
    where = "infinite_ntk"
    family = resolve_mlp(activation, w_std, b_std, residual, where=where)
    depth = as_depth(depth, where)
    layers = _layers(trainable, depth, where)
    geometry = _prepare(x1, x2, family, depth, where)
    with _range(where):
        return evaluate_family(family, depth, geometry, layers, nngp=False, overwrite=True,
                               where=where).ntk


def infinite_ntk_layers(x1, x2=None, *, depth: int, activation="relu", w_std=None, b_std=None,
                        residual=None) -> np.ndarray:
    """Per-layer NTK contributions Θ_i: the NTK with layer i alone trainable.

    ``infinite_ntk(..., trainable=S) == infinite_ntk_layers(...)[list(S)].sum(0)`` (to
    rounding). Arguments as ``infinite_ntk``. It costs L + 1 kernels of depth L: a depth
    whose pairs × (L + 1) × L exceed ``ntkcond._core.checks.MAX_PAIR_LAYERS`` is refused
    (ValueError naming the depth that fits).

    Returns:
      (L + 1, n1, n2) float64; index i is the contribution of W⁽ⁱ⁺¹⁾ (L = read-out).
    """
    where = "infinite_ntk_layers"
    family = resolve_mlp(activation, w_std, b_std, residual, where=where)
    depth = as_depth(depth, where)
    geometry = _prepare(x1, x2, family, depth, where, PAIR_ARRAYS + depth + 1)
    pairs = max(1, int(np.size(geometry.angle)))
    fits = math.isqrt(MAX_PAIR_LAYERS // pairs)  # L + 1 kernels of L layers each
    if depth > fits:
        raise ValueError(f"{where}: expected depth <= {fits} for {pairs} pairs (L + 1 kernels "
                         f"of L layers each: at most {MAX_PAIR_LAYERS:.3g} pair-layers), got "
                         f"depth {depth}")
    out = np.empty((depth + 1,) + geometry.angle.shape)
    with _range(where):
        for i in range(depth + 1):
            out[i] = evaluate_family(family, depth, geometry, frozenset({i}), nngp=False,
                                     where=where).ntk
    return out


def gradient_angles(x1, x2=None, *, depth: int, activation="relu", trainable="all", w_std=None,
                    b_std=None, residual=None) -> np.ndarray:
    """Angles φ between infinite-width model gradients ∇_w f(x), ∇_w f(x'), in radians.

    Computed from the data (``ntkcond.infinite.engine``: 1 − cos φ and 1 + cos φ as sums of
    non-negative terms), so angles keep full relative precision where a kernel matrix cannot
    resolve them: at θ = 1e-6 rad, 1 − cos θ = 5e-13 has only ~4 significant digits in a
    float64 kernel. The input angles are exact for the float64 rows (``geometry``), and the
    angles of bias-free homogeneous nets are scale-invariant (rows of any finite nonzero norm,
    any w_std: the same angles).

    Args:
      x1: (n1, d) inputs; x2: (n2, d), default x1.
      depth, activation, trainable, w_std, b_std, residual: as in ``infinite_ntk``. With
        biases φ depends on the norms too; near-duplicate pairs keep relative precision
        ~eps·max(1, |‖x‖ − ‖x'‖|/(‖x‖θ²)).

    Returns:
      (n1, n2) float64 angles in [0, π]; exact 0 on the diagonal when x2 is None.

    Examples:
      >>> import numpy as np, ntkcond
      >>> x = np.array([[1.0, 0.0], [np.cos(0.1), np.sin(0.1)]])
      >>> float(ntkcond.gradient_angles(x, depth=3)[0, 1].round(6))  # radians: wider than 0.1
      0.319808
    """
    where = "gradient_angles"
    family = resolve_mlp(activation, w_std, b_std, residual, where=where)
    depth = as_depth(depth, where)
    layers = _layers(trainable, depth, where)
    geometry = _prepare(x1, x2, family, depth, where, kernels=False)
    return _gradient_angles(geometry, x2 is None, family, depth, layers, where)


def _gradient_angles(geometry, same, family: MLPFamily, depth, layers, where):
    """``gradient_angles`` on checked arguments."""
    if family.is_linear and family.plain:
        return geometry.angle
    phi = evaluate_family(family, depth, geometry, layers, nngp=False, ntk=False, angles=True,
                          where=where).angles()
    if same:
        np.fill_diagonal(phi, 0.0)
    return phi


def smallest_gradient_angle(x, *, depth: int, activation="relu", trainable="all",
                            method: str = "pairs", w_std=None, b_std=None,
                            residual=None) -> tuple[float, int, int]:
    """Smallest angle between infinite-width model gradients over all pairs of rows of x.

    For bias-free plain nets of a homogeneous activation, φ depends on the input angle θ only
    (whatever w_std); where φ_L has no interior minimum between the data's smallest and
    largest input angles (proved or verified by ``unimodal.certify``), the answer is at the
    closest or the farthest pair, found in GEMM blocks without an n × n matrix
    (``extremes``): ``method="pairs"``, the default. Otherwise, or with
    ``method="recursion"``, φ is computed for every pair (n × n matrix, ``gradient_angles``);
    nets with biases, residual blocks or other activations always take that route.

    Args:
      x: (n, d) inputs, n ≥ 2, no zero rows.
      depth, activation, trainable, w_std, b_std, residual: as in ``infinite_ntk``.
      method: "pairs" (default) or "recursion".

    Returns:
      (angle in radians, i, j) with i < j; ties to the lowest (i, j) in row-major order.

    Examples:
      >>> import numpy as np, ntkcond
      >>> x = np.array([[1.0, 0.0], [np.cos(0.1), np.sin(0.1)], [0.0, 1.0]])
      >>> angle, i, j = ntkcond.smallest_gradient_angle(x, depth=3)
      >>> round(angle, 6), i, j
      (0.319808, 0, 1)
    """
    where = "smallest_gradient_angle"
    x = as_data(x, where, "x")
    if x.shape[0] < 2:
        raise ValueError(f"{where}: expected n >= 2 rows, got shape {x.shape}")
    if method not in ("pairs", "recursion"):
        raise ValueError(f"{where}: expected method 'pairs' or 'recursion', got {method!r}")
    family = resolve_mlp(activation, w_std, b_std, residual, where=where)
    depth = as_depth(depth, where)
    layers = _layers(trainable, depth, where)
    if method == "pairs" and family.homogeneous and family.plain:
        xh, _ = normalised_rows(x, where, "x")
        found = smallest_from_extremes(extreme_pairs(xh, x=x), family.act.angle_activation,
                                       [depth], trainable)[depth]
        if found is not None:
            return found
    geometry = _prepare(x, None, family, depth, where, kernels=False)
    return argmin_upper(_gradient_angles(geometry, True, family, depth, layers, where))


@dataclasses.dataclass(frozen=True)
class DepthKernel:
    """One depth of ``depth_sweep``.

    Attributes:
      depth: L.
      ntk: (n, n) infinite-width NTK, eq. (2).
      angles: (n, n) gradient angles in radians (as ``gradient_angles``).
    """

    depth: int
    ntk: np.ndarray
    angles: np.ndarray


def depth_sweep(x, depths, *, activation="relu", trainable="all", w_std=None, b_std=None,
                residual=None) -> Iterator[DepthKernel]:
    """NTKs and gradient angles of one batch for many depths, in one pass.

    The Gram matrix, the input angles and the layer maps are shared: the cost of all depths
    0…L is that of depth L alone.

    Args:
      x: (n, d) inputs.
      depths: iterable of depths L ≥ 0 (any order; results come in ascending order).
      activation, w_std, b_std, residual: as in ``infinite_ntk``.
      trainable: "all", "first", "last", or 0-based indices (valid for every depth).

    Yields:
      ``DepthKernel`` per depth, ascending.

    Example:
      >>> for item in ntkcond.depth_sweep(x, range(11)):
      ...     print(item.depth, ntkcond.effective_condition_number(item.ntk))
    """
    where = "depth_sweep"
    family = resolve_mlp(activation, w_std, b_std, residual, where=where)
    depths, layers = sweep_layers(depths, trainable, where)  # fails here, not on iteration
    geometry = _prepare(x, None, family, max(depths), where, PAIR_ARRAYS + 2)
    return _sweep(geometry, family, depths, layers, where)


def sweep_geometry(geometry, family: MLPFamily, depths, trainable,
                   where: str = "depth_sweep") -> Iterator[DepthKernel]:
    """``depth_sweep`` of the net ``family`` on a precomputed ``pair_geometry(x, None)``,
    shared across nets (left unchanged).

    The arguments are checked when this is called, not when the first item is drawn; messages
    name ``where``, the public function called (``depth_sweep``, or a caller such as
    ``ntkcond.runs.depth.measure_infinite_batch``).
    """
    if not isinstance(family, MLPFamily):
        raise TypeError(f"{where}: expected the net as an MLPFamily (ntkcond.network."
                        f"resolve_mlp), got {type(family).__name__}")
    depths, layers = sweep_layers(depths, trainable, where)
    check_scale(geometry, where)
    norms = np.ravel(geometry.norms1)
    family.check_variances(norms * norms / geometry.d, max(depths), where)
    return _sweep(geometry, family, depths, layers, where)


def _sweep(geometry, family: MLPFamily, depths, layers, where) -> Iterator[DepthKernel]:
    """The sweep on checked arguments: kernels and angles from one ``engine.sweep``."""
    plain = family.is_linear and family.plain
    with _range(where):
        for L, K, R, Z in sweep(geometry, family, depths, layers, angles=not plain, where=where):
            phi = geometry.angle.copy() if plain else 2.0 * np.arctan2(np.sqrt(R), np.sqrt(Z))
            np.fill_diagonal(phi, 0.0)
            yield DepthKernel(depth=L, ntk=K, angles=phi)


def sweep_images_of(x, family: CNNFamily, depths, trainable="all",
                    where: str = "depth_sweep", *, angles: bool = True) -> Iterator[DepthKernel]:
    """``depth_sweep`` of a convolutional net (``ntkcond.network.CNNFamily``) on NHWC images
    x (n, H, W, C): the NTK and gradient angles at every depth, from one pass of the compiled
    route where it applies (``ntkcond.infinite.engine.sweep_images``). Every layer trained
    (``trainable`` "all" only). ``angles`` False: ``DepthKernel.angles`` None (the NTK's gaps
    not carried: a quarter less work). Arguments are checked when this is called."""
    if not isinstance(family, CNNFamily):
        raise TypeError(f"{where}: expected the net as a CNNFamily (ntkcond.network."
                        f"resolve_cnn), got {type(family).__name__}")
    depths, layers = sweep_layers(depths, trainable, where)
    if layers is not None:
        raise ValueError(f"{where}: convolutional nets train every layer, got trainable "
                         f"{trainable!r}")
    x, _ = image_pair(x, None, where)
    items = sweep_images(x, family, depths, angles=angles, where=where)
    return _image_items(items, angles, where)


def _image_items(items, angles, where):
    with _range(where):
        for L, out in items:
            phi = None
            if angles:
                phi = 2.0 * np.arctan2(np.sqrt(out.R), np.sqrt(out.Z))
                np.fill_diagonal(phi, 0.0)
            yield DepthKernel(depth=L, ntk=out.ntk, angles=phi)
