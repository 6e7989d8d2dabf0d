"""Liu & Hui (arXiv 2305.08813): each formula and theorem claim checked against an independent
computation (``analytic``: expansions, limits and exact spectra; ``finite``: Monte Carlo over
finite nets, neural-tangents, trained wide nets), and the PASS/FAIL report (``report``).
"""
from .claim_kit import Claim as Claim, Formulas as Formulas
from .report import (
    checks as checks,
    plot_gradient_angle_map as plot_gradient_angle_map,
    report_markdown as report_markdown,
    run_claims as run_claims,
    write_report as write_report,
)
