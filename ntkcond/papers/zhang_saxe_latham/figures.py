"""Figures of the bias-free experiments (``experiments``):
``plot(result)`` returns the matplotlib figure of any ``ExperimentResult``. matplotlib is
imported on first use (with the Agg backend unless one is already chosen).
"""
from __future__ import annotations

import numpy as np

from .experiments.collapse_runs import COLLAPSE_OK
from .experiments.result import ExperimentResult
from .experiments.xor_runs import XOR_FIT, XOR_LEARN
from .nets.orthogonal_data import xor_data
from .nets.saxe import saxe_mode_strength, time_rescaling

__all__ = ["plot"]


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot(result: ExperimentResult):
    """The figure of ``result`` (a ``matplotlib.figure.Figure``, laid out; the caller saves and
    closes it)."""
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"plot: expected an ExperimentResult, got {type(result).__name__}")
    if result.name not in _FIGURES:
        raise ValueError(f"plot: expected one of {sorted(_FIGURES)}, got {result.name!r}")
    fig = _FIGURES[result.name](result.summary, result.curves, _plt())
    fig.tight_layout()
    return fig


def _expressivity(out, curves, plt):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, name in zip(axes, curves["targets"]):
        for (tname, label), r in curves["runs"].items():
            if tname == name:
                ax.semilogy(np.arange(len(r.loss)), r.loss, label=label)
        ax.axhline(out["floors"][name]["predicted_floor_sample"], color="k", ls="--",
                   label="two-layer floor, eq. (2)")
        ax.set(title=f"target {name}", xlabel="GD step", ylabel="loss")
        ax.legend(fontsize=7)
    fig.suptitle("Two-layer bias-free ReLU nets cannot fit odd nonlinear targets")
    return fig


def _equivalence(out, curves, plt):
    alphas = sorted(a for kind, a in curves if kind == "square")
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    cmap = plt.get_cmap("viridis")
    for alpha in alphas:
        r, c = curves[("square", alpha)], time_rescaling(alpha)
        axes[0].plot(r.time, r.loss, color=cmap(alpha), label=f"α={alpha:g}")
        axes[1].plot(c * r.time, r.loss, color=cmap(alpha), lw=3 - 2 * alpha)
        rl = curves[("logistic", alpha)]
        axes[2].plot(c * rl.time, rl.loss, color=cmap(alpha), lw=3 - 2 * alpha)
    axes[0].set(title="square loss vs t", xlabel="t = step·lr", ylabel="loss")
    for ax, loss in zip(axes[1:3], ("square", "logistic")):
        ax.set(title=f"{loss} loss vs c·t (max dev {out[loss]['collapse_same_lr_max_dev']:.1e})",
               xlabel="c·t")
    axes[0].legend(fontsize=7)
    for name, dev in out["relu_vs_linear_by_init"].items():
        eq = curves[("init", name)]
        line, = axes[3].plot(eq.relu.time * eq.c, eq.relu.loss, label=f"ReLU, {name} init")
        axes[3].plot(eq.linear.time, eq.linear.loss, ls=":", color=line.get_color(),
                     label=f"linear equiv. ({dev['loss_dev']:.1e})")
    axes[3].set(title="ReLU (α=0) vs its linear net", xlabel="c·t")
    axes[3].legend(fontsize=6)
    fig.suptitle(f"Mirrored init, symmetric data ({out['dataset']}): leaky-ReLU = linear with t → c·t")
    return fig


