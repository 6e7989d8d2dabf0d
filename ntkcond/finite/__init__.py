"""Finite-width (empirical) NTKs.

``models``: the bias-free, norm-preserving MLP of ``ntkcond.infinite`` at finite width (JAX).
``empirical``: its exact NTK from one forward and one backward pass (no Jacobian), per-layer
terms, features for streaming, and Monte Carlo over random nets.
``generic``: the NTK of any JAX model by parameter groups, and neural-tangents stax networks.
``adapters``: Flax (linen, NNX) and Equinox models as ``apply_fn(params, x)`` and their trainable
params, for ``empirical_ntk_fn`` (flax/equinox imported only when an adapter is called).
``tracker``: the NTK over training (``NTKTracker``, ``NTKSnapshot``): κ_eff, kernel distance,
alignment and effective rank of any of these models, snapshot by snapshot.
Empirical kernels compute in the dtype of their inputs and params (float64 whenever one of them
is float64, with or without jax's x64 mode); use float64 for conditioning. NaN/Inf, complex
inputs and overflow raise instead of returning a NaN, truncated or infinite kernel.
"""
from .adapters import (
    ModelNet as ModelNet,
    from_equinox as from_equinox,
    from_flax as from_flax,
    from_nnx as from_nnx,
)
from .empirical import (
    MonteCarloNTK as MonteCarloNTK,
    empirical_ntk as empirical_ntk,
    empirical_ntk_features as empirical_ntk_features,
    empirical_ntk_layers as empirical_ntk_layers,
    monte_carlo_ntk as monte_carlo_ntk,
)
from .generic import StaxNet as StaxNet, empirical_ntk_fn as empirical_ntk_fn, from_stax as from_stax
from .models import MLP as MLP, mlp as mlp
from .tracker import NTKSnapshot as NTKSnapshot, NTKTracker as NTKTracker
