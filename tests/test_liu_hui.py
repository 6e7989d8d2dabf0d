import dataclasses
import json
import math
import sys
import time

import numpy as np
import pytest

from ntkcond import angles as A
from ntkcond.papers.liu_hui import report as C
from ntkcond.papers.liu_hui.claim_kit import real_image_sets
from ntkcond.papers.liu_hui import analytic_claims as CA
from ntkcond.papers.liu_hui import finite_claims as CF
from ntkcond.papers.liu_hui import prop41
from ntkcond import infinite_ntk, lambda_min_upper_bound
from conftest import load_script

EXPECTED_FAIL = {"9b"}  # the unconditional reading of v2 Theorem F.1 is false (near-orthogonal pairs)


def _neural_tangents_importable() -> bool:
    try:
        import neural_tangents  # noqa: F401
    except ImportError:
        return False
    return True


def test_fast_mode_verdicts_and_report(tmp_path):
    start = time.perf_counter()
    claims = C.run_claims(fast=True, outdir=str(tmp_path))
    elapsed = time.perf_counter() - start
    verdicts = {c.id: c.status for c in claims}
    assert set(verdicts) >= {"1", "2", "3a", "3b", "4", "5", "6", "7a", "7b", "8", "9a", "9b", "10",
                             "11", "12"}
    # 3b needs neural-tangents: SKIPPED (never dropped) without it, checked with it.
    assert verdicts["3b"] == ("PASS" if _neural_tangents_importable() else "SKIPPED")
    assert all(c.passed == (c.status == "PASS") for c in claims)
    if real_image_sets()[0][0] == "digits":
        # No ../shared/data (a user's clone): claim 11 trains on 32 digits images, where the
        # early-phase gap to the NTK prediction stops shrinking with width (≈4% at m = 256,
        # 1024 and 4096: measured over 5 seeds, it grows along the run and is the same per seed
        # at every width), so its m^-1/2 verdict is not asserted there; the gap itself must
        # still be within the claim's tolerance. On MNIST (CI, the README) it must PASS.
        c11 = next(c for c in claims if c.id == "11")
        assert "digits" in c11.computed and c11.error <= c11.tolerance, (c11.error, c11.tolerance)
        checked = {k: v for k, v in verdicts.items() if k != "11"}
    else:
        checked = verdicts
    assert {k for k, v in checked.items() if v == "FAIL"} == EXPECTED_FAIL
    assert elapsed < 60, f"fast mode took {elapsed:.0f} s"
    md, js = C.write_report(claims, str(tmp_path), mode="fast")
    text = open(md).read()
    assert "**FAIL**" in text and "(n+3)/3" in text
    payload = json.load(open(js))
    assert {c["id"] for c in payload["claims"]} == set(verdicts)
    assert {c["id"]: c["status"] for c in payload["claims"]} == verdicts
    for c in claims:
        for f in c.figures:
            assert (tmp_path / f).stat().st_size > 5000


def test_missing_neural_tangents_reports_3b_skipped(tmp_path, monkeypatch):
    # None in sys.modules makes `import neural_tangents` raise ImportError, as on a newest-jax
    # install without the nt extra.
    monkeypatch.setitem(sys.modules, "neural_tangents", None)
    claims = C.run_claims(fast=True, outdir=str(tmp_path), only=["3b"])
    assert [(c.id, c.status, c.passed) for c in claims] == [("3b", "SKIPPED", False)]
    skipped = claims[0]
    assert "neural-tangents is not importable" in skipped.why and math.isnan(skipped.error)
    md, js = C.write_report(claims, str(tmp_path), mode="fast")
    text = open(md).read()
    assert "| 3b | Depth-L gradient angle φ(θ, L) vs neural-tangents | — | 1e-06 | *SKIPPED* |" in text
    assert "## 3b. Depth-L gradient angle φ(θ, L) vs neural-tangents — SKIPPED" in text
    assert "- Skipped: neural-tangents is not importable" in text
    assert "0 PASS, 0 FAIL, 1 SKIPPED" in text

    def strict(token):
        raise ValueError(f"non-JSON constant {token}")

    payload = json.loads(open(js).read(), parse_constant=strict)
    assert payload["counts"] == {"PASS": 0, "FAIL": 0, "SKIPPED": 1}
    (entry,) = payload["claims"]
    assert entry["status"] == "SKIPPED" and entry["error"] is None and entry["tolerance"] == 1e-6


def test_check_claims_prints_the_status(tmp_path, capsys, monkeypatch):
    script = load_script("check_claims")
    ok = C.Claim(id="1", title="t1", formula="f", paper="p", computed="c", error=0.01,
                 tolerance=0.1, why="w", passed=True)
    bad = dataclasses.replace(ok, id="2", error=0.5, passed=False, status="")
    skip = C.Claim.skipped("3b", "t3", "f", "p", reason="neural-tangents is not importable")
    from ntkcond.papers.liu_hui import claims_run

    monkeypatch.setattr(claims_run, "run_claims", lambda **kw: [ok, bad, skip])
    monkeypatch.setattr(claims_run, "plot_gradient_angle_map", lambda out: ())
    assert script.main(["--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["1", "PASS"] and out[1].split()[:2] == ["2", "FAIL"]
    assert out[2].split()[:2] == ["3b", "SKIPPED"]
    assert out[3].strip() == "skipped: neural-tangents is not importable"
    assert out[4] == "1 PASS, 1 FAIL, 1 SKIPPED"


def test_claim_status_follows_passed_and_is_validated():
    kw = dict(id="x", title="t", formula="f", paper="p", computed="c", error=0.0, tolerance=1.0, why="w")
    assert C.Claim(**kw, passed=True).status == "PASS"
    assert C.Claim(**kw, passed=False).status == "FAIL"
    with pytest.raises(ValueError, match=r"Claim: expected passed=False with status 'SKIPPED'"):
        C.Claim(**kw, passed=True, status="SKIPPED")
    with pytest.raises(ValueError, match=r"Claim: expected passed=True with status 'PASS'"):
        C.Claim(**kw, passed=False, status="PASS")
    with pytest.raises(ValueError, match=r"Claim: expected status in \('PASS', 'FAIL', 'SKIPPED'\)"):
        C.Claim(**kw, passed=False, status="MAYBE")


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
    "12-half": (prop41.check_prop41, dict(lambda_min_upper_bound=lambda K: _scaled_bound(K, 0.5))),
    "12-double": (prop41.check_prop41, dict(lambda_min_upper_bound=lambda K: _scaled_bound(K, 2.0))),
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
