"""The smallest gradient angle over all pairs of a data set, streamed block by block.

For n inputs there are n(n − 1)/2 pairs: 5·10⁷ for the MNIST test set, 1.8·10⁹ for MNIST
train. At infinite width the gradient angle of a pair at depth L depends on the input angle θ₀
only (``angles`` eq. (4)):

    φ_L = 2 atan2(√R_L, √Z_L),   R_L = Σ_{i∈S} (1 − cos θ_i Π ġ),   Z_L = Σ_{i∈S} (1 + cos θ_i Π ġ),

so no n × n matrix is needed. Two methods:

``"pairs"`` (default): φ_L has no interior minimum in θ₀ (proved, or verified by interval
arithmetic, per activation, depth and trainable set: ``ntkcond.infinite.unimodal``), so the
smallest φ_L over all pairs is at the closest or the farthest pair in angle, for all targets at
once. One sweep of b × b GEMM blocks of the unit rows' upper triangle keeps the running
max/min cosine and the pairs within a rigorous rounding margin of them, which are rechecked
exactly (``ntkcond.infinite.extremes``); then the recursion runs on two angles. The cost is
that of one Gram matrix, whatever the number of depths. Targets whose certificate does not
cover the data fall back to the recursion (``StreamingAngles.fallback``).

``"recursion"``: the pairs (i < j) are visited in b × b blocks of the upper triangle: Gram
block of the unit rows → θ₀ (within 0.1 rad of 0 or π exactly from the original rows,
as ``ntkcond.infinite``: ``geometry.exact_angles``) → one pass of the angle-native recursion for every depth at once →
per depth, the block minimum of tan²(φ/2) = R/Z, which is increasing in φ, so φ itself is
evaluated only at the minimiser. The running minimum and its pair are kept in float64.
The reference; 18–25 times the pairs route's time on the MNIST test set, depths 0–10
(``benchmarks/results/min_angle_mnist10k.md``).

Memory is O(b² + n·d) whatever n is. Linear nets have φ = θ₀ at every depth and for every
trainable set, so their answer is the smallest input angle.

Ties go to the pair (i, j) first in row-major order, as ``smallest_gradient_angle``; pairs whose
angles agree to the last bits but not exactly may still come out differently between the
methods, because Gram-route angles (recursion method, away from 0 and π) and Kahan's formula
(pairs method) can differ in the last bits.

Backends: ``"numpy"`` (recursion: ``workers`` threads over the blocks of a block row, numpy
releases the GIL; pairs: BLAS threads in each GEMM); ``"jax"`` runs the blocks under
``jax.jit`` with the blocks of a block row sharded over all JAX devices (``sharded``).
``"auto"`` takes ``"jax"`` when there is an accelerator or more than one device, else
``"numpy"`` (faster than XLA for float64 transcendental functions on CPU).

Interrupted runs resume: with ``checkpoint=path``, the state after every finished block row is
written atomically as JSON (data fingerprint, next block row, running minima or running
extremes); a later call with the same data and settings continues from there. The block-row
sweeps of both methods and their checkpoints are in ``scale._pair_sweeps``.

At finite width the same streaming applies to a kernel given by per-layer features,
``streaming_smallest_kernel_angle`` (``scale.kernel_angle``, re-exported here; always the
recursion over blocks: a finite-width kernel is not a function of θ₀): for an MLP with one
output, the empirical NTK is Σ_l (H_l H_lᵀ) ⊙ (D_l D_lᵀ), H_l the layer inputs and D_l the
back-propagated output derivatives (n × m_l each), so blocks of the kernel cost O(b²·Σm) and
memory O(n·Σm + b²).
"""
from __future__ import annotations

import dataclasses
import math

import numbers
import os

from .._core.checks import as_block, as_count, as_data
from ..activations import parse_activation
from ..network import resolve_mlps
from ..infinite.extremes import smallest_from_extremes
from ..infinite.geometry import normalised_rows
from ._pair_sweeps import pairs_route, recursion_fallback, recursion_route
from .blocks import INPUT, AnglePlan
from .kernel_angle import streaming_smallest_kernel_angle

__all__ = [
    "SmallestAngle",
    "StreamingAngles",
    "streaming_smallest_angles",
    "streaming_smallest_kernel_angle",
]


@dataclasses.dataclass(frozen=True)
class SmallestAngle:
    """The smallest gradient angle of one (activation, depth) over all pairs.

    Attributes:
      activation: activation name ("relu", "linear", "leaky_relu(0.1)", ...).
      depth: number of hidden layers L.
      angle: the smallest angle φ in radians.
      pair: (i, j), i < j, row indices of the pair attaining it.
    """

    activation: str
    depth: int
    angle: float
    pair: tuple[int, int]

    @property
    def degrees(self) -> float:
        return math.degrees(self.angle)


