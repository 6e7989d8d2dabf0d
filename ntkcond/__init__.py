"""ntkcond: conditioning of neural tangent kernels.

Effective condition numbers and gradient angles read off a kernel (``spectrum``), activations
as objects carrying their dual kernels (``activations``), networks as one object — layers
carrying their kernel maps and finite-width ``init``/``apply`` (``network``) — their analytic
infinite-width kernels and the closed-form angle maps of Liu & Hui, arXiv 2305.08813
(``infinite``), exact finite-width (empirical) NTKs (``finite``), neural-tangents' ``stax``
interface on the same layers (``stax``), the loss and step count of gradient descent on the
linearised model (``optimization``), whole-data-set angles and κ (``scale``), and the papers'
data sets (``datasets``).

The layers, lowest first: ``_core`` (private validators, scoped float64, atomic I/O),
``spectrum`` and ``activations``; ``network``; ``infinite``, ``finite``, ``optimization`` and
``datasets``; ``stax``; ``scale``; ``runs`` (run directories and the scripts' sweeps);
``papers`` (``papers.liu_hui``, ``papers.zhang_saxe_latham``); ``command``. ``import ntkcond`` loads neither ``runs`` nor ``papers`` (import
them when needed) and never imports tensorflow, neural_tangents or tensorflow_datasets.
Analytic kernels are float64; empirical kernels compute in the dtype of their inputs.
"""
from . import datasets as datasets
from .activations import (
    Activation as Activation,
    norm_preserving_scale as norm_preserving_scale,
    parse_activation as parse_activation,
)
from .finite import (
    MLP as MLP,
    MonteCarloNTK as MonteCarloNTK,
    NTKTracker as NTKTracker,
    StaxNet as StaxNet,
    empirical_ntk as empirical_ntk,
    empirical_ntk_features as empirical_ntk_features,
    empirical_ntk_fn as empirical_ntk_fn,
    empirical_ntk_layers as empirical_ntk_layers,
    from_equinox as from_equinox,
    from_flax as from_flax,
    from_nnx as from_nnx,
    from_stax as from_stax,
    mlp as mlp,
    monte_carlo_ntk as monte_carlo_ntk,
)
from .infinite import (
    DepthKernel as DepthKernel,
    angles as angles,
    depth_sweep as depth_sweep,
    gradient_angles as gradient_angles,
    infinite_nngp as infinite_nngp,
    infinite_ntk as infinite_ntk,
    infinite_ntk_layers as infinite_ntk_layers,
    input_angles as input_angles,
    nngp_power_series as nngp_power_series,
    ntk_power_series as ntk_power_series,
    smallest_gradient_angle as smallest_gradient_angle,
)
from . import network as network
from . import stax as stax
from .optimization import ntk_gd_loss as ntk_gd_loss, steps_to_loss as steps_to_loss
from .scale import (
    InsufficientMemoryError as InsufficientMemoryError,
    condition_number_bounds as condition_number_bounds,
    data_separation as data_separation,
    lambda_min_lower_bound as lambda_min_lower_bound,
    MatrixFreeConditioning as MatrixFreeConditioning,
    StreamingAngles as StreamingAngles,
    blockwise_ntk as blockwise_ntk,
    device_mesh as device_mesh,
    exact_conditioning as exact_conditioning,
    matrix_free_conditioning as matrix_free_conditioning,
    streaming_smallest_angles as streaming_smallest_angles,
    streaming_smallest_kernel_angle as streaming_smallest_kernel_angle,
)
from .spectrum import (
    Conditioning as Conditioning,
    conditioning as conditioning,
    effective_condition_number as effective_condition_number,
    lambda_min_upper_bound as lambda_min_upper_bound,
    pairwise_angles as pairwise_angles,
    smallest_pairwise_angle as smallest_pairwise_angle,
)

__version__ = "0.1.0"

__all__ = [
    # spectrum: κ and angles read off a kernel
    "Conditioning",
    "conditioning",
    "effective_condition_number",
    "lambda_min_upper_bound",
    "pairwise_angles",
    "smallest_pairwise_angle",
    # activations
    "Activation",
    "norm_preserving_scale",
    "parse_activation",
    # infinite width
    "angles",
    "DepthKernel",
    "depth_sweep",
    "gradient_angles",
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "input_angles",
    "smallest_gradient_angle",
    "ntk_power_series",
    "nngp_power_series",
    # networks as objects: neural-tangents' interface
    "stax",
    # finite width
    "MLP",
    "mlp",
    "empirical_ntk",
    "empirical_ntk_features",
    "empirical_ntk_layers",
    "MonteCarloNTK",
    "monte_carlo_ntk",
    "empirical_ntk_fn",
    "StaxNet",
    "from_stax",
    "from_flax",
    "from_nnx",
    "from_equinox",
    # the NTK over training (snapshots: ntkcond.finite.NTKSnapshot)
    "NTKTracker",
    # optimisation: from κ to steps (linearised gradient descent, exact)
    "ntk_gd_loss",
    "steps_to_loss",
    # whole data sets
    "blockwise_ntk",
    "exact_conditioning",
    "matrix_free_conditioning",
    "MatrixFreeConditioning",
    "InsufficientMemoryError",
    "streaming_smallest_angles",
    "streaming_smallest_kernel_angle",
    "StreamingAngles",
    "device_mesh",
    # certified bounds (power series, Gershgorin, Prop 4.1) in GEMM time
    "condition_number_bounds",
    "data_separation",
    "lambda_min_lower_bound",
    # data
    "datasets",
]
