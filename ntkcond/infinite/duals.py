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

GELU σ(z) = zΦ(z) (Tsuchida et al. 2020, arXiv 2002.08517; neural-tangents' ``Gelu``): with
δ² = (1 + q₁)(1 + q₂) − c² = 1 + q₁ + q₂ + det, det = q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c)
(no cancellation) and ψ = atan2(c, δ),

    M = c/4 + [(c² + q₁q₂δ²)/((1 + q₁)(1 + q₂)δ) + cψ]/(2π),
    Ṁ = ¼ + ψ/(2π) + c[(2 + q₁ + q₂)/((1 + q₁)(1 + q₂)) + 1/δ²]/(2πδ),                  (6)

and its gaps ½(P₁ + P₂) − M where that is at least ``GAP_RECOMPUTE_BELOW`` of ½(P₁ + P₂)
(relative error < 1e-13 there), else (``gelu_gaps``) by Price's theorem (Price 1958, IRE
Trans. Inf. Theory 4: ∂M/∂c = Ṁ, ∂Ṁ/∂c = M̈ = E[σ''(u)σ''(v)], σ''(z) = (2 − z²)φ(z)) along
c' from c to r = √(q₁q₂) at fixed q₁, q₂, every term non-negative:

    Dσ = Dσ|_{ρ=1} + ∫_c^r Ṁ dc',    Dσ' = Dσ'|_{ρ=1} + ∫_c^r M̈ dc',
    M̈ = [(2 − S₁₁)(2 − S₂₂) + 2S₁₂²]/(2πδ),   S = Σ(I + Σ)⁻¹,                            (6a)

2 − S₁₁ = (2 + q₁ + 2q₂ + det)/δ², 2 − S₂₂ = (2 + 2q₁ + q₂ + det)/δ², S₁₂ = c/δ². In
t = r − c' (det = t(2r − t), exact), δ² vanishes only at t = −d₀, d₀ = (1 + q₁ + q₂)/(r +
√((1 + q₁)(1 + q₂))) ≥ 1, and at t = L + d_L, d_L = c + √((1 + q₁)(1 + q₂)) ≥ d₀, where L = r − c
= √(q₁q₂)(1 − cos θ): 12-point Gauss–Legendre on [0, L] if L ≤ d₀, else on each half
[0, L/2], [L/2, L] with panels graded geometrically (ratio 2) toward its end down to one no
longer than d₀ (d_L). Every panel's Bernstein ellipse through the nearest singularity has
ρ ≥ 3 + √8, so the error is ~(3 + √8)^−24 ≈ 4e-19 of the integrand (against mpmath:
≤ 5e-16 of the gap for q ≤ 1e4). At ρ = 1 (v = (b/a)u, a = √q₁, b = √q₂), with
m(x, y) = E[σ(xz)σ(yz)], Dσ|_{ρ=1} = ½[m(a, a) + m(b, b)] − m(a, b) = ½∫_b^a∫_b^a ∂²m/∂x∂y dx dy
(Dσ'|_{ρ=1} likewise with ṁ = E[σ'(xz)σ'(yz)]) and, for A = 1 + x², B = 1 + y², Δ² = 1 + x² + y²,

    ∂²m/∂x∂y = E[z²σ'(xz)σ'(yz)]
             = ¼ + atan2(xy, Δ)/(2π) + xy[(1/A + 1/B + 2/A² + 2/B²)/Δ + (1/A + 1/B)/Δ³ + 3/Δ⁵]/(2π),
    ∂²ṁ/∂x∂y = E[z²σ''(xz)σ''(yz)] = [4Δ⁴ − 6(x² + y²)Δ² + 15x²y²]/(2πΔ⁷),            (6b)

by 8-point Gauss–Legendre on m × m panels of [b, a]² (½s² times its mean: exactly 0 for
q₁ = q₂), m = 2^k with panels no wider than 0.3√(1 + b²) ≤ 0.3·the distance to the
singularities of (6b) at |Im x| ≥ √(1 + y²), where the cheap ½(P₁ + P₂) − M(q₁, q₂, r)
(½(Ṗ₁ + Ṗ₂) − Ṁ) is below 1e-2 of ½(P₁ + P₂) (½(Ṗ₁ + Ṗ₂)) and m ≤ 16, else the cheap value
(relative error < 1e-13): < 1e-14 relative against mpmath (q ≤ 1e6). No step depends on the
variances, so there is no node limit. Conditioning: for q₁ ≠ q₂ at tiny θ, D ≈ ½s² ≫ L and
the gaps inherit ~eps·D·|∂G/∂D|/G from D's rounding (and s's), as the angles of
``ntkcond.infinite.family`` do.

