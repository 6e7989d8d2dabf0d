"""The experiments behind "bias-free ReLU nets are effectively linear nets" (Zhang, Saxe &
Latham, arXiv 2406.12615), one function per claim, each returning an ``ExperimentResult``:

  ``expressivity``       item 1: the odd part of a two-layer net is linear, W₂W₁x·(1+α)/2, so
                         odd nonlinear targets leave a loss floor (``two_layer_floor``).
  ``equivalence``        item 2: on symmetric data from a mirrored init the leaky-ReLU net is,
                         step for step, the linear net with time t → c·t, c = (1+α)/2.
  ``closed_form``        item 3: its mode strength follows Saxe et al. (2014) with t → c·t.
  ``symmetry_breaking``  item 4: an even part of the target is learned only after a plateau.
  ``deep``               item 5: deep bias-free ReLU nets also learn rank-one weights.
  ``symmetric_ntk``      item 6: the NTK on x ∪ −x splits into odd (A − B) and even (A + B)
                         blocks; a linear net's even block is zero.

The experiments on orthogonal and XOR data, the conserved rank-one structure and large init
are in ``independent_experiments``; ``biasfree_figures.plot`` draws any of them.
``scripts/biasfree_dynamics.py`` is the command line. Every function is deterministic given
``seed``; ``fast=True`` selects the small configuration the test suite and ``all --fast`` use.

The functions live in ``equivalence_experiments`` (items 1, 2, 3, 5) and
``symmetry_experiments`` (items 4, 6), ``ExperimentResult`` in ``result``; this module
re-exports them.
"""
from __future__ import annotations

from ._kit import ALPHAS as ALPHAS
from .equivalence_experiments import closed_form, deep, equivalence, expressivity
from .result import ExperimentResult
from .symmetry_experiments import symmetric_ntk, symmetry_breaking

__all__ = ["ALPHAS", "ExperimentResult", "expressivity", "equivalence", "closed_form",
           "symmetry_breaking", "deep", "symmetric_ntk"]
