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