@dataclasses.dataclass(frozen=True)
class StreamingAngles:
    """Result of ``streaming_smallest_angles``.

    Attributes:
      n, d: number and dimension of the inputs.
      pairs: n(n − 1)/2, the number of pairs examined.
      block: block size b.
      trainable: the trainable layers setting.
      input_angle: smallest angle between two inputs θ₀, radians; input_pair its pair.
      results: one ``SmallestAngle`` per (activation, depth), activations in the order given,
        depths ascending.
      backend: "numpy" or "jax"; devices: number of devices (1 for numpy); dtype of the blocks.
      seconds: wall time of the computation (summed over resumed runs).
      resumed_from_row_block: the block row a checkpoint let the run start at (0 if none).
      method: "pairs" or "recursion" (``streaming_smallest_angles``).
      fallback: the (activation, depth) targets the pairs route left to the recursion
        (not certified for these data); empty for the recursion route.
    """

    n: int
    d: int
    pairs: int
    block: int
    trainable: object
    input_angle: float
    input_pair: tuple[int, int]
    results: tuple[SmallestAngle, ...]
    backend: str
    devices: int
    dtype: str
    seconds: float
    resumed_from_row_block: int = 0
    method: str = "recursion"
    fallback: tuple = ()

    def get(self, activation, depth: int) -> SmallestAngle:
        """The ``SmallestAngle`` of one activation (any accepted spelling) and depth."""
        name = parse_activation(activation).name
        for r in self.results:
            if r.activation == name and r.depth == int(depth):
                return r
        raise KeyError(f"StreamingAngles.get: no result for activation {name!r}, depth {depth}")


def _choose_backend(backend: str, where: str) -> str:
    if backend not in ("auto", "numpy", "jax"):
        raise ValueError(f"{where}: expected backend 'auto', 'numpy' or 'jax', got {backend!r}")
    if backend != "auto":
        return backend
    import jax

    # this process's devices: across processes (``scale.processes``) each sweeps its own blocks
    return "jax" if jax.default_backend() != "cpu" or jax.local_device_count() > 1 else "numpy"


def _check_options(workers, max_row_blocks, devices, progress, checkpoint, where):
    """The counts and flags of ``streaming_smallest_angles``: workers and max_row_blocks
    integers ≥ 1 or None, devices None, a count ≥ 1 or a sequence of devices, progress a bool,
    checkpoint a path (str or os.PathLike) or None."""
    if workers is not None:
        workers = as_count(workers, "workers", where, 1)
    if max_row_blocks is not None:
        max_row_blocks = as_count(max_row_blocks, "max_row_blocks", where, 1)
    if isinstance(devices, numbers.Number):
        devices = as_count(devices, "devices", where, 1)
    elif devices is not None and isinstance(devices, (str, bytes)):
        raise TypeError(f"{where}: expected devices as None, a count >= 1 or a list of jax "
                        f"devices, got {devices!r}")
    if not isinstance(progress, bool):
        raise TypeError(f"{where}: expected progress as a bool, got {type(progress).__name__} "
                        f"{progress!r}")
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"{where}: expected checkpoint as a path (str) or None, got "
                        f"{type(checkpoint).__name__} {checkpoint!r}")
    if checkpoint is not None and not os.fspath(checkpoint):
        raise ValueError(f"{where}: expected checkpoint as a nonempty path or None, got ''")
    return workers, max_row_blocks, devices


