"""Closed-form learning curves of two-layer linear networks (Saxe, McClelland & Ganguli 2014),
with the time rescaling that carries them over to bias-free leaky-ReLU networks (Zhang, Saxe &
Latham, arXiv 2406.12615).

Setting. Whitened inputs, (1/n) Σ_μ x_μ x_μᵀ = I, a rank-one teacher y = s·u vᵀx (‖u‖ = ‖v‖ = 1,
strength s > 0), square loss L = (1/2n) Σ_μ ‖f(x_μ) − y_μ‖², gradient flow τ dW/dt = −∂L/∂W
(gradient descent at learning rate η is the Euler scheme with t = k·η and τ = 1). A two-layer
net whose hidden units are *aligned* (W₁ rows ∝ vᵀ, W₂ columns ∝ u) and *balanced* (each row of
W₁ as long as the matching column of W₂) keeps that shape, and its mode strength
u(t) = uᵀ M(t) v, M = c·W₂W₁, obeys

    τ du/dt = 2c·u (s − u)                                                               (1)
    u(t) = s·e^{2sct/τ} / (e^{2sct/τ} − 1 + s/u₀)  =  s / (1 + (s/u₀ − 1) e^{−2sct/τ})   (2)

(Saxe et al. 2014 for c = 1; arXiv 2406.12615 for c = (1+α)/2; equation numbers of the
papers are not quoted here). Derivation: with mirrored pairs V_i = b_i vᵀ, A_i = b_i u, the
gradients of ``ntkcond.papers.zhang_saxe_latham.nets.biasfree`` (ii) on whitened data give τ db_i/dt = c·b_i (s − u) and
u = 2c Σ_i b_i², hence (1), whose solution is (2). For a linear
net c = 1; for a bias-free leaky-ReLU net with slope α under the mirrored initialisation of
``ntkcond.papers.zhang_saxe_latham.nets.biasfree`` the same holds with c = (1 + α)/2 (``biasfree`` docstring). The
loss is L(t) = ½ (s − u(t))² (the whitened Gram matrix makes it exactly the mode's error).

Gradient descent at learning rate η is the exact discrete map (each aligned unit's scale b
obeys b ← b(1 + ηc(s − u)), and u = 2c Σ b²):

    u_{k+1} = u_k (1 + ηc (s − u_k))²                                                    (3)

Its fixed point u = s has multiplier 1 − 2ηcs: the approach is monotone for ηcs ≤ ½, it
oscillates (damped) for ½ < ηcs < 1 and it never settles for ηcs ≥ 1. Eq. (3) → eq. (2) as
η → 0 with first-order error O(η).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...._core.checks import positive
from ....activations import parse_unit_slope

__all__ = [
    "time_rescaling",
    "saxe_mode_strength",
    "saxe_loss",
    "saxe_discrete_mode_strength",
    "saxe_learning_time",
    "discrete_regime",
]


def time_rescaling(activation) -> float:
    """c = (1 + α)/2: the factor by which a bias-free leaky-ReLU net's time runs slower.

    arXiv 2406.12615: under symmetric data and mirrored initialisation, a two-layer
    leaky-ReLU net with slope α follows the linear net's trajectory at time c·t. ReLU: ½;
    linear: 1.

    Args:
      activation: anything ``ntkcond.parse_activation`` accepts (slope α ∈ [0, 1]).
    """
    return (1.0 + parse_unit_slope(activation, "time_rescaling").slope) / 2.0


def saxe_mode_strength(t, *, s: float, u0: float, c: float = 1.0, tau: float = 1.0) -> np.ndarray:
    """Mode strength u(t) of eq. (2): s / (1 + (s/u₀ − 1)·e^{−2sct/τ}).

    Args:
      t: times (any shape), in units of τ (t = step·lr for gradient descent with τ = 1).
      s: teacher singular value (> 0).
      u0: initial mode strength u(0) (> 0; the sigmoid needs a positive start).
      c: time-rescaling factor, (1 + α)/2 for leaky ReLU, 1 for linear (> 0).
      tau: time constant (> 0).

    Returns:
      float64 array shaped like t.
    """
    where = "saxe_mode_strength"
    s, u0 = positive(s, "s", where), positive(u0, "u0", where)
    c, tau = positive(c, "c", where), positive(tau, "tau", where)
    t = np.asarray(t, dtype=np.float64)
    return s / (1.0 + (s / u0 - 1.0) * np.exp(-2.0 * s * c * t / tau))


def saxe_loss(t, *, s: float, u0: float, c: float = 1.0, tau: float = 1.0) -> np.ndarray:
    """Square loss ½ (s − u(t))² of the rank-one teacher on whitened inputs, eqs. (1)–(2)."""
    return 0.5 * (s - saxe_mode_strength(t, s=s, u0=u0, c=c, tau=tau)) ** 2


def saxe_discrete_mode_strength(steps: int, *, s: float, u0: float, c: float = 1.0,
                                lr: float) -> np.ndarray:
    """The exact gradient-descent iteration eq. (3): u_{k+1} = u_k (1 + lr·c·(s − u_k))².

    Args:
      steps: number of steps K ≥ 0.
      s, u0, c: as in ``saxe_mode_strength``.
      lr: learning rate η (> 0).

    Returns:
      (K + 1,) float64 array u_0 … u_K (inf/nan once the iteration diverges).
    """
    where = "saxe_discrete_mode_strength"
    s, u0 = positive(s, "s", where), positive(u0, "u0", where)
    c, lr = positive(c, "c", where), positive(lr, "lr", where)
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"{where}: expected steps as an integer >= 0, got {steps!r}")
    u = np.empty(int(steps) + 1)
    u[0] = u0
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(int(steps)):
            u[k + 1] = u[k] * (1.0 + lr * c * (s - u[k])) ** 2
    return u


def saxe_learning_time(*, s: float, u0: float, c: float = 1.0, tau: float = 1.0,
                       fraction: float = 0.5) -> float:
    """Time at which u(t) of eq. (2) reaches fraction·s: τ/(2sc)·log((s/u₀ − 1)/(1/f − 1)).

    Args:
      s, u0, c, tau: as in ``saxe_mode_strength``; u0 < fraction·s.
      fraction: f ∈ (0, 1).
    """
    where = "saxe_learning_time"
    s, u0 = positive(s, "s", where), positive(u0, "u0", where)
    c, tau = positive(c, "c", where), positive(tau, "tau", where)
    f = positive(fraction, "fraction", where)
    if not f < 1.0 or not u0 < f * s:
        raise ValueError(f"{where}: expected 0 < u0 < fraction*s with fraction < 1, "
                         f"got u0={u0!r}, fraction={f!r}, s={s!r}")
    return tau / (2.0 * s * c) * float(np.log((s / u0 - 1.0) / (1.0 / f - 1.0)))


def discrete_regime(*, lr: float, s: float, c: float = 1.0) -> str:
    """Behaviour of eq. (3) near u = s, from the multiplier 1 − 2ηcs.

    Returns:
      ``"monotone"`` (ηcs ≤ ½), ``"oscillating"`` (½ < ηcs < 1, damped) or ``"unstable"``
      (ηcs ≥ 1: period doubling or divergence; the closed form no longer describes it).
    """
    where = "discrete_regime"
    g = positive(lr, "lr", where) * positive(c, "c", where) * positive(s, "s", where)
    if g <= 0.5:
        return "monotone"
    return "oscillating" if g < 1.0 else "unstable"
