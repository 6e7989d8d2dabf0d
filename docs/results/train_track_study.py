#!/usr/bin/env python3
"""The lazy-to-rich study of issue 32: ``ntkcond train-track`` runs on MNIST and CIFAR-10 test
images, and the tables and figures of docs/results/train_track.md built from their records.

    python docs/results/train_track_study.py --part width  --dataset mnist    # then cifar10
    python docs/results/train_track_study.py --part init   --dataset mnist
    python docs/results/train_track_study.py --part repro  --dataset mnist
    python docs/results/train_track_study.py --report                          # tables, figures

Every run is one ``ntkcond train-track`` command (``ntkcond.runs.train_track.main``, in this
process), printed before it runs and written beside its row in the tables; its run directory is
``--runs``/<part>/<dataset>/<name> and a rerun resumes it (finished runs are read, not redone).

Parts (all on the first 256 images of the test set shuffled with seed 0, targets lt5 centred,
probe = the 256 training images, full-batch optax SGD, one hidden layer unless said):

* ``width``: widths 64 … 4096, ReLU and linear, bias-free and b_std = 0.1 (norm-preserving
  w_std), 500 steps, lr 0.5 (MNIST) / 1.0 (CIFAR-10) (lr·λmax(Θ∞)/n ≈ 0.5–0.7 on both),
  trained in float32 (the tracked NTK is float64), 16 log-spaced snapshots.
* ``init``: width 512, every initial parameter times α = 1, 0.3, 0.1, 0.03, 0.01 (the
  small-initialisation regime of Zhang, Saxe & Latham), ReLU and linear, bias-free and with
  biases, 2000 steps, otherwise as ``width``.
* ``repro``: the width-512 nets of ``ntkcond train-vs-depth`` (docs/results/train_vs_depth_*.csv:
  the same batch, targets and PRNGKey(0) weights) retrained in float64 with their learning
  rate (η of the sum loss × n for the mean loss: the same iterates) for their ``steps_run``, so
  that the drift they report is seen snapshot by snapshot.

The commands recorded in the CSVs (the runs as made) spell the network flags ``--activation``
and ``--depth``, argparse's unique prefixes of ``--activations`` and ``--depths`` (the network
flag group every command shares, ``ntkcond.runs.cli.add_network_arguments``): they parse to the
same nets and the same config.json, so this script resumes and reports those runs as they are.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import math
import os
import shlex
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LR = {"mnist": 0.5, "cifar10": 1.0}
WIDTHS = (64, 128, 256, 512, 1024, 2048, 4096)
SCALES = (1.0, 0.3, 0.1, 0.03, 0.01)
REPRO = {"mnist": [(1, "relu"), (3, "relu"), (10, "relu"), (1, "linear")],
         "cifar10": [(1, "relu"), (3, "relu"), (10, "relu")]}
NAMES = {"mnist": "MNIST", "cifar10": "CIFAR-10"}


def configs(part: str, dataset: str, data_dir: str):
    """(name, argv) of every run of ``part`` on ``dataset``."""
    data = ["--dataset", dataset, "--split", "test", "--data-dir", data_dir, "--train", "256",
            "--probe", "256"]
    if part == "width":
        for act in ("relu", "linear"):
            for b in ("0", "0.1"):
                for m in WIDTHS:
                    yield (f"{act}_b{b}_m{m}", data + ["--width", str(m), "--activations", act, "--b-std", b,
                                                       "--lr", str(LR[dataset]), "--steps", "500",
                                                       "--snapshots", "16", "--dtype", "float32"])
    elif part == "init":
        for act in ("relu", "linear"):
            for b in ("0", "0.1"):
                for a in SCALES:
                    yield (f"{act}_b{b}_a{a:g}", data + ["--width", "512", "--activations", act, "--b-std", b,
                                                         "--init-scale", f"{a:g}", "--lr", str(LR[dataset]),
                                                         "--steps", "2000", "--snapshots", "16",
                                                         "--dtype", "float32"])
    elif part == "repro":
        table = {(int(r["depth"]), r["activation"]): r for r in
                 csv.DictReader(open(os.path.join(HERE, f"train_vs_depth_{dataset}.csv"), encoding="utf-8"))
                 if r["width"] == "512"}
        for depth, act in REPRO[dataset]:
            r = table[(depth, act)]
            lr = repr(float(r["lr"]) * int(r["n"]))  # η·n: the mean loss's gradient is 1/n of the sum's
            yield (f"{act}_L{depth}", data + ["--depths", str(depth), "--width", "512", "--activations", act,
                                              "--lr", lr, "--steps", r["steps_run"], "--snapshots", "16"])
    else:
        raise ValueError(f"unknown part {part!r}")


def run_part(part: str, dataset: str, data_dir: str, runs: str) -> None:
    from ntkcond.runs.train_track import main

    for name, argv in configs(part, dataset, data_dir):
        out = os.path.join(runs, part, dataset, name)
        argv = argv + ["--out", out, "--no-progress"]
        if os.path.exists(os.path.join(out, "config.json")):
            argv.append("--resume")
        print("ntkcond train-track " + " ".join(map(shlex.quote, argv)), flush=True)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv, prog="ntkcond train-track")
        print(f"  -> exit {code} {err.getvalue().strip()}", flush=True)


# ---------------------------------------------------------------------------- the report
def summary(part: str, dataset: str, data_dir: str, runs: str) -> list[dict]:
    """One row per run: its first and last snapshot, the command, or what stopped it."""
    import ntkcond.runs

    rows = []
    for name, argv in configs(part, dataset, data_dir):
        out = os.path.join(runs, part, dataset, name)
        flags = dict(zip(argv[::2], argv[1::2]))
        row = {"dataset": dataset, "name": name, "depth": int(flags.get("--depths", 1)),
               "width": int(flags["--width"]), "activation": flags["--activations"],
               "b_std": float(flags.get("--b-std", 0)), "init_scale": float(flags.get("--init-scale", 1)),
               "lr": float(flags["--lr"]), "steps": int(flags["--steps"]),
               "command": "ntkcond train-track " + " ".join(map(shlex.quote, argv + ["--out", out]))}
        if not os.path.exists(os.path.join(out, "records.jsonl")):
            rows.append(dict(row, status="not run"))
            continue
        frame = ntkcond.runs.load(out).sort_values("step")
        first, last = frame.iloc[0], frame.iloc[-1]
        status = "done" if last.step == row["steps"] else f"stopped at step {int(last.step)}"
        row.update(status=status, last_step=int(last.step), loss_0=first.loss, loss_end=last.loss,
                   kappa_eff_0=first.kappa_eff, kappa_eff_end=last.kappa_eff,
                   kappa_eff_max=frame.kappa_eff.max(), kappa_eff_min=frame.kappa_eff.min(),
                   lambda_max_0=first.lambda_max, lambda_max_end=last.lambda_max,
                   kernel_distance_end=last.kernel_distance, ntk_drift_end=last.ntk_drift,
                   alignment_0=first.alignment, alignment_end=last.alignment,
                   effective_rank_0=first.effective_rank, effective_rank_end=last.effective_rank,
                   rank_end=int(last["rank"]))
        rows.append(row)
    return rows


FIELDS = ["dataset", "name", "depth", "width", "activation", "b_std", "init_scale", "lr", "steps",
          "status", "last_step", "loss_0", "loss_end", "kappa_eff_0", "kappa_eff_end",
          "kappa_eff_min", "kappa_eff_max", "lambda_max_0", "lambda_max_end",
          "kernel_distance_end", "ntk_drift_end", "alignment_0", "alignment_end",
          "effective_rank_0", "effective_rank_end", "rank_end", "command"]


def slope(xs, ys) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def g(v, digits=3) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def width_table(rows) -> list[str]:
    out = ["| data | σ, s_b | m | loss end/0 | κ_eff 0 → end (min–max) | kernel distance | drift ‖K−K₀‖/‖K₀‖ | λmax end/0 | alignment 0 → end | eff. rank 0 → end |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] == "not run":
            continue
        if "loss_0" not in r:
            continue
        out.append(f"| {NAMES[r['dataset']]} | {r['activation']}, {r['b_std']:g} | {r['width']} | "
                   f"{r['loss_end'] / r['loss_0']:.3g} | {g(r['kappa_eff_0'])} → {g(r['kappa_eff_end'])} "
                   f"({g(r['kappa_eff_min'])}–{g(r['kappa_eff_max'])}) | {g(r['kernel_distance_end'])} | "
                   f"{g(r['ntk_drift_end'])} | {r['lambda_max_end'] / r['lambda_max_0']:.3g} | "
                   f"{g(r['alignment_0'])} → {g(r['alignment_end'])} | "
                   f"{g(r['effective_rank_0'])} → {g(r['effective_rank_end'])} |"
                   + ("" if r["status"] == "done" else f" {r['status']} |"))
    return out


def slopes_table(rows) -> list[str]:
    out = ["| data | σ, s_b | widths | slope of drift vs m | slope of kernel distance vs m | κ_eff end/0 at m = 64 … 4096 |",
           "|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        if r.get("status") == "done":
            groups.setdefault((r["dataset"], r["activation"], r["b_std"]), []).append(r)
    for (ds, act, b), sel in groups.items():
        sel = sorted(sel, key=lambda r: r["width"])
        ms = [r["width"] for r in sel]
        out.append(f"| {NAMES[ds]} | {act}, {b:g} | {ms[0]}–{ms[-1]} ({len(ms)}) | "
                   f"{slope(ms, [r['ntk_drift_end'] for r in sel]):.2f} | "
                   f"{slope(ms, [r['kernel_distance_end'] for r in sel]):.2f} | "
                   + ", ".join(f"{r['kappa_eff_end'] / r['kappa_eff_0']:.2f}" for r in sel) + " |")
    return out


def init_table(rows) -> list[str]:
    out = ["| data | σ, s_b | α | loss end/0 | κ_eff 0 → end (min–max) | kernel distance | drift | λmax end/0 | alignment 0 → end | eff. rank 0 → end |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "loss_0" not in r:
            continue
        out.append(f"| {NAMES[r['dataset']]} | {r['activation']}, {r['b_std']:g} | {r['init_scale']:g} | "
                   f"{r['loss_end'] / r['loss_0']:.3g} | {g(r['kappa_eff_0'])} → {g(r['kappa_eff_end'])} "
                   f"({g(r['kappa_eff_min'])}–{g(r['kappa_eff_max'])}) | {g(r['kernel_distance_end'])} | "
                   f"{g(r['ntk_drift_end'])} | {r['lambda_max_end'] / r['lambda_max_0']:.3g} | "
                   f"{g(r['alignment_0'])} → {g(r['alignment_end'])} | "
                   f"{g(r['effective_rank_0'])} → {g(r['effective_rank_end'])} |"
                   + ("" if r["status"] == "done" else f" {r['status']} |"))
    return out


def repro_table(rows) -> list[str]:
    out = ["| data | L, σ | steps | κ_eff 0 (train-vs-depth's) | κ_eff end (train-vs-depth's) | drift D end (train-vs-depth's) | kernel distance S end | ‖K‖ end/0 = ρ | shape part √(2ρS) | λmax end/0 | alignment 0 → end |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "loss_0" not in r:
            continue
        # D² = ρ² + 1 − 2ρ(1 − S): the drift D splits into the growth ρ − 1 and the shape change S
        S, D = r["kernel_distance_end"], r["ntk_drift_end"]
        rho = (1 - S) + math.sqrt((1 - S) ** 2 - 1 + D * D)
        ref = next(t for t in csv.DictReader(open(os.path.join(HERE, f"train_vs_depth_{r['dataset']}.csv"),
                                                  encoding="utf-8"))
                   if t["width"] == "512" and int(t["depth"]) == r["depth"] and t["activation"] == r["activation"])
        out.append(f"| {NAMES[r['dataset']]} | {r['depth']}, {r['activation']} | {r['last_step']} | "
                   f"{g(r['kappa_eff_0'], 6)} ({g(float(ref['kappa_eff']), 6)}) | "
                   f"{g(r['kappa_eff_end'], 6)} ({g(float(ref['kappa_eff_end']), 6)}) | "
                   f"{g(r['ntk_drift_end'], 4)} ({g(float(ref['ntk_drift']), 4)}) | "
                   f"{g(r['kernel_distance_end'])} | {rho:.3g} | {math.sqrt(2 * rho * S):.3g} | "
                   f"{r['lambda_max_end'] / r['lambda_max_0']:.3g} | "
                   f"{g(r['alignment_0'])} → {g(r['alignment_end'])} |")
    return out


def figures(width_rows, init_rows, runs, out_dir) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import ntkcond.runs
    from ntkcond._core.io import atomic_savefig

    paths = []
    done = [r for r in width_rows if r.get("status") == "done"]
    if done:
        fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
        for (ds, act, b), style in {(d, a, b): None for d in LR for a in ("relu", "linear") for b in (0.0, 0.1)}.items():
            sel = sorted((r for r in done if (r["dataset"], r["activation"], r["b_std"]) == (ds, act, b)),
                         key=lambda r: r["width"])
            if not sel:
                continue
            colour = {"relu": "C3", "linear": "C0"}[act]
            ls = "-" if ds == "mnist" else "--"
            marker = "o" if b == 0 else "s"
            label = f"{NAMES[ds]} {act}{'' if b == 0 else f', s_b={b:g}'}"
            ms = [r["width"] for r in sel]
            axes[0].plot(ms, [r["ntk_drift_end"] for r in sel], ls, color=colour, marker=marker, mfc="none", label=label)
            axes[1].plot(ms, [r["kernel_distance_end"] for r in sel], ls, color=colour, marker=marker, mfc="none", label=label)
            axes[2].plot(ms, [r["kappa_eff_end"] / r["kappa_eff_0"] for r in sel], ls, color=colour, marker=marker,
                         mfc="none", label=label)
        m = np.array(WIDTHS, float)
        for ax, top, powers in ((axes[0], 0.5, (0.5, 1.0)), (axes[1], 1e-2, (1.0, 2.0))):
            for k, power in zip((":", "-."), powers):
                ax.plot(m, top * (m / 64) ** -power, k, color="grey", label=f"∝ m^-{power:g}")
            ax.legend(fontsize=7)
        steps = sorted({r["steps"] for r in done})
        for ax, ylabel in zip(axes, ["‖K_end − K₀‖_F / ‖K₀‖_F", "kernel distance 1 − cos(K₀, K_end)",
                                      "κ_eff(end) / κ_eff(0)"]):
            ax.set(xscale="log", yscale="log" if "κ" not in ylabel else "linear", xlabel="width m", ylabel=ylabel)
            ax.grid(alpha=0.3)
        axes[2].axhline(1, color="grey", lw=0.8)
        fig.suptitle(f"One hidden layer, full-batch SGD for {', '.join(map(str, steps))} steps on 256 test "
                     "images; the NTK of those 256 images at the end against step 0", fontsize=10)
        fig.tight_layout()
        path = os.path.join(out_dir, "train_track_width.png")
        atomic_savefig(fig, path, dpi=110)
        plt.close(fig)
        paths.append(path)
    done = [r for r in init_rows if r.get("status") in ("done",) or r.get("status", "").startswith("stopped")]
    if done:
        fig, axes = plt.subplots(2, 4, figsize=(20, 8.5))
        for row, ds in enumerate(LR):
            for col, field, ylabel in ((0, "loss", "training loss"), (1, "kappa_eff", "κ_eff"),
                                       (2, "kernel_distance", "kernel distance to step 0"),
                                       (3, "effective_rank", "effective rank")):
                ax = axes[row, col]
                for r in (r for r in done if r["dataset"] == ds and r["b_std"] == 0):
                    frame = ntkcond.runs.load(os.path.join(runs, "init", ds, r["name"])).sort_values("step")
                    colour = plt.cm.viridis(SCALES.index(r["init_scale"]) / (len(SCALES) - 1))
                    ax.plot(frame.step.clip(lower=0.5), frame[field], "-" if r["activation"] == "relu" else "--",
                            color=colour, label=f"{r['activation']} α={r['init_scale']:g}")
                ax.set(xscale="log", yscale="log" if field in ("loss", "kappa_eff") else "linear",
                       xlabel="step (0 drawn at 0.5)", ylabel=ylabel, title=f"{NAMES[ds]}: {ylabel}")
                ax.grid(alpha=0.3)
            axes[row, 0].legend(fontsize=7, ncol=2)
        fig.suptitle("Width 512, one hidden layer, bias-free; every initial parameter × α (solid ReLU, dashed "
                     "linear); full-batch SGD, 256 test images", fontsize=10)
        fig.tight_layout()
        path = os.path.join(out_dir, "train_track_init.png")
        atomic_savefig(fig, path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def report(data_dir: str, runs: str, out_dir: str) -> None:
    from ntkcond.runs.tables import write_csv

    lines = ["# The NTK over training: the lazy-to-rich transition on MNIST and CIFAR-10", "",
             "[← README](../../README.md) · made by `python docs/results/train_track_study.py` "
             "(`--part width|init|repro --dataset mnist|cifar10`, then `--report`); each row's "
             "`ntkcond train-track` command is in the CSV beside it.", ""]
    rows = {}
    for part in ("width", "init", "repro"):
        rows[part] = [r for ds in LR for r in summary(part, ds, data_dir, runs)]
        write_csv(os.path.join(out_dir, f"train_track_{part}.csv"), rows[part], FIELDS)
    lines += ["## Width (one hidden layer, 500 steps)", "", *slopes_table(rows["width"]), "",
              *width_table(rows["width"]), "", "![width](train_track_width.png)", "",
              "## Initialisation scale α (width 512, 2000 steps)", "", *init_table(rows["init"]), "",
              "![init](train_track_init.png)", "",
              "## train-vs-depth's nets, tracked (width 512, float64, their η and steps)", "",
              *repro_table(rows["repro"]), ""]
    figures(rows["width"], rows["init"], runs, out_dir)
    from ntkcond._core.io import atomic_write

    atomic_write(os.path.join(out_dir, "train_track.md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", choices=["width", "init", "repro"], nargs="*", default=[])
    p.add_argument("--dataset", choices=sorted(LR), nargs="*", default=sorted(LR))
    p.add_argument("--data-dir", default="../shared/data", help="from the repository root")
    p.add_argument("--runs", default=os.path.join("runs", "train_track_study"))
    p.add_argument("--report", action="store_true", help="write the tables and figures")
    p.add_argument("--out", default=HERE, help="folder of the tables and figures")
    args = p.parse_args(argv)
    for part in args.part:
        for ds in args.dataset:
            run_part(part, ds, args.data_dir, args.runs)
    if args.report:
        report(args.data_dir, args.runs, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
