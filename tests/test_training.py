"""Tests of ntkcond.papers.zhang_saxe_latham.nets.training: gradient descent against iterations
written out in numpy, and RK4 gradient flow against the closed form."""
from __future__ import annotations

import numpy as np
import pytest

from ntkcond.papers.zhang_saxe_latham.nets import biasfree as bf
from ntkcond.papers.zhang_saxe_latham.nets import saxe
from ntkcond.papers.zhang_saxe_latham.nets import training


def test_single_layer_square_loss_matches_numpy_iteration():
    # L = 1 weight matrix: f = W x, L = (1/2n)||X Wᵀ − Y||², ∂L/∂W = (W XᵀX − YᵀX)/n.
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((20, 4)), rng.standard_normal((20, 2))
    W = rng.standard_normal((2, 4))
    r = training.train_network(x, y, [W], lr=0.1, steps=50, snapshot_every=10)
    Wn, losses = W.copy(), []
    for _ in range(50):
        losses.append(0.5 * np.sum((x @ Wn.T - y) ** 2) / 20)
        Wn = Wn - 0.1 * (Wn @ x.T @ x - y.T @ x) / 20
    losses.append(0.5 * np.sum((x @ Wn.T - y) ** 2) / 20)
    # Same float64 arithmetic in another order: rounding ~1e-15 relative.
    np.testing.assert_allclose(r.weights[0], Wn, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.loss, losses, rtol=1e-12)
    assert r.snapshots[0].shape == (6, 2, 4) and list(r.snapshot_steps) == [0, 10, 20, 30, 40, 50]
    np.testing.assert_allclose(r.time, 0.1 * np.arange(51), rtol=0, atol=1e-15)


def test_two_layer_logistic_step_matches_hand_gradient():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((15, 3)), np.sign(rng.standard_normal(15))[:, None]
    W1, W2 = rng.standard_normal((5, 3)), rng.standard_normal((1, 5))
    alpha, lr = 0.3, 0.2
    r = training.train_two_layer(x, y, W1, W2, activation=alpha, lr=lr, steps=1, loss="logistic")
    z = x @ W1.T
    h = np.where(z > 0, z, alpha * z)
    f = h @ W2.T
    e = -y / (1 + np.exp(y * f)) / 15  # ∂/∂f of (1/n) softplus(−y f)
    g2 = e.T @ h
    g1 = ((e @ W2) * np.where(z > 0, 1.0, alpha)).T @ x
    np.testing.assert_allclose(r.weights[0], W1 - lr * g1, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r.weights[1], W2 - lr * g2, rtol=1e-12, atol=1e-15)
    assert r.loss[0] == pytest.approx(np.mean(np.logaddexp(0, -y * f)), rel=1e-13, abs=0)


def test_float64_is_scoped():
    import jax.numpy as jnp

    with training.x64():
        assert jnp.ones(1).dtype == jnp.float64
    # No global switch is left behind (unless the user had enabled x64 themselves).
    import jax

    if not jax.config.read("jax_enable_x64"):
        assert jnp.ones(1).dtype == jnp.float32


def test_rk4_method_follows_the_gradient_flow_closed_form():
    # Aligned mirrored start on whitened data: u(t) is the Saxe sigmoid (nets.saxe eq. (2)).
    x0 = bf.whiten(np.random.default_rng(1).standard_normal((12, 3)))
    v = np.eye(3)[1]
    s, u0 = 2.0, 1e-2
    x, y = bf.symmetrize(x0, s * x0 @ v)
    W1, W2 = bf.aligned_init(np.ones(1), v, u0=u0, activation=0.0, pairs=2)
    err = {}
    for method in ("rk4", "gd"):
        r = training.train_two_layer(x, y, W1, W2, activation=0.0, lr=0.05, steps=120,
                               snapshot_every=1, method=method)
        u = np.array([bf.mode_strength(a, b, np.ones(1), v, 0.0) for a, b in zip(*r.snapshots)])
        err[method] = np.max(np.abs(u - saxe.saxe_mode_strength(r.time, s=s, u0=u0, c=0.5))) / s
    # RK4: O(dt^4) ~ 1e-7 at dt = 0.05 (observed); GD: O(dt) ~ 1e-2.
    assert err["rk4"] < 1e-5 < 1e-3 < err["gd"]
    with pytest.raises(ValueError, match="method in"):
        training.train_two_layer(x, y, W1, W2, lr=0.1, steps=1, method="euler")
