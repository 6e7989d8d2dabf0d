"""Dual kernels (``ActivationFunction.dual``, ntkcond.activations.base eqs. (1)–(2)) against
mpmath: the closed forms, and the series and quadrature activations through the same protocol. Tolerances: closed forms 1e-14 relative
to √(P₁P₂) (kernels) and 1e-12 relative to the gap itself (gaps, down to 1 − ρ ≈ 1e-12);
tanh/SiLU 1e-13 (kernels) and 1e-11 (gaps)."""
import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
from ntkcond.activations import parse_activation

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
    M, G, Md, Gd = parse_activation(name).dual(q1, q2, c, D)
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
    M, G, Md, Gd = parse_activation(name).dual(q1, q2, c, D)
    assert abs(M - float(m)) <= 1e-13 * float(scale)
    assert abs(Md - float(md)) <= 1e-13 * float(scaled)
    assert abs(G - float(g)) <= 1e-11 * float(g)
    assert abs(Gd - float(gd)) <= 1e-11 * float(gd)


def test_gaps_are_exact_zero_on_the_diagonal():
    for name in ("relu", "erf", "sin", "gelu", "tanh"):
        q = np.array([0.3, 2.0])
        M, G, Md, Gd = parse_activation(name).dual(q, q, q, np.zeros(2))
        assert np.all(G == 0) and np.all(Gd == 0)
