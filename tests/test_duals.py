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


# ---- GELU's gaps by Price's theorem (duals eqs. (6a)–(6b)) ------------------------------------

def _mp_gelu(q1, q2, c):
    """(M, Ṁ, M̈) of GELU in mpmath (the reference's closed forms)."""
    return ref.gelu_closed_form(q1, q2, c)


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
    det = duals._det(np.float64(q1), np.float64(q2), np.float64(c), 0.5 * (q1 + q2) - c)
    _, got = duals._gelu_slopes(np.float64(q1), np.float64(q2), np.float64(c), det)
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
    m, md = duals._gelu_mixed(np.float64(x), np.float64(y))
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
    gap is ill-conditioned in D ≈ ½s² itself (duals' 'Conditioning')."""
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


@pytest.mark.parametrize("q1, q2, theta", GELU_GAP_POINTS)
def test_gelu_gaps_against_mpmath(q1, q2, theta):
    (a, b, c, D), (Q1, Q2, C) = _gelu_pair(q1, q2, theta)
    g, gd, tol, told = _gelu_ref_gaps(Q1, Q2, C)
    G, Gd = duals.gelu_gaps(np.array([a]), np.array([b]), np.array([c]), np.array([D]))
    assert abs(G[0] - g) <= tol, (G[0], g)
    assert abs(Gd[0] - gd) <= told, (Gd[0], gd)
    # through dual (the cheap gaps where they are large, eq. (6)'s bound 1e-13 relative)
    _, G2, _, Gd2 = duals.dual(parse_activation("gelu"), a, b, c, D)
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
        monkeypatch.setattr(duals, "_gelu_gaps_at_one",
                            lambda q1, q2, m, md: (np.zeros_like(q1), np.zeros_like(q1)))
    elif plant == "no_path_integral":
        monkeypatch.setattr(duals, "_gelu_path",
                            lambda q1, q2, r, L: (np.zeros_like(L), np.zeros_like(L)))
    else:
        monkeypatch.setattr(duals, "_GELU_PATH_N", 1)
        duals._graded_rule.cache_clear()
    try:
        G, Gd = duals.gelu_gaps(np.array([a]), np.array([b]), np.array([c]), np.array([D]))
    finally:
        duals._graded_rule.cache_clear()
    assert abs(G[0] - g) > tol or abs(Gd[0] - gd) > told


def test_gelu_gaps_agree_with_the_quadrature_at_moderate_variances():
    # The old divided-difference trapezoid (duals.quadrature_gaps) where it works: 1e-11
    # relative to the gap (its accuracy on gaps, as for tanh/SiLU above).
    act = parse_activation("gelu")
    rng = np.random.default_rng(5)
    q1 = rng.uniform(0.3, 6.0, 12)
    unequal = rng.random(12) < 0.7
    q2 = np.where(unequal, q1 * np.exp(rng.uniform(-0.05, 0.05, 12)), q1)
    um = 10.0 ** rng.uniform(-12, -3, 12)
    s = duals._sqrt_diff(q1, q2)
    r = np.sqrt(q1 * q2)
    c = r * (1 - um)
    D = 0.5 * s * s + r * um
    G, Gd = duals.gelu_gaps(q1, q2, c, D)
    Gq, Gqd = duals.quadrature_gaps(act, q1, q2, c, D)
    assert np.all(np.abs(G - Gq) <= 1e-11 * Gq)
    assert np.all(np.abs(Gd - Gqd) <= 1e-11 * Gqd)


def test_gelu_gaps_have_no_node_limit():
    # variances far beyond the trapezoid's MAX_NODES (q = 1e6: ~54,000 nodes a side): the
    # gaps come from eqs. (6a)–(6b), finite, non-negative, and agree with the same formulas
    # evaluated in mpmath (M̈ integrated by tanh-sinh, the ρ = 1 term by its mixed partials).
    q1, q2 = np.array([1e6, 1e6, 3e5]), np.array([1e6, 1e6 * (1 + 1e-9), 3.3e5])
    um = np.array([1e-12, 1e-6, 1e-4])
    s = duals._sqrt_diff(q1, q2)
    r = np.sqrt(q1 * q2)
    c, D = r * (1 - um), 0.5 * s * s + r * um
    M, G, Md, Gd = duals.dual(parse_activation("gelu"), q1, q2, c, D)
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


@pytest.mark.parametrize("q", [1e8, 1e20, 1e40])
def test_gelu_diagonal_at_huge_variances(q):
    # δ² = 1 + q₁ + q₂ + (q₁q₂ − c²) without forming (1 + q)² − q² (which rounds to 0 from
    # q ~ 1e16 on: a NaN kernel before): P and Ṗ against eq. (6) at 60 digits, 1e-14 relative.
    P, Pd = duals.diagonal(parse_activation("gelu"), np.array([q]))
    with mp.workdps(60):
        M, Md, _ = _mp_gelu(mp.mpf(q), mp.mpf(q), mp.mpf(q))
    assert abs(P[0] - float(M)) <= 1e-14 * float(M)
    assert abs(Pd[0] - float(Md)) <= 1e-14 * float(Md)
