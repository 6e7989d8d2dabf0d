"""The experiments of Zhang, Saxe & Latham (arXiv 2406.12615), one function per claim, each
returning an ``ExperimentResult`` (``result``); ``ntkcond.papers.zhang_saxe_latham.figures.plot``
draws any of them and ``scripts/biasfree_dynamics.py`` is the command line. Every function is
deterministic given ``seed`` (experiments over several draws use seed, seed + 1, …, ``seeds``
of them); ``fast=True`` selects the small configuration the test suite and ``all --fast`` use.

Each module ``<topic>_runs`` measures the theory of ``nets`` it names:

  ``equivalence_runs``   (``nets.biasfree``, ``nets.saxe``)
    ``expressivity``       item 1: the odd part of a two-layer net is linear, W₂W₁x·(1+α)/2, so
                           odd nonlinear targets leave a loss floor (``two_layer_floor``).
    ``equivalence``        item 2: on symmetric data from a mirrored init the leaky-ReLU net is,
                           step for step, the linear net with time t → c·t, c = (1+α)/2.
    ``closed_form``        item 3: its mode strength follows Saxe et al. (2014) with t → c·t.
    ``deep``               item 5: deep bias-free ReLU nets also learn rank-one weights.
  ``symmetry_runs``      (``nets.biasfree``)
    ``symmetry_breaking``  item 4: an even part of the target is learned only after a plateau.
    ``symmetric_ntk``      item 6: the NTK on x ∪ −x splits into odd (A − B) and even (A + B)
                           blocks; a linear net's even block is zero.
  ``orthogonal_runs``    (``nets.orthogonal_data``, ``nets.independent_nets``, ``nets.silent_phase``)
    ``orthogonal``         ReLU net on orthogonal inputs = independent Saxe nets, one per group
                           of points (``orthogonal_nets``); from a generic init, two nets, one
                           per target sign (``sign_group_nets``).
  ``xor_runs``           (``nets.orthogonal_data``, ``nets.independent_nets``)
    ``xor``                XOR from an even-mirrored pair init = independent linear nets of the
                           even part (``pair_nets``); time to fit against α over seeds (rate
                           ∝ 1−α); from a generic init, the same times and feature alignment.
  ``conservation_runs``  (``nets.conservation``)
    ``rank_one``           W₁ = W₂ᵀrᵀ is conserved by gradient flow on whitened symmetric data
                           with an odd teacher (``track_rank_one``), broken ∝ lr by GD and by
                           planted asymmetries.
  ``bias_runs``          (``nets.biasfree``)
    ``bias_breaking``      item 2 with a trained hidden bias of scale s_b (issue 21): the
                           mirrored init stays linear but symmetric data no longer keep it
                           mirrored; the drift from the linear net against s_b.
  ``collapse_runs``      (``nets.collapse``)
    ``large_init``         phase diagram (init scale × learning rate) of the collapse of the
                           leaky-slope curves after t → c·t (``slope_collapse``), over seeds.

``_common`` holds what they share (progress hooks, list validation, symmetric whitened data,
the slopes ``ALPHAS``), public names of a private module.
"""
from ._common import ALPHAS as ALPHAS
from .bias_runs import bias_breaking as bias_breaking
from .collapse_runs import COLLAPSE_OK as COLLAPSE_OK, large_init as large_init
from .conservation_runs import rank_one as rank_one
from .equivalence_runs import (
    closed_form as closed_form,
    deep as deep,
    equivalence as equivalence,
    expressivity as expressivity,
)
from .orthogonal_runs import orthogonal as orthogonal
from .result import ExperimentResult as ExperimentResult
from .symmetry_runs import symmetric_ntk as symmetric_ntk, symmetry_breaking as symmetry_breaking
from .xor_runs import XOR_FIT as XOR_FIT, XOR_LEARN as XOR_LEARN, xor as xor
