"""Mehler's series (ntkcond.activations.mehler): the per-pair truncation against the whole
series (1.1e-14 of √(P₁P₂)), the levels' bound, and parity's exact zeros."""
import numpy as np
import pytest

from ntkcond.activations import parse_activation
from ntkcond.activations import mehler


def _full_mehler(act, q1, q2, c, K=2990):
    """Mehler's series with K terms for every pair (the untruncated reference)."""
    u, inv = np.unique(np.concatenate([q1, q2]), return_inverse=True)
    a, ad = mehler.mehler_coefficients(act, u, 3000)
    i1, i2 = inv[: q1.size], inv[q1.size:]
    rho = np.clip(c / np.sqrt(q1 * q2), -1.0, 1.0)
    out = []
    for A in (a, ad):
        acc = np.zeros_like(c)
        for k in range(K, -1, -1):
            acc = acc * rho + A[i1, k] * A[i2, k]
        out.append(acc)
    return out, a, ad, i1, i2


@pytest.mark.parametrize("name", ["tanh", "softplus", "silu"])
def test_mehler_truncation_per_pair_keeps_its_bound(name):
    """The per-pair truncation (levels by |ρ|) against the whole series for every pair, on
    pairs from ρ = −1 to 1 and variances 0.2–8: within 1e-14 of √(P₁P₂) (the tail bound)
    plus 1e-15 rounding."""
    act = parse_activation(name)
    rng = np.random.default_rng(4)
    q1, q2 = rng.uniform(0.2, 8.0, 400), rng.uniform(0.2, 8.0, 400)
    rho = np.concatenate([rng.uniform(-1, 1, 300), 1 - 10.0 ** rng.uniform(-12, -1, 90),
                          [1.0] * 5, [-1.0] * 5])
    c = rho * np.sqrt(q1 * q2)
    M, Md = mehler.mehler_dual(act, q1, q2, c)
    (Mr, Mdr), a, ad, i1, i2 = _full_mehler(act, q1, q2, c)
    P, Pd = np.sum(a * a, 1), np.sum(ad * ad, 1)
    assert np.max(np.abs(M - Mr) / np.sqrt(P[i1] * P[i2])) <= 1.1e-14
    assert np.max(np.abs(Md - Mdr) / np.sqrt(Pd[i1] * Pd[i2])) <= 1.1e-14


def test_mehler_levels_cover_their_radius():
    """Level b's radius r_b satisfies r_b^{K_b} t_{K_b} ≤ 1e-14 (the bound it promises);
    radii grow with K, and the last level covers |ρ| ≤ 1."""
    act = parse_activation("tanh")
    a, ad = mehler.mehler_coefficients(act, np.array([0.5, 2.25, 8.0]), 3000)
    tails = np.max([np.cumsum((A * A)[:, ::-1], 1)[:, ::-1] / np.sum(A * A, 1, keepdims=True)
                    for A in (a, ad)], axis=(0, 1))
    Ks, radii = mehler.mehler_levels(tails)
    assert np.all(np.diff(Ks) > 0) and np.all(np.diff(radii) >= 0) and radii[-1] == np.inf
    assert tails[Ks[-1]] <= 1e-14
    for K, r in zip(Ks[:-1], radii[:-1]):
        assert r ** K * tails[K] <= 1e-14 * (1 + 1e-12)


def test_odd_activation_has_exactly_zero_even_coefficients():
    a, ad, (p, pd) = mehler.mehler_coefficients(parse_activation("tanh"), np.array([0.7, 3.0]),
                                               300, parities=True)
    assert (p, pd) == (1, 0)
    assert np.all(a[:, 0::2] == 0) and np.all(ad[:, 1::2] == 0)
    a, ad, parities = mehler.mehler_coefficients(parse_activation("softplus"), np.array([1.0]),
                                                300, parities=True)
    assert parities == (None, None) and np.any(a[:, 2::2]) and np.any(a[:, 1::2])
