"""GELU's dual kernels (ntkcond.activations.gelu) against mpmath: M̈ and the mixed partials
of eqs. (6a)–(6b) to 1e-13–1e-14, the gaps by Price's theorem to 1e-12 plus their own
conditioning in D, planted errors, and the diagonal at huge variances (1e-14)."""
import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
from ntkcond.activations import parse_activation
from ntkcond.activations import gelu as gelu_dual
from ntkcond.activations._bivariate import covariance_det, sqrt_diff
from ntkcond.activations.trapezoid import quadrature_gaps


def _mp_gelu(q1, q2, c):
    """(M, Ṁ, M̈) of GELU in mpmath (the reference's closed forms)."""
    return ref.gelu_closed_form(q1, q2, c)


@pytest.mark.slow
@pytest.mark.parametrize("q1, q2, rho", [(1.3, 0.7, 0.5), (0.5, 0.5, 1 - 1e-4), (2.0, 1.0, -0.99),
                                         (0.3, 0.2, 0.0), (4.0, 4.0, 0.999)])
def test_gelu_second_derivative_kernel_against_mpmath(q1, q2, rho):
    # M̈ = E[σ''(u)σ''(v)], σ'' = (2 − z²)φ, eq. (6a), against a 2-D tanh-sinh quadrature in
    # the Cholesky form at 20 digits: 1e-13 relative (the quadrature reaches ~1e-17 here).
    with mp.workdps(20):
        Q1, Q2 = mp.mpf(q1), mp.mpf(q2)
        C = mp.sqrt(Q1 * Q2) * mp.mpf(rho)
        a, b1, b2 = mp.sqrt(Q1), C / mp.sqrt(Q1), mp.sqrt(Q2 - C * C / Q1)
        f = lambda t: (2 - t * t) * ref._phi(t)  # noqa: E731
        want = mp.quad(lambda s, t: f(a * s) * f(b1 * s + b2 * t) * ref._phi(s) * ref._phi(t),
                       [-10, 0, 10], [-10, 0, 10])
        assert abs(_mp_gelu(Q1, Q2, C)[2] - want) <= mp.mpf(1e-16) * abs(want)
    c = float(C)
    det = covariance_det(np.float64(q1), np.float64(q2), np.float64(c), 0.5 * (q1 + q2) - c)
    _, got = gelu_dual.gelu_slopes(np.float64(q1), np.float64(q2), np.float64(c), det)
    assert abs(got - float(want)) <= 1e-13 * float(want)


@pytest.mark.parametrize("x, y", [(1.2, 0.9), (0.1, 0.3), (5.0, 4.0), (100.0, 100.5), (1e-8, 2e-8)])
def test_gelu_mixed_partials_against_mpmath(x, y):
    # eq. (6b): E[z²σ'(xz)σ'(yz)] and E[z²σ''(xz)σ''(yz)] against mpmath's 1-D quadrature,
    # 1e-14 relative.
    with mp.workdps(30):
        X, Y = mp.mpf(x), mp.mpf(y)
        s1 = lambda t: mp.ncdf(t) + t * ref._phi(t)  # noqa: E731
        s2 = lambda t: (2 - t * t) * ref._phi(t)  # noqa: E731
        k = 1 / max(X, 1)
        pts = [-12, -10 * k, -k, 0, k, 10 * k, 12]
        w1 = mp.quad(lambda z: z * z * s1(X * z) * s1(Y * z) * ref._phi(z), pts)
        w2 = mp.quad(lambda z: z * z * s2(X * z) * s2(Y * z) * ref._phi(z), pts)
    m, md = gelu_dual.gelu_mixed(np.float64(x), np.float64(y))
    assert abs(m - float(w1)) <= 1e-14 * float(w1)
    assert abs(md - float(w2)) <= 1e-14 * float(w2)


def _gelu_pair(q1, q2, theta):
    """(q1, q2, c, D) in float64 and (Q1, Q2, C) in mpmath with C = ½(q₁ + q₂) − D exactly:
    D is the recursion's exact carrier of the gap (c only enters smooth terms)."""
    with mp.workdps(40):
        Q1, Q2 = mp.mpf(q1), mp.mpf(q2)
        Dm = (Q1 + Q2) / 2 - mp.sqrt(Q1 * Q2) * mp.cos(mp.mpf(theta))
        D = np.float64(float(Dm))
        C = (Q1 + Q2) / 2 - mp.mpf(float(D))
    return (np.float64(q1), np.float64(q2), np.float64(float(C)), D), (Q1, Q2, C)


