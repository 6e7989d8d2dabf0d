"""Empirical NTKs of any JAX model, and neural-tangents stax networks.

For a model f(params, x) with per-example output of size O and Jacobian J(x) = ∂f(x)/∂params
(O × P), the empirical NTK is

    Θ(x, x')_{ab} = Σ_p J(x)_{ap} J(x')_{bp}            (n₁, n₂, O, O), "full"           (1)
    Θ(x, x')      = (1/O) Σ_a Θ(x, x')_{aa}              (n₁, n₂), the normalised trace   (2)

(eq. (2) is neural-tangents' ``trace_axes=(-1,)`` convention: the mean over outputs, so it
tends to the single-output ``kernel_fn(..., 'ntk')`` at infinite width.)

Two methods, both for models that act on examples independently (neural-tangents'
``vmap_axes=0``):
  "jacobian"  eq. (1) one parameter group at a time: Θ = Σ_g J_g(x₁) J_g(x₂)ᵀ, with J_g the
              per-example Jacobians (``vmap(jacrev)``) of all rows w.r.t. a box of
              parameters small enough for ``memory_budget``, contracted by one GEMM (NumPy's
              BLAS on the CPU). Every Jacobian entry is computed once.
  "ntk_vp"    NTK-vector products: per-example gradients of x₂ rows as tangents,
              pushed through f(·, x₁) with ``jvp``: Θ[:, j, :, b] = J₁ J₂[j, b]ᵀ.
A budget too small for one parameter's column ("jacobian") or one example's gradient
("ntk_vp") raises ``ValueError`` before anything is allocated. Cost is O(n₁n₂·O·P) either
way: for ``ntkcond.mlp`` nets the structured ``ntkcond.empirical_ntk`` is far faster.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import math
import numbers

import numpy as np

from .._core.arrays import check_finite, check_kernel, check_param_leaves, check_real, float_dtype
from .._core.x64 import as_jax, dtype_of, on_cpu, scoped_dtype, x64

__all__ = ["empirical_ntk_fn", "check_per_example", "StaxNet", "from_stax"]

_METHODS = ("jacobian", "ntk_vp")


def _per_example(apply_fn):
    """x ↦ f(params, x[None]) flattened to (O,)."""
    return lambda params, xi: apply_fn(params, xi[None]).reshape(-1)


# ------------------------------------------------------------------ method "jacobian", eq. (1)
def _boxes(shape, cap: int):
    """Cut an array of ``shape`` into boxes of ≤ cap entries, as (starts, sizes) pairs.

    The whole array if it fits; otherwise the leading indices are fixed and the first axis
    k whose trailing block prod(shape[k+1:]) fits is cut into runs of cap // that block, so
    that a (fan_in, fan_out) weight is cut into row blocks.
    """
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) <= cap:
        return [((0,) * len(shape), shape)]
    k = next(k for k in range(len(shape)) if math.prod(shape[k + 1:]) <= cap)
    tail = shape[k + 1:]
    run = max(1, cap // math.prod(tail))
    return [(lead + (a,) + (0,) * len(tail), (1,) * k + (min(run, shape[k] - a),) + tail)
            for lead in itertools.product(*map(range, shape[:k]))
            for a in range(0, shape[k], run)]


def _parameter_groups(shapes, cap: int):
    """Boxes of all leaves, packed in order into groups of ≤ cap parameters.

    Returns a list of groups; a group is a list of (leaf index, starts, sizes).
    """
    groups, current, size = [], [], 0
    for leaf, shape in enumerate(shapes):
        for starts, sizes in _boxes(shape, cap):
            count = math.prod(sizes)
            if current and size + count > cap:
                groups.append(current)
                current, size = [], 0
            current.append((leaf, starts, sizes))
            size += count
    return groups + ([current] if current else [])


def _group_jacobian(apply_fn, params, xs, starts, signature):
    """Per-example Jacobians of the rows of xs w.r.t. one parameter group: (c, O·P_g) … (c, O, P_g).

    ``signature`` (static) is ((leaf, sizes), ...); ``starts`` (traced) the boxes' corners.
    Each box is spliced into its leaf with ``dynamic_update_slice``, so reverse mode only
    writes the box's slice of each per-example gradient (XLA slices the outer products).
    """
    import jax
    import jax.numpy as jnp

    leaves, treedef = jax.tree_util.tree_flatten(params)

    def f(boxes, xi):
        spliced = list(leaves)
        for (leaf, _), box, corner in zip(signature, boxes, starts):
            spliced[leaf] = jax.lax.dynamic_update_slice(spliced[leaf], box, corner)
        return _per_example(apply_fn)(jax.tree_util.tree_unflatten(treedef, spliced), xi)

    boxes = [jax.lax.dynamic_slice(leaves[leaf], corner, sizes)
             for (leaf, sizes), corner in zip(signature, starts)]
    jac = jax.vmap(jax.jacrev(f), (None, 0))(boxes, xs)  # list of (c, O, *sizes)
    c, o = jac[0].shape[:2]
    return jnp.concatenate([j.reshape(c, o, -1) for j in jac], axis=-1)


def _gram(j1, j2, full: bool):
    """Σ_p J₁[i, a, p] J₂[j, b, p]: (c1, c2, O, O) if full, else Σ_a (c1, c2), one GEMM.

    On the CPU the product runs in NumPy's BLAS (``ntkcond._core.x64.on_cpu``: ~2.7x XLA's GEMM
    in float64, and ``J @ J.T`` of one buffer is a symmetric rank-k update); elsewhere, and
    under a ``jax.jit`` trace (no values to hand to NumPy), it is a jax matmul at
    ``Precision.HIGHEST`` (no TF32 on GPUs).
    """
    import jax
    import jax.numpy as jnp

    c1, o, p = j1.shape
    c2 = j2.shape[0]
    shape1, shape2 = ((c1 * o, p), (c2 * o, p)) if full else ((c1, o * p), (c2, o * p))
    if not _traced(j1, j2) and on_cpu(j1) and on_cpu(j2):
        a = np.asarray(j1).reshape(shape1)
        product = a @ (a if j2 is j1 else np.asarray(j2).reshape(shape2)).T
    else:
        product = jnp.matmul(j1.reshape(shape1), j2.reshape(shape2).T, precision=jax.lax.Precision.HIGHEST)
    return product.reshape(c1, o, c2, o).transpose(0, 2, 1, 3) if full else product


def _jacobian_ntk(jac_jit, params, x1, x2, same, full, n_out, budget, where):
    """Eq. (1) by parameter groups: Θ = Σ_g J_g(x1) J_g(x2)ᵀ, each J_g over all rows at once.

    Every per-example Jacobian entry is computed once and the contraction is one large GEMM
    per group, so nothing is recomputed unless the rows alone overflow the budget: then the
    rows are cut into blocks and each pair of blocks (upper triangle if x2 is x1) is done
    by parameter groups in turn.
    """
    import jax
    import jax.numpy as jnp

    leaves = jax.tree_util.tree_leaves(params)
    shapes = [leaf.shape for leaf in leaves]
    n_par = sum(math.prod(s) for s in shapes)
    item = x1.dtype.itemsize
    half = budget // 2  # the group Jacobian, plus as much again for XLA's working copies
    if n_out * item > half:
        raise ValueError(f"{where}: one parameter's Jacobian column ({n_out} outputs x {item} bytes) "
                         f"does not fit memory_budget = {budget} bytes (twice that is needed)")
    n1, n2 = x1.shape[0], x2.shape[0]
    per_row = n_out * item * min(n_par, 4096)  # blocks of rows hold ≥ 4096 parameters per group
    if (n1 + (0 if same else n2)) * per_row <= half:
        rows = max(n1, n2)
    else:
        rows = max(1, half // (2 * per_row))
    starts2 = range(0, n2, rows)
    out = None
    for s2 in starts2:
        for s1 in (range(0, s2 + 1, rows) if same else range(0, n1, rows)):
            diagonal = same and s1 == s2
            xa, xb = x1[s1:s1 + rows], x2[s2:s2 + rows]
            cap = max(1, half // ((xa.shape[0] + (0 if diagonal else xb.shape[0])) * n_out * item))
            block = None
            for group in _parameter_groups(shapes, cap):
                signature = tuple((leaf, sizes) for leaf, _, sizes in group)
                corners = tuple(starts for _, starts, _ in group)
                ja = jac_jit(params, xa, corners, signature)
                jb = ja if diagonal else jac_jit(params, xb, corners, signature)
                term = _gram(ja, jb, full)
                block = term if block is None else block + term
            if rows >= max(n1, n2):
                out = block
                break
            out = _place(out, block, (n1, n2) + ((n_out, n_out) if full else ()), s1, s2, rows,
                         mirror=same and not diagonal)
    return jnp.asarray(out if full else out / n_out)


def _traced(*arrays) -> bool:
    """Whether any array is a tracer (the caller runs under ``jax.jit``/``vmap``)."""
    import jax

    return any(isinstance(a, jax.core.Tracer) for a in arrays)


def _place(out, block, shape, s1, s2, rows, mirror):
    """out[s1:, s2:] = block (and its transpose at [s2:, s1:] if ``mirror``): in place in a
    NumPy buffer, or functionally (``.at[].set``) when the block is traced."""
    import jax.numpy as jnp

    transpose = (1, 0, 3, 2) if len(shape) == 4 else (1, 0)
    if _traced(block):
        out = jnp.zeros(shape, block.dtype) if out is None else out
        out = out.at[s1:s1 + rows, s2:s2 + rows].set(block)
        return out.at[s2:s2 + rows, s1:s1 + rows].set(jnp.transpose(block, transpose)) if mirror else out
    block = np.asarray(block)
    out = np.zeros(shape, dtype=block.dtype) if out is None else out
    out[s1:s1 + rows, s2:s2 + rows] = block
    if mirror:
        out[s2:s2 + rows, s1:s1 + rows] = np.transpose(block, transpose)
    return out


# -------------------------------------------------------------------- method "ntk_vp", eq. (1)
def _ntk_vp_block(apply_fn, params, x1, xs2, full: bool):
    """Θ(x1, xs2) by jvps of f(·, x1) along the per-example gradients of the rows of xs2."""
    import jax
    import jax.numpy as jnp

    grads = jax.vmap(jax.jacrev(_per_example(apply_fn)), (None, 0))(params, xs2)
    c, o = jax.tree_util.tree_leaves(grads)[0].shape[:2]
    tangents = jax.tree_util.tree_map(lambda g: g.reshape((c * o,) + g.shape[2:]), grads)
    _, push = jax.linearize(lambda p: apply_fn(p, x1).reshape(x1.shape[0], -1), params)
    out = jax.lax.map(push, tangents)  # (c·o, n1, O), one tangent at a time
    out = out.reshape(c, o, x1.shape[0], -1)  # [j, b, i, a]
    if full:
        return jnp.transpose(out, (2, 0, 3, 1))
    return jnp.einsum("jaia->ij", out) / o


def empirical_ntk_fn(apply_fn, *, method="jacobian", full_outputs=False, memory_budget=1 << 30):
    """The empirical NTK of any ``apply_fn(params, x)``, eqs. (1)–(2).

    Args:
      apply_fn: f(params, x) with x of shape (n, ...) and output (n,) or (n, ...); must act
        on examples independently (no batch statistics).
      method: "jacobian" (default: per-example Jacobians of all rows, one parameter group
        at a time, each contracted by one GEMM; every Jacobian entry is computed once) or
        "ntk_vp" (jvp of f(·, x1) along each per-example gradient of x2; about twice the
        FLOPs, but only one row chunk of gradients is stored). In
        ``benchmarks/bench_empirical_ntk.py`` "jacobian" took 19 s against 35 s (n = 512,
        d = 784, m = 1024, L = 5, float32) and was faster than neural-tangents' best in 23
        of 25 configurations.
      full_outputs: False → (n1, n2), the mean over outputs, eq. (2); True → (n1, n2, O, O).
      memory_budget: bytes for Jacobian/tangent storage (forward-pass activations come on
        top): "jacobian" holds one group's Jacobian of all rows in half of it (the rows
        are cut into blocks only when even 4096 parameters per group would not fit);
        "ntk_vp" holds as many rows' full gradients as fit in half of it.

    Returns:
      ``ntk(params, x1, x2=None)`` → jax array in the dtype of params, x1 and x2 (jax's
      promotion; float64 whenever one of them is float64, with or without jax's x64 mode:
      the computation is scoped to float64 and the global setting is left alone).
      ``ntk`` runs under ``jax.jit`` (e.g. ``jax.jit(ntk)(params, x1)``): dtypes and shapes
      are still checked while tracing, but traced values have no entries to check, so the
      NaN/Inf checks of inputs and kernel are skipped there, and the contraction is a jax
      matmul instead of NumPy's BLAS. Inside the trace float64 needs jax's x64 mode (e.g.
      ``jax.experimental.enable_x64()`` around the jitted call).

    Raises:
      TypeError: apply_fn not callable; memory_budget not a real number; full_outputs not a
        bool. From ``ntk``: x1, x2 or a parameter leaf complex or not numeric; a parameter
        leaf that is not floating (integers: the NTK differentiates with respect to every leaf).
      ValueError: unknown method, memory_budget <= 0. From ``ntk``: x1, x2 of different
        example shapes, or with no example; NaN/Inf in x1, x2 (the row is named) or in a
        parameter leaf (its path, e.g. ``params[2][0]``, and the entry); an apply_fn that is
        not one output per example (one number per batch, a dropped example, (O, n) outputs,
        rows that depend on each other: ``check_per_example``, on up to 4 rows of x1 and of
        x2, on the first call for each example shape, dtype and parameter structure); a
        kernel with NaN/Inf from finite inputs (an overflow, e.g. float32 inputs of size
        1e30, or apply_fn itself); the budget cannot hold one example's gradient ("ntk_vp") or
        one parameter's column ("jacobian").
    """
    where = "empirical_ntk_fn"
    if method not in _METHODS:
        raise ValueError(f"{where}: expected method in {_METHODS}, got {method!r}")
    if not callable(apply_fn):
        raise TypeError(f"{where}: expected a callable apply_fn, got {type(apply_fn).__name__}")
    memory_budget = _as_budget(memory_budget, where)
    if not isinstance(full_outputs, (bool, np.bool_)):
        raise TypeError(f"{where}: expected full_outputs as a bool, got {type(full_outputs).__name__} "
                        f"{full_outputs!r}")
    full_outputs = bool(full_outputs)
    import jax

    jac_jit = jax.jit(lambda p, xs, corners, signature: _group_jacobian(apply_fn, p, xs, corners, signature),
                      static_argnums=3)
    vp_jit = jax.jit(lambda p, x1, xs2, full: _ntk_vp_block(apply_fn, p, x1, xs2, full),
                     static_argnames="full")

    probed = set()  # (example shape, dtype, parameter structure) whose contract was checked

    def ntk(params, x1, x2=None):
        same = x2 is None
        _check_generic_inputs(params, x1, x2, where)
        leaves = jax.tree_util.tree_leaves(params)
        with scoped_dtype(x1, x2, *leaves), np.errstate(over="ignore", invalid="ignore"):
            x1, x2, params = _cast(params, x1, x2)
            key = (x1.shape[1:], x1.dtype.name, jax.tree_util.tree_structure(params),
                   tuple(leaf.shape for leaf in jax.tree_util.tree_leaves(params)))
            if key not in probed:  # a property of the model: once per shape and structure
                check_per_example(apply_fn, params, x1, None if same else x2, where)
                if not _traced(x1):
                    probed.add(key)
            x2 = x1 if same else x2
            if method == "jacobian":
                out = _jacobian_ntk(jac_jit, params, x1, x2, same, full_outputs,
                                    _n_out(apply_fn, params, x1), memory_budget, where)
            else:
                out = _ntk_vp(vp_jit, apply_fn, params, x1, x2, full_outputs, memory_budget, where)
            # an overflow (NumPy's warning silenced above) is one clear error instead
            check_kernel(out, where, x1.dtype, (x1, None if same else x2),
                         " (or apply_fn itself returns NaN/Inf)")
            return out

    return ntk


def _as_budget(memory_budget, where) -> int:
    if isinstance(memory_budget, bool) or not isinstance(memory_budget, numbers.Real):
        raise TypeError(f"{where}: expected memory_budget as a number of bytes > 0, got "
                        f"{type(memory_budget).__name__} {memory_budget!r}")
    if not (math.isfinite(memory_budget) and memory_budget >= 1):
        raise ValueError(f"{where}: expected memory_budget >= 1 byte (finite), got {memory_budget!r}")
    return int(memory_budget)


def _check_generic_inputs(params, x1, x2, where):
    """TypeError/ValueError for complex or non-numeric arrays, different example shapes, and
    NaN/Inf in x1, x2 (the row) or in a parameter leaf (its path and entry)."""
    check_real(x1, where, "x1")
    if x2 is not None:
        check_real(x2, where, "x2")
    shape1, shape2 = np.shape(x1), np.shape(x1 if x2 is None else x2)
    if len(shape1) < 1 or len(shape2) < 1 or shape1[1:] != shape2[1:]:
        raise ValueError(f"{where}: expected x1 and x2 of shapes (n1, ...), (n2, ...) with the "
                         f"same example shape, got {tuple(shape1)} and {tuple(shape2)}")
    for name, shape in (("x1", shape1), ("x2", None if x2 is None else shape2)):
        if shape is not None and shape[0] == 0:
            raise ValueError(f"{where}: expected {name} with at least one example, got shape "
                             f"{tuple(shape)}")
    check_param_leaves(params, where)
    import jax
    import jax.numpy as jnp

    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        dt = dtype_of(leaf)
        if not jnp.issubdtype(dt, jnp.floating):  # bfloat16 and other ml_dtypes floats too
            raise TypeError(f"{where}: expected floating parameter leaves (the NTK differentiates "
                            f"with respect to every leaf; pass integer constants by closure), got "
                            f"{dt} at params{jax.tree_util.keystr(path)}")
    check_finite(x1, where, "x1")
    if x2 is not None:
        check_finite(x2, where, "x2")


#: Rows of x1 (and as many of x2) on which ``check_per_example`` compares the batch's outputs
#: with those of the examples one at a time.
PROBE_ROWS = 4


def check_per_example(apply_fn, params, x1, x2, where):
    """The contract of eqs. (1)–(2): ``apply_fn(params, x)`` returns one output per example,
    shape (n, ...), and output row i depends on x[i] alone (neural-tangents' ``vmap_axes=0``).

    Checked on a probe of up to ``PROBE_ROWS`` rows of x1 and of x2: the batch's output must
    have the probe's n rows, and agree with the examples evaluated one at a time to
    √eps·max|output| of the output's dtype (1.5e-8 in float64, 3.5e-4 in float32: the rounding
    of a differently blocked product, far below what a mixing of rows changes). So a model
    that returns one number per batch, drops an example, returns (O, n) for (n, O), or mixes
    the rows (x − x.mean(0), batch statistics) is refused instead of giving a kernel of
    another function. Skipped under a ``jax.jit`` trace (no values)."""
    import jax
    import jax.numpy as jnp

    if _traced(x1, *jax.tree_util.tree_leaves(params), *([] if x2 is None else [x2])):
        return  # under jax.jit: no values to compare
    rows = x1[:PROBE_ROWS] if x2 is None else jnp.concatenate([x1[:PROBE_ROWS], x2[:PROBE_ROWS]])
    k = rows.shape[0]
    out = jnp.asarray(apply_fn(params, rows))
    if out.ndim == 0 or out.shape[0] != k:
        got = "a scalar (one number for the whole batch?)" if out.ndim == 0 else (
            f"shape {tuple(out.shape)} (an example dropped or added, or outputs of shape (O, n) "
            "instead of (n, O)?)")
        raise ValueError(f"{where}: expected apply_fn(params, x) to return one output per example, "
                         f"shape (n, ...) with n = {k} for {k} rows of x, got {got}")
    batch = out.reshape(k, -1)
    if batch.shape[1] == 0:
        raise ValueError(f"{where}: expected at least one output per example, got shape "
                         f"{tuple(out.shape)}")
    single = [jnp.asarray(apply_fn(params, rows[i:i + 1])) for i in range(k)]
    if any(o.shape != (1,) + out.shape[1:] for o in single):
        shapes = sorted({tuple(o.shape) for o in single})
        raise ValueError(f"{where}: expected apply_fn(params, x) of one example to have shape "
                         f"(1,) + {tuple(out.shape[1:])} (that of a batch's row), got {shapes}")
    single = jnp.concatenate([o.reshape(1, -1) for o in single])
    with np.errstate(invalid="ignore", over="ignore"):
        a, b = np.asarray(batch, np.float64), np.asarray(single, np.float64)
        diff = float(np.max(np.abs(a - b)))
        scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))), np.finfo(np.float64).tiny)
    rtol = math.sqrt(float(jnp.finfo(out.dtype).eps))
    if not diff <= rtol * scale:  # NaN too
        raise ValueError(
            f"{where}: expected apply_fn to act on the examples independently (output row i a "
            f"function of x[i] alone: no batch statistics, no centring or mixing of rows), got "
            f"outputs of a batch of {k} that differ from those of the examples one at a time by "
            f"{diff:.3g} (max |output| {scale:.3g}, tolerance {rtol:.2g} relative); a model in "
            "training mode (batch norm), or outputs of shape (O, n) instead of (n, O)?")


def _cast(params, x1, x2):
    """x1, x2 and every parameter leaf as jax arrays of one dtype: jax's promotion of theirs
    (jax's default float if that is not floating). Call inside ``scoped_dtype``."""
    import jax
    import jax.numpy as jnp

    leaves = jax.tree_util.tree_leaves(params)
    dtype = jnp.result_type(*(dtype_of(a) for a in (x1, x2, *leaves) if a is not None))
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.zeros((), float).dtype
    params = jax.tree_util.tree_map(lambda leaf: as_jax(leaf, dtype), params)
    return as_jax(x1, dtype), None if x2 is None else as_jax(x2, dtype), params


def _n_out(apply_fn, params, x1) -> int:
    import jax

    return int(np.prod(jax.eval_shape(_per_example(apply_fn), params, x1[0]).shape))


def _ntk_vp(vp_jit, apply_fn, params, x1, x2, full_outputs, memory_budget, where):
    import jax
    import jax.numpy as jnp

    n_out = _n_out(apply_fn, params, x1)
    n_par = sum(int(np.prod(leaf.shape)) for leaf in jax.tree_util.tree_leaves(params))
    itemsize = x1.dtype.itemsize
    row_bytes = n_out * n_par * itemsize
    rows = int(memory_budget // (2 * row_bytes))
    if rows < 1:
        raise ValueError(
            f"{where}: one example's Jacobian ({n_out} outputs x {n_par} parameters x "
            f"{itemsize} bytes = {row_bytes} bytes) does not fit "
            f"memory_budget = {memory_budget} bytes (twice that is needed); raise memory_budget")
    blocks = [vp_jit(params, x1, x2[s:s + rows], full_outputs) for s in range(0, x2.shape[0], rows)]
    return jnp.concatenate(blocks, axis=1)


@functools.lru_cache(maxsize=16)
def _cached_ntk_fn(apply_fn, method, full_outputs, memory_budget):
    """One ``empirical_ntk_fn`` (and its compiled functions) per stax net and setting."""
    return empirical_ntk_fn(apply_fn, method=method, full_outputs=full_outputs,
                            memory_budget=memory_budget)


@dataclasses.dataclass(frozen=True)
class StaxNet:
    """A neural-tangents stax network with ntkcond's empirical and infinite kernels.

    Build with ``from_stax``. Kernels feed ``ntkcond.conditioning`` and friends.

    Attributes:
      init_fn, apply_fn, kernel_fn: as returned by ``neural_tangents.stax.serial(...)``.
      method, memory_budget: of the generic empirical path (``empirical_ntk_fn``).
    """

    init_fn: object
    apply_fn: object
    kernel_fn: object
    method: str = "jacobian"
    memory_budget: int = 1 << 30

    def init(self, key, input_shape, dtype=None):
        """Parameters from ``init_fn(key, input_shape)``, e.g. input_shape (-1, 28, 28, 1).

        ``dtype``: None (stax's default, float64 only under x64) or a real floating dtype;
        ``numpy.float64`` gives float64 parameters with or without jax's x64 mode.
        """
        import jax
        import jax.numpy as jnp

        if dtype is None:
            return self.init_fn(key, tuple(input_shape))[1]
        dtype = float_dtype(dtype, "StaxNet.init")
        with x64() if dtype == np.float64 else contextlib.nullcontext():
            params = self.init_fn(key, tuple(input_shape))[1]
            return jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf, dtype), params)

    def empirical_ntk(self, params, x1, x2=None, *, full_outputs=False):
        """Empirical NTK via ``empirical_ntk_fn``: (n1, n2), the mean over outputs (dtype and
        errors as there)."""
        fn = _cached_ntk_fn(self.apply_fn, self.method, bool(full_outputs), self.memory_budget)
        return fn(params, x1, x2)

    def infinite_ntk(self, x1, x2=None):
        """``kernel_fn(x1, x2, 'ntk')`` as an (n1, n2) numpy array, in float64 whenever x1 or
        x2 is float64 (with or without jax's x64 mode)."""
        return self._infinite(x1, x2, "ntk")

    def infinite_nngp(self, x1, x2=None):
        """``kernel_fn(x1, x2, 'nngp')`` as an (n1, n2) numpy array (dtype as ``infinite_ntk``)."""
        return self._infinite(x1, x2, "nngp")

    def _infinite(self, x1, x2, get):
        where = f"StaxNet.infinite_{get}"
        for name, x in (("x1", x1), ("x2", x2)):
            if x is not None:
                check_real(x, where, name)
                check_finite(x, where, name)
        with scoped_dtype(x1, x2):
            K = np.asarray(self.kernel_fn(x1, x2, get))
        check_kernel(K, where, K.dtype, (x1, x2), " (or kernel_fn itself returns NaN/Inf)")
        return K


