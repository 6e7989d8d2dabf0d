"""Liu & Hui (arXiv 2305.08813): each formula and theorem claim checked against an independent
computation (``analytic_claims``: expansions, limits and exact spectra; ``finite_claims``:
Monte Carlo over finite nets, neural-tangents, trained wide nets; ``prop41``: the λmin bound),
the PASS/FAIL report (``report``) and its run directory (``claims_run``); ``claim_kit`` holds
what the checks share (``Claim``, ``Formulas``).
"""
from .claim_kit import Claim as Claim, Formulas as Formulas
from .report import (
    checks as checks,
    plot_gradient_angle_map as plot_gradient_angle_map,
    report_markdown as report_markdown,
    run_claims as run_claims,
    write_report as write_report,
)
