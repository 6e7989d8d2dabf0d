"""erf, σ(z) = erf(z), and its dual kernels in closed form (Williams 1998).

Notation of ``ntkcond.activations.base`` eqs. (1)–(2). With Q = q + ½, r = c/√(Q₁Q₂),
r_i = q_i/Q_i, γ = arccos r, γ_i = arccos r_i (erf(z) = E[sign(z + e)], e ~ N(0, ½)):

    M  = (2/π) arcsin r = 1 − 2γ/π,   P_i = 1 − 2γ_i/π,   Dσ = [(γ − γ₁) + (γ − γ₂)]/π,
    Ṁ  = (2/π)/√B,   Ṗ_i = (2/π)/√(q_i + ¼),   B = q₁q₂ − c² + ½(q₁ + q₂) + ¼,          (4)

γ − γ_i = atan2(r_i sin γ − r sin γ_i, r r_i + sin γ sin γ_i) with the sine's numerator as
(r_i − r)(r_i + r)/(r_i sin γ + r sin γ_i) for r ≥ 0, r₁ − r = [D√Q₁ + (q₁ − q₂)(½√Q₁ −
q₁/(√Q₁ + √Q₂))]/(Q₁√Q₂); Dσ' = (1/π)Σ_i (B − A_i)/(√(A_iB)(√A_i + √B)), A_i = q_i + ¼,
B − A₁ = q₁q₂ − c² + ½(q₂ − q₁), q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c). These exact gap forms
are used where the cheap ½(P₁ + P₂) − M is below ``GAP_RECOMPUTE_BELOW`` of ½(P₁ + P₂).
neural-tangents' ``Erf(a, b, c)`` = a·erf(b·z) + c is ``Affine(ERF, a, b, c)``.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar

import numpy as np

from ._bivariate import angle_terms, covariance_det, sqrt_diff
from .base import GAP_RECOMPUTE_BELOW, ActivationFunction, add

__all__ = ["Erf", "ERF"]


@dataclasses.dataclass(frozen=True)
class Erf(ActivationFunction):
    """σ(z) = erf(z), eq. (4)."""

    closed_form: ClassVar[bool] = True
    zero_mean: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return "erf"

    def numpy(self, z):
        from scipy.special import erf

        return erf(z)

    def derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        return 2.0 / math.sqrt(math.pi) * np.exp(-z * z)

    def second_derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        return -4.0 / math.sqrt(math.pi) * z * np.exp(-z * z)

    @property
    def jax_fn(self) -> Callable:
        import jax

        return jax.scipy.special.erf

    def diagonal(self, q, h_scale=None):
        """(P, Ṗ) of eq. (4)."""
        q = np.asarray(q, dtype=np.float64)
        return (2.0 / np.pi) * np.arcsin(q / (q + 0.5)), (2.0 / np.pi) / np.sqrt(q + 0.25)

    def dual(self, q1, q2, c, D, gaps=True, h_scale=None):
        """(M, Dσ, Ṁ, Dσ') of eq. (4); cancellation-free gaps where the cheap ones lose
        digits."""
        q1, q2, c, D = (np.asarray(x, dtype=np.float64) for x in (q1, q2, c, D))
        Q1, Q2 = q1 + 0.5, q2 + 0.5
        RQ = np.sqrt(Q1 * Q2)
        M = (2.0 / np.pi) * np.arcsin(c / RQ)  # r ≤ q/(q + ½) < 1: well conditioned
        det = covariance_det(q1, q2, c, D)
        B = det + 0.5 * (q1 + q2) + 0.25
        Md = (2.0 / np.pi) / np.sqrt(B)
        P1, Pd1 = self.diagonal(q1)
        P2, Pd2 = self.diagonal(q2)
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


ERF = Erf()
add("erf", ERF)
