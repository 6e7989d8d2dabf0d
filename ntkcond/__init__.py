"""ntkcond: conditioning of neural tangent kernels.

Effective condition numbers and gradient angles of NTKs, analytic infinite-width kernels of
bias-free fully-connected nets, exact finite-width (empirical) NTKs, and the closed-form angle
maps of Liu & Hui (arXiv 2305.08813). Analytic kernels are float64; empirical kernels compute
in the dtype of their weights and inputs (float64 under jax's x64). ``import ntkcond`` never
imports tensorflow, neural_tangents or tensorflow_datasets.
"""
from . import angles
from .activations import Activation, norm_preserving_scale, parse_activation
from .empirical import MonteCarloNTK, empirical_ntk, empirical_ntk_layers, monte_carlo_ntk
from .generic import StaxNet, empirical_ntk_fn, from_stax
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
from .models import MLP, mlp
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
    "MLP",
    "MonteCarloNTK",
    "StaxNet",
    "angles",
    "conditioning",
    "depth_sweep",
    "effective_condition_number",
    "empirical_ntk",
    "empirical_ntk_fn",
    "empirical_ntk_layers",
    "from_stax",
    "gradient_angles",
    "infinite_nngp",
    "infinite_ntk",
    "infinite_ntk_layers",
    "input_angles",
    "mlp",
    "monte_carlo_ntk",
    "norm_preserving_scale",
    "pairwise_angles",
    "parse_activation",
    "smallest_gradient_angle",
    "smallest_pairwise_angle",
]
