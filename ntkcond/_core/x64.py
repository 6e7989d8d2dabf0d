"""JAX helpers shared by the modules that use JAX (imported lazily; jax is optional at import)."""
from __future__ import annotations

import contextlib

import numpy as np


@contextlib.contextmanager
def x64(enabled: bool = True):
    """Scoped float64 in JAX: ``jax.enable_x64`` (newest jax) or ``jax.experimental`` (jax ≤ 0.6).

    JAX's global configuration is left as it was when the block ends.
    """
    import jax

    state = getattr(jax, "enable_x64", None)
    if state is not None:
        with state(enabled):
            yield
        return
    from jax import experimental

    with (experimental.enable_x64() if enabled else experimental.disable_x64()):
        yield


def dtype_of(a) -> np.dtype:
    """The dtype ``a`` has (arrays) or gets from ``numpy.asarray`` (lists, scalars)."""
    dt = getattr(a, "dtype", None)
    return np.dtype(dt) if dt is not None else np.asarray(a).dtype


def float64_requested(*arrays) -> bool:
    """True if any argument is float64 (None is skipped): with JAX's default x64 off, jax
    would silently compute it in float32."""
    return any(dtype_of(a) == np.float64 for a in arrays if a is not None)


def scoped_dtype(*arrays):
    """``x64()`` when ``float64_requested(*arrays)``, else a no-op context: computations in
    the block keep a user's float64 argument in float64, whatever JAX's global x64 setting is
    (which is left as it was)."""
    return x64() if float64_requested(*arrays) else contextlib.nullcontext()


def as_jax(a, dtype):
    """``a`` as a jax array of ``dtype``; NumPy arrays and lists are cast by NumPy first (no
    detour through jax's default int32/float32). Call inside ``scoped_dtype`` for float64."""
    import jax
    import jax.numpy as jnp

    if not isinstance(a, jax.Array):
        a = np.asarray(a, dtype=dtype)
    return jnp.asarray(a, dtype)


def on_cpu(*arrays) -> bool:
    """True if every array lives on the CPU (NumPy arrays do): then GEMM-heavy kernels run
    in NumPy's BLAS, zero-copy views of the jax arrays.

    Measured by ``benchmarks/bench_empirical_ntk.py`` on the 2-core CPU: XLA's float64 GEMM
    40 GFLOP/s against OpenBLAS's 110 (float32 about equal), and NumPy turns ``A @ A.T`` of
    one buffer into a symmetric rank-k update (half the FLOPs). On accelerators the jax
    path stays, at ``Precision.HIGHEST``.
    """
    for a in arrays:
        devices = getattr(a, "devices", None)
        if devices is not None and any(dev.platform != "cpu" for dev in devices()):
            return False
    return True
