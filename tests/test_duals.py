"""Dual kernels (ntkcond.infinite.duals) against mpmath, and the quadrature against the
closed forms. Tolerances: closed forms 1e-14 relative to √(P₁P₂) (kernels) and 1e-12
relative to the gap itself (gaps, down to 1 − ρ ≈ 1e-12); quadrature 1e-13 (smooth) and
step-halving agreement QUADRATURE_RTOL."""
import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
from ntkcond.activations import parse_activation
from ntkcond.infinite import duals

POINTS = [  # (q1, q2, 1 − ρ): generic, unequal norms, near-duplicate, near-antipodal
    (1.3, 0.7, 0.6), (2.25, 2.25, 1e-12), (0.8, 0.8 * (1 + 1e-7), 3e-12), (1.1, 0.4, 1.7),
    (0.05, 3.0, 0.2), (5.0, 5.0, 1e-4),
]


def _pair(q1, q2, one_minus_rho):
    """(q1, q2, c, D) in float64 with D exact for the mp reference (c = √(q1q2)(1 − u))."""
    with mp.workdps(40):
        Q1, Q2, U = mp.mpf(q1), mp.mpf(q2), mp.mpf(one_minus_rho)
        C = mp.sqrt(Q1 * Q2) * (1 - U)
        Dm = (Q1 + Q2) / 2 - C
    return (np.float64(q1), np.float64(q2), np.float64(float(C)), np.float64(float(Dm))), (Q1, Q2, C)


def _ref_gaps(name, Q1, Q2, C):
    with mp.workdps(ref.DPS):
        m, md = ref.expectations(name, Q1, Q2, C)
        p1, pd1 = ref.expectations(name, Q1, Q1, Q1)
        p2, pd2 = ref.expectations(name, Q2, Q2, Q2)
        return m, md, (p1 + p2) / 2 - m, (pd1 + pd2) / 2 - md, mp.sqrt(p1 * p2), mp.sqrt(pd1 * pd2)


@pytest.mark.parametrize("name", ["relu", "abs", "leaky:-0.5", "leaky:0.2", "erf", "sin", "gelu"])
@pytest.mark.parametrize("point", POINTS)
def test_closed_forms_against_mpmath(name, point):
    (q1, q2, c, D), (Q1, Q2, C) = _pair(*point)
    m, md, g, gd, scale, scaled = _ref_gaps(name, Q1, Q2, C)
    M, G, Md, Gd = duals.dual(parse_activation(name), q1, q2, c, D)
    assert abs(M - float(m)) <= 1e-14 * float(scale)
    assert abs(Md - float(md)) <= 1e-14 * float(scaled)
    # gaps: relative to themselves (this is what carries 1 − ρ through the layers)
    assert abs(G - float(g)) <= 1e-12 * float(g) + 1e-300
    assert abs(Gd - float(gd)) <= 1e-12 * float(gd) + 1e-15 * float(scaled) * (float(gd) == 0)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tanh", "silu"])
@pytest.mark.parametrize("point", [POINTS[0], POINTS[1], POINTS[2]])
def test_quadrature_against_reference(name, point):
    (q1, q2, c, D), (Q1, Q2, C) = _pair(*point)
    m, md, g, gd, scale, scaled = _ref_gaps(name, Q1, Q2, C)
    M, G, Md, Gd = duals.dual(parse_activation(name), q1, q2, c, D)
    assert abs(M - float(m)) <= 1e-13 * float(scale)
    assert abs(Md - float(md)) <= 1e-13 * float(scaled)
    assert abs(G - float(g)) <= 1e-11 * float(g)
    assert abs(Gd - float(gd)) <= 1e-11 * float(gd)


def test_reference_trapezoid_against_mpmath_quad():
    # The reference's 2-D trapezoid (tests/_family_reference.py) against mpmath's tanh-sinh.
    with mp.workdps(ref.DPS):
        q1, q2, c = mp.mpf("1.2"), mp.mpf("0.9"), mp.mpf("0.5")
        a, b1 = mp.sqrt(q1), c / mp.sqrt(q1)
        b2 = mp.sqrt(q2 - c * c / q1)
        with mp.workdps(24):
            want = mp.quad(lambda s, t: mp.tanh(a * s) * mp.tanh(b1 * s + b2 * t) * ref._phi(s)
                           * ref._phi(t), [-12, 0, 12], [-12, 0, 12])
        got = ref.trapezoid2("tanh", 0, q1, q2, c)
        assert abs(got - want) < mp.mpf(10) ** -20


