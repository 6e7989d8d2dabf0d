"""The loss of a bias-free ReLU net predicted as a sum of independent Saxe curves (Zhang, Saxe &
Latham, arXiv 2406.12615; eqs. (1)–(3) of ``independent``): ``IndependentNets`` and its exact
cases ``orthogonal_nets`` (ReLU on pairwise orthogonal inputs) and ``pair_nets`` (±pairs with
even targets, slope α). The sign-group prediction from a generic init is in ``silent_phase``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...activations import parse_activation
from ._checks import as_weights, as_xy
from ._groups import as_groups, group_geometry, pair_data, require_orthogonal
from .biasfree import network_apply
from .saxe import saxe_discrete_mode_strength, saxe_learning_time, saxe_mode_strength

__all__ = ["IndependentNets", "orthogonal_nets", "pair_nets"]


# ----------------------------------------------------------------------------- predictions


@dataclasses.dataclass(frozen=True)
class IndependentNets:
    """Loss predicted as a sum of independent Saxe curves, eqs. (1)–(3).

    Net G has output strength m_G(t) = Y / (1 + (Y/m₀ − 1)e^{−2rYt}) and loss
    weight·½(Y − m_G)²; L(t) = Σ_G of those.

    Attributes:
      groups: point indices of each net (first-half indices for pair data).
      target: (G,) Y_G = ‖y_G‖.   rate: (G,) r_G (per unit time; 0 for a net that cannot learn).
      m0: (G,) initial output strengths.   weight: (G,) 1/n (points) or 2/n (±pairs).
      kind: ``"orthogonal"``, ``"pairs"`` or ``"sign groups"``.   slope: α.   n: number of data points.
    """

    groups: tuple
    target: np.ndarray
    rate: np.ndarray
    m0: np.ndarray
    weight: np.ndarray
    kind: str
    slope: float
    n: int

    def strengths(self, t) -> np.ndarray:
        """(G, T) m_G(t), eq. (1), at times t (T,) (t = step·lr for gradient descent)."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        out = np.empty((len(self.target), t.size))
        for i, (Y, r, m0) in enumerate(zip(self.target, self.rate, self.m0)):
            out[i] = m0 if r == 0 else saxe_mode_strength(t, s=Y, u0=m0, c=r)
        return out

    def discrete_strengths(self, steps: int, lr: float) -> np.ndarray:
        """(G, steps + 1): the exact gradient-descent map m ← m(1 + lr·r(Y − m))² per net."""
        out = np.empty((len(self.target), int(steps) + 1))
        for i, (Y, r, m0) in enumerate(zip(self.target, self.rate, self.m0)):
            out[i] = m0 if r == 0 else saxe_discrete_mode_strength(steps, s=Y, u0=m0, c=r, lr=lr)
        return out

    def _loss(self, m):
        return np.sum(self.weight[:, None] * 0.5 * (self.target[:, None] - m) ** 2, axis=0)

    def loss(self, t) -> np.ndarray:
        """Predicted gradient-flow loss L(t), eq. (2) or (3)."""
        return self._loss(self.strengths(t))

    def discrete_loss(self, steps: int, lr: float) -> np.ndarray:
        """Loss of the exact gradient-descent map at learning rate lr, (steps + 1,)."""
        return self._loss(self.discrete_strengths(steps, lr))

    def learning_times(self, fraction: float = 0.5) -> np.ndarray:
        """(G,) end of each plateau: time at which m_G reaches fraction·Y (inf if it never does)."""
        out = []
        for Y, r, m0 in zip(self.target, self.rate, self.m0):
            if r == 0:
                out.append(np.inf)
            elif m0 >= fraction * Y:
                out.append(0.0)
            else:
                out.append(saxe_learning_time(s=Y, u0=m0, c=r, fraction=fraction))
        return np.array(out)


def _strengths(f_block, y_block, where, g):
    m0 = float(np.sum(f_block * y_block) / np.linalg.norm(y_block))
    if not m0 > 0:
        raise ValueError(f"{where}: expected the initial output on group {list(g)} to point "
                         f"along its target (m0 > 0; small aligned init), got m0 = {m0:.3g}")
    return m0


def orthogonal_nets(x, y, W1, W2, *, groups=None) -> IndependentNets:
    """Prediction of eqs. (1)–(2) for a ReLU net on pairwise orthogonal inputs.

    m₀ of each group is read from the net at (W1, W2): m₀ = ⟨f_G, y_G⟩/‖y_G‖. The prediction is
    exact for ``orthogonal_init`` (same groups); for another init it is the independent-nets
    approximation (units shared between groups couple them). From a generic small Gaussian
    init it is *not* a usable prediction: units active on several same-sign points grow
    faster than any single-point net and the net's initial outputs are not the effective m₀
    (measured: deviations of 0.77–0.94·L(0) for n = 2, 4, 8 scaled basis vectors, positive
    targets, width 8n, scale 1e-3), and m₀ ≤ 0 on some group is common (then ValueError).
    For a generic init use ``sign_group_nets`` (two nets, one per target sign, eq. (4)).

    Raises:
      ValueError: inputs not pairwise orthogonal (reports the largest |cos|), groups of unequal
        norms or non-rank-one targets, or m₀ ≤ 0.
    """
    where = "orthogonal_nets"
    x, y = as_xy(x, y, where)
    require_orthogonal(x, where)
    W1, W2 = as_weights([W1, W2], where, d=x.shape[1], k=y.shape[1])
    gs = as_groups(groups, x.shape[0], where)
    rho, Y, _, _ = group_geometry(x, y, gs, where)
    f = network_apply([W1, W2], x, 0.0)
    m0 = np.array([_strengths(f[list(g)], y[list(g)], where, g) for g in gs])
    n = x.shape[0]
    return IndependentNets(groups=gs, target=Y, rate=rho / n, m0=m0,
                           weight=np.full(len(gs), 1.0 / n), kind="orthogonal", slope=0.0, n=n)


def pair_nets(x, y, W1, W2, *, activation="relu", groups=None) -> IndependentNets:
    """Prediction of eqs. (1), (3) for symmetric data ±v_G with even targets (XOR), slope α.

    m₀ is read from the even part of the net on the first half: m₀ = ⟨f_even,G, y_G⟩/‖y_G‖. The
    odd part is assumed 0 (exact for ``pair_init``); r_G = (1−α)ρ_G/n, so α = 1 gives r = 0
    and m₀ = 0: the predicted loss stays at Σ_G (1/n)‖y_G‖².
    """
    where = "pair_nets"
    alpha = parse_activation(activation).slope
    v, y_half, gs = pair_data(x, y, groups, where)
    W1, W2 = as_weights([W1, W2], where, d=v.shape[1], k=y_half.shape[1])
    rho, Y, _, _ = group_geometry(v, y_half, gs, where)
    even = 0.5 * (network_apply([W1, W2], v, alpha) + network_apply([W1, W2], -v, alpha))
    if alpha == 1.0:  # a linear net has no even part: nothing is ever learned, L stays put
        m0 = np.zeros(len(gs))
    else:
        m0 = np.array([_strengths(even[list(g)], y_half[list(g)], where, g) for g in gs])
    n = 2 * v.shape[0]
    return IndependentNets(groups=gs, target=Y, rate=(1.0 - alpha) * rho / n, m0=m0,
                           weight=np.full(len(gs), 2.0 / n), kind="pairs", slope=alpha, n=n)
