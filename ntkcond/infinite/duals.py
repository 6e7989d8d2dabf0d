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
δ² = (1 + q₁)(1 + q₂) − c² and ψ = atan2(c, δ),

    M = c/4 + [(c² + q₁q₂δ²)/((1 + q₁)(1 + q₂)δ) + cψ]/(2π),
    Ṁ = ¼ + ψ/(2π) + c[1/δ² + (1 − q₁q₂)/((1 + q₁)(1 + q₂)) + 1]/(2πδ),                (6)

and its gaps ½(P₁ + P₂) − M where that is at least ``GAP_RECOMPUTE_BELOW`` of ½(P₁ + P₂)
(relative error < 1e-13 there), else by quadrature as below.

Quadrature (tanh, softplus, SiLU, callables; the small gaps of GELU)
--------------------------------------------------------------------
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
    "quadrature_gaps",
    "quadrature_check",
    "quadrature_step",
    "uses_quadrature",
]

#: Cheap gaps ½(P₁ + P₂) − M of GELU and quadrature activations are recomputed by the
#: divided-difference quadrature where they are below this fraction of ½(P₁ + P₂).
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
    sq = _sqrt_diff(q1, q2)
    rq = np.sqrt(q1 * q2)
    det = np.maximum(D - 0.5 * sq * sq, 0.0) * (rq + c)  # q₁q₂ − c² ≥ 0
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


def _gelu(q1, q2, c):
    p1, p2 = 1.0 + q1, 1.0 + q2
    d2 = p1 * p2 - c * c
    d = np.sqrt(d2)
    psi = np.arctan2(c, d)
    M = 0.25 * c + ((c * c + q1 * q2 * d2) / (p1 * p2 * d) + c * psi) / (2 * np.pi)
    Md = 0.25 + psi / (2 * np.pi) + c / (d * 2 * np.pi) * (1 / d2 + (1 - q1 * q2) / (p1 * p2) + 1)
    return M, Md


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
        M, Md = _gelu(q, q, q)
        return M, Md
    z, w = _nodes(quadrature_step(q, h_scale))
    u = np.sqrt(q)[..., None] * z
    return (w * act(u) ** 2).sum(-1), (w * act.derivative(u) ** 2).sum(-1)


def uses_quadrature(act) -> bool:
    """True for activations whose kernels need quadrature: all but the leaky family, erf,
    sin and GELU (whose small gaps do, ``dual``)."""
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
    """(z, w_j h_k(z_j)) for the trapezoid nodes of step h, k = 0 … K (cached: read-only)."""
    z, w = _nodes(h)
    H = _hermite_table(z, K) * w[:, None]
    H.setflags(write=False)
    return z, H


def _hermite_table(z, K):
    """h_k(z) = He_k(z)/√k! for k = 0 … K (orthonormal under N(0, 1)), (len(z), K + 1)."""
    H = np.empty((z.size, K + 1))
    H[:, 0] = 1.0
    if K >= 1:
        H[:, 1] = z
    for k in range(1, K):
        H[:, k + 1] = (z * H[:, k] - math.sqrt(k) * H[:, k - 1]) / math.sqrt(k + 1)
    return H


def mehler_coefficients(act, q, K=MEHLER_MAX_TERMS):
    """(a, ȧ): a_k(q) = E[σ(√q z) h_k(z)], ȧ_k(q) = E[σ'(√q z) h_k(z)], (len(q), K + 1),
    by the 1-D trapezoidal rule (step ≤ 0.02: ≥ 4 nodes per oscillation of h_k up to k = 3000,
    error ~e^{−2πτ/h + τ√(2k)} ≪ 1e-16 for τ ≤ 1)."""
    q = np.asarray(q, dtype=np.float64).ravel()
    h = min(0.02, quadrature_step(q))
    z, H = _weighted_hermite_table(h, K)
    u = np.sqrt(q)[:, None] * z[None, :]
    return act(u) @ H, act.derivative(u) @ H


def mehler_dual(act, q1, q2, c):
    """(M, Ṁ) by Mehler's formula E[σ(u)σ(v)] = Σ_k a_k(q₁) a_k(q₂) ρ^k (ρ = c/√(q₁q₂)),
    truncated where Σ_{k≥K} a_k² ≤ 1e-14·Σ a_k² for every variance (so the error is below
    1e-14 relative to √(P₁P₂) for all ρ ∈ [−1, 1], by Cauchy–Schwarz); None if 2950 terms do
    not reach that (tanh: K ≈ 350 at q = 2.25, 1400 at q = 9, 2400 at q = 16)."""
    q1, q2, c = (np.asarray(a, np.float64) for a in (q1, q2, c))
    shape = np.broadcast_shapes(q1.shape, q2.shape, c.shape)
    u1, inv1 = np.unique(q1, return_inverse=True)
    u2, inv2 = np.unique(q2, return_inverse=True)
    for kmax in (600, MEHLER_MAX_TERMS):  # most nets converge in 600 terms; tanh at q ≈ 8: ~1400
        a1, ad1 = mehler_coefficients(act, u1, kmax)
        a2, ad2 = (a1, ad1) if np.array_equal(u1, u2) else mehler_coefficients(act, u2, kmax)
        Ks = []
        for a in (a1, ad1, a2, ad2):
            tail = np.cumsum((a * a)[:, ::-1], axis=1)[:, ::-1]  # tail[:, k] = Σ_{j≥k} a_j²
            ok = np.all(tail <= _MEHLER_TAIL * tail[:, :1], axis=0)
            Ks.append(int(np.argmax(ok)) if ok[-50] else None)
        if None not in Ks:
            break
    else:
        return None  # not converged well inside the table: the trapezoid instead
    K = max(Ks)
    r = np.sqrt(q1 * q2)
    rho = np.clip(np.where(r > 0, c / np.where(r > 0, r, 1.0), 1.0), -1.0, 1.0)
    rho = np.broadcast_to(rho, shape)
    out = []
    for A1, A2 in ((a1, a2), (ad1, ad2)):
        R1 = A1[np.reshape(inv1, q1.shape)]  # q1.shape + (K_max + 1,)
        R2 = A2[np.reshape(inv2, q2.shape)]
        acc = R1[..., K] * R2[..., K] + np.zeros(shape)
        for k in range(K - 1, -1, -1):
            acc *= rho
            acc += R1[..., k] * R2[..., k]
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
    the divided-difference quadrature (pairs with D = 0 and q₁ = q₂ have exact 0 gaps).
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
        M, Md = _gelu(q1, q2, c)
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
        gap[small], gapd[small] = quadrature_gaps(act, *b, h_scale=h_scale)
    return M, np.maximum(gap, 0.0), Md, np.maximum(gapd, 0.0)
