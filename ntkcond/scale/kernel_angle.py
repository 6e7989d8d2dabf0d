"""The smallest gradient angle over all pairs at finite width, streamed block by block:
``streaming_smallest_kernel_angle``, for a kernel given by per-layer features (H_l, D_l),
K = Σ_l (H_l H_lᵀ) ⊙ (D_l D_lᵀ) (the empirical NTK of a one-output MLP), with memory
O(n·Σm + b²) (``scale.streaming``'s docstring; the infinite-width route is there).
"""
from __future__ import annotations

import math

import numpy as np

from .._core.checks import as_block
from .processes import current_share

__all__ = ["streaming_smallest_kernel_angle"]


def _as_layer_array(value, idx, name, where):
    """features[idx]'s H or D as a finite float64 (n, ·) array; TypeError for non-real data."""
    arr = np.asarray(value)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer)
                                   or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{where}: expected features[{idx}] {name} as a real numeric array, "
                        f"got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim == 2 and not np.all(np.isfinite(arr)):
        row = int(np.argmax(~np.all(np.isfinite(arr), axis=1)))
        raise ValueError(f"{where}: expected finite features, got a non-finite entry in "
                         f"features[{idx}] {name}, row {row}")
    return arr


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
        H = _as_layer_array(H, idx, "H", where)
        D = np.ones((len(H), 1)) if D is None else _as_layer_array(D, idx, "D", where)
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


def _scaled(pairs):
    """(H·2^(−a), D·2^(−b), 2^(2(a + b − c))) per layer, c = max(a + b): the layer terms of K
    all scaled by the same power of two 2^(−2c) (exact), so K's largest entries sit near 1 and
    neither overflow nor underflow whatever the features' scale (angles are scale-invariant)."""
    exps = []
    for H, D in pairs:
        a = int(np.frexp(np.max(np.abs(H), initial=0.0))[1])
        b = int(np.frexp(np.max(np.abs(D), initial=0.0))[1])
        exps.append((a, b))
    c = max(a + b for a, b in exps)
    with np.errstate(under="ignore"):
        return [(np.ldexp(H, -a), np.ldexp(D, -b), math.ldexp(1.0, 2 * (a + b - c)))
                for (H, D), (a, b) in zip(pairs, exps)]


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
      (angle in radians, i, j), i < j; ties to the row-major first pair. The features are
      scaled by powers of two first (exact), so any finite scale gives the same answer.

    Raises:
      TypeError: features not a sequence of (H, D) pairs of real arrays.
      ValueError: shapes that do not match, non-finite entries (naming the layer and row),
        fewer than 2 rows, or a row whose gradient is zero.
    """
    where = "streaming_smallest_kernel_angle"
    pairs, n = _as_features(features, where)
    if n < 2:
        raise ValueError(f"{where}: expected n >= 2 rows to form a pair, got n = {n}")
    block = as_block(block, where, 2)
    pairs = _scaled(pairs)
    diag = sum(w * (np.einsum("ij,ij->i", H, H) * np.einsum("ij,ij->i", D, D)) for H, D, w in pairs)
    if np.any(diag <= 0):
        i = int(np.argmax(diag <= 0))
        raise ValueError(f"{where}: expected nonzero gradients, got K[{i},{i}] = {diag[i]}")
    best = None
    share = current_share()  # across processes: blocks p, p + P, …; the minima gathered
    tiles = [(r0, c0) for r0 in range(0, n, block) for c0 in range(r0, n, block)]
    for r0, c0 in tiles[share.index::share.count]:
        r1, c1 = min(n, r0 + block), min(n, c0 + block)
        K = sum(w * ((H[r0:r1] @ H[c0:c1].T) * (D[r0:r1] @ D[c0:c1].T)) for H, D, w in pairs)
        sin_part = np.sqrt(np.maximum(np.outer(diag[r0:r1], diag[c0:c1]) - K**2, 0.0))
        angle = np.arctan2(sin_part, K)
        angle[~(np.arange(r0, r1)[:, None] < np.arange(c0, c1)[None, :])] = np.inf
        k = int(np.argmin(angle))
        i, j = divmod(k, c1 - c0)
        if math.isfinite(angle.flat[k]):
            cand = (float(angle.flat[k]), r0 + i, c0 + j)
            best = cand if best is None or cand < best else best
    if share.distributed:
        best = min(b for b in share.allgather(best) if b is not None)
    return best
