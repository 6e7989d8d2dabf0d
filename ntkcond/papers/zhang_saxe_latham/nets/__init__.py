"""The theory of Zhang, Saxe & Latham (arXiv 2406.12615): bias-free (leaky-)ReLU nets, their
closed forms and the training that checks them. Each module pairs with the experiment that
measures it in ``ntkcond.papers.zhang_saxe_latham.experiments`` (same stem, ``_runs`` suffix
where the topic is one):

  ``biasfree``           the odd part of a two-layer net is linear; exact equivalence with a
                         linear net on symmetric data (t → c·t, c = (1+α)/2); inits,
                         symmetrisation, whitening, the first-layer NTK
                         (``equivalence_runs``, ``symmetry_runs``).
  ``saxe``               Saxe et al. (2014) closed-form learning curves and the time rescaling
                         (``equivalence_runs.closed_form``).
  ``training``           full-batch gradient descent (and RK4 gradient flow) in float64 JAX.
  ``conservation``       the conserved rank-one structure W₁ = W₂ᵀrᵀ (``conservation_runs``).
  ``collapse``           loss curves of different slopes at large init and learning rate
                         (``collapse_runs``).
  ``orthogonal_data``    orthogonal and XOR data (``orthogonal_runs``, ``xor_runs``).
  ``independent_inits``  the aligned inits under which the net is independent linear nets.
  ``independent_nets``   the derivation and the exact predictions, eqs. (1)–(3)
                         (``orthogonal_runs``, ``xor_runs``).
  ``silent_phase``       the generic small init, eq. (4) (``orthogonal_runs``).

``_net_checks`` (data and weight validation) and ``_groups`` (orthogonal groups and their
geometry) hold the shared validators, public names of private modules.
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
from .independent_inits import orthogonal_init as orthogonal_init, pair_init as pair_init
from .independent_nets import (
    IndependentNets as IndependentNets,
    orthogonal_nets as orthogonal_nets,
    pair_nets as pair_nets,
)
from .orthogonal_data import (
    feature_alignment as feature_alignment,
    max_abs_cosine as max_abs_cosine,
    orthogonalize as orthogonalize,
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
from .silent_phase import sign_group_nets as sign_group_nets, silent_phase_outputs as silent_phase_outputs
from .training import (
    TrainResult as TrainResult,
    train_network as train_network,
    train_network_batch as train_network_batch,
    train_two_layer as train_two_layer,
)
