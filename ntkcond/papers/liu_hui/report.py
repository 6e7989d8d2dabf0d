"""Checks of Liu & Hui's formulas and theorems (arXiv 2305.08813), each against an independent
computation, with the measured error, the tolerance, and why that tolerance is right.

Every check takes a ``Formulas`` bundle of the closed forms under test (default: ntkcond's)
and compares it with something computed without it: Monte Carlo of finite random layers,
Richardson extrapolation of the exact recursion, exact eigenvalues, or neural-tangents. A
planted error in any formula therefore turns its PASS into a FAIL
(``tests/test_liu_hui.py`` does exactly that).

``run_claims`` runs them all; ``write_report`` writes ``claims.md``, ``claims.json`` and the
figures. ``scripts/check_claims.py`` is the command-line front end.
"""
from __future__ import annotations

import os

import numpy as np

from ... import plot
from ..._core.io import atomic_write
from . import analytic_claims as A
from . import bounds_claims as B
from . import conv_claims
from . import family_claims
from . import finite_claims as F
from . import prop41
from .claim_kit import VERDICTS, Claim, Criterion, Formulas, pyplot, save_figure

__all__ = ["Claim", "Criterion", "Formulas", "checks", "run_claims", "counts", "summary_line",
           "format_table", "report_markdown", "write_report", "plot_gradient_angle_map"]


# ------------------------------------------------------------------------------------------
# Running and reporting
# ------------------------------------------------------------------------------------------

def plot_gradient_angle_map(outdir, formulas=Formulas()) -> tuple:
    """The paper's Figure 1: φ against θ_in for L = 0, 1, 2, 5, 10, 50, log θ axis."""
    plt = pyplot()
    t = np.geomspace(1e-6, np.pi, 400)
    with plot.style():
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for L in (0, 1, 2, 5, 10, 50):
            ax.plot(t, np.degrees(formulas.gradient_angle(t, L)), label=f"L = {L}")
        ax.axhline(np.degrees(formulas.relu_infinite_depth_angle()), color="k", ls=":", lw=0.8,
                   label="arccos(1/4)")
        ax.set(xlabel="input angle θ (rad)", ylabel="gradient angle φ (degrees)",
               title="ReLU, infinite width: gradient angle vs input angle")
        plot.log_axis(ax, "x")
        ax.legend()
        fig.tight_layout()
    return save_figure(fig, outdir, "figure1_gradient_angle.png")


def checks() -> list:
    """Every check, in claim order (each returns a Claim or a list of Claims)."""

    return [F.check_one_layer_angle, F.check_derivative_kernel, F.check_gradient_angle,
            F.check_gradient_angle_nt, A.check_small_angle_law, A.check_embedding_collapse, F.check_linear_nets,
            A.check_infinite_depth, A.check_first_layer_only, A.check_two_points,
            A.check_headline_fails, F.check_optimization_speed, prop41.check_prop41,
            B.check_power_series, B.check_condition_bounds, family_claims.check_biases,
            family_claims.check_activation_duals, family_claims.check_activation_rate,
            conv_claims.check_conv_nets]


def run_claims(*, fast: bool = True, outdir: str | None = None, formulas: Formulas = Formulas(),
               only=None, progress=None, data_dir: str | None = None,
               on_claim=None) -> list[Claim]:
    """Run every check (or those whose claim id starts with one of ``only``).

    Args:
      fast: the quick configuration (fewer widths, seeds and depths; under a minute).
      outdir: where figures go (None: no figures).
      formulas: the closed forms under test.
      only: optional iterable of claim ids, e.g. {"1", "7"}.
      progress: optional callable(name) called before each check.
      data_dir: folder holding ``mnist_test.npz`` and ``cifar10_test.npz`` for the checks on
        real images (default ``../shared/data`` from the current directory); digits always.
      on_claim: optional callable(claim) called as each claim is done (``claims_run`` appends
        its record).
    """
    if outdir is not None:
        os.makedirs(outdir, exist_ok=True)
    claims = []
    for check in selected_checks(only):
        if progress:
            progress(check.__name__)
        with plot.style():  # every claim's figure in ntkcond.plot's one style
            result = check(formulas=formulas, fast=fast, outdir=outdir, data_dir=data_dir)
        for claim in (result if isinstance(result, list) else [result]):
            claims.append(claim)
            if on_claim is not None:
                on_claim(claim)
    return claims


