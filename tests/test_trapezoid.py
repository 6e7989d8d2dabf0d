"""The trapezoid (ntkcond.activations.trapezoid): the reference's 2-D rule against mpmath, the
rule against the closed forms, and its step-halving check. Tolerances: 1e-20 (reference),
1e-14 (erf), QUADRATURE_RTOL (step halving)."""
import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
from ntkcond.activations import parse_activation
from ntkcond.activations import trapezoid


@pytest.mark.slow
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
    M, _, Md, _ = act.dual(q1, q2, c, D)
    Mq, Mdq = trapezoid.quadrature_dual(act, q1, q2, c, D)
    scale = np.sqrt(q1 * q2)
    if name == "erf":
        assert np.max(np.abs(Mq - M) / scale) < 1e-14
        assert np.max(np.abs(Mdq - Md)) < 1e-14
    else:
        e1 = np.max(np.abs(Mq - M) / scale)
        e2 = np.max(np.abs(trapezoid.quadrature_dual(act, q1, q2, c, D, h_scale=0.045)[0] - M) / scale)
        assert e1 < 1e-3 and e2 < e1 / 2


def test_quadrature_step_halving():
    for name in ("tanh", "softplus", "silu", "gelu"):
        worst = trapezoid.quadrature_check(parse_activation(name), np.array([0.1, 1.0, 2.25, 4.0]), "t")
        assert worst <= trapezoid.QUADRATURE_RTOL


def test_quadrature_that_cannot_reach_accuracy_raises():
    with pytest.raises(ValueError, match=r"myfun: .*more than 1600 nodes"):
        trapezoid.quadrature_check(parse_activation("softplus"), np.array([1e4]), "myfun")
