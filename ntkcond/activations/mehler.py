"""Dual kernels by Mehler's series (tanh, softplus, SiLU, callables): the default of
``ntkcond.activations.base.ActivationFunction``.

Notation as in ``ntkcond.activations.base`` (eqs. (1)–(2)): a centred Gaussian pair (u, v)
with variances q₁, q₂ and covariance c, M = E[σ(u)σ(v)], Ṁ = E[σ'(u)σ'(v)], P = E[σ(u)²].

With h_k = He_k/√k! (orthonormal under N(0, 1)), a_k(q) = E[σ(√q z)h_k(z)] and ȧ_k likewise
for σ' (``mehler_coefficients``: a 1-D trapezoid per distinct variance, split into σ's even
and odd parts: an odd σ has exactly zero even a_k),

    M = Σ_k a_k(q₁) a_k(q₂) ρ^k,   Ṁ = Σ_k ȧ_k(q₁) ȧ_k(q₂) ρ^k,   ρ = c/√(q₁q₂),        (7)

each pair's sum truncated at the first K with |ρ|^K·t_K ≤ 1e-14, t_K the largest relative
tail Σ_{k≥K} a_k²/Σ_k a_k² over the variances (Cauchy–Schwarz: the error is below 1e-14 of
√(P₁P₂); ``mehler_levels``). Where 2950 terms do not reach the tail at ρ = 1 (very large
variances), ``mehler_dual`` returns None and the 2-D trapezoid of
``ntkcond.activations.trapezoid`` serves instead. The small gaps (½(P₁ + P₂) − M loses digits
there) come from that module's divided-difference quadrature.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .trapezoid import nodes, quadrature_step

__all__ = ["MEHLER_MAX_TERMS", "mehler_coefficients", "mehler_levels", "mehler_dual"]

#: The longest table of coefficients a_0 … a_K (tables of 300 and 1000 terms are tried first).
MEHLER_MAX_TERMS = 3000
_MEHLER_TAIL = 1e-14


@functools.lru_cache(maxsize=8)
def _weighted_hermite_table(h, K):
    """(z, W) for the trapezoid nodes z_j ≥ 0 of step h: W[j, k] = m_j w_j h_k(z_j), k = 0 … K,
    m_j = 1 at z = 0 and 2 elsewhere: the half-grid weights of an integrand even in z (the
    nodes are symmetric, so an odd σ has exactly odd coefficients and the sum over ±z_j is
    twice the one over z_j). Cached, read-only."""
    z, w = nodes(h)
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