def selected_checks(only=None) -> list:
    """The checks ``run_claims`` runs for ``only`` (all when None), in claim order."""
    return [check for check in checks()
            if only is None or any(check.__name__ == f"check_{o}" or o in _IDS[check.__name__]
                                   for o in only)]


_IDS = {"check_one_layer_angle": {"1"}, "check_derivative_kernel": {"2"},
        "check_gradient_angle": {"3", "3a"}, "check_gradient_angle_nt": {"3", "3b"},
        "check_linear_nets": {"6"},
        "check_optimization_speed": {"11"}, "check_prop41": {"12"},
        "check_small_angle_law": {"4"}, "check_embedding_collapse": {"5"},
        "check_infinite_depth": {"7", "7a", "7b"}, "check_first_layer_only": {"8"},
        "check_two_points": {"9", "9a", "9b"}, "check_headline_fails": {"10"},
        "check_power_series": {"13"}, "check_condition_bounds": {"14"},
        "check_biases": {"15"}, "check_activation_duals": {"16"},
        "check_activation_rate": {"21"}, "check_conv_nets": {"22", "22a", "22b", "22c"}}


def _number(value, near=None) -> str:
    """``value`` to 3 significant digits (NaN, a SKIPPED claim's statistic, as a dash), or
    more where 3 would print it equal to the threshold ``near`` it differs from."""
    if value != value:
        return "—"
    digits = 3
    while (near is not None and value != near and digits < 17
           and f"{value:.{digits}g}" == f"{near:.{digits}g}"):
        digits += 1
    return f"{value:.{digits}g}"


def _threshold(value) -> str:
    """A threshold as given (at most 12 significant digits: 1 − 1e-9 prints 0.999999999)."""
    return "—" if value != value else f"{value:.12g}"


def _margin(value) -> str:
    return "—" if value != value else f"{value:+.3g}"


def counts(claims) -> dict:
    """{verdict: number of claims} over ``VERDICTS``, and "unexpected" (verdicts that differ
    from the expected one)."""
    out = {s: sum(c.verdict == s for c in claims) for s in VERDICTS}
    out["unexpected"] = sum(c.unexpected for c in claims)
    return out


def summary_line(claims) -> str:
    """'15 PASS, 2 FAIL, 1 SKIPPED; 1 verdict differs from the expected one: 3b'."""
    n = counts(claims)
    odd = [c.id for c in claims if c.unexpected]
    head = ", ".join(f"{n[s]} {s}" for s in VERDICTS)
    if not odd:
        return head + "; every verdict as expected"
    return (head + f"; {len(odd)} verdict{'s' if len(odd) > 1 else ''} differ"
            + ("" if len(odd) > 1 else "s") + f" from the expected one: {', '.join(odd)}")


#: The columns of the claims table (terminal and claims.md).
TABLE_HEADER = ("#", "statistic (deciding criterion)", "value", "", "threshold", "margin",
                "expected", "verdict")


def table_rows(claims) -> list:
    """One row of strings per claim: id, the deciding criterion's name, its value, direction,
    threshold and margin (≥ 0 exactly when it holds), the expected verdict and the verdict."""
    return [[c.id, c.deciding.name, _number(c.statistic, c.threshold), c.direction,
             _threshold(c.threshold), _margin(c.margin), c.expected, c.verdict] for c in claims]


def format_table(claims) -> str:
    """The claims as a fixed-width text table (``ntkcond check-claims`` prints it), then the
    verdict counts."""
    from ...runs.tables import text_table

    rows = table_rows(claims)
    for row, c in zip(rows, claims):
        if len(row[1]) > 58:  # long criterion names: the claim's title is in claims.md
            row[1] = row[1][:57] + "…"
    return text_table(TABLE_HEADER, rows) + "\n" + summary_line(claims)


