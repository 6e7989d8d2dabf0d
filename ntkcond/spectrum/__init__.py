"""Condition numbers and gradient angles read off a kernel matrix.

For a symmetric positive semi-definite kernel K (n × n) with eigenvalues
λ₁ ≥ λ₂ ≥ … ≥ λₙ ≥ 0, gradient descent on the linearised model converges along eigendirection
i at rate (1 − ηλᵢ); directions with λᵢ = 0 are never moved and never matter for the training
loss on the range of K. The quantity that governs the speed is therefore the effective
condition number

    κ_eff = λ_max / min{ λᵢ : λᵢ > τ },     τ = max(atol, rtol · λ_max),          (1)

with default rtol = n·eps of float64, the convention of ``numpy.linalg.matrix_rank`` and
``scipy.linalg.pinvh``: eigenvalues below τ are indistinguishable from rounding in a float64
matrix. The plain κ = λ_max / λ_min is reported beside it (∞ when the numerical rank is below n).

A kernel computed in lower precision (float32) carries eigenvalue noise of order
n·eps₃₂·λ_max of either sign. It is accepted (negative eigenvalues down to that level are not a
PSD violation), its κ_eff then reflects that noise, and ``precision_limited`` says so: κ_eff
within 10x of 1/(n·eps) of the dtype the kernel was computed in (≈ 1.6e3 for float32, n = 512;
≈ 8.8e11 for float64) is not a measurement of the kernel but of its rounding.

Angles between model gradients are read off the kernel: for K = J Jᵀ,

    angle(i, j) = atan2( sqrt(K_ii K_jj − K_ij²), K_ij )   ∈ [0, π] radians,      (2)

the stable form of arccos(K_ij / sqrt(K_ii K_jj)). A kernel matrix cannot resolve angles much
below sqrt(eps) ≈ 1e-8 rad (1 − cos θ is lost in rounding); ``ntkcond.infinite.gradient_angles``
computes them from the data instead.

Modules: ``condition_numbers`` (eq. (1)), ``kernel_angles`` (eq. (2)), ``interlacing`` (the λ_min
bound, eq. (3)); ``_kernel_checks`` holds their shared validation. Validated once: each public
function checks its kernel and calls an unchecked core (``conditioning_core``,
``lambda_min_upper_bound_core``, ``pairwise_angles_core``), which the library's own callers call
directly on a kernel they built (``scale_trusted``: finite and exactly symmetric by
construction, not re-checked). A leaf: nothing here imports from the rest of ntkcond.
"""
from ._kernel_checks import ScaledKernel as ScaledKernel
from ._kernel_checks import checked_kernel as checked_kernel
from ._kernel_checks import float_eps as float_eps
from ._kernel_checks import resolve_tolerances as resolve_tolerances
from ._kernel_checks import scale_trusted as scale_trusted
from .kernel_angles import argmin_upper as argmin_upper
from .kernel_angles import pairwise_angles as pairwise_angles
from .kernel_angles import pairwise_angles_core as pairwise_angles_core
from .kernel_angles import smallest_pairwise_angle as smallest_pairwise_angle
from .condition_numbers import Conditioning as Conditioning
from .condition_numbers import conditioning as conditioning
from .condition_numbers import conditioning_core as conditioning_core
from .condition_numbers import conditioning_from_eigenvalues as conditioning_from_eigenvalues
from .condition_numbers import effective_condition_number as effective_condition_number
from .condition_numbers import effective_rank as effective_rank
from .interlacing import lambda_min_upper_bound as lambda_min_upper_bound
from .interlacing import lambda_min_upper_bound_core as lambda_min_upper_bound_core

__all__ = [
    "Conditioning",
    "conditioning",
    "effective_condition_number",
    "lambda_min_upper_bound",
    "pairwise_angles",
    "smallest_pairwise_angle",
]
