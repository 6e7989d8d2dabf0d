"""Gaussian expectations by the trapezoidal rule: the dual kernels of activations without a
closed form or a convergent Mehler series (``ntkcond.activations.mehler``), and the small gaps of
the series' activations, for ``ntkcond.activations.base``.

Notation as in ``ntkcond.activations.base`` (eqs. (1)–(2)) and ``ntkcond.activations._bivariate``
(θ the angle of (u, v), s = √q₁ − √q₂).

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

Arrays broadcast (q₁ as a column, q₂ as a row, c and D as blocks); results are float64.
"""
from __future__ import annotations

import math

import numpy as np

from ._bivariate import GL8_NODES, GL8_WEIGHTS, angle_terms

__all__ = ["QUADRATURE_RTOL", "MAX_NODES", "H_SCALE", "quadrature_step", "nodes",
           "quadrature_diagonal", "quadrature_dual", "quadrature_gaps", "quadrature_check"]

#: Agreement demanded of the quadrature with half its step (relative to the diagonal).
QUADRATURE_RTOL = 1e-13
#: Most trapezoid nodes per side (the cost is this squared per pair).
MAX_NODES = 1600
#: The step's scale: h = H_SCALE/√max(q, 1).
H_SCALE = 0.18
_CUTOFF = 8.5
_DD_DIRECT_ABOVE = 0.25


def quadrature_step(q, h_scale=H_SCALE) -> float:
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


def nodes(h):
    """(z, w): the trapezoid's nodes z = kh on [−8.5, 8.5] and its weights for N(0, 1),
    normalised to sum to 1."""
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


def quadrature_diagonal(act, q, h_scale=H_SCALE):
    """(P, Ṗ) = (E[σ(u)²], E[σ'(u)²]) for u ~ N(0, q) by the 1-D trapezoid, elementwise in q."""
    q = np.asarray(q, dtype=np.float64)
    z, w = nodes(quadrature_step(q, h_scale))
    u = np.sqrt(q)[..., None] * z
    return (w * act(u) ** 2).sum(-1), (w * act.derivative(u) ** 2).sum(-1)


def quadrature_dual(act, q1, q2, c, D, h_scale=H_SCALE):
    """(M, Ṁ) of eqs. (1)–(2) by the 2-D trapezoidal rule in the Cholesky form."""
    shape, (q1, q2, c, D) = _flat(q1, q2, c, D)
    h = quadrature_step(np.concatenate([q1, q2]), h_scale)
    z, w = nodes(h)
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
    for t, wt in zip(GL8_NODES, GL8_WEIGHTS):
        out += wt * fd(v + t * h)
    if np.any(big):
        direct = (f(u) - f(v)) / np.where(big, h, 1.0)
        out = np.where(big, direct, out)
    return out


def quadrature_gaps(act, q1, q2, c, D, h_scale=H_SCALE):
    """(Dσ, Dσ') of eqs. (1)–(2) as ½E[(u − v)² σ[u, v]²], u − v without cancellation."""
    shape, (q1, q2, c, D) = _flat(q1, q2, c, D)
    if q1.size == 0:
        return np.zeros(shape), np.zeros(shape)
    h = quadrature_step(np.concatenate([q1, q2]), h_scale)
    z, w = nodes(h)
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


def quadrature_check(act, q, where: str, h_scale=H_SCALE):
    """Raise ValueError (naming ``where``) unless the quadrature with step h and h/2 agree to
    ``QUADRATURE_RTOL`` on the diagonal moments at every variance in ``q`` and on (M, Ṁ) at
    ρ ∈ {−0.9, 0, 0.9, 0.999} for the largest variance."""
    q = np.unique(np.asarray(q, dtype=np.float64).ravel())
    try:
        quadrature_step(q, h_scale / 2)
        P1, Pd1 = quadrature_diagonal(act, q, h_scale)
        P2, Pd2 = quadrature_diagonal(act, q, h_scale / 2)
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
