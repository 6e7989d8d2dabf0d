"""Full-batch gradient descent of a finite net to a relative loss target: ``train_to_loss``,
the measured side of ``runs.train_vs_depth`` (whose docstring has the experiment).

The loss is eq. (1) of ``runs.train_vs_depth``, L(θ) = ½ ‖f_θ(X) − y‖², a sum over the points.
Training runs in float64 (scoped ``x64``) as one jitted ``jax.lax.scan`` per ``CHUNK`` steps,
with the loss kept at every step, so the step that first meets the target is exact; the loop
ends with the chunk that meets it. For a linear net the output (Π sₗ)·x W¹W²⋯W^{L+1} is
evaluated right to left, matrix–vector products only (O(L m²) a step, not O(n L m²)): the same
function of the same weights, so the same iterates up to rounding (tested against
``MLP.apply``).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np

from .._core.checks import as_int, positive
from .._core.x64 import x64

__all__ = ["CHUNK", "GDRun", "train_to_loss"]

#: Gradient steps per jitted ``lax.scan`` call; the run stops at the end of the chunk that
#: reaches the target.
CHUNK = 100


@dataclasses.dataclass(frozen=True)
class GDRun:
    """Result of ``train_to_loss``.

    Attributes:
      steps: first t with loss_t ≤ rel_target·loss_0, or None (not within ``max_steps``).
      losses: (T + 1,) float64 loss_t, eq. (1), for t = 0 … T (T = steps, or max_steps).
      steps_run: gradient steps computed (T up to the end of its chunk, ≥ T).
      params: float64 weights after ``steps_run`` steps (NumPy arrays, the pytree of the
        params given).
      diverged: the loss became NaN or ∞ (training stopped there; steps None).
      seconds: wall time of the training loop, compilation included.
    """

    steps: int | None
    losses: np.ndarray
    steps_run: int
    params: list
    diverged: bool
    seconds: float


def _linear_apply(net, d: int):
    """f(x) of a linear ``net`` as (Π sₗ)·x (W¹(W²(⋯ w^{L+1}))): matrix–vector products only."""
    import jax
    import jax.numpy as jnp

    scale = math.prod(net.scales(d))
    hi = jax.lax.Precision.HIGHEST

    def apply(params, x):
        v = params[-1][:, 0]
        for w in reversed(params[:-1]):
            v = jnp.matmul(w, v, precision=hi)
        return scale * jnp.matmul(x, v, precision=hi)

    return apply


@functools.lru_cache(maxsize=64)
def _runner(net, d: int, length: int, collapsed: bool):
    """Jitted: ``length`` GD steps on eq. (1); returns (params, loss before each step, loss after)."""
    import jax
    import jax.numpy as jnp

    apply = _linear_apply(net, d) if collapsed else net.apply

    def loss(params, x, y):
        r = jnp.reshape(apply(params, x), (-1,)) - y  # (n,) or (n, 1) outputs
        return 0.5 * jnp.sum(r * r)

    grad = jax.value_and_grad(loss)

    def run(params, x, y, lr):
        def step(ps, _):
            value, g = grad(ps, x, y)
            return jax.tree_util.tree_map(lambda w, gw: w - lr * gw, ps, g), value

        params, values = jax.lax.scan(step, params, None, length=length)
        return params, values, loss(params, x, y)

    return jax.jit(run)


def train_to_loss(net, params, x, y, *, lr: float, rel_target: float, max_steps: int,
                  chunk: int = CHUNK, collapsed_linear: bool = True) -> GDRun:
    """Full-batch gradient descent θ ← θ − lr·∇L on L = ½‖net.apply(θ, x) − y‖², eq. (1), in
    float64, until L ≤ rel_target·L(θ₀) or ``max_steps`` steps.

    Args:
      net: an ``ntkcond.MLP`` (or ``GeneralMLP``), or the layer stack of a finite
        convolutional net (``ntkcond.network.CNNFamily.network``: ``apply`` on NHWC
        images, outputs (n, 1)); params: its weights (``net.init``; any pytree of arrays),
        cast to float64.
      x: (n, d) inputs, or (n, H, W, C) images for a convolutional net; y: (n,) targets.
      lr: η > 0 (in the inverse units of the NTK: η = 1/λmax(Θ₀) is the linearised optimum's
        scale); rel_target: ε > 0; max_steps: cap T_max ≥ 1.
      chunk: steps per jitted ``lax.scan``; the loop stops after the chunk that meets ε.
      collapsed_linear: evaluate a linear net right to left (module docstring); False uses
        ``net.apply`` (the reference the tests compare with).

    Returns:
      ``GDRun``.
    """
    import jax
    import jax.numpy as jnp

    from ..finite.models import MLP

    where = "train_to_loss"
    lr = positive(lr, "lr", where)
    rel_target = positive(rel_target, "rel_target", where)
    max_steps = as_int(max_steps, "max_steps", where, 1)
    chunk = as_int(chunk, "chunk", where, 1)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim < 2 or y.shape != (x.shape[0],):
        raise ValueError(f"{where}: expected x (n, d) or (n, H, W, C) and y (n,), got shapes "
                         f"{x.shape} and {y.shape}")
    start = time.perf_counter()
    collapsed = bool(collapsed_linear and isinstance(net, MLP) and net.activation.is_linear)
    losses, steps, end, t0 = [], None, None, 0  # losses: loss_0 … loss_t0
    with x64():
        ps = jax.tree_util.tree_map(lambda w: jnp.asarray(np.asarray(w, dtype=np.float64)),
                                    params)
        xj, yj, lrj = jnp.asarray(x), jnp.asarray(y), jnp.asarray(lr, jnp.float64)
        while t0 < max_steps and end is None:
            length = min(chunk, max_steps - t0)
            ps, values, last = _runner(net, x.shape[1], length, collapsed)(ps, xj, yj, lrj)
            values = np.append(np.asarray(values, np.float64), float(last))  # loss_t0 … loss_t0+length
            losses.extend(values if t0 == 0 else values[1:])  # values[0] is the previous last
            target = rel_target * losses[0]
            hit = np.nonzero((values <= target) | ~np.isfinite(values))[0]
            if hit.size:
                end = t0 + int(hit[0])
                steps = end if np.isfinite(values[hit[0]]) else None
            t0 += length
        final = jax.tree_util.tree_map(lambda w: np.asarray(w, np.float64), ps)
    diverged = end is not None and steps is None
    end = max_steps if end is None else end
    return GDRun(steps=steps, losses=np.asarray(losses[:end + 1], np.float64), steps_run=t0,
                 params=final, diverged=diverged, seconds=time.perf_counter() - start)

