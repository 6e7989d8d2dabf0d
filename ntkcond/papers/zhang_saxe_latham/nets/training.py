"""Plain full-batch gradient descent on bias-free (leaky-)ReLU networks, in float64 JAX.

Network (no biases, L weight matrices, slope α ∈ [0, 1], σ(z) = max(z, αz)):

    f(x) = W_L σ(W_{L−1} ⋯ σ(W₁ x)),   W₁: (h₁, d), …, W_L: (k, h_{L−1}),

rows x (n, d), targets y (n, k). Gradient descent W ← W − η ∂L/∂W is written out (no optimiser
library), jitted and run with ``jax.lax.scan``; t = step·η is gradient-flow time (τ = 1), so a
small η approximates gradient flow. ``method="rk4"`` integrates gradient flow dW/dt = −∂L/∂W
itself with the classical fourth-order Runge–Kutta scheme at step η (global error O(η⁴)
instead of gradient descent's O(η)), for checks that need the flow rather than GD. Float64 is switched on only inside these functions
(``x64``), never globally. Used by ``ntkcond.papers.zhang_saxe_latham.nets.biasfree`` (Zhang, Saxe & Latham,
arXiv 2406.12615) and meant for reuse by later experiments on the same nets.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ...._core.checks import as_int, positive
from ...._core.x64 import x64
from ....activations import Activation, parse_unit_slope
from ._net_checks import as_weights, as_xy

__all__ = ["TrainResult", "train_network", "train_network_batch", "train_two_layer"]

LOSSES = ("square", "logistic")
METHODS = ("gd", "rk4")

# ----------------------------------------------------------------------------- training (JAX)


def _objective(weights, x, y, alpha, loss: str):
    import jax.numpy as jnp

    h = x
    for w in weights[:-1]:
        z = h @ w.T
        h = jnp.where(z > 0, z, alpha * z)
    f = h @ weights[-1].T
    if loss == "square":
        return 0.5 * jnp.sum((f - y) ** 2) / x.shape[0]
    return jnp.sum(jnp.logaddexp(0.0, -y * f)) / x.shape[0]


@functools.lru_cache(maxsize=None)
def _runner(loss: str, chunks: int, every: int, method: str = "gd", batched: bool = False):
    """A jitted loop: ``chunks`` snapshots of ``every`` steps each (GD or RK4 on the flow);
    ``batched``: the same loop vmapped over a leading axis of the weights, x and y."""
    import jax

    grad = jax.value_and_grad(_objective)

    def run(weights, x, y, alpha, lr):
        def shifted(ws, g, h):
            return [w - h * gw for w, gw in zip(ws, g)]

        def step(ws, _):
            value, g1 = grad(ws, x, y, alpha, loss)
            if method == "gd":
                return shifted(ws, g1, lr), value
            # Classical RK4 on dW/dt = −∇L(W): k_i = −∇L at the stages.
            g2 = grad(shifted(ws, g1, lr / 2), x, y, alpha, loss)[1]
            g3 = grad(shifted(ws, g2, lr / 2), x, y, alpha, loss)[1]
            g4 = grad(shifted(ws, g3, lr), x, y, alpha, loss)[1]
            g = [(a + 2 * b + 2 * c + d) / 6 for a, b, c, d in zip(g1, g2, g3, g4)]
            return shifted(ws, g, lr), value

        def chunk(ws, _):
            ws, values = jax.lax.scan(step, ws, None, length=every)
            return ws, (values, ws)

        final, (values, snaps) = jax.lax.scan(chunk, weights, None, length=chunks)
        return final, values.reshape(-1), snaps, _objective(final, x, y, alpha, loss)

    return jax.jit(jax.vmap(run, in_axes=(0, 0, 0, None, None)) if batched else run)


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """Full-batch gradient descent on a bias-free net (float64).

    Attributes:
      loss: (steps + 1,) loss before step 0, 1, …, and after the last step.
      time: (steps + 1,) t = step·lr (gradient-flow time, τ = 1).
      weights: final [W₁, …, W_L].
      snapshot_steps: (S + 1,) steps at which ``snapshots`` were taken (0 and every
        ``snapshot_every`` steps).
      snapshots: one (S + 1, rows, cols) array per layer.
      activation: the ``Activation`` (slope α).
      lr: learning rate η.
      loss_name: ``square`` or ``logistic``.
    """

    loss: np.ndarray
    time: np.ndarray
    weights: tuple
    snapshot_steps: np.ndarray
    snapshots: tuple
    activation: Activation
    lr: float
    loss_name: str


def _check_run(where, activation, lr, steps, snapshot_every, loss, method):
    act = parse_unit_slope(activation, where)
    lr = positive(lr, "lr", where)
    steps = as_int(steps, "steps", where, 1)
    every = steps if snapshot_every is None else as_int(snapshot_every, "snapshot_every", where, 1)
    if steps % every:
        raise ValueError(f"{where}: expected snapshot_every to divide steps, got {every} and {steps}")
    if loss not in LOSSES:
        raise ValueError(f"{where}: expected loss in {LOSSES}, got {loss!r}")
    if method not in METHODS:
        raise ValueError(f"{where}: expected method in {METHODS}, got {method!r}")
    return act, lr, steps, every


def train_network(x, y, weights, *, activation="relu", lr: float, steps: int,
                  loss: str = "square", snapshot_every: int | None = None,
                  method: str = "gd") -> TrainResult:
    """Plain full-batch gradient descent W ← W − lr·∂L/∂W on f = W_L σ(⋯σ(W₁x)), in float64.

    Losses: square L = (1/2n) Σ_μ ‖f(x_μ) − y_μ‖²; logistic L = (1/n) Σ_μ Σ_j softplus(−y_μj f_j(x_μ))
    (labels ±1, or any real y; both satisfy ℓ(−f, −y) = ℓ(f, y)). The loop is one jitted
    ``lax.scan``; small lr approximates gradient flow with t = step·lr.

    Args:
      x: (n, d) inputs; y: (n,) or (n, k) targets.
      weights: initial [W₁ (h₁, d), …, W_L (k, h_{L−1})].
      activation: slope α ∈ [0, 1] (1 = linear network).
      lr: learning rate (> 0). steps: number of steps (≥ 1).
      loss: ``square`` or ``logistic``.
      snapshot_every: weights are kept every this many steps (must divide steps); default steps.
      method: ``gd`` (gradient descent, the default) or ``rk4`` (RK4 integration of gradient
        flow with time step lr; t = step·lr is then flow time up to O(lr⁴)).

    Returns:
      ``TrainResult``.
    """
    where = "train_network"
    x, y = as_xy(x, y, where)
    ws = as_weights(weights, where, d=x.shape[1], k=y.shape[1])
    act, lr, steps, every = _check_run(where, activation, lr, steps, snapshot_every, loss, method)
    import jax.numpy as jnp

    with x64():
        final, values, snaps, last = _runner(loss, steps // every, every, method)(
            [jnp.asarray(w) for w in ws], jnp.asarray(x), jnp.asarray(y),
            jnp.asarray(act.slope), jnp.asarray(lr))
        curve = np.append(np.asarray(values, dtype=np.float64), float(last))
        snapshots = tuple(np.concatenate([w0[None], np.asarray(s)]) for w0, s in zip(ws, snaps))
        final = tuple(np.asarray(w) for w in final)
    return TrainResult(loss=curve, time=lr * np.arange(steps + 1), weights=final,
                       snapshot_steps=np.arange(0, steps + 1, every), snapshots=snapshots,
                       activation=act, lr=lr, loss_name=loss)


def train_network_batch(xs, ys, weights, *, activation="relu", lr: float, steps: int,
                        loss: str = "square", snapshot_every: int | None = None,
                        method: str = "gd") -> list[TrainResult]:
    """``train_network`` for B independent problems of one shape at once (one ``jax.vmap``-ed
    loop: e.g. B seeds of one experiment), with the same slope, rate and number of steps.

    Member b is trained on (xs[b], ys[b]) from [W[b] for W in weights]; its ``TrainResult``
    agrees with ``train_network``'s for it to round-off (batched float64 products may sum in
    another order: ~1e-16 relative).

    Args:
      xs: (B, n, d) inputs; ys: (B, n) or (B, n, k) targets.
      weights: initial [W₁ (B, h₁, d), …, W_L (B, k, h_{L−1})].
      activation, lr, steps, loss, snapshot_every, method: as ``train_network``.

    Returns:
      list of B ``TrainResult``.
    """
    where = "train_network_batch"
    if isinstance(weights, np.ndarray) or not isinstance(weights, (list, tuple)) or not weights:
        raise TypeError(f"{where}: expected weights as a list of 3-D arrays [W1, ..., WL] "
                        f"(leading batch axis), got {type(weights).__name__}")
    xs, ys = np.asarray(xs), np.asarray(ys)
    stacked = [np.asarray(w) for w in weights]
    if xs.ndim != 3 or ys.ndim not in (2, 3) or any(w.ndim != 3 for w in stacked):
        raise ValueError(f"{where}: expected xs (B, n, d), ys (B, n[, k]) and 3-D weights, got "
                         f"shapes {xs.shape}, {ys.shape}, {[w.shape for w in stacked]}")
    B = xs.shape[0]
    if B < 1 or ys.shape[0] != B or any(w.shape[0] != B for w in stacked):
        raise ValueError(f"{where}: expected one leading batch size B >= 1 for xs, ys and every "
                         f"weight, got {xs.shape[0]}, {ys.shape[0]}, {[w.shape[0] for w in stacked]}")
    checked = [as_xy(xs[b], ys[b], where) for b in range(B)]
    ws = [as_weights([w[b] for w in stacked], where, d=xs.shape[2], k=checked[0][1].shape[1])
          for b in range(B)]
    act, lr, steps, every = _check_run(where, activation, lr, steps, snapshot_every, loss, method)
    import jax.numpy as jnp

    with x64():
        final, values, snaps, last = _runner(loss, steps // every, every, method, True)(
            [jnp.asarray(np.stack([w[i] for w in ws])) for i in range(len(stacked))],
            jnp.asarray(np.stack([c[0] for c in checked])),
            jnp.asarray(np.stack([c[1] for c in checked])),
            jnp.asarray(act.slope), jnp.asarray(lr))
        values, last = np.asarray(values, dtype=np.float64), np.asarray(last, dtype=np.float64)
        snaps = [np.asarray(s) for s in snaps]
        final = [np.asarray(w) for w in final]
    out = []
    for b in range(B):
        out.append(TrainResult(
            loss=np.append(values[b], last[b]), time=lr * np.arange(steps + 1),
            weights=tuple(w[b] for w in final), snapshot_steps=np.arange(0, steps + 1, every),
            snapshots=tuple(np.concatenate([w0[None], s[b]]) for w0, s in zip(ws[b], snaps)),
            activation=act, lr=lr, loss_name=loss))
    return out


def train_two_layer(x, y, W1, W2, **kwargs) -> TrainResult:
    """``train_network`` for the two-layer net f = W₂σ(W₁x); keyword arguments as there."""
    return train_network(x, y, [W1, W2], **kwargs)
