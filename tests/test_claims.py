import dataclasses
import json
import time

import numpy as np
import pytest

from ntkcond import angles as A
from ntkcond.papers.liu_hui import report as C
from ntkcond.papers.liu_hui._kit import real_image_sets
from ntkcond.papers.liu_hui import analytic as CA
from ntkcond.papers.liu_hui import finite as CF
from ntkcond import infinite_ntk, lambda_min_upper_bound

EXPECTED_FAIL = {"9b"}  # the unconditional reading of v2 Theorem F.1 is false (near-orthogonal pairs)


def test_fast_mode_verdicts_and_report(tmp_path):
    start = time.perf_counter()
    claims = C.run_claims(fast=True, outdir=str(tmp_path))
    elapsed = time.perf_counter() - start
    verdicts = {c.id: c.passed for c in claims}
    assert set(verdicts) >= {"1", "2", "3a", "4", "5", "6", "7a", "7b", "8", "9a", "9b", "10", "11",
                             "12"}
    if real_image_sets()[0][0] == "digits":
        # No ../shared/data (a user's clone): claim 11 trains on 32 digits images, where the
        # early-phase gap to the NTK prediction stops shrinking with width (≈4% at m = 256,
        # 1024 and 4096: measured over 5 seeds, it grows along the run and is the same per seed
        # at every width), so its m^-1/2 verdict is not asserted there; the gap itself must
        # still be within the claim's tolerance. On MNIST (CI, the README) it must PASS.
        c11 = next(c for c in claims if c.id == "11")
        assert "digits" in c11.computed and c11.error <= c11.tolerance, (c11.error, c11.tolerance)
        checked = {k: ok for k, ok in verdicts.items() if k != "11"}
    else:
        checked = verdicts
    assert {k for k, ok in checked.items() if not ok} == EXPECTED_FAIL
    assert elapsed < 60, f"fast mode took {elapsed:.0f} s"
    md, js = C.write_report(claims, str(tmp_path), mode="fast")
    text = open(md).read()
    assert "**FAIL**" in text and "(n+3)/3" in text
    payload = json.load(open(js))
    assert {c["id"] for c in payload["claims"]} == set(verdicts)
    for c in claims:
        for f in c.figures:
            assert (tmp_path / f).stat().st_size > 5000


def _perturbed(**changes):
    return dataclasses.replace(C.Formulas(), **changes)


def _scaled_bound(K, factor):
    bound, i, j = lambda_min_upper_bound(K)
    return factor * bound, i, j


PLANTED = {
    "1": (CF.check_one_layer_angle,
          dict(angle_map=lambda t, a="relu": A.angle_map(t, a) * 1.02)),
    "2": (CF.check_derivative_kernel,
          dict(derivative_factor=lambda t, a="relu": A.derivative_factor(t, a) * 1.02)),
    "3a": (CF.check_gradient_angle,  # derivative factor of leaky 0.1 instead of ReLU's
           dict(gradient_angle=lambda t, L, a="relu", trainable="all": A.gradient_angle(t, L, 0.1))),
    "6": (CF.check_linear_nets,  # a "linear" angle map that is not the identity
          dict(gradient_angle=lambda t, L, a="relu", trainable="all": A.gradient_angle(t, L, 0.9))),
    "4": (CA.check_small_angle_law,  # L/π instead of L/(2π)
          dict(small_angle_gradient_cos=lambda t, L, a="relu": (1 - L * t / np.pi) * np.cos(t))),
    "5": (CA.check_embedding_collapse,
          dict(embedding_angle_asymptote=lambda l: 2 * np.pi / np.asarray(l, float))),
    "7-angle": (CA.check_infinite_depth, dict(relu_infinite_depth_angle=lambda: float(np.arccos(0.26)))),
    "7-kappa": (CA.check_infinite_depth, dict(infinite_depth_kappa=lambda n: (n + 4) / 3)),
    "8": (CA.check_first_layer_only,  # ignores `trainable`: all layers instead of W⁽¹⁾ only
          dict(infinite_ntk=lambda x, depth, activation="relu", trainable="all":
               infinite_ntk(x, depth=depth, activation=activation))),
    "9a": (CA.check_two_points,  # a gradient-angle closed form with the wrong derivative factor
           dict(gradient_angle=lambda t, L, a="relu", trainable="all": A.gradient_angle(t, L, 0.1))),
    "10": (CA.check_headline_fails,  # ReLU kernels replaced by linear ones
           dict(infinite_ntk=lambda x, depth, activation="relu", trainable="all":
                infinite_ntk(x, depth=depth, activation="linear"))),
    # Prop 4.1's pair bound off by a factor of 2 either way: too small breaks λmin ≤ bound on the
    # real and near-duplicate batches, too large breaks tightness (and both the match with
    # 1 − max|cos φ| from the angles)
    "12-half": (CF.check_prop41, dict(lambda_min_upper_bound=lambda K: _scaled_bound(K, 0.5))),
    "12-double": (CF.check_prop41, dict(lambda_min_upper_bound=lambda K: _scaled_bound(K, 2.0))),
}


# Claim 11 tests no closed form of Formulas (it compares training with the initial-NTK
# prediction computed in the check itself), so it has no planted variant here.
@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_planted_errors_turn_pass_into_fail(planted):
    # The honest formulas PASS in test_fast_mode_verdicts_and_report; each planted error must FAIL.
    check, change = PLANTED[planted]
    pick = {"7-angle": "7a", "7-kappa": "7b", "12-half": "12", "12-double": "12"}.get(planted, planted)
    broken = check(formulas=_perturbed(**change), fast=True)
    broken = [c for c in (broken if isinstance(broken, list) else [broken]) if c.id == pick]
    assert len(broken) == 1 and not broken[0].passed
