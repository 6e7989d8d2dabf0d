"""The experiments in which a bias-free (leaky-)ReLU net behaves as a linear net (Zhang, Saxe &
Latham, arXiv 2406.12615), items 1, 2, 3 and 5 of the package docstring: ``expressivity`` (the
odd part of a two-layer net is linear), ``equivalence`` (step for step the linear net with
t → c·t), ``closed_form`` (Saxe's mode strength with t → c·t) and ``deep`` (deep nets also
learn rank-one weights). Each returns an ``ExperimentResult``.

The theory it measures: ``nets.biasfree`` and ``nets.saxe``.
"""
from __future__ import annotations

import numpy as np

from .... import datasets
from ..nets.biasfree import (
    aligned_init,
    effective_rank,
    gaussian_init,
    linear_equivalence,
    mirrored_init,
    mode_strength,
    network_apply,
    odd_even_parts,
    odd_linear_map,
    positive_mass_fraction,
    rank_one_init,
    symmetrize,
    two_layer_floor,
    whiten,
)
from ..nets.saxe import (
    discrete_regime,
    saxe_discrete_mode_strength,
    saxe_mode_strength,
    time_rescaling,
)
from ..nets.training import train_network, train_two_layer
from ._common import (
    ALPHAS,
    Progress,
    positive_values,
    progress_callback,
    symmetric_gaussian,
    unit_vector,
)
from .result import ExperimentResult

__all__ = ["expressivity", "equivalence", "closed_form", "deep"]


def _stable_rank(W) -> float:
    """‖W‖_F² / ‖W‖₂² (1 for a rank-one matrix)."""
    return float(np.sum(W**2) / np.linalg.norm(W, 2) ** 2)


# ----------------------------------------------------------------------------- item 1


