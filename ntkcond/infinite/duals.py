"""Dual kernels of activations: Gaussian expectations E[σ(u)σ(v)], E[σ'(u)σ'(v)] and their
non-negative gaps, for every activation of ``ntkcond.activations``.

For a centred Gaussian pair (u, v) with variances q₁, q₂ and covariance c, written with the
Euclidean gap D = ½E[(u − v)²] = ½(q₁ + q₂) − c ≥ 0 (carried exactly by the recursion of
``ntkcond.infinite.family``, never formed as a difference), a dual returns

    M  = E[σ(u)σ(v)],     Dσ  = ½E[(σ(u) − σ(v))²]   = ½(P₁ + P₂) − M        ≥ 0     (1)
    Ṁ  = E[σ'(u)σ'(v)],   Dσ' = ½E[(σ'(u) − σ'(v))²] = ½(Ṗ₁ + Ṗ₂) − Ṁ      ≥ 0     (2)

with P = E[σ(u)²], Ṗ = E[σ'(u)²] on the diagonal (``diagonal``). The gaps are what carries
1 − ρ through the layers: read off M they would lose all digits at small angles.

With s = √q₁ − √q₂ = (q₁ − q₂)/(√q₁ + √q₂) and the angle θ of (u, v),
1 − cos θ = (D − ½s²)/√(q₁q₂) and 1 + cos θ = (√(q₁q₂) + c)/√(q₁q₂).

Closed forms
------------
Leaky family σ = a·z + b·|z| (Cho & Saul 2009's arc-cosine kernels), with
k(θ) = (2 sin θ + (π − 2θ) cos θ)/π = E[|u||v|]/√(q₁q₂) and, for θ' = min(θ, π − θ),
1 − k(θ) = (1 − cos θ') − 2(sin θ' − θ' cos θ')/π (no cancellation near 0 or π):

    M  = a²c + b²√(q₁q₂) k(θ),         Dσ  = a²D + b²[½s² + √(q₁q₂)(1 − k(θ))]
    Ṁ  = a² + b²(1 − 2θ/π),            Dσ' = 2b²θ/π,     P = (a² + b²)q, Ṗ = a² + b².   (3)

erf (Williams 1998): with Q = q + ½, r = c/√(Q₁Q₂), r_i = q_i/Q_i, γ = arccos r,
γ_i = arccos r_i (erf(z) = E[sign(z + e)], e ~ N(0, ½)):

    M  = (2/π) arcsin r = 1 − 2γ/π,   P_i = 1 − 2γ_i/π,   Dσ = [(γ − γ₁) + (γ − γ₂)]/π,
    Ṁ  = (2/π)/√B,   Ṗ_i = (2/π)/√(q_i + ¼),   B = q₁q₂ − c² + ½(q₁ + q₂) + ¼,          (4)

γ − γ_i = atan2(r_i sin γ − r sin γ_i, r r_i + sin γ sin γ_i) with the sine's numerator as
(r_i − r)(r_i + r)/(r_i sin γ + r sin γ_i) for r ≥ 0, r₁ − r = [D√Q₁ + (q₁ − q₂)(½√Q₁ −
q₁/(√Q₁ + √Q₂))]/(Q₁√Q₂); Dσ' = (1/π)Σ_i (B − A_i)/(√(A_iB)(√A_i + √B)), A_i = q_i + ¼,
B − A₁ = q₁q₂ − c² + ½(q₂ − q₁), q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c). These exact gap
forms are used where the cheap ½(P₁ + P₂) − M is below ``GAP_RECOMPUTE_BELOW`` of ½(P₁ + P₂).

sin (and its derivative cos): with S = q₁ + q₂, E sin u sin v = e^{−S/2} sinh c,
E cos u cos v = e^{−S/2} cosh c, and

    Dσ  = ½[−expm1(−D) + e^{−S} expm1(D) − ½(e^{−q₁} − e^{−q₂})²],
    Dσ' = ½[−expm1(−D) − e^{−S} expm1(D) + ½(e^{−q₁} − e^{−q₂})²].                   (5)

GELU σ(z) = zΦ(z): closed forms (6) and its small gaps by Price's theorem (6a)–(6b), in
``ntkcond.infinite.gelu_dual``.

Other activations (tanh, softplus, SiLU, callables)
---------------------------------------------------
Mehler's series (7), truncated per pair (``ntkcond.infinite.mehler``); where it does not
converge within its table, and for the small gaps, the trapezoidal rule with its step-halving
check (``ntkcond.infinite.trapezoid``).

The quantities of the pair without cancellation (θ, s, q₁q₂ − c²) are those of
``ntkcond.infinite._bivariate``. All functions take NumPy arrays that broadcast (q₁ as a
column, q₂ as a row, c and D as blocks) and return float64 arrays of the broadcast shape.
"""
from __future__ import annotations

import functools

import numpy as np