def _gelu_ref_gaps(Q1, Q2, C):
    """(Dσ, Dσ', tolerances): the gaps from the reference's trapezoid (30 digits), and
    1e-12 of each plus 8·eps·D·|∂G/∂D| (∂Dσ/∂D = Ṁ, ∂Dσ'/∂D = M̈): for q₁ ≠ q₂ at tiny θ the
    gap is ill-conditioned in D ≈ ½s² itself (gelu_dual's 'Conditioning')."""
    with mp.workdps(ref.DPS):
        m, md = ref.expectations("gelu", Q1, Q2, C)
        p1, pd1 = ref.expectations("gelu", Q1, Q1, Q1)
        p2, pd2 = ref.expectations("gelu", Q2, Q2, Q2)
        g, gd = (p1 + p2) / 2 - m, (pd1 + pd2) / 2 - md
        _, Md, Mdd = _mp_gelu(Q1, Q2, C)
        D = (Q1 + Q2) / 2 - C
        eps = 2.0**-52
        return (float(g), float(gd), float(1e-12 * g + 8 * eps * D * abs(Md)),
                float(1e-12 * gd + 8 * eps * D * abs(Mdd)))


GELU_GAP_POINTS = [(q, q * ratio, theta) for q in (0.5, 3.0, 100.0)
                   for ratio in (1.0, 1 + 1e-7, 1.003) for theta in (1e-6, 1e-3, 1e-1)]
GELU_GAP_POINTS += [(1e4, 1e4, 1e-3), (1e4, 1e4 * (1 + 1e-7), 1e-6)]


@pytest.mark.slow
@pytest.mark.parametrize("q1, q2, theta", GELU_GAP_POINTS)
def test_gelu_gaps_against_mpmath(q1, q2, theta):
    (a, b, c, D), (Q1, Q2, C) = _gelu_pair(q1, q2, theta)
    g, gd, tol, told = _gelu_ref_gaps(Q1, Q2, C)
    G, Gd = gelu_dual.gelu_gaps(np.array([a]), np.array([b]), np.array([c]), np.array([D]))
    assert abs(G[0] - g) <= tol, (G[0], g)
    assert abs(Gd[0] - gd) <= told, (Gd[0], gd)
    # through dual (the cheap gaps where they are large, eq. (6)'s bound 1e-13 relative)
    _, G2, _, Gd2 = parse_activation("gelu").dual(a, b, c, D)
    assert abs(G2 - g) <= tol + 1e-13 * g
    assert abs(Gd2 - gd) <= told + 1e-13 * gd


@pytest.mark.parametrize("plant", ["no_rho1_term", "no_path_integral", "coarse_path"])
def test_gelu_gaps_planted_errors_fail(plant, monkeypatch):
    # Each part of eqs. (6a)–(6b) matters: dropping one, or a one-node path rule, breaks the
    # comparison with the reference at a point where both parts are present and the path
    # spans graded panels (L = √(q₁q₂)(1 − cos θ) ≈ 4.5 > d₀ ≈ 1).
    (a, b, c, D), (Q1, Q2, C) = _gelu_pair(100.0, 100.3, 0.3)
    g, gd, tol, told = _gelu_ref_gaps(Q1, Q2, C)
    if plant == "no_rho1_term":
        monkeypatch.setattr(gelu_dual, "_gaps_at_one",
                            lambda q1, q2, m, md: (np.zeros_like(q1), np.zeros_like(q1)))
    elif plant == "no_path_integral":
        monkeypatch.setattr(gelu_dual, "_path",
                            lambda q1, q2, r, L: (np.zeros_like(L), np.zeros_like(L)))
    else:
        monkeypatch.setattr(gelu_dual, "_PATH_N", 1)
        gelu_dual._graded_rule.cache_clear()
    try:
        G, Gd = gelu_dual.gelu_gaps(np.array([a]), np.array([b]), np.array([c]), np.array([D]))
    finally:
        gelu_dual._graded_rule.cache_clear()
    assert abs(G[0] - g) > tol or abs(Gd[0] - gd) > told


