"""The aligned initialisations under which a bias-free ReLU net is exactly a set of independent
linear nets (Zhang, Saxe & Latham, arXiv 2406.12615; derivation in ``independent_nets``):
``orthogonal_init`` (one net per group of pairwise orthogonal points) and ``pair_init``
(even-mirrored unit pairs for symmetric data with even targets, e.g. XOR).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...._core.checks import as_int, positive
from ._groups import as_groups, group_geometry, pair_data, require_orthogonal
from ._net_checks import as_xy

__all__ = ["orthogonal_init", "pair_init"]


# ----------------------------------------------------------------------------- initialisations


def orthogonal_init(x, y, *, groups=None, units: int = 2, scale: float, margin: float = 0.5,
                    seed: int = 0):
    """Aligned, balanced ReLU init that makes each group of orthogonal points its own linear net.

    For group G: ``units`` hidden units with w_i = b_i (β̂_G − margin·Σ_{ν∉G} x̂_ν), a_i = b_i ŷ_G,
    b_i = scale·|N(0, 1)|. The negative ``margin`` keeps each unit strictly inactive (ReLU) on
    the other groups' points, so round-off in the orthogonality cannot switch it on; those
    components never move (σ' = 0). On the group's span the unit is balanced (‖w‖ = ‖a‖ there).

    Args:
      x: (n, d) pairwise orthogonal inputs; y: (n,) or (n, k) targets.
      groups: partition of range(n); default one group per point.
      units: hidden units per group (≥ 1); scale: size of b (> 0); margin: ≥ 0.

    Returns:
      (W1 (units·G, d), W2 (k, units·G)).
    """
    where = "orthogonal_init"
    x, y = as_xy(x, y, where)
    require_orthogonal(x, where)
    gs = as_groups(groups, x.shape[0], where)
    units, scale = as_int(units, "units", where, 1), positive(scale, "scale", where)
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not margin >= 0:
        raise ValueError(f"{where}: expected margin >= 0, got {margin!r}")
    _, _, beta, yhat = group_geometry(x, y, gs, where)
    xhat = x / np.linalg.norm(x, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for g, bt, yh in zip(gs, beta, yhat):
        others = [i for i in range(x.shape[0]) if i not in g]
        direction = bt - margin * xhat[others].sum(axis=0)
        for b in scale * np.abs(rng.standard_normal(units)):
            rows.append(b * direction)
            cols.append(b * yh)
    return np.array(rows), np.array(cols).T


def pair_init(x, y, *, groups=None, pairs: int = 2, scale: float, seed: int = 0):
    """Even-mirrored aligned init for symmetric data with even targets (XOR): units (w, a), (−w, a).

    For group G of first-half directions: ``pairs`` unit pairs with w = b β̂_G, a = b ŷ_G,
    b = scale·|N(0, 1)|; w has no component on the other groups' directions (the docstring
    of ``independent_nets``: exactly 0 is harmless there because the errors are even).

    Args:
      x: (n, d) symmetric inputs (x[n/2:] = −x[:n/2]) whose first half is pairwise orthogonal.
      y: even targets (y[n/2:] = y[:n/2]).
      groups: partition of range(n/2); default one group per direction.

    Returns:
      (W1 (2·pairs·G, d), W2 (k, 2·pairs·G)).
    """
    where = "pair_init"
    v, y_half, gs = pair_data(x, y, groups, where)
    pairs, scale = as_int(pairs, "pairs", where, 1), positive(scale, "scale", where)
    _, _, beta, yhat = group_geometry(v, y_half, gs, where)
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for bt, yh in zip(beta, yhat):
        for b in scale * np.abs(rng.standard_normal(pairs)):
            rows += [b * bt, -b * bt]
            cols += [b * yh, b * yh]
    return np.array(rows), np.array(cols).T
