"""Infinite-width kernels of fully-connected nets: any network object of ``ntkcond.network``
(weights and biases, residual blocks, any activation) evaluated on data, exactly.

Modules:
  ``geometry``      input angles between rows, exact for the float64 data;
  ``engine``        the one engine: a network object on a block of pairs (``evaluate``, and
                    ``sweep`` over depths), choosing its path from the object's properties;
  ``recursion``     the fast angle recursion of bias-free homogeneous nets;
  ``kernels``       the public NNGP, NTK, per-layer contributions, gradient angles computed
                    from the data, and depth sweeps sharing one pass;
  ``angles``        the closed-form angle maps of Liu & Hui (arXiv 2305.08813): one-layer map
                    g(θ), derivative factor ġ(θ), gradient angle φ(θ, L), small-angle law,
                    infinite-depth limits;
  ``unimodal``      certificates that φ_L(θ) has no interior minimum;
  ``extremes``      the closest and farthest pairs in angle in GEMM time, at which the
                    smallest gradient angle then lies;
  ``power_series``  the normalised NTK and NNGP of unit-norm inputs as power series in cos θ
                    with non-negative coefficients and a rigorous tail.

All float64; angles in radians.
"""
from . import angles as angles
from .geometry import input_angles as input_angles
from .power_series import (
    PowerSeries as PowerSeries,
    nngp_power_series as nngp_power_series,
    ntk_power_series as ntk_power_series,
)
from .kernels import (
    DepthKernel as DepthKernel,
    depth_sweep as depth_sweep,
    gradient_angles as gradient_angles,
    infinite_nngp as infinite_nngp,
    infinite_ntk as infinite_ntk,
    infinite_ntk_layers as infinite_ntk_layers,
    smallest_gradient_angle as smallest_gradient_angle,
)
