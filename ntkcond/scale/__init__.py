"""Conditioning and angles beyond one batch (n up to a whole data set).

``blocks``: the NumPy block engine (one block of the NTK, or one block's smallest angles);
``sharded``: the same blocks on every JAX device; ``streaming``: the smallest gradient angle
over all pairs without an n × n matrix (its block-row sweeps and checkpoints in the private
``_pair_sweeps``); ``kernel_angle``: the same at finite width, from per-layer features;
``tiles``: the n × n infinite-width NTK in b × b tiles on worker threads; ``conditioning``: κ_eff of that kernel, exact (blockwise kernel + one
eigvalsh); ``matrix_free``: the same κ_eff without storing the kernel (Nyström-preconditioned
LOBPCG); ``bounds``: certified brackets of λmin, λmax and κ of the infinite-width NTK of a whole
data set from one pass of GEMM blocks (the power series, Schur + Gershgorin, Prop 4.1);
``processes``: the whole-data-set routes split over the processes of JAX's multi-controller
runtime (after ``jax.distributed.initialize``), every process getting the whole result.
"""
from .._core.memory import InsufficientMemoryError as InsufficientMemoryError
from .bounds import (
    ConditionBounds as ConditionBounds,
    LambdaMinBound as LambdaMinBound,
    Separation as Separation,
    condition_number_bounds as condition_number_bounds,
    data_separation as data_separation,
    lambda_min_lower_bound as lambda_min_lower_bound,
)
from .conditioning import (
    MatrixFreeConditioning as MatrixFreeConditioning,
    blockwise_ntk as blockwise_ntk,
    exact_conditioning as exact_conditioning,
    matrix_free_conditioning as matrix_free_conditioning,
)
from .kernel_angle import streaming_smallest_kernel_angle as streaming_smallest_kernel_angle
from .sharded import device_mesh as device_mesh
from .streaming import (
    SmallestAngle as SmallestAngle,
    StreamingAngles as StreamingAngles,
    streaming_smallest_angles as streaming_smallest_angles,
)
