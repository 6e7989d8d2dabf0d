"""A centred Gaussian pair (u, v) without cancellation: the quantities every dual kernel of
the leaky family, erf, GELU (``ntkcond.activations``), ``ntkcond.activations.mehler`` and
``ntkcond.activations.trapezoid`` starts from.

The pair has variances q₁, q₂ and covariance c, written with the Euclidean gap
D = ½E[(u − v)²] = ½(q₁ + q₂) − c ≥ 0, which the layer maps of ``ntkcond.network``
carries exactly (never formed as a difference). With s = √q₁ − √q₂ = (q₁ − q₂)/(√q₁ + √q₂)
and the angle θ of (u, v),

    1 − cos θ = (D − ½s²)/√(q₁q₂),   1 + cos θ = (√(q₁q₂) + c)/√(q₁q₂),
    θ = 2 atan2(√(1 − cos θ), √(1 + cos θ)),   q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c).

Arrays broadcast; results are float64.
"""
from __future__ import annotations

import numpy as np

__all__ = ["sqrt_diff", "angle_terms", "covariance_det", "GL8_NODES", "GL8_WEIGHTS"]

#: 8-point Gauss–Legendre on [0, 1]: nodes and weights (divided differences, panel rules).
GL8_NODES, GL8_WEIGHTS = np.polynomial.legendre.leggauss(8)
GL8_NODES, GL8_WEIGHTS = 0.5 * (GL8_NODES + 1.0), 0.5 * GL8_WEIGHTS
GL8_NODES.setflags(write=False)
GL8_WEIGHTS.setflags(write=False)


def sqrt_diff(q1, q2):
    """√q₁ − √q₂ = (q₁ − q₂)/(√q₁ + √q₂), exact sign and no cancellation."""
    den = np.sqrt(q1) + np.sqrt(q2)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (q1 - q2) / den
    if not np.all(den > 0):
        out = np.where(den > 0, out, 0.0)
    return out


def angle_terms(q1, q2, c, D):
    """(θ, 1 − cos θ, 1 + cos θ, sin θ, s, √(q₁q₂)) of the Gaussian pair, no cancellation.

    1 − cos θ = (D − ½s²)/√(q₁q₂) (clipped to [0, 2]), 1 + cos θ = (√(q₁q₂) + c)/√(q₁q₂);
    zero variances give θ = 0.
    """
    s = sqrt_diff(q1, q2)
    r = np.sqrt(q1 * q2)
    with np.errstate(invalid="ignore", divide="ignore"):
        um = np.clip((D - 0.5 * s * s) / r, 0.0, 2.0)
        up = np.clip((r + c) / r, 0.0, 2.0)
    if not np.all(r > 0):
        um, up = np.where(r > 0, um, 0.0), np.where(r > 0, up, 2.0)
    theta = 2.0 * np.arctan2(np.sqrt(um), np.sqrt(up))
    return theta, um, up, np.sqrt(um * up), s, r


def covariance_det(q1, q2, c, D):
    """q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c) ≥ 0, without cancellation (erf's B, GELU's δ²)."""
    s = sqrt_diff(q1, q2)
    return np.maximum(D - 0.5 * s * s, 0.0) * np.maximum(np.sqrt(q1 * q2) + c, 0.0)