def streaming_smallest_angles(
    x,
    *,
    depths,
    activations=("relu", "linear"),
    trainable="all",
    block: int = 1024,
    backend: str = "auto",
    devices=None,
    dtype: str = "float64",
    workers: int | None = None,
    checkpoint: str | None = None,
    progress: bool = False,
    max_row_blocks: int | None = None,
    method: str = "pairs",
    w_std=None,
    b_std=None,
    residual=None,
) -> StreamingAngles:
    """Smallest infinite-width gradient angle over all pairs of rows of x, per activation and depth.

    ``method="pairs"`` (default): one sweep of GEMM blocks finds the closest and the farthest
    pair in angle (``ntkcond.infinite.extremes``), and every (activation, depth) takes the
    smaller φ of those two pairs wherever ``ntkcond.infinite.unimodal`` proves or verifies that
    φ_L has no interior minimum over the data's input angles; the targets it does not cover
    (none for ReLU, leaky ReLU and linear nets, trainable "all"/"first"/"last", depths ≤ 1000)
    go through the recursion over all pairs. ``method="recursion"``: the recursion over all
    pairs for every target (module docstring), the reference.
    Either way memory is O(b² + n·d) and the result equals ``smallest_gradient_angle(x,
    depth=L, ...)`` for every L. With ``w_std``/``b_std``/``residual`` (the general nets of
    ``ntkcond.network.mlp``) bias-free nets of homogeneous activations take the same route
    (their angles do not depend on w_std); nets with biases, residual blocks or other
    activations (numpy backend) have no certificate (biases make the input norms matter):
    those targets always go through the recursion, and ``fallback`` lists them (their names
    carry the net, e.g. ``erf,w_std=1.5,b_std=0.1``).

    Args:
      x: (n, d) inputs, n ≥ 2, no zero rows; or NHWC images (n, H, W, C) for convolutional
        nets.
      depths: iterable of depths L ≥ 0, all computed in one pass.
      activations: activation spellings (``parse_activation``), each once; one str (e.g.
        "relu") is one activation; default ReLU and linear; or the nets themselves
        (``ntkcond.network.MLPFamily``, without w_std/b_std/residual then; or
        ``CNNFamily``: convolutional nets on the images x, every layer trained, by the
        recursion over all pairs of images, block by block with the image kernels'
        angle terms (``blocks.ImageAnglePlan``; numpy, float64; every target in
        ``fallback``, ``method`` "recursion"), checkpoints as the recursion's).
      trainable: "all", "first", "last" or 0-based layer indices (valid for every depth).
      block: block size b (default 1024: 8 MB per b × b float64 array).
      backend: "auto", "numpy" or "jax" (module docstring).
      devices: jax backend: None (all devices), a count, or a list of ``jax.Device``.
      dtype: jax backend: "float64" (default) or "float32" (matmuls at highest precision; the
        pairs route screens in float32 with a float32 margin and rechecks in float64);
        the numpy backend is always float64.
      workers: numpy backend, recursion route: threads over the blocks of a block row
        (default: CPU count, ≤ 8); the pairs route's GEMMs use the BLAS threads.
        Convolutional nets: None only (their image kernels run on numba's threads).
      checkpoint: path of a JSON checkpoint, written atomically after every block row and
        read at the start to resume; None for no checkpoint. Each method has its own format
        (a pairs checkpoint does not depend on depths, activations or trainable); a recursion
        fallback of the pairs route checkpoints to ``checkpoint + ".recursion"``, removed
        when it completes.
      progress: show progress over pairs on stderr (``ntkcond._core.progress``).
      max_row_blocks: stop after this many block rows in this call (with ``checkpoint``, to
        split a long run; the result then covers only the rows done so far).
      method: "pairs" (default) or "recursion".
      w_std, b_std, residual: the general net of ``infinite_ntk`` for every activation.

    Returns:
      ``StreamingAngles`` (angles in radians).

    Raises:
      TypeError, ValueError: bad data (not (n, d), n < 2, zero row, NaN), bad depths,
        activations, block, backend, dtype or method, or a checkpoint from another run.

    Examples:
      >>> import numpy as np, ntkcond
      >>> x = np.random.default_rng(0).standard_normal((64, 16))
      >>> res = ntkcond.streaming_smallest_angles(x, depths=[0, 3], activations=["relu"])
      >>> [(r.depth, r.pair, round(r.degrees, 2)) for r in res.results]
      [(0, (13, 25), 40.52), (3, (13, 25), 53.14)]
    """
    where = "streaming_smallest_angles"
    if method not in ("pairs", "recursion"):
        raise ValueError(f"{where}: expected method 'pairs' or 'recursion', got {method!r}")
    block = as_block(block, where, 2)
    nets = resolve_mlps(activations, w_std, b_std, residual, where=where)  # one str: one net
    workers, max_row_blocks, devices = _check_options(workers, max_row_blocks, devices, progress,
                                                      checkpoint, where)
    if any(net.takes_images for net in nets):
        return _image_angles(x, nets, depths, trainable, block, backend, dtype, workers,
                             checkpoint, progress, max_row_blocks, where)
    x = as_data(x, where, "x")
    n, d = x.shape
    if n < 2:
        raise ValueError(f"{where}: expected n >= 2 rows to form a pair, got shape {x.shape}")
    plan = AnglePlan(depths, nets, trainable, where)
    if not all(net.angle_chain for net in plan.nets):
        if backend == "jax":
            raise ValueError(f"{where}: nets with biases, residual blocks or activations outside "
                             "the leaky family run on backend 'numpy' only, got backend 'jax'")
        backend = "numpy"
    backend = _choose_backend(backend, where)
    if dtype not in ("float64", "float32"):
        raise ValueError(f"{where}: expected dtype 'float64' or 'float32', got {dtype!r}")
    if backend == "numpy" and dtype != "float64":
        raise ValueError(f"{where}: the numpy backend computes in float64; got dtype {dtype!r}")
    xh, norms = normalised_rows(x, where, "x")  # x stays: pairs near 0 or π are exact from it
    if plan.needs_norms:
        plan.norms, plan.d = norms, d
    for net in plan.nonlinear:
        net.check_variances(norms * norms / d, max(plan.depths), where)
    options = dict(block=block, backend=backend, devices=devices, dtype=dtype, progress=progress,
                   max_row_blocks=max_row_blocks, where=where)
    if method == "recursion":
        best, n_devices, seconds, start_row = recursion_route(
            xh, plan, trainable, workers=workers, checkpoint=checkpoint, x=x, **options)
        fallback = ()
    else:
        ext, n_devices, seconds, start_row = pairs_route(xh, checkpoint=checkpoint, x=x, **options)
        best, fallback = {INPUT: ext.closest}, []
        for net in plan.nonlinear:
            if not net.angle_chain:  # no certificate: the recursion, said in fallback
                fallback.extend((net.name, L) for L in plan.depths)
                continue
            found = smallest_from_extremes(ext, net.act.angle_activation, plan.depths, trainable)
            for L, item in found.items():
                if item is None:
                    fallback.append((net.name, L))
                else:
                    best[(net.name, L)] = item
        if fallback:
            best.update(recursion_fallback(xh, x, plan, fallback, trainable, workers, checkpoint,
                                           options))
        fallback = tuple(fallback)
    return _result(best, plan, n, d, block, trainable, backend, n_devices, dtype, seconds,
                   start_row, method, fallback)


