"""The input state of image pairs for convolutional nets (NHWC): per-pixel (diagonal mode) or
per-pixel-pair (full mode) covariances x[p]·x′[p′]/C, with their Euclidean gaps
½‖x[p] − x′[p′]‖²/C exact for the float64 data (``ntkcond.network.spatial``).

The gaps: ½(q[p] + q′[p′]) − c[p, p′] from the Gram products where that is at least
``REFINE_BELOW`` of ½(q + q′), else recomputed from the pixels themselves as a sum of squares
(near-duplicate pixels: the cancelling difference is never formed from rounded products).
"""
from __future__ import annotations

import numpy as np

from .._core.checks import as_images
from .._core.memory import check_memory
from ..network import PairState, SpatialState

__all__ = ["image_pair", "diagonal_state", "full_state", "REFINE_BELOW", "STATE_ARRAYS"]

#: Gaps below this fraction of ½(q + q′) are recomputed from the pixels (module docstring).
REFINE_BELOW = 1e-3

#: float64 arrays of the pair shape alive at once in a layer map of the full mode (the state's
#: c, D, C, G, the dual's terms and temporaries): used to refuse, before allocating, what
#: cannot fit.
STATE_ARRAYS = 16


def image_pair(x1, x2, where: str):
    """(x1, x2 or None) as float64 NHWC arrays, checked: 4-D, finite, the same (H, W, C)."""
    x1 = as_images(x1, where, "x1")
    if x2 is None:
        return x1, None
    x2 = as_images(x2, where, "x2")
    if x2.shape[1:] != x1.shape[1:]:
        raise ValueError(f"{where}: expected x2 of shape (n2, {', '.join(map(str, x1.shape[1:]))}) "
                         f"like x1, got {x2.shape}")
    return x1, x2


def diagonal_state(x1, x2, *, angles: bool, gaps: bool = True) -> PairState:
    """Diagonal mode: c[i, j, h, w] = x1[i, h, w]·x2[j, h, w]/C, q the per-pixel variances,
    D the exact per-pixel gaps; the NTK zero."""
    C = x1.shape[-1]
    y = x1 if x2 is None else x2
    q1 = np.einsum("ihwc,ihwc->ihw", x1, x1) / C
    q2 = q1 if x2 is None else np.einsum("ihwc,ihwc->ihw", y, y) / C
    c = np.einsum("ihwc,jhwc->ijhw", x1, y) / C
    mean = 0.5 * (q1[:, None] + q2[None, :])
    D = mean - c
    small = np.nonzero(D < REFINE_BELOW * mean)
    if small[0].size:  # ½‖x[p] − x′[p]‖²/C from the pixels
        i, j, h, w = small
        diff = x1[i, h, w] - y[j, h, w]
        D[small] = 0.5 * np.einsum("kc,kc->k", diff, diff) / C
    D = np.maximum(D, 0.0)
    if x2 is None:  # exactly symmetric, exactly 0 on the diagonal pairs
        D = 0.5 * (D + D.transpose(1, 0, 2, 3))
        c = 0.5 * (c + c.transpose(1, 0, 2, 3))
        idx = np.arange(x1.shape[0])
        D[idx, idx] = 0.0
        c[idx, idx] = q1
    n1, n2 = x1.shape[0], y.shape[0]
    hw = x1.shape[1:3]
    z_row, z_col, z_pair = np.zeros((n1, 1) + hw), np.zeros((1, n2) + hw), np.zeros((n1, n2) + hw)
    return PairState(q1[:, None], q2[None, :], c, D, z_row, z_col, z_pair,
                     z_pair.copy() if angles else None, exact_gaps=gaps or angles)