Mehler's series (tanh, softplus, SiLU, callables)
-------------------------------------------------
With h_k = He_k/√k! (orthonormal under N(0, 1)), a_k(q) = E[σ(√q z)h_k(z)] and ȧ_k likewise
for σ' (``mehler_coefficients``: a 1-D trapezoid per distinct variance, split into σ's even
and odd parts: an odd σ has exactly zero even a_k),

    M = Σ_k a_k(q₁) a_k(q₂) ρ^k,   Ṁ = Σ_k ȧ_k(q₁) ȧ_k(q₂) ρ^k,   ρ = c/√(q₁q₂),        (7)

each pair's sum truncated at the first K with |ρ|^K·t_K ≤ 1e-14, t_K the largest relative
tail Σ_{k≥K} a_k²/Σ_k a_k² over the variances (Cauchy–Schwarz: the error is below 1e-14 of
√(P₁P₂); ``mehler_levels``). Where 2950 terms do not reach the tail at ρ = 1 (very large
variances), the 2-D trapezoid below instead. The small gaps: the divided-difference
quadrature below.

Quadrature (the trapezoid; the small gaps of the series)
--------------------------------------------------------
In the Cholesky form u = √q₁ z₁, v = √q₂(cos θ z₁ + sin θ z₂), z₁, z₂ ~ N(0, 1), by the
trapezoidal rule on [−8.5, 8.5]² with step h = 0.18/√max(q, 1) (the rule converges like
e^{−2πτ/h} for an integrand analytic in a strip of half-width τ: for tanh, poles at
±iπ/(2√q), τ = π/(2√q); measured: the 4th-order poles of sech⁴ make the step 0.25/√q
reach only ~1e-12, 0.18/√q reaches < 1e-15, halving it changes nothing). Gaps integrate
½(u − v)²·σ[u, v]², with u − v = (s + √q₂(1 − cos θ)) z₁ − √q₂ sin θ z₂ formed without
cancellation and the divided difference σ[u, v] = (σ(u) − σ(v))/(u − v) by 8-point
Gauss–Legendre on σ' where |u − v| < 1/4. ``quadrature_check`` halves h on the diagonal and
at ρ ∈ {−0.9, 0, 0.9, 0.999} for the largest variance and raises ValueError if the two
disagree beyond ``QUADRATURE_RTOL`` (or if more than ``MAX_NODES`` nodes a side are needed).

All functions take NumPy arrays that broadcast (q₁ as a column, q₂ as a row, c and D as
blocks) and return float64 arrays of the broadcast shape.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "GAP_RECOMPUTE_BELOW",
    "QUADRATURE_RTOL",
    "MAX_NODES",
    "angle_terms",
    "diagonal",
    "dual",
    "quadrature_dual",
    "mehler_dual",
    "mehler_coefficients",
    "mehler_levels",
    "quadrature_gaps",
    "gelu_gaps",
    "quadrature_check",
    "quadrature_step",
    "uses_quadrature",
]

#: Cheap gaps ½(P₁ + P₂) − M of GELU and quadrature activations are recomputed (GELU by
#: eqs. (6a)–(6b), the others by the divided-difference quadrature) where they are below
#: this fraction of ½(P₁ + P₂).
GAP_RECOMPUTE_BELOW = 1e-3
#: Agreement demanded of the quadrature with half its step (relative to the diagonal).
QUADRATURE_RTOL = 1e-13
#: Most trapezoid nodes per side (the cost is this squared per pair).
MAX_NODES = 1600
_CUTOFF = 8.5
_H_SCALE = 0.18
_GL_T, _GL_W = np.polynomial.legendre.leggauss(8)
_GL_T, _GL_W = 0.5 * (_GL_T + 1.0), 0.5 * _GL_W
_DD_DIRECT_ABOVE = 0.25


def _sqrt_diff(q1, q2):
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
    s = _sqrt_diff(q1, q2)
    r = np.sqrt(q1 * q2)
    with np.errstate(invalid="ignore", divide="ignore"):
        um = np.clip((D - 0.5 * s * s) / r, 0.0, 2.0)
        up = np.clip((r + c) / r, 0.0, 2.0)
    if not np.all(r > 0):
        um, up = np.where(r > 0, um, 0.0), np.where(r > 0, up, 2.0)
    theta = 2.0 * np.arctan2(np.sqrt(um), np.sqrt(up))
    return theta, um, up, np.sqrt(um * up), s, r


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
    det = _det(q1, q2, c, D)
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
    sQ = _sqrt_diff(Q1, Q2)
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


def _det(q1, q2, c, D):
    """q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c) ≥ 0, without cancellation (erf's B, GELU's δ²)."""
    s = _sqrt_diff(q1, q2)
    return np.maximum(D - 0.5 * s * s, 0.0) * np.maximum(np.sqrt(q1 * q2) + c, 0.0)