def _closed_form(out, curves, plt):
    s, u0, T = out["s"], out["u0"], out["time"]
    alphas, lrs = curves["alphas"], curves["lrs"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for ax, lr in zip(axes[:2], (min(lrs), max(lrs))):
        for alpha in alphas:
            t, u, _ = curves["sims"][(alpha, lr)]
            line, = ax.plot(t, u, lw=1, marker="." if lr > 0.1 else None, label=f"α={alpha:g} sim")
            tt = np.linspace(0, T, 400)
            ax.plot(tt, saxe_mode_strength(tt, s=s, u0=u0, c=time_rescaling(alpha)), ls="--",
                    color=line.get_color())
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
    return fig


def _symmetry_breaking(out, curves, plt):
    """Left: odd and even loss of the first seed per Δy. Right: plateau against 1/Δy for every
    seed (points), the median, and the fit with one intercept per seed (slope p ± 95% CI)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for dy, (t, lo, le) in curves["losses"].items():
        line, = axes[0].loglog(t[1:], le[1:] / le[0], label=f"even part, Δy={dy:g}")
        axes[0].loglog(t[1:], lo[1:] / lo[0], ls=":", color=line.get_color())
    axes[0].axhline(curves["level"], color="k", lw=0.8, ls="--")
    axes[0].set(title=f"seed {out['seeds'][0]}: odd (dotted) then even (solid) part learned",
                xlabel="t", ylabel="loss part / its initial value", ylim=(1e-3, 2))
    axes[0].legend(fontsize=7)
    inv = 1 / np.array(curves["dys"])
    P = np.where(curves["plateaus"] > 0, curves["plateaus"], np.nan)
    for b, row in enumerate(P):
        axes[1].loglog(inv, row, "o-", ms=3, lw=0.6, alpha=0.7, label=f"seed {out['seeds'][b]}")
    axes[1].loglog(inv, np.nanmedian(P, axis=0), "k-", lw=2, label="median over seeds")
    if "fit" in out:
        f = out["fit"]["plateau ~ A * (1/dy)^p"]
        ref = np.nanmedian(P, axis=0)
        mid = np.exp(np.nanmean(np.log(ref) - f["p"] * np.log(inv)))
        lo, hi = f["p_ci95_bootstrap_over_seeds"]
        axes[1].loglog(inv, mid * inv ** f["p"], "r--",
                       label=f"p = {f['p']:.2f} ± {f['p_stderr']:.2f} (bootstrap 95%: {lo:.2f}–{hi:.2f})")
    axes[1].set(title=f"plateau, {len(out['seeds'])} seeds ({out['data'].split(' sym')[0]}, "
                      f"lr {out['lr']:g})", xlabel="1/Δy", ylabel="plateau (time)")
    axes[1].legend(fontsize=6)
    return fig


def _deep(out, curves, plt):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (name, (t, ranks)) in zip(axes, curves.items()):
        for layer, per_snapshot in enumerate(ranks):
            ax.plot(t, per_snapshot, label=f"W{layer + 1}")
        ax.set(title=f"{name}: stable rank ‖W‖F²/‖W‖2²", xlabel="t", yscale="log")
        ax.legend(fontsize=7)
    return fig


def _ntk(out, curves, plt):
    fig, ax = plt.subplots(figsize=(5, 3.8))
    for act in ("linear", "relu", "leaky:0.5"):
        rows = [e for e in out["results"] if e["activation"] == act]
        ax.semilogy([e["depth"] for e in rows], [e["kappa_eff"] for e in rows], "o-",
                    label=f"{act} (rank {rows[0]['rank']}/{out['n']})")
    ax.set(title="κ_eff of the NTK on x ∪ −x (digits)", xlabel="depth L", ylabel="κ_eff")
    ax.legend(fontsize=7)
    return fig


def _orthogonal(out, curves, plt):
    """Top: orthogonal_init runs against Σ of independent Saxe curves. Bottom: a generic init
    (first draw of the largest n) against the two sign-group curves predicted from the init,
    and the errors of every draw."""
    runs = curves["runs"]
    cols = max(len(runs), 3)
    fig, axes = plt.subplots(2, cols, figsize=(3.6 * cols, 7.2), squeeze=False)
    for ax, (entry, r, nets) in zip(axes[0], runs):
        ax.semilogy(r.time, r.loss, lw=2.5, color="0.7", label="simulation")
        ax.semilogy(r.time, nets.loss(r.time), "k--", lw=1, label="Σ independent Saxe curves")
        for tg in nets.learning_times(0.5):
            ax.axvline(tg, color="C1", lw=0.6, ls=":")
        title = f"n = {entry['n']}" + ("" if len(nets.groups) == entry["n"] else
                                       f", {len(nets.groups)} groups")
        ax.set(title=f"{title} (err {entry['max_rel_err_vs_flow_prediction[lr]']:.1e})",
               xlabel="t = step·lr", ylim=(1e-6 * r.loss[0], 2 * r.loss[0]))
    for ax in axes[0, len(runs):]:
        ax.axis("off")
    axes[0, 0].set_ylabel("loss")
    axes[0, 0].legend(fontsize=7)
    g = out["generic"]
    n_big = max(e["n"] for e in g["results"])
    n, sd, r, nets = next(run for run in curves["generic"] if run[0] == n_big)
    ax = axes[1, 0]
    ax.semilogy(r.time, r.loss, lw=2.5, color="0.7", label="simulation (generic init)")
    ax.semilogy(r.time, nets.loss(r.time), "k--", lw=1, label="2 sign-group Saxe curves, eq. (4)")
    for tg in nets.learning_times(0.5):
        ax.axvline(tg, color="C1", lw=0.6, ls=":")
    ax.set(title=f"generic init, n = {n}, seed {sd}", xlabel="t = step·lr", ylabel="loss",
           ylim=(1e-6 * r.loss[0], 2 * r.loss[0]))
    ax.legend(fontsize=7)
    ax = axes[1, 1]
    for k, (key, label) in enumerate((("sign_group_prediction_error", "predicted from init"),
                                      ("sign_group_fitted_error", "strengths fitted"))):
        for j, e in enumerate(g["results"]):
            vals = [d[key] for d in e["draws"]]
            ax.semilogy(np.full(len(vals), j) + 0.15 * (2 * k - 1), vals, "o", color=f"C{k}",
                        ms=4, label=label if j == 0 else None)
    ax.set_xticks(range(len(g["results"])), [f"n = {e['n']}" for e in g["results"]])
    ax.set(title=f"sign-group curves: error / L(0), {len(g['seeds'])} draws")
    ax.legend(fontsize=7)
    ax = axes[1, 2]
    undefined = [e["per_point_prediction_undefined"] for e in g["results"]]
    ax.bar(range(len(undefined)), undefined, color="C3")
    ax.set_xticks(range(len(undefined)), [f"n = {e['n']}" for e in g["results"]])
    ax.set(title="per-point prediction: m₀ ≤ 0", ylabel="draws undefined",
           ylim=(0, len(g["seeds"])))
    for ax in axes[1, 3:]:
        ax.axis("off")
    fig.suptitle(f"ReLU net on orthogonal inputs ({out['data']}): independent linear nets; "
                 "dotted: predicted plateau ends")
    return fig


def _xor(out, curves, plt):
    """Left: pair-init runs (first draw, d = 2) against Σ of Saxe curves of the even part.
    Middle: learned rows of W₁ (generic init, α = 0). Right: time to fit against α over the
    draws (median, min–max bars) with the pair_nets prediction and t_fit(0)/(1−α)."""
    alphas, T = curves["alphas"], out["time"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.3))
    cmap = plt.get_cmap("viridis")
    for alpha in alphas:
        r, nets = curves["exact"][alpha]
        axes[0].semilogy(r.time, r.loss, color=cmap(alpha), lw=2.5, alpha=0.5)
        axes[0].semilogy(r.time, nets.loss(r.time), color=cmap(alpha), ls="--", lw=1,
                         label=f"α={alpha:g}")
    axes[0].set(title="pair init (d=2): simulation (thick),\nΣ Saxe of the even part (dashed)",
                xlabel="t", ylabel="loss", ylim=(1e-30, 2), xscale="log")
    axes[0].legend(fontsize=7)
    W0, W1, x, _ = curves["features"]["d=2"]
    axes[1].scatter(*x[:, :2].T, c=["C0" if v > 0 else "C3" for v in xor_data()[1]], s=80, zorder=3)
    scale = np.max(np.abs(W1))
    for w in W1:
        axes[1].annotate("", xy=w[:2] / scale, xytext=(0, 0), arrowprops=dict(arrowstyle="->", lw=0.8))
    axes[1].set(title="learned rows of W₁ (α=0, generic init)",
                aspect="equal", xlim=(-1.3, 1.3), ylim=(-1.3, 1.3))
    ax = axes[2]
    fit = [a for a in alphas if a < 1]
    a = np.array(fit)

    def spread(rows, key, q):
        return np.array([np.nan if rows[f"{v:g}"][key][q] is None else rows[f"{v:g}"][key][q]
                         for v in fit])

    configs = (("pair", "d=2", "s"), ("pair", "d=10 embedded", "D"), ("generic", "d=2", "o"),
               ("generic", "d=10 noisy x5", "^"))
    for k, (kind, name, marker) in enumerate(configs):
        rows = out[kind][name]
        keys = [("time_to_learn", XOR_LEARN)] + ([("time_to_fit", XOR_FIT)] if name == "d=2" else [])
        for key, level in keys:
            med, lo, hi = (spread(rows, key, q) for q in ("median", "min", "max"))
            ax.errorbar(a + 0.006 * (k - 1.5), med, yerr=[med - lo, hi - med], fmt=marker, ms=4,
                        capsize=2, color=f"C{k}", mfc="none" if key == "time_to_fit" else None,
                        label=f"{kind}, {name}: L < {level:g}·L(0)")
            if kind == "pair" and name == "d=2":
                ax.plot(a, spread(rows, f"{key}_predicted", "median"), "k-", lw=0.8,
                        label="pair_nets prediction" if key == "time_to_learn" else None)
            if kind == "generic" and name == "d=2":
                ax.plot(a, med[0] / (1 - a), ":", color=f"C{k}", lw=1,
                        label="generic: t(0)/(1−α)" if key == "time_to_learn" else None)
    ax.set(title=f"time to learn / fit, median and min–max over {len(out['seeds'])} draws\n"
                 f"(α = 1: never, L stays ½ up to t = {T:g})", xlabel="α", ylabel="time",
           yscale="log")
    ax.legend(fontsize=6)
    fig.suptitle("XOR (blue: y = +1, red: y = −1): learned only through the even part, at a "
                 "rate ∝ 1−α")
    return fig


def _rank_one(out, curves, plt):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, tr in curves["traces"].items():
        ls = "--" if name.startswith("planted") else "-"
        axes[0].semilogy(tr.time, np.maximum(tr.deviation, 1e-18), ls=ls, label=name)
    axes[0].set(title="‖W₁ − W₂ᵀrᵀ‖/‖W₁‖ (best r) during training", xlabel="t", ylim=(1e-18, 1))
    axes[0].legend(fontsize=6)
    slope = out["gd_deviation_vs_lr_loglog_slope"]
    axes[1].loglog(curves["lrs"], curves["gd"], "o-", label=f"GD (slope {slope:.2f})")
    for alpha in (0.0, 0.5):
        axes[1].loglog(curves["dts"], [out["cases"][f"flow rk4 dt={dt:g} α={alpha:g}"]["max_deviation"]
                                       for dt in curves["dts"]], "s-", label=f"RK4 flow α={alpha:g}")
    axes[1].set(title="max deviation vs step size", xlabel="lr / dt")
    axes[1].legend(fontsize=7)
    return fig


def _grid(values):
    return np.array([[np.inf if e is None else e for e in row] for row in values], dtype=float)


def _large_init(out, curves, plt):
    """Top: median log10 E per cell (text: median, min–max over seeds); bottom: fraction of
    seeds that collapse (text: count, and how many oscillate / diverge); right: the curves of
    the base seed at the mirrored scale nearest 0.3, and E per seed against lr there."""
    scales, lrs, seeds = out["scales"], out["lrs"], out["seeds"]
    S = len(seeds)
    fig, axes = plt.subplots(2, 3, figsize=(18, 8.6))
    for col, init in enumerate(("mirrored", "gaussian")):
        g = out["grids"][init]
        med, lo, hi = _grid(g["error_median"]), _grid(g["error_min"]), _grid(g["error_max"])
        frac = np.array(g["collapse_fraction"])
        osc, div = np.array(g["oscillating_fraction"]), np.array(g["diverged_fraction"])
        ax = axes[0, col]
        im = ax.imshow(np.log10(np.where(np.isfinite(med), med, 1e1)), origin="lower",
                       cmap="magma_r", vmin=-4, vmax=1, aspect="auto")
        for i in range(len(scales)):
            for j in range(len(lrs)):
                txt = ("div" if not np.isfinite(med[i, j]) else f"{med[i, j]:.0e}") + \
                    f"\n{lo[i, j]:.0e}–" + ("div" if not np.isfinite(hi[i, j]) else f"{hi[i, j]:.0e}")
                ok = frac[i, j] == 1
                ax.text(j, i, txt, ha="center", va="center", fontsize=5.5,
                        color="k" if ok else "b", fontweight="normal" if ok else "bold")
        fig.colorbar(im, ax=ax, label="log10 median E")
        ax.set(title=f"{init} init: median collapse error over {S} seeds (min–max below)",
               ylabel="init scale")
        ax = axes[1, col]
        im = ax.imshow(frac, origin="lower", cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        for i in range(len(scales)):
            for j in range(len(lrs)):
                extra = (f"\nosc {round(osc[i, j] * S)}" if osc[i, j] else "") + \
                    (f"\ndiv {round(div[i, j] * S)}" if div[i, j] else "")
                ax.text(j, i, f"{round(frac[i, j] * S)}/{S}{extra}", ha="center", va="center",
                        fontsize=6)
        fig.colorbar(im, ax=ax, label="fraction of seeds with E < threshold")
        ax.set(title=f"{init} init: seeds that collapse (E < {COLLAPSE_OK:g})",
               xlabel="learning rate", ylabel="init scale")
        for ax in axes[:, col]:
            ax.set_xticks(range(len(lrs)), [f"{v:g}" for v in lrs])
            ax.set_yticks(range(len(scales)), [f"{v:g}" for v in scales])
    i = int(np.argmin([abs(np.log(v / 0.3)) for v in scales]))  # the scale the claim is about
    shown = sorted({min(lrs), max(lrs)} | ({0.6} & set(lrs)))
    top = 0.0
    for k, lr in enumerate(shown):
        col = curves["examples"][(scales[i], lr)]
        for (t, L), alpha in zip(col.curves, col.alphas):
            axes[0, 2].plot(t, L, color=f"C{k}", lw=2.5 - 2 * alpha, alpha=0.8,
                            label=f"lr={lr:g} (E {col.max_error:.1e})" if alpha == 0 else None)
            top = max(top, float(L[0]))
    axes[0, 2].set(title=f"mirrored, scale {scales[i]:g}, seed {seeds[0]}: all α vs c·t",
                   xlabel="c·t", ylabel="loss", yscale="log", ylim=(None, 30 * top))
    axes[0, 2].legend(fontsize=7)
    per_seed = np.array([_grid(e)[i] for e in out["grids"]["mirrored"]["error_per_seed"]])
    for b, row in enumerate(per_seed):
        axes[1, 2].loglog(lrs, np.where(np.isfinite(row), row, np.nan), "o-", lw=0.8, ms=3,
                          label=f"seed {seeds[b]}")
    axes[1, 2].loglog(lrs, np.median(per_seed, axis=0), "k-", lw=2.5, label="median")
    axes[1, 2].axhline(COLLAPSE_OK, color="k", ls="--", lw=0.8)
    axes[1, 2].set(title=f"mirrored, scale {scales[i]:g}: E per seed (dashed: threshold)",
                   xlabel="learning rate", ylabel="collapse error E")
    axes[1, 2].legend(fontsize=6, ncol=2)
    return fig


def _bias_breaking(out, curves, plt):
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    cmap = plt.get_cmap("viridis")
    alphas, b_stds = out["alphas"], out["b_stds"]
    nonzero = [b for b in b_stds if b > 0]
    for alpha in alphas:
        rows = out["per_alpha"][f"{alpha:g}"]["by_b_std"]
        for ax, key in zip(axes[:2], ("loss_dev", "weight_dev")):
            ax.loglog(nonzero, [rows[f"{b:g}"][key] for b in nonzero], "o-", color=cmap(alpha),
                      label=f"α = {alpha:g}")
    axes[0].set(xlabel="bias scale s_b", ylabel="max |L_ReLU − L_lin| / L(0)",
                title="loss: ReLU net vs its linear net")
    axes[1].set(xlabel="bias scale s_b", ylabel="max ‖√c W − W_lin‖ / ‖W_lin‖",
                title="weights: ReLU net vs its linear net")
    axes[0].legend(fontsize=7)
    alpha = alphas[0]
    for b in b_stds:
        eq = curves[(alpha, b)]
        c = eq.c
        axes[2].semilogy(c * eq.relu.time, eq.relu.loss, label=f"s_b = {b:g}",
                         color=plt.get_cmap("plasma")(b_stds.index(b) / max(1, len(b_stds) - 1)))
    axes[2].semilogy(eq.linear.time, eq.linear.loss, "k--", lw=0.8, label="linear (s_b = 1)")
    axes[2].set(xlabel="c·t", ylabel="loss", title=f"α = {alpha:g}: loss curves")
    axes[2].legend(fontsize=7)
    fig.suptitle("Biases break the two-layer equivalence to linear nets (mirrored init, symmetric data)")
    return fig


_FIGURES = {"expressivity": _expressivity, "bias_breaking": _bias_breaking, "equivalence": _equivalence,
            "closed_form": _closed_form, "symmetry_breaking": _symmetry_breaking, "deep": _deep,
            "ntk": _ntk, "orthogonal": _orthogonal, "xor": _xor, "rank_one": _rank_one,
            "large_init": _large_init}
