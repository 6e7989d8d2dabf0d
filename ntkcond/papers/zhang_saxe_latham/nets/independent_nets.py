"""Bias-free ReLU nets on orthogonal and XOR data as sets of independent linear networks
(Zhang, Saxe & Latham, arXiv 2406.12615; derived here, no equation numbers of the paper quoted).

Network f(x) = W₂σ(W₁x), σ(z) = max(z, αz), W₁ (h, d) with rows w_i, W₂ (k, h) with columns
a_i; square loss L = (1/2n) Σ_μ ‖f(x_μ) − y_μ‖²; gradient flow dW/dt = −∂L/∂W (gradient descent
at rate η is its Euler scheme with t = step·η).

**Orthogonal inputs, ReLU (α = 0).** Let the inputs be pairwise orthogonal, x_μ·x_ν = 0, and
write p_iμ = w_i·x̂_μ (x̂ = x/‖x‖). Then f(x_μ) = Σ_i a_i σ(‖x_μ‖ p_iμ) and

    dp_iμ/dt = −(1/n) ‖x_μ‖ σ'(w_i·x_μ) a_iᵀe_μ,     da_i/dt = −(1/n) Σ_μ e_μ σ(w_i·x_μ),

with e_μ = f(x_μ) − y_μ: the coordinate of w_i along x̂_μ is driven by point μ alone
(orthogonality), the part of w_i orthogonal to every input never moves, and points interact
only through second-layer weights a_i of units active on several of them. For ReLU a unit with
w_i·x_ν < 0 has σ' = σ = 0 there: it neither sees nor moves ν. So if the points split into
groups G and every unit is active on the points of exactly one group (w_i·x_μ > 0 for μ ∈ G,
< 0 for μ ∉ G), the net is the direct sum of independent *linear* nets f_G(x) = W₂^G W₁^G x,
one per group, each trained on its own points, as long as no active pre-activation reaches 0.

Each group net is a Saxe et al. (2014) net when (i) its points have one norm ρ_G (whitened on
their span), (ii) its targets are one direction times positive weights, y_μ = λ_μ ŷ_G
(k = 1: targets of one sign), and (iii) it starts aligned and balanced: w_i = b_i β̂_G on the
span, a_i = b_i ŷ_G, where β_G = Σ_{μ∈G} λ_μ x_μ / ρ_G² (``orthogonal_init``). Then β̂_G·x_μ > 0 on
the group, every unit scale obeys b ← b(1 + η r_G (Y_G − m)), and the group's output along its
target, m_G = ⟨f_G, y_G⟩/‖y_G‖ (‖·‖ over the group's n_G × k block), follows

    dm/dt = 2 r_G m (Y_G − m),  m(t) = Y_G / (1 + (Y_G/m₀ − 1) e^{−2 r_G Y_G t}),          (1)
    r_G = ρ_G / n,  Y_G = ‖y_G‖,   L(t) = Σ_G (1/2n) (Y_G − m_G(t))²,                       (2)

the Saxe sigmoid of ``ntkcond.papers.zhang_saxe_latham.nets.saxe`` with s = Y_G, u₀ = m₀ and c = r_G, in output units; the
gradient-descent sequence is exactly that module's discrete map with the same (s, u₀, c). The
plateau of group G ends at its own time t_G = log((Y_G/m₀ − 1)/(1/f − 1)) / (2 r_G Y_G)
(``saxe_learning_time``): groups with larger norm or target are learned first, so the loss
falls in steps. For leaky ReLU (α > 0) every unit has slope α ≥ 0 on every point, so all
points couple through the a_i and the decomposition is no longer exact (only ReLU here).

**Symmetric pairs with even targets; XOR.** Take inputs ±v_G with v_G pairwise orthogonal and
even targets y(−v) = y(v) (XOR: v ∈ {e₁+e₂, e₁−e₂}, y = x₁x₂ ∈ {+1, −1}). By the expressivity
identity f(x) + f(−x) = (1−α) W₂|W₁x| (``biasfree``) a two-layer net fits an even
target only through its even part ((1−α)/2)·W₂|W₁x|. Start from *even-mirrored* units, pairs
(w, a) and (−w, a) (``pair_init``): then f(x) = (1−α) Σ_pairs a|w·x| is even, errors are even,
and the gradients of the two units of a pair mirror each other, so the structure is kept. With
w = b β̂_G on a group's span (and exactly 0 on the other directions: a zero pre-activation gets
slope α from both v and −v, and the two contributions cancel because the errors are even),
the group is again an independent linear net, now of the even part:

    f(±v_μ) = (1−α) ρ_G Σ_pairs b² (β̂_G·v̂_μ) ŷ_G,    r_G = (1−α) ρ_G / n,
    L(t) = Σ_G (1/n) (Y_G − m_G(t))²  (two points per direction),                            (3)

with m_G(t) from (1). Learning slows as 1/(1−α) and the fitted output needs weights growing
like 1/(1−α): at α = 1 (a linear net) the even part vanishes and the XOR loss never moves.
From a generic small init the same picture emerges approximately: units with a_i > 0 turn to
the ±v of positive targets and units with a_i < 0 to the others (``feature_alignment``).

**Orthogonal inputs from a generic small init (ReLU, k = 1).** While the outputs are still
≈ 0 (the *silent phase*, e_μ ≈ −y_μ) every unit moves on its own. With b_μ = ‖x_μ‖ y_μ and S the
points on which unit i is active (p_iμ > 0),

    dp_iμ/dt = (1/n) b_μ a_i  (μ ∈ S),     da_i/dt = (1/n) Σ_{μ∈S} b_μ p_iμ,

so with A(t) = (1/n)∫₀ᵗ a_i: p_iμ(t) = p_iμ(0) + b_μ A and Ä = (1/n²)(Σ_S b_μ p_iμ(0) + ‖b_S‖² A):
A − A* = C e^{λt} + D e^{−λt}, λ = ‖b_S‖/n, in closed form between *events* at which an active
p_iμ reaches 0 (the point then switches off for good: σ' = 0 there). A unit therefore ends up
active only on points whose target sign matches the sign of its a_i (or on none), and the
points split into two sign groups G± = {μ: ±y_μ > 0} that no unit joins: two independent nets.
With one norm ρ_G per sign group, each is the Saxe net of eq. (1), r_G = ρ_G/n, Y_G = ‖y_G‖;
its starting strength is not the net's initial output (units active on a subset of G grow at
the slower rate ‖b_S‖/n, and the transient before the switch-offs sets each unit's amplitude).
We take it from the silent-phase solution m_G^lin(t) = ⟨f^lin_G(t), y_G⟩/‖y_G‖ (exact for the
linearised dynamics, ``silent_phase_outputs``): the time t_G at which m_G^lin would reach Y_G
is the half-time of the Saxe curve,

    m₀,G = Y_G / (1 + e^{2 r_G Y_G t_G}),    m_G^lin(t_G) = Y_G,                                 (4)

(for a pure exponential m^lin = m₀e^{2r_G Y_G t} this is the m₀ itself, up to O(m₀/Y_G)). Matching
at the half-time, rather than early, weighs the slower subset units as they stand when the group
is learned (matching at m^lin = 0.1·Y_G instead overestimates m₀ and doubles to triples the
error). ``sign_group_nets`` returns this prediction; it is an approximation (the masked
units of a group are not exactly one Saxe net), measured in ``experiments.orthogonal_runs``.

Functions that assume orthogonality raise ``ValueError`` reporting the largest off-diagonal
|cos| (``max_abs_cosine``) when it exceeds their tolerance.

The data are in ``orthogonal_data`` (``max_abs_cosine``, ``xor_data``, ``feature_alignment``), the
inits in ``independent_inits`` (``orthogonal_init``, ``pair_init``), and the generic-init
prediction of eq. (4) in ``silent_phase`` (``sign_group_nets``); this module holds
``IndependentNets`` and its exact cases ``orthogonal_nets`` and ``pair_nets`` (eqs. (1)–(3)).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ....activations import parse_unit_slope
from ._groups import as_groups, group_geometry, pair_data, require_orthogonal
from ._net_checks import as_weights, as_xy
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
    alpha = parse_unit_slope(activation, where).slope
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
