"""The rank-one structure W₁ = W₂ᵀrᵀ of a two-layer bias-free leaky-ReLU net, and when gradient
flow keeps it (Zhang, Saxe & Latham, arXiv 2406.12615; derivation below, written out here).

Net f(x) = W₂σ(W₁x) with one output (k = 1): W₂ = (a_1 … a_h), rows w_i of W₁, slope α,
square loss L = (1/2n) Σ_μ (f(x_μ) − y_μ)², errors e_μ = f(x_μ) − y_μ, gradient flow
dW/dt = −∂L/∂W. Rank-one structure: W₁ = W₂ᵀrᵀ with ‖r‖ = 1, i.e. w_i = a_i r (every unit
balanced, ‖w_i‖ = |a_i|, and all units along ±r).

**Derivation.** σ is positively 1-homogeneous, σ(az) = a σ'(az) z, so on the structure
σ'(w_i·x) = σ'(±r·x) depends only on the sign of a_i and

    dw_i/dt = −a_i g_±,   da_i/dt = −a_i g_±·r,   g_± = (1/n) Σ_μ e_μ σ'(±r·x_μ) x_μ.

Hence d(a_i r)/dt = −a_i (g_±·r) r + a_i dr/dt equals dw_i/dt for every unit with a_i > 0 iff
dr/dt = −(I − rrᵀ) g₊ (which keeps ‖r‖ = 1), and for every unit with a_i < 0 iff
dr/dt = −(I − rrᵀ) g₋. Both hold when the *breaking term*

    B = (I − rrᵀ)(g₊ − g₋) = (1 − α)(I − rrᵀ) (1/n) Σ_μ e_μ sign(r·x_μ) x_μ                (1)

vanishes (``rank_one_breaking``). It does, for all time, when
  (a) all a_i share one sign (B never enters), or α = 1 (a linear net);
  (b) the data are symmetric (every x with −x), the targets odd (y(−x) = −y(x)) and the
      inputs whitened ((1/n) Σ x xᵀ = I): pairing x with −x, Σ e sign(r·x) x =
      2 Σ_half e_even(x) sign(r·x) x with e_even = f_even = (1−α)/2 (A₊ − A₋)|r·x|
      (A_± = Σ_{±a_i>0} a_i²), so the sum is ∝ Σ (r·x) x ∝ r and (I − rrᵀ) removes it.
Then W₁(t) = W₂(t)ᵀ r(t)ᵀ for all t, with r(t) a unit vector that itself rotates (it is not
fixed). Otherwise (mixed signs and asymmetric or non-whitened data, or an even target part)
B ≠ 0 and the structure is lost at rate ‖B‖.

**Gradient descent.** One GD step maps a unit with a_i > 0 to w_i − η a_i g₊ = a_i'(r − ηg₊)/(1 −
ηg₊·r) with a_i' = a_i(1 − ηg₊·r): units of one sign stay exactly parallel (also under RK4,
whose stages are such steps). Across signs the directions (r − ηg_±)/(1 − ηg_±·r) differ by
O(η²) even when B = 0, so case (b) is kept only up to O(η) over a fixed time; the balance
‖w_i‖² − a_i², conserved by the flow of any bias-free homogeneous net, also drifts by O(η²) per
step. ``rank_one_deviation`` measures the distance to the structure, min_r ‖W₁ − W₂ᵀrᵀ‖_F/‖W₁‖_F.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ....activations import parse_unit_slope
from ._net_checks import as_weights, as_xy
from .biasfree import network_apply
from .training import TrainResult, train_network

__all__ = [
    "rank_one_deviation",
    "rank_one_direction",
    "balance_deviation",
    "rank_one_breaking",
    "RankOneTrace",
    "track_rank_one",
]


def rank_one_direction(W1, W2) -> np.ndarray:
    """Least-squares R in W₁ ≈ W₂ᵀR: (k, d); for k = 1 the vector r (d,) of W₁ = W₂ᵀrᵀ."""
    W1, W2 = as_weights([W1, W2], "rank_one_direction")
    if not np.any(W2):
        raise ValueError("rank_one_direction: expected a nonzero W2, got all zeros")
    R, *_ = np.linalg.lstsq(W2.T, W1, rcond=None)
    return R[0] if R.shape[0] == 1 else R


def rank_one_deviation(W1, W2) -> float:
    """min_R ‖W₁ − W₂ᵀR‖_F / ‖W₁‖_F: 0 exactly on the rank-one structure W₁ = W₂ᵀrᵀ.

    Args:
      W1: (h, d); W2: (k, h).
    """
    W1, W2 = as_weights([W1, W2], "rank_one_deviation")
    norm = np.linalg.norm(W1)
    if norm == 0:
        raise ValueError("rank_one_deviation: expected a nonzero W1, got all zeros")
    R = np.atleast_2d(rank_one_direction(W1, W2))
    return float(np.linalg.norm(W1 - W2.T @ R) / norm)


def balance_deviation(W1, W2) -> float:
    """max_i |‖w_i‖² − ‖a_i‖²| / max_i (‖w_i‖² + ‖a_i‖²): 0 for balanced units.

    ‖w_i‖² − ‖a_i‖² is conserved by gradient flow of any two-layer bias-free net with a
    positively homogeneous activation (module docstring).
    """
    W1, W2 = as_weights([W1, W2], "balance_deviation")
    w2, a2 = np.sum(W1**2, axis=1), np.sum(W2**2, axis=0)
    scale = np.max(w2 + a2)
    if scale == 0:
        raise ValueError("balance_deviation: expected nonzero weights, got all zeros")
    return float(np.max(np.abs(w2 - a2)) / scale)


def rank_one_breaking(x, y, W1, W2, *, activation="relu") -> float:
    """‖B‖ / max(‖g₊‖, ‖g₋‖) with B the breaking term of eq. (1), at the current weights.

    0 when all a_i share one sign or α = 1; 0 to round-off under condition (b). Only defined
    for one output (k = 1) and weights on the structure (r from ``rank_one_direction``).
    """
    where = "rank_one_breaking"
    alpha = parse_unit_slope(activation).slope
    x, y = as_xy(x, y, where)
    W1, W2 = as_weights([W1, W2], where, d=x.shape[1], k=y.shape[1])
    if W2.shape[0] != 1:
        raise ValueError(f"{where}: expected one output (W2 of shape (1, h)), got {W2.shape}")
    if np.all(W2 >= 0) or np.all(W2 <= 0) or alpha == 1.0:
        return 0.0
    r = rank_one_direction(W1, W2)
    r = r / np.linalg.norm(r)
    e = (network_apply([W1, W2], x, alpha) - y)[:, 0]
    z = x @ r

    def slope(s):
        return np.where(s > 0, 1.0, alpha)

    n = x.shape[0]
    g_plus, g_minus = (e * slope(z)) @ x / n, (e * slope(-z)) @ x / n
    diff = g_plus - g_minus
    B = diff - (diff @ r) * r
    return float(np.linalg.norm(B) / max(np.linalg.norm(g_plus), np.linalg.norm(g_minus), 1e-300))


@dataclasses.dataclass(frozen=True)
class RankOneTrace:
    """Distance to the rank-one structure along a training run.

    Attributes:
      time: (S + 1,) t at the snapshots.
      deviation: (S + 1,) ``rank_one_deviation`` at each snapshot.
      balance: (S + 1,) ``balance_deviation`` at each snapshot.
      rotation_deg: angle between r(0) and r(T) (k = 1; the structure's r moves).
      result: the ``TrainResult``; method: ``gd`` or ``rk4``.
    """

    time: np.ndarray
    deviation: np.ndarray
    balance: np.ndarray
    rotation_deg: float
    result: TrainResult
    method: str

    @property
    def max_deviation(self) -> float:
        return float(np.max(self.deviation))


def track_rank_one(x, y, W1, W2, *, activation="relu", lr: float, steps: int,
                   snapshot_every: int | None = None, method: str = "gd") -> RankOneTrace:
    """Train (GD, or RK4 gradient flow with ``method="rk4"``) and trace the rank-one deviation.

    Args: as ``train_network``; W1 (h, d), W2 (k, h).
    """
    r = train_network(x, y, [W1, W2], activation=activation, lr=lr, steps=steps,
                      snapshot_every=snapshot_every, method=method)
    dev = np.array([rank_one_deviation(a, b) for a, b in zip(*r.snapshots)])
    bal = np.array([balance_deviation(a, b) for a, b in zip(*r.snapshots)])
    r0 = np.ravel(rank_one_direction(r.snapshots[0][0], r.snapshots[1][0]))
    r1 = np.ravel(rank_one_direction(r.snapshots[0][-1], r.snapshots[1][-1]))
    cos = abs(r0 @ r1) / (np.linalg.norm(r0) * np.linalg.norm(r1))
    return RankOneTrace(time=r.time[r.snapshot_steps], deviation=dev, balance=bal,
                        rotation_deg=float(np.degrees(np.arccos(min(cos, 1.0)))), result=r,
                        method=method)
