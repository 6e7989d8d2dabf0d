"""Experiments on bias-free ReLU nets as independent linear nets, the conserved rank-one
structure, and collapse at large init and learning rate (Zhang, Saxe & Latham, arXiv
2406.12615), each returning an ``ExperimentResult`` (``biasfree_experiments``):

  ``orthogonal``   ReLU net on orthogonal inputs = independent Saxe nets, one per group of
                   points (``independent.orthogonal_nets``): loss vs Σ of their curves; from
                   a generic init, two nets, one per target sign (``sign_group_nets``).
  ``xor``          XOR from an even-mirrored pair init = independent linear nets of the even
                   part (``independent.pair_nets``); time to fit against α over seeds (rate
                   ∝ 1−α); from a generic init, the same times and feature alignment.
  ``rank_one``     W₁ = W₂ᵀrᵀ is conserved by gradient flow on whitened symmetric data with an
                   odd teacher (``conservation.track_rank_one``), broken ∝ lr by GD and by
                   planted asymmetries.
  ``large_init``   phase diagram (init scale × learning rate) of the collapse of the leaky-slope
                   curves after t → c·t (``collapse.slope_collapse``), over several seeds.

``biasfree_figures.plot`` draws any of them; ``scripts/biasfree_dynamics.py`` is the command
line. Deterministic given ``seed`` (experiments over several draws use seed, seed + 1, …,
``seeds`` of them); ``fast=True`` is the small configuration.

The functions live in ``orthogonal_experiments``, ``xor_experiments``,
``conservation_experiments`` (``rank_one``) and ``collapse_experiments`` (``large_init``); this
module re-exports them.
"""
from __future__ import annotations

from .collapse_experiments import COLLAPSE_OK, large_init
from .conservation_experiments import rank_one
from .orthogonal_experiments import orthogonal
from .xor_experiments import XOR_FIT, XOR_LEARN, xor

__all__ = ["COLLAPSE_OK", "XOR_FIT", "XOR_LEARN", "orthogonal", "xor", "rank_one", "large_init"]
