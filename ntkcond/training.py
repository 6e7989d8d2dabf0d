"""Plain full-batch gradient descent on bias-free (leaky-)ReLU networks, in float64 JAX.

Network (no biases, L weight matrices, slope α ∈ [0, 1], σ(z) = max(z, αz)):

    f(x) = W_L σ(W_{L−1} ⋯ σ(W₁ x)),   W₁: (h₁, d), …, W_L: (k, h_{L−1}),

rows x (n, d), targets y (n, k). Gradient descent W ← W − η ∂L/∂W is written out (no optimiser
library), jitted and run with ``jax.lax.scan``; t = step·η is gradient-flow time (τ = 1), so a
small η approximates gradient flow. ``method="rk4"`` integrates gradient flow dW/dt = −∂L/∂W
itself with the classical fourth-order Runge–Kutta scheme at step η (global error O(η⁴)
instead of gradient descent's O(η)), for checks that need the flow rather than GD. Float64 is switched on only inside these functions
(``_float64``), never globally. Used by ``ntkcond.biasfree`` (Zhang, Saxe & Latham,
arXiv 2406.12615) and meant for reuse by later experiments on the same nets.
"""
from __future__ import annotations

import dataclasses
import functools
import numbers

import numpy as np

from ._jax import x64

from .activations import Activation, parse_activation

__all__ = ["TrainResult", "train_network", "train_two_layer"]

LOSSES = ("square", "logistic")
METHODS = ("gd", "rk4")

# ----------------------------------------------------------------------------- validation


def _array(x, where: str, name: str, ndim=(2,)) -> np.ndarray:
    if not (hasattr(x, "__array__") or isinstance(x, (list, tuple))):
        raise TypeError(f"{where}: expected {name} as an array, got {type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating)
                                   or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{where}: expected {name} with a real dtype, got {arr.dtype}")
    if arr.ndim not in ndim:
        raise ValueError(f"{where}: expected {name} with {' or '.join(map(str, ndim))} "
                         f"dimensions, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{where}: expected a non-empty {name}, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where}: expected finite {name}, got NaN or Inf")
    return arr


def _data(x, y, where: str):
    x = _array(x, where, "x")
    if y is None:
        return x, None
    y = _array(y, where, "y", ndim=(1, 2))
    y = y[:, None] if y.ndim == 1 else y
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"{where}: expected x and y with the same number of rows, "
                         f"got x {x.shape} and y {y.shape}")
    return x, y


def _weights(weights, where: str, d: int | None = None, k: int | None = None):
    if isinstance(weights, np.ndarray) or not isinstance(weights, (list, tuple)):
        raise TypeError(f"{where}: expected weights as a list of 2-D arrays [W1, ..., WL], "
                        f"got {type(weights).__name__}")
    if len(weights) < 1:
        raise ValueError(f"{where}: expected at least one weight matrix, got none")
    ws = [_array(w, where, f"W{i + 1}") for i, w in enumerate(weights)]
    for i in range(1, len(ws)):
        if ws[i].shape[1] != ws[i - 1].shape[0]:
            raise ValueError(f"{where}: W{i + 1} of shape {ws[i].shape} does not follow "
                             f"W{i} of shape {ws[i - 1].shape} (expected {ws[i].shape[0]} x "
                             f"{ws[i - 1].shape[0]})")
    if d is not None and ws[0].shape[1] != d:
        raise ValueError(f"{where}: expected W1 with {d} columns (input dimension), "
                         f"got shape {ws[0].shape}")
    if k is not None and ws[-1].shape[0] != k:
        raise ValueError(f"{where}: expected W{len(ws)} with {k} rows (output dimension), "
                         f"got shape {ws[-1].shape}")
    return ws


def _int(value, name: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{where}: expected {name} as an integer >= {minimum}, got {value!r}")
    return int(value)


def _pos(value, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: expected {name} as a real number, got {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{where}: expected {name} > 0 (finite), got {value!r}")
    return float(value)



# ----------------------------------------------------------------------------- training (JAX)


_float64 = x64  # scoped float64 (ntkcond._jax.x64)


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
def _runner(loss: str, chunks: int, every: int, method: str = "gd"):
    """A jitted loop: ``chunks`` snapshots of ``every`` steps each (GD or RK4 on the flow)."""
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

    return jax.jit(run)


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
    x, y = _data(x, y, where)
    ws = _weights(weights, where, d=x.shape[1], k=y.shape[1])
    act = parse_activation(activation)
    lr = _pos(lr, "lr", where)
    steps = _int(steps, "steps", where, 1)
    every = steps if snapshot_every is None else _int(snapshot_every, "snapshot_every", where, 1)
    if steps % every:
        raise ValueError(f"{where}: expected snapshot_every to divide steps, got {every} and {steps}")
    if loss not in LOSSES:
        raise ValueError(f"{where}: expected loss in {LOSSES}, got {loss!r}")
    if method not in METHODS:
        raise ValueError(f"{where}: expected method in {METHODS}, got {method!r}")
    import jax.numpy as jnp

    with _float64():
        final, values, snaps, last = _runner(loss, steps // every, every, method)(
            [jnp.asarray(w) for w in ws], jnp.asarray(x), jnp.asarray(y),
            jnp.asarray(act.slope), jnp.asarray(lr))
        curve = np.append(np.asarray(values, dtype=np.float64), float(last))
        snapshots = tuple(np.concatenate([w0[None], np.asarray(s)]) for w0, s in zip(ws, snaps))
        final = tuple(np.asarray(w) for w in final)
    return TrainResult(loss=curve, time=lr * np.arange(steps + 1), weights=final,
                       snapshot_steps=np.arange(0, steps + 1, every), snapshots=snapshots,
                       activation=act, lr=lr, loss_name=loss)


def train_two_layer(x, y, W1, W2, **kwargs) -> TrainResult:
    """``train_network`` for the two-layer net f = W₂σ(W₁x); keyword arguments as there."""
    return train_network(x, y, [W1, W2], **kwargs)
