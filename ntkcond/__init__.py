"""ntkcond: conditioning of neural tangent kernels.

Effective condition numbers and gradient angles of NTKs, analytic infinite-width kernels of
bias-free fully-connected nets, and the closed-form angle maps of Liu & Hui (arXiv 2305.08813).
Everything numerical is float64. ``import ntkcond`` never imports tensorflow,
neural_tangents or tensorflow_datasets.
"""
from . import angles
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
    "Conditioning",
    "DepthKernel",
    "InsufficientMemoryError",
    "MatrixFreeConditioning",
    "SmallestAngle",
    "StreamingAngles",
    "angles",
    "blockwise_ntk",
    "conditioning",
    "depth_sweep",
    "device_mesh",
    "effective_condition_number",
    "exact_conditioning",
    "gradient_angles",
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "input_angles",
    "matrix_free_conditioning",
    "norm_preserving_scale",
    "pairwise_angles",
    "parse_activation",
    "smallest_gradient_angle",
    "smallest_pairwise_angle",
    "streaming_smallest_angles",
    "streaming_smallest_kernel_angle",
]
