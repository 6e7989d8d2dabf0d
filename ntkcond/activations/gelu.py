"""GELU, σ(z) = zΦ(z), and its dual kernels: closed forms (6) and the small gaps by Price's
theorem (6a)–(6b). Also GELU's tanh approximation (``GeluTanh``: neural-tangents'
``Gelu(approximate=True)``, jax's ``gelu(approximate=True)``), whose kernels are its own
(Mehler's series), not those of exact GELU.

Notation as in ``ntkcond.activations.base`` (eqs. (1)–(2)) and ``ntkcond.activations._bivariate``:
a centred Gaussian pair (u, v) with variances q₁, q₂, covariance c and gap D = ½(q₁ + q₂) − c;
M = E[σ(u)σ(v)], Ṁ = E[σ'(u)σ'(v)], P = E[σ(u)²], Dσ = ½(P₁ + P₂) − M, Dσ' likewise, and
s = √q₁ − √q₂.

GELU σ(z) = zΦ(z) (Tsuchida et al. 2020, arXiv 2002.08517; neural-tangents' ``Gelu``): with
δ² = (1 + q₁)(1 + q₂) − c² = 1 + q₁ + q₂ + det, det = q₁q₂ − c² = (D − ½s²)(√(q₁q₂) + c)
(no cancellation) and ψ = atan2(c, δ),

    M = c/4 + [(c² + q₁q₂δ²)/((1 + q₁)(1 + q₂)δ) + cψ]/(2π),
    Ṁ = ¼ + ψ/(2π) + c[(2 + q₁ + q₂)/((1 + q₁)(1 + q₂)) + 1/δ²]/(2πδ),                  (6)

and its gaps ½(P₁ + P₂) − M where that is at least
``ntkcond.activations.base.GAP_RECOMPUTE_BELOW`` of ½(P₁ + P₂)
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
``ntkcond.network`` do.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, ClassVar

import numpy as np

from ._bivariate import GL8_NODES, GL8_WEIGHTS, angle_terms, covariance_det, sqrt_diff
from .base import ActivationFunction, add

__all__ = ["Gelu", "GeluTanh", "GELU", "gelu_terms", "gelu_slopes", "gelu_mixed",
           "gelu_diagonal", "gelu_dual", "gelu_gaps"]


def gelu_slopes(q1, q2, c, det):
    """(Ṁ, M̈) of GELU, eqs. (6)–(6a), at covariance c with det = q₁q₂ − c² given."""
    p1p2 = (1.0 + q1) * (1.0 + q2)
    d2 = 1.0 + q1 + q2 + det  # δ² = (1 + q₁)(1 + q₂) − c²
    d = np.sqrt(d2)
    two_pi = 2.0 * np.pi
    Md = 0.25 + np.arctan2(c, d) / two_pi + c / (two_pi * d) * ((2.0 + q1 + q2) / p1p2 + 1.0 / d2)
    Mdd = (((2.0 + q1 + 2.0 * q2 + det) * (2.0 + 2.0 * q1 + q2 + det) + 2.0 * c * c)
           / (two_pi * d2 * d2 * d))
    return Md, Mdd


def gelu_terms(q1, q2, c, det):
    """(M, Ṁ) of GELU, eq. (6), at covariance c with det = q₁q₂ − c² given."""
    p1p2 = (1.0 + q1) * (1.0 + q2)
    d2 = 1.0 + q1 + q2 + det
    d = np.sqrt(d2)
    psi = np.arctan2(c, d)
    M = 0.25 * c + ((c * c + q1 * q2 * d2) / (p1p2 * d) + c * psi) / (2 * np.pi)
    Md = 0.25 + psi / (2 * np.pi) + c / (d * 2 * np.pi) * ((2.0 + q1 + q2) / p1p2 + 1.0 / d2)
    return M, Md


def gelu_dual(q1, q2, c, D):
    """(M, Ṁ) of GELU, eq. (6), with det = q₁q₂ − c² from D without cancellation."""
    return gelu_terms(q1, q2, c, covariance_det(q1, q2, c, D))


def gelu_diagonal(q):
    """(P, Ṗ) = (E[σ(u)²], E[σ'(u)²]) of GELU for u ~ N(0, q): eq. (6) at c = q₁ = q₂ = q."""
    q = np.asarray(q, dtype=np.float64)
    return gelu_terms(q, q, q, np.zeros_like(q))


#: GELU's gaps at perfect correlation (eq. (6b)) by the mixed-partial rule where the cheap
#: ½(P₁ + P₂) − M(q₁, q₂, √(q₁q₂)) is below this fraction of ½(P₁ + P₂) (and likewise Dσ').
_RHO1_BELOW = 1e-2
_PATH_N = 12


def gelu_mixed(x, y):
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


def _gaps_at_one(q1, q2, mean, meand):
    """(Dσ, Dσ') of GELU at ρ = 1 (v = √(q₂/q₁)u), eq. (6b): the cheap difference of closed
    forms where it is at least ``_RHO1_BELOW`` of the mean, else ½s² × the mean of the
    mixed partials over [√q₂, √q₁]² by 8-point Gauss–Legendre on m × m panels, m = 2^k ≤ 16
    with |s|/m ≤ 0.3√(1 + min(q₁, q₂)) (the cheap difference where m would exceed 16);
    exact 0 for q₁ = q₂."""
    r = np.sqrt(q1 * q2)
    M1, Md1 = gelu_terms(q1, q2, r, np.zeros_like(r))
    g, gd = mean - M1, meand - Md1
    s = sqrt_diff(q1, q2)
    with np.errstate(divide="ignore"):
        ratio = np.abs(s) / (0.3 * np.sqrt(1.0 + np.minimum(q1, q2)))
        k = np.ceil(np.log2(np.maximum(ratio, 1.0))).astype(int)
    low, lowd = g < _RHO1_BELOW * mean, gd < _RHO1_BELOW * meand
    g, gd = g.copy(), gd.copy()
    for level in np.unique(k[(low | lowd) & (k <= 4)]):
        pick = (low | lowd) & (k == level)
        m = 2 ** int(level)
        t = ((np.arange(m)[:, None] + GL8_NODES[None, :]) / m).ravel()
        w = np.tile(GL8_WEIGHTS / m, m)
        w2 = w[:, None] * w[None, :]
        step = max(1, 2_000_000 // w2.size)
        for i in np.array_split(np.flatnonzero(pick), max(1, -(-int(pick.sum()) // step))):
            si, bi = s[i][:, None, None], np.sqrt(q2[i])[:, None, None]
            mm, mmd = gelu_mixed(bi + si * t[:, None], bi + si * t[None, :])
            half = 0.5 * s[i] ** 2
            g[i] = np.where(low[i], half * (mm * w2).sum((1, 2)), g[i])
            gd[i] = np.where(lowd[i], half * (mmd * w2).sum((1, 2)), gd[i])
    return np.maximum(g, 0.0), np.maximum(gd, 0.0)


@functools.lru_cache(maxsize=64)
def _graded_rule(levels):
    """(τ, ω): composite ``_PATH_N``-point Gauss–Legendre on [0, 1] with the panels
    [0, 2^−J], [2^−J, 2^{1−J}], …, [½, 1] (J = ``levels``). Cached, read-only."""
    t, w = np.polynomial.legendre.leggauss(_PATH_N)
    t, w = 0.5 * (t + 1.0), 0.5 * w
    ends = [0.0] + [2.0 ** -j for j in range(levels, -1, -1)]
    tau = np.concatenate([lo + (hi - lo) * t for lo, hi in zip(ends[:-1], ends[1:])])
    omega = np.concatenate([(hi - lo) * w for lo, hi in zip(ends[:-1], ends[1:])])
    tau.setflags(write=False)
    omega.setflags(write=False)
    return tau, omega


def _path(q1, q2, r, L, budget=2_000_000):
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
                Md, Mdd = gelu_slopes(q1[ii][:, None], q2[ii][:, None], rr - t,
                                       t * (2.0 * rr - t))
                out += np.bincount(ii, (Md @ omega) * hh[:, 0], minlength=L.size)
                outd += np.bincount(ii, (Mdd @ omega) * hh[:, 0], minlength=L.size)
    return out, outd


def gelu_gaps(q1, q2, c, D):
    """(Dσ, Dσ') of GELU by eqs. (6a)–(6b): the gaps at ρ = 1 plus Price's path integrals of
    Ṁ and M̈ from c to √(q₁q₂), every term non-negative (1-D arrays of pairs)."""
    q1, q2, c, D = (np.asarray(a, np.float64) for a in (q1, q2, c, D))
    P1, Pd1 = gelu_diagonal(q1)
    P2, Pd2 = gelu_diagonal(q2)
    g1, gd1 = _gaps_at_one(q1, q2, 0.5 * (P1 + P2), 0.5 * (Pd1 + Pd2))
    _, um, _, _, _, r = angle_terms(q1, q2, c, D)
    L = um * r  # √(q₁q₂) − c ≥ 0
    I, Id = _path(q1, q2, r, L)
    return g1 + I, gd1 + Id


_SQRT_2PI = math.sqrt(2.0 * math.pi)


@dataclasses.dataclass(frozen=True)
class Gelu(ActivationFunction):
    """GELU, σ(z) = zΦ(z) (exact), eqs. (6)–(6b)."""

    closed_form: ClassVar[bool] = True
    gaps_for_kernels: ClassVar[bool] = True  # large-variance Ṁ needs q₁q₂ − c² exactly

    @property
    def name(self) -> str:
        return "gelu"

    def numpy(self, z):
        from scipy.special import ndtr

        return z * ndtr(z)

    def derivative(self, z):
        from scipy.special import ndtr

        z = np.asarray(z, dtype=np.float64)
        return ndtr(z) + z * np.exp(-0.5 * z * z) / _SQRT_2PI

    def second_derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        return (2.0 - z * z) * np.exp(-0.5 * z * z) / _SQRT_2PI

    @property
    def jax_fn(self) -> Callable:
        def gelu(z):
            import jax

            return jax.nn.gelu(z, approximate=False)

        return gelu

    def diagonal(self, q, h_scale=None):
        """(P, Ṗ) of eq. (6) at c = q₁ = q₂ = q."""
        return gelu_diagonal(q)

    def expectations(self, q1, q2, c, D, h_scale=None):
        """(M, Ṁ) of eq. (6)."""
        return gelu_dual(q1, q2, c, D)

    def small_gaps(self, q1, q2, c, D, h_scale=None):
        """(Dσ, Dσ') by Price's theorem, eqs. (6a)–(6b)."""
        return gelu_gaps(q1, q2, c, D)


_TANH_C = math.sqrt(2.0 / math.pi)


@dataclasses.dataclass(frozen=True)
class GeluTanh(ActivationFunction):
    """GELU's tanh approximation σ(z) = ½z(1 + tanh(√(2/π)(z + 0.044715z³))) (jax's
    ``gelu(approximate=True)``); kernels by Mehler's series (its own, not exact GELU's)."""

    @property
    def name(self) -> str:
        return "gelu_tanh"

    def _t(self, z):
        return np.tanh(_TANH_C * (z + 0.044715 * z**3))

    def numpy(self, z):
        return 0.5 * z * (1.0 + self._t(z))

    def derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        t = self._t(z)
        du = _TANH_C * (1.0 + 3 * 0.044715 * z * z)
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * du

    def second_derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        t = self._t(z)
        du = _TANH_C * (1.0 + 3 * 0.044715 * z * z)
        d2u = _TANH_C * 6 * 0.044715 * z
        sech2 = 1.0 - t * t
        return sech2 * du + 0.5 * z * (sech2 * d2u - 2.0 * t * sech2 * du * du)

    @property
    def jax_fn(self) -> Callable:
        def gelu_tanh(z):
            import jax

            return jax.nn.gelu(z, approximate=True)

        return gelu_tanh


GELU = Gelu()
add("gelu", GELU)
add("gelu_tanh", GeluTanh())
