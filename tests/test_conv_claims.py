"""Claim 22 (``ntkcond.papers.liu_hui.conv_claims``): Liu & Hui's linear-net and ReLU
statements asked of CNNs with a flatten read-out pass on the real sets present (the digits
always), and a planted error fails each part: a 1% error in the convolution's weight variance
(22a), a kernel that pads circularly whatever it is asked (22b), a kernel that ignores the
activation (22c)."""
import math

import numpy as np
import pytest

from ntkcond.papers.liu_hui import claim_kit
from ntkcond.papers.liu_hui.claim_kit import Formulas, cnn_ntk
from ntkcond.papers.liu_hui.conv_claims import CIRCULAR_TOL, check_conv_nets


def _by_id(claims):
    return {c.id: c for c in claims}


@pytest.fixture(scope="module")
def claims():
    return _by_id(check_conv_nets())


def test_claims_pass(claims):
    assert [c.verdict for c in claims.values()] == ["PASS"] * 3
    assert claims["22a"].statistic < CIRCULAR_TOL
    kappas = claims["22a"].details["kappa_eff"]["digits"]
    circular = np.array(kappas["linear circular"])
    assert np.max(np.abs(circular / circular[0] - 1)) < 1e-12  # depth-independent (22a)


def test_linear_circular_kernel_is_the_gram_matrix():
    """22a's identity by hand on 3 random 5 × 4 × 2 images: Θ_3 = 4·XXᵀ/40 (exact up to
    rounding: 1e-14 of the diagonal)."""
    x = np.random.default_rng(0).standard_normal((3, 5, 4, 2))
    flat = x.reshape(3, -1)
    K = cnn_ntk(x, 3, "linear", "CIRCULAR")
    assert np.max(np.abs(K - 4 * flat @ flat.T / 40)) < 1e-14 * np.max(np.diag(K))


def test_one_percent_weight_variance_error_fails_22a(monkeypatch):
    monkeypatch.setitem(claim_kit.CNN_ACTIVATIONS, "linear", (None, math.sqrt(1.01)))
    c = _by_id(check_conv_nets())["22a"]
    assert c.verdict == "FAIL" and c.statistic > 1e-3


def test_always_circular_fails_22b():
    def circular(images, depth, activation, padding="SAME"):
        return cnn_ntk(images, depth, activation, "CIRCULAR")

    c = _by_id(check_conv_nets(formulas=Formulas(cnn_ntk=circular)))["22b"]
    assert c.verdict == "FAIL" and c.statistic < 1e-9


def test_activation_ignored_fails_22c():
    def linear_only(images, depth, activation, padding="SAME"):
        return cnn_ntk(images, depth, "linear", padding)

    c = _by_id(check_conv_nets(formulas=Formulas(cnn_ntk=linear_only)))["22c"]
    assert c.verdict == "FAIL" and c.statistic == 1.0