def _gelu_slopes(q1, q2, c, det):
    """(Ṁ, M̈) of GELU, eqs. (6)–(6a), at covariance c with det = q₁q₂ − c² given."""
    p1p2 = (1.0 + q1) * (1.0 + q2)
    d2 = 1.0 + q1 + q2 + det  # δ² = (1 + q₁)(1 + q₂) − c²
    d = np.sqrt(d2)
    two_pi = 2.0 * np.pi
    Md = 0.25 + np.arctan2(c, d) / two_pi + c / (two_pi * d) * ((2.0 + q1 + q2) / p1p2 + 1.0 / d2)
    Mdd = (((2.0 + q1 + 2.0 * q2 + det) * (2.0 + 2.0 * q1 + q2 + det) + 2.0 * c * c)
           / (two_pi * d2 * d2 * d))
    return Md, Mdd


def _gelu_terms(q1, q2, c, det):
    """(M, Ṁ) of GELU, eq. (6), at covariance c with det = q₁q₂ − c² given."""
    p1p2 = (1.0 + q1) * (1.0 + q2)
    d2 = 1.0 + q1 + q2 + det
    d = np.sqrt(d2)
    psi = np.arctan2(c, d)
    M = 0.25 * c + ((c * c + q1 * q2 * d2) / (p1p2 * d) + c * psi) / (2 * np.pi)
    Md = 0.25 + psi / (2 * np.pi) + c / (d * 2 * np.pi) * ((2.0 + q1 + q2) / p1p2 + 1.0 / d2)
    return M, Md


def _gelu(q1, q2, c, D):
    return _gelu_terms(q1, q2, c, _det(q1, q2, c, D))


#: GELU's gaps at perfect correlation (eq. (6b)) by the mixed-partial rule where the cheap
#: ½(P₁ + P₂) − M(q₁, q₂, √(q₁q₂)) is below this fraction of ½(P₁ + P₂) (and likewise Dσ').
_GELU_RHO1_BELOW = 1e-2
_GELU_PATH_N = 12


def _gelu_mixed(x, y):
    """(∂²m/∂x∂y, ∂²ṁ/∂x∂y) = (E[z²σ'(xz)σ'(yz)], E[z²σ''(xz)σ''(yz)]), z ~ N(0, 1), for
    m(x, y) = E[σ(xz)σ(yz)] (eq. (6b)); x, y ≥ 0."""
    A, B = 1.0 + x * x, 1.0 + y * y
    d2 = 1.0 + x * x + y * y
    d = np.sqrt(d2)
    xy = x * y
    two_pi = 2.0 * np.pi
    d3 = d2 * d
    m = (0.25 + np.arctan2(xy, d) / two_pi
         + xy / two_pi * ((1.0 / A + 1.0 / B) / d + (2.0 / (A * A) + 2.0 / (B * B)) / d
                          + (1.0 / A + 1.0 / B) / d3 + 3.0 / (d3 * d2)))
    md = (4.0 * d2 * d2 - 6.0 * (x * x + y * y) * d2 + 15.0 * xy * xy) / (two_pi * d3 * d2 * d2)
    return m, md


