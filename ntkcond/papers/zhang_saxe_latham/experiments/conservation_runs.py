"""The experiment on the conserved rank-one structure W₁ = W₂ᵀrᵀ (Zhang, Saxe & Latham, arXiv
2406.12615): ``rank_one`` tracks its deviation (``conservation.track_rank_one``) under RK4
gradient flow, gradient descent at several rates and planted breaks. Returns an
``ExperimentResult``.

The theory it measures: ``nets.conservation``.
"""
from __future__ import annotations

import numpy as np

from ..nets.biasfree import rank_one_init, symmetrize
from ..nets.conservation import rank_one_breaking, rank_one_direction, track_rank_one
from ._common import Progress, progress_callback, symmetric_gaussian, unit_vector
from .result import ExperimentResult

__all__ = ["rank_one"]


# ----------------------------------------------------------------------------- rank one


def rank_one(*, fast: bool = False, seed: int = 0,
             progress: Progress | None = None) -> ExperimentResult:
    """Deviation ‖W₁ − W₂ᵀrᵀ‖/‖W₁‖ (best r) along training from ``rank_one_init`` (h = 8,
    std 0.1, mixed signs of W₂) on whitened symmetric Gaussian data (n = 40, d = 5) with odd
    teacher y = 2v·x: RK4 gradient flow (α = 0, 0.5) keeps it at round-off, GD breaks it ∝ lr
    (log-log slope reported), and four planted breaks (init, asymmetric data, even target,
    non-whitened inputs) move it. Time t ≤ 6.
    """
    bar = progress_callback(progress)
    d, h, T = 5, 8, 6.0
    x0, x = symmetric_gaussian(20, d, seed)
    v = unit_vector(d, seed)
    y = 2.0 * x @ v
    W1, W2 = rank_one_init(d, h, scale=0.1, seed=1)
    if np.all(W2 > 0) or np.all(W2 < 0):
        raise ValueError("rank_one: expected mixed signs in W2 for this seed, got one sign")
    out = {"setting": "whitened symmetric Gaussian (n=40, d=5), odd teacher y = 2 v.x, "
                      "rank_one_init h=8 scale 0.1 (mixed signs)", "time": T, "cases": {}}
    traces = {}

    def case(name, xx, yy, A, B, alpha, lr, method):
        steps = int(round(T / lr))
        every = max(1, steps // 100)
        steps = every * (steps // every)
        tr = track_rank_one(xx, yy, A, B, activation=alpha, lr=lr, steps=steps,
                            snapshot_every=every, method=method)
        out["cases"][name] = {"alpha": alpha, "lr": lr, "method": method,
                              "initial_deviation": float(tr.deviation[0]),
                              "max_deviation": tr.max_deviation,
                              "final_deviation": float(tr.deviation[-1]),
                              "max_balance_deviation": float(np.max(tr.balance)),
                              "r_rotation_deg": tr.rotation_deg,
                              "breaking_term_at_init": rank_one_breaking(xx, yy, A, B, activation=alpha),
                              "final_loss_over_initial": float(tr.result.loss[-1] / tr.result.loss[0])}
        traces[name] = tr

    jobs = []
    dts = (0.02, 0.01) if fast else (0.02, 0.01, 0.005)
    for alpha in (0.0, 0.5):
        for dt in dts:
            jobs.append((f"flow rk4 dt={dt:g} α={alpha:g}", x, y, W1, W2, alpha, dt, "rk4"))
    lrs = (0.1, 0.03, 0.01) if fast else (0.1, 0.03, 0.01, 0.003)
    for lr in lrs:
        jobs.append((f"GD lr={lr:g} α=0", x, y, W1, W2, 0.0, lr, "gd"))
    P1, P2 = rank_one_init(d, h, scale=0.1, seed=1)
    P2 = np.abs(P2)
    jobs.append(("GD lr=0.1 α=0, all a_i > 0", x, y, P2.T @ rank_one_direction(P1, P2)[None], P2,
                 0.0, 0.1, "gd"))
    rng = np.random.default_rng(seed)
    xa = x.copy()
    xa[-1] += 0.1
    Wb = W1 + 1e-6 * rng.standard_normal(W1.shape)
    xs, _ = symmetrize(x0 * np.linspace(0.5, 1.5, d))
    jobs += [("planted: init broken by 1e-6", x, y, Wb, W2, 0.0, 0.01, "rk4"),
             ("planted: asymmetric data (one x shifted 0.1)", xa, y, W1, W2, 0.0, 0.01, "rk4"),
             ("planted: even target part (y + 0.5)", x, y + 0.5, W1, W2, 0.0, 0.01, "rk4"),
             ("planted: non-whitened inputs", xs, 2.0 * xs @ v, W1, W2, 0.0, 0.01, "rk4")]
    for job in bar(jobs):
        case(*job)
    gd = [out["cases"][f"GD lr={lr:g} α=0"]["max_deviation"] for lr in lrs]
    out["gd_deviation_vs_lr_loglog_slope"] = float(np.polyfit(np.log(lrs), np.log(gd), 1)[0])
    return ExperimentResult("rank_one", out, {"traces": traces, "dts": dts, "lrs": lrs, "gd": gd})
