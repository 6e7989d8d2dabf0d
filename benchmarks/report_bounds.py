#!/usr/bin/env python3
"""The theory's bounds on real data (issue 25): how loose each λmin bound is, and the finite-width
yardstick, written to docs/results/.

    python benchmarks/report_bounds.py [--part all|series|separation|finite]
                                       [--sizes 128 256 512 1024 2048] [--out docs/results]

* ``series``: coefficient decay of ``ntk_power_series`` per activation and depth
  (``ntk_power_series_decay.png``).
* ``separation``: on MNIST, CIFAR-10 (../shared/data, papers' normalisation; skipped when
  absent) and digits, rows normalised to unit norm, batches of the first n images, depths 0–10:
  the exact λmin of the unit-diagonal NTK Θ̃ (eigvalsh) against δ² and δ⁴ (δ the separation of
  Karhadkar, Murray & Montúfar 2024, ``data_separation``), the power-series lower bound
  (``lambda_min_lower_bound``) and Prop 4.1's upper bound (``lambda_min_upper_bound``);
  ``bounds_separation.csv``/``.md``/``.png`` and ``bounds_looseness.png``.
* ``finite``: relative variance of the empirical NTK's entries (``monte_carlo_ntk``, float32,
  two unit inputs at 1 rad in R^16) against exp(5β) − 1, β = Σ_l 1/n_l = L/width (Hanin & Nica
  2020), and the width-512 κ_eff inflation of docs/results/cond_vs_depth_mnist.csv against β;
  ``bounds_finite_width.csv``/``.png``.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import time

import numpy as np

from ntkcond import (data_separation, datasets, depth_sweep, lambda_min_lower_bound,
                     lambda_min_upper_bound, mlp, monte_carlo_ntk, ntk_power_series)
from ntkcond._core.io import atomic_savefig, atomic_write

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
DEPTHS = tuple(range(11))


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_csv(path, rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    atomic_write(path, buf.getvalue())


def series_figure(out):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    P = 2000
    p = np.arange(P + 1)
    for depth, color in ((1, "C0"), (3, "C1"), (10, "C2"), (30, "C3")):
        s = ntk_power_series(depth, "relu", order=P)
        keep = s.coefficients > 0
        axes[0].loglog(p[keep], s.coefficients[keep], ".", ms=2, color=color,
                       label=f"ReLU L={depth} (tail at {P}: {s.tail:.3g})")
    axes[0].loglog(p[1:], 0.3 * p[1:] ** -1.5, "k:", lw=0.8, label="p^(-3/2)")
    axes[0].set(xlabel="p", ylabel="a_p (normalised NTK)", title="ReLU: mass moves to high order with depth")
    axes[0].legend(fontsize=7)
    for act, color in (("relu", "C0"), (("leaky_relu", 0.2), "C1"), (("leaky_relu", 0.5), "C2"),
                       (("leaky_relu", 0.9), "C3"), ("linear", "k")):
        s = ntk_power_series(3, act, order=400)
        keep = s.coefficients > 0
        axes[1].loglog(p[:401][keep], s.coefficients[keep], ".", ms=2, color=color,
                       label=f"{s.activation} (a_1 = {s.coefficients[1]:.3f})")
    axes[1].set(xlabel="p", title="L = 3: the linear net has the single a_1 = 1")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    atomic_savefig(fig, os.path.join(out, "ntk_power_series_decay.png"), dpi=110)
    plt.close(fig)


def real_sets():
    sets = []
    for name, preset in (("MNIST", "mnist"), ("CIFAR-10", "cifar10")):
        path = os.path.join(DATA, f"{preset}_test.npz")
        if os.path.exists(path):
            sets.append((name, datasets.load(path, preset=preset).x))
    sets.append(("digits", datasets.load("digits").x))
    return sets


def separation(out, sizes):
    rows = []
    for name, X in real_sets():
        for n in [s for s in sizes if s <= len(X)]:
            x = X[:n] / np.linalg.norm(X[:n], axis=1, keepdims=True)
            d = x.shape[1]
            sep = data_separation(x)
            t0 = time.perf_counter()
            for item in depth_sweep(x, DEPTHS):
                L = item.depth
                Kt = item.ntk * d / (L + 1)  # unit diagonal
                lam = np.linalg.eigvalsh(Kt)
                series = lambda_min_lower_bound(x, depth=L).normalised
                upper = lambda_min_upper_bound(Kt)[0]
                rows.append(dict(dataset=name, n=n, depth=L, delta=sep.delta,
                                 theta_min=sep.closest[0], theta_max=sep.antipodal[0],
                                 lambda_min=float(lam[0]), series_bound=series, prop41_upper=upper,
                                 delta2=sep.delta**2, delta4=sep.delta**4))
            print(f"{name} n={n}: δ = {sep.delta:.4g} ({time.perf_counter() - t0:.1f} s)", flush=True)
    write_csv(os.path.join(out, "bounds_separation.csv"), rows)
    return rows


def _slope(x, y):
    """Least-squares slope of log y against log x (NaN with fewer than two distinct x)."""
    x, y = np.asarray(x), np.asarray(y)
    ok = (x > 0) & (y > 0)
    if ok.sum() < 2 or np.ptp(np.log(x[ok])) == 0:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def separation_report(out, rows):
    plt = pyplot()
    names = sorted({r["dataset"] for r in rows}, key=lambda s: ("MNIST", "CIFAR-10", "digits").index(s))
    fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 3.9), squeeze=False)
    lines = ["# λmin of the NTK on real batches against δ², δ⁴ and the power-series bound", "",
             "Unit-diagonal infinite-width ReLU NTK Θ̃ of the first n test images (rows normalised); "
             "exact λmin by eigvalsh; δ = min(‖x̂ᵢ − x̂ⱼ‖, ‖x̂ᵢ + x̂ⱼ‖) (Karhadkar, Murray & Montúfar 2024); "
             "series: `lambda_min_lower_bound(...).normalised` (Schur + Gershgorin on the power series, "
             "order 1024); Prop 4.1: `lambda_min_upper_bound`. Produced by "
             "`python benchmarks/report_bounds.py --part separation --sizes 128 256 512 1024` "
             "(`bounds_separation.csv`, all depths 0–10); CIFAR-10 has 1,000 exact test images, so "
             "n ≤ 512 there. n = 2048 and 4096 (`--sizes`) were beyond a ~10-minute budget on the "
             "loaded 2-core machine. The rate is fitted over a narrow range of δ (2x).", "",
             "| data | L | rate: log λmin / log δ over n | λmin/δ² (n range) | λmin/δ⁴ | exact / series bound | Prop 4.1 / exact |",
             "|---|---|---|---|---|---|---|"]
    for ax, name in zip(axes[0], names):
        for L, color in ((0, "C7"), (1, "C0"), (3, "C1"), (10, "C2")):
            sel = [r for r in rows if r["dataset"] == name and r["depth"] == L]
            delta = [r["delta"] for r in sel]
            ax.loglog(delta, [r["lambda_min"] for r in sel], "o-", color=color, ms=4, label=f"λmin, L={L}")
            if L:
                ax.loglog(delta, [max(r["series_bound"], 1e-30) for r in sel], "x--", color=color, ms=4,
                          lw=0.8)
        sel = sorted([r for r in rows if r["dataset"] == name and r["depth"] == 1], key=lambda r: r["delta"])
        dd = np.array([r["delta"] for r in sel])
        ax.loglog(dd, dd**2, "k:", lw=0.8, label="δ²")
        ax.loglog(dd, dd**4, "k-.", lw=0.8, label="δ⁴")
        ax.set(xlabel="δ (separation of the batch)", title=f"{name} (x: series bound)")
        ax.legend(fontsize=6)
        for L in (1, 3, 10):
            sel = [r for r in rows if r["dataset"] == name and r["depth"] == L]
            lam = [r["lambda_min"] for r in sel]
            r2 = [r["lambda_min"] / r["delta2"] for r in sel]
            r4 = [r["lambda_min"] / r["delta4"] for r in sel]
            loose = [r["lambda_min"] / r["series_bound"] for r in sel if r["series_bound"] > 0]
            upp = [r["prop41_upper"] / r["lambda_min"] for r in sel if r["lambda_min"] > 0]
            zero = sum(r["series_bound"] <= 0 for r in sel)
            lines.append(
                f"| {name} (n = {sel[0]['n']}–{sel[-1]['n']}) | {L} | {_slope([r['delta'] for r in sel], lam):.2f} | "
                f"{min(r2):.3g}–{max(r2):.3g} | {min(r4):.3g}–{max(r4):.3g} | "
                + (f"{min(loose):.3g}–{max(loose):.3g}" if loose else "—")
                + (f" ({zero} sizes with bound 0)" if zero else "")
                + f" | {min(upp):.3g}–{max(upp):.3g} |")
    axes[0][0].set_ylabel("λmin of the unit-diagonal NTK")
    fig.tight_layout()
    atomic_savefig(fig, os.path.join(out, "bounds_separation.png"), dpi=110)
    plt.close(fig)
    # looseness against depth at the largest common size
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, color in zip(names, ("C0", "C1", "C2")):
        n = max(r["n"] for r in rows if r["dataset"] == name)
        sel = [r for r in rows if r["dataset"] == name and r["n"] == n and r["depth"] >= 1]
        axes[0].semilogy([r["depth"] for r in sel],
                         [r["lambda_min"] / r["series_bound"] if r["series_bound"] > 0 else np.nan for r in sel],
                         "o-", color=color, label=f"{name}, n = {n}")
        axes[1].plot([r["depth"] for r in sel], [r["prop41_upper"] / r["lambda_min"] for r in sel],
                     "o-", color=color, label=f"{name}, n = {n}")
    axes[0].set(xlabel="depth L", ylabel="exact λmin / series bound", title="power-series lower bound")
    axes[1].set(xlabel="depth L", ylabel="Prop 4.1 bound / exact λmin", title="closest-pair upper bound")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    atomic_savefig(fig, os.path.join(out, "bounds_looseness.png"), dpi=110)
    plt.close(fig)
    lines += ["", "![λmin vs δ](bounds_separation.png)", "", "![looseness](bounds_looseness.png)", ""]
    return lines


def finite_width(out):
    x = np.zeros((2, 16), np.float32)
    x[0, 0] = 1.0
    x[1, 0], x[1, 1] = np.cos(1.0), np.sin(1.0)
    plan = [(64, 32), (256, 32), (1024, 16), (4096, 8)]
    rows = []
    for width, seeds in plan:
        for depth in (1, 3, 10):
            if width == 4096 and depth == 10:
                continue  # 168M weights per net: beyond this machine's budget
            t0 = time.perf_counter()
            mc = monte_carlo_ntk(mlp(depth, width, "relu"), x, seeds=seeds)
            var = (mc.stderr**2) * seeds  # sample variance (ddof = 1)
            rel = var / mc.mean**2
            beta = depth / width
            rows.append(dict(width=width, depth=depth, seeds=seeds, beta=beta,
                             rel_var_diag=float(rel[0, 0]), rel_var_offdiag=float(rel[0, 1]),
                             hanin_nica=float(np.expm1(5 * beta))))
            print(f"width {width} L={depth}: rel var {rel[0, 0]:.3g} vs exp(5β)−1 = {np.expm1(5 * beta):.3g} "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    write_csv(os.path.join(out, "bounds_finite_width.csv"), rows)
    infl = []
    path = os.path.join(HERE, "..", "docs", "results", "cond_vs_depth_mnist.csv")
    if os.path.exists(path):
        table = list(csv.DictReader(open(path)))
        inf = {int(r["depth"]): float(r["kappa_eff_mean"]) for r in table if r["width"] == "inf" and r["activation"] == "relu"}
        for r in table:
            if r["width"] != "inf" and r["activation"] == "relu" and int(r["depth"]) >= 1:
                L, w = int(r["depth"]), int(r["width"])
                infl.append(dict(width=w, depth=L, beta=L / w,
                                 inflation=float(r["kappa_eff_mean"]) / inf[L]))
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for depth, color in ((1, "C0"), (3, "C1"), (10, "C2")):
        sel = [r for r in rows if r["depth"] == depth]
        axes[0].loglog([r["beta"] for r in sel], [r["rel_var_diag"] for r in sel], "o", color=color,
                       label=f"diagonal, L={depth}")
        axes[0].loglog([r["beta"] for r in sel], [r["rel_var_offdiag"] for r in sel], "x", color=color,
                       label=f"off-diagonal (1 rad), L={depth}")
    b = np.geomspace(min(r["beta"] for r in rows), max(r["beta"] for r in rows), 50)
    axes[0].loglog(b, np.expm1(5 * b), "k-", lw=0.8, label="exp(5β) − 1")
    axes[0].set(xlabel="β = Σ 1/n_l", ylabel="Var K / (E K)²", title="Empirical NTK fluctuations (float32 MC)")
    axes[0].legend(fontsize=6)
    if infl:
        axes[1].plot([r["beta"] for r in infl], [r["inflation"] for r in infl], "o-", label="κ_eff(512)/κ_eff(∞), MNIST 512")
        axes[1].plot(b, np.exp(5 * b), "k-", lw=0.8, label="exp(5β)")
        axes[1].set(xlabel="β = L/512", ylabel="κ inflation", title="README sweep: width 512 vs ∞")
        axes[1].legend(fontsize=7)
    fig.tight_layout()
    atomic_savefig(fig, os.path.join(out, "bounds_finite_width.png"), dpi=110)
    plt.close(fig)
    lines = ["# Finite width: NTK fluctuations against Hanin & Nica's exp(5β)", "",
             "Relative variance of the entries of the empirical ReLU NTK (`monte_carlo_ntk`, float32, two "
             "unit inputs at 1 rad in R^16; seeds per width: " + ", ".join(f"{w}: {s}" for w, s in plan)
             + "; width 4096 at L = 10 skipped, 168M weights) against exp(5β) − 1, β = L/width. Produced "
             "by `python benchmarks/report_bounds.py --part finite` (`bounds_finite_width.csv`).", "",
             "| width | L | β | Var/E² diagonal | Var/E² off-diagonal | exp(5β) − 1 | diagonal / exp(5β)−1 |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['width']} | {r['depth']} | {r['beta']:.4g} | {r['rel_var_diag']:.3g} | "
                     f"{r['rel_var_offdiag']:.3g} | {r['hanin_nica']:.3g} | {r['rel_var_diag'] / r['hanin_nica']:.2f} |")
    if infl:
        lines += ["", "κ_eff inflation of the README's MNIST sweep (width 512 mean over seeds / infinite width):", "",
                  "| L | β = L/512 | κ_eff(512)/κ_eff(∞) | exp(5β) |", "|---|---|---|---|"]
        lines += [f"| {r['depth']} | {r['beta']:.4g} | {r['inflation']:.3g} | {np.exp(5 * r['beta']):.4g} |" for r in infl]
    lines += ["", "![finite width](bounds_finite_width.png)", ""]
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--part", choices=["all", "series", "separation", "finite"], default="all")
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512, 1024, 2048])
    p.add_argument("--out", default=os.path.join(HERE, "..", "docs", "results"))
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.part in ("all", "series"):
        series_figure(args.out)
    if args.part in ("all", "separation"):
        lines = separation_report(args.out, separation(args.out, args.sizes))
        atomic_write(os.path.join(args.out, "bounds_separation.md"), "\n".join(lines) + "\n")
    if args.part in ("all", "finite"):
        lines = finite_width(args.out)
        atomic_write(os.path.join(args.out, "bounds_finite_width.md"), "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
