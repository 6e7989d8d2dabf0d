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
extremes); a later call with the same data and settings continues from there.

At finite width the same streaming applies to a kernel given by per-layer features,
``streaming_smallest_kernel_angle`` (always the recursion over blocks: a finite-width kernel is
not a function of θ₀): for an MLP with one output, the empirical NTK is
Σ_l (H_l H_lᵀ) ⊙ (D_l D_lᵀ), H_l the layer inputs and D_l the back-propagated output
derivatives (n × m_l each), so blocks of the kernel cost O(b²·Σm) and memory O(n·Σm + b²).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import math
import os
import time

import numpy as np

from .._core.checks import as_data
from .._core.io import atomic_write
from ..activations import parse_activation
from ..infinite.extremes import ExtremeSearch, numpy_extreme_row, smallest_from_extremes
from ..infinite.geometry import normalised_rows
from .blocks import INPUT, AnglePlan, merge_candidates, numpy_angle_block

__all__ = [
    "SmallestAngle",
    "StreamingAngles",
    "streaming_smallest_angles",
    "streaming_smallest_kernel_angle",
]

_CHECKPOINT_KIND = "ntkcond.streaming_smallest_angles"
_CHECKPOINT_VERSION = 1
_PAIRS_KIND = "ntkcond.streaming_smallest_angles.pairs"


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


def _as_block(block, where: str) -> int:
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 2:
        raise ValueError(f"{where}: expected an integer block size >= 2, got {block!r}")
    return int(block)


def _row_pairs(n: int, r0: int, r1: int) -> int:
    """Pairs (i, j), i < j < n, with r0 ≤ i < r1."""
    return sum(n - 1 - i for i in range(r0, r1))


def _fingerprint(xh, block, plan: AnglePlan, trainable, dtype) -> dict:
    return {
        "n": int(xh.shape[0]),
        "d": int(xh.shape[1]),
        "block": block,
        "depths": plan.depths,
        "activations": [a.name for a in plan.activations],
        "trainable": trainable if isinstance(trainable, str) else sorted(int(i) for i in trainable),
        "dtype": dtype,
        "data_sha256": hashlib.sha256(np.ascontiguousarray(xh).tobytes()).hexdigest(),
    }


def _key_str(key) -> str:
    return INPUT if key == INPUT else f"{key[0]}/{key[1]}"


def _key_parse(text: str):
    if text == INPUT:
        return INPUT
    name, depth = text.rsplit("/", 1)
    return (name, int(depth))


def _read_state(path, kind, fingerprint, where):
    """The checkpoint's JSON state, or None if ``path`` is None or does not exist."""
    if path is None or not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"{where}: cannot read checkpoint {path} ({err})") from None
    if not isinstance(state, dict):
        raise ValueError(f"{where}: expected checkpoint {path} to hold a JSON object, got "
                         f"{type(state).__name__}; delete it or use --overwrite")
    ok = state.get("kind") == kind and state.get("version") == _CHECKPOINT_VERSION
    if not ok:
        raise ValueError(f"{where}: {path} is not a {kind} checkpoint (version {_CHECKPOINT_VERSION}); "
                         "a checkpoint of the other method? delete it or pass another path")
    if state["fingerprint"] != fingerprint:
        diff = sorted(k for k in fingerprint if state["fingerprint"].get(k) != fingerprint[k])
        raise ValueError(
            f"{where}: checkpoint {path} belongs to another run (differs in {', '.join(diff)}); "
            "delete it or pass another checkpoint path"
        )
    return state


def _load_state(path, fingerprint, kind, where):
    """(next block row, saved search state or None, seconds so far) of a pairs checkpoint."""
    state = _read_state(path, kind, fingerprint, where)
    if state is None:
        return 0, None, 0.0
    return int(state["next_row_block"]), state["search"], float(state.get("seconds", 0.0))


def _save_state(path, fingerprint, kind, next_row_block, search_state, seconds):
    state = {"kind": kind, "version": _CHECKPOINT_VERSION, "fingerprint": fingerprint,
             "next_row_block": next_row_block, "search": search_state, "seconds": seconds}
    atomic_write(path, json.dumps(state, indent=1) + "\n")


def _load_checkpoint(path, fingerprint, where):
    state = _read_state(path, _CHECKPOINT_KIND, fingerprint, where)
    if state is None:
        return 0, {}, 0.0
    best = {_key_parse(k): (float(v[0]), int(v[1]), int(v[2])) for k, v in state["best"].items()}
    return int(state["next_row_block"]), best, float(state.get("seconds", 0.0))


