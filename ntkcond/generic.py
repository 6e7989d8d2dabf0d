"""Empirical NTKs of any JAX model, and neural-tangents stax networks.

For a model f(params, x) with per-example output of size O and Jacobian J(x) = ∂f(x)/∂params
(O × P), the empirical NTK is

    Θ(x, x')_{ab} = Σ_p J(x)_{ap} J(x')_{bp}            (n₁, n₂, O, O), "full"           (1)
    Θ(x, x')      = (1/O) Σ_a Θ(x, x')_{aa}              (n₁, n₂), the normalised trace   (2)

(eq. (2) is neural-tangents' ``trace_axes=(-1,)`` convention: the mean over outputs, so it
tends to the single-output ``kernel_fn(..., 'ntk')`` at infinite width.)

Two methods, both for models that act on examples independently (neural-tangents'
``vmap_axes=0``):
  "jacobian"  per-example Jacobians (``vmap(jacrev)``) of row chunks, contracted, eq. (1);
  "ntk_vp"    NTK-vector products: per-example gradients of x₂ rows as tangents,
              pushed through f(·, x₁) with ``jvp``: Θ[:, j, :, b] = J₁ J₂[j, b]ᵀ.
Rows are processed in chunks so that the Jacobian (or tangent) storage stays within
``memory_budget`` bytes; a budget below one example's O·P values raises ``ValueError``
before anything is allocated. Cost is O(n₁n₂·O·P) either way: for ``ntkcond.mlp`` nets
the structured ``ntkcond.empirical_ntk`` is far faster.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

__all__ = ["empirical_ntk_fn", "StaxNet", "from_stax"]

_METHODS = ("jacobian", "ntk_vp")


def _per_example(apply_fn):
    """x ↦ f(params, x[None]) flattened to (O,)."""
    return lambda params, xi: apply_fn(params, xi[None]).reshape(-1)


def _jacobian_rows(apply_fn, params, xs):
    """Per-example Jacobians of the rows of xs: a list of (c, O, P_leaf) arrays, one per leaf.

    Leaves are kept apart (no concatenation): the Jacobian is memory-bound to write, and a
    concatenated copy would double that traffic.
    """
    import jax

    jac = jax.vmap(jax.jacrev(_per_example(apply_fn)), (None, 0))(params, xs)
    leaves = jax.tree_util.tree_leaves(jac)
    c, o = leaves[0].shape[:2]
    return [leaf.reshape(c, o, -1) for leaf in leaves]


def _contract_jac(j1, j2, full: bool):
    """Σ over leaves of J₁ J₂ᵀ: (c1, c2, O, O) if full, else the mean over outputs (c1, c2)."""
    import jax
    import jax.numpy as jnp

    hi = jax.lax.Precision.HIGHEST
    spec = "iap,jbp->ijab" if full else "iap,jap->ij"
    total = functools.reduce(jnp.add, [jnp.einsum(spec, a, b, precision=hi) for a, b in zip(j1, j2)])
    return total if full else total / j1[0].shape[1]


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


def empirical_ntk_fn(apply_fn, *, method="ntk_vp", full_outputs=False, memory_budget=1 << 30):
    """The empirical NTK of any ``apply_fn(params, x)``, eqs. (1)–(2).

    Args:
      apply_fn: f(params, x) with x of shape (n, ...) and output (n,) or (n, ...); must act
        on examples independently (no batch statistics).
      method: "ntk_vp" (default: jvp of per-example gradients; writes each Jacobian row
        once) or "jacobian" (contract per-example Jacobians; recomputes row chunks when
        the Jacobian exceeds the budget). Both are O(n₁n₂·O·P); on CPU, writing Jacobians is
        memory-bound and "ntk_vp" was 1.1–4x faster in ``benchmarks/bench_empirical_ntk.py``.
      full_outputs: False → (n1, n2), the mean over outputs, eq. (2); True → (n1, n2, O, O).
      memory_budget: bytes for Jacobian/tangent storage (forward-pass activations come on top).

    Returns:
      ``ntk(params, x1, x2=None)`` → jax array in the dtype of params and x1.

    Raises (from ``ntk``):
      ValueError: x1, x2 of different example shapes, or one example's Jacobian
        (O·P values) exceeds ``memory_budget``.
    """
    if method not in _METHODS:
        raise ValueError(f"empirical_ntk_fn: expected method in {_METHODS}, got {method!r}")
    if not callable(apply_fn):
        raise TypeError(f"empirical_ntk_fn: expected a callable apply_fn, got {type(apply_fn).__name__}")
    if not (isinstance(memory_budget, (int, float)) and memory_budget > 0):
        raise ValueError(f"empirical_ntk_fn: expected memory_budget > 0 bytes, got {memory_budget!r}")
    import jax

    jac_jit = jax.jit(lambda p, xs: _jacobian_rows(apply_fn, p, xs))
    contract_jit = jax.jit(_contract_jac, static_argnames="full")
    vp_jit = jax.jit(lambda p, x1, xs2, full: _ntk_vp_block(apply_fn, p, x1, xs2, full),
                     static_argnames="full")

    def ntk(params, x1, x2=None):
        import jax.numpy as jnp

        where = "empirical_ntk_fn"
        same = x2 is None
        x1 = jnp.asarray(x1)
        x2 = x1 if same else jnp.asarray(x2)
        if x1.ndim < 1 or x2.ndim < 1 or x1.shape[1:] != x2.shape[1:]:
            raise ValueError(f"{where}: expected x1 and x2 of shapes (n1, ...), (n2, ...) with the "
                             f"same example shape, got {tuple(x1.shape)} and {tuple(x2.shape)}")
        leaves = jax.tree_util.tree_leaves(params)
        dtype = jnp.result_type(x1, *leaves)
        x1, x2 = x1.astype(dtype), x2.astype(dtype)
        out = jax.eval_shape(_per_example(apply_fn), params, x1[0])
        n_out = int(np.prod(out.shape))
        n_par = sum(int(np.prod(leaf.shape)) for leaf in leaves)
        row_bytes = n_out * n_par * jnp.dtype(dtype).itemsize
        rows = int(memory_budget // (2 * row_bytes))
        if rows < 1:
            raise ValueError(
                f"{where}: one example's Jacobian ({n_out} outputs x {n_par} parameters x "
                f"{jnp.dtype(dtype).itemsize} bytes = {row_bytes} bytes) does not fit "
                f"memory_budget = {memory_budget} bytes (twice that is needed); raise memory_budget")
        n1, n2 = x1.shape[0], x2.shape[0]
        if method == "ntk_vp":
            blocks = [vp_jit(params, x1, x2[s:s + rows], full_outputs) for s in range(0, n2, rows)]
            return jnp.concatenate(blocks, axis=1)
        if n1 + (0 if same else n2) <= 2 * rows:  # everything fits at once
            j1 = jac_jit(params, x1)
            return contract_jit(j1, j1 if same else jac_jit(params, x2), full=full_outputs)
        return _chunked(jac_jit, contract_jit, params, x1, x2, same, rows, full_outputs, n_out)

    return ntk


def _chunked(jac_jit, contract_jit, params, x1, x2, same, rows, full, n_out):
    """Block (i, j) of eq. (1) from Jacobians of ``rows`` rows each; symmetric fill if same."""
    import jax.numpy as jnp

    n1, n2 = x1.shape[0], x2.shape[0]
    shape = (n1, n2) + ((n_out, n_out) if full else ())
    out = np.zeros(shape, dtype=x1.dtype)
    for s2 in range(0, n2, rows):
        j2 = jac_jit(params, x2[s2:s2 + rows])
        for s1 in range(0, s2 + rows if same else n1, rows):
            j1 = j2 if same and s1 == s2 else jac_jit(params, x1[s1:s1 + rows])
            block = np.asarray(contract_jit(j1, j2, full=full))
            out[s1:s1 + rows, s2:s2 + rows] = block
            if same and s1 != s2:
                out[s2:s2 + rows, s1:s1 + rows] = np.swapaxes(block, 0, 1) if not full else \
                    np.transpose(block, (1, 0, 3, 2))
    return jnp.asarray(out)


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
    method: str = "ntk_vp"
    memory_budget: int = 1 << 30

    def init(self, key, input_shape):
        """Parameters from ``init_fn(key, input_shape)``, e.g. input_shape (-1, 28, 28, 1)."""
        return self.init_fn(key, tuple(input_shape))[1]

    def empirical_ntk(self, params, x1, x2=None, *, full_outputs=False):
        """Empirical NTK via ``empirical_ntk_fn``: (n1, n2), the mean over outputs."""
        fn = _cached_ntk_fn(self.apply_fn, self.method, bool(full_outputs), self.memory_budget)
        return fn(params, x1, x2)

    def infinite_ntk(self, x1, x2=None):
        """``kernel_fn(x1, x2, 'ntk')`` as an (n1, n2) numpy array (float64 under x64)."""
        return np.asarray(self.kernel_fn(x1, x2, "ntk"))

    def infinite_nngp(self, x1, x2=None):
        """``kernel_fn(x1, x2, 'nngp')`` as an (n1, n2) numpy array."""
        return np.asarray(self.kernel_fn(x1, x2, "nngp"))


def from_stax(init_fn, apply_fn, kernel_fn, *, method="ntk_vp", memory_budget=1 << 30) -> StaxNet:
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
    return StaxNet(init_fn, apply_fn, kernel_fn, method, memory_budget)
