"""Orthogonal and XOR data for the independent-nets picture of ``independent_nets`` (Zhang, Saxe &
Latham, arXiv 2406.12615): ``max_abs_cosine`` (how far the inputs are from pairwise
orthogonal), ``orthogonalize`` (the nearest pairwise orthogonal rows), ``xor_data``, and
``feature_alignment`` of learned first-layer rows with the data directions.
"""
from __future__ import annotations

import numbers

import numpy as np

from ...._core.checks import as_int, positive
from ._net_checks import as_array

__all__ = ["max_abs_cosine", "orthogonalize", "xor_data", "feature_alignment"]


# ----------------------------------------------------------------------------- data


def max_abs_cosine(x) -> float:
    """Largest |cos ∠(x_μ, x_ν)| over pairs μ ≠ ν of rows of x (0 for orthogonal rows).

    Args:
      x: (n, d) inputs, no zero row.
    """
    x = as_array(x, "max_abs_cosine", "x")
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"max_abs_cosine: expected nonzero rows, got a zero row at index "
                         f"{int(np.argmin(norms))}")
    if x.shape[0] < 2:
        return 0.0
    g = (x / norms[:, None]) @ (x / norms[:, None]).T
    np.fill_diagonal(g, 0.0)
    return float(np.max(np.abs(g)))


def orthogonalize(x) -> np.ndarray:
    """The pairwise orthogonal rows nearest to x, with x's row norms (Löwdin orthogonalisation).

    With x̂ = rows of x normalised and x̂ = U S Vᵀ (thin SVD), U Vᵀ is the matrix with
    orthonormal rows closest to x̂ in Frobenius norm; each row is rescaled to ‖x_μ‖. Needs
    n ≤ d and linearly independent rows (e.g. a few real images).

    Returns:
      (n, d) float64 with pairwise orthogonal rows (|cos| ~ 1e-15).
    """
    x = as_array(x, "orthogonalize", "x")
    n, d = x.shape
    if n > d:
        raise ValueError(f"orthogonalize: expected at most d = {d} rows (orthogonal vectors in "
                         f"R^{d}), got {n}")
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise ValueError("orthogonalize: expected nonzero rows, got a zero row")
    U, s, Vt = np.linalg.svd(x / norms[:, None], full_matrices=False)
    if s[-1] < 1e-10 * s[0]:
        raise ValueError(f"orthogonalize: expected linearly independent rows, got singular "
                         f"values down to {s[-1]:.2g}")
    return (U @ Vt) * norms[:, None]


def xor_data(*, d: int = 2, scale: float = 1.0, noise: float = 0.0, copies: int = 1,
             seed: int = 0):
    """XOR: inputs ±(e₁+e₂)·scale, ±(e₁−e₂)·scale with label y = x₁x₂/scale² ∈ {+1, −1}.

    Laid out as ``symmetrize`` does, x[n/2:] = −x[:n/2] and y[n/2:] = y[:n/2] (even target).
    For d > 2 the plane is embedded by a random orthonormal pair of directions of R^d (then
    orthogonality holds to round-off only); ``noise`` > 0 adds N(0, noise²) to each of the
    ``copies`` copies of p = e₁+e₂ and q = e₁−e₂ *before* the negatives are added, so the set
    stays exactly symmetric but is no longer orthogonal.

    Returns:
      x (4·copies, d), y (4·copies,).
    """
    where = "xor_data"
    d, copies = as_int(d, "d", where, 2), as_int(copies, "copies", where, 1)
    scale = positive(scale, "scale", where)
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not noise >= 0:
        raise ValueError(f"{where}: expected noise >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    plane = np.array([[1.0, 1.0], [1.0, -1.0]]) * scale  # p, q
    if d == 2:
        frame = np.eye(2)
    else:
        frame = np.linalg.qr(rng.standard_normal((d, 2)))[0].T  # (2, d) orthonormal rows
    half = np.repeat(plane @ frame, copies, axis=0)
    half = half + noise * scale * rng.standard_normal(half.shape)
    y_half = np.repeat([1.0, -1.0], copies)
    return np.concatenate([half, -half]), np.concatenate([y_half, y_half])


# ----------------------------------------------------------------------------- features


def feature_alignment(W1, directions) -> np.ndarray:
    """max_j |cos ∠(w_i, v_j)| for each hidden unit i: 1 when w_i lies along ±some data direction.

    Args:
      W1: (h, d) first-layer weights (zero rows give 0).
      directions: (m, d) data directions v_j (e.g. XOR's p and q).

    Returns:
      (h,) float64 in [0, 1].
    """
    W1 = as_array(W1, "feature_alignment", "W1")
    v = as_array(directions, "feature_alignment", "directions")
    if v.shape[1] != W1.shape[1]:
        raise ValueError(f"feature_alignment: expected directions with {W1.shape[1]} columns, "
                         f"got shape {v.shape}")
    wn = np.linalg.norm(W1, axis=1, keepdims=True)
    vn = np.linalg.norm(v, axis=1, keepdims=True)
    cos = (W1 / np.where(wn > 0, wn, 1.0)) @ (v / vn).T
    return np.max(np.abs(cos), axis=1)
