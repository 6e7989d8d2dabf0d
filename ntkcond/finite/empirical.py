"""Exact finite-width NTKs of ``ntkcond.mlp`` nets without Jacobians, and their Monte Carlo.

For the net of ``ntkcond.finite.models`` eq. (1), f = s_L A^L W^{L+1} with zˡ = sₗ₋₁ Aˡ⁻¹ Wˡ, the
gradient of f(x) with respect to the weights Wˡ of layer i = l − 1 (0-based, as
``resolve_trainable``) is the outer product

    ∂f/∂Wˡ = (sₗ₋₁ Aˡ⁻¹(x)) ⊗ Bˡ(x),        Bˡ = ∂f/∂zˡ  (B^{L+1} = 1),

so the NTK Θ(x, x') = Σ_{i∈S} ⟨∂f(x)/∂W, ∂f(x')/∂W⟩ is a sum of Hadamard products of Grams

    Θ = Σ_{i∈S} sᵢ² (Aⁱ A'ⁱᵀ) ⊙ (B^{i+1} B'^{i+1 ᵀ}),                                 (1)

with the output gradients from one backward pass

    B^L = s_L W^{L+1 ᵀ} ⊙ σ'(z^L),   Bˡ = sₗ (B^{l+1} W^{l+1 ᵀ}) ⊙ σ'(zˡ),            (2)

σ'(z) = 1 for z > 0 and α otherwise. The read-out term (i = L) is s_L² A^L A'^{Lᵀ}.
Cost: one forward and one backward pass over the batch, plus two n₁ × n₂ Grams per layer;
memory O(n·Σm + n²); no n × P Jacobian is formed. Everything runs in the dtype of params
and x1 (float64, in a scoped x64 block, whenever one of them is float64: never silently
float32 because jax's x64 mode is off): as jitted jax at ``Precision.HIGHEST`` (no TF32/bf16
passes on accelerators), except float64 on the CPU, which runs the same equations in NumPy's
BLAS (``_numpy_route_applies``).

``monte_carlo_ntk`` averages eq. (1) over independent initialisations and reports standard
errors, so finite-width kernels can be compared with ``ntkcond.infinite_ntk``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import numbers

import numpy as np

from .._core.arrays import check_finite, check_kernel, check_param_leaves, check_real, float_dtype, overflow_error
from .._core.checks import as_count, resolve_trainable
from .._core.x64 import as_jax, dtype_of, on_cpu, scoped_dtype, x64
from ..spectrum import argmin_upper, conditioning_core, pairwise_angles_core, scale_trusted
from .models import MLP, GeneralMLP, check_params

__all__ = ["empirical_ntk", "empirical_ntk_features", "empirical_ntk_layers", "MonteCarloNTK",
           "monte_carlo_ntk", "numpy_self_ntk", "IDENTICAL_ROWS"]

_EPS64 = float(np.finfo(np.float64).eps)

#: Rows that stand for the n identical rows of a linear net's output gradients Bⁱ.
IDENTICAL_ROWS = 16

# Row blocks of x1 are sized so that one block's features and Gram temporaries stay near this.
_BLOCK_BYTES = 1 << 30


def _layer_factors(params, slope: float):
    """[(sᵢ, is_hidden)] of ``models`` eq. (1), from the (static) weight shapes."""
    c = 2.0 / (1.0 + slope * slope)
    last = len(params) - 1
    return [math.sqrt((c if i < last else 1.0) / w.shape[0]) for i, w in enumerate(params)]


def _features(params, x, slope: float, lowest: int, xp=None):
    """Scaled layer inputs sᵢAⁱ (i = 0 … L) and output gradients B^{i+1}, eq. (2).

    ``xp`` is the array namespace: jax.numpy (default; matmuls at ``Precision.HIGHEST``)
    or numpy (float64 on the CPU, ``_numpy_route_applies``).

    Returns (inputs, grads): inputs[i] is (n, fan_inᵢ); grads[i] is (n, fan_outᵢ) for
    lowest ≤ i < L, None elsewhere (the read-out has B^{L+1} = 1).
    """
    xp, mm = _namespace(xp)
    scales = _layer_factors(params, slope)
    last = len(params) - 1
    inputs, pre = [], []
    h = x
    for i, w in enumerate(params):
        a = scales[i] * h
        inputs.append(a)
        if i < last:
            z = mm(a, w)
            pre.append(z)
            h = xp.where(z > 0, z, slope * z)
    grads = [None] * (last + 1)
    b = None
    for i in range(last, lowest, -1):  # B^i from B^{i+1}: grads[i - 1]
        w = params[i]
        back = scales[i] * (w[:, 0][None, :] if b is None else mm(b, w.T))
        b = back * xp.where(pre[i - 1] > 0, 1.0, slope).astype(back.dtype)
        grads[i - 1] = b
    return inputs, grads


def _contract(f1, f2, layers, per_layer: bool, xp=None):
    """Eq. (1) from two feature sets: (len(layers), n1, n2) if per_layer else (n1, n2)."""
    xp, mm = _namespace(xp)
    (a1, b1), (a2, b2) = f1, f2
    terms = []
    for i in layers:
        gram = mm(a1[i], a2[i].T)  # NumPy: a symmetric rank-k update when f2 is f1
        if b1[i] is not None:
            gram = gram * mm(b1[i], b2[i].T)
        terms.append(gram)
    return xp.stack(terms) if per_layer else functools.reduce(xp.add, terms)


def _namespace(xp):
    """(array namespace, matmul): jax.numpy at Precision.HIGHEST unless xp is numpy."""
    if xp is np:
        return np, np.matmul
    import jax
    import jax.numpy as jnp

    return jnp, functools.partial(jnp.matmul, precision=jax.lax.Precision.HIGHEST)


@functools.lru_cache(maxsize=None)
def _jitted():
    import jax

    def ntk(params, x1, x2, slope, layers, per_layer):
        f1 = _features(params, x1, slope, layers[0])
        f2 = f1 if x2 is None else _features(params, x2, slope, layers[0])
        return _contract(f1, f2, layers, per_layer)

    def features(params, x, slope, lowest):
        return _features(params, x, slope, lowest)

    def block(params, x1, f2, slope, layers, per_layer):
        return _contract(_features(params, x1, slope, layers[0]), f2, layers, per_layer)

    static = ("slope", "layers", "per_layer")
    return (jax.jit(ntk, static_argnames=static),
            jax.jit(features, static_argnames=("slope", "lowest")),
            jax.jit(block, static_argnames=static))


def _numpy_route_applies(x, *arrays) -> bool:
    """float64 on the CPU runs in NumPy's BLAS: 2.2x faster than XLA there (0.21 s vs 0.45 s
    at n = 512, d = 784, m = 1024, L = 5). float32 stays in XLA, whose GEMM matches BLAS on
    the CPU and which fuses the elementwise passes (0.12 s vs 0.14 s)."""
    return x.dtype == np.float64 and on_cpu(x, *arrays)


def numpy_self_ntk(a0, gram0, params, scales, slope: float, layers, same_bits=None):
    """Θ(x, x) of eq. (1) in NumPy, float64: ``_features`` + ``_contract`` operation for
    operation (bitwise the same), with the elementwise passes in place. The NumPy route of
    ``empirical_ntk`` for one input set, and the kernel of ``ntkcond.finite.sweep.BatchNTK``.

    Args:
      a0: s₀x (n, d); gram0: a0 @ a0.T (symmetric rank-k update; shared across nets).
      params: float64 NumPy weights; scales: [s₀, …, s_L]; slope: α of σ; layers: trainable.
      same_bits: None, or ``BatchNTK._same_bits``: then linear nets (σ' = 1: every row of Bⁱ
        is the same) run the backward pass and the Grams BⁱBⁱᵀ on ``IDENTICAL_ROWS`` rows
        instead of n — the same BLAS calls on fewer rows, which give bit for bit the rows of
        the n-row calls where the BLAS accumulates each entry in an order that does not
        depend on the row count; ``same_bits(key, block, op, n)`` checks that per shape, and
        where it fails the kernel is recomputed on n rows.
    """
    last = len(params) - 1
    lowest = layers[0]
    n = a0.shape[0]
    inputs, masks = [a0], []
    a = a0
    for i in range(last):  # forward: A^{i+1} = s_{i+1} σ(z), z = (sᵢAⁱ) W^{i+1}
        z = a @ params[i]
        mask = None
        if slope == 0.0:
            np.maximum(z, 0.0, out=z)
            mask = z > 0  # relu(z) > 0 exactly where z > 0
        elif slope != 1.0:
            mask = z > 0
            np.multiply(z, slope, out=z, where=~mask)
        masks.append(mask)
        z *= scales[i + 1]
        a = z
        inputs.append(a)
    rows = min(n, IDENTICAL_ROWS) if same_bits is not None and slope == 1.0 else n
    grads = [None] * (last + 1)
    b = None
    for i in range(last, lowest, -1):  # backward, eq. (2): B^i from B^{i+1}, grads[i - 1]
        w = params[i]
        if b is None:
            back = np.empty((rows, w.shape[0]))
            back[:] = scales[i] * w[:, 0]
        else:
            if rows < n and not same_bits(("gemm", w.shape), b, lambda v: v @ w.T, n):
                return numpy_self_ntk(a0, gram0, params, scales, slope, layers)
            back = b @ w.T
            back *= scales[i]
        mask = masks[i - 1]
        if mask is not None:
            if slope == 0.0:
                np.multiply(back, mask, out=back)
            else:
                np.multiply(back, slope, out=back, where=~mask)
        b = grads[i - 1] = back
    K = None
    for i in layers:  # eq. (1), summed in the order of _contract
        g = grads[i]
        if g is not None:
            if rows < n and not same_bits(("gram", g.shape[1]), g, lambda v: v @ v.T, n):
                return numpy_self_ntk(a0, gram0, params, scales, slope, layers)
            gb = g @ g.T
            if rows < n:
                gb = gb[0, 0]  # every entry of BBᵀ: the product below is bitwise the same
        if i == 0:
            term = gram0 if g is None else gram0 * gb
        else:
            term = inputs[i] @ inputs[i].T
            if g is not None:
                term *= gb
        if K is None:
            K = term.copy() if term is gram0 else term
        else:
            K += term
    return K


def _numpy_route():
    """The ``_jitted`` trio in NumPy (same equations, run eagerly in NumPy's BLAS)."""

    def ntk(params, x1, x2, slope, layers, per_layer):
        if x2 is None and not per_layer:  # Θ(x, x): the in-place route
            scales = _layer_factors(params, slope)
            a0 = scales[0] * x1
            return numpy_self_ntk(a0, a0 @ a0.T, params, scales, slope, layers)
        f1 = _features(params, x1, slope, layers[0], np)
        f2 = f1 if x2 is None else _features(params, x2, slope, layers[0], np)
        return _contract(f1, f2, layers, per_layer, np)

    def features(params, x, slope, lowest):
        return _features(params, x, slope, lowest, np)

    def block(params, x1, f2, slope, layers, per_layer):
        return _contract(_features(params, x1, slope, layers[0], np), f2, layers, per_layer, np)

    return ntk, features, block


def _validate(net, params, x1, x2, where):
    """Types, shapes and finiteness of the arguments, before anything is converted or computed:
    TypeError for a wrong net or a complex/non-numeric array, ValueError for wrong shapes or a
    NaN/Inf in x1, x2 (naming the row) or in params (naming the weight and entry)."""
    if not isinstance(net, (MLP, GeneralMLP)):
        raise TypeError(f"{where}: expected net from ntkcond.mlp(...), got {type(net).__name__}")
    check_real(x1, where, "x1")
    if x2 is not None:
        check_real(x2, where, "x2")
    shape1 = np.shape(x1)
    check_params(net, params, shape1, where)
    if x2 is not None:
        shape2 = np.shape(x2)
        if len(shape2) != 2 or shape2[1] != shape1[1] or shape2[0] < 1:
            raise ValueError(f"{where}: expected x1 and x2 of shapes (n1, d), (n2, d), "
                             f"got {tuple(shape1)} and {tuple(shape2)}")
    check_param_leaves(list(params), where)
    check_finite(x1, where, "x1")
    if x2 is not None:
        check_finite(x2, where, "x2")


def _prepare(params, x1, x2):
    """params, x1, x2 as jax arrays of one floating dtype: the promotion of theirs (jax's
    rules), or jax's default float for integer inputs. Call inside ``scoped_dtype``."""
    import jax.numpy as jnp

    dtype = jnp.result_type(*(dtype_of(a) for a in (x1, x2, *params) if a is not None))
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.zeros((), float).dtype
    params = [as_jax(w, dtype) for w in params]
    return params, as_jax(x1, dtype), None if x2 is None else as_jax(x2, dtype)


def _block_size(block_size, where):
    return None if block_size is None else as_count(block_size, "block_size", where)


def _ntk(net, params, x1, x2, layers, per_layer, block_size, where):
    _validate(net, params, x1, x2, where)
    block_size = _block_size(block_size, where)
    with scoped_dtype(x1, x2, *params), np.errstate(over="ignore", invalid="ignore"):
        params, x1, x2 = _prepare(params, x1, x2)
        K = _ntk_arrays(net, params, x1, x2, layers, per_layer, block_size)  # overflow: below
        check_kernel(K, where, x1.dtype, (x1, x2))
        return K


def _ntk_arrays(net, params, x1, x2, layers, per_layer, block_size):
    import jax.numpy as jnp

    if isinstance(net, GeneralMLP):  # biases, any activation, residual: general_ntk eq. (1)
        from .general_ntk import general_ntk

        if _numpy_route_applies(x1, x2, *params):
            return jnp.asarray(general_ntk(net, [np.asarray(w) for w in params], np.asarray(x1),
                                           None if x2 is None else np.asarray(x2), layers,
                                           per_layer))
        return general_ntk(net, params, x1, x2, layers, per_layer, jnp)

    slope = net.activation.slope
    n1, n2 = x1.shape[0], (x1 if x2 is None else x2).shape[0]
    if block_size is None:
        row_bytes = x1.dtype.itemsize * 4 * (n2 + x1.shape[1] + 2 * sum(net.widths))
        block_size = max(128, _BLOCK_BYTES // row_bytes // 128 * 128)
    cpu = _numpy_route_applies(x1, x2, *params)
    if cpu:
        params, x1 = [np.asarray(w) for w in params], np.asarray(x1)
        x2 = None if x2 is None else np.asarray(x2)
    ntk_fn, features_fn, block_fn = _numpy_route() if cpu else _jitted()
    if n1 <= block_size:
        return jnp.asarray(ntk_fn(params, x1, x2, slope=slope, layers=layers, per_layer=per_layer))
    f2 = features_fn(params, x1 if x2 is None else x2, slope=slope, lowest=layers[0])
    xp = np if cpu else jnp
    pad = 0 if cpu else -n1 % block_size  # jit: pad the last block, one compiled block shape
    x1p = xp.concatenate([x1, xp.zeros((pad, x1.shape[1]), x1.dtype)]) if pad else x1
    blocks = [block_fn(params, x1p[s:s + block_size], f2, slope=slope, layers=layers,
                       per_layer=per_layer) for s in range(0, n1 + pad, block_size)]
    return jnp.asarray(xp.concatenate(blocks, axis=-2)[..., :n1, :])


def empirical_ntk(net, params, x1, x2=None, *, trainable="all", block_size=None):
    """Exact empirical NTK Θ(x1, x2) of an ``ntkcond.mlp`` net, eq. (1).

    Θ = Σ_{i∈S} sᵢ² (Aⁱ A'ⁱᵀ) ⊙ (B^{i+1} B'^{i+1 ᵀ}) from one forward and one backward
    pass; equals J₁ J₂ᵀ with J the (n, P) Jacobian of f restricted to the layers in S, without
    forming J. Memory O(n·Σm + n²).

    Args:
      net: an ``MLP`` from ``ntkcond.mlp``.
      params: list of L + 1 weights (``net.shapes(d)``), e.g. ``net.init(key, d)``.
      x1: (n1, d) inputs; x2: (n2, d) inputs, default x1.
      trainable: "all", "first", "last" or 0-based layer indices (as ``infinite_ntk``).
      block_size: rows of x1 per block (default: blocks of about 1 GiB of temporaries).

    Returns:
      (n1, n2) jax array in the dtype of params, x1 and x2 (jax's promotion of theirs):
      float64 whenever any of them is float64, with or without jax's x64 mode (the
      computation is scoped to float64; the global setting is left alone).

    Raises:
      TypeError: net is not an ``MLP``; x1, x2 or a weight is complex or not numeric;
        block_size is not an integer.
      ValueError: shapes that do not fit; NaN/Inf in x1, x2 (the row is named) or in a
        weight (``params[i]`` and the entry); a kernel that overflows its dtype (e.g. float32
        inputs of size 1e30: pass float64 or rescale).

    Examples:
      >>> import jax, numpy as np, ntkcond
      >>> x = np.random.default_rng(0).standard_normal((4, 8))
      >>> net = ntkcond.mlp(2, 256)
      >>> params = net.init(jax.random.PRNGKey(0), 8, np.float64)
      >>> K = np.asarray(ntkcond.empirical_ntk(net, params, x))   # float64: from the params
      >>> K.shape, K.dtype, bool(np.allclose(K, K.T, rtol=1e-12, atol=0))
      ((4, 4), dtype('float64'), True)
    """
    layers = resolve_trainable(trainable, getattr(net, "depth", 0), "empirical_ntk")
    return _ntk(net, params, x1, x2, layers, False, block_size, "empirical_ntk")


def empirical_ntk_layers(net, params, x1, x2=None, *, block_size=None):
    """Per-layer terms Θᵢ = sᵢ² (Aⁱ A'ⁱᵀ) ⊙ (B^{i+1} B'^{i+1 ᵀ}) of eq. (1).

    ``empirical_ntk(..., trainable=S) == empirical_ntk_layers(...)[list(S)].sum(0)``, as
    ``ntkcond.infinite_ntk_layers``.

    Returns:
      (L + 1, n1, n2) jax array; index i is the contribution of W⁽ⁱ⁺¹⁾ (L = read-out). Dtype
      and errors as ``empirical_ntk``.
    """
    depth = getattr(net, "depth", 0)
    layers = tuple(range(depth + 1))
    return _ntk(net, params, x1, x2, layers, True, block_size, "empirical_ntk_layers")


def empirical_ntk_features(net, params, x, *, trainable="all") -> list:
    """Per-layer features (H_i, D_i) with Θ = Σ_{i∈S} (H_i H_iᵀ) ⊙ (D_i D_iᵀ), eq. (1).

    H_i = sᵢAⁱ (n, fan_inᵢ) are the scaled layer inputs and D_i = B^{i+1} (n, fan_outᵢ) the
    output gradients w.r.t. the pre-activations; D is None for the read-out (B = 1). This is
    what ``ntkcond.streaming_smallest_kernel_angle`` streams over, so the smallest finite-width
    gradient angle of a whole data set never needs the n × n kernel.

    Args:
      net: from ``ntkcond.mlp``; params: its weights; x: (n, d) inputs.
      trainable: "all", "first", "last" or 0-based layer indices (as ``empirical_ntk``).

    Returns:
      list of (H, D) numpy arrays, one per trainable layer, in the dtype of params and x
      (float64 whenever either is float64, as ``empirical_ntk``).

    Raises:
      as ``empirical_ntk``; the overflow check is on the kernel's diagonal
      Θ(x, x) = Σᵢ ‖Hᵢ‖² ‖Dᵢ‖² and on the Grams ‖Hᵢ‖², ‖Dᵢ‖² (row by row).
    """
    where = "empirical_ntk_features"
    _validate(net, params, x, None, where)
    layers = resolve_trainable(trainable, net.depth, where)
    with scoped_dtype(x, *params), np.errstate(over="ignore", invalid="ignore"):
        params, x, _ = _prepare(params, x, None)
        xp = np if _numpy_route_applies(x, *params) else None
        if xp is np:
            params, x = [np.asarray(w) for w in params], np.asarray(x)
        inputs, grads = _features(params, x, net.activation.slope, min(layers), xp)
        out = [(np.asarray(inputs[i]), None if grads[i] is None else np.asarray(grads[i]))
               for i in layers]
    _check_feature_grams(out, x, where)
    return out


def _check_feature_grams(features, x, where):
    """ValueError if a Gram of the features, or the kernel Σᵢ (HᵢHᵢᵀ) ⊙ (DᵢDᵢᵀ) they stand
    for, overflows their dtype: its diagonal (‖hᵢ‖², ‖dᵢ‖², Σ ‖hᵢ‖²‖dᵢ‖², computed in float64)
    bounds every entry by Cauchy-Schwarz, so this is exact."""
    dtype = features[0][0].dtype
    top = float(np.finfo(dtype).max)
    diag = np.zeros(features[0][0].shape[0])
    grams = []
    with np.errstate(over="ignore", invalid="ignore"):
        for h, d in features:
            hh = np.sum(np.square(h, dtype=np.float64), axis=1)
            dd = np.ones_like(hh) if d is None else np.sum(np.square(d, dtype=np.float64), axis=1)
            grams += [hh, dd]
            diag += hh * dd
    if max(float(np.max(g)) for g in grams + [diag]) > top:
        raise overflow_error(where, dtype, (x,))


@dataclasses.dataclass(frozen=True)
class MonteCarloNTK:
    """Empirical-NTK statistics over independent initialisations (seeds).

    Standard errors are sample standard deviations (ddof = 1) over √(number of seeds);
    NaN for a single seed.

    Attributes:
      seeds: the seeds used (``jax.random.PRNGKey(seed)``), in order.
      mean, stderr: (n, n) float64 mean kernel and its standard error.
      kappa_eff, kappa_eff_mean, kappa_eff_stderr: per-seed κ_eff
        (``effective_condition_number``), their mean and standard error.
      min_angle, min_angle_mean, min_angle_stderr: per-seed smallest gradient angle
        (``smallest_pairwise_angle``, radians), their mean and standard error.
      dtype: name of the dtype the kernels were computed in.
    """

    seeds: tuple
    mean: np.ndarray
    stderr: np.ndarray
    kappa_eff: np.ndarray
    kappa_eff_mean: float
    kappa_eff_stderr: float
    min_angle: np.ndarray
    min_angle_mean: float
    min_angle_stderr: float
    dtype: str


def _mean_stderr(samples: np.ndarray):
    count = samples.shape[0]
    mean = samples.mean(axis=0)
    if count < 2:
        return mean, np.full_like(mean, np.nan)
    return mean, samples.std(axis=0, ddof=1) / math.sqrt(count)


def monte_carlo_ntk(net, x, *, seeds=5, trainable="all", dtype=None) -> MonteCarloNTK:
    """Mean and standard error of the empirical NTK, κ_eff and smallest angle over seeds.

    Args:
      net: an ``MLP`` from ``ntkcond.mlp``.
      x: (n, d) inputs, n ≥ 2.
      seeds: number of seeds S ≥ 1 (seeds 0 … S−1) or an iterable of distinct int seeds in
        [0, 2³²) (``jax.random.PRNGKey`` without x64 keeps 32 bits: larger seeds would repeat).
      trainable: as ``empirical_ntk``.
      dtype: floating dtype of weights and kernel; default the dtype of x (jax's default
        float for integer x). float64 is computed in float64 with or without jax's x64 mode
        (scoped, as ``empirical_ntk``); κ beyond ~1e4 needs float64.

    Returns:
      ``MonteCarloNTK``.

    Raises:
      TypeError: net is not an ``MLP``; seeds is not a count or an iterable of ints (a bool,
        a float, a string); dtype is not a real floating dtype; x is complex or not numeric.
      ValueError: seeds < 1, repeated or out of range; x not (n, d) with n ≥ 2, or with
        NaN/Inf (the row is named); a kernel that overflows its dtype.
    """
    import jax
    import jax.numpy as jnp

    where = "monte_carlo_ntk"
    if not isinstance(net, (MLP, GeneralMLP)):
        raise TypeError(f"{where}: expected net from ntkcond.mlp(...), got {type(net).__name__}")
    seeds = _as_seeds(seeds, where)
    dtype = _float_dtype(dtype, x, where)
    shape = np.shape(x)
    if len(shape) != 2 or shape[0] < 2:
        raise ValueError(f"{where}: expected x of shape (n, d) with n >= 2, got {tuple(shape)}")
    check_finite(x, where, "x")
    layers = resolve_trainable(trainable, net.depth, where)
    kernels, kappas, angles = [], [], []
    with x64() if dtype == np.float64 else contextlib.nullcontext():
        x = as_jax(x, dtype)
        for seed in seeds:
            params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=x.dtype)
            K = np.asarray(_ntk(net, params, x, None, layers, False, None, where), dtype=np.float64)
            kernels.append(K)
            # K: finite (checked in _ntk) and symmetric up to rounding (J Jᵀ): the spectrum
            # cores on it, symmetrised once, not re-checked (effective_condition_number and
            # smallest_pairwise_angle of K otherwise)
            rtol = float(K.shape[0] * np.finfo(x.dtype).eps)
            kappas.append(conditioning_core(scale_trusted(K, where, symmetrise=True), rtol, 0.0,
                                            where).kappa_eff)
            angles.append(argmin_upper(pairwise_angles_core(K, _EPS64, where))[0])
        dtype_name = str(jnp.dtype(x.dtype))
    mean, stderr = _mean_stderr(np.stack(kernels))
    (k_mean, k_err), (a_mean, a_err) = (_mean_stderr(np.array(v)) for v in (kappas, angles))
    return MonteCarloNTK(seeds=seeds, mean=mean, stderr=stderr, kappa_eff=np.array(kappas),
                         kappa_eff_mean=float(k_mean), kappa_eff_stderr=float(k_err),
                         min_angle=np.array(angles), min_angle_mean=float(a_mean),
                         min_angle_stderr=float(a_err), dtype=dtype_name)


def _as_seeds(seeds, where) -> tuple:
    """A count S (→ 0 … S−1) or an iterable of distinct ints in [0, 2³²), as a tuple."""
    expected = "seeds as a count >= 1 or an iterable of int seeds"
    if isinstance(seeds, (str, bytes)) or isinstance(seeds, bool):
        raise TypeError(f"{where}: expected {expected}, got {type(seeds).__name__} {seeds!r}")
    if isinstance(seeds, numbers.Integral):
        return tuple(range(as_count(seeds, "seeds", where)))
    try:
        values = list(seeds)
    except TypeError:
        raise TypeError(f"{where}: expected {expected}, got {type(seeds).__name__} {seeds!r}") from None
    for s in values:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"{where}: expected int seeds, got {type(s).__name__} {s!r} in {seeds!r}")
        if not 0 <= s < 2**32:
            raise ValueError(f"{where}: expected seeds in [0, 2**32), got {s!r}")
    if not values:
        raise ValueError(f"{where}: expected at least one seed, got none")
    if len(set(values)) != len(values):
        raise ValueError(f"{where}: expected distinct seeds (a repeated seed repeats its net and "
                         f"understates the standard errors), got {values}")
    return tuple(int(s) for s in values)


def _float_dtype(dtype, x, where):
    """The compute dtype of ``monte_carlo_ntk``: ``dtype`` (a real floating dtype), else the
    dtype of x, else (integer x) jax's default float."""
    import jax.numpy as jnp

    check_real(x, where, "x")
    if dtype is None:
        dtype = dtype_of(x)
        return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.zeros((), float).dtype
    return float_dtype(dtype, where)
