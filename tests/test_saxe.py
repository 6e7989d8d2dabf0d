"""Tests of ntkcond.papers.zhang_saxe_latham.nets.saxe: the closed form, its ODE, the discrete map
and its regimes."""
from __future__ import annotations

import numpy as np
import pytest

from ntkcond.papers.zhang_saxe_latham.nets import saxe


def test_closed_form_formula_and_large_lr_regime():
    s, u0, c = 2.0, 0.01, 0.6
    t = np.linspace(0, 5, 11)
    e = np.exp(2 * s * c * t)
    # The form s·e^{2sct}/(e^{2sct} − 1 + s/u0) against the stable form used.
    np.testing.assert_allclose(saxe.saxe_mode_strength(t, s=s, u0=u0, c=c),
                               s * e / (e - 1 + s / u0), rtol=1e-14)
    # It solves du/dt = 2c·u(s − u) (central difference, O(dt²) ≈ 1e-8 relative).
    dt = 1e-4
    du = (saxe.saxe_mode_strength(t + dt, s=s, u0=u0, c=c)
          - saxe.saxe_mode_strength(t - dt, s=s, u0=u0, c=c)) / (2 * dt)
    u = saxe.saxe_mode_strength(t, s=s, u0=u0, c=c)
    np.testing.assert_allclose(du, 2 * c * u * (s - u), rtol=1e-6, atol=1e-9)
    t_half = saxe.saxe_learning_time(s=s, u0=u0, c=c)
    assert saxe.saxe_mode_strength(t_half, s=s, u0=u0, c=c) == pytest.approx(s / 2, rel=1e-12, abs=0)
    assert saxe.discrete_regime(lr=0.004, s=3.0, c=0.5) == "monotone"
    assert saxe.discrete_regime(lr=0.6, s=3.0, c=0.5) == "oscillating"
    assert saxe.discrete_regime(lr=0.6, s=3.0, c=1.0) == "unstable"
    # Large lr: the iteration overshoots s (oscillation) and never settles for the linear net.
    osc = saxe.saxe_discrete_mode_strength(60, s=3.0, u0=1e-3, c=0.5, lr=0.6)
    assert np.max(osc) > 3.0 * 1.05
    lin = saxe.saxe_discrete_mode_strength(200, s=3.0, u0=1e-3, c=1.0, lr=0.6)
    assert not np.all(np.abs(lin[-20:] - 3.0) < 0.1)


def test_time_rescaling_values():
    assert saxe.time_rescaling("relu") == 0.5
    assert saxe.time_rescaling("linear") == 1.0
    assert saxe.time_rescaling(("leaky_relu", 0.2)) == pytest.approx(0.6, abs=1e-16)


def test_discrete_map_tends_to_closed_form_at_first_order():
    s, u0, c, T = 2.0, 1e-2, 0.75, 4.0
    errs = []
    for lr in (0.01, 0.005, 0.0025):
        steps = int(round(T / lr))
        u = saxe.saxe_discrete_mode_strength(steps, s=s, u0=u0, c=c, lr=lr)
        errs.append(np.max(np.abs(u - saxe.saxe_mode_strength(lr * np.arange(steps + 1), s=s, u0=u0, c=c))))
    # Euler's global error is first order: each halving of lr halves it (2 ± 10%).
    assert all(1.8 < a / b < 2.2 for a, b in zip(errs, errs[1:]))


def test_saxe_rejects_bad_input():
    with pytest.raises(ValueError, match="saxe_mode_strength: expected u0 > 0"):
        saxe.saxe_mode_strength(1.0, s=1.0, u0=0.0)
    with pytest.raises(ValueError, match="s > 0"):
        saxe.saxe_discrete_mode_strength(3, s=-1.0, u0=0.1, lr=0.1)
    with pytest.raises(ValueError, match="steps as an integer"):
        saxe.saxe_discrete_mode_strength(-1, s=1.0, u0=0.1, lr=0.1)
    with pytest.raises(TypeError, match="lr as a real number"):
        saxe.discrete_regime(lr="0.1", s=1.0)
    with pytest.raises(ValueError, match="u0 < fraction"):
        saxe.saxe_learning_time(s=1.0, u0=0.9, fraction=0.5)
    with pytest.raises(ValueError, match="slope in \\[0, 1\\]"):
        saxe.time_rescaling(1.5)
