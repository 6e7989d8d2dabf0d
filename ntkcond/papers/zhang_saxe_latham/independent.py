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

the Saxe sigmoid of ``ntkcond.saxe`` with s = Y_G, u₀ = m₀ and c = r_G, in output units; the
gradient-descent sequence is exactly that module's discrete map with the same (s, u₀, c). The
plateau of group G ends at its own time t_G = log((Y_G/m₀ − 1)/(1/f − 1)) / (2 r_G Y_G)
(``saxe_learning_time``): groups with larger norm or target are learned first, so the loss
falls in steps. For leaky ReLU (α > 0) every unit has slope α ≥ 0 on every point, so all
points couple through the a_i and the decomposition is no longer exact (only ReLU here).

**Symmetric pairs with even targets; XOR.** Take inputs ±v_G with v_G pairwise orthogonal and
even targets y(−v) = y(v) (XOR: v ∈ {e₁+e₂, e₁−e₂}, y = x₁x₂ ∈ {+1, −1}). By the expressivity
identity f(x) + f(−x) = (1−α) W₂|W₁x| (``ntkcond.biasfree``) a two-layer net fits an even
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
units of a group are not exactly one Saxe net), measured in ``independent_experiments``.

Functions that assume orthogonality raise ``ValueError`` reporting the largest off-diagonal
|cos| (``max_abs_cosine``) when it exceeds their tolerance.
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from ..._core.checks import as_int, positive
from ...activations import parse_activation
from ._checks import as_array, as_weights, as_xy
from .biasfree import is_symmetric, network_apply
from .saxe import saxe_discrete_mode_strength, saxe_learning_time, saxe_mode_strength

__all__ = [
    "max_abs_cosine",
    "orthogonalize",
    "xor_data",
    "orthogonal_init",
    "pair_init",
    "IndependentNets",
    "orthogonal_nets",
    "pair_nets",
    "silent_phase_outputs",
    "sign_group_nets",
    "feature_alignment",
]

ORTHO_TOL = 1e-10  # |cos| allowed between "orthogonal" inputs: round-off of QR/SVD is ~1e-15


# ----------------------------------------------------------------------------- data


def max_abs_cosine(x) -> float:
    """Largest |cos ∠(x_μ, x_ν)| over pairs μ ≠ ν of rows of x (0 for orthogonal rows).

    Args:
      x: (n, d) inputs, no zero row.
    """
    x = as_array(x, "max_abs_cosine", "x")
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"max_abs_cosine: expected nonzero rows, got a zero row at index "
                         f"{int(np.argmin(norms))}")
    if x.shape[0] < 2:
        return 0.0
    g = (x / norms[:, None]) @ (x / norms[:, None]).T
    np.fill_diagonal(g, 0.0)
    return float(np.max(np.abs(g)))


def _require_orthogonal(x, where: str, tol: float = ORTHO_TOL):
    cos = max_abs_cosine(x)
    if cos > tol:
        raise ValueError(f"{where}: expected pairwise orthogonal inputs (largest off-diagonal "
                         f"|cos| <= {tol:g}), got largest |cos| = {cos:.3g}")


def orthogonalize(x) -> np.ndarray:
    """The pairwise orthogonal rows nearest to x, with x's row norms (Löwdin orthogonalisation).

    With x̂ = rows of x normalised and x̂ = U S Vᵀ (thin SVD), U Vᵀ is the matrix with
    orthonormal rows closest to x̂ in Frobenius norm; each row is rescaled to ‖x_μ‖. Needs
    n ≤ d and linearly independent rows (e.g. a few real images).

    Returns:
      (n, d) float64 with pairwise orthogonal rows (|cos| ~ 1e-15).
    """
    x = as_array(x, "orthogonalize", "x")
    n, d = x.shape
    if n > d:
        raise ValueError(f"orthogonalize: expected at most d = {d} rows (orthogonal vectors in "
                         f"R^{d}), got {n}")
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise ValueError("orthogonalize: expected nonzero rows, got a zero row")
    U, s, Vt = np.linalg.svd(x / norms[:, None], full_matrices=False)
    if s[-1] < 1e-10 * s[0]:
        raise ValueError(f"orthogonalize: expected linearly independent rows, got singular "
                         f"values down to {s[-1]:.2g}")
    return (U @ Vt) * norms[:, None]


