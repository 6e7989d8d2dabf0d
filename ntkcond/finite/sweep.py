"""Many exact empirical NTKs of one batch at the cost of their GEMMs (the Figure-2 sweep).

The depth sweep of ``ntkcond.runs.depth`` computes, for each activation, seed and depth L, the
NTK of an independent net ``ntkcond.mlp(L, m, σ)`` with weights ``MLP.init(PRNGKey(seed), d,
float64)`` on the same batch x (n × d), eq. (1) of ``ntkcond.finite.empirical``:

    Θ = Σ_{i∈S} (sᵢAⁱ)(sᵢAⁱ)ᵀ ⊙ (B^{i+1} B^{i+1 ᵀ}).

Its FLOP floor per net (S = all layers, m = width): forward 2ndm + 2nm²(L−1), backward
2nm²(L−1), Grams 2Ln²m as symmetric rank-k updates, and the input Gram n²d once per batch.
``empirical_ntk`` spends more than that in a sweep; here:

* ``NetWeights``: the weights of a (seed, depth) net are drawn once and serve every activation
  and batch (the weights do not depend on σ). Drawing them is not cheap: jax's threefry +
  erfinv normals in float64 on the CPU take 30–90 ns each, 15.8 M numbers for depths 0–10 at
  d = 784, m = 512, about a third of those kernels' GEMM time when redrawn per kernel.
* ``BatchNTK``: the input Gram (s₀x)(s₀x)ᵀ is computed once per batch and factor s₀ (two per
  activation: depth 0 and depth ≥ 1), not once per net; σ, sᵢ and σ' are applied in place
  (one pass each, no temporaries), the n × n Hadamard products and their sum in place; the
  weights it is given are not re-validated per kernel.

``BatchNTK.kernel`` calls the NumPy route of ``empirical_ntk``
(``ntkcond.finite.empirical.numpy_self_ntk``) with the shared input Gram, so the kernels agree
bitwise with ``empirical_ntk`` on the CPU (tested).
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .._core.arrays import check_finite, check_kernel
from .._core.checks import resolve_trainable
from .._core.memory import available_memory
from .._core.x64 import on_cpu, x64
from .empirical import IDENTICAL_ROWS, numpy_self_ntk
from .models import MLP, check_params

__all__ = ["NetWeights", "BatchNTK", "IDENTICAL_ROWS"]


class NetWeights:
    """float64 weights of ``ntkcond.mlp`` nets, drawn once per (seed, d, widths).

    ``get(net, seed, d)`` returns ``net.init(jax.random.PRNGKey(seed), d, dtype=float64)`` as
    NumPy arrays (zero-copy views of jax's CPU buffers), the same for every activation. Stored
    weights stay until the store is dropped; once ``max_bytes`` is reached new weights are
    handed out without being stored (a sweep visits its nets cyclically, where keeping the
    first ones beats evicting the oldest). Thread-safe.

    Args:
      max_bytes: bytes of weights kept (default: a quarter of the available memory; the
        Figure-2 sweep, 5 seeds × depths 0–10 at d = 784, m = 512, keeps 632 MB).
    """

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = available_memory() // 4 if max_bytes is None else int(max_bytes)
        self.nbytes = 0
        self.draws = 0
        self.hits = 0
        self._store: dict = {}
        self._lock = threading.Lock()

    def get(self, net: MLP, seed: int, d: int):
        """(params, seconds): the weights of ``net`` for ``seed`` and input dimension d, and
        the seconds spent drawing them now (0.0 when stored)."""
        import jax
        import jax.numpy as jnp

        if not isinstance(net, MLP):
            raise TypeError(f"NetWeights.get: expected net from ntkcond.mlp(...), got {type(net).__name__}")
        key = (int(seed), int(d), tuple(net.widths))
        with self._lock:
            params = self._store.get(key)
            if params is not None:
                self.hits += 1
                return params, 0.0
        start = time.perf_counter()
        with x64():  # scoped: float64 weights without touching jax's global setting
            drawn = net.init(jax.random.PRNGKey(int(seed)), int(d), dtype=jnp.float64)
            params = [np.asarray(w) if on_cpu(w) else w for w in drawn]
        seconds = time.perf_counter() - start
        size = sum(int(np.prod(np.shape(w))) * 8 for w in params)
        with self._lock:
            self.draws += 1
            if key not in self._store and self.nbytes + size <= self.max_bytes:
                self._store[key] = params
                self.nbytes += size
        return params, seconds


class BatchNTK:
    """Exact empirical NTKs of ``ntkcond.mlp`` nets on one float64 batch, in NumPy's BLAS.

    Args:
      x: (n, d) finite inputs (converted to a C-contiguous float64 array once).

    ``kernel(net, params, trainable)`` is ``empirical_ntk(net, params, x, trainable=...)``
    bitwise, for float64 NumPy weights (as ``NetWeights`` gives on the CPU). Thread-safe: the
    shared input Grams are computed once under a lock; kernels run concurrently.
    """

    def __init__(self, x):
        where = "BatchNTK"
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(f"{where}: expected x of shape (n, d) with n, d >= 1, got shape {x.shape}")
        check_finite(x, where, "x")
        self.x = x
        self._inputs: dict = {}
        self._verdicts: dict = {}
        self._lock = threading.Lock()

    def input_gram(self, s0: float):
        """(s₀x, (s₀x)(s₀x)ᵀ): the scaled inputs and their Gram (n × n, symmetric rank-k)."""
        with self._lock:
            item = self._inputs.get(s0)
            if item is None:
                a0 = s0 * self.x
                item = self._inputs[s0] = (a0, a0 @ a0.T)
            return item

    def kernel(self, net: MLP, params, trainable="all", *, where: str = "BatchNTK.kernel") -> np.ndarray:
        """Θ(x, x) of eq. (1), (n, n) float64, for float64 NumPy ``params`` of ``net``.

        The one check of the kernel itself is for NaN/Inf (``check_kernel``); it is exactly
        symmetric by construction (each Gram one ``A @ A.T``: BLAS's symmetric rank-k update,
        its triangle mirrored; the terms combined entrywise), so callers that read its
        spectrum need not test or symmetrise it (``ntkcond.spectrum.scale_trusted``).
        Messages name ``where`` (a caller passes the public function called).

        Raises:
          ValueError: params of the wrong shapes, or weights that are not float64 NumPy
            arrays; a kernel that overflows float64.
        """
        check_params(net, params, self.x.shape, where)
        if not all(isinstance(w, np.ndarray) and w.dtype == np.float64 for w in params):
            raise ValueError(f"{where}: expected float64 NumPy weights, got "
                             f"{[getattr(w, 'dtype', type(w).__name__) for w in params]}")
        layers = resolve_trainable(trainable, net.depth, where)
        scales = net.scales(self.x.shape[1])
        K = self._kernel(self.input_gram(scales[0]), params, scales, net.activation.slope, layers)
        check_kernel(K, where, np.float64, (self.x,))
        return K

    def _kernel(self, inputs0, params, scales, slope: float, layers):
        """``ntkcond.finite.empirical.numpy_self_ntk`` (the NumPy route of ``empirical_ntk``)
        with the shared input Gram and the linear nets' identical-rows shortcut."""
        a0, gram0 = inputs0
        return numpy_self_ntk(a0, gram0, params, scales, slope, layers, self._same_bits)

    def _same_bits(self, key, block, op, n: int) -> bool:
        """Whether ``op`` (a BLAS call) on the identical rows ``block`` gives, bit for bit, every
        entry that it gives on n copies of that row: computed both ways the first time ``key``
        (the shape) occurs, remembered after."""
        with self._lock:
            known = self._verdicts.get(key)
        if known is not None:
            return known
        full = np.empty((n, block.shape[1]))
        full[:] = block[0]
        few, many = op(block), op(full)
        if key[0] == "gram":  # every entry of the n × n Gram equals the one value
            ok = bool(np.all(few == few[0, 0]) and np.all(many == few[0, 0]))
        else:  # every row of the n-row product equals the (identical) rows of the few
            ok = bool(np.all(few == few[0]) and np.all(many == few[0]))
        with self._lock:
            self._verdicts[key] = ok
        return ok


