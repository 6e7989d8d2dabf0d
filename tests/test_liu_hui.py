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
from ntkcond.papers.liu_hui import bounds_claims as CB
from ntkcond.papers.liu_hui import quadrature as Q
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
    verdicts = {c.id: c.verdict for c in claims}
    assert set(verdicts) >= {"1", "2", "3a", "3b", "4", "5", "6", "7a", "7b", "8", "9a", "9b", "10",
                             "11", "12", "13", "14", "15", "16", "21"}
    # 3b needs neural-tangents: SKIPPED (never dropped) without it, checked with it.
    assert verdicts["3b"] == ("PASS" if _neural_tangents_importable() else "SKIPPED")
    for c in claims:  # every verdict can be checked from the numbers shown beside it
        if c.verdict != "SKIPPED":
            assert (c.verdict == "PASS") == (c.margin >= 0), (c.id, c.statistic, c.threshold)
            assert c.margin == (c.threshold - c.statistic if c.direction == "<="
                                else c.statistic - c.threshold)
    c11 = next(c for c in claims if c.id == "11")
    if real_image_sets()[0][0] == "digits":
        # No ../shared/data (a user's clone): claim 11 trains on 32 digits images, where the
        # early-phase gap to the NTK prediction stops shrinking with width (≈4% at m = 256,
        # 1024 and 4096: measured over 5 seeds, it grows along the run and is the same per seed
        # at every width). The claim says so (expected FAIL there); the gap itself must still
        # be within the claim's tolerance. On MNIST (CI, the README) it must PASS.
        assert "digits" in c11.computed and c11.expected == "FAIL"
        assert c11.criteria[0].holds, c11.criteria[0]
    else:
        assert c11.expected == "PASS"
    odd = {c.id for c in claims if c.unexpected} - ({"3b"} if not _neural_tangents_importable()
                                                    else set())
    assert odd == set(), [(c.id, c.verdict, c.deciding) for c in claims if c.unexpected]
    assert {k for k, v in verdicts.items() if v == "FAIL"} >= EXPECTED_FAIL
    # about 50 s on this 2-core machine under a load of 4; the bound catches a runaway check
    assert elapsed < 90, f"fast mode took {elapsed:.0f} s"
    md, js = C.write_report(claims, str(tmp_path), mode="fast")
    text = open(md).read()
    assert "**FAIL**" in text and "(n+3)/3" in text
    payload = json.load(open(js))
    assert {c["id"] for c in payload["claims"]} == set(verdicts)
    assert {c["id"]: c["verdict"] for c in payload["claims"]} == verdicts
    for c in claims:
        for f in c.figures:
            assert (tmp_path / f).stat().st_size > 5000


def test_missing_neural_tangents_reports_3b_skipped(tmp_path, monkeypatch):
    # None in sys.modules makes `import neural_tangents` raise ImportError, as on a newest-jax
    # install without the nt extra.
    monkeypatch.setitem(sys.modules, "neural_tangents", None)
    claims = C.run_claims(fast=True, outdir=str(tmp_path), only=["3b"])
    assert [(c.id, c.verdict, c.expected, c.unexpected) for c in claims] == [
        ("3b", "SKIPPED", "PASS", True)]
    skipped = claims[0]
    assert "neural-tangents is not importable" in skipped.skipped and math.isnan(skipped.statistic)
    md, js = C.write_report(claims, str(tmp_path), mode="fast")
    text = open(md).read()
    assert ("| [3b](#3b-depth-l-gradient-angle-l-vs-neural-tangents-skipped) | max relative "
            "angle error vs neural-tangents' stax | — | `<=` | 1e-06 | — | PASS | *SKIPPED* |") in text
    assert "## 3b. Depth-L gradient angle φ(θ, L) vs neural-tangents — SKIPPED" in text
    assert "- Skipped: neural-tangents is not importable" in text
    assert "0 PASS, 0 FAIL, 1 SKIPPED; 1 verdict differs from the expected one: 3b" in text

    def strict(token):
        raise ValueError(f"non-JSON constant {token}")

    payload = json.loads(open(js).read(), parse_constant=strict)
    assert payload["counts"] == {"PASS": 0, "FAIL": 0, "SKIPPED": 1, "unexpected": 1}
    (entry,) = payload["claims"]
    assert entry["verdict"] == "SKIPPED" and entry["statistic"] is None
    assert entry["threshold"] == 1e-6 and entry["margin"] is None


