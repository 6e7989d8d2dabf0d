"""Do the loss curves of different leaky slopes collapse after t → c·t?  Large initialisation
and large learning rate (Zhang, Saxe & Latham, arXiv 2406.12615, appendix experiments).

On symmetric data with a mirrored init the leaky-ReLU net at rate η from W₀/√c is, step for
step, the linear net at rate cη from W₀, c = (1+α)/2 (``ntkcond.papers.zhang_saxe_latham.nets.biasfree``, exact for every
init scale). So the ReLU curves L_α(t) plotted against c·t are gradient-descent runs of *one*
linear net at the rates cη, c ∈ [½, 1]: they coincide in the gradient-flow limit, differ by
O(η) discretisation, and part ways once η is large enough for some of those rates to overshoot
(the multiplier 1 − 2ηcs of ``saxe``, shifted to smaller η by a large init whose
weights make the loss sharper). Without the mirrored init the equivalence itself is only
approximate. ``slope_collapse`` measures the collapse error

    E = max_{t ∈ [0, T]} |L_α(t/c_α) − L_1(t)| / L_1(0),  maximised over α,                   (1)

with L_1 the linear net (α = 1) and L_α(t/c) read off by linear interpolation in time (the
scale a plot of the curves shows). A large init starts from a large L_1(0), so E is also
reported relative to the target energy E_y = (1/2n) Σ_μ ‖y_μ‖² (the loss of f = 0), which does
not depend on the init: ``errors_vs_target``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...._core.checks import positive
from ._net_checks import as_weights, as_xy
from .saxe import time_rescaling
from .training import train_network, train_network_batch

__all__ = ["Collapse", "slope_collapse", "slope_collapse_batch"]


@dataclasses.dataclass(frozen=True)
class Collapse:
    """Collapse of leaky-ReLU loss curves after time rescaling, eq. (1).

    Attributes:
      alphas: slopes α (the linear net α = 1 is the reference, always included).
      lr: learning rate η (the same for every α); time: T, in rescaled time c·t.
      errors: (len(alphas),) E per α (0 for α = 1).
      max_error: max over α (inf when a run diverged).
      errors_vs_target: (len(alphas),) the same deviations divided by E_y instead of L_1(0).
      oscillating: per α, whether the loss ever rose by more than 1e-9·L(0) from one step to the
        next (GD overshooting; a smooth descent never does).
      diverged: per α, whether the loss (on [0, T] in rescaled time) became non-finite or exceeded 1e6·L(0).
      curves: per α, (c·t, L) of the run.
    """

    alphas: tuple
    lr: float
    time: float
    errors: np.ndarray
    max_error: float
    errors_vs_target: np.ndarray
    oscillating: tuple
    diverged: tuple
    curves: tuple


def _prepare(where, lr, time, alphas):
    lr, T = positive(lr, "lr", where), positive(time, "time", where)
    alphas = tuple(sorted(set(float(a) for a in alphas) | {1.0}))
    cs = [time_rescaling(a) for a in alphas]
    return lr, T, alphas, cs, int(np.ceil(T / (min(cs) * lr)))


def _energy(y, where):
    energy = 0.5 * float(np.sum(y**2)) / y.shape[0]
    if energy == 0:
        raise ValueError(f"{where}: expected nonzero targets, got y = 0")
    return energy


def _collapse(runs, alphas, cs, lr, T, energy) -> Collapse:
    """Eq. (1) from one run per α (``TrainResult``s in the order of ``alphas``, α = 1 last)."""
    curves, osc, div = [], [], []
    for r, c in zip(runs, cs):
        window = c * r.time <= T * (1 + 1e-12)  # [0, T] in rescaled time (and one step more)
        window[np.argmin(window)] = True
        L = r.loss[window]
        bad = (~np.isfinite(L)) | (L > 1e6 * L[0])
        div.append(bool(np.any(bad)))
        good = L[: int(np.argmax(bad))] if np.any(bad) else L
        osc.append(bool(np.any(np.diff(good) > 1e-9 * L[0])) or div[-1])
        curves.append((c * r.time[window], L))
    t_ref, L_ref = curves[-1]
    keep = t_ref <= T * (1 + 1e-12)
    errors = []
    for (t, L), d in zip(curves, div):
        if d:
            errors.append(np.inf)
            continue
        errors.append(float(np.max(np.abs(np.interp(t_ref[keep], t, L) - L_ref[keep]))))
    dev = np.array(errors)
    errors = dev / L_ref[0]
    return Collapse(alphas=alphas, lr=lr, time=T, errors=errors, max_error=float(np.max(errors)),
                    errors_vs_target=dev / energy,
                    oscillating=tuple(osc), diverged=tuple(div), curves=tuple(curves))


def slope_collapse(x, y, W1, W2, *, alphas=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0), lr: float,
                   time: float, loss: str = "square") -> Collapse:
    """Train f = W₂σ_α(W₁x) for each α at rate lr from (W₁, W₂)/√c_α and compare, eq. (1).

    Every run takes the same number of steps, ceil(T/(c_min·lr)), so that the jitted loop is
    compiled once per learning rate.

    Args:
      x: (n, d); y: (n,) or (n, k); W1: (h, d); W2: (k, h): the linear-net init W₀.
      alphas: slopes in [0, 1]; 1 is added if missing.
      lr: learning rate η (> 0); time: T (> 0), in rescaled time.
    """
    where = "slope_collapse"
    x, y = as_xy(x, y, where)
    W1, W2 = as_weights([W1, W2], where, d=x.shape[1], k=y.shape[1])
    energy = _energy(y, where)
    lr, T, alphas, cs, steps = _prepare(where, lr, time, alphas)
    runs = [train_network(x, y, [W1 / np.sqrt(c), W2 / np.sqrt(c)], activation=alpha, lr=lr,
                          steps=steps, loss=loss) for alpha, c in zip(alphas, cs)]
    return _collapse(runs, alphas, cs, lr, T, energy)


def slope_collapse_batch(xs, ys, W1s, W2s, *, alphas=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
                         lr: float, time: float, loss: str = "square") -> list[Collapse]:
    """``slope_collapse`` for B problems of one shape at once (e.g. B seeds), each α trained
    for all of them in one vmapped loop (``training.train_network_batch``); member b equals
    ``slope_collapse(xs[b], ys[b], W1s[b], W2s[b], ...)`` to round-off.

    Args:
      xs: (B, n, d); ys: (B, n) or (B, n, k); W1s: (B, h, d); W2s: (B, k, h).
      alphas, lr, time, loss: as ``slope_collapse``.

    Returns:
      list of B ``Collapse``.
    """
    where = "slope_collapse_batch"
    xs, ys, W1s, W2s = (np.asarray(a, dtype=np.float64) for a in (xs, ys, W1s, W2s))
    if xs.ndim != 3 or W1s.ndim != 3 or W2s.ndim != 3 or ys.ndim not in (2, 3):
        raise ValueError(f"{where}: expected xs (B, n, d), ys (B, n[, k]), W1s (B, h, d), "
                         f"W2s (B, k, h), got shapes {xs.shape}, {ys.shape}, {W1s.shape}, "
                         f"{W2s.shape}")
    energies = [_energy(as_xy(x, y, where)[1], where) for x, y in zip(xs, ys)]
    lr, T, alphas, cs, steps = _prepare(where, lr, time, alphas)
    runs = [train_network_batch(xs, ys, [W1s / np.sqrt(c), W2s / np.sqrt(c)], activation=alpha,
                                lr=lr, steps=steps, loss=loss) for alpha, c in zip(alphas, cs)]
    return [_collapse([per_alpha[b] for per_alpha in runs], alphas, cs, lr, T, energies[b])
            for b in range(len(xs))]