def from_stax(init_fn, apply_fn, kernel_fn, *, method="jacobian", memory_budget=1 << 30) -> StaxNet:
    """Wrap ``neural_tangents.stax.serial(...)``'s (init_fn, apply_fn, kernel_fn).

    Needs the ``nt`` extra (neural-tangents) to build the stax functions; ntkcond itself never
    imports neural_tangents here. Any stax architecture (dense, convolutional, ...) gets the
    empirical kernel through the generic path and the infinite kernel from ``kernel_fn``.

    Example:
      >>> from neural_tangents import stax
      >>> net = ntkcond.from_stax(*stax.serial(stax.Conv(64, (3, 3)), stax.Relu(),
      ...                                      stax.Flatten(), stax.Dense(1)))
      >>> K = net.empirical_ntk(net.init(key, x.shape), x); K_inf = net.infinite_ntk(x)
    """
    for name, fn in (("init_fn", init_fn), ("apply_fn", apply_fn), ("kernel_fn", kernel_fn)):
        if not callable(fn):
            raise TypeError(f"from_stax: expected a callable {name}, got {type(fn).__name__}")
    if method not in _METHODS:
        raise ValueError(f"from_stax: expected method in {_METHODS}, got {method!r}")
    return StaxNet(init_fn, apply_fn, kernel_fn, method, _as_budget(memory_budget, "from_stax"))
