"""The experiments behind "bias-free ReLU nets are effectively linear nets" (Zhang, Saxe &
Latham, arXiv 2406.12615), one function per claim, each returning an ``ExperimentResult``:

  ``expressivity``       item 1: the odd part of a two-layer net is linear, W₂W₁x·(1+α)/2, so
                         odd nonlinear targets leave a loss floor (``two_layer_floor``).
  ``equivalence``        item 2: on symmetric data from a mirrored init the leaky-ReLU net is,
                         step for step, the linear net with time t → c·t, c = (1+α)/2.
  ``closed_form``        item 3: its mode strength follows Saxe et al. (2014) with t → c·t.
  ``symmetry_breaking``  item 4: an even part of the target is learned only after a plateau.
  ``deep``               item 5: deep bias-free ReLU nets also learn rank-one weights.
  ``symmetric_ntk``      item 6: the NTK on x ∪ −x splits into odd (A − B) and even (A + B)
                         blocks; a linear net's even block is zero.

The experiments on orthogonal and XOR data, the conserved rank-one structure and large init
are in ``independent_experiments``; ``biasfree_figures.plot`` draws any of them.
``scripts/biasfree_dynamics.py`` is the command line. Every function is deterministic given
``seed``; ``fast=True`` selects the small configuration the test suite and ``all --fast`` use.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ... import datasets
from ...infinite.kernels import infinite_ntk, infinite_ntk_layers
from ...spectrum import conditioning
from ._kit import (
    Progress,
    first_below,
    positive_values,
    progress_callback,
    seed_list,
    symmetric_gaussian,
    unit_vector,
)
from .biasfree import (
    aligned_init,
    effective_rank,
    first_layer_ntk,
    gaussian_init,
    linear_equivalence,
    mirrored_init,
    mode_strength,
    network_apply,
    odd_even_losses,
    odd_even_parts,
    odd_linear_map,
    positive_mass_fraction,
    rank_one_init,
    symmetrize,
    two_layer_floor,
    whiten,
)
from .saxe import (
    discrete_regime,
    saxe_discrete_mode_strength,
    saxe_mode_strength,
    time_rescaling,
)
from .training import train_network, train_network_batch, train_two_layer

__all__ = ["ALPHAS", "ExperimentResult", "expressivity", "equivalence", "closed_form",
           "symmetry_breaking", "deep", "symmetric_ntk"]

ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # leaky slopes α; α = 1 is the linear net


@dataclasses.dataclass(frozen=True)
class ExperimentResult:
    """What one experiment measured.

    Attributes:
      name: the experiment ("equivalence", "closed_form", ...); ``biasfree_figures.plot`` keys
        its figure on it.
      summary: JSON-ready dict of the settings and measured numbers (``summary_<name>.json``).
      curves: the arrays and training runs its figure is drawn from (not JSON).
    """

    name: str
    summary: dict
    curves: dict = dataclasses.field(repr=False, compare=False)


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
    bar = progress_callback(progress)
    x0, _ = symmetric_gaussian(64, 8, seed)
    v, s, u0, T = unit_vector(8, seed), 3.0, 1e-3, 6.0
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


# ----------------------------------------------------------------------------- item 4


def _slope_fixed_effects(X, Z, groups):
    """Common slope of Z on X with one intercept per group (within-group least squares):
    (slope, its standard error, residual degrees of freedom)."""
    xt, zt = X.copy(), Z.copy()
    for g in np.unique(groups):
        sel = groups == g
        xt[sel] -= X[sel].mean()
        zt[sel] -= Z[sel].mean()
    sxx = float(np.sum(xt**2))
    slope = float(np.sum(xt * zt) / sxx)
    dof = len(X) - len(np.unique(groups)) - 1
    resid = zt - slope * xt
    se = float(np.sqrt(np.sum(resid**2) / dof / sxx)) if dof > 0 else float("nan")
    return slope, se, dof


def _plateau_fit(dys, plateaus, draws, rng_seed: int = 0, resamples: int = 2000) -> dict:
    """Fit log plateau = c_seed + p·log(1/Δy) over every (Δy, seed) with a plateau, with one
    intercept per seed (the prefactor varies from draw to draw; the exponent is what is
    claimed): p, its standard error and 95% interval (t-distribution), a bootstrap over seeds
    (resample the seeds with replacement, refit; 2.5–97.5 percentiles), p per seed, the pooled
    fit with one common intercept, local exponents between neighbouring Δy (median over
    seeds), and the log-corrected form plateau·Δy = a + b·log(1/Δy) (b = 0: a pure 1/Δy law;
    per-seed a, common b)."""
    from scipy import stats

    P = np.asarray(plateaus, dtype=float)  # (seeds, dys), nan where no plateau
    inv = 1.0 / np.asarray(dys, dtype=float)
    ok = np.isfinite(P) & (P > 0)
    seed_of = np.broadcast_to(np.arange(len(draws))[:, None], P.shape)
    if ok.sum() < 3 or len(set(np.nonzero(ok)[1])) < 2:
        return {}
    X, Z, G = np.log(np.broadcast_to(inv, P.shape)[ok]), np.log(P[ok]), seed_of[ok]
    p, se, dof = _slope_fixed_effects(X, Z, G)
    tq = float(stats.t.ppf(0.975, dof)) if dof > 0 else float("nan")
    rng = np.random.default_rng(rng_seed)
    boot = []
    for _ in range(resamples):
        pick = rng.integers(0, len(draws), len(draws))
        rows = [(k, b) for k, b in enumerate(pick) if ok[b].sum() >= 2]
        if not rows:
            continue
        Xb = np.concatenate([np.log(inv[ok[b]]) for _, b in rows])
        Zb = np.concatenate([np.log(P[b][ok[b]]) for _, b in rows])
        Gb = np.concatenate([np.full(ok[b].sum(), k) for k, b in rows])
        boot.append(_slope_fixed_effects(Xb, Zb, Gb)[0])
    pooled = stats.linregress(X, Z)
    per_seed = [float(np.polyfit(np.log(inv[row]), np.log(P[b][row]), 1)[0])
                for b, row in enumerate(ok) if row.sum() >= 2]
    local = [[float(np.log(P[b, j + 1] / P[b, j]) / np.log(inv[j + 1] / inv[j]))
              if ok[b, j] and ok[b, j + 1] else None for j in range(len(inv) - 1)]
             for b in range(len(draws))]
    b_corr, b_se, _ = _slope_fixed_effects(X, np.exp(Z) / np.exp(X), G)
    return {
        "points": int(ok.sum()), "model": "log plateau = c_seed + p log(1/dy)",
        "p": p, "p_stderr": se,
        "p_ci95_regression": [p - tq * se, p + tq * se],
        "p_ci95_bootstrap_over_seeds": [float(np.percentile(boot, 2.5)),
                                        float(np.percentile(boot, 97.5))],
        "p_per_seed": {"median": float(np.median(per_seed)), "min": float(np.min(per_seed)),
                       "max": float(np.max(per_seed))} if per_seed else None,
        "pooled_one_intercept": {"p": float(pooled.slope), "p_stderr": float(pooled.stderr),
                                 "A": float(np.exp(pooled.intercept))},
        "local_p_median_between_neighbours": [
            None if not any(v is not None for v in col) else
            float(np.median([v for v in col if v is not None])) for col in zip(*local)],
        "log_corrected": {"form": "plateau * dy = a_seed + b log(1/dy)", "b": b_corr,
                          "b_stderr": b_se},
    }


def symmetry_breaking(*, dys=None, perturbation: str = "shift", init: str = "mirrored",
                      whitened: bool = True, seeds=None, fast: bool = False, seed: int = 0,
                      progress: Progress | None = None) -> ExperimentResult:
    """Item 4: a target y = v·x + (even part of size Δy) is learned in two phases: the odd
    (linear) part at once, the even part after a plateau that lengthens as Δy shrinks (fitted
    plateau ∝ (1/Δy)^p over every (Δy, seed), with its standard error, 95% intervals from the
    regression and from a bootstrap over seeds, p per seed and the local exponents).
    ``perturbation``: "shift" (y(−x) = −y(x) + Δy on the mirrored half) or "abs"
    (y = v·x + Δy|r·x|, r ⟂ v); ``init``: "mirrored" (10 pairs) or "gaussian" (width 20), std
    1e-3; ``dys`` default 0.2, 0.1, 0.05, 0.025, 0.0125 (fast: 0.2, 0.1, 0.05); ``seeds``
    draws (default 5, fast 3: seed, seed + 1, …; each its own data and init). ReLU (α = 0),
    lr 0.2, symmetric Gaussian data (n = 200, d = 6), whitened unless ``whitened=False``.
    """
    if dys is None:
        dys = (0.2, 0.1, 0.05) if fast else (0.2, 0.1, 0.05, 0.025, 0.0125)
    dys = positive_values("symmetry_breaking", "dys", dys)
    if perturbation not in ("shift", "abs") or init not in ("mirrored", "gaussian"):
        raise ValueError("symmetry_breaking: expected perturbation 'shift'|'abs' and init "
                         f"'mirrored'|'gaussian', got {perturbation!r}, {init!r}")
    if not isinstance(whitened, bool):
        raise TypeError(f"symmetry_breaking: expected whitened True or False, got {whitened!r}")
    draws = seed_list("symmetry_breaking", seed, (3 if fast else 5) if seeds is None else seeds)
    bar = progress_callback(progress)
    d = 6
    v = np.eye(d)[0]
    data, inits = [], []
    for sd in draws:
        if whitened:
            x = symmetric_gaussian(100, d, sd)[1]
        else:
            x0 = np.random.default_rng(sd).standard_normal((100, d))
            x = np.concatenate([x0, -x0])
        data.append(x)
        inits.append(mirrored_init(d, 10, scale=1e-3, seed=sd) if init == "mirrored"
                     else gaussian_init([d, 20, 1], scale=1e-3, seed=sd))
    xs = np.stack(data)
    # Even-loss threshold 25%: the units aligned with v fit all but 1 - 2/pi = 36% of the
    # constant even part as soon as the linear part is learned (1 - (2/pi)^2 = 59% of the
    # |r.x| part); bias-free units cannot fit a constant below about 6% on this set; 25% needs
    # new directions, i.e. the mirror symmetry broken.
    lr, level = 0.2, 0.25
    described = {"shift": "y(-x) = -y(x) + dy on the mirrored half (even part dy/2)",
                 "abs": "y = v.x + dy |r.x|, r orthogonal to v (even part dy |r.x|)"}
    out = {"perturbation": described[perturbation], "init": f"{init}, scale 1e-3", "alpha": 0.0,
           "lr": lr, "seeds": draws,
           "data": ("whitened" if whitened else "not whitened") + " symmetric Gaussian, n=200, d=6",
           "definition": "plateau = t(even loss < 25% of initial) - t(odd loss < 1% of initial)",
           "results": []}
    curves = {}
    plateaus = np.full((len(draws), len(dys)), np.nan)
    for j, dy in enumerate(bar(dys)):
        ys = []
        for x in data:
            y = x @ v
            if perturbation == "shift":
                y[len(x) // 2:] += dy
            else:
                y += dy * np.abs(x[:, 1])
            ys.append(y)
        steps = int(np.ceil(150.0 / dy / lr / 2000)) * 2000
        runs = train_network_batch(xs, np.stack(ys), [np.stack([w[i] for w in inits]) for i in range(2)],
                                   activation=0.0, lr=lr, steps=steps, snapshot_every=steps // 2000)
        rows = []
        for b, (x, y, r) in enumerate(zip(data, ys, runs)):
            lo, le = odd_even_losses(r, x, y)
            t = r.time[r.snapshot_steps]
            t_odd, t_even = first_below(t, lo, 0.01 * lo[0]), first_below(t, le, level * le[0])
            plateaus[b, j] = t_even - t_odd
            rows.append({"seed": draws[b], "t_linear_learned": t_odd, "t_even_learned": t_even,
                         "plateau": t_even - t_odd, "final_even_loss_fraction": le[-1] / le[0]})
            if b == 0:
                curves[dy] = (t, lo, le)
        fin = plateaus[:, j][np.isfinite(plateaus[:, j])]
        out["results"].append({
            "dy": dy, "time": steps * lr, "per_seed": rows,
            "plateau_median": float(np.median(fin)) if fin.size else None,
            "plateau_min": float(np.min(fin)) if fin.size else None,
            "plateau_max": float(np.max(fin)) if fin.size else None})
    out["not_left_plateau_within_150/dy"] = [
        [draws[b], dy] for b in range(len(draws)) for j, dy in enumerate(dys)
        if not (np.isfinite(plateaus[b, j]) and plateaus[b, j] > 0)]
    fit = _plateau_fit(dys, plateaus, draws)
    if fit:
        out["fit"] = {"plateau ~ A * (1/dy)^p": fit}
    return ExperimentResult("symmetry_breaking", out, {"losses": curves, "plateaus": plateaus,
                                                         "dys": dys, "level": level})


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


# ----------------------------------------------------------------------------- item 6


def symmetric_ntk(*, fast: bool = False, seed: int = 0,
                  progress: Progress | None = None) -> ExperimentResult:
    """Item 6: the infinite-width NTK K on digits ∪ −digits (depths 1–3; linear, ReLU,
    leaky 0.5). K = [[A, B], [B, A]]: odd functions see A − B, even ones A + B; a linear net's
    even block is zero (rank n/2). Also the cosine between the first-layer gradients of x and
    −x, analytic (``infinite_ntk_layers``) and at width 512 (``first_layer_ntk``): −α-scaled,
    exactly 0 for ReLU.
    """
    bar = progress_callback(progress)
    n_half = 20 if fast else 100
    x, _ = symmetrize(datasets.load("digits").x[:n_half])
    out = {"dataset": "digits with negatives", "n": int(x.shape[0]), "results": []}
    for depth in bar([1, 2, 3]):
        for act in ("linear", "relu", "leaky:0.5"):
            K = infinite_ntk(x, depth=depth, activation=act)
            cond = conditioning(K)
            A, B = K[:n_half, :n_half], K[:n_half, n_half:]
            blocks = {}
            for name, M in (("odd", A - B), ("even", A + B)):
                try:
                    blocks[name] = conditioning(M, rtol=K.shape[0] * np.finfo(float).eps)
                except ValueError:  # the zero block of a linear net
                    blocks[name] = None
            first = infinite_ntk_layers(x, depth=depth, activation=act)[0]
            pair = np.abs(np.diagonal(first[:n_half, n_half:])) / np.diagonal(first)[:n_half]
            out["results"].append({
                "depth": depth, "activation": act, "rank": cond.rank,
                "kappa_eff": cond.kappa_eff, "kappa": cond.kappa,
                "odd_block_kappa_eff": blocks["odd"].kappa_eff if blocks["odd"] else None,
                "even_block_kappa_eff": blocks["even"].kappa_eff if blocks["even"] else None,
                "even_block_rank": blocks["even"].rank if blocks["even"] else 0,
                "first_layer_pair_abs_cos_max": float(np.max(pair))})
    # Finite width: cosine between the first-layer gradients of x and −x (random net, h = 512).
    W1, W2 = gaussian_init([x.shape[1], 512, 1], scale=1.0, seed=seed)
    out["finite_width_first_layer_pair_cos"] = {}
    for act in ("linear", "relu", "leaky:0.5"):
        K1 = first_layer_ntk(W1, W2, x, activation=act)
        cos = np.diagonal(K1[:n_half, n_half:]) / np.diagonal(K1)[:n_half]
        out["finite_width_first_layer_pair_cos"][act] = {"min": float(np.min(cos)),
                                                          "max": float(np.max(cos))}
    return ExperimentResult("ntk", out, {})