def _anchor(claim) -> str:
    """The anchor Python-Markdown's toc (the docs site) gives the claim's section heading
    "## {id}. {title} — {verdict}": its ``slugify`` (NFKD, ASCII only, word characters,
    spaces and '-' kept, lower case, runs of spaces and '-' as one '-')."""
    import re
    import unicodedata

    text = unicodedata.normalize("NFKD", f"{claim.id}. {claim.title} — {claim.verdict}")
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode("ascii")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def report_markdown(claims, *, mode: str, provenance: dict | None = None) -> str:
    """claims.md: the verdict counts, a summary table (each claim's deciding statistic, its
    direction, threshold and margin, the expected verdict and the verdict: PASS exactly when
    the margin is ≥ 0), then one section per claim listing every criterion.

    A SKIPPED claim (not checked here, e.g. neural-tangents missing) stays in the table and has
    its section, with the reason in place of the numbers."""
    lines = [f"# Liu & Hui (arXiv 2305.08813): claims checked ({mode} mode)", "",
             summary_line(claims) + ".", "",
             "Each claim holds when every one of its criteria holds (`statistic direction "
             "threshold`); the table shows the first criterion that fails, or the claim's first "
             "criterion when all hold, so the verdict is PASS exactly when the margin shown is "
             "≥ 0 (margin = threshold − statistic for `<=`, statistic − threshold for `>=`).", ""]
    if provenance:
        lines += ["Made by `" + (" ".join(provenance.get("command") or []) or provenance.get("call", ""))
                  + f"` at {provenance.get('time', '')} (ntkcond {provenance.get('ntkcond', '')}, "
                  f"jax {provenance.get('jax', '')}, numpy {provenance.get('numpy', '')}, scipy "
                  f"{provenance.get('scipy', '')}, Python {provenance.get('python', '')}).", ""]
    # the claim's title is its section's heading (below): the table keeps to the numbers
    lines += ["| # | statistic (deciding criterion) | value | | threshold | margin | expected | verdict |",
              "|---|---|---|---|---|---|---|---|"]
    for c, row in zip(claims, table_rows(claims)):
        verdict = f"*{c.verdict}*" if c.verdict == "SKIPPED" else f"**{c.verdict}**"
        lines.append("| " + " | ".join([f"[{c.id}](#{_anchor(c)})", _cell(row[1]), row[2],
                                         f"`{row[3]}`", row[4], row[5], c.expected, verdict])
                     + " |")
    for c in claims:
        lines += ["", f"## {c.id}. {c.title} — {c.verdict}", "",
                  f"- Formula: {c.formula}", f"- Paper: {c.paper}", f"- Computed: {c.computed}"]
        if c.verdict == "SKIPPED":
            lines.append(f"- Skipped: {c.skipped}")
        lines += ["", "| criterion | statistic | | threshold | margin | holds |",
                  "|---|---|---|---|---|---|"]
        for k in c.criteria:
            holds = "—" if c.skipped else ("yes" if k.holds else "**no**")
            lines.append(f"| {_cell(k.name)} | {_number(k.statistic, k.threshold)} | `{k.direction}` | "
                         f"{_threshold(k.threshold)} | {_margin(k.margin)} | {holds} |")
        lines += ["", f"- Why these thresholds: {c.why}"]
        if c.expected != "PASS" or c.expected_why:
            lines.append(f"- Expected {c.expected}: {c.expected_why}")
        lines += [f"\n![claim {c.id}]({f})" for f in c.figures]
    return "\n".join(lines) + "\n"


def write_report(claims, outdir: str, *, mode: str, provenance: dict | None = None
                 ) -> tuple[str, str]:
    """Write claims.md and claims.json (atomically) to ``outdir``; returns their paths.

    claims.json holds the mode, the counts and one object per claim: ``Claim.record`` (the
    deciding criterion's statistic, direction, threshold and margin, the expected verdict and
    the verdict, every criterion) and its ``details``; NaN is written as null, so the file is
    strict JSON."""
    import json

    os.makedirs(outdir, exist_ok=True)
    md = os.path.join(outdir, "claims.md")
    js = os.path.join(outdir, "claims.json")
    atomic_write(md, report_markdown(claims, mode=mode, provenance=provenance))
    payload = {"mode": mode, "counts": counts(claims),
               "claims": [{**c.record(), "details": c.details} for c in claims]}
    atomic_write(js, json.dumps(_strict(payload), indent=2, default=_jsonable,
                                allow_nan=False) + "\n")
    return md, js


def _strict(value):
    """``value`` with NaN as None and ±inf as "inf"/"-inf" (strict JSON)."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return None if v != v else (v if np.isfinite(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray):
        return _strict(value.tolist())
    return value


def _jsonable(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