def _result(best, plan, n, d, block, trainable, backend, n_devices, dtype, seconds, start_row,
            method, fallback) -> StreamingAngles:
    """The ``StreamingAngles`` of the minima ``best`` of every target of ``plan``."""
    input_angle, i0, j0 = best[INPUT]
    results = []
    for net in plan.nets:
        for L in plan.depths:
            value, i, j = best[INPUT] if net not in plan.nonlinear else best[(net.name, L)]
            results.append(SmallestAngle(net.name, L, value, (i, j)))
    return StreamingAngles(
        n=n, d=d, pairs=n * (n - 1) // 2, block=block, trainable=trainable,
        input_angle=input_angle, input_pair=(i0, j0), results=tuple(results),
        backend=backend, devices=n_devices, dtype=dtype, seconds=seconds,
        resumed_from_row_block=start_row, method=method, fallback=fallback,
    )


def _image_angles(x, nets, depths, trainable, block, backend, dtype, workers, checkpoint,
                  progress, max_row_blocks, where) -> StreamingAngles:
    """``streaming_smallest_angles`` of convolutional nets (``CNNFamily``) on NHWC images x:
    the block recursion over all pairs (``blocks.ImageAnglePlan``: the image kernels' angle
    terms per block, every depth in one pass), numpy, float64, one block at a time (the image
    kernels run on numba's threads: ``workers`` refused); ``fallback`` lists every target (no certificate: the
    angles are not a function of the input angle) and ``method`` is "recursion"."""
    from ..infinite.images import image_pair
    from .blocks import ImageAnglePlan

    if not all(net.takes_images for net in nets):
        raise ValueError(f"{where}: expected every net convolutional (CNNFamily) or none, got "
                         f"{[net.name for net in nets]}")
    if backend not in ("auto", "numpy"):
        raise ValueError(f"{where}: convolutional nets run on backend 'numpy' only, got backend "
                         f"{backend!r}")
    if dtype != "float64":
        raise ValueError(f"{where}: convolutional nets are computed in float64, got dtype "
                         f"{dtype!r}")
    if workers is not None:
        raise ValueError(f"{where}: convolutional nets run one block at a time on numba's "
                         f"threads (NUMBA_NUM_THREADS), got workers {workers!r}")
    images, _ = image_pair(x, None, where)
    n = images.shape[0]
    if n < 2:
        raise ValueError(f"{where}: expected n >= 2 images to form a pair, got shape "
                         f"{images.shape}")
    flat = images.reshape(n, -1)
    xh, _ = normalised_rows(flat, where, "x")
    plan = ImageAnglePlan(depths, nets, trainable, images, where)
    best, n_devices, seconds, start_row = recursion_route(
        xh, plan, trainable, block=block, backend="numpy", devices=None, dtype="float64",
        workers=1, checkpoint=checkpoint, progress=progress, max_row_blocks=max_row_blocks,
        where=where, x=flat)
    fallback = tuple((net.name, L) for net in plan.nets for L in plan.depths)
    return _result(best, plan, n, flat.shape[1], block, trainable, "numpy", n_devices,
                   "float64", seconds, start_row, "recursion", fallback)
