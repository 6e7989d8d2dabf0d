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

import dataclasses
import os

import numpy as np

from ..._core.io import atomic_write
from . import analytic_claims as A
from . import bounds_claims as B
from . import family_claims
from . import finite_claims as F
from . import prop41
from .claim_kit import STATUSES, Claim, Formulas, pyplot, save_figure

__all__ = ["Claim", "Formulas", "checks", "run_claims", "write_report", "plot_gradient_angle_map"]


# ------------------------------------------------------------------------------------------
# Running and reporting
# ------------------------------------------------------------------------------------------

def plot_gradient_angle_map(outdir, formulas=Formulas()) -> tuple:
    """The paper's Figure 1: φ against θ_in for L = 0, 1, 2, 5, 10, 50, log θ axis."""
    plt = pyplot()
    t = np.geomspace(1e-6, np.pi, 400)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for L in (0, 1, 2, 5, 10, 50):
        ax.semilogx(t, np.degrees(formulas.gradient_angle(t, L)), label=f"L = {L}")
    ax.axhline(np.degrees(formulas.relu_infinite_depth_angle()), color="k", ls=":", lw=0.8,
               label="arccos(1/4)")
    ax.set(xlabel="input angle θ (rad)", ylabel="gradient angle φ (degrees)",
           title="ReLU, infinite width: gradient angle vs input angle")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, outdir, "figure1_gradient_angle.png")


def checks() -> list:
    """Every check, in claim order (each returns a Claim or a list of Claims)."""

    return [F.check_one_layer_angle, F.check_derivative_kernel, F.check_gradient_angle,
            F.check_gradient_angle_nt, A.check_small_angle_law, A.check_embedding_collapse, F.check_linear_nets,
            A.check_infinite_depth, A.check_first_layer_only, A.check_two_points,
            A.check_headline_fails, F.check_optimization_speed, prop41.check_prop41,
            B.check_power_series, B.check_condition_bounds, family_claims.check_activation_rate]


def run_claims(*, fast: bool = True, outdir: str | None = None, formulas: Formulas = Formulas(),
               only=None, progress=None, data_dir: str | None = None) -> list[Claim]:
    """Run every check (or those whose claim id starts with one of ``only``).

    Args:
      fast: the quick configuration (fewer widths, seeds and depths; under a minute).
      outdir: where figures go (None: no figures).
      formulas: the closed forms under test.
      only: optional iterable of claim ids, e.g. {"1", "7"}.
      progress: optional callable(name) called before each check.
      data_dir: folder holding ``mnist_test.npz`` and ``cifar10_test.npz`` for the checks on
        real images (default ``../shared/data`` from the current directory); digits always.
    """
    if outdir is not None:
        os.makedirs(outdir, exist_ok=True)
    claims = []
    for check in checks():
        if only is not None and not any(check.__name__ == f"check_{o}" or o in _IDS[check.__name__]
                                        for o in only):
            continue
        if progress:
            progress(check.__name__)
        result = check(formulas=formulas, fast=fast, outdir=outdir, data_dir=data_dir)
        claims.extend(result if isinstance(result, list) else [result])
    return claims


_IDS = {"check_one_layer_angle": {"1"}, "check_derivative_kernel": {"2"},
        "check_gradient_angle": {"3", "3a"}, "check_gradient_angle_nt": {"3", "3b"},
        "check_linear_nets": {"6"},
        "check_optimization_speed": {"11"}, "check_prop41": {"12"},
        "check_small_angle_law": {"4"}, "check_embedding_collapse": {"5"},
        "check_infinite_depth": {"7", "7a", "7b"}, "check_first_layer_only": {"8"},
        "check_two_points": {"9", "9a", "9b"}, "check_headline_fails": {"10"},
        "check_power_series": {"13"}, "check_condition_bounds": {"14"},
        "check_activation_rate": {"21"}}


def _number(value) -> str:
    return "—" if value != value else f"{value:.3g}"  # NaN (a SKIPPED claim's error) as a dash


def report_markdown(claims, *, mode: str) -> str:
    """claims.md: the verdict counts, a summary table, then one section per claim.

    A SKIPPED claim (not checked here, e.g. neural-tangents missing) stays in the table and has
    its section, with the reason in place of the error."""
    counts = {s: sum(c.status == s for c in claims) for s in STATUSES}
    lines = [f"# Liu & Hui (arXiv 2305.08813): claims checked ({mode} mode)", "",
             ", ".join(f"{k} {s}" for s, k in counts.items()), "",
             "| # | claim | error | tolerance | result |", "|---|---|---|---|---|"]
    for c in claims:
        verdict = f"*{c.status}*" if c.status == "SKIPPED" else f"**{c.status}**"
        lines.append(f"| {c.id} | {c.title} | {_number(c.error)} | {_number(c.tolerance)} | {verdict} |")
    for c in claims:
        lines += ["", f"## {c.id}. {c.title} — {c.status}", "",
                  f"- Formula: {c.formula}", f"- Paper: {c.paper}", f"- Computed: {c.computed}"]
        if c.status == "SKIPPED":
            lines.append(f"- Skipped: {c.why}")
        else:
            lines.append(f"- Error {_number(c.error)}, tolerance {_number(c.tolerance)}: {c.why}")
        lines += [f"\n![claim {c.id}]({f})" for f in c.figures]
    return "\n".join(lines) + "\n"


def write_report(claims, outdir: str, *, mode: str) -> tuple[str, str]:
    """Write claims.md and claims.json (atomically) to ``outdir``; returns their paths.

    claims.json holds every Claim field, ``status`` included; a NaN error or tolerance (a
    SKIPPED claim) is written as null, so the file is strict JSON."""
    import json

    os.makedirs(outdir, exist_ok=True)
    md = os.path.join(outdir, "claims.md")
    js = os.path.join(outdir, "claims.json")
    atomic_write(md, report_markdown(claims, mode=mode))
    payload = {"mode": mode,
               "counts": {s: sum(c.status == s for c in claims) for s in STATUSES},
               "claims": [{**dataclasses.asdict(c),
                           **{k: None for k in ("error", "tolerance") if getattr(c, k) != getattr(c, k)}}
                          for c in claims]}
    atomic_write(js, json.dumps(payload, indent=2, default=_jsonable) + "\n")
    return md, js


def _jsonable(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
