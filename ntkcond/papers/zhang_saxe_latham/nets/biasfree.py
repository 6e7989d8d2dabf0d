"""Bias-free leaky-ReLU networks as linear networks (Zhang, Saxe & Latham, arXiv 2406.12615).

Network (no biases, L weight matrices, slope α ∈ [0, 1], σ(z) = max(z, αz)):

    f(x) = W_L σ(W_{L−1} ⋯ σ(W₁ x)),   W₁: (h₁, d), …, W_L: (k, h_{L−1}).

Data are rows: x is (n, d), y is (n, k) (or (n,) for k = 1), f(x) is (n, k).

**Expressivity (the paper's two-layer expressivity result).** σ(z) = c·z + (1−α)/2·|z| with c = (1+α)/2, so a
two-layer net splits into

    f(x) − f(−x) = (1+α) W₂W₁ x,     f(x) + f(−x) = (1−α) W₂|W₁x|,                      (1)

an odd part that is *linear*, M x with M = c·W₂W₁ (``odd_linear_map``), and a positively
1-homogeneous even part. On a symmetric sample (every x with −x) odd and even functions are
orthogonal, so for square loss and targets y,

    L(f) = (1/2n) Σ [ (y_odd − Mx)² + (y_even − f_even)² ] ≥ (1/2n) Σ ‖y_odd − P_lin y_odd‖²   (2)

whatever the width: ``two_layer_floor``. Depth ≥ 3 removes the floor (the median of three
coordinates is odd, 1-homogeneous and nonlinear, and a bias-free net of depth 3 expresses it).

**Exact dynamics equivalence (the paper's symmetric-data result; derived here).** Take data closed under
(x, y) ↦ (−x, −y), a loss whose derivative is odd, ℓ(−f, −y) = ℓ(f, y) (square loss;
logistic loss softplus(−y f)), and a *mirrored* two-layer net: hidden units in pairs
(w, a), (−w, −a), i.e. W₁ = [V; −V], W₂ = [A, −A] (``mirrored_init``). Then

  (i) f(x) = A σ(Vx) − A σ(−Vx) = (1+α) A V x = 2c·AVx: the net is linear;
  (ii) with e_μ = ∂ℓ/∂f at (f(x_μ), y_μ), odd in μ ↦ mirror(μ), and σ'(z) + σ'(−z) = 1 + α
       for z ≠ 0, summing each data point with its mirror gives
           ∂L/∂V = (1/n) Σ_μ (Aᵀe_μ ⊙ σ'(Vx_μ)) x_μᵀ = c·(1/n) Σ_μ Aᵀe_μ x_μᵀ,
           ∂L/∂A = (1/n) Σ_μ e_μ σ(Vx_μ)ᵀ        = c·(1/n) Σ_μ e_μ (Vx_μ)ᵀ,
       and the mirrored rows get exactly the negated gradients, so one gradient-descent step
       keeps the mirrored structure;
  (iii) the linear net (α = 1) of the same shape at W̃ = √c·W has the same output
       2·ÃṼx = 2c·AVx and gradient ∂L̃/∂W̃ = (1/√c)·∂L/∂W. Hence one ReLU step at learning
       rate η, W ← W − η ∂L/∂W, is mapped by W̃ = √c·W onto the linear step
       W̃ ← W̃ − (cη) ∂L̃/∂W̃.

So gradient descent on the leaky-ReLU net at rate η is, step for step, gradient descent on the
linear net at rate cη started from √c·W(0): identical in exact arithmetic for every η (not only
in the gradient-flow limit), and equal to float64 round-off in practice. In gradient flow this
is time rescaled by c = (1+α)/2 (``saxe``). The only exception is a pre-activation that
is exactly 0 (σ'(0) := α here), which has probability 0 for continuous data.
``linear_equivalence`` runs both nets and reports the deviation. Training itself (plain
full-batch gradient descent in float64 JAX) lives in ``ntkcond.papers.zhang_saxe_latham.nets.training``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...._core.checks import as_int, positive
from ....activations import parse_unit_slope
from ....spectrum import effective_rank as spectral_effective_rank
from ._net_checks import as_array, as_weights, as_xy
from .training import TrainResult, train_network

__all__ = [
    "odd_even_parts",
    "network_apply",
    "odd_linear_map",
    "mode_strength",
    "two_layer_floor",
    "symmetrize",
    "is_symmetric",
    "whiten",
    "mirrored_init",
    "is_mirrored",
    "aligned_init",
    "gaussian_init",
    "rank_one_init",
    "Equivalence",
    "linear_equivalence",
    "odd_even_losses",
    "effective_rank",
    "positive_mass_fraction",
    "first_layer_ntk",
]

# TrainResult, train_network and train_two_layer (nets.training) are importable from here too.


# ----------------------------------------------------------------------------- expressivity


def network_apply(weights, x, activation="relu") -> np.ndarray:
    """f(x) = W_L σ(⋯ σ(W₁x)) for rows x, in float64 numpy.

    Args:
      weights: [W₁ (h₁, d), …, W_L (k, h_{L−1})].
      x: (n, d) inputs.
      activation: slope α ∈ [0, 1] or any spelling ``parse_activation`` accepts.

    Returns:
      (n, k) outputs.
    """
    act = parse_unit_slope(activation, "network_apply")
    x = as_array(x, "network_apply", "x")
    ws = as_weights(weights, "network_apply", d=x.shape[1])
    h = x
    for w in ws[:-1]:
        h = act(h @ w.T)
    return h @ ws[-1].T


def odd_even_parts(f, x):
    """Odd and even parts of a function on a batch: ((f(x) − f(−x))/2, (f(x) + f(−x))/2).

    Eq. (1): for a two-layer bias-free net the odd part is c·W₂W₁x, c = (1+α)/2.

    Args:
      f: callable mapping an (n, d) array to an (n, …) array.
      x: (n, d) inputs.

    Returns:
      (odd, even), float64 arrays shaped like f(x).
    """
    if not callable(f):
        raise TypeError(f"odd_even_parts: expected a callable f, got {type(f).__name__}")
    x = as_array(x, "odd_even_parts", "x")
    plus, minus = np.asarray(f(x), dtype=np.float64), np.asarray(f(-x), dtype=np.float64)
    if plus.shape != minus.shape or plus.shape[:1] != x.shape[:1]:
        raise ValueError(f"odd_even_parts: expected f to return one row per input, got "
                         f"{plus.shape} for x {x.shape}")
    return 0.5 * (plus - minus), 0.5 * (plus + minus)


def odd_linear_map(W1, W2, activation="relu") -> np.ndarray:
    """M = (1+α)/2 · W₂W₁, the linear map of a two-layer net's odd part, eq. (1).

    Args:
      W1: (h, d); W2: (k, h); activation: slope α.

    Returns:
      (k, d) float64 matrix with (f(x) − f(−x))/2 = M x.
    """
    W1, W2 = as_weights([W1, W2], "odd_linear_map")
    return (1.0 + parse_unit_slope(activation).slope) / 2.0 * (W2 @ W1)


def mode_strength(W1, W2, u, v, activation="relu") -> float:
    """uᵀ M v with M = odd_linear_map(W1, W2): the strength of the teacher mode s·u vᵀ.

    Args:
      W1: (h, d); W2: (k, h); u: (k,) output direction; v: (d,) input direction.
    """
    M = odd_linear_map(W1, W2, activation)
    u = as_array(u, "mode_strength", "u", ndim=(1,))
    v = as_array(v, "mode_strength", "v", ndim=(1,))
    if u.shape[0] != M.shape[0] or v.shape[0] != M.shape[1]:
        raise ValueError(f"mode_strength: expected u ({M.shape[0]},) and v ({M.shape[1]},), "
                         f"got {u.shape} and {v.shape}")
    return float(u @ M @ v)


def two_layer_floor(x, y) -> float:
    """Lowest square loss (1/2n)Σ‖y − f‖² any two-layer bias-free net reaches, eq. (2).

    The bound (1/2n) Σ_μ ‖y_odd,μ − β̂ x_μ‖² with β̂ the least-squares fit of the odd part of y
    on x. It is attained only if the net's even part fits y's even part (for odd targets: is
    0), which a wide enough net can do; it holds for every width and every α.

    Args:
      x: (n, d) symmetric inputs laid out as ``symmetrize`` does: x[n/2:] = −x[:n/2].
      y: (n,) or (n, k) targets.

    Raises:
      ValueError: x is not laid out symmetrically (no f(−x) to compare with).
    """
    x, y = as_xy(x, y, "two_layer_floor")
    if not is_symmetric(x):
        raise ValueError("two_layer_floor: expected symmetric inputs with x[n/2:] == -x[:n/2] "
                         "(use symmetrize), got inputs without that layout")
    m = x.shape[0] // 2
    y_odd = 0.5 * (y[:m] - y[m:])
    beta, *_ = np.linalg.lstsq(x[:m], y_odd, rcond=None)
    return float(0.5 * np.sum((y_odd - x[:m] @ beta) ** 2) / m)


# ----------------------------------------------------------------------------- data


def symmetrize(x, y=None):
    """Close a data set under (x, y) ↦ (−x, −y): returns ([x; −x], [y; −y]) (y may be None)."""
    x, y = as_xy(x, y, "symmetrize")
    xs = np.concatenate([x, -x])
    return (xs, None) if y is None else (xs, np.concatenate([y, -y]))


def is_symmetric(x, y=None) -> bool:
    """True when x[n/2:] == −x[:n/2] (and y[n/2:] == −y[:n/2]) exactly: ``symmetrize``'s layout."""
    x, y = as_xy(x, y, "is_symmetric")
    n = x.shape[0]
    if n % 2:
        return False
    ok = np.array_equal(x[n // 2:], -x[: n // 2])
    return bool(ok and (y is None or np.array_equal(y[n // 2:], -y[: n // 2])))


def whiten(x, *, rtol: float = 1e-10) -> np.ndarray:
    """Whiten by the second moment: z = x U Λ^{−1/2} with (1/n) xᵀx = U Λ Uᵀ, so (1/n) zᵀz = I.

    No centring (it would break the x ↦ −x symmetry; a symmetric set has mean 0 anyway).
    Directions with λ ≤ rtol·λ_max are dropped, so z is (n, r), r = numerical rank.
    """
    x = as_array(x, "whiten", "x")
    lam, U = np.linalg.eigh(x.T @ x / x.shape[0])
    keep = lam > rtol * lam[-1]
    if not np.any(keep):
        raise ValueError("whiten: expected inputs with a nonzero second moment, got all zeros")
    return x @ (U[:, keep] / np.sqrt(lam[keep]))


# ----------------------------------------------------------------------------- initialisations


def mirrored_init(d: int, pairs: int, k: int = 1, *, scale: float, seed: int = 0):
    """Mirrored two-layer init: W₁ = [V; −V] (2m, d), W₂ = [A, −A] (k, 2m), entries N(0, scale²).

    Units come in pairs (w, a), (−w, −a); the net is then linear, f = (1+α)·A V x (eq. (1)).
    """
    where = "mirrored_init"
    d, pairs, k = as_int(d, "d", where, 1), as_int(pairs, "pairs", where, 1), as_int(k, "k", where, 1)
    rng = np.random.default_rng(seed)
    V = positive(scale, "scale", where) * rng.standard_normal((pairs, d))
    A = scale * rng.standard_normal((k, pairs))
    return np.concatenate([V, -V]), np.concatenate([A, -A], axis=1)


def is_mirrored(W1, W2) -> bool:
    """True when W₁ = [V; −V] and W₂ = [A, −A] exactly (``mirrored_init``'s layout)."""
    W1, W2 = as_weights([W1, W2], "is_mirrored")
    h = W1.shape[0]
    return bool(h % 2 == 0 and np.array_equal(W1[h // 2:], -W1[: h // 2])
                and np.array_equal(W2[:, h // 2:], -W2[:, : h // 2]))


def aligned_init(u, v, *, u0: float, activation="relu", pairs: int = 1, seed: int = 0):
    """Mirrored, balanced init aligned with the mode u vᵀ, with mode strength uᵀ M v = u₀.

    Pair i: V_i = b_i vᵀ, A_i = b_i u (unit u, v), Σ b_i² = u₀ / (2c), random signs and sizes.
    Under whitened data and a teacher s·u vᵀ this is the Saxe et al. (2014) decoupled start:
    the mode strength follows ``saxe`` eq. (2) exactly in gradient flow.

    Returns:
      (W1 (2m, d), W2 (k, 2m)).
    """
    where = "aligned_init"
    u = as_array(u, where, "u", ndim=(1,))
    v = as_array(v, where, "v", ndim=(1,))
    u, v = u / np.linalg.norm(u), v / np.linalg.norm(v)
    c = (1.0 + parse_unit_slope(activation).slope) / 2.0
    pairs = as_int(pairs, "pairs", where, 1)
    b = np.random.default_rng(seed).standard_normal(pairs)
    b *= np.sqrt(positive(u0, "u0", where) / (2.0 * c) / np.sum(b**2))
    V, A = np.outer(b, v), np.outer(u, b)
    return np.concatenate([V, -V]), np.concatenate([A, -A], axis=1)


def gaussian_init(widths, *, scale: float, seed: int = 0):
    """Generic init: W_l with i.i.d. N(0, scale²) entries, widths = [d, h₁, …, k]."""
    where = "gaussian_init"
    if not isinstance(widths, (list, tuple)) or len(widths) < 2:
        raise ValueError(f"{where}: expected widths [d, h1, ..., k] (>= 2 entries), got {widths!r}")
    widths = [as_int(w, "each width", where, 1) for w in widths]
    rng = np.random.default_rng(seed)
    scale = positive(scale, "scale", where)
    return [scale * rng.standard_normal((widths[i + 1], widths[i])) for i in range(len(widths) - 1)]


def rank_one_init(d: int, h: int, k: int = 1, *, scale: float, seed: int = 0):
    """Rank-one init W₁ = W₂ᵀ r (arXiv 2406.12615): W₂ (k, h) with N(0, scale²) entries, r (k, d)
    with random unit rows, so each hidden unit is balanced (for k = 1, ‖w_i‖ = |a_i|).

    Returns:
      (W1 (h, d), W2 (k, h)).
    """
    where = "rank_one_init"
    d, h, k = as_int(d, "d", where, 1), as_int(h, "h", where, 1), as_int(k, "k", where, 1)
    rng = np.random.default_rng(seed)
    W2 = positive(scale, "scale", where) * rng.standard_normal((k, h))
    r = rng.standard_normal((k, d))
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    return W2.T @ r, W2


# ----------------------------------------------------------------------------- equivalence


@dataclasses.dataclass(frozen=True)
class Equivalence:
    """A leaky-ReLU run beside its linear counterpart (module docstring, (iii)).

    Attributes:
      c: (1 + α)/2.
      relu: the leaky-ReLU run at learning rate η from W(0).
      linear: the linear run at learning rate c·η from √c·W(0).
      loss_deviation: max_k |L_relu(k) − L_lin(k)| / L_lin(0).
      weight_deviation: max over snapshots and layers of ‖√c·W − W̃‖_F / ‖W̃‖_F.
      mirrored: whether W(0) was mirrored; symmetric: whether (x, y) was closed under negation.
    """

    c: float
    relu: TrainResult
    linear: TrainResult
    loss_deviation: float
    weight_deviation: float
    mirrored: bool
    symmetric: bool


def linear_equivalence(x, y, W1, W2, *, activation="relu", lr: float, steps: int,
                       loss: str = "square", snapshot_every: int | None = None) -> Equivalence:
    """Train the leaky-ReLU net at rate η and the linear net at rate cη from √c·W(0); compare.

    Exactly equal (to round-off) when the data are symmetric and the init mirrored (module
    docstring); otherwise the deviations measure how far the equivalence fails.
    """
    act = parse_unit_slope(activation)
    c = (1.0 + act.slope) / 2.0
    x, y = as_xy(x, y, "linear_equivalence")
    W1, W2 = as_weights([W1, W2], "linear_equivalence", d=x.shape[1], k=y.shape[1])
    kw = dict(steps=steps, loss=loss, snapshot_every=snapshot_every)
    relu = train_network(x, y, [W1, W2], activation=act, lr=lr, **kw)
    lin = train_network(x, y, [np.sqrt(c) * W1, np.sqrt(c) * W2], activation=1.0,
                        lr=c * positive(lr, "lr", "linear_equivalence"), **kw)
    loss_dev = float(np.max(np.abs(relu.loss - lin.loss)) / lin.loss[0])
    w_dev = max(float(np.max(np.linalg.norm(np.sqrt(c) * a - b, axis=(1, 2))
                             / np.maximum(np.linalg.norm(b, axis=(1, 2)), 1e-300)))
                for a, b in zip(relu.snapshots, lin.snapshots))
    return Equivalence(c=c, relu=relu, linear=lin, loss_deviation=loss_dev,
                       weight_deviation=w_dev, mirrored=is_mirrored(W1, W2),
                       symmetric=is_symmetric(x, y))


# ----------------------------------------------------------------------------- diagnostics


def odd_even_losses(result: TrainResult, x, y):
    """Square loss split into its odd and even parts at every snapshot, eq. (2).

    On a symmetric set (``symmetrize`` layout) L = L_odd + L_even with
    L_odd = (1/2n')Σ‖y_odd − f_odd‖², L_even = (1/2n')Σ‖y_even − f_even‖² over the n' = n/2
    first-half points.

    Returns:
      (L_odd, L_even): two (S + 1,) arrays, one entry per ``result.snapshot_steps``.
    """
    x, y = as_xy(x, y, "odd_even_losses")
    if not is_symmetric(x):
        raise ValueError("odd_even_losses: expected x[n/2:] == -x[:n/2] (use symmetrize)")
    m = x.shape[0] // 2
    y_odd, y_even = 0.5 * (y[:m] - y[m:]), 0.5 * (y[:m] + y[m:])
    odd, even = [], []
    for i in range(len(result.snapshot_steps)):
        ws = [s[i] for s in result.snapshots]
        f = network_apply(ws, x, result.activation)
        f_odd, f_even = 0.5 * (f[:m] - f[m:]), 0.5 * (f[:m] + f[m:])
        odd.append(0.5 * np.sum((y_odd - f_odd) ** 2) / m)
        even.append(0.5 * np.sum((y_even - f_even) ** 2) / m)
    return np.array(odd), np.array(even)


def effective_rank(W) -> float:
    """Effective rank exp(−Σ p_i log p_i), p_i = σ_i / Σσ_j (Roy & Vetterli 2007); 1 for rank one."""
    s = np.linalg.svd(as_array(W, "effective_rank", "W"), compute_uv=False)
    if s[0] == 0:
        raise ValueError("effective_rank: expected a nonzero matrix, got all zeros")
    return spectral_effective_rank(s)


def positive_mass_fraction(W) -> float:
    """Σ max(W, 0) / Σ |W|: 1 for a non-negative matrix, about ½ for a random one."""
    W = as_array(W, "positive_mass_fraction", "W")
    total = np.sum(np.abs(W))
    if total == 0:
        raise ValueError("positive_mass_fraction: expected a nonzero matrix, got all zeros")
    return float(np.sum(np.maximum(W, 0.0)) / total)


def first_layer_ntk(W1, W2, x1, x2=None, activation="relu") -> np.ndarray:
    """Finite-width first-layer NTK Σ_k ⟨∂f_k(x)/∂W₁, ∂f_k(x')/∂W₁⟩ of f = W₂σ(W₁x).

    ∂f_k/∂W₁ = (W₂[k] ⊙ σ'(W₁x)) xᵀ, so

        Θ₁(x, x') = (x·x') Σ_i ‖W₂[:, i]‖² σ'(w_i·x) σ'(w_i·x').

    For the pair x' = −x, σ'(z)σ'(−z) = α (z ≠ 0): Θ₁(x, −x) = −α‖x‖² Σ_i ‖W₂[:, i]‖², which is
    exactly 0 for ReLU at every width (the pair's first-layer gradients are orthogonal), while a
    linear net (α = 1) has the gradients of x and −x exactly opposite.

    Args:
      W1: (h, d); W2: (k, h); x1: (n1, d); x2: (n2, d), default x1; activation: slope α.

    Returns:
      (n1, n2) float64.
    """
    where = "first_layer_ntk"
    act = parse_unit_slope(activation)
    x1 = as_array(x1, where, "x1")
    x2 = x1 if x2 is None else as_array(x2, where, "x2")
    W1, W2 = as_weights([W1, W2], where, d=x1.shape[1])
    if x2.shape[1] != x1.shape[1]:
        raise ValueError(f"{where}: expected x1 and x2 with the same dimension, got {x1.shape} "
                         f"and {x2.shape}")

    def slope(z):
        return np.where(z > 0, 1.0, act.slope)

    a2 = np.sum(W2**2, axis=0)
    g1, g2 = slope(x1 @ W1.T), slope(x2 @ W1.T)
    return (x1 @ x2.T) * ((g1 * a2) @ g2.T)
