"""ntkcond: conditioning of neural tangent kernels.

Effective condition numbers and gradient angles of NTKs, analytic infinite-width kernels of
bias-free fully-connected nets, and the closed-form angle maps of Liu & Hui (arXiv 2305.08813).
Everything numerical is float64. ``import ntkcond`` never imports tensorflow,
neural_tangents or tensorflow_datasets.
"""
from . import angles, claims, datasets
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
    "Conditioning",
    "DepthKernel",
    "angles",
    "claims",
    "datasets",
    "conditioning",
    "depth_sweep",
    "effective_condition_number",
    "gradient_angles",
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "input_angles",
    "norm_preserving_scale",
    "pairwise_angles",
    "parse_activation",
    "smallest_gradient_angle",
    "smallest_pairwise_angle",
]
