"""What every bias-free experiment returns (Zhang, Saxe & Latham, arXiv 2406.12615):
``ExperimentResult``, the experiment's name, its JSON-ready summary and the curves its figure
is drawn from.
"""
from __future__ import annotations

import dataclasses

__all__ = ["ExperimentResult"]


@dataclasses.dataclass(frozen=True)
class ExperimentResult:
    """What one experiment measured.

    Attributes:
      name: the experiment ("equivalence", "closed_form", ...); ``figures.plot`` keys
        its figure on it.
      summary: JSON-ready dict of the settings and measured numbers (``summary_<name>.json``).
      curves: the arrays and training runs its figure is drawn from (not JSON).
    """

    name: str
    summary: dict
    curves: dict = dataclasses.field(repr=False, compare=False)
