"""Claims 15, 16 and 21 (``ntkcond.papers.liu_hui.family_claims``): nets with biases and the
dual kernels of erf, GELU and tanh against the quadrature route pass, and a planted 1% error in
a bias variance or in an activation's dual fails them; Terjék & González-Sánchez's rate claim
on the a·s + b·|s| family passes, and planted errors (a wrong Δ_φ, a wrong kernel) fail it."""
import math

import numpy as np
import pytest

from ntkcond.papers.liu_hui.claim_kit import Formulas
from ntkcond.papers.liu_hui import quadrature as Q
from ntkcond.papers.liu_hui.family_claims import (FAMILY_TOL, check_activation_duals,
                                                  check_activation_rate, check_biases,
                                                  convergence_depth, terjek_delta)


def test_delta_of_the_family():
    assert terjek_delta("relu") == 0.5 and terjek_delta("abs") == 1.0
    assert terjek_delta("linear") == 0.0
    assert terjek_delta("leaky:-0.5") == pytest.approx(0.9, rel=1e-15, abs=0)


def test_convergence_depth_interpolates_in_log_log():
    assert convergence_depth([10, 100], [1.0, 0.01], 0.1) == pytest.approx(math.sqrt(1000), rel=1e-12, abs=0)
    assert convergence_depth([10, 100], [0.01, 0.001], 0.1) == 10
    assert convergence_depth([10, 100], [1.0, 0.5], 0.1) == math.inf


@pytest.fixture(scope="module")
def claim():
    return check_activation_rate()


def test_claim_passes(claim):
    assert claim.verdict == "PASS" and claim.id == "21"
    d = claim.details
    assert d["order_ok"] and d["abs_beats_relu"] and claim.statistic < 1.0
    assert d["depth_to_tau"]["abs"] < d["depth_to_tau"]["relu"]


def test_planted_wrong_delta_fails():
    wrong = lambda a: 1.0 - terjek_delta(a)  # a²/(a² + b²): the order reversed  # noqa: E731
    c = check_activation_rate(delta=wrong)
    assert c.verdict == "FAIL" and c.statistic > 1.0


def test_planted_wrong_kernel_fails():
    """A kernel that ignores the activation (always ReLU's) cannot order the family."""
    from ntkcond import infinite_ntk

    def relu_only(x, depth, activation):
        return infinite_ntk(x, depth=depth, activation="relu")

    c = check_activation_rate(formulas=Formulas(infinite_ntk=relu_only))
    assert c.verdict == "FAIL"


# ------------------------------------------------------------------------------------------
# Claims 15 and 16 against planted 1% errors, library-wide (the layer and activation classes)
# ------------------------------------------------------------------------------------------

def test_biases_and_duals_pass():
    for check, cid in ((check_biases, "15"), (check_activation_duals, "16")):
        c = check()
        assert c.id == cid and c.verdict == "PASS", c.deciding
        # measured ≤ 7e-14 (tanh's Mehler series at L = 10); the tolerance is 1e-11
        assert all(k.margin >= 0 for k in c.criteria)


def _plant_bias_variance(monkeypatch, factor):
    """Every dense layer's bias variance s_b² off by ``factor`` where the recursion reads it
    (``ntkcond.network.layers.affine_kernel``, which ``Dense.kernel`` calls: q′ = s_w²q + s_b²,
    c′ = s_w²c + s_b²)."""
    from ntkcond.network import layers

    original = layers.affine_kernel

    def affine_kernel(s, sw2, sb2, trainable, *args, **kwargs):
        return original(s, sw2, factor * sb2, trainable, *args, **kwargs)

    monkeypatch.setattr(layers, "affine_kernel", affine_kernel)


def test_one_percent_error_in_a_bias_variance_fails_claim_15(monkeypatch):
    _plant_bias_variance(monkeypatch, 1.01)
    c = check_biases()
    assert c.verdict == "FAIL" and c.statistic > 1e6 * FAMILY_TOL, c.deciding


@pytest.mark.parametrize("name", ["erf", "gelu", "tanh"])
@pytest.mark.parametrize("which", [0, 2])  # M = E[σσ], Ṁ = E[σ'σ']
def test_one_percent_error_in_a_dual_fails_claim_16(monkeypatch, name, which):
    from ntkcond.activations import parse_activation

    cls = type(parse_activation(name))
    original = cls.dual

    def dual(self, *args, **kwargs):
        out = list(original(self, *args, **kwargs))
        out[which] = 1.01 * out[which]
        return tuple(out)

    monkeypatch.setattr(cls, "dual", dual)
    c = check_activation_duals()
    assert c.verdict == "FAIL" and c.deciding.name.startswith(name), c.deciding
    assert c.statistic > 1e6 * FAMILY_TOL


def test_quadrature_rule_against_mpmath():
    """The Gauss–Legendre rule of the independent route: E[σ(√q z)²] and E[σ'(√q z)²] within
    1e-12 relative of 30-digit mpmath up to q = RULE_MAX_VARIANCE (measured ≤ 1.6e-13)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    exact = {"erf": (mp.erf, lambda t: 2 / mp.sqrt(mp.pi) * mp.exp(-t * t)),
             "gelu": (lambda t: t * mp.ncdf(t), lambda t: mp.ncdf(t) + t * mp.npdf(t)),
             "tanh": (mp.tanh, lambda t: 1 - mp.tanh(t) ** 2)}
    for name, pair in exact.items():
        for q in (0.1, 4.0, Q.RULE_MAX_VARIANCE):
            for k in (0, 1):
                f = pair[k]
                ref = mp.quad(lambda t: f(mp.sqrt(q) * t) ** 2 * mp.npdf(t),
                              [-mp.inf, -2, -1, 0, 1, 2, mp.inf])
                got = Q.diagonal_expectation(Q.SMOOTH[name][k], q)
                assert abs(got - float(ref)) <= 1e-12 * float(ref), (name, q, k)
    # the pair rule: E[σ(u)σ(v)] at c = q (u = v) is the diagonal; at c = 0 the square of E[σ]
    assert Q.pair_expectation(np.tanh, np.tanh, 2.0, 2.0, 2.0) == pytest.approx(
        Q.diagonal_expectation(np.tanh, 2.0), rel=1e-14, abs=0)
    mean = float(np.dot(Q.normal_rule()[1], Q._gelu(Q.normal_rule()[0])))
    assert Q.pair_expectation(Q._gelu, Q._gelu, 1.0, 1.0, 0.0) == pytest.approx(
        mean * mean, rel=1e-13, abs=0)