from ._bivariate import angle_terms, covariance_det, sqrt_diff
from .gelu_dual import gelu_diagonal, gelu_dual, gelu_gaps
from .mehler import mehler_dual
from .trapezoid import H_SCALE, quadrature_diagonal, quadrature_dual, quadrature_gaps

__all__ = ["GAP_RECOMPUTE_BELOW", "diagonal", "dual", "uses_quadrature"]

#: Cheap gaps ½(P₁ + P₂) − M of erf, GELU and the series/quadrature activations are recomputed
#: (erf by eq. (4)'s gap forms, GELU by eqs. (6a)–(6b), the others by the divided-difference
#: quadrature) where they are below this fraction of ½(P₁ + P₂).
GAP_RECOMPUTE_BELOW = 1e-3


def _smc(t):
    from .series import sin_minus_angle_cos

    return sin_minus_angle_cos(t)


def _leaky(act, q1, q2, c, D):
    a, b = act.ab
    a2, b2 = a * a, b * b
    theta, um, up, _, s, r = angle_terms(q1, q2, c, D)
    near = np.minimum(theta, np.pi - theta)
    one_minus_k = 2.0 * np.sin(0.5 * near) ** 2 - 2.0 * _smc(near) / np.pi
    M = a2 * c + b2 * r * (1.0 - one_minus_k)
    gap = a2 * D + b2 * (0.5 * s * s + r * one_minus_k)
    Md = a2 + b2 * (1.0 - 2.0 * theta / np.pi)
    gapd = 2.0 * b2 * theta / np.pi
    return M, gap, Md, gapd


def _erf(q1, q2, c, D):
    Q1, Q2 = q1 + 0.5, q2 + 0.5
    RQ = np.sqrt(Q1 * Q2)
    M = (2.0 / np.pi) * np.arcsin(c / RQ)  # r ≤ q/(q + ½) < 1: well conditioned
    det = covariance_det(q1, q2, c, D)
    B = det + 0.5 * (q1 + q2) + 0.25
    Md = (2.0 / np.pi) / np.sqrt(B)
    P1, Pd1 = _erf_diag(q1)
    P2, Pd2 = _erf_diag(q2)
    gap, gapd = 0.5 * (P1 + P2) - M, 0.5 * (Pd1 + Pd2) - Md
    small = (gap < GAP_RECOMPUTE_BELOW * 0.5 * (P1 + P2)) | (
        gapd < GAP_RECOMPUTE_BELOW * 0.5 * (Pd1 + Pd2))
    if np.any(small):  # eq. (4)'s cancellation-free gaps where the cheap ones lose digits
        shape = small.shape
        b = [np.broadcast_to(a, shape)[small] for a in (q1, q2, c, D)]
        gap = np.array(np.broadcast_to(gap, shape))
        gapd = np.array(np.broadcast_to(gapd, shape))
        gap[small], gapd[small] = _erf_gaps(*b)
    return M, np.maximum(gap, 0.0), Md, np.maximum(gapd, 0.0)


def _erf_diag(q):
    return (2.0 / np.pi) * np.arcsin(q / (q + 0.5)), (2.0 / np.pi) / np.sqrt(q + 0.25)


def _erf_gaps(q1, q2, c, D):
    """(Dσ, Dσ') of erf by eq. (4), every term non-negative or cancellation-free."""
    Q1, Q2 = q1 + 0.5, q2 + 0.5
    _, um, up, _, s, rq = angle_terms(q1, q2, c, D)
    gq = um * rq  # √(q₁q₂) − c ≥ 0
    det = gq * (rq + c)  # q₁q₂ − c² ≥ 0
    sQ1, sQ2 = np.sqrt(Q1), np.sqrt(Q2)
    RQ = sQ1 * sQ2
    r = c / RQ
    # 1 − r = (√(Q₁Q₂) − c)/√(Q₁Q₂), √(Q₁Q₂) − c = D + ½ − ½(√Q₁ − √Q₂)²
    sQ = sqrt_diff(Q1, Q2)
    one_minus_r = np.maximum(D + 0.5 - 0.5 * sQ * sQ, 0.0) / RQ
    sin_g = np.sqrt(one_minus_r * (1.0 + r))
    dq = q1 - q2
    out = []
    for qi, Qi, sQi, sQj, sign in ((q1, Q1, sQ1, sQ2, 1.0), (q2, Q2, sQ2, sQ1, -1.0)):
        ri = qi / Qi
        sin_gi = np.sqrt(0.5 / Qi * (1.0 + ri))
        ri_minus_r = (D * sQi + sign * dq * (0.5 * sQi - qi / (sQi + sQj))) / (Qi * sQj)
        den = ri * sin_g + r * sin_gi
        num = np.where(r >= 0, ri_minus_r * (ri + r) / np.where(den > 0, den, 1.0),
                       ri * sin_g - r * sin_gi)
        out.append(np.arctan2(num, r * ri + sin_g * sin_gi))
    gap = (out[0] + out[1]) / np.pi
    B = det + 0.5 * (q1 + q2) + 0.25
    gapd = 0.0
    for Ai, sgn in ((q1 + 0.25, 1.0), (q2 + 0.25, -1.0)):
        BmA = det - sgn * 0.5 * dq
        gapd = gapd + BmA / (np.sqrt(Ai * B) * (np.sqrt(Ai) + np.sqrt(B)))
    return gap, gapd / np.pi