def test_gelu_gaps_agree_with_the_quadrature_at_moderate_variances():
    # The old divided-difference trapezoid (ntkcond.activations.trapezoid.quadrature_gaps) where it works: 1e-11
    # relative to the gap (its accuracy on gaps, as for tanh/SiLU above).
    act = parse_activation("gelu")
    rng = np.random.default_rng(5)
    q1 = rng.uniform(0.3, 6.0, 12)
    unequal = rng.random(12) < 0.7
    q2 = np.where(unequal, q1 * np.exp(rng.uniform(-0.05, 0.05, 12)), q1)
    um = 10.0 ** rng.uniform(-12, -3, 12)
    s = sqrt_diff(q1, q2)
    r = np.sqrt(q1 * q2)
    c = r * (1 - um)
    D = 0.5 * s * s + r * um
    G, Gd = gelu_dual.gelu_gaps(q1, q2, c, D)
    Gq, Gqd = quadrature_gaps(act, q1, q2, c, D)
    assert np.all(np.abs(G - Gq) <= 1e-11 * Gq)
    assert np.all(np.abs(Gd - Gqd) <= 1e-11 * Gqd)


def test_gelu_gaps_have_no_node_limit():
    # variances far beyond the trapezoid's MAX_NODES (q = 1e6: ~54,000 nodes a side): the
    # gaps come from eqs. (6a)–(6b), finite, non-negative, and agree with the same formulas
    # evaluated in mpmath (M̈ integrated by tanh-sinh, the ρ = 1 term by its mixed partials).
    q1, q2 = np.array([1e6, 1e6, 3e5]), np.array([1e6, 1e6 * (1 + 1e-9), 3.3e5])
    um = np.array([1e-12, 1e-6, 1e-4])
    s = sqrt_diff(q1, q2)
    r = np.sqrt(q1 * q2)
    c, D = r * (1 - um), 0.5 * s * s + r * um
    M, G, Md, Gd = parse_activation("gelu").dual(q1, q2, c, D)
    assert np.all(np.isfinite([M, G, Md, Gd])) and np.all(G > 0) and np.all(Gd > 0)
    with mp.workdps(30):
        for i in range(3):
            Q1, Q2 = mp.mpf(q1[i]), mp.mpf(q2[i])
            R, Dm = mp.sqrt(Q1 * Q2), mp.mpf(D[i])
            A, B = mp.sqrt(Q1), mp.sqrt(Q2)
            L = Dm - (A - B) ** 2 / 2
            mixed = lambda x, y: (  # noqa: E731  eq. (6b)'s σ'' partial
                (4 * (1 + x * x + y * y) ** 2 - 6 * (x * x + y * y) * (1 + x * x + y * y)
                 + 15 * x * x * y * y) / (2 * mp.pi * (1 + x * x + y * y) ** mp.mpf(3.5)))
            at_one = mp.quad(lambda x, y: mixed(x, y), [B, A], [B, A]) / 2 if A != B else 0
            path = mp.quad(lambda t: _mp_gelu(Q1, Q2, R - t)[2], [0, min(L, 1), L])
            want = at_one + path
            assert abs(Gd[i] - float(want)) <= 1e-12 * float(want), (i, Gd[i], want)


@pytest.mark.parametrize("q", [1e8, 1e20, 1e40])
def test_gelu_diagonal_at_huge_variances(q):
    # δ² = 1 + q₁ + q₂ + (q₁q₂ − c²) without forming (1 + q)² − q² (which rounds to 0 from
    # q ~ 1e16 on: a NaN kernel before): P and Ṗ against eq. (6) at 60 digits, 1e-14 relative.
    P, Pd = parse_activation("gelu").diagonal(np.array([q]))
    with mp.workdps(60):
        M, Md, _ = _mp_gelu(mp.mpf(q), mp.mpf(q), mp.mpf(q))
    assert abs(P[0] - float(M)) <= 1e-14 * float(M)
    assert abs(Pd[0] - float(Md)) <= 1e-14 * float(Md)
