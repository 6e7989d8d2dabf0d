"""ntkcond: conditioning of neural tangent kernels.

Effective condition numbers and gradient angles of NTKs, analytic infinite-width kernels of
bias-free fully-connected nets, and the closed-form angle maps of Liu & Hui (arXiv 2305.08813);
bias-free (leaky-)ReLU nets as linear nets and their closed-form learning curves
(Zhang, Saxe & Latham, arXiv 2406.12615: ``biasfree``, ``saxe``).
Everything numerical is float64. ``import ntkcond`` never imports tensorflow,
neural_tangents or tensorflow_datasets.
"""
from . import angles, biasfree, claims, datasets, saxe, training
from .biasfree import (
    Equivalence,
    aligned_init,
    effective_rank,
    first_layer_ntk,
    gaussian_init,
    is_mirrored,
    is_symmetric,
    linear_equivalence,
    mirrored_init,
    mode_strength,
    network_apply,
    odd_even_losses,
    odd_even_parts,
    odd_linear_map,
    positive_mass_fraction,
    rank_one_init,
    symmetrize,
    two_layer_floor,
    whiten,
)
from .saxe import (
    discrete_regime,
    saxe_discrete_mode_strength,
    saxe_learning_time,
    saxe_loss,
    saxe_mode_strength,
    time_rescaling,
)
from .training import TrainResult, train_network, train_two_layer
from .activations import Activation, norm_preserving_scale, parse_activation
from .infinite import (
    DepthKernel,
    depth_sweep,
    gradient_angles,
    infinite_nngp,
    infinite_ntk,
    infinite_ntk_layers,
    input_angles,
    smallest_gradient_angle,
)
from .spectrum import (
    Conditioning,
    conditioning,
    effective_condition_number,
    pairwise_angles,
    smallest_pairwise_angle,
)

__version__ = "0.1.0"

__all__ = [
    "Activation",
    "aligned_init",
    "angles",
    "biasfree",
    "claims",
    "Conditioning",
    "datasets",
    "conditioning",
    "depth_sweep",
    "DepthKernel",
    "discrete_regime",
    "effective_condition_number",
    "effective_rank",
    "Equivalence",
    "first_layer_ntk",
    "gaussian_init",
    "gradient_angles",
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "input_angles",
    "is_mirrored",
    "is_symmetric",
    "linear_equivalence",
    "mirrored_init",
    "mode_strength",
    "network_apply",
    "norm_preserving_scale",
    "odd_even_losses",
    "odd_even_parts",
    "odd_linear_map",
    "pairwise_angles",
    "parse_activation",
    "positive_mass_fraction",
    "rank_one_init",
    "saxe",
    "saxe_discrete_mode_strength",
    "saxe_learning_time",
    "saxe_loss",
    "saxe_mode_strength",
    "smallest_gradient_angle",
    "smallest_pairwise_angle",
    "symmetrize",
    "time_rescaling",
    "training",
    "train_network",
    "train_two_layer",
    "TrainResult",
    "two_layer_floor",
    "whiten",
]