def _sin(q1, q2, c, D):
    S = q1 + q2
    e = np.exp(-0.5 * S)
    M, Md = e * np.sinh(c), e * np.cosh(c)
    de = np.exp(-q1) - np.exp(-q2)
    em, ep = -np.expm1(-D), np.exp(-S) * np.expm1(D)
    gap = 0.5 * (em + ep - 0.5 * de * de)
    gapd = 0.5 * (em - ep + 0.5 * de * de)
    return M, np.maximum(gap, 0.0), Md, np.maximum(gapd, 0.0)


def diagonal(act, q, h_scale=H_SCALE):
    """(P, Ṗ) = (E[σ(u)²], E[σ'(u)²]) for u ~ N(0, q), elementwise in q (float64 array)."""
    q = np.asarray(q, dtype=np.float64)
    if act.is_leaky:
        a, b = act.ab
        return (a * a + b * b) * q, np.full_like(q, a * a + b * b)
    name = act.name if not hasattr(act, "fn") else None
    if name == "erf":
        return _erf_diag(q)
    if name == "sin":
        return -0.5 * np.expm1(-2.0 * q), 0.5 * (1.0 + np.exp(-2.0 * q))
    if name == "gelu":
        return gelu_diagonal(q)
    return quadrature_diagonal(act, q, h_scale)


def uses_quadrature(act) -> bool:
    """True for activations whose kernels need quadrature: all but the leaky family, erf,
    sin and GELU (closed forms, eqs. (3)–(6b))."""
    return not (act.is_leaky or (not hasattr(act, "fn") and act.name in ("erf", "sin", "gelu")))


def dual(act, q1, q2, c, D, gaps=True, h_scale=H_SCALE):
    """(M, Dσ, Ṁ, Dσ') of eqs. (1)–(2) for any activation: closed forms (3)–(6) where they
    exist, Mehler's series (7) or the trapezoid otherwise; gaps below ``GAP_RECOMPUTE_BELOW``
    of the diagonal by eqs. (6a)–(6b) for GELU (``ntkcond.infinite.gelu_dual.gelu_gaps``), by
    the divided-difference quadrature (``ntkcond.infinite.trapezoid.quadrature_gaps``) for the
    others (pairs with D = 0 and q₁ = q₂ have exact 0 gaps).
    ``gaps=False``: (M, None, Ṁ, None), for kernels alone."""
    q1, q2, c, D = (np.asarray(a, dtype=np.float64) for a in (q1, q2, c, D))
    if act.is_leaky:
        return _leaky(act, q1, q2, c, D)
    name = None if hasattr(act, "fn") else act.name
    if name == "erf":
        return _erf(q1, q2, c, D)
    if name == "sin":
        return _sin(q1, q2, c, D)
    if name == "gelu":
        M, Md = gelu_dual(q1, q2, c, D)
    else:
        found = mehler_dual(act, q1, q2, c)
        M, Md = found if found is not None else quadrature_dual(act, q1, q2, c, D, h_scale)
    if not gaps:
        return M, None, Md, None
    P1, Pd1 = diagonal(act, q1, h_scale)
    P2, Pd2 = diagonal(act, q2, h_scale)
    mean, meand = 0.5 * (P1 + P2), 0.5 * (Pd1 + Pd2)
    gap, gapd = mean - M, meand - Md
    small = (gap < GAP_RECOMPUTE_BELOW * mean) | (gapd < GAP_RECOMPUTE_BELOW * meand)
    small = small & ~((D == 0) & (q1 == q2))
    gap = np.where((D == 0) & (q1 == q2), 0.0, gap)
    gapd = np.where((D == 0) & (q1 == q2), 0.0, gapd)
    shape = np.broadcast_shapes(q1.shape, q2.shape, c.shape, D.shape)
    gap, gapd = np.broadcast_to(gap, shape).copy(), np.broadcast_to(gapd, shape).copy()
    small = np.broadcast_to(small, shape)
    if np.any(small):
        b = [np.broadcast_to(a, shape)[small] for a in (q1, q2, c, D)]
        gaps_of = gelu_gaps if name == "gelu" else functools.partial(
            quadrature_gaps, act, h_scale=h_scale)
        gap[small], gapd[small] = gaps_of(*b)
    return M, np.maximum(gap, 0.0), Md, np.maximum(gapd, 0.0)