def _self_state(x, angles: bool) -> PairState:
    """The pixel-pair self-covariances of each image: (n, H, W, H, W)."""
    n, h, w, C = x.shape
    flat = x.reshape(n, h * w, C)
    c = np.einsum("iac,ibc->iab", flat, flat) / C
    q = np.einsum("iac,iac->ia", flat, flat) / C
    D = _pixel_gaps(flat, flat, q[:, :, None], q[:, None, :], c, C, pairs=None)
    idx = np.arange(h * w)
    c[:, idx, idx] = q  # the diagonal exactly the variances, the gaps exactly 0 there
    D[:, idx, idx] = 0.0
    shape = (n, h, w, h, w)
    qr, qc = q.reshape(n, h, w)[:, :, :, None, None], q.reshape(n, h, w)[:, None, None, :, :]
    zr, zc, zp = np.zeros(qr.shape), np.zeros(qc.shape), np.zeros(shape)
    return PairState(qr, qc, c.reshape(shape), D.reshape(shape), zr, zc, zp,
                     zp.copy() if angles else None)


def _pixel_gaps(a, b, qa, qb, c, C, pairs):
    """½‖a[p] − b[p′]‖²/C for flattened pixels a (i, P, C), b (j, P, C) (``pairs``: the
    pair-list's (i, j) rows, else a's own pixel pairs), refined where small."""
    mean = 0.5 * (qa + qb)
    D = mean - c
    small = np.nonzero(D < REFINE_BELOW * mean)
    if small[0].size:
        if pairs is None:  # self pairs: (n, P, P)
            i, p, r = small
            diff = a[i, p] - a[i, r]
        else:
            i, j, p, r = small
            diff = a[i, p] - b[j, r]
        D[small] = 0.5 * np.einsum("kc,kc->k", diff, diff) / C
    return np.maximum(D, 0.0)


def full_state(x1, x2, *, angles: bool, where: str, memory_limit=None) -> SpatialState:
    """Full mode: c[i, j, p, p′] = x1[i, p]·x2[j, p′]/C over all pixel pairs, the exact gaps,
    and each image's self-covariances; ``InsufficientMemoryError`` (naming the way out) when
    the state would not fit."""
    n1, h, w, C = x1.shape
    y = x1 if x2 is None else x2
    n2 = y.shape[0]
    P = h * w
    selves = n1 + (0 if x2 is None else n2)
    check_memory(8 * STATE_ARRAYS * (n1 * n2 + selves) * P * P,
                 f"the pixel-pair kernel state of {n1} x {n2} images of {h} x {w} pixels "
                 f"({STATE_ARRAYS} float64 arrays of {n1 * n2 + selves} x {P}² entries)",
                 memory_limit, where,
                 alternative="use fewer images per call (the kernel is computed by blocks of "
                 "image pairs: ntkcond.scale.blockwise_ntk), smaller images, or a Flatten "
                 "read-out, which needs only the spatial diagonal")
    s1 = _self_state(x1, angles)
    s2 = None if x2 is None else _self_state(x2, angles)
    fa, fb = x1.reshape(n1, P, C), y.reshape(n2, P, C)
    c = np.einsum("iac,jbc->ijab", fa, fb) / C
    qa = s1.q1.reshape(n1, P)
    qb = (s1 if s2 is None else s2).q1.reshape(n2, P)
    D = _pixel_gaps(fa, fb, qa[:, None, :, None], qb[None, :, None, :], c, C, pairs=True)
    if x2 is None:
        idx = np.arange(n1)
        c[idx, idx] = s1.c.reshape(n1, P, P)
        D[idx, idx] = s1.D.reshape(n1, P, P)
    shape = (n1, n2, h, w, h, w)
    q1 = qa.reshape(n1, 1, h, w, 1, 1)
    q2 = qb.reshape(1, n2, 1, 1, h, w)
    zr, zc, zp = np.zeros(q1.shape), np.zeros(q2.shape), np.zeros(shape)
    pairs = PairState(q1, q2, c.reshape(shape), D.reshape(shape), zr, zc, zp,
                      zp.copy() if angles else None)
    return SpatialState(pairs, s1, s2)
