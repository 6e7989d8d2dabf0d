"""JAX helpers shared by the modules that use JAX (imported lazily; jax is optional at import)."""
from __future__ import annotations

import contextlib


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