@pytest.mark.parametrize("name", ["erf", "relu"])
def test_quadrature_against_closed_forms(name):
    # The trapezoid in the Cholesky form against the closed forms: erf (smooth, 1e-14 of the
    # diagonal) and ReLU (kinked integrand: the trapezoid converges only algebraically,
    # ~1e-5 at the default step, shown to shrink when the step halves).
    act = parse_activation(name)
    q1, q2 = np.array([1.3, 0.4, 2.0]), np.array([0.7, 0.4, 2.0])
    c = np.array([0.5, -0.3, 1.999]) * np.sqrt(q1 * q2) / np.sqrt(q1 * q2) * np.array([1, 1, 1])
    c = np.array([0.5, -0.3, 1.9])
    D = 0.5 * (q1 + q2) - c
    M, _, Md, _ = duals.dual(act, q1, q2, c, D)
    Mq, Mdq = duals.quadrature_dual(act, q1, q2, c, D)
    scale = np.sqrt(q1 * q2)
    if name == "erf":
        assert np.max(np.abs(Mq - M) / scale) < 1e-14
        assert np.max(np.abs(Mdq - Md)) < 1e-14
    else:
        e1 = np.max(np.abs(Mq - M) / scale)
        e2 = np.max(np.abs(duals.quadrature_dual(act, q1, q2, c, D, h_scale=0.045)[0] - M) / scale)
        assert e1 < 1e-3 and e2 < e1 / 2


def test_quadrature_step_halving():
    for name in ("tanh", "softplus", "silu", "gelu"):
        worst = duals.quadrature_check(parse_activation(name), np.array([0.1, 1.0, 2.25, 4.0]), "t")
        assert worst <= duals.QUADRATURE_RTOL


def test_quadrature_that_cannot_reach_accuracy_raises():
    with pytest.raises(ValueError, match=r"myfun: .*more than 1600 nodes"):
        duals.quadrature_check(parse_activation("softplus"), np.array([1e4]), "myfun")


def test_gaps_are_exact_zero_on_the_diagonal():
    for name in ("relu", "erf", "sin", "gelu", "tanh"):
        q = np.array([0.3, 2.0])
        M, G, Md, Gd = duals.dual(parse_activation(name), q, q, q, np.zeros(2))
        assert np.all(G == 0) and np.all(Gd == 0)


def _full_mehler(act, q1, q2, c, K=2990):
    """Mehler's series with K terms for every pair (the untruncated reference)."""
    u, inv = np.unique(np.concatenate([q1, q2]), return_inverse=True)
    a, ad = duals.mehler_coefficients(act, u, 3000)
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
    M, Md = duals.mehler_dual(act, q1, q2, c)
    (Mr, Mdr), a, ad, i1, i2 = _full_mehler(act, q1, q2, c)
    P, Pd = np.sum(a * a, 1), np.sum(ad * ad, 1)
    assert np.max(np.abs(M - Mr) / np.sqrt(P[i1] * P[i2])) <= 1.1e-14
    assert np.max(np.abs(Md - Mdr) / np.sqrt(Pd[i1] * Pd[i2])) <= 1.1e-14


def test_mehler_levels_cover_their_radius():
    """Level b's radius r_b satisfies r_b^{K_b} t_{K_b} ≤ 1e-14 (the bound it promises);
    radii grow with K, and the last level covers |ρ| ≤ 1."""
    act = parse_activation("tanh")
    a, ad = duals.mehler_coefficients(act, np.array([0.5, 2.25, 8.0]), 3000)
    tails = np.max([np.cumsum((A * A)[:, ::-1], 1)[:, ::-1] / np.sum(A * A, 1, keepdims=True)
                    for A in (a, ad)], axis=(0, 1))
    Ks, radii = duals.mehler_levels(tails)
    assert np.all(np.diff(Ks) > 0) and np.all(np.diff(radii) >= 0) and radii[-1] == np.inf
    assert tails[Ks[-1]] <= 1e-14
    for K, r in zip(Ks[:-1], radii[:-1]):
        assert r ** K * tails[K] <= 1e-14 * (1 + 1e-12)


def test_odd_activation_has_exactly_zero_even_coefficients():
    a, ad, (p, pd) = duals.mehler_coefficients(parse_activation("tanh"), np.array([0.7, 3.0]),
                                               300, parities=True)
    assert (p, pd) == (1, 0)
    assert np.all(a[:, 0::2] == 0) and np.all(ad[:, 1::2] == 0)
    a, ad, parities = duals.mehler_coefficients(parse_activation("softplus"), np.array([1.0]),
                                                300, parities=True)
    assert parities == (None, None) and np.any(a[:, 2::2]) and np.any(a[:, 1::2])
