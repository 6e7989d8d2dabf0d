#!/usr/bin/env python3
"""Bias-free ReLU networks as linear networks (Zhang, Saxe & Latham, arXiv 2406.12615).

    python scripts/biasfree_dynamics.py all --fast           # every experiment, small and quick
    python scripts/biasfree_dynamics.py equivalence --dataset digits
    python scripts/biasfree_dynamics.py closed-form --lrs 0.004,0.05,0.2,0.6

Subcommands: expressivity (item 1), equivalence (2), closed-form (3), symmetry-breaking (4),
deep (5), ntk (6); orthogonal, xor, rank-one, large-init (independent linear nets on
orthogonal and XOR data, the conserved rank-one structure, collapse at large init and
learning rate); all. Each writes <name>.png and summary_<name>.json to --out (``all`` also
writes summary.json with every result) and prints the JSON summary.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

import ntkcond  # noqa: E402
from ntkcond import datasets  # noqa: E402
from ntkcond._io import atomic_savefig, atomic_write  # noqa: E402
from ntkcond._cli import run_main

PROG = "biasfree_dynamics"
ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def _floats(text: str, name: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None
    if not values:
        raise ValueError(f"{name}: expected at least one number, got {text!r}")
    return values


def _bar(iterable, args, desc):
    return tqdm(iterable, desc=f"{PROG} {desc}", disable=args.no_progress, leave=False)


def _symmetric_gaussian(n_half: int, d: int, seed: int):
    """Whitened Gaussian inputs with their negatives: (1/n) Σ x xᵀ = I exactly."""
    x0 = ntkcond.whiten(np.random.default_rng(seed).standard_normal((n_half, d)))
    return x0, np.concatenate([x0, -x0])


def _unit(d: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed + 1).standard_normal(d)
    return v / np.linalg.norm(v)


def _with_figure(out: dict, fig, args, name: str) -> dict:
    """Lay out and save ``fig`` as <out>/<name>.png (atomically), close it, record its path."""
    fig.tight_layout()
    out["figure"] = os.path.join(args.out, f"{name}.png")
    atomic_savefig(fig, out["figure"], dpi=120)
    plt.close(fig)
    return out


def _first_below(t, values, level) -> float:
    hit = np.nonzero(values < level)[0]
    return float(t[hit[0]]) if hit.size else float("nan")


# ----------------------------------------------------------------------------- item 1


def expressivity(args, bar) -> dict:
    rng = np.random.default_rng(args.seed)
    # (a) the odd part of any two-layer net is c·W2W1 x: random nets, then a trained one.
    x = rng.standard_normal((200, 5))
    odd_dev = {}
    for alpha in ALPHAS:
        W1, W2 = rng.standard_normal((16, 5)), rng.standard_normal((2, 16))
        odd, _ = ntkcond.odd_even_parts(lambda z: ntkcond.network_apply([W1, W2], z, alpha), x)
        M = ntkcond.odd_linear_map(W1, W2, alpha)
        odd_dev[f"{alpha:g}"] = float(np.max(np.abs(odd - x @ M.T)) / np.max(np.abs(odd)))
    y_any = np.sin(x[:, :1]) + x[:, 1:2] ** 2  # no symmetry at all
    trained = ntkcond.train_two_layer(x, y_any, *ntkcond.gaussian_init([5, 16, 1], scale=0.3,
                                      seed=args.seed), activation=0.0, lr=0.05, steps=300)
    odd, _ = ntkcond.odd_even_parts(lambda z: ntkcond.network_apply(trained.weights, z, 0.0), x)
    M = ntkcond.odd_linear_map(*trained.weights, 0.0)
    trained_dev = float(np.max(np.abs(odd - x @ M.T)) / np.max(np.abs(odd)))

    # (b) loss floors on a symmetric Gaussian sample in d = 3.
    n_half = 200 if args.fast else 1000
    x0 = rng.standard_normal((n_half, 3))
    xs = np.concatenate([x0, -x0])
    big = rng.standard_normal((10**5 if args.fast else 10**6, 3))
    targets = {"x1*x2*x3": lambda z: z[:, 0] * z[:, 1] * z[:, 2],
               "median(x1,x2,x3)": lambda z: np.median(z[:, :3], axis=1)}
    widths = (4, 16) if args.fast else (4, 16, 64)
    steps2 = 1000 if args.fast else 4000
    steps3, width3 = (1500, 32) if args.fast else (5000, 64)
    floors, curves = {}, {}
    for name, fn in bar(list(targets.items())):
        y = fn(xs)
        yb = fn(big)
        beta, *_ = np.linalg.lstsq(big, yb, rcond=None)
        entry = {"predicted_floor_sample": ntkcond.two_layer_floor(xs, y),
                 "predicted_floor_population_mc": float(0.5 * np.mean((yb - big @ beta) ** 2)),
                 "two_layer": {}, "three_layer": {}}
        for h in widths:
            lr = 0.1 * min(1.0, 16 / h)
            W = ntkcond.gaussian_init([3, h, 1], scale=1.0, seed=args.seed + h)
            W = [W[0] * np.sqrt(2 / 3), W[1] / np.sqrt(h)]
            r = ntkcond.train_network(xs, y, W, activation=0.0, lr=lr,
                                      steps=steps2 * max(1, h // 16))
            entry["two_layer"][str(h)] = float(r.loss[-1])
            curves[(name, f"2-layer h={h}")] = r
        W = ntkcond.gaussian_init([3, width3, width3, 1], scale=1.0, seed=args.seed)
        W = [W[0] * np.sqrt(2 / 3), W[1] * np.sqrt(2 / width3), W[2] / np.sqrt(width3)]
        r = ntkcond.train_network(xs, y, W, activation=0.0, lr=0.05, steps=steps3)
        entry["three_layer"][str(width3)] = float(r.loss[-1])
        curves[(name, f"3-layer h={width3}")] = r
        entry["two_layer_min_over_floor"] = min(entry["two_layer"].values()) / entry["predicted_floor_sample"]
        entry["three_layer_over_floor"] = float(r.loss[-1]) / entry["predicted_floor_sample"]
        floors[name] = entry

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, name in zip(axes, targets):
        for (tname, label), r in curves.items():
            if tname == name:
                ax.semilogy(np.arange(len(r.loss)), r.loss, label=label)
        ax.axhline(floors[name]["predicted_floor_sample"], color="k", ls="--",
                   label="two-layer floor, eq. (2)")
        ax.set(title=f"target {name}", xlabel="GD step", ylabel="loss")
        ax.legend(fontsize=7)
    fig.suptitle("Two-layer bias-free ReLU nets cannot fit odd nonlinear targets")
    out = {"odd_part_max_rel_dev_random": odd_dev, "odd_part_max_rel_dev_trained": trained_dev,
           "floors": floors}
    return _with_figure(out, fig, args, "expressivity")


# ----------------------------------------------------------------------------- item 2


def _equivalence_data(args):
    if args.dataset == "digits":
        ds = datasets.load("digits")
        x0 = ntkcond.whiten(ds.x[: (100 if args.fast else 300)])
    else:
        x0, _ = _symmetric_gaussian(32 if args.fast else 128, 8, args.seed)
    v = _unit(x0.shape[1], args.seed)
    x, y = ntkcond.symmetrize(x0, args.strength * x0 @ v)
    return x, y


def equivalence(args, bar) -> dict:
    x, y = _equivalence_data(args)
    d = x.shape[1]
    W1, W2 = ntkcond.mirrored_init(d, 4, scale=args.init_scale, seed=args.seed)
    T, lr = args.time, args.lr
    out = {"dataset": args.dataset, "n": int(x.shape[0]), "d": int(d), "lr": lr,
           "time": T, "strength": args.strength, "init_scale": args.init_scale}
    curves = {}
    for loss in ("square", "logistic"):
        yy = y if loss == "square" else np.sign(y)
        exact, same_lr, lr_over_c = {}, {}, {}
        for alpha in bar(ALPHAS):
            c = ntkcond.time_rescaling(alpha)
            # The ReLU net from W0/√c is the linear net from W0 (at rate cη): one linear curve.
            steps = int(round(T / (c * lr)))
            eq = ntkcond.linear_equivalence(x, yy, W1 / np.sqrt(c), W2 / np.sqrt(c),
                                            activation=alpha, lr=lr, steps=steps,
                                            loss=loss, snapshot_every=steps)
            exact[f"{alpha:g}"] = {"loss_dev": eq.loss_deviation,
                                   "weight_dev": eq.weight_deviation}
            curves[(loss, alpha)] = eq.relu
            # Same discrete sequence for every α: rate η/c from W0/√c ↔ linear at rate η from W0.
            r = ntkcond.train_two_layer(x, yy, W1 / np.sqrt(c), W2 / np.sqrt(c),
                                        activation=alpha, lr=lr / c,
                                        steps=int(round(T / lr)), loss=loss)
            lr_over_c[alpha] = r.loss
        ref = curves[(loss, 1.0)]
        for alpha in ALPHAS:
            r = curves[(loss, alpha)]
            c = ntkcond.time_rescaling(alpha)
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
             "gaussian": tuple(ntkcond.gaussian_init([d, h, 1], scale=args.init_scale, seed=args.seed)),
             "rank_one": ntkcond.rank_one_init(d, h, scale=args.init_scale, seed=args.seed)}
    steps = int(round(T / (0.5 * lr)))
    for name, (A, B) in bar(list(inits.items())):
        eq = ntkcond.linear_equivalence(x, y, A, B, activation=0.0, lr=lr, steps=steps,
                                        snapshot_every=steps)
        broken[name] = {"loss_dev": eq.loss_deviation, "weight_dev": eq.weight_deviation,
                        "mirrored": eq.mirrored}
        curves[("init", name)] = eq
    out["relu_vs_linear_by_init"] = broken
    # A planted asymmetry: one input moved off its mirror by 1e-2.
    xp = x.copy()
    xp[-1] += 1e-2
    eq = ntkcond.linear_equivalence(xp, y, W1, W2, activation=0.0, lr=lr, steps=steps,
                                    snapshot_every=steps)
    out["planted_asymmetry"] = {"shift": 1e-2, "loss_dev": eq.loss_deviation,
                                "weight_dev": eq.weight_deviation}

    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    cmap = plt.get_cmap("viridis")
    for alpha in ALPHAS:
        r, c = curves[("square", alpha)], ntkcond.time_rescaling(alpha)
        axes[0].plot(r.time, r.loss, color=cmap(alpha), label=f"α={alpha:g}")
        axes[1].plot(c * r.time, r.loss, color=cmap(alpha), lw=3 - 2 * alpha)
        rl = curves[("logistic", alpha)]
        axes[2].plot(c * rl.time, rl.loss, color=cmap(alpha), lw=3 - 2 * alpha)
    axes[0].set(title="square loss vs t", xlabel="t = step·lr", ylabel="loss")
    axes[1].set(title=f"square loss vs c·t (max dev {out['square']['collapse_same_lr_max_dev']:.1e})",
                xlabel="c·t")
    axes[2].set(title=f"logistic loss vs c·t (max dev {out['logistic']['collapse_same_lr_max_dev']:.1e})",
                xlabel="c·t")
    axes[0].legend(fontsize=7)
    for name in inits:
        eq = curves[("init", name)]
        line, = axes[3].plot(eq.relu.time * eq.c, eq.relu.loss, label=f"ReLU, {name} init")
        axes[3].plot(eq.linear.time, eq.linear.loss, ls=":", color=line.get_color(),
                     label=f"linear equiv. ({broken[name]['loss_dev']:.1e})")
    axes[3].set(title="ReLU (α=0) vs its linear net", xlabel="c·t")
    axes[3].legend(fontsize=6)
    fig.suptitle(f"Mirrored init, symmetric data ({args.dataset}): leaky-ReLU = linear with t → c·t")
    return _with_figure(out, fig, args, "equivalence")


# ----------------------------------------------------------------------------- item 3


def closed_form(args, bar) -> dict:
    x0, _ = _symmetric_gaussian(64, 8, args.seed)
    v, s, u0, T = _unit(8, args.seed), 3.0, 1e-3, 6.0
    x, y = ntkcond.symmetrize(x0, s * x0 @ v)
    lrs = _floats(args.lrs, "--lrs")
    alphas = (0.0, 0.5, 1.0) if args.fast else ALPHAS
    out = {"s": s, "u0": u0, "time": T, "results": []}
    sims = {}
    for alpha in bar(alphas):
        c = ntkcond.time_rescaling(alpha)
        W1, W2 = ntkcond.aligned_init(np.ones(1), v, u0=u0, activation=alpha, pairs=4,
                                      seed=args.seed)
        for lr in lrs:
            steps = int(round(T / lr))
            r = ntkcond.train_two_layer(x, y, W1, W2, activation=alpha, lr=lr, steps=steps,
                                        snapshot_every=1)
            u = np.array([ntkcond.mode_strength(a, b, np.ones(1), v, alpha)
                          for a, b in zip(*r.snapshots)])
            theory = ntkcond.saxe_mode_strength(r.time, s=s, u0=u0, c=c)
            discrete = ntkcond.saxe_discrete_mode_strength(steps, s=s, u0=u0, c=c, lr=lr)
            out["results"].append({
                "alpha": alpha, "c": c, "lr": lr, "lr*c*s": lr * c * s,
                "regime": ntkcond.discrete_regime(lr=lr, s=s, c=c),
                "max_rel_err_vs_closed_form": float(np.max(np.abs(u - theory)) / s),
                "max_rel_err_vs_discrete_map": float(np.max(np.abs(u - discrete)) / s),
                "final_abs_err": float(abs(u[-1] - s)),
                "overshoot_above_s": float(np.max(u) - s),
            })
            sims[(alpha, lr)] = (r.time, u, theory)
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for ax, lr in zip(axes[:2], (min(lrs), max(lrs))):
        for alpha in alphas:
            t, u, th = sims[(alpha, lr)]
            line, = ax.plot(t, u, lw=1, marker="." if lr > 0.1 else None, label=f"α={alpha:g} sim")
            tt = np.linspace(0, T, 400)
            ax.plot(tt, ntkcond.saxe_mode_strength(tt, s=s, u0=u0, c=ntkcond.time_rescaling(alpha)),
                    ls="--", color=line.get_color())
        ax.set(title=f"lr = {lr:g} (dashed: closed form)", xlabel="t = step·lr",
               ylabel="mode strength u", ylim=(0, 1.6 * s))
        ax.legend(fontsize=7)
    for alpha in alphas:
        rows = [e for e in out["results"] if e["alpha"] == alpha]
        axes[2].loglog([e["lr"] for e in rows], [e["max_rel_err_vs_closed_form"] for e in rows],
                       marker="o", label=f"α={alpha:g}")
    axes[2].set(title="max |u − u_theory| / s", xlabel="learning rate")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"Saxe closed form with t → c·t, whitened data, s={s:g}, u0={u0:g}")
    return _with_figure(out, fig, args, "closed_form")


# ----------------------------------------------------------------------------- item 4


def symmetry_breaking(args, bar) -> dict:
    d = 6
    x0, x = _symmetric_gaussian(100, d, args.seed)
    v = np.eye(d)[0]
    dys = _floats(args.dys, "--dys")
    if min(dys) <= 0:
        raise ValueError(f"--dys: expected positive perturbations, got {args.dys!r}")
    if args.init == "mirrored":
        W1, W2 = ntkcond.mirrored_init(d, 10, scale=1e-3, seed=args.seed)
    else:
        W1, W2 = ntkcond.gaussian_init([d, 20, 1], scale=1e-3, seed=args.seed)
    # Even-loss threshold 25%: the units aligned with v fit all but 1 - 2/pi = 36% of the
    # constant even part as soon as the linear part is learned (1 - (2/pi)^2 = 59% of the
    # |r.x| part); bias-free units cannot fit a constant below about 6% on this set; 25% needs
    # new directions, i.e. the mirror symmetry broken.
    lr, level = 0.2, 0.25
    perturbation = {"shift": "y(-x) = -y(x) + dy on the mirrored half (even part dy/2)",
                    "abs": "y = v.x + dy |r.x|, r orthogonal to v (even part dy |r.x|)"}
    out = {"perturbation": perturbation[args.perturbation],
           "init": f"{args.init}, scale 1e-3", "alpha": 0.0, "lr": lr,
           "definition": "plateau = t(even loss < 25% of initial) - t(odd loss < 1% of initial)",
           "results": []}
    curves = {}
    for dy in bar(dys):
        y = x @ v
        if args.perturbation == "shift":
            y[len(x0):] += dy
        else:
            y += dy * np.abs(x[:, 1])
        steps = int(np.ceil(150.0 / dy / lr / 2000)) * 2000
        r = ntkcond.train_two_layer(x, y, W1, W2, activation=0.0, lr=lr, steps=steps,
                                    snapshot_every=steps // 2000)
        lo, le = ntkcond.odd_even_losses(r, x, y)
        t = r.time[r.snapshot_steps]
        t_odd, t_even = _first_below(t, lo, 0.01 * lo[0]), _first_below(t, le, level * le[0])
        out["results"].append({"dy": dy, "t_linear_learned": t_odd, "t_even_learned": t_even,
                               "plateau": t_even - t_odd, "final_even_loss_fraction": le[-1] / le[0]})
        curves[dy] = (r, t, lo, le)
    ok = [e for e in out["results"] if np.isfinite(e["plateau"]) and e["plateau"] > 0]
    out["not_left_plateau_within_150/dy"] = [e["dy"] for e in out["results"] if e not in ok]
    if len(ok) >= 2:
        slope, icpt = np.polyfit(np.log([1 / e["dy"] for e in ok]), np.log([e["plateau"] for e in ok]), 1)
        out["fit"] = {"plateau ~ A * (1/dy)^p": {"p": float(slope), "A": float(np.exp(icpt))}}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for dy, (r, t, lo, le) in curves.items():
        line, = axes[0].loglog(t[1:], le[1:] / le[0], label=f"even part, Δy={dy:g}")
        axes[0].loglog(t[1:], lo[1:] / lo[0], ls=":", color=line.get_color())
    axes[0].axhline(level, color="k", lw=0.8, ls="--")
    axes[0].set(title="odd (dotted) then even (solid) part learned", xlabel="t",
                ylabel="loss part / its initial value", ylim=(1e-3, 2))
    axes[0].legend(fontsize=7)
    if "fit" in out:
        inv = np.array([1 / e["dy"] for e in ok])
        axes[1].loglog(inv, [e["plateau"] for e in ok], "o", label="measured")
        p = out["fit"]["plateau ~ A * (1/dy)^p"]
        axes[1].loglog(inv, p["A"] * inv ** p["p"], "--", label=f"fit ∝ (1/Δy)^{p['p']:.2f}")
        axes[1].legend()
    axes[1].set(title="plateau duration", xlabel="1/Δy", ylabel="plateau (time)")
    return _with_figure(out, fig, args, "symmetry_breaking")


# ----------------------------------------------------------------------------- item 5


def _stable_rank(W) -> float:
    return float(np.sum(W**2) / np.linalg.norm(W, 2) ** 2)


def deep(args, bar) -> dict:
    d, h, L = 10, 20, args.layers
    x0, _ = _symmetric_gaussian(100, d, args.seed)
    x, y = ntkcond.symmetrize(x0, 2.0 * x0 @ _unit(d, args.seed))
    W = ntkcond.gaussian_init([d] + [h] * (L - 1) + [1], scale=0.03, seed=args.seed)
    steps = 6000
    out = {"layers": L, "width": h, "init_scale": 0.03, "lr": 0.05, "steps": steps,
           "teacher": "rank one, s = 2", "nets": {}}
    runs = {}
    for name, alpha in bar([("relu", 0.0), ("linear", 1.0)]):
        r = ntkcond.train_network(x, y, W, activation=alpha, lr=0.05, steps=steps,
                                  snapshot_every=steps // 60)
        runs[name] = r
        out["nets"][name] = {
            "final_loss": float(r.loss[-1]),
            "stable_rank_init": [_stable_rank(s[0]) for s in r.snapshots],
            "stable_rank_final": [_stable_rank(s[-1]) for s in r.snapshots],
            "effective_rank_final": [ntkcond.effective_rank(s[-1]) for s in r.snapshots],
            "positive_mass_fraction_final": [ntkcond.positive_mass_fraction(s[-1]) for s in r.snapshots],
        }
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (name, r) in zip(axes, runs.items()):
        t = r.time[r.snapshot_steps]
        for layer, snaps in enumerate(r.snapshots):
            ax.plot(t, [_stable_rank(s) for s in snaps], label=f"W{layer + 1}")
        ax.set(title=f"{name}: stable rank ‖W‖F²/‖W‖2²", xlabel="t", yscale="log")
        ax.legend(fontsize=7)
    return _with_figure(out, fig, args, "deep")


# ----------------------------------------------------------------------------- item 6


def ntk(args, bar) -> dict:
    ds = datasets.load("digits")
    n_half = 20 if args.fast else 100
    x, _ = ntkcond.symmetrize(ds.x[:n_half])
    out = {"dataset": "digits with negatives", "n": int(x.shape[0]), "results": []}
    for depth in bar([1, 2, 3]):
        for act in ("linear", "relu", "leaky:0.5"):
            K = ntkcond.infinite_ntk(x, depth=depth, activation=act)
            cond = ntkcond.conditioning(K)
            # K = [[A, B], [B, A]] on x ∪ −x: odd functions see A − B, even ones A + B.
            A, B = K[:n_half, :n_half], K[:n_half, n_half:]
            blocks = {}
            for name, M in (("odd", A - B), ("even", A + B)):
                try:
                    blocks[name] = ntkcond.conditioning(M, rtol=K.shape[0] * np.finfo(float).eps)
                except ValueError:  # the zero block of a linear net
                    blocks[name] = None
            first = ntkcond.infinite_ntk_layers(x, depth=depth, activation=act)[0]
            pair = np.abs(np.diagonal(first[:n_half, n_half:])) / np.diagonal(first)[:n_half]
            out["results"].append({
                "depth": depth, "activation": act, "rank": cond.rank,
                "kappa_eff": cond.kappa_eff, "kappa": cond.kappa,
                "odd_block_kappa_eff": blocks["odd"].kappa_eff if blocks["odd"] else None,
                "even_block_kappa_eff": blocks["even"].kappa_eff if blocks["even"] else None,
                "even_block_rank": blocks["even"].rank if blocks["even"] else 0,
                "first_layer_pair_abs_cos_max": float(np.max(pair))})
    # Finite width: cosine between the first-layer gradients of x and −x (random net, h = 512).
    W1, W2 = ntkcond.gaussian_init([x.shape[1], 512, 1], scale=1.0, seed=args.seed)
    out["finite_width_first_layer_pair_cos"] = {}
    for act in ("linear", "relu", "leaky:0.5"):
        K1 = ntkcond.first_layer_ntk(W1, W2, x, activation=act)
        cos = np.diagonal(K1[:n_half, n_half:]) / np.diagonal(K1)[:n_half]
        out["finite_width_first_layer_pair_cos"][act] = {"min": float(np.min(cos)),
                                                          "max": float(np.max(cos))}
    fig, ax = plt.subplots(figsize=(5, 3.8))
    for act in ("linear", "relu", "leaky:0.5"):
        rows = [e for e in out["results"] if e["activation"] == act]
        ax.semilogy([e["depth"] for e in rows], [e["kappa_eff"] for e in rows], "o-",
                    label=f"{act} (rank {rows[0]['rank']}/{x.shape[0]})")
    ax.set(title="κ_eff of the NTK on x ∪ −x (digits)", xlabel="depth L", ylabel="κ_eff")
    ax.legend(fontsize=7)
    return _with_figure(out, fig, args, "ntk")


# ----------------------------------------------------------------------------- issue 8: orthogonal


def _orthogonal_set(n: int, args, rng, groups=None):
    """n pairwise orthogonal inputs with norms ∝ n (so r = ρ/n = O(1)) and targets ±U(0.5, 2).

    basis: scaled standard basis vectors in R^{n+2}; digits: the first n digits images,
    orthogonalised (Löwdin) and rescaled. Points of one group share a norm and a target sign.
    """
    groups = groups or [[i] for i in range(n)]
    norm, sign = np.empty(n), np.empty(n)
    for g in groups:
        norm[g] = n * rng.uniform(0.5, 1.5) / 2
        sign[g] = rng.choice([-1.0, 1.0])
    if args.ortho_data == "digits":
        x = ntkcond.orthogonalize(datasets.load("digits").x[:n])
    else:
        x = np.eye(n, n + 2)
    x = x / np.linalg.norm(x, axis=1, keepdims=True) * norm[:, None]
    return x, sign * rng.uniform(0.5, 2.0, n)


def _group_outputs(result, x, y, groups, alpha):
    """(G, S+1) output strengths m_G = <f_G, y_G>/||y_G|| at the snapshots."""
    y = y.reshape(len(x), -1)
    out = []
    for i in range(len(result.snapshot_steps)):
        f = ntkcond.network_apply([s[i] for s in result.snapshots], x, alpha)
        out.append([np.sum(f[list(g)] * y[list(g)]) / np.linalg.norm(y[list(g)]) for g in groups])
    return np.array(out).T


def orthogonal(args, bar) -> dict:
    rng = np.random.default_rng(args.seed)
    sizes = [int(v) for v in _floats(args.sizes, "--sizes")]
    if min(sizes) < 1 or (args.ortho_data == "digits" and max(sizes) > 64):
        raise ValueError(f"--sizes: expected data sizes in 1..64, got {args.sizes!r}")
    lr = 0.01
    configs = [(n, None) for n in sizes] + [(4, [[0, 1], [2, 3]])]
    out = {"data": args.ortho_data, "lr": lr, "init": "orthogonal_init, 2 units/group, scale 1e-3",
           "tolerance_note": "flow error is O(lr): halving lr halves it; discrete-map error is round-off",
           "results": []}
    runs = []
    for n, groups in bar(configs):
        x, y = _orthogonal_set(n, args, rng, groups)
        W1, W2 = ntkcond.orthogonal_init(x, y, groups=groups, units=2, scale=1e-3, seed=args.seed)
        nets = ntkcond.orthogonal_nets(x, y, W1, W2, groups=groups)
        T = 1.3 * float(np.max(nets.learning_times(0.99)))
        entry = {"n": n, "groups": [list(g) for g in nets.groups],
                 "max_abs_cos": ntkcond.max_abs_cosine(x), "time": T}
        for eta in (lr, lr / 2):
            steps = int(np.ceil(T / eta / 200)) * 200
            r = ntkcond.train_two_layer(x, y, W1, W2, activation=0.0, lr=eta, steps=steps,
                                        snapshot_every=steps // 200)
            pred, disc = nets.loss(r.time), nets.discrete_loss(steps, eta)
            key = "lr" if eta == lr else "lr/2"
            entry[f"max_rel_err_vs_flow_prediction[{key}]"] = float(np.max(np.abs(r.loss - pred)) / r.loss[0])
            entry[f"max_rel_err_vs_discrete_map[{key}]"] = float(np.max(np.abs(r.loss - disc)) / r.loss[0])
            if eta == lr:
                m = _group_outputs(r, x, y, nets.groups, 0.0)
                ts = r.time[r.snapshot_steps]
                measured = [_first_below(ts, -m_g, -0.5 * Y) for m_g, Y in zip(m, nets.target)]
                entry["plateau_end_predicted"] = nets.learning_times(0.5).tolist()
                entry["plateau_end_measured"] = measured
                entry["plateau_end_max_abs_diff"] = float(np.max(np.abs(
                    np.array(measured) - nets.learning_times(0.5))))
                entry["snapshot_resolution"] = float(ts[1] - ts[0])
                runs.append((entry, r, nets))
        out["results"].append(entry)
    fig, axes = plt.subplots(1, len(runs), figsize=(3.6 * len(runs), 3.4))
    for ax, (entry, r, nets) in zip(np.atleast_1d(axes), runs):
        ax.semilogy(r.time, r.loss, lw=2.5, color="0.7", label="simulation")
        ax.semilogy(r.time, nets.loss(r.time), "k--", lw=1, label="Σ independent Saxe curves")
        for tg in nets.learning_times(0.5):
            ax.axvline(tg, color="C1", lw=0.6, ls=":")
        title = f"n = {entry['n']}" + ("" if len(nets.groups) == entry["n"] else
                                       f", {len(nets.groups)} groups")
        ax.set(title=f"{title} (err {entry['max_rel_err_vs_flow_prediction[lr]']:.1e})",
               xlabel="t = step·lr", ylim=(1e-6 * r.loss[0], 2 * r.loss[0]))
    np.atleast_1d(axes)[0].set_ylabel("loss")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle(f"ReLU net on orthogonal inputs ({args.ortho_data}): independent linear nets; "
                 "dotted: predicted plateau ends")
    return _with_figure(out, fig, args, "orthogonal")


# ----------------------------------------------------------------------------- issue 8: XOR


def xor(args, bar) -> dict:
    alphas = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
    lr, T = 0.01, 40.0
    steps = int(round(T / lr))
    out = {"lr": lr, "time": T, "init_pair": "pair_init, 2 pairs/direction, scale 1e-2",
           "init_generic": "gaussian_init width 20, scale 1e-2", "exact": {}, "generic": {}}
    curves = {}
    for name, d in (("d=2", 2), ("d=10 embedded", 10)):
        x, y = ntkcond.xor_data(d=d, seed=args.seed)
        W1, W2 = ntkcond.pair_init(x, y, pairs=2, scale=1e-2, seed=args.seed)
        rows = {}
        for alpha in bar(alphas):
            nets = ntkcond.pair_nets(x, y, W1, W2, activation=alpha)
            r = ntkcond.train_two_layer(x, y, W1, W2, activation=alpha, lr=lr, steps=steps)
            rows[f"{alpha:g}"] = {
                "max_rel_err_vs_flow_prediction": float(np.max(np.abs(r.loss - nets.loss(r.time))) / r.loss[0]),
                "max_rel_err_vs_discrete_map": float(np.max(np.abs(r.loss - nets.discrete_loss(steps, lr))) / r.loss[0]),
                "predicted_half_time": float(np.max(nets.learning_times(0.5))),
                "final_loss": float(r.loss[-1]), "final_loss_predicted": float(nets.loss(T)[0])}
            curves[(name, alpha)] = (r, nets)
        out["exact"][name] = rows
    # Generic small init: features align with ±(e1+e2), ±(e1-e2); alpha -> 1 kills the fit.
    feats = {}
    for name, kw in (("d=2", dict(d=2)), ("d=10 noisy x5", dict(d=10, noise=0.1, copies=5))):
        x, y = ntkcond.xor_data(seed=args.seed, **kw)
        dirs = ntkcond.xor_data(d=kw["d"], seed=args.seed)[0][:2]
        W = ntkcond.gaussian_init([x.shape[1], 20, 1], scale=1e-2, seed=args.seed)
        rows = {}
        for alpha in bar(alphas):
            r = ntkcond.train_network(x, y, W, activation=alpha, lr=lr, steps=steps)
            W1, W2 = r.weights
            al = ntkcond.feature_alignment(W1, dirs)
            norm = np.linalg.norm(W1, axis=1)
            big = norm >= 0.1 * norm.max()
            along_p = np.abs(W1 @ dirs[0]) >= np.abs(W1 @ dirs[1])
            rows[f"{alpha:g}"] = {
                "final_loss": float(r.loss[-1]), "initial_loss": float(r.loss[0]),
                "alignment_norm_weighted": float(np.sum(al * norm) / np.sum(norm)),
                "alignment_min_large_units": float(np.min(al[big])),
                "large_units_with_a>0_along_p(y=+1)": float(np.mean(along_p[big & (W2[0] > 0)]))
                if np.any(big & (W2[0] > 0)) else None,
                "large_units_with_a<0_along_q(y=-1)": float(np.mean(~along_p[big & (W2[0] < 0)]))
                if np.any(big & (W2[0] < 0)) else None}
            if alpha == 0.0:
                feats[name] = (W, W1, x, dirs)
        out["generic"][name] = rows
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    cmap = plt.get_cmap("viridis")
    for alpha in alphas:
        r, nets = curves[("d=2", alpha)]
        axes[0].plot(r.time, r.loss, color=cmap(alpha), lw=2.5, alpha=0.5)
        axes[0].plot(r.time, nets.loss(r.time), color=cmap(alpha), ls="--", lw=1, label=f"α={alpha:g}")
    axes[0].set(title="pair init: simulation (thick), Σ Saxe (dashed)", xlabel="t",
                ylabel="loss")
    axes[0].legend(fontsize=7)
    W0, W1, x, dirs = feats["d=2"]
    axes[1].scatter(*x[:, :2].T, c=["C0" if v > 0 else "C3" for v in ntkcond.xor_data()[1]], s=80,
                    zorder=3)
    scale = np.max(np.abs(W1))
    for w0, w in zip(W0[0], W1):
        axes[1].annotate("", xy=w[:2] / scale, xytext=(0, 0), arrowprops=dict(arrowstyle="->", lw=0.8))
    axes[1].set(title="learned rows of W₁ (α=0, generic init)",
                aspect="equal", xlim=(-1.3, 1.3), ylim=(-1.3, 1.3))
    a_list = np.array(alphas)
    gen = [out["generic"]["d=2"][f"{a:g}"]["final_loss"] for a in alphas]
    axes[2].plot(a_list, gen, "o-", label=f"final loss at t={T:g} (generic init)")
    axes[2].plot(a_list, [out["exact"]["d=2"][f"{a:g}"]["final_loss"] for a in alphas], "s--",
                 label="final loss (pair init)")
    axes[2].axhline(0.5, color="k", lw=0.6, ls=":", label="loss of f = 0 (½)")
    axes[2].set(title="α → 1: the even part (1−α)/2·W₂|W₁x| vanishes", xlabel="α",
                yscale="log")
    axes[2].legend(fontsize=7)
    fig.suptitle("XOR (blue: y = +1, red: y = −1): independent linear nets, one per pair ±v")
    return _with_figure(out, fig, args, "xor")


# ----------------------------------------------------------------------------- issue 8: rank one


def rank_one(args, bar) -> dict:
    d, h, T = 5, 8, 6.0
    x0, x = _symmetric_gaussian(20, d, args.seed)
    v = _unit(d, args.seed)
    y = 2.0 * x @ v
    W1, W2 = ntkcond.rank_one_init(d, h, scale=0.1, seed=1)
    if np.all(W2 > 0) or np.all(W2 < 0):
        raise ValueError("rank-one: expected mixed signs in W2 for this seed, got one sign")
    out = {"setting": "whitened symmetric Gaussian (n=40, d=5), odd teacher y = 2 v.x, "
                      "rank_one_init h=8 scale 0.1 (mixed signs)", "time": T, "cases": {}}
    traces = {}

    def case(name, xx, yy, A, B, alpha, lr, method):
        steps = int(round(T / lr))
        every = max(1, steps // 100)
        steps = every * (steps // every)
        tr = ntkcond.track_rank_one(xx, yy, A, B, activation=alpha, lr=lr, steps=steps,
                                    snapshot_every=every, method=method)
        out["cases"][name] = {"alpha": alpha, "lr": lr, "method": method,
                              "initial_deviation": float(tr.deviation[0]),
                              "max_deviation": tr.max_deviation,
                              "final_deviation": float(tr.deviation[-1]),
                              "max_balance_deviation": float(np.max(tr.balance)),
                              "r_rotation_deg": tr.rotation_deg,
                              "breaking_term_at_init": ntkcond.rank_one_breaking(xx, yy, A, B, activation=alpha),
                              "final_loss_over_initial": float(tr.result.loss[-1] / tr.result.loss[0])}
        traces[name] = tr

    jobs = []
    dts = (0.02, 0.01) if args.fast else (0.02, 0.01, 0.005)
    for alpha in (0.0, 0.5):
        for dt in dts:
            jobs.append((f"flow rk4 dt={dt:g} α={alpha:g}", x, y, W1, W2, alpha, dt, "rk4"))
    lrs = (0.1, 0.03, 0.01) if args.fast else (0.1, 0.03, 0.01, 0.003)
    for lr in lrs:
        jobs.append((f"GD lr={lr:g} α=0", x, y, W1, W2, 0.0, lr, "gd"))
    P1, P2 = ntkcond.rank_one_init(d, h, scale=0.1, seed=1)
    P2 = np.abs(P2)
    jobs.append(("GD lr=0.1 α=0, all a_i > 0", x, y, P2.T @ ntkcond.rank_one_direction(P1, P2)[None], P2, 0.0, 0.1, "gd"))
    rng = np.random.default_rng(args.seed)
    xa = x.copy()
    xa[-1] += 0.1
    Wb = W1 + 1e-6 * rng.standard_normal(W1.shape)
    xs, _ = ntkcond.symmetrize(x0 * np.linspace(0.5, 1.5, d))
    jobs += [("planted: init broken by 1e-6", x, y, Wb, W2, 0.0, 0.01, "rk4"),
             ("planted: asymmetric data (one x shifted 0.1)", xa, y, W1, W2, 0.0, 0.01, "rk4"),
             ("planted: even target part (y + 0.5)", x, y + 0.5, W1, W2, 0.0, 0.01, "rk4"),
             ("planted: non-whitened inputs", xs, 2.0 * xs @ v, W1, W2, 0.0, 0.01, "rk4")]
    for job in bar(jobs):
        case(*job)
    gd = [out["cases"][f"GD lr={lr:g} α=0"]["max_deviation"] for lr in lrs]
    slope = np.polyfit(np.log(lrs), np.log(gd), 1)[0]
    out["gd_deviation_vs_lr_loglog_slope"] = float(slope)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, tr in traces.items():
        ls = "--" if name.startswith("planted") else "-"
        axes[0].semilogy(tr.time, np.maximum(tr.deviation, 1e-18), ls=ls, label=name)
    axes[0].set(title="‖W₁ − W₂ᵀrᵀ‖/‖W₁‖ (best r) during training", xlabel="t", ylim=(1e-18, 1))
    axes[0].legend(fontsize=6)
    axes[1].loglog(lrs, gd, "o-", label=f"GD (slope {slope:.2f})")
    for alpha in (0.0, 0.5):
        axes[1].loglog(dts, [out["cases"][f"flow rk4 dt={dt:g} α={alpha:g}"]["max_deviation"]
                             for dt in dts], "s-", label=f"RK4 flow α={alpha:g}")
    axes[1].set(title="max deviation vs step size", xlabel="lr / dt")
    axes[1].legend(fontsize=7)
    return _with_figure(out, fig, args, "rank_one")


# ----------------------------------------------------------------------------- issue 8: large init


COLLAPSE_OK = 0.05  # collapse error below 5% of the target energy: "the curves collapse"


def large_init(args, bar) -> dict:
    d, s, T = 8, 1.0, 10.0
    x0, _ = _symmetric_gaussian(32 if args.fast else 64, d, args.seed)
    x, y = ntkcond.symmetrize(x0, s * x0 @ _unit(d, args.seed))
    scales = _floats(args.scales, "--scales")
    lrs = _floats(args.grid_lrs, "--grid-lrs")
    if min(scales) <= 0 or min(lrs) <= 0:
        raise ValueError(f"--scales/--grid-lrs: expected positive numbers, got {args.scales!r}, "
                         f"{args.grid_lrs!r}")
    out = {"setting": f"whitened symmetric Gaussian n={len(x)}, d={d}, teacher s={s}, "
                      f"width 8, alphas {list(ALPHAS)}, time T={T} (rescaled)",
           "error_definition": "max over alpha and t<=T of |L_alpha(t/c) - L_linear(t)| / L_linear(0) "
                               "(error_vs_target: the same / (1/2n) sum y^2)",
           "collapse_threshold": COLLAPSE_OK, "scales": scales, "lrs": lrs, "grids": {}}
    examples = {}
    for init in ("mirrored", "gaussian"):
        err = np.full((len(scales), len(lrs)), np.nan)
        err_y = np.full_like(err, np.nan)
        osc = np.zeros_like(err, dtype=bool)
        div = np.zeros_like(err, dtype=bool)
        for i, scale in enumerate(bar(scales)):
            if init == "mirrored":
                W1, W2 = ntkcond.mirrored_init(d, 4, scale=scale, seed=args.seed)
            else:
                W1, W2 = ntkcond.gaussian_init([d, 8, 1], scale=scale, seed=args.seed)
            for j, lr in enumerate(lrs):
                col = ntkcond.slope_collapse(x, y, W1, W2, alphas=ALPHAS, lr=lr, time=T)
                err[i, j], osc[i, j], div[i, j] = col.max_error, any(col.oscillating), any(col.diverged)
                err_y[i, j] = float(np.max(col.errors_vs_target))
                if init == "mirrored" and scale == max(scales) and lr in (min(lrs), 0.6) or \
                        (init == "mirrored" and scale == max(scales) and j == len(lrs) - 1):
                    examples[lr] = col
        regions = {"collapse": [], "no_collapse_smooth": [], "no_collapse_oscillating": [],
                   "diverged": []}
        for i, scale in enumerate(scales):
            for j, lr in enumerate(lrs):
                cell = [scale, lr]
                if div[i, j]:
                    regions["diverged"].append(cell)
                elif err[i, j] < COLLAPSE_OK:
                    regions["collapse"].append(cell)
                elif osc[i, j]:
                    regions["no_collapse_oscillating"].append(cell)
                else:
                    regions["no_collapse_smooth"].append(cell)
        out["grids"][init] = {"error": [[None if not np.isfinite(e) else float(e) for e in row]
                                        for row in err],
                              "error_vs_target": [[None if not np.isfinite(e) else float(e) for e in row]
                                                  for row in err_y],
                              "oscillating": osc.tolist(), "diverged": div.tolist(),
                              "regions": regions}
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.3))
    for ax, init in zip(axes[:2], ("mirrored", "gaussian")):
        g = out["grids"][init]
        E = np.array([[np.nan if e is None else e for e in row] for row in g["error"]])
        im = ax.imshow(np.log10(np.where(np.isfinite(E), E, np.nan)), origin="lower", cmap="magma_r",
                       vmin=-4, vmax=1, aspect="auto")
        for i in range(len(scales)):
            for j in range(len(lrs)):
                if g["diverged"][i][j]:
                    txt = "div"
                else:
                    txt = f"{E[i, j]:.0e}" + ("\nosc" if g["oscillating"][i][j] else "")
                ok = (not g["diverged"][i][j]) and E[i, j] < COLLAPSE_OK
                ax.text(j, i, txt, ha="center", va="center", fontsize=6,
                        color="k" if ok else "b", fontweight="normal" if ok else "bold")
        ax.set_xticks(range(len(lrs)), [f"{v:g}" for v in lrs])
        ax.set_yticks(range(len(scales)), [f"{v:g}" for v in scales])
        ax.set(title=f"{init} init: log10 collapse error (blue: > {COLLAPSE_OK:g})",
               xlabel="learning rate", ylabel="init scale")
        fig.colorbar(im, ax=ax)
    for k, (lr, col) in enumerate(sorted(examples.items())):
        for (t, L), alpha in zip(col.curves, col.alphas):
            axes[2].plot(t, L, color=f"C{k}", lw=2.5 - 2 * alpha, alpha=0.8,
                         label=f"lr={lr:g} (err {col.max_error:.1e})" if alpha == 0 else None)
    axes[2].set(title=f"init scale {max(scales):g} (mirrored): curves for all α vs c·t",
                xlabel="c·t", ylabel="loss", yscale="log")
    axes[2].legend(fontsize=7)
    return _with_figure(out, fig, args, "large_init")


COMMANDS = {"expressivity": expressivity, "equivalence": equivalence, "closed-form": closed_form,
            "symmetry-breaking": symmetry_breaking, "deep": deep, "ntk": ntk,
            "orthogonal": orthogonal, "xor": xor, "rank-one": rank_one, "large-init": large_init}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=list(COMMANDS) + ["all"])
    p.add_argument("--fast", action="store_true", help="small, quick configuration")
    p.add_argument("--out", default=os.path.join("runs", PROG), help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dataset", default="gaussian", choices=["gaussian", "digits"],
                   help="equivalence: whitened Gaussian or whitened digits (+ negatives)")
    p.add_argument("--lr", type=float, default=0.004, help="equivalence: learning rate")
    p.add_argument("--time", type=float, default=10.0, help="equivalence: linear-net time c·t")
    p.add_argument("--strength", type=float, default=2.0, help="equivalence: teacher strength s")
    p.add_argument("--init-scale", type=float, default=1e-3, help="equivalence: init std")
    p.add_argument("--lrs", default=None, help="closed-form: learning rates (default 0.004,0.05,0.2,0.6)")
    p.add_argument("--dys", default=None, help="symmetry-breaking: perturbations Δy")
    p.add_argument("--perturbation", default="shift", choices=["shift", "abs"],
                   help="symmetry-breaking: constant shift of the mirrored targets, or dy|r.x|")
    p.add_argument("--init", default="mirrored", choices=["mirrored", "gaussian"],
                   help="symmetry-breaking: initialisation (both small, std 1e-3)")
    p.add_argument("--layers", type=int, default=4, help="deep: number of weight layers")
    p.add_argument("--sizes", default=None, help="orthogonal: data sizes (default 2,4,8,16)")
    p.add_argument("--ortho-data", default="basis", choices=["basis", "digits"],
                   help="orthogonal: scaled basis vectors or orthogonalised digits images")
    p.add_argument("--scales", default=None, help="large-init: init scales of the phase diagram")
    p.add_argument("--grid-lrs", default=None, help="large-init: learning rates of the phase diagram")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def run(args) -> dict:
    if args.lrs is None:
        args.lrs = "0.004,0.6" if args.fast else "0.004,0.05,0.2,0.6"
    if args.dys is None:
        args.dys = "0.1,0.05" if args.fast else "0.2,0.1,0.05,0.025"
    if args.sizes is None:
        args.sizes = "2,4,8" if args.fast else "2,4,8,16"
    if args.scales is None:
        args.scales = "0.001,0.1,0.5" if args.fast else "0.001,0.01,0.1,0.3,0.5,1"
    if args.grid_lrs is None:
        args.grid_lrs = "0.004,0.1,0.6" if args.fast else "0.004,0.02,0.1,0.2,0.4,0.6,1"
    if args.layers < 2:
        raise ValueError(f"--layers: expected >= 2 weight layers, got {args.layers}")
    for name in ("lr", "time", "strength", "init_scale"):
        value = getattr(args, name)
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"--{name.replace('_', '-')}: expected a positive number, got {value!r}")
    os.makedirs(args.out, exist_ok=True)
    names = list(COMMANDS) if args.command == "all" else [args.command]
    summary = {}
    for name in tqdm(names, desc=PROG, disable=args.no_progress or len(names) == 1):
        result = COMMANDS[name](args, lambda it, _n=name: _bar(it, args, _n))
        result["config"] = {"fast": args.fast, "seed": args.seed}
        atomic_write(os.path.join(args.out, f"summary_{name}.json"),
                     json.dumps(result, indent=2, default=float) + "\n")
        summary[name] = result
    if args.command == "all":
        atomic_write(os.path.join(args.out, "summary.json"),
                     json.dumps(summary, indent=2, default=float) + "\n")
    print(json.dumps(summary, indent=2, default=float))
    return summary


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
