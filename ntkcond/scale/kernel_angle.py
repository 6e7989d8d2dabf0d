"""The smallest gradient angle over all pairs at finite width, streamed block by block:
``streaming_smallest_kernel_angle``, for a kernel given by per-layer features (H_l, D_l),
K = Σ_l (H_l H_lᵀ) ⊙ (D_l D_lᵀ) (the empirical NTK of a one-output MLP), with memory
O(n·Σm + b²) (``scale.streaming``'s docstring; the infinite-width route is there).
"""
from __future__ import annotations

import math

import numpy as np

from ._pair_sweeps import as_block

__all__ = ["streaming_smallest_kernel_angle"]


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
    block = as_block(block, where)
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
