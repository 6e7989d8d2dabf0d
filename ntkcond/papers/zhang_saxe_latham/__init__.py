"""Zhang, Saxe & Latham (arXiv 2406.12615): bias-free (leaky-)ReLU nets as linear nets.

``nets``: the theory and its closed forms (``nets.biasfree``: the odd part of a two-layer net
is linear, exact equivalence with a linear net on symmetric data, time rescaled by
c = (1+α)/2; ``nets.saxe``: Saxe et al. (2014) learning curves; ``nets.training``: gradient
descent in float64 JAX; ``nets.independent_nets``: orthogonal and XOR data as sets of
independent linear nets; ``nets.conservation``, ``nets.collapse``, ...).
``experiments``: the paper's experiments, one function per claim, each returning an
``ExperimentResult``; module ``experiments.<topic>_runs`` measures the theory of ``nets`` it
names. ``figures.plot`` draws any result; ``experiments_run.run_experiments`` runs them into a
run directory (what ``scripts/biasfree_dynamics.py`` calls). The theory's names are
re-exported here.
"""
from .experiments.result import ExperimentResult as ExperimentResult
from .nets import (
    aligned_init as aligned_init,
    balance_deviation as balance_deviation,
    Collapse as Collapse,
    discrete_regime as discrete_regime,
    effective_rank as effective_rank,
    Equivalence as Equivalence,
    feature_alignment as feature_alignment,
    first_layer_ntk as first_layer_ntk,
    gaussian_init as gaussian_init,
    IndependentNets as IndependentNets,
    is_mirrored as is_mirrored,
    is_symmetric as is_symmetric,
    linear_equivalence as linear_equivalence,
    max_abs_cosine as max_abs_cosine,
    mirrored_init as mirrored_init,
    mode_strength as mode_strength,
    network_apply as network_apply,
    odd_even_losses as odd_even_losses,
    odd_even_parts as odd_even_parts,
    odd_linear_map as odd_linear_map,
    orthogonal_init as orthogonal_init,
    orthogonal_nets as orthogonal_nets,
    orthogonalize as orthogonalize,
    pair_init as pair_init,
    pair_nets as pair_nets,
    positive_mass_fraction as positive_mass_fraction,
    rank_one_breaking as rank_one_breaking,
    rank_one_deviation as rank_one_deviation,
    rank_one_direction as rank_one_direction,
    rank_one_init as rank_one_init,
    RankOneTrace as RankOneTrace,
    saxe_discrete_mode_strength as saxe_discrete_mode_strength,
    saxe_learning_time as saxe_learning_time,
    saxe_loss as saxe_loss,
    saxe_mode_strength as saxe_mode_strength,
    sign_group_nets as sign_group_nets,
    silent_phase_outputs as silent_phase_outputs,
    slope_collapse as slope_collapse,
    slope_collapse_batch as slope_collapse_batch,
    symmetrize as symmetrize,
    time_rescaling as time_rescaling,
    track_rank_one as track_rank_one,
    train_network as train_network,
    train_network_batch as train_network_batch,
    train_two_layer as train_two_layer,
    TrainResult as TrainResult,
    two_layer_floor as two_layer_floor,
    whiten as whiten,
    xor_data as xor_data,
)
