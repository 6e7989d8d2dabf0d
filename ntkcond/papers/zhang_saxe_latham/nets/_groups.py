"""Validators the independent-nets modules share (``independent_inits``, ``independent_nets``,
``silent_phase``; Zhang, Saxe & Latham, arXiv 2406.12615): pairwise orthogonal inputs, a
partition of the points into groups, each group's geometry (ρ_G, Y_G, β̂_G, ŷ_G of
``independent_nets``) and the first half of symmetric pair data. Public names of a private module.
"""
from __future__ import annotations

import numpy as np

from ._net_checks import as_xy
from .biasfree import is_symmetric
from .orthogonal_data import max_abs_cosine

ORTHO_TOL = 1e-10  # |cos| allowed between "orthogonal" inputs: round-off of QR/SVD is ~1e-15


def require_orthogonal(x, where: str, tol: float = ORTHO_TOL):
    """ValueError reporting the largest |cos| unless the rows of x are pairwise orthogonal."""
    cos = max_abs_cosine(x)
    if cos > tol:
        raise ValueError(f"{where}: expected pairwise orthogonal inputs (largest off-diagonal "
                         f"|cos| <= {tol:g}), got largest |cos| = {cos:.3g}")


# ----------------------------------------------------------------------------- groups


def as_groups(groups, m: int, where: str):
    """Validate a partition of range(m) (default: one group per point)."""
    if groups is None:
        return tuple((i,) for i in range(m))
    try:
        gs = tuple(tuple(int(i) for i in g) for g in groups)
    except TypeError:
        raise TypeError(f"{where}: expected groups as a list of lists of point indices, "
                        f"got {groups!r}") from None
    flat = sorted(i for g in gs for i in g)
    if any(len(g) == 0 for g in gs) or flat != list(range(m)):
        raise ValueError(f"{where}: expected groups that partition the point indices "
                         f"0..{m - 1} (each once), got {groups!r}")
    return gs


def group_geometry(v, y, groups, where: str):
    """ρ_G, ‖y_G‖, unit β̂_G and ŷ_G for each group of orthogonal directions v (rows)."""
    rho, Y, beta, yhat = [], [], [], []
    for g in groups:
        norms = np.linalg.norm(v[list(g)], axis=1)
        if np.max(np.abs(norms - norms[0])) > 1e-9 * norms[0]:
            raise ValueError(f"{where}: expected the points of group {list(g)} to have one norm "
                             f"(whitened on their span), got norms {norms.tolist()}")
        yg = y[list(g)]
        Yg = float(np.linalg.norm(yg))
        if Yg == 0:
            raise ValueError(f"{where}: expected a nonzero target on group {list(g)}, got 0")
        direction = yg[int(np.argmax(np.linalg.norm(yg, axis=1)))]
        direction = direction / np.linalg.norm(direction)
        lam = yg @ direction
        if np.max(np.linalg.norm(yg - np.outer(lam, direction), axis=1)) > 1e-9 * Yg or \
                np.any(lam <= 0):
            raise ValueError(f"{where}: expected the targets of group {list(g)} to be positive "
                             f"multiples of one direction (k = 1: one sign), got {yg.tolist()}")
        b = lam @ v[list(g)] / norms[0] ** 2
        rho.append(float(norms[0]))
        Y.append(Yg)
        beta.append(b / np.linalg.norm(b))
        yhat.append(direction)
    return np.array(rho), np.array(Y), beta, yhat


def pair_data(x, y, groups, where):
    """Validated symmetric data with even targets: (first-half inputs v, their targets, the
    groups of range(n/2)); the first half must be pairwise orthogonal."""
    x, y = as_xy(x, y, where)
    if y is None:
        raise ValueError(f"{where}: expected targets y, got None")
    if not is_symmetric(x):
        raise ValueError(f"{where}: expected symmetric inputs with x[n/2:] == -x[:n/2] "
                         f"(use symmetrize or xor_data), got inputs without that layout")
    m = x.shape[0] // 2
    odd = np.max(np.abs(y[m:] - y[:m]))
    if odd > 0:
        raise ValueError(f"{where}: expected even targets y[n/2:] == y[:n/2], got a largest "
                         f"odd part |y(x) - y(-x)| = {odd:.3g}")
    require_orthogonal(x[:m], where)
    return x[:m], y[:m], as_groups(groups, m, where)
