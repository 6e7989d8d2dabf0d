"""ntkcond: conditioning of neural tangent kernels.

Effective condition numbers and gradient angles of NTKs, analytic infinite-width kernels of
bias-free fully-connected nets, exact finite-width (empirical) NTKs (``empirical``, ``generic``,
``models``), and the closed-form angle maps of Liu & Hui (arXiv 2305.08813);
bias-free (leaky-)ReLU nets as linear nets and their closed-form learning curves
(Zhang, Saxe & Latham, arXiv 2406.12615: ``biasfree``, ``saxe``; orthogonal and XOR data as
independent linear nets, ``independent``; the conserved rank-one structure, ``conservation``;
collapse of the leaky-slope curves at large init and learning rate, ``collapse``; the
experiments of ``scripts/biasfree_dynamics.py`` as functions, ``biasfree_experiments`` and
``independent_experiments``, drawn by ``biasfree_figures.plot``).
Analytic kernels are float64; empirical kernels compute in the dtype of their weights and
inputs (float64 inside a scoped x64 context). ``import ntkcond`` never imports tensorflow,
neural_tangents or tensorflow_datasets.
"""
from . import (
    angles,
    biasfree,
    biasfree_experiments,
    biasfree_figures,
    claims,
    collapse,
    conservation,
    datasets,
    independent,
    independent_experiments,
    saxe,
    training,
)
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
from .biasfree_experiments import ExperimentResult
from .collapse import Collapse, slope_collapse
from .conservation import (
    RankOneTrace,
    balance_deviation,
    rank_one_breaking,
    rank_one_deviation,
    rank_one_direction,
    track_rank_one,
)
from .independent import (
    IndependentNets,
    feature_alignment,
    max_abs_cosine,
    orthogonal_init,
    orthogonal_nets,
    orthogonalize,
    pair_init,
    pair_nets,
    xor_data,
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
from .empirical import (
    MonteCarloNTK,
    empirical_ntk,
    empirical_ntk_features,
    empirical_ntk_layers,
    monte_carlo_ntk,
)
from .generic import StaxNet, empirical_ntk_fn, from_stax
from .models import MLP, mlp
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
from .largescale import (
    InsufficientMemoryError,
    MatrixFreeConditioning,
    blockwise_ntk,
    exact_conditioning,
    matrix_free_conditioning,
)
from .sharding import device_mesh
from .spectrum import (
    Conditioning,
    conditioning,
    effective_condition_number,
    pairwise_angles,
    smallest_pairwise_angle,
)
from .streaming import (
    SmallestAngle,
    StreamingAngles,
    streaming_smallest_angles,
    streaming_smallest_kernel_angle,
)

__version__ = "0.1.0"

__all__ = [
    "Activation",
    "aligned_init",
    "angles",
    "balance_deviation",
    "biasfree",
    "biasfree_experiments",
    "biasfree_figures",
    "blockwise_ntk",
    "claims",
    "Collapse",
    "collapse",
    "Conditioning",
    "conditioning",
    "conservation",
    "datasets",
    "depth_sweep",
    "DepthKernel",
    "device_mesh",
    "discrete_regime",
    "effective_condition_number",
    "effective_rank",
    "empirical_ntk",
    "empirical_ntk_features",
    "empirical_ntk_fn",
    "empirical_ntk_layers",
    "Equivalence",
    "exact_conditioning",
    "ExperimentResult",
    "feature_alignment",
    "first_layer_ntk",
    "from_stax",
    "gaussian_init",
    "gradient_angles",
    "independent",
    "independent_experiments",
    "IndependentNets",
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "input_angles",
    "InsufficientMemoryError",
    "is_mirrored",
    "is_symmetric",
    "linear_equivalence",
    "matrix_free_conditioning",
    "MatrixFreeConditioning",
    "max_abs_cosine",
    "mirrored_init",
    "MLP",
    "mlp",
    "mode_strength",
    "monte_carlo_ntk",
    "MonteCarloNTK",
    "network_apply",
    "norm_preserving_scale",
    "odd_even_losses",
    "odd_even_parts",
    "odd_linear_map",
    "orthogonal_init",
    "orthogonal_nets",
    "orthogonalize",
    "pair_init",
    "pair_nets",
    "pairwise_angles",
    "parse_activation",
    "positive_mass_fraction",
    "rank_one_breaking",
    "rank_one_deviation",
    "rank_one_direction",
    "rank_one_init",
    "RankOneTrace",
    "saxe",
    "saxe_discrete_mode_strength",
    "saxe_learning_time",
    "saxe_loss",
    "saxe_mode_strength",
    "slope_collapse",
    "smallest_gradient_angle",
    "smallest_pairwise_angle",
    "SmallestAngle",
    "StaxNet",
    "streaming_smallest_angles",
    "streaming_smallest_kernel_angle",
    "StreamingAngles",
    "symmetrize",
    "time_rescaling",
    "track_rank_one",
    "train_network",
    "train_two_layer",
    "training",
    "TrainResult",
    "two_layer_floor",
    "whiten",
    "xor_data",
]