def expressivity(*, fast: bool = False, seed: int = 0,
                 progress: Progress | None = None) -> ExperimentResult:
    """Item 1: odd part f(x) − f(−x) = 2·(1+α)/2·W₂W₁x of random and trained two-layer nets
    (max relative deviation from ``odd_linear_map``), and the loss floor of odd nonlinear
    targets (x₁x₂x₃, median) on a symmetric Gaussian sample in d = 3: two-layer nets of growing
    width stop at ``two_layer_floor`` (the best linear fit), a three-layer net goes below it.
    """
    bar = progress_callback(progress)
    rng = np.random.default_rng(seed)
    # (a) the odd part of any two-layer net is c·W2W1 x: random nets, then a trained one.
    x = rng.standard_normal((200, 5))
    odd_dev = {}
    for alpha in ALPHAS:
        W1, W2 = rng.standard_normal((16, 5)), rng.standard_normal((2, 16))
        odd, _ = odd_even_parts(lambda z: network_apply([W1, W2], z, alpha), x)
        M = odd_linear_map(W1, W2, alpha)
        odd_dev[f"{alpha:g}"] = float(np.max(np.abs(odd - x @ M.T)) / np.max(np.abs(odd)))
    y_any = np.sin(x[:, :1]) + x[:, 1:2] ** 2  # no symmetry at all
    trained = train_two_layer(x, y_any, *gaussian_init([5, 16, 1], scale=0.3, seed=seed),
                              activation=0.0, lr=0.05, steps=300)
    odd, _ = odd_even_parts(lambda z: network_apply(trained.weights, z, 0.0), x)
    M = odd_linear_map(*trained.weights, 0.0)
    trained_dev = float(np.max(np.abs(odd - x @ M.T)) / np.max(np.abs(odd)))

    # (b) loss floors on a symmetric Gaussian sample in d = 3.
    n_half = 200 if fast else 1000
    x0 = rng.standard_normal((n_half, 3))
    xs = np.concatenate([x0, -x0])
    big = rng.standard_normal((10**5 if fast else 10**6, 3))
    targets = {"x1*x2*x3": lambda z: z[:, 0] * z[:, 1] * z[:, 2],
               "median(x1,x2,x3)": lambda z: np.median(z[:, :3], axis=1)}
    widths = (4, 16) if fast else (4, 16, 64)
    steps2 = 1000 if fast else 4000
    steps3, width3 = (1500, 32) if fast else (5000, 64)
    floors, curves = {}, {}
    for name, fn in bar(list(targets.items())):
        y, yb = fn(xs), fn(big)
        beta, *_ = np.linalg.lstsq(big, yb, rcond=None)
        entry = {"predicted_floor_sample": two_layer_floor(xs, y),
                 "predicted_floor_population_mc": float(0.5 * np.mean((yb - big @ beta) ** 2)),
                 "two_layer": {}, "three_layer": {}}
        for h in widths:
            lr = 0.1 * min(1.0, 16 / h)
            W = gaussian_init([3, h, 1], scale=1.0, seed=seed + h)
            W = [W[0] * np.sqrt(2 / 3), W[1] / np.sqrt(h)]
            r = train_network(xs, y, W, activation=0.0, lr=lr, steps=steps2 * max(1, h // 16))
            entry["two_layer"][str(h)] = float(r.loss[-1])
            curves[(name, f"2-layer h={h}")] = r
        W = gaussian_init([3, width3, width3, 1], scale=1.0, seed=seed)
        W = [W[0] * np.sqrt(2 / 3), W[1] * np.sqrt(2 / width3), W[2] / np.sqrt(width3)]
        r = train_network(xs, y, W, activation=0.0, lr=0.05, steps=steps3)
        entry["three_layer"][str(width3)] = float(r.loss[-1])
        curves[(name, f"3-layer h={width3}")] = r
        floor = entry["predicted_floor_sample"]
        entry["two_layer_min_over_floor"] = min(entry["two_layer"].values()) / floor
        entry["three_layer_over_floor"] = float(r.loss[-1]) / floor
        floors[name] = entry
    summary = {"odd_part_max_rel_dev_random": odd_dev, "odd_part_max_rel_dev_trained": trained_dev,
               "floors": floors}
    return ExperimentResult("expressivity", summary, {"runs": curves, "targets": list(targets)})


# ----------------------------------------------------------------------------- item 2


def _equivalence_data(dataset: str, strength: float, fast: bool, seed: int):
    if dataset == "digits":
        x0 = whiten(datasets.load("digits").x[: (100 if fast else 300)])
    elif dataset == "gaussian":
        x0, _ = symmetric_gaussian(32 if fast else 128, 8, seed)
    else:
        raise ValueError(f"equivalence: expected dataset 'gaussian' or 'digits', got {dataset!r}")
    return symmetrize(x0, strength * x0 @ unit_vector(x0.shape[1], seed))


#: Most gradient steps one run of ``equivalence`` may take (``time``/(c·``lr``)).
MAX_EQUIVALENCE_STEPS = 10**6


def equivalence(*, dataset: str = "gaussian", lr: float = 0.004, time: float = 10.0,
                strength: float = 2.0, init_scale: float = 1e-3, fast: bool = False,
                seed: int = 0, progress: Progress | None = None) -> ExperimentResult:
    """Item 2: leaky-ReLU net = linear net with t → c·t, c = (1+α)/2, on symmetric data
    x ∪ −x (whitened Gaussian or digits) with odd teacher y = strength·v·x.

    Reports, for square and logistic loss: the exact step-for-step deviation (ReLU at rate η
    from W₀/√c vs linear at rate cη from W₀; ``linear_equivalence``); the collapse of the
    curves at one rate η plotted against c·t (an O(η) discretisation gap); and the collapse at
    rate η/c (exact). Then, for α = 0, how far a non-mirrored init (Gaussian, rank-one) is from
    its linear net, and a planted asymmetry (one input moved by 1e-2). ``time`` is linear-net
    time c·t; ``lr`` the learning rate; ``init_scale`` the std of the mirrored init.
    """
    for name, value in (("lr", lr), ("time", time), ("strength", strength),
                        ("init_scale", init_scale)):
        positive_values("equivalence", name, value)
    # steps = round(time/(c·lr)) with c = (1+α)/2 in [1/2, 1]: at least 1 (c = 1) and at most
    # MAX_EQUIVALENCE_STEPS (c = 1/2; the runs cost O(steps), a bound on the time).
    if round(time / lr) < 1 or 2 * time / lr > MAX_EQUIVALENCE_STEPS:
        raise ValueError(
            f"equivalence: expected lr with 1 <= time/lr and 2*time/lr <= "
            f"{MAX_EQUIVALENCE_STEPS} (each run takes round(time/(c*lr)) steps, "
            f"c = (1+alpha)/2 in [1/2, 1]), got lr = {lr!r} with time = {time!r} "
            f"({time / lr:.3g} steps at c = 1)")
    bar = progress_callback(progress)
    x, y = _equivalence_data(dataset, strength, fast, seed)
    d = x.shape[1]
    W1, W2 = mirrored_init(d, 4, scale=init_scale, seed=seed)
    out = {"dataset": dataset, "n": int(x.shape[0]), "d": int(d), "lr": lr, "time": time,
           "strength": strength, "init_scale": init_scale}
    curves = {}
    for loss in ("square", "logistic"):
        yy = y if loss == "square" else np.sign(y)
        exact, same_lr, lr_over_c = {}, {}, {}
        for alpha in bar(ALPHAS):
            c = time_rescaling(alpha)
            # The ReLU net from W0/√c is the linear net from W0 (at rate cη): one linear curve.
            steps = int(round(time / (c * lr)))
            eq = linear_equivalence(x, yy, W1 / np.sqrt(c), W2 / np.sqrt(c), activation=alpha,
                                    lr=lr, steps=steps, loss=loss, snapshot_every=steps)
            exact[f"{alpha:g}"] = {"loss_dev": eq.loss_deviation, "weight_dev": eq.weight_deviation}
            curves[(loss, alpha)] = eq.relu
            # Same discrete sequence for every α: rate η/c from W0/√c ↔ linear at rate η from W0.
            r = train_two_layer(x, yy, W1 / np.sqrt(c), W2 / np.sqrt(c), activation=alpha,
                                lr=lr / c, steps=int(round(time / lr)), loss=loss)
            lr_over_c[alpha] = r.loss
        ref = curves[(loss, 1.0)]
        for alpha in ALPHAS:
            r, c = curves[(loss, alpha)], time_rescaling(alpha)
            same_lr[f"{alpha:g}"] = float(np.max(np.abs(np.interp(ref.time, c * r.time, r.loss)
                                                        - ref.loss)) / ref.loss[0])
        out[loss] = {
            "exact_max_loss_dev": max(v["loss_dev"] for v in exact.values()),
            "exact_max_weight_dev": max(v["weight_dev"] for v in exact.values()),
            "exact_per_alpha": exact,
            "collapse_same_lr_max_dev": max(same_lr.values()),
            "collapse_same_lr_per_alpha": same_lr,
            "collapse_lr_over_c_max_dev": float(max(np.max(np.abs(v - lr_over_c[1.0]))
                                                    for v in lr_over_c.values()) / lr_over_c[1.0][0]),
        }
    # Without the mirrored init (α = 0): generic Gaussian and rank-one W1 = W2ᵀ r.
    h = W1.shape[0]
    broken = {}
    inits = {"mirrored": (W1, W2),
             "gaussian": tuple(gaussian_init([d, h, 1], scale=init_scale, seed=seed)),
             "rank_one": rank_one_init(d, h, scale=init_scale, seed=seed)}
    steps = int(round(time / (0.5 * lr)))
    for name, (A, B) in bar(list(inits.items())):
        eq = linear_equivalence(x, y, A, B, activation=0.0, lr=lr, steps=steps,
                                snapshot_every=steps)
        broken[name] = {"loss_dev": eq.loss_deviation, "weight_dev": eq.weight_deviation,
                        "mirrored": eq.mirrored}
        curves[("init", name)] = eq
    out["relu_vs_linear_by_init"] = broken
    # A planted asymmetry: one input moved off its mirror by 1e-2.
    xp = x.copy()
    xp[-1] += 1e-2
    eq = linear_equivalence(xp, y, W1, W2, activation=0.0, lr=lr, steps=steps, snapshot_every=steps)
    out["planted_asymmetry"] = {"shift": 1e-2, "loss_dev": eq.loss_deviation,
                                "weight_dev": eq.weight_deviation}
    return ExperimentResult("equivalence", out, curves)


# ----------------------------------------------------------------------------- item 3


def closed_form(*, lrs=None, fast: bool = False, seed: int = 0,
                progress: Progress | None = None) -> ExperimentResult:
    """Item 3: mode strength u(t) of a leaky-ReLU net from an aligned init against Saxe's
    closed form u(t) = s / (1 + (s/u₀ − 1) e^{−2cst}) (``saxe_mode_strength``, t → c·t) and its
    exact discrete map (``saxe_discrete_mode_strength``), for learning rates ``lrs`` (default
    0.004, 0.05, 0.2, 0.6; fast: 0.004, 0.6). Whitened symmetric Gaussian data (n = 128, d = 8),
    s = 3, u₀ = 1e-3, t ≤ 6. Errors are max |u − u_theory| / s.
    """
    if lrs is None:
        lrs = (0.004, 0.6) if fast else (0.004, 0.05, 0.2, 0.6)
    lrs = positive_values("closed_form", "lrs", lrs)
    v, s, u0, T = unit_vector(8, seed), 3.0, 1e-3, 6.0
    # each run takes round(T/lr) steps: at least 1 (lr <= 2T) and at most MAX_EQUIVALENCE_STEPS
    bad = [lr for lr in lrs if round(T / lr) < 1 or T / lr > MAX_EQUIVALENCE_STEPS]
    if bad:
        raise ValueError(f"closed_form: expected learning rates lrs in [{T / MAX_EQUIVALENCE_STEPS:.3g}, "
                         f"{2 * T:g}] (each run takes round(t/lr) steps up to t = {T:g}: at least "
                         f"1 and at most {MAX_EQUIVALENCE_STEPS}), got {bad}")
    bar = progress_callback(progress)
    x0, _ = symmetric_gaussian(64, 8, seed)
    x, y = symmetrize(x0, s * x0 @ v)
    alphas = (0.0, 0.5, 1.0) if fast else ALPHAS
    out = {"s": s, "u0": u0, "time": T, "results": []}
    sims = {}
    for alpha in bar(alphas):
        c = time_rescaling(alpha)
        W1, W2 = aligned_init(np.ones(1), v, u0=u0, activation=alpha, pairs=4, seed=seed)
        for lr in lrs:
            steps = int(round(T / lr))
            r = train_two_layer(x, y, W1, W2, activation=alpha, lr=lr, steps=steps,
                                snapshot_every=1)
            u = np.array([mode_strength(a, b, np.ones(1), v, alpha) for a, b in zip(*r.snapshots)])
            theory = saxe_mode_strength(r.time, s=s, u0=u0, c=c)
            discrete = saxe_discrete_mode_strength(steps, s=s, u0=u0, c=c, lr=lr)
            out["results"].append({
                "alpha": alpha, "c": c, "lr": lr, "lr*c*s": lr * c * s,
                "regime": discrete_regime(lr=lr, s=s, c=c),
                "max_rel_err_vs_closed_form": float(np.max(np.abs(u - theory)) / s),
                "max_rel_err_vs_discrete_map": float(np.max(np.abs(u - discrete)) / s),
                "final_abs_err": float(abs(u[-1] - s)),
                "overshoot_above_s": float(np.max(u) - s),
            })
            sims[(alpha, lr)] = (r.time, u, theory)
    return ExperimentResult("closed_form", out, {"sims": sims, "alphas": alphas, "lrs": lrs})


# ----------------------------------------------------------------------------- item 5


def deep(*, layers: int = 4, fast: bool = False, seed: int = 0,
         progress: Progress | None = None) -> ExperimentResult:
    """Item 5: a deep (``layers`` weight layers, width 20) bias-free ReLU net and its linear
    twin trained from a small init (std 0.03) on a rank-one odd teacher (s = 2): stable rank
    ‖W‖_F²/‖W‖₂² of every layer at init, at its minimum along training (and when) and at the
    end, effective rank and positive-mass fraction at the end (6000 steps, lr 0.05). ``fast``
    changes nothing (the run takes a few seconds).
    """
    if not isinstance(layers, (int, np.integer)) or layers < 2:
        raise ValueError(f"deep: expected layers >= 2 weight layers, got {layers!r}")
    bar = progress_callback(progress)
    d, h, L = 10, 20, int(layers)
    x0, _ = symmetric_gaussian(100, d, seed)
    x, y = symmetrize(x0, 2.0 * x0 @ unit_vector(d, seed))
    W = gaussian_init([d] + [h] * (L - 1) + [1], scale=0.03, seed=seed)
    steps = 6000
    out = {"layers": L, "width": h, "init_scale": 0.03, "lr": 0.05, "steps": steps,
           "teacher": "rank one, s = 2", "nets": {}}
    curves = {}
    for name, alpha in bar([("relu", 0.0), ("linear", 1.0)]):
        r = train_network(x, y, W, activation=alpha, lr=0.05, steps=steps,
                          snapshot_every=steps // 60)
        # Stable rank of every layer at every snapshot, once: the figure draws it, the
        # summary keeps its first and last values.
        ranks = [[_stable_rank(s) for s in snaps] for snaps in r.snapshots]
        curves[name] = (r.time[r.snapshot_steps], ranks)
        out["nets"][name] = {
            "final_loss": float(r.loss[-1]),
            "stable_rank_init": [per_layer[0] for per_layer in ranks],
            "stable_rank_final": [per_layer[-1] for per_layer in ranks],
            "stable_rank_min": [min(per_layer) for per_layer in ranks],
            "stable_rank_min_time": [float(curves[name][0][int(np.argmin(per_layer))])
                                     for per_layer in ranks],
            "effective_rank_final": [effective_rank(s[-1]) for s in r.snapshots],
            "positive_mass_fraction_final": [positive_mass_fraction(s[-1]) for s in r.snapshots],
        }
    return ExperimentResult("deep", out, curves)