def _gelu_gaps_at_one(q1, q2, mean, meand):
    """(Dσ, Dσ') of GELU at ρ = 1 (v = √(q₂/q₁)u), eq. (6b): the cheap difference of closed
    forms where it is at least ``_GELU_RHO1_BELOW`` of the mean, else ½s² × the mean of the
    mixed partials over [√q₂, √q₁]² by 8-point Gauss–Legendre on m × m panels, m = 2^k ≤ 16
    with |s|/m ≤ 0.3√(1 + min(q₁, q₂)) (the cheap difference where m would exceed 16);
    exact 0 for q₁ = q₂."""
    r = np.sqrt(q1 * q2)
    M1, Md1 = _gelu_terms(q1, q2, r, np.zeros_like(r))
    g, gd = mean - M1, meand - Md1
    s = _sqrt_diff(q1, q2)
    with np.errstate(divide="ignore"):
        ratio = np.abs(s) / (0.3 * np.sqrt(1.0 + np.minimum(q1, q2)))
        k = np.ceil(np.log2(np.maximum(ratio, 1.0))).astype(int)
    low, lowd = g < _GELU_RHO1_BELOW * mean, gd < _GELU_RHO1_BELOW * meand
    g, gd = g.copy(), gd.copy()
    for level in np.unique(k[(low | lowd) & (k <= 4)]):
        pick = (low | lowd) & (k == level)
        m = 2 ** int(level)
        t = ((np.arange(m)[:, None] + _GL_T[None, :]) / m).ravel()
        w = np.tile(_GL_W / m, m)
        w2 = w[:, None] * w[None, :]
        step = max(1, 2_000_000 // w2.size)
        for i in np.array_split(np.flatnonzero(pick), max(1, -(-int(pick.sum()) // step))):
            si, bi = s[i][:, None, None], np.sqrt(q2[i])[:, None, None]
            mm, mmd = _gelu_mixed(bi + si * t[:, None], bi + si * t[None, :])
            half = 0.5 * s[i] ** 2
            g[i] = np.where(low[i], half * (mm * w2).sum((1, 2)), g[i])
            gd[i] = np.where(lowd[i], half * (mmd * w2).sum((1, 2)), gd[i])
    return np.maximum(g, 0.0), np.maximum(gd, 0.0)


@functools.lru_cache(maxsize=64)
def _graded_rule(levels):
    """(τ, ω): composite ``_GELU_PATH_N``-point Gauss–Legendre on [0, 1] with the panels
    [0, 2^−J], [2^−J, 2^{1−J}], …, [½, 1] (J = ``levels``). Cached, read-only."""
    t, w = np.polynomial.legendre.leggauss(_GELU_PATH_N)
    t, w = 0.5 * (t + 1.0), 0.5 * w
    ends = [0.0] + [2.0 ** -j for j in range(levels, -1, -1)]
    tau = np.concatenate([lo + (hi - lo) * t for lo, hi in zip(ends[:-1], ends[1:])])
    omega = np.concatenate([(hi - lo) * w for lo, hi in zip(ends[:-1], ends[1:])])
    tau.setflags(write=False)
    omega.setflags(write=False)
    return tau, omega


def _gelu_path(q1, q2, r, L, budget=2_000_000):
    """(∫ Ṁ dc', ∫ M̈ dc') over c' ∈ [r − L, r] at fixed q₁, q₂ (eq. (6a)), in t = r − c' with
    q₁q₂ − c'² = t(2r − t): the graded Gauss–Legendre rule of ``gelu_gaps``."""
    cstar = np.sqrt((1.0 + q1) * (1.0 + q2))
    d0 = (1.0 + q1 + q2) / (r + cstar)  # t = −d0: δ² = 0 (≥ 1)
    dL = (r - L) + cstar  # t = L + dL: the other zero of δ² (dL ≥ d0)
    one = L <= d0
    h = np.where(one, L, 0.5 * L)
    with np.errstate(divide="ignore"):
        JL = np.where(one, 0, np.ceil(np.log2(np.maximum(h / d0, 1.0)))).astype(int)
        JR = np.where(one, -1, np.ceil(np.log2(np.maximum(h / dL, 1.0)))).astype(int)
    idx = np.arange(L.size)
    # jobs: t = base + sign·h·τ with weights h·ω, on the rule of J levels
    jobs = [(idx, np.zeros(L.size), 1.0, JL), (idx[~one], L[~one], -1.0, JR[~one])]
    out, outd = np.zeros(L.size), np.zeros(L.size)
    for sel, base, sign, J in jobs:
        for level in np.unique(J):
            pick = J == level
            i, b0 = sel[pick], base[pick]
            tau, omega = _graded_rule(int(level))
            step = max(1, budget // tau.size)
            for st in range(0, i.size, step):
                ii, bb = i[st:st + step], b0[st:st + step][:, None]
                hh = h[ii][:, None]
                t = bb + sign * hh * tau
                rr = r[ii][:, None]
                Md, Mdd = _gelu_slopes(q1[ii][:, None], q2[ii][:, None], rr - t,
                                       t * (2.0 * rr - t))
                out += np.bincount(ii, (Md @ omega) * hh[:, 0], minlength=L.size)
                outd += np.bincount(ii, (Mdd @ omega) * hh[:, 0], minlength=L.size)
    return out, outd


def gelu_gaps(q1, q2, c, D):
    """(Dσ, Dσ') of GELU by eqs. (6a)–(6b): the gaps at ρ = 1 plus Price's path integrals of
    Ṁ and M̈ from c to √(q₁q₂), every term non-negative (1-D arrays of pairs)."""
    q1, q2, c, D = (np.asarray(a, np.float64) for a in (q1, q2, c, D))
    P1, Pd1 = _gelu_terms(q1, q1, q1, np.zeros_like(q1))
    P2, Pd2 = _gelu_terms(q2, q2, q2, np.zeros_like(q2))
    g1, gd1 = _gelu_gaps_at_one(q1, q2, 0.5 * (P1 + P2), 0.5 * (Pd1 + Pd2))
    _, um, _, _, _, r = angle_terms(q1, q2, c, D)
    L = um * r  # √(q₁q₂) − c ≥ 0
    I, Id = _gelu_path(q1, q2, r, L)
    return g1 + I, gd1 + Id


def diagonal(act, q, h_scale=_H_SCALE):
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
        return _gelu_terms(q, q, q, np.zeros_like(q))
    z, w = _nodes(quadrature_step(q, h_scale))
    u = np.sqrt(q)[..., None] * z
    return (w * act(u) ** 2).sum(-1), (w * act.derivative(u) ** 2).sum(-1)


def uses_quadrature(act) -> bool:
    """True for activations whose kernels need quadrature: all but the leaky family, erf,
    sin and GELU (closed forms, eqs. (3)–(6b))."""
    return not (act.is_leaky or (not hasattr(act, "fn") and act.name in ("erf", "sin", "gelu")))


def quadrature_step(q, h_scale=_H_SCALE) -> float:
    """Trapezoid step h = h_scale/√max(q_max, 1) for variances ``q``; ValueError if more than
    ``MAX_NODES`` nodes a side would be needed."""
    qmax = float(np.max(q)) if np.size(q) else 1.0
    h = h_scale / math.sqrt(max(qmax, 1.0))
    if 2 * _CUTOFF / h + 1 > MAX_NODES:
        raise ValueError(
            f"quadrature: variance {qmax:.3g} needs more than {MAX_NODES} nodes a side for "
            f"relative accuracy {QUADRATURE_RTOL:g}; reduce depth or w_std"
        )
    return h


def _nodes(h):
    k = np.arange(-math.floor(_CUTOFF / h), math.floor(_CUTOFF / h) + 1)
    z = k * h
    w = h * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return z, w / w.sum()


def _flat(*arrays):
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    return shape, [np.broadcast_to(np.asarray(a, np.float64), shape).ravel() for a in arrays]


def _pair_chunks(n, nodes, budget=2_000_000):
    step = max(1, budget // max(nodes, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


MEHLER_MAX_TERMS = 3000
_MEHLER_TAIL = 1e-14


@functools.lru_cache(maxsize=8)
def _weighted_hermite_table(h, K):
    """(z, W) for the trapezoid nodes z_j ≥ 0 of step h: W[j, k] = m_j w_j h_k(z_j), k = 0 … K,
    m_j = 1 at z = 0 and 2 elsewhere: the half-grid weights of an integrand even in z (the
    nodes are symmetric, so an odd σ has exactly odd coefficients and the sum over ±z_j is
    twice the one over z_j). Cached, read-only."""
    z, w = _nodes(h)
    half = z.size // 2  # z[half] = 0
    z, w = z[half:], w[half:] * np.where(np.arange(z.size - half) == 0, 1.0, 2.0)
    H = _hermite_table(z, K) * w[:, None]
    parts = (np.ascontiguousarray(H[:, 0::2]), np.ascontiguousarray(H[:, 1::2]))
    for part in parts:
        part.setflags(write=False)
    return z, parts


def _hermite_table(z, K):
    """h_k(z) = He_k(z)/√k! for k = 0 … K (orthonormal under N(0, 1)), (len(z), K + 1)."""
    H = np.empty((z.size, K + 1))
    H[:, 0] = 1.0
    if K >= 1:
        H[:, 1] = z
    for k in range(1, K):
        H[:, k + 1] = (z * H[:, k] - math.sqrt(k) * H[:, k - 1]) / math.sqrt(k + 1)
    return H


def _coefficient_table(f, z, parts, K):
    """(a, p): a[:, k] = Σ_j w_j f(±z_j) h_k(±z_j) over the whole symmetric grid, from f on
    both halves (f_plus at z_j ≥ 0, f_minus at −z_j); p = 1 if f is exactly odd on the grid
    (a_k = 0 for even k, exactly), 0 if exactly even, else None."""
    f_plus, f_minus = f
    out = np.zeros((f_plus.shape[0], K + 1))
    even_part = 0.5 * (f_plus + f_minus)  # symmetric sums: h_k(−z) = (−1)^k h_k(z)
    odd_part = 0.5 * (f_plus - f_minus)
    parity = 1 if not np.any(even_part) else 0 if not np.any(odd_part) else None
    if parity != 1:
        out[:, 0::2] = even_part @ parts[0]
    if parity != 0:
        out[:, 1::2] = odd_part @ parts[1]
    return out, parity


def mehler_coefficients(act, q, K=MEHLER_MAX_TERMS, parities=False):
    """(a, ȧ): a_k(q) = E[σ(√q z) h_k(z)], ȧ_k(q) = E[σ'(√q z) h_k(z)], (len(q), K + 1),
    by the 1-D trapezoidal rule (step ≤ 0.02: ≥ 4 nodes per oscillation of h_k up to k = 3000,
    error ~e^{−2πτ/h + τ√(2k)} ≪ 1e-16 for τ ≤ 1), split into σ's even and odd parts on the
    symmetric grid (an odd σ such as tanh: exactly zero even a_k, a quarter of the work).
    ``parities=True`` adds (p, ṗ): 1 for tables of odd k only, 0 for even only, else None."""
    q = np.asarray(q, dtype=np.float64).ravel()
    h = min(0.02, quadrature_step(q))
    z, parts = _weighted_hermite_table(h, K)
    u = np.sqrt(q)[:, None] * z[None, :]
    a, p = _coefficient_table((act(u), act(-u)), z, parts, K)
    ad, pd = _coefficient_table((act.derivative(u), act.derivative(-u)), z, parts, K)
    return (a, ad, (p, pd)) if parities else (a, ad)


def _relative_tails(tables):
    """t_k = max over the tables' rows of Σ_{j≥k} a_j² / Σ_j a_j² (k = 0 … K), non-increasing."""
    t = None
    for a in tables:
        sq = a * a
        tail = np.cumsum(sq[:, ::-1], axis=1)[:, ::-1]  # tail[:, k] = Σ_{j≥k} a_j²
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(tail[:, :1] > 0, tail / np.where(tail[:, :1] > 0, tail[:, :1], 1.0), 0.0)
        rel = rel.max(axis=0)
        t = rel if t is None else np.maximum(t, rel)
    return t


def mehler_levels(tails, tol=_MEHLER_TAIL):
    """Truncation levels of Mehler's series by |ρ|: (K_b, r_b) with K_b ascending and r_b the
    running maximum of (tol/t_{K_b})^{1/K_b}. A pair goes to the first level with |ρ| ≤ r_b;
    so r_{b−1} < |ρ| ≤ r_b, where r_b is level b's own radius (a level whose radius is an
    earlier one's gets no pairs), and |Σ_{k≥K_b} a_k(q₁)a_k(q₂)ρ^k| ≤ |ρ|^{K_b} t_{K_b}
    √(P₁P₂) ≤ tol·√(P₁P₂) (Cauchy–Schwarz, t the relative tails of ``_relative_tails``).
    The last level covers |ρ| ≤ 1."""
    full = int(np.argmax(tails <= tol))
    Ks = [k for k in (8, 16, 32, 64, 128, 256, 512, 1024, 2048) if k < full] + [full]
    radii, best = [], 0.0
    for k in Ks[:-1]:
        r = 1.0 if tails[k] <= tol else (tol / tails[k]) ** (1.0 / k)
        best = max(best, r)
        radii.append(best)
    radii.append(np.inf)
    return np.array(Ks), np.array(radii)


def _horner_block(R1, R2, rho, K, out, parity=None):
    """out = Σ_{k≤K} R1[k] R2[k] ρ^k by Horner's rule, R1, R2 (K + 1, …) broadcasting to ρ;
    ``parity`` p ∈ {0, 1}: only the terms k ≡ p (mod 2) (the others are zero), in ρ²."""
    ks = range(K, -1, -1) if parity is None else range(K - ((K - parity) % 2), -1, -2)
    ks = list(ks)
    x = rho if parity is None else rho * rho
    tmp = np.empty_like(out)
    np.multiply(R1[ks[0]], R2[ks[0]], out=out)
    for k in ks[1:]:
        out *= x
        np.multiply(R1[k], R2[k], out=tmp)
        out += tmp
    if parity == 1:
        out *= rho
    return out


def _horner_pairs(A1, A2, i1, i2, rho, K, parity=None, budget=2_000_000):
    """Σ_{k≤K} A1[i1, k] A2[i2, k] ρ^k for a list of pairs (unique-variance indices i1, i2);
    ``parity`` as in ``_horner_block``."""
    ks = np.arange(K + 1) if parity is None else np.arange(parity, K + 1, 2)
    out = np.empty(rho.size)
    step = max(1, budget // ks.size)
    for s in range(0, rho.size, step):
        sl = slice(s, min(rho.size, s + step))
        C = A1.T[ks[:, None], i1[sl]] * A2.T[ks[:, None], i2[sl]]  # (terms, pairs)
        r = rho[sl]
        x = r if parity is None else r * r
        acc = C[-1].copy()
        for k in range(ks.size - 2, -1, -1):
            acc *= x
            acc += C[k]
        if parity == 1:
            acc *= r
        out[sl] = acc
    return out


def mehler_dual(act, q1, q2, c):
    """(M, Ṁ) by Mehler's formula E[σ(u)σ(v)] = Σ_k a_k(q₁) a_k(q₂) ρ^k (ρ = c/√(q₁q₂)),
    each pair's sum truncated at the first level K of ``mehler_levels`` whose radius covers
    its |ρ|, so the error is below 1e-14 relative to √(P₁P₂) (and √(Ṗ₁Ṗ₂)) for every pair.
    The series of the pairs at |ρ| = 1 needs Σ_{k≥K} a_k² ≤ 1e-14·Σ a_k² for every variance
    (tanh: K ≈ 350 at q = 2.25, 1400 at q = 9, 2400 at q = 16); None if 2950 terms do not
    reach that (the trapezoid instead). The bulk of the pairs (|ρ| ≤ ½ on CIFAR-10 after a
    layer: K ≈ 30) takes one Horner pass over the whole block at the level that minimises the
    work, the rest a pass over their own list at their own level."""
    q1, q2, c = (np.asarray(a, np.float64) for a in (q1, q2, c))
    shape = np.broadcast_shapes(q1.shape, q2.shape, c.shape)
    u1, inv1 = np.unique(q1, return_inverse=True)
    u2, inv2 = np.unique(q2, return_inverse=True)
    inv1, inv2 = np.reshape(inv1, q1.shape), np.reshape(inv2, q2.shape)
    for kmax in (300, 1000, MEHLER_MAX_TERMS):  # tanh: K ≈ 130 at q ≈ 0.8, 1400 at q ≈ 8
        a1, ad1, p1 = mehler_coefficients(act, u1, kmax, parities=True)
        same = np.array_equal(u1, u2)
        a2, ad2, p2 = (a1, ad1, p1) if same else mehler_coefficients(act, u2, kmax, parities=True)
        tails = _relative_tails((a1, ad1) if same else (a1, ad1, a2, ad2))
        if tails[-50] <= _MEHLER_TAIL:
            break
    else:
        return None  # not converged well inside the table: the trapezoid instead
    Ks, radii = mehler_levels(tails)
    parity = [p if p == pp else None for p, pp in zip(p1, p2)]
    r = np.sqrt(q1 * q2)
    rho = np.clip(np.where(r > 0, c / np.where(r > 0, r, 1.0), 1.0), -1.0, 1.0)
    rho = np.array(np.broadcast_to(rho, shape))  # contiguous, and 0-d stays 0-d
    level = np.searchsorted(radii, np.abs(rho), side="left")
    counts = np.bincount(level.ravel(), minlength=Ks.size)
    # work of a bulk level b: the whole block at K_b, the pairs above it at their own (a pass
    # over a list costs about twice a pass over the block)
    above = np.concatenate([np.cumsum((counts * Ks)[::-1])[::-1][1:], [0]])
    bulk = int(np.argmin(rho.size * Ks + 2 * above))
    K0 = int(Ks[bulk])
    rest = []  # the pairs above the bulk level: (level, their indices, variances' rows, ρ)
    for b in range(bulk + 1, Ks.size):
        if counts[b]:
            sel = np.flatnonzero(level == b)
            at = np.unravel_index(sel, shape)
            rest.append((int(Ks[b]), sel, np.broadcast_to(inv1, shape)[at],
                         np.broadcast_to(inv2, shape)[at], rho.ravel()[sel]))
    out = []
    for A1, A2, par in ((a1, a2, parity[0]), (ad1, ad2, parity[1])):
        R1 = np.ascontiguousarray(np.moveaxis(A1[:, : K0 + 1][inv1], -1, 0))  # (K0+1,) + q1.shape
        R2 = np.ascontiguousarray(np.moveaxis(A2[:, : K0 + 1][inv2], -1, 0))
        acc = _horner_block(R1, R2, rho, K0, np.empty(shape), par)
        flat = acc.reshape(-1)
        for K, sel, i1, i2, r in rest:
            flat[sel] = _horner_pairs(A1, A2, i1, i2, r, K, par)
        out.append(acc)
    return out[0], out[1]


def quadrature_dual(act, q1, q2, c, D, h_scale=_H_SCALE):
    """(M, Ṁ) of eqs. (1)–(2) by the 2-D trapezoidal rule in the Cholesky form."""
    shape, (q1, q2, c, D) = _flat(q1, q2, c, D)
    h = quadrature_step(np.concatenate([q1, q2]), h_scale)
    z, w = _nodes(h)
    _, _, _, sin_t, _, r = angle_terms(q1, q2, c, D)
    cos_t = np.where(r > 0, c / np.where(r > 0, r, 1.0), 1.0)
    M, Md = np.empty(q1.size), np.empty(q1.size)
    for sl in _pair_chunks(q1.size, z.size):
        a1, a2 = np.sqrt(q1[sl])[:, None], np.sqrt(q2[sl])[:, None]
        ct, st = cos_t[sl][:, None], sin_t[sl][:, None]
        m = np.zeros(a1.shape[0])
        md = np.zeros(a1.shape[0])
        for z1, w1 in zip(z, w):
            u = a1[:, 0] * z1
            v = a2 * (ct * z1 + st * z)
            m += w1 * act(u) * (act(v) @ w)
            md += w1 * act.derivative(u) * (act.derivative(v) @ w)
        M[sl], Md[sl] = m, md
    return M.reshape(shape), Md.reshape(shape)


def _divided(f, fd, u, v, h):
    """(f(u) − f(v))/(u − v) with h = u − v given: direct for |h| ≥ 1/4, else Gauss–Legendre
    on f' over [v, u]."""
    big = np.abs(h) >= _DD_DIRECT_ABOVE
    out = np.zeros(np.broadcast_shapes(u.shape, v.shape, h.shape))
    for t, wt in zip(_GL_T, _GL_W):
        out += wt * fd(v + t * h)
    if np.any(big):
        direct = (f(u) - f(v)) / np.where(big, h, 1.0)
        out = np.where(big, direct, out)
    return out


def quadrature_gaps(act, q1, q2, c, D, h_scale=_H_SCALE):
    """(Dσ, Dσ') of eqs. (1)–(2) as ½E[(u − v)² σ[u, v]²], u − v without cancellation."""
    shape, (q1, q2, c, D) = _flat(q1, q2, c, D)
    if q1.size == 0:
        return np.zeros(shape), np.zeros(shape)
    h = quadrature_step(np.concatenate([q1, q2]), h_scale)
    z, w = _nodes(h)
    _, um, _, sin_t, s, r = angle_terms(q1, q2, c, D)
    cos_t = 1.0 - um
    G, Gd = np.empty(q1.size), np.empty(q1.size)
    for sl in _pair_chunks(q1.size, 8 * z.size):
        a1, a2 = np.sqrt(q1[sl])[:, None], np.sqrt(q2[sl])[:, None]
        ct, st = cos_t[sl][:, None], sin_t[sl][:, None]
        ca = s[sl][:, None] + a2 * um[sl][:, None]  # coefficient of z₁ in u − v
        g = np.zeros(a1.shape[0])
        gd = np.zeros(a1.shape[0])
        for z1, w1 in zip(z, w):
            u = a1 * z1
            v = a2 * (ct * z1 + st * z)
            hh = ca * z1 - a2 * st * z
            dd = _divided(act, act.derivative, u, v, hh)
            ddd = _divided(act.derivative, act.second_derivative, u, v, hh)
            g += w1 * ((hh * dd) ** 2 @ w)
            gd += w1 * ((hh * ddd) ** 2 @ w)
        G[sl], Gd[sl] = 0.5 * g, 0.5 * gd
    return G.reshape(shape), Gd.reshape(shape)


def quadrature_check(act, q, where: str, h_scale=_H_SCALE):
    """Raise ValueError (naming ``where``) unless the quadrature with step h and h/2 agree to
    ``QUADRATURE_RTOL`` on the diagonal moments at every variance in ``q`` and on (M, Ṁ) at
    ρ ∈ {−0.9, 0, 0.9, 0.999} for the largest variance."""
    q = np.unique(np.asarray(q, dtype=np.float64).ravel())
    try:
        quadrature_step(q, h_scale / 2)
        P1, Pd1 = diagonal(act, q, h_scale)
        P2, Pd2 = diagonal(act, q, h_scale / 2)
        qm = np.full(4, q.max())
        rho = np.array([-0.9, 0.0, 0.9, 0.999])
        cc = rho * qm
        DD = qm - cc
        M1, Md1 = quadrature_dual(act, qm, qm, cc, DD, h_scale)
        M2, Md2 = quadrature_dual(act, qm, qm, cc, DD, h_scale / 2)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    scale, scaled = np.maximum(P2, 1e-300), np.maximum(Pd2, 1e-300)
    errs = [np.max(np.abs(P1 - P2) / scale), np.max(np.abs(Pd1 - Pd2) / scaled),
            np.max(np.abs(M1 - M2)) / scale.max(), np.max(np.abs(Md1 - Md2)) / scaled.max()]
    worst = max(float(e) for e in errs)
    if not worst <= QUADRATURE_RTOL:
        raise ValueError(
            f"{where}: the quadrature of activation {act.name!r} does not reach relative "
            f"accuracy {QUADRATURE_RTOL:g} (step halving changes it by {worst:.2e}) at "
            f"variances up to {q.max():.3g}"
        )
    return worst


def dual(act, q1, q2, c, D, gaps=True, h_scale=_H_SCALE):
    """(M, Dσ, Ṁ, Dσ') of eqs. (1)–(2) for any activation: closed forms (3)–(6) where they
    exist, the quadrature otherwise; gaps below ``GAP_RECOMPUTE_BELOW`` of the diagonal by
    eqs. (6a)–(6b) for GELU (``gelu_gaps``), by the divided-difference quadrature for the
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
        M, Md = _gelu(q1, q2, c, D)
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
