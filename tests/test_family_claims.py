"""Claim 21 (``ntkcond.papers.liu_hui.family_claims``): Terjék & González-Sánchez's rate claim
on the a·s + b·|s| family passes, and planted errors (a wrong Δ_φ, a wrong kernel) fail it."""
import math

import pytest

from ntkcond.papers.liu_hui.claim_kit import Formulas
from ntkcond.papers.liu_hui.family_claims import (check_activation_rate, convergence_depth,
                                                  terjek_delta)


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
    assert claim.status == "PASS" and claim.id == "21"
    d = claim.details
    assert d["order_ok"] and d["abs_beats_relu"] and claim.error < 1.0
    assert d["depth_to_tau"]["abs"] < d["depth_to_tau"]["relu"]


def test_planted_wrong_delta_fails():
    wrong = lambda a: 1.0 - terjek_delta(a)  # a²/(a² + b²): the order reversed  # noqa: E731
    c = check_activation_rate(delta=wrong)
    assert c.status == "FAIL" and c.error > 1.0


def test_planted_wrong_kernel_fails():
    """A kernel that ignores the activation (always ReLU's) cannot order the family."""
    from ntkcond import infinite_ntk

    def relu_only(x, depth, activation):
        return infinite_ntk(x, depth=depth, activation="relu")

    c = check_activation_rate(formulas=Formulas(infinite_ntk=relu_only))
    assert c.status == "FAIL"
