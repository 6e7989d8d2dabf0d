"""Activations as objects: each carries σ, σ′ and σ″ (float64 NumPy), its jax form, and its
dual kernels (the Gaussian expectations of the infinite-width layer maps), in closed form
where one exists and by Mehler's series or quadrature otherwise.

Modules:
  ``base``       the protocol (``ActivationFunction``), eqs. (1)–(2), the registry;
  ``leaky``      the leaky family max(z, αz) = a·z + b·|z| (``Activation``: ReLU, linear,
                 |z|, leaky:α), arc-cosine duals;
  ``erf``, ``sin``, ``gelu``  closed-form duals (``Erf``, ``Sin``, ``Gelu``; ``GeluTanh``);
  ``smooth``     tanh, softplus, SiLU (Mehler's series);
  ``custom``     a user's elementwise callable (``CallableActivation``);
  ``affine``     a·φ(b·z) + c of any φ (``Affine``);
  ``parse``      ``parse_activation``: every spelling, validated once;
  ``mehler``, ``trapezoid``, ``_bivariate``  the series, the quadrature, and the pair's
                 cancellation-free quantities the duals start from.

The registered names (``activation_names()``, read by the command-line help, the docs and
the tests) are those of ``REGISTRY``; adding an activation is one class with
``@register("name")`` (``ntkcond.activations.smooth``) plus its tests.
"""
# registration order is the order of the names everywhere (help, docs, errors)
from . import leaky, erf, gelu, sin, smooth  # noqa: F401,I001
from .affine import Affine
from .base import GAP_RECOMPUTE_BELOW, REGISTRY, ActivationFunction, add, register
from .custom import CallableActivation, check_callable
from .erf import ERF, Erf
from .gelu import GELU, Gelu, GeluTanh
from .leaky import ABS, LINEAR, RELU, Activation, sin_minus_angle_cos
from .parse import (activation_names, activations_help, norm_preserving_scale,
                    parse_activation, parse_activations, parse_unit_slope, parse_angle_activation)
from .sin import SIN, Sin
from .smooth import Silu, Softplus, Tanh

__all__ = [
    "ActivationFunction",
    "Activation",
    "Affine",
    "CallableActivation",
    "Erf",
    "Gelu",
    "GeluTanh",
    "Sin",
    "Tanh",
    "Softplus",
    "Silu",
    "RELU",
    "LINEAR",
    "ABS",
    "ERF",
    "GELU",
    "SIN",
    "REGISTRY",
    "GAP_RECOMPUTE_BELOW",
    "add",
    "register",
    "activation_names",
    "activations_help",
    "check_callable",
    "norm_preserving_scale",
    "parse_activation",
    "parse_activations",
    "parse_unit_slope",
    "parse_angle_activation",
    "sin_minus_angle_cos",
]
