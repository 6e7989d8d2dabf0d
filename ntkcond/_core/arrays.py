"""Checks of the array arguments of the JAX kernels (finite-width NTKs): a real dtype, finite
values (naming the row or parameter leaf that is not), a kernel that did not overflow, and
whether a float64 argument asks for float64 computation (``float64_requested``).

Every check raises ``TypeError``/``ValueError`` whose message names the calling function
(``where``), what was expected and what was got. jax is imported lazily.
"""
from __future__ import annotations

import numpy as np

from .x64 import dtype_of, scoped_dtype


def check_real(a, where: str, name: str) -> None:
    """TypeError unless ``a`` has a real (floating or integer) dtype."""
    import jax.numpy as jnp

    try:
        dt = dtype_of(a)
    except (TypeError, ValueError):  # e.g. a ragged nested list
        raise TypeError(f"{where}: expected {name} as an array, got {type(a).__name__} that "
                        "numpy cannot turn into one") from None
    if jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f"{where}: expected real {name}, got complex dtype {dt} (the imaginary "
                        "part would be dropped); pass its real part, or real and imaginary parts "
                        "as separate features")
    if dt == np.bool_ or not (jnp.issubdtype(dt, jnp.floating) or jnp.issubdtype(dt, jnp.integer)):
        raise TypeError(f"{where}: expected {name} with a real floating or integer dtype, got {dt}")


def check_finite(a, where: str, name: str, *, rows: bool = True) -> None:
    """ValueError naming the first NaN/Inf entry of ``a``: its row (``rows``, for inputs) or
    its index (for a parameter leaf)."""
    if _all_finite(a):
        return
    finite = np.isfinite(np.asarray(a))
    index = tuple(int(i) for i in np.argwhere(~np.asarray(finite))[0])
    kind = "NaN" if np.isnan(np.asarray(a)[index]) else "Inf"
    at = f"row {index[0]} (at {name}[{', '.join(map(str, index))}])" if rows and index else f"entry {index}"
    raise ValueError(f"{where}: expected finite {name}, got {kind} {'in' if rows and index else 'at'} {at}")


def check_inputs(where: str, **inputs) -> None:
    """``check_real`` and ``check_finite`` (by rows) of each named input that is not None."""
    for name, a in inputs.items():
        if a is not None:
            check_real(a, where, name)
            check_finite(a, where, name)


def check_param_leaves(params, where: str, name: str = "params") -> None:
    """``check_real`` and ``check_finite`` of every leaf of a parameter pytree, each named by
    its path, e.g. ``params[1]`` or ``params[0]['w']``."""
    import jax

    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        label = f"{name}{jax.tree_util.keystr(path)}"
        check_real(leaf, where, label)
        check_finite(leaf, where, label, rows=False)


def check_kernel(K, where: str, dtype, inputs, source: str = "") -> None:
    """``overflow_error`` if a kernel computed from finite ``inputs`` holds NaN/Inf."""
    if not _all_finite(K):
        raise overflow_error(where, dtype, inputs, source)


def _all_finite(a) -> bool:
    """Whether every entry is finite: on the device for jax arrays (in their own dtype, so
    a float64 array is not cast to float32 with x64 off), else in NumPy. Traced values (the
    caller runs under ``jax.jit``/``vmap``) have no values to check: True."""
    import jax

    if isinstance(a, jax.core.Tracer):
        return True
    if isinstance(a, jax.Array):
        import jax.numpy as jnp

        with scoped_dtype(a), jax.ensure_compile_time_eval():  # eager even under a jit trace
            return bool(jnp.all(jnp.isfinite(a)))
    return bool(np.all(np.isfinite(np.asarray(a))))


def overflow_error(where: str, dtype, inputs, source: str = "") -> ValueError:
    """The ValueError for a kernel that overflowed ``dtype`` although its ``inputs`` (x1, x2;
    None skipped) and params are finite; ``source`` is appended to the message."""
    dtype = np.dtype(dtype)
    fix = ("pass float64 inputs and params, or rescale x" if dtype != np.float64
           else "rescale x (e.g. to unit-norm rows) or the params")
    return ValueError(f"{where}: expected a finite kernel, got NaN/Inf although the inputs and "
                      f"params are finite (largest |x| = {_largest_abs(inputs):.3g}): overflow in "
                      f"{dtype}; {fix}{source}")


def _largest_abs(arrays) -> float:
    """max |entry| over the arrays that are not None (for error messages)."""
    return max(float(np.max(np.abs(np.asarray(a, dtype=np.float64)))) for a in arrays if a is not None)


def float_dtype(dtype, where: str):
    """``dtype`` (a numpy/jax dtype or its name) as a jax floating dtype; TypeError otherwise."""
    import jax.numpy as jnp

    try:
        dt = jnp.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"{where}: expected dtype as a real floating dtype (e.g. numpy.float64) "
                        f"or None, got {dtype!r}")
    return dt
