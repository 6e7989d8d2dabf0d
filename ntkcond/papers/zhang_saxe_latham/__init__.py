"""Zhang, Saxe & Latham (arXiv 2406.12615): bias-free (leaky-)ReLU nets as linear nets.

``biasfree``: the odd part of a two-layer net is linear; exact equivalence with a linear net on
symmetric data (time rescaled by c = (1+α)/2); inits, symmetrisation, whitening.
``saxe``: Saxe et al. (2014) closed-form learning curves and the time rescaling.
``training``: full-batch gradient descent (and RK4 gradient flow) in float64 JAX.
``independent``: orthogonal and XOR data as sets of independent linear nets.
``conservation``: the conserved rank-one structure W₁ = W₂ᵀrᵀ. ``collapse``: loss curves of
different slopes at large init and learning rate. ``experiments`` and
``independent_experiments``: the paper's experiments as functions returning an
``ExperimentResult``; ``figures.plot`` draws any of them.
"""
from .biasfree import (
    Equivalence as Equivalence,
    aligned_init as aligned_init,
    effective_rank as effective_rank,
    first_layer_ntk as first_layer_ntk,
    gaussian_init as gaussian_init,
    is_mirrored as is_mirrored,
    is_symmetric as is_symmetric,
    linear_equivalence as linear_equivalence,
    mirrored_init as mirrored_init,
    mode_strength as mode_strength,
    network_apply as network_apply,
    odd_even_losses as odd_even_losses,
    odd_even_parts as odd_even_parts,
    odd_linear_map as odd_linear_map,
    positive_mass_fraction as positive_mass_fraction,
    rank_one_init as rank_one_init,
    symmetrize as symmetrize,
    two_layer_floor as two_layer_floor,
    whiten as whiten,
)
from .collapse import (
    Collapse as Collapse,
    slope_collapse as slope_collapse,
    slope_collapse_batch as slope_collapse_batch,
)
from .conservation import (
    RankOneTrace as RankOneTrace,
    balance_deviation as balance_deviation,
    rank_one_breaking as rank_one_breaking,
    rank_one_deviation as rank_one_deviation,
    rank_one_direction as rank_one_direction,
    track_rank_one as track_rank_one,
)
from .experiments import ExperimentResult as ExperimentResult
from .independent import (
    IndependentNets as IndependentNets,
    feature_alignment as feature_alignment,
    max_abs_cosine as max_abs_cosine,
    orthogonal_init as orthogonal_init,
    orthogonal_nets as orthogonal_nets,
    orthogonalize as orthogonalize,
    pair_init as pair_init,
    pair_nets as pair_nets,
    sign_group_nets as sign_group_nets,
    silent_phase_outputs as silent_phase_outputs,
    xor_data as xor_data,
)
from .saxe import (
    discrete_regime as discrete_regime,
    saxe_discrete_mode_strength as saxe_discrete_mode_strength,
    saxe_learning_time as saxe_learning_time,
    saxe_loss as saxe_loss,
    saxe_mode_strength as saxe_mode_strength,
    time_rescaling as time_rescaling,
)
from .training import (
    TrainResult as TrainResult,
    train_network as train_network,
    train_network_batch as train_network_batch,
    train_two_layer as train_two_layer,
)
