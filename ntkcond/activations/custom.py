"""A user's elementwise activation f, as ``CallableActivation``: derivatives by ``jax.grad``,
kernels by Mehler's series or the trapezoid (``ntkcond.activations.base``).

``check_callable`` checks it once, at the public boundary (``parse_activation``): f maps
arrays to arrays of the same shape, acts elementwise (f of a vector equals f of each entry,
also on a vector in no particular order and on a matrix), is not identically zero, and is
finite with finite first and second derivatives on [−30, 30].
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import numpy as np

from .base import ActivationFunction

__all__ = ["CallableActivation", "check_callable"]


@dataclasses.dataclass(frozen=True, eq=False)
class CallableActivation(ActivationFunction):
    """A user's elementwise activation f (jax-traceable), derivatives by ``jax.grad``.

    Build it with ``parse_activation(f)`` (which checks f); kernels by Mehler's series or the
    trapezoid (``ntkcond.activations.mehler``, ``ntkcond.activations.trapezoid``).

    Attributes:
      fn: the function; label: for records (default ``fn.__name__``).
    """

    fn: Callable
    label: str = "callable"

    @property
    def name(self) -> str:
        return self.label

    @property
    def jax_fn(self) -> Callable:
        return self.fn

    @functools.cached_property
    def _jitted(self):
        import jax

        fn = self.fn
        fs = [lambda t: fn(t.reshape(1)).reshape(-1)[0]]  # scalar in, scalar out
        for _ in range(2):
            fs.append(jax.grad(fs[-1]))
        return [jax.jit(jax.vmap(f)) for f in fs]

    def _numpy(self, order, z):
        import jax.numpy as jnp

        from .._core.x64 import x64

        z = np.asarray(z, dtype=np.float64)
        with x64():
            out = self._jitted[order](jnp.asarray(z.ravel(), jnp.float64))
            return np.asarray(out, dtype=np.float64).reshape(z.shape)

    def numpy(self, z):
        return self._numpy(0, z)

    def derivative(self, z):
        return self._numpy(1, z)

    def second_derivative(self, z):
        return self._numpy(2, z)

    def __repr__(self) -> str:
        return f"CallableActivation({self.label!r})"


def check_callable(fn, name: str, where: str = "parse_activation") -> None:
    """ValueError naming ``where`` unless ``fn`` is elementwise, shape-preserving, not
    identically zero, and finite with two finite derivatives on [−30, 30] (module docstring).
    """
    import jax
    import jax.numpy as jnp

    from .._core.x64 import x64

    grid = np.linspace(-30.0, 30.0, 241)
    order = np.random.default_rng(0).permutation(grid.size)  # a vector in no order

    def call(what, g):
        try:
            with x64():
                return np.asarray(g(), dtype=np.float64)
        except Exception as err:  # jax tracing errors of non-scalar or non-traceable functions
            raise ValueError(
                f"{where}: the callable {name!r} must be an elementwise jax-traceable function "
                f"of arrays; {what} failed with {type(err).__name__}: {' '.join(str(err).split())[:200]}"
            ) from None

    def zs_():
        return jnp.asarray(grid, jnp.float64)

    whole = call("f(z)", lambda: fn(zs_()))
    if whole.shape != grid.shape:
        raise ValueError(f"{where}: the callable {name!r} must keep the shape of its input; "
                         f"f of shape {grid.shape} gave shape {whole.shape}")
    each = call("f(z[i:i+1])", lambda: jax.vmap(lambda t: fn(t.reshape(1)).reshape(-1)[0])(zs_()))
    shuffled = call("f(z[perm])", lambda: fn(zs_()[order]))
    mat = call("f(z[:, None] * ones(3))", lambda: fn(zs_().reshape(-1, 1) * jnp.ones((1, 3))))
    scale = np.maximum(np.abs(np.nan_to_num(each)), 1.0)
    with np.errstate(invalid="ignore"):
        mismatch = (shuffled.shape != grid.shape or mat.shape != (grid.size, 3)
                    or not np.all(np.abs(each - whole) <= 1e-12 * scale)
                    or not np.all(np.abs(shuffled - each[order]) <= 1e-12 * scale[order])
                    or not np.all(np.abs(mat - each[:, None]) <= 1e-12 * scale[:, None]))
    if mismatch and np.all(np.isfinite(each)):
        raise ValueError(
            f"{where}: the callable {name!r} is not elementwise: f of a vector differs from f "
            "of its entries (on a sorted, a shuffled or a 2-D grid of [-30, 30])")
    d1 = call("its derivative", lambda: jax.vmap(jax.grad(lambda t: fn(t.reshape(1))[0]))(zs_()))
    d2 = call("its second derivative",
              lambda: jax.vmap(jax.grad(jax.grad(lambda t: fn(t.reshape(1))[0])))(zs_()))
    for label, arr in (("values", each), ("first derivative", d1), ("second derivative", d2)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{where}: the callable {name!r} gives non-finite {label} on "
                             "[-30, 30]")
    if not np.any(each) and not np.any(d1):
        raise ValueError(f"{where}: the callable {name!r} is identically zero on [-30, 30]: its "
                         "kernels are 0 and every angle after it is undefined")