def _claim(id, statistic, threshold=0.1, direction="<=", expected="PASS"):
    return C.Claim(id=id, title=f"t{id}", formula="f", paper="p", computed="c",
                   criteria=(C.Criterion("s", statistic, direction, threshold),), why="w",
                   expected=expected)


def test_check_claims_prints_the_table_and_strict_exits_1_on_unexpected(tmp_path, capsys,
                                                                        monkeypatch):
    script = load_script("check_claims")
    ok = _claim("1", 0.01)
    bad = _claim("2", 0.5)  # FAIL, expected PASS: unexpected
    refuted = _claim("9b", 2.0, 1.0, expected="FAIL")  # FAIL as expected
    skip = C.Claim.skipped_claim("3b", "t3", "f", "p", reason="neural-tangents is not importable",
                                 criteria=[("s", "<=", 1e-6)])
    from ntkcond.papers.liu_hui import claims_run

    monkeypatch.setattr(claims_run, "run_claims",
                        lambda on_claim=None, **kw: [on_claim(c) or c for c in (ok, bad, refuted, skip)]
                        if on_claim else [ok, bad, refuted, skip])
    monkeypatch.setattr(claims_run, "plot_gradient_angle_map", lambda out: ())
    assert script.main(["--out", str(tmp_path / "a"), "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in out[2:6]]
    # id, value, direction, threshold, margin, expected, verdict (the criterion's name is "s")
    assert rows[0] == ["1", "s", "0.01", "<=", "0.1", "+0.09", "PASS", "PASS"]
    assert rows[1] == ["2", "s", "0.5", "<=", "0.1", "-0.4", "PASS", "FAIL"]
    assert rows[2] == ["9b", "s", "2", "<=", "1", "-1", "FAIL", "FAIL"]
    assert rows[3] == ["3b", "s", "—", "<=", "1e-06", "—", "PASS", "SKIPPED"]
    assert out[6] == "1 PASS, 2 FAIL, 1 SKIPPED; 2 verdicts differ from the expected one: 2, 3b"
    assert out[7] == "3b skipped: neural-tangents is not importable"
    assert script.main(["--out", str(tmp_path / "b"), "--no-progress", "--strict"]) == 1
    assert "--strict: unexpected verdicts: 2 FAIL (expected PASS), 3b SKIPPED (expected PASS)" in \
        capsys.readouterr().out
    monkeypatch.setattr(claims_run, "run_claims",
                        lambda on_claim=None, **kw: [on_claim(c) or c for c in (ok, refuted)])
    assert script.main(["--out", str(tmp_path / "c"), "--no-progress", "--strict"]) == 0
    import ntkcond.runs

    df = ntkcond.runs.load(tmp_path / "c")  # one row per claim
    assert list(df.id) == ["1", "9b"] and list(df.verdict) == ["PASS", "FAIL"]
    assert list(df.margin) == pytest.approx([0.09, -1.0], rel=1e-12, abs=0)
    assert df.attrs["provenance"][0]["command"][:3] == ["python", "scripts/check_claims.py", "--out"]


def test_criterion_margin_and_claim_verdict():
    c = C.Criterion("x", 0.5, "<=", 1.0)
    assert c.margin == 0.5 and c.holds
    assert C.Criterion("x", 1.0, "<=", 1.0).holds  # equality holds: margin 0
    assert C.Criterion("x", 2.0, ">=", 1.0).margin == 1.0
    assert not C.Criterion("x", math.nan, "<=", 1.0).holds
    assert C.Criterion("x", math.inf, "<=", 1.0).margin == -math.inf
    with pytest.raises(ValueError, match=r"Criterion: expected direction in \('<=', '>='\)"):
        C.Criterion("x", 1.0, "<", 1.0)
    with pytest.raises(TypeError, match="Criterion: expected statistic a real number"):
        C.Criterion("x", True, "<=", 1.0)
    two = C.Claim(id="x", title="t", formula="f", paper="p", computed="c", why="w",
                  criteria=(C.Criterion("a", 0.0, "<=", 1.0), C.Criterion("b", 3.0, "<=", 2.0)))
    # the first failing criterion decides: the verdict and the margin shown agree
    assert two.verdict == "FAIL" and two.deciding.name == "b" and two.margin == -1.0
    both = dataclasses.replace(two, criteria=(C.Criterion("a", 0.0, "<=", 1.0),
                                              C.Criterion("b", 1.0, "<=", 2.0)))
    assert both.verdict == "PASS" and both.deciding.name == "a" and both.margin == 1.0
    with pytest.raises(ValueError, match="Claim x: expected expected in"):
        dataclasses.replace(two, expected="MAYBE")
    with pytest.raises(TypeError, match="Claim x: expected criteria as a nonempty sequence"):
        dataclasses.replace(two, criteria=())
    record = two.record()
    assert record["verdict"] == "FAIL" and record["margin"] == -1.0 and record["unexpected"]
    assert [k["name"] for k in record["criteria"]] == ["a", "b"]


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
@pytest.mark.slow
@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_planted_errors_turn_pass_into_fail(planted):
    # The honest formulas PASS in test_fast_mode_verdicts_and_report; each planted error must FAIL.
    check, change = PLANTED[planted]
    pick = {"7-angle": "7a", "7-kappa": "7b", "12-half": "12", "12-double": "12"}.get(planted, planted)
    broken = check(formulas=_perturbed(**change), fast=True)
    broken = [c for c in (broken if isinstance(broken, list) else [broken]) if c.id == pick]
    assert len(broken) == 1 and broken[0].verdict == "FAIL"


# ------------------------------------------------------------------------------------------
# A 1% error (relative; 1e-3 rad for angles) in the formula each claim checks must FAIL it
# (issue 25). Claim 9b is the paper's statement read unconditionally and FAILs as it is (a
# counterexample, not a tolerance), and claim 11 tests no closed form: neither is listed.
# ------------------------------------------------------------------------------------------

def _off_diagonal(K, factor):
    # off-diagonal entries scaled by factor < 1: (1 − f)·diag(K) + f·K stays PSD, κ moves by ~1%
    K = np.array(K, dtype=np.float64)
    return K * (factor + (1.0 - factor) * np.eye(K.shape[0]))


def _kernel_off_by(factor):
    return lambda x, depth, activation="relu", trainable="all": _off_diagonal(
        infinite_ntk(x, depth=depth, activation=activation, trainable=trainable), factor)


def _series_scaled(coef=1.0, tail=1.0):
    from ntkcond import ntk_power_series

    def f(depth, activation="relu", *, order, trainable="all"):
        s = ntk_power_series(depth, activation, order=order, trainable=trainable)
        return dataclasses.replace(s, coefficients=s.coefficients * coef, tail=s.tail * tail)
    return f


def _bounds_scaled(lower=1.0, upper=1.0):
    from ntkcond import condition_number_bounds

    def f(x, **kw):
        b = condition_number_bounds(x, **kw)
        return dataclasses.replace(b, lower=b.lower * lower, upper=b.upper * upper)
    return f


ONE_PERCENT = {
    "1": (CF.check_one_layer_angle, dict(angle_map=lambda t, a="relu": A.angle_map(t, a) * 1.01)),
    "2": (CF.check_derivative_kernel,
          dict(derivative_factor=lambda t, a="relu": A.derivative_factor(t, a) * 1.01)),
    "3a": (CF.check_gradient_angle, dict(gradient_angle=lambda t, L, a="relu", trainable="all":
                                         A.gradient_angle(t, L, a, trainable) * 1.01)),
    "3b": (CF.check_gradient_angle_nt, dict(gradient_angle=lambda t, L, a="relu", trainable="all":
                                            A.gradient_angle(t, L, a, trainable) * 1.01)),
    "4": (CA.check_small_angle_law,
          dict(small_angle_gradient_cos=lambda t, L, a="relu": (1 - 1.01 * L * t / (2 * np.pi)) * np.cos(t))),
    "5-asymptote": (CA.check_embedding_collapse,
                    dict(embedding_angle_asymptote=lambda l: 1.01 * 3 * np.pi / np.asarray(l, float))),
    "5-map": (CA.check_embedding_collapse, dict(angle_map=lambda t, a="relu": A.angle_map(t, a) * 1.01)),
    "6": (CF.check_linear_nets, dict(infinite_ntk=lambda x, depth, activation="relu", trainable="all":
                                     1.01 * infinite_ntk(x, depth=depth, activation=activation))),
    "7-angle": (CA.check_infinite_depth,  # 1e-3 rad
                dict(relu_infinite_depth_angle=lambda: float(np.arccos(0.25)) + 1e-3)),
    "7-kappa": (CA.check_infinite_depth, dict(infinite_depth_kappa=lambda n: 1.01 * (n + 3) / 3)),
    "8": (CA.check_first_layer_only, dict(infinite_ntk=_kernel_off_by(0.99))),
    "9a-angle": (CA.check_two_points, dict(gradient_angle=lambda t, L, a="relu", trainable="all":
                                           A.gradient_angle(t, L, a, trainable) * 1.01)),
    "9a-kernel": (CA.check_two_points, dict(infinite_ntk=_kernel_off_by(0.99))),
    "10": (CA.check_headline_fails, dict(infinite_ntk=_kernel_off_by(0.99))),
    "12-low": (prop41.check_prop41, dict(lambda_min_upper_bound=lambda K: _scaled_bound(K, 0.99))),
    "12-high": (prop41.check_prop41, dict(lambda_min_upper_bound=lambda K: _scaled_bound(K, 1.01))),
    "13-coefficients": (CB.check_power_series, dict(ntk_power_series=_series_scaled(coef=1.01))),
    "13-tail": (CB.check_power_series, dict(ntk_power_series=_series_scaled(tail=0.99))),
    "14-lower": (CB.check_condition_bounds, dict(condition_number_bounds=_bounds_scaled(lower=1.01))),
    "14-upper": (CB.check_condition_bounds, dict(condition_number_bounds=_bounds_scaled(upper=0.99))),
}


def _claim_id(planted):
    head = planted.split("-")[0]
    return {"7": "7a" if planted == "7-angle" else "7b"}.get(head, head)


@pytest.mark.slow
@pytest.mark.parametrize("planted", sorted(ONE_PERCENT))
def test_one_percent_planted_errors_fail(planted):
    check, change = ONE_PERCENT[planted]
    if planted == "3b" and not _neural_tangents_importable():
        pytest.skip("claim 3b needs neural-tangents (SKIPPED without it)")
    result = check(formulas=_perturbed(**change), fast=True)
    result = [c for c in (result if isinstance(result, list) else [result]) if c.id == _claim_id(planted)]
    assert len(result) == 1 and result[0].verdict == "FAIL", (planted, result[0].deciding)


def _plant_derivative_slope(monkeypatch, factor):
    """The derivative factor's slope β off by ``factor`` where the library keeps it: the leaky
    activation object's ``derivative_slope`` (the issue's planted error, library-wide)."""
    from ntkcond.activations import Activation

    original = Activation.derivative_slope.fget
    monkeypatch.setattr(Activation, "derivative_slope",
                        property(lambda self: factor * original(self)))


# Every claim whose formula involves the derivative factor; claims 1, 5, 6 (angle map, linear
# nets) and 12 (the interlacing bound, valid for any PSD kernel) do not depend on it.
SLOPE_CHECKS = {"2": CF.check_derivative_kernel, "3a": CF.check_gradient_angle,
                "3b": CF.check_gradient_angle_nt, "4": CA.check_small_angle_law,
                "7a": CA.check_infinite_depth, "7b": CA.check_infinite_depth,
                "8": CA.check_first_layer_only, "9a": CA.check_two_points,
                "10": CA.check_headline_fails, "13": CB.check_power_series}


@pytest.mark.slow
@pytest.mark.parametrize("claim", sorted(SLOPE_CHECKS))
def test_one_percent_error_in_the_derivative_slope_fails(claim, monkeypatch):
    if claim == "3b" and not _neural_tangents_importable():
        pytest.skip("claim 3b needs neural-tangents (SKIPPED without it)")
    _plant_derivative_slope(monkeypatch, 1.01)
    result = SLOPE_CHECKS[claim](fast=True)
    result = [c for c in (result if isinstance(result, list) else [result]) if c.id == claim]
    assert len(result) == 1 and result[0].verdict == "FAIL", (claim, result[0].deciding)


def test_quadrature_route_matches_the_closed_forms():
    # the independent route of the claims, against ntkcond's closed forms (≤ 1e-14 measured)
    for slope in (0.0, 0.2, 0.9):
        for t in (0.05, 0.7, 1.6, 3.0):
            assert Q.layer_cos(t, slope) == pytest.approx(np.cos(A.angle_map(t, slope)), rel=1e-13, abs=1e-15)
            assert Q.layer_derivative(t, slope) == pytest.approx(float(A.derivative_factor(t, slope)),
                                                                 rel=1e-13, abs=1e-15)
    for L in (1, 4):
        assert Q.pair_gradient_angle(0.8, L) == pytest.approx(float(A.gradient_angle(0.8, L)), rel=1e-12, abs=0)
    assert Q.kernel_rel_diff(infinite_ntk, 3, slope=0.3) < Q.QUADRATURE_TOL


def test_check_claims_in_memory_and_on_disk_give_one_row_per_claim(tmp_path):
    pd = pytest.importorskip("pandas")
    import ntkcond.runs
    from ntkcond.papers.liu_hui.claims_run import check_claims

    memory = check_claims(None, only=["4", "5"])
    assert memory.markdown is None and [c.id for c in memory.claims] == ["4", "5"]
    frame = memory.frame()
    assert list(frame.id) == ["4", "5"] and (frame.margin >= 0).all()
    assert (frame.verdict == "PASS").all() and not frame.unexpected.any()
    assert frame.attrs["data"][-1]["name"] == "digits"  # the data the checks read, named
    disk = check_claims(str(tmp_path / "r"), only=["4"])
    pd.testing.assert_frame_equal(disk.frame(), ntkcond.runs.load(tmp_path / "r"))
    assert disk.frame().attrs == ntkcond.runs.load(tmp_path / "r").attrs


def test_table_links_match_the_sites_section_anchors():
    markdown = pytest.importorskip("markdown")
    from markdown.extensions.toc import slugify

    for c in (_claim("9b", 2.0, 1.0, expected="FAIL"),
              C.Claim.skipped_claim("3b", "Depth-L gradient angle φ(θ, L) vs neural-tangents",
                                    "f", "p", reason="r", criteria=[("s", "<=", 1e-6)])):
        heading = f"{c.id}. {c.title} — {c.verdict}"
        assert C._anchor(c) == slugify(heading, "-")
        html = markdown.markdown(f"## {heading}", extensions=["toc"])
        assert f'id="{C._anchor(c)}"' in html