def _save_checkpoint(path, fingerprint, next_row_block, best, seconds):
    state = {
        "kind": _CHECKPOINT_KIND,
        "version": _CHECKPOINT_VERSION,
        "fingerprint": fingerprint,
        "next_row_block": next_row_block,
        "best": {_key_str(k): list(v) for k, v in best.items()},
        "seconds": seconds,
    }
    atomic_write(path, json.dumps(state, indent=1) + "\n")


def _choose_backend(backend: str, where: str) -> str:
    if backend not in ("auto", "numpy", "jax"):
        raise ValueError(f"{where}: expected backend 'auto', 'numpy' or 'jax', got {backend!r}")
    if backend != "auto":
        return backend
    import jax

    return "jax" if jax.default_backend() != "cpu" or jax.device_count() > 1 else "numpy"


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
    depth=L, ...)`` for every L.

    Args:
      x: (n, d) inputs, n ≥ 2, no zero rows.
      depths: iterable of depths L ≥ 0, all computed in one pass.
      activations: activation spellings (``parse_activation``); default ReLU and linear.
      trainable: "all", "first", "last" or 0-based layer indices (valid for every depth).
      block: block size b (default 1024: 8 MB per b × b float64 array).
      backend: "auto", "numpy" or "jax" (module docstring).
      devices: jax backend: None (all devices), a count, or a list of ``jax.Device``.
      dtype: jax backend: "float64" (default) or "float32" (matmuls at highest precision; the
        pairs route screens in float32 with a float32 margin and rechecks in float64);
        the numpy backend is always float64.
      workers: numpy backend, recursion route: threads over the blocks of a block row
        (default: CPU count, ≤ 8); the pairs route's GEMMs use the BLAS threads.
      checkpoint: path of a JSON checkpoint, written atomically after every block row and
        read at the start to resume; None for no checkpoint. Each method has its own format
        (a pairs checkpoint does not depend on depths, activations or trainable); a recursion
        fallback of the pairs route checkpoints to ``checkpoint + ".recursion"``, removed
        when it completes.
      progress: show a tqdm progress bar over pairs.
      max_row_blocks: stop after this many block rows in this call (with ``checkpoint``, to
        split a long run; the result then covers only the rows done so far).
      method: "pairs" (default) or "recursion".

    Returns:
      ``StreamingAngles`` (angles in radians).

    Raises:
      TypeError, ValueError: bad data (not (n, d), n < 2, zero row, NaN), bad depths,
        activations, block, backend, dtype or method, or a checkpoint from another run.
    """
    where = "streaming_smallest_angles"
    x = as_data(x, where, "x")
    n, d = x.shape
    if n < 2:
        raise ValueError(f"{where}: expected n >= 2 rows to form a pair, got shape {x.shape}")
    if method not in ("pairs", "recursion"):
        raise ValueError(f"{where}: expected method 'pairs' or 'recursion', got {method!r}")
    block = _as_block(block, where)
    plan = AnglePlan(depths, activations, trainable, where)
    backend = _choose_backend(backend, where)
    if dtype not in ("float64", "float32"):
        raise ValueError(f"{where}: expected dtype 'float64' or 'float32', got {dtype!r}")
    if backend == "numpy" and dtype != "float64":
        raise ValueError(f"{where}: the numpy backend computes in float64; got dtype {dtype!r}")
    xh, _ = normalised_rows(x, where, "x")  # x stays: pairs near 0 or π are exact from it
    options = dict(block=block, backend=backend, devices=devices, dtype=dtype, progress=progress,
                   max_row_blocks=max_row_blocks, where=where)
    if method == "recursion":
        best, n_devices, seconds, start_row = _recursion_route(
            xh, plan, trainable, workers=workers, checkpoint=checkpoint, x=x, **options)
        fallback = ()
    else:
        ext, n_devices, seconds, start_row = _pairs_route(xh, checkpoint=checkpoint, x=x, **options)
        best, fallback = {INPUT: ext.closest}, []
        for act in plan.nonlinear:
            found = smallest_from_extremes(ext, act, plan.depths, trainable)
            for L, item in found.items():
                if item is None:
                    fallback.append((act.name, L))
                else:
                    best[(act.name, L)] = item
        if fallback:
            best.update(_fallback(xh, x, plan, fallback, trainable, workers, checkpoint, options))
        fallback = tuple(fallback)
    input_angle, i0, j0 = best[INPUT]
    results = []
    for act in plan.activations:
        for L in plan.depths:
            value, i, j = best[INPUT] if act.is_linear else best[(act.name, L)]
            results.append(SmallestAngle(act.name, L, value, (i, j)))
    return StreamingAngles(
        n=n, d=d, pairs=n * (n - 1) // 2, block=block, trainable=trainable,
        input_angle=input_angle, input_pair=(i0, j0), results=tuple(results),
        backend=backend, devices=n_devices, dtype=dtype, seconds=seconds,
        resumed_from_row_block=start_row, method=method, fallback=fallback,
    )


def _fallback(xh, x, plan, targets, trainable, workers, checkpoint, options):
    """The recursion over all pairs for the (activation, depth) targets not certified."""
    names = list(dict.fromkeys(name for name, _ in targets))
    sub = AnglePlan(sorted({L for _, L in targets}), names, trainable, options["where"])
    path = None if checkpoint is None else checkpoint + ".recursion"
    best, _, _, _ = _recursion_route(xh, sub, trainable, workers=workers, checkpoint=path, x=x,
                                     **options)
    if path is not None and os.path.exists(path):
        os.unlink(path)
    return {key: best[key] for key in targets}


def _bar(n, done, progress, where):
    from tqdm.auto import tqdm

    return tqdm(total=n * (n - 1) // 2, initial=done, unit="pair", unit_scale=True,
                desc=where, disable=not progress)


def _pairs_route(xh, *, block, backend, devices, dtype, checkpoint, progress, max_row_blocks, where,
                 x=None):
    """One sweep of screened-cosine blocks: (ExtremePairs, devices, seconds, start row)."""
    n = xh.shape[0]
    search = ExtremeSearch(xh, dtype=dtype, x=x)
    fingerprint = None if checkpoint is None else {
        "method": "pairs", "n": int(n), "d": int(xh.shape[1]), "block": block, "dtype": dtype,
        "data_sha256": hashlib.sha256(np.ascontiguousarray(xh).tobytes()).hexdigest()}
    start_row, state, seconds_before = _load_state(checkpoint, fingerprint, _PAIRS_KIND, where)
    if state is not None:
        search.restore(state)
    if backend == "numpy":
        def row(I):
            numpy_extreme_row(search, I, block)

        n_devices = 1
    else:
        from .sharded import ShardedExtremeBlocks

        engine = ShardedExtremeBlocks(xh, block, search, devices=devices, dtype=dtype, where=where)
        row, n_devices = engine.row, engine.n_devices
    n_rows = -(-n // block)
    bar = _bar(n, _row_pairs(n, 0, min(n, start_row * block)), progress, where)
    t0 = time.perf_counter()
    stop = n_rows if max_row_blocks is None else min(n_rows, start_row + max_row_blocks)
    try:
        for I in range(start_row, stop):
            row(I)
            search.flush()
            if checkpoint is not None:
                _save_state(checkpoint, fingerprint, _PAIRS_KIND, I + 1, search.state(),
                            seconds_before + time.perf_counter() - t0)
            bar.update(_row_pairs(n, I * block, min(n, (I + 1) * block)))
    finally:
        bar.close()
    if search.close[1] < 0:  # only possible when max_row_blocks stopped before any pair
        raise ValueError(f"{where}: max_row_blocks = {max_row_blocks} covered no pair")
    ext = search.result()
    return ext, n_devices, seconds_before + time.perf_counter() - t0, start_row


def _recursion_route(xh, plan, trainable, *, block, backend, devices, dtype, workers, checkpoint,
                     progress, max_row_blocks, where, x=None):
    """The recursion over all pairs: ({target: (value, i, j)}, devices, seconds, start row)."""
    n = xh.shape[0]
    fingerprint = None if checkpoint is None else _fingerprint(xh, block, plan, trainable, dtype)
    start_row, best, seconds_before = _load_checkpoint(checkpoint, fingerprint, where)
    n_rows = -(-n // block)

    if backend == "numpy":
        workers = workers or min(8, os.cpu_count() or 1)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers) if workers > 1 else None

        def row(I):
            r0, r1 = I * block, min(n, (I + 1) * block)
            spans = [(J * block, min(n, (J + 1) * block)) for J in range(I, n_rows)]
            args = [(xh, r0, r1, c0, c1, plan, x) for c0, c1 in spans]
            if pool is None:
                return [numpy_angle_block(*a) for a in args]
            return list(pool.map(lambda a: numpy_angle_block(*a), args))

        n_devices = 1
    else:
        from .sharded import ShardedAngleBlocks

        engine = ShardedAngleBlocks(xh, block, plan, devices=devices, dtype=dtype, where=where, x=x)
        row, n_devices, pool = engine.row, engine.n_devices, None

    bar = _bar(n, _row_pairs(n, 0, min(n, start_row * block)), progress, where)
    t0 = time.perf_counter()
    stop = n_rows if max_row_blocks is None else min(n_rows, start_row + max_row_blocks)
    try:
        for I in range(start_row, stop):
            for cand in row(I):
                merge_candidates(best, cand)
            if checkpoint is not None:
                _save_checkpoint(checkpoint, fingerprint, I + 1, best,
                                 seconds_before + time.perf_counter() - t0)
            bar.update(_row_pairs(n, I * block, min(n, (I + 1) * block)))
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown()
    if INPUT not in best:  # only possible when max_row_blocks stopped before any pair
        raise ValueError(f"{where}: max_row_blocks = {max_row_blocks} covered no pair")
    return best, n_devices, seconds_before + time.perf_counter() - t0, start_row


def _as_features(features, where):
    pairs = []
    try:
        items = list(features)
    except TypeError:
        raise TypeError(f"{where}: expected a sequence of (H, D) array pairs, got {type(features).__name__}") from None
    for idx, item in enumerate(items):
        try:
            H, D = item
        except (TypeError, ValueError):
            raise TypeError(f"{where}: expected features[{idx}] as an (H, D) pair of arrays") from None
        H = np.asarray(H, dtype=np.float64)
        D = np.ones((len(H), 1)) if D is None else np.asarray(D, dtype=np.float64)
        if H.ndim != 2 or D.ndim != 2 or len(H) != len(D):
            raise ValueError(
                f"{where}: expected features[{idx}] = (H, D) of shapes (n, m) and (n, k), "
                f"got {H.shape} and {D.shape}"
            )
        pairs.append((H, D))
    if not pairs:
        raise ValueError(f"{where}: expected at least one layer of features, got none")
    n = len(pairs[0][0])
    if any(len(H) != n for H, _ in pairs):
        raise ValueError(f"{where}: expected the same n rows in every layer's features")
    return pairs, n


def streaming_smallest_kernel_angle(features, *, block: int = 1024) -> tuple[float, int, int]:
    """Smallest angle between model gradients for a kernel given by per-layer features.

    K = Σ_l (H_l H_lᵀ) ⊙ (D_l D_lᵀ): for a one-output MLP, ∂f/∂W_l = D_l[i] ⊗ H_l[i], so
    ⟨∇f(x_i), ∇f(x_j)⟩ = Σ_l ⟨H_l[i], H_l[j]⟩⟨D_l[i], D_l[j]⟩ (finite width, empirical NTK).
    Streams b × b blocks of K and reads angles off them with ``spectrum`` eq. (2),
    atan2(√(K_ii K_jj − K_ij²), K_ij); as for any kernel, angles below ~1e-8 rad are not
    resolved (use the infinite-width ``streaming_smallest_angles`` for those).

    Args:
      features: sequence of (H_l, D_l) pairs of (n, m_l) and (n, k_l) arrays; D_l = None
        stands for ones (the read-out, whose output derivative is 1). These are the
        (inputs, grads) lists of the empirical-NTK feature map of issue 3, layer by layer.
      block: block size b.

    Returns:
      (angle in radians, i, j), i < j; ties to the row-major first pair.
    """
    where = "streaming_smallest_kernel_angle"
    pairs, n = _as_features(features, where)
    if n < 2:
        raise ValueError(f"{where}: expected n >= 2 rows to form a pair, got n = {n}")
    block = _as_block(block, where)
    diag = sum(np.einsum("ij,ij->i", H, H) * np.einsum("ij,ij->i", D, D) for H, D in pairs)
    if np.any(diag <= 0):
        i = int(np.argmax(diag <= 0))
        raise ValueError(f"{where}: expected nonzero gradients, got K[{i},{i}] = {diag[i]}")
    best = None
    for r0 in range(0, n, block):
        r1 = min(n, r0 + block)
        for c0 in range(r0, n, block):
            c1 = min(n, c0 + block)
            K = sum((H[r0:r1] @ H[c0:c1].T) * (D[r0:r1] @ D[c0:c1].T) for H, D in pairs)
            sin_part = np.sqrt(np.maximum(np.outer(diag[r0:r1], diag[c0:c1]) - K**2, 0.0))
            angle = np.arctan2(sin_part, K)
            angle[~(np.arange(r0, r1)[:, None] < np.arange(c0, c1)[None, :])] = np.inf
            k = int(np.argmin(angle))
            i, j = divmod(k, c1 - c0)
            if math.isfinite(angle.flat[k]):
                cand = (float(angle.flat[k]), r0 + i, c0 + j)
                best = cand if best is None or cand < best else best
    return best