def xor_data(*, d: int = 2, scale: float = 1.0, noise: float = 0.0, copies: int = 1,
             seed: int = 0):
    """XOR: inputs ±(e₁+e₂)·scale, ±(e₁−e₂)·scale with label y = x₁x₂/scale² ∈ {+1, −1}.

    Laid out as ``symmetrize`` does, x[n/2:] = −x[:n/2] and y[n/2:] = y[:n/2] (even target).
    For d > 2 the plane is embedded by a random orthonormal pair of directions of R^d (then
    orthogonality holds to round-off only); ``noise`` > 0 adds N(0, noise²) to each of the
    ``copies`` copies of p = e₁+e₂ and q = e₁−e₂ *before* the negatives are added, so the set
    stays exactly symmetric but is no longer orthogonal.

    Returns:
      x (4·copies, d), y (4·copies,).
    """
    where = "xor_data"
    d, copies = as_int(d, "d", where, 2), as_int(copies, "copies", where, 1)
    scale = positive(scale, "scale", where)
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not noise >= 0:
        raise ValueError(f"{where}: expected noise >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    plane = np.array([[1.0, 1.0], [1.0, -1.0]]) * scale  # p, q
    if d == 2:
        frame = np.eye(2)
    else:
        frame = np.linalg.qr(rng.standard_normal((d, 2)))[0].T  # (2, d) orthonormal rows
    half = np.repeat(plane @ frame, copies, axis=0)
    half = half + noise * scale * rng.standard_normal(half.shape)
    y_half = np.repeat([1.0, -1.0], copies)
    return np.concatenate([half, -half]), np.concatenate([y_half, y_half])


# ----------------------------------------------------------------------------- groups


def _groups(groups, m: int, where: str):
    """Validate a partition of range(m) (default: one group per point)."""
    if groups is None:
        return tuple((i,) for i in range(m))
    try:
        gs = tuple(tuple(int(i) for i in g) for g in groups)
    except TypeError:
        raise TypeError(f"{where}: expected groups as a list of lists of point indices, "
                        f"got {groups!r}") from None
    flat = sorted(i for g in gs for i in g)
    if any(len(g) == 0 for g in gs) or flat != list(range(m)):
        raise ValueError(f"{where}: expected groups that partition the point indices "
                         f"0..{m - 1} (each once), got {groups!r}")
    return gs


def _group_geometry(v, y, groups, where: str):
    """ρ_G, ‖y_G‖, unit β̂_G and ŷ_G for each group of orthogonal directions v (rows)."""
    rho, Y, beta, yhat = [], [], [], []
    for g in groups:
        norms = np.linalg.norm(v[list(g)], axis=1)
        if np.max(np.abs(norms - norms[0])) > 1e-9 * norms[0]:
            raise ValueError(f"{where}: expected the points of group {list(g)} to have one norm "
                             f"(whitened on their span), got norms {norms.tolist()}")
        yg = y[list(g)]
        Yg = float(np.linalg.norm(yg))
        if Yg == 0:
            raise ValueError(f"{where}: expected a nonzero target on group {list(g)}, got 0")
        direction = yg[int(np.argmax(np.linalg.norm(yg, axis=1)))]
        direction = direction / np.linalg.norm(direction)
        lam = yg @ direction
        if np.max(np.linalg.norm(yg - np.outer(lam, direction), axis=1)) > 1e-9 * Yg or \
                np.any(lam <= 0):
            raise ValueError(f"{where}: expected the targets of group {list(g)} to be positive "
                             f"multiples of one direction (k = 1: one sign), got {yg.tolist()}")
        b = lam @ v[list(g)] / norms[0] ** 2
        rho.append(float(norms[0]))
        Y.append(Yg)
        beta.append(b / np.linalg.norm(b))
        yhat.append(direction)
    return np.array(rho), np.array(Y), beta, yhat


# ----------------------------------------------------------------------------- initialisations


def orthogonal_init(x, y, *, groups=None, units: int = 2, scale: float, margin: float = 0.5,
                    seed: int = 0):
    """Aligned, balanced ReLU init that makes each group of orthogonal points its own linear net.

    For group G: ``units`` hidden units with w_i = b_i (β̂_G − margin·Σ_{ν∉G} x̂_ν), a_i = b_i ŷ_G,
    b_i = scale·|N(0, 1)|. The negative ``margin`` keeps each unit strictly inactive (ReLU) on
    the other groups' points, so round-off in the orthogonality cannot switch it on; those
    components never move (σ' = 0). On the group's span the unit is balanced (‖w‖ = ‖a‖ there).

    Args:
      x: (n, d) pairwise orthogonal inputs; y: (n,) or (n, k) targets.
      groups: partition of range(n); default one group per point.
      units: hidden units per group (≥ 1); scale: size of b (> 0); margin: ≥ 0.

    Returns:
      (W1 (units·G, d), W2 (k, units·G)).
    """
    where = "orthogonal_init"
    x, y = as_xy(x, y, where)
    _require_orthogonal(x, where)
    gs = _groups(groups, x.shape[0], where)
    units, scale = as_int(units, "units", where, 1), positive(scale, "scale", where)
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not margin >= 0:
        raise ValueError(f"{where}: expected margin >= 0, got {margin!r}")
    _, _, beta, yhat = _group_geometry(x, y, gs, where)
    xhat = x / np.linalg.norm(x, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for g, bt, yh in zip(gs, beta, yhat):
        others = [i for i in range(x.shape[0]) if i not in g]
        direction = bt - margin * xhat[others].sum(axis=0)
        for b in scale * np.abs(rng.standard_normal(units)):
            rows.append(b * direction)
            cols.append(b * yh)
    return np.array(rows), np.array(cols).T


def pair_init(x, y, *, groups=None, pairs: int = 2, scale: float, seed: int = 0):
    """Even-mirrored aligned init for symmetric data with even targets (XOR): units (w, a), (−w, a).

    For group G of first-half directions: ``pairs`` unit pairs with w = b β̂_G, a = b ŷ_G,
    b = scale·|N(0, 1)|; w has no component on the other groups' directions (module
    docstring: exactly 0 is harmless there because the errors are even).

    Args:
      x: (n, d) symmetric inputs (x[n/2:] = −x[:n/2]) whose first half is pairwise orthogonal.
      y: even targets (y[n/2:] = y[:n/2]).
      groups: partition of range(n/2); default one group per direction.

    Returns:
      (W1 (2·pairs·G, d), W2 (k, 2·pairs·G)).
    """
    where = "pair_init"
    v, y_half, gs = _pair_data(x, y, groups, where)
    pairs, scale = as_int(pairs, "pairs", where, 1), positive(scale, "scale", where)
    _, _, beta, yhat = _group_geometry(v, y_half, gs, where)
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for bt, yh in zip(beta, yhat):
        for b in scale * np.abs(rng.standard_normal(pairs)):
            rows += [b * bt, -b * bt]
            cols += [b * yh, b * yh]
    return np.array(rows), np.array(cols).T


def _pair_data(x, y, groups, where):
    x, y = as_xy(x, y, where)
    if y is None:
        raise ValueError(f"{where}: expected targets y, got None")
    if not is_symmetric(x):
        raise ValueError(f"{where}: expected symmetric inputs with x[n/2:] == -x[:n/2] "
                         f"(use symmetrize or xor_data), got inputs without that layout")
    m = x.shape[0] // 2
    odd = np.max(np.abs(y[m:] - y[:m]))
    if odd > 0:
        raise ValueError(f"{where}: expected even targets y[n/2:] == y[:n/2], got a largest "
                         f"odd part |y(x) - y(-x)| = {odd:.3g}")
    _require_orthogonal(x[:m], where)
    return x[:m], y[:m], _groups(groups, m, where)


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
    _require_orthogonal(x, where)
    W1, W2 = as_weights([W1, W2], where, d=x.shape[1], k=y.shape[1])
    gs = _groups(groups, x.shape[0], where)
    rho, Y, _, _ = _group_geometry(x, y, gs, where)
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
    v, y_half, gs = _pair_data(x, y, groups, where)
    W1, W2 = as_weights([W1, W2], where, d=v.shape[1], k=y_half.shape[1])
    rho, Y, _, _ = _group_geometry(v, y_half, gs, where)
    even = 0.5 * (network_apply([W1, W2], v, alpha) + network_apply([W1, W2], -v, alpha))
    if alpha == 1.0:  # a linear net has no even part: nothing is ever learned, L stays put
        m0 = np.zeros(len(gs))
    else:
        m0 = np.array([_strengths(even[list(g)], y_half[list(g)], where, g) for g in gs])
    n = 2 * v.shape[0]
    return IndependentNets(groups=gs, target=Y, rate=(1.0 - alpha) * rho / n, m0=m0,
                           weight=np.full(len(gs), 2.0 / n), kind="pairs", slope=alpha, n=n)


# ----------------------------------------------------------------------------- silent phase


def _silent_unit(p0, a0: float, b, n: int):
    """Pieces (t_start, A*, C, D, λ, active) of one unit's silent-phase solution, eq. (4) text:
    A(t) = A* + C e^{λ(t−t_start)} + D e^{−λ(t−t_start)} on each piece (λ = 0: a unit active on
    no point, frozen; then C holds A and D the constant dA/dt)."""
    active = p0 > 0
    A, dA, t = 0.0, a0 / n, 0.0
    pieces = []
    while True:
        lam = float(np.sqrt(np.sum(b[active] ** 2))) / n
        if lam == 0.0:
            pieces.append((t, 0.0, A, dA, 0.0, active.copy()))
            return pieces
        A_star = -float(np.sum(b[active] * p0[active])) / n**2 / lam**2
        C = 0.5 * ((A - A_star) + dA / lam)
        D = 0.5 * ((A - A_star) - dA / lam)
        pieces.append((t, A_star, C, D, lam, active.copy()))
        # Event: p0_μ + b_μ A = 0, i.e. A = T_μ: C z² − (T_μ − A*) z + D = 0 with z = e^{λτ} > 1.
        first, who = np.inf, None
        for mu in np.flatnonzero(active):
            T = -p0[mu] / b[mu]
            B = T - A_star
            if C == 0.0:
                roots = [D / B] if B != 0 else []
            else:
                disc = B * B - 4.0 * C * D
                if disc < 0:
                    continue
                q = -0.5 * (-B + np.copysign(np.sqrt(disc), -B))  # stable quadratic roots
                roots = [q / C] + ([D / q] if q != 0 else [])
            for z in roots:
                if z > 1.0:
                    tau = np.log(z) / lam
                    if tau < first:
                        first, who = tau, mu
        if who is None:
            return pieces
        z = np.exp(lam * first)
        A, dA = A_star + C * z + D / z, lam * (C * z - D / z)
        t += first
        active[who] = False


def _silent_outputs(pieces, P0, b, rho, n, t):
    """(T, n) silent-phase outputs Σ_i a_i(t) ρ_μ relu(p_iμ(t)) at times t (T,), from the
    pieces of every unit (``_silent_unit``)."""
    f = np.zeros((t.size, len(b)))
    for p0, unit in zip(P0, pieces):
        starts = np.array([pc[0] for pc in unit])
        which = np.searchsorted(starts, t, side="right") - 1
        for k, (t0, A_star, C, D, lam, active) in enumerate(unit):
            sel = which == k
            if not np.any(sel) or lam == 0.0:
                continue  # a unit active on no point contributes nothing
            with np.errstate(over="ignore", invalid="ignore"):
                e_plus, e_minus = np.exp(lam * (t[sel] - t0)), np.exp(-lam * (t[sel] - t0))
                A = A_star + C * e_plus + D * e_minus
                a_t = n * lam * (C * e_plus - D * e_minus)
                relu = np.maximum(p0[active][None] + b[active][None] * A[:, None], 0.0)
                f[np.ix_(sel, active)] += a_t[:, None] * rho[active][None] * relu
    return f


def _silent_checked(x, y, W1, W2, where):
    x, y = as_xy(x, y, where)
    _require_orthogonal(x, where)
    if y.shape[1] != 1:
        raise ValueError(f"{where}: expected one output (k = 1), got targets of shape {y.shape}")
    W1, W2 = as_weights([W1, W2], where, d=x.shape[1], k=1)
    rho = np.linalg.norm(x, axis=1)
    return x, y[:, 0], W1 @ (x / rho[:, None]).T, W2[0], rho


def silent_phase_outputs(x, y, W1, W2, t) -> np.ndarray:
    """Outputs of a ReLU net f = W₂σ(W₁x) on pairwise orthogonal inputs in the silent phase:
    gradient flow linearised about f = 0 (errors e = −y), eq. (4) text, solved in closed form
    unit by unit (exponentials between the events at which a point switches a unit off).

    Exact for the linearised flow; the real net follows it while f ≪ y (the time t at which it
    stops doing so is the end of the plateau). Overflows to inf for very late t.

    Args:
      x: (n, d) pairwise orthogonal inputs; y: (n,) or (n, 1) targets (k = 1).
      W1: (h, d), W2: (1, h): the init.   t: times (T,), ≥ 0.

    Returns:
      (T, n) float64 f^lin(x_μ, t).
    """
    where = "silent_phase_outputs"
    x, y, P0, a0, rho = _silent_checked(x, y, W1, W2, where)
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError(f"{where}: expected finite times t >= 0 (1-D), got {t!r}")
    b, n = rho * y, x.shape[0]
    pieces = [_silent_unit(p0, float(a), b, n) for p0, a in zip(P0, a0)]
    return _silent_outputs(pieces, P0, b, rho, n, t)


def sign_group_nets(x, y, W1, W2) -> IndependentNets:
    """Prediction for a ReLU net from a *generic* small init on pairwise orthogonal inputs: two
    independent Saxe nets, one per target sign (G+ = {y > 0}, G− = {y < 0}), with r_G = ρ_G/n,
    Y_G = ‖y_G‖ and m₀ from the silent phase, eq. (4): the Saxe curve of G is half-way at the
    time t_G at which the linearised (silent-phase) strength would reach Y_G. A group whose
    silent-phase strength never reaches Y_G (no unit with the right sign active on it) gets
    rate 0 and stays at its initial loss.

    Needs ReLU, k = 1, one input norm per sign group (points of one sign whitened on their
    span), and a small init (outputs ≪ targets); otherwise the silent phase is not a phase.

    Raises:
      ValueError: inputs not pairwise orthogonal, k ≠ 1, unequal norms within a sign group.
    """
    where = "sign_group_nets"
    x, yv, P0, a0, rho = _silent_checked(x, y, W1, W2, where)
    n = x.shape[0]
    groups = [tuple(int(i) for i in np.flatnonzero(sel)) for sel in (yv > 0, yv < 0) if np.any(sel)]
    if sum(len(g) for g in groups) != n:
        raise ValueError(f"{where}: expected nonzero targets (each point has a sign), got "
                         f"{int(np.sum(yv == 0))} zero targets")
    r_norm, Y, _, _ = _group_geometry(x, yv[:, None], groups, where)
    b = rho * yv
    pieces = [_silent_unit(p0, float(a), b, n) for p0, a in zip(P0, a0)]

    def strength(t, g):
        f = _silent_outputs(pieces, P0, b, rho, n, np.atleast_1d(t))
        return f[:, list(g)] @ yv[list(g)] / np.linalg.norm(yv[list(g)])

    rate, m0 = r_norm / n, np.zeros(len(groups))
    for k, g in enumerate(groups):
        scale = 1.0 / (2 * rate[k] * Y[k])  # the Saxe time unit of this group
        lo, hi = 0.0, scale
        while strength(hi, g)[0] < Y[k] and hi < 1e4 * scale:
            lo, hi = hi, 2 * hi
        if not strength(hi, g)[0] >= Y[k]:
            rate[k], m0[k] = 0.0, float(np.clip(strength(0.0, g)[0], -Y[k], Y[k]))
            continue
        while hi - lo > 1e-13 * hi:  # the first crossing on a grid of 65 times, refined
            grid = np.linspace(lo, hi, 65)
            j = int(np.argmax(strength(grid, g) >= Y[k]))
            lo, hi = grid[max(j - 1, 0)], grid[j]
        m0[k] = Y[k] / (1.0 + np.exp(hi / scale))
    return IndependentNets(groups=tuple(groups), target=Y, rate=rate, m0=m0,
                           weight=np.full(len(groups), 1.0 / n), kind="sign groups",
                           slope=0.0, n=n)


# ----------------------------------------------------------------------------- features


def feature_alignment(W1, directions) -> np.ndarray:
    """max_j |cos ∠(w_i, v_j)| for each hidden unit i: 1 when w_i lies along ±some data direction.

    Args:
      W1: (h, d) first-layer weights (zero rows give 0).
      directions: (m, d) data directions v_j (e.g. XOR's p and q).

    Returns:
      (h,) float64 in [0, 1].
    """
    W1 = as_array(W1, "feature_alignment", "W1")
    v = as_array(directions, "feature_alignment", "directions")
    if v.shape[1] != W1.shape[1]:
        raise ValueError(f"feature_alignment: expected directions with {W1.shape[1]} columns, "
                         f"got shape {v.shape}")
    wn = np.linalg.norm(W1, axis=1, keepdims=True)
    vn = np.linalg.norm(v, axis=1, keepdims=True)
    cos = (W1 / np.where(wn > 0, wn, 1.0)) @ (v / vn).T
    return np.max(np.abs(cos), axis=1)
