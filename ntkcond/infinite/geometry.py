"""Input geometry of pairs of rows: angles θ₀ and cosines between inputs, computed to full
float64 accuracy (Gram route, and Kahan's formula θ = 2 atan2(‖x̂ − x̂'‖, ‖x̂ + x̂'‖) within
0.1 rad of 0 or π, where the Gram route's error eps/θ² would exceed 1e-12 relative).
"""
from __future__ import annotations

import numpy as np

from .._core.checks import as_pair
from ._recursion import angle_from

# Angles this close to 0 or π (radians) are recomputed from the vectors, not the Gram matrix:
# there the Gram route's error eps/θ² would exceed 1e-12 relative.
REFINE_WITHIN = 0.1


REFINE_CHUNK_ELEMS = 1 << 22


def normalised_rows(x: np.ndarray, where: str, name: str):
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise ValueError(
            f"{where}: expected nonzero rows of {name} (angles are undefined), "
            f"got a zero row at index {int(np.argmax(norms == 0))}"
        )
    return x / norms[:, None], norms


def pair_geometry(x1, x2, where: str):
    """(θ₀, cos θ₀, scale) for all pairs: (n1, n2) arrays; scale = ‖x‖‖x'‖/d, eq. (1)."""
    same = x2 is None
    x1, x2 = as_pair(x1, x2, where)
    xh1, n1 = normalised_rows(x1, where, "x1")
    xh2, n2 = (xh1, n1) if same else normalised_rows(x2, where, "x2")
    angle, cos = unit_geometry(xh1, xh2, same)
    scale = np.outer(n1, n2) / x1.shape[1]
    return angle, cos, scale


def unit_geometry(xh1: np.ndarray, xh2: np.ndarray, same: bool):
    """(θ₀, cos θ₀) between unit rows: Gram route, Kahan's formula within 0.1 rad of 0 or π.

    ``same``: xh1 is xh2 (the diagonal is set to exactly 0). Used by ``pair_geometry`` and, block by
    block, by ``ntkcond.scale.streaming``.
    """
    cos = np.clip(xh1 @ xh2.T, -1.0, 1.0)
    angle = angle_from(1.0 - cos, 1.0 + cos)
    refine = needs_refinement(angle)
    if same:
        np.fill_diagonal(refine, False)
    rows, cols = np.nonzero(refine)
    if rows.size:
        exact = kahan_angles(xh1, xh2, rows, cols)
        angle[rows, cols] = exact
        cos[rows, cols] = np.cos(exact)
    if same:
        np.fill_diagonal(angle, 0.0)
        np.fill_diagonal(cos, 1.0)
    return angle, cos


def needs_refinement(angle):
    return (angle < REFINE_WITHIN) | (angle > np.pi - REFINE_WITHIN)


def kahan_angles(xh1, xh2, rows, cols) -> np.ndarray:
    """θ = 2 atan2(‖x̂ − x̂'‖, ‖x̂ + x̂'‖) for the pairs (xh1[rows], xh2[cols]): (k,) radians."""
    out = np.empty(rows.size)
    chunk = max(1, REFINE_CHUNK_ELEMS // xh1.shape[1])
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
    return pair_geometry(x1, x2, "input_angles")[0]
