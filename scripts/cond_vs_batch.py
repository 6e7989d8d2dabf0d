#!/usr/bin/env python3
"""Effective condition number and smallest gradient angle against the batch size n.

    python scripts/cond_vs_batch.py                                   # digits (d = 64), up to 1797
    python scripts/cond_vs_batch.py --dataset ../shared/data/mnist_test.npz --mean 0.5 --std 0.5
    python scripts/cond_vs_batch.py --dataset ../shared/data/cifar10_test_jpeg_lossy.npz \\
        --mean 0.4914 0.4824 0.4467 --std 0.2471 0.2435 0.2616

Batches are nested (the first n of one fixed shuffled order), so every larger batch contains
the smaller ones. For each n, activation and depth: the exact κ_eff of the n × n infinite-width
NTK (blockwise kernel + one float64 eigvalsh, ``ntkcond.largescale``), its numerical rank, and
the smallest gradient angle over all pairs (``ntkcond.streaming``). The linear net's kernel is
(L+1)·XXᵀ/d at every depth, of rank ≤ d: past n = d it is singular and κ_eff measures it on its
range. Writes records.jsonl, table.csv, figure.png and config.json to --out; prints the table.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import time

import numpy as np
from tqdm.auto import tqdm

from ntkcond import parse_activation
from ntkcond._core.io import append_jsonl, atomic_savefig, atomic_write
from ntkcond.scale.conditioning import exact_conditioning
from ntkcond.scale.streaming import streaming_smallest_angles
from ntkcond.runs.cli import add_data_arguments, load_data, run_main

PROG = "cond_vs_batch"


def parse_ints(text: str, flag: str, low: int) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise ValueError(f"{flag}: expected comma-separated integers, got {text!r}") from None
    if not values or values[0] < low:
        raise ValueError(f"{flag}: expected integers >= {low}, got {text!r}")
    return values


def default_sizes(n_max: int) -> list[int]:
    sizes = [64 * 2**k for k in range(12) if 64 * 2**k < n_max]
    return sizes + [n_max]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_data_arguments(p, split="test")
    p.add_argument("--sizes", default=None,
                   help="batch sizes, e.g. 64,128,1000 (default 64, 128, ... and the data-set size)")
    p.add_argument("--max-n", type=int, default=10000, help="cap on the batch size (default 10000)")
    p.add_argument("--depths", default="1,3,10", help="ReLU depths (default 1,3,10)")
    p.add_argument("--activations", nargs="+", default=["relu", "linear"])
    p.add_argument("--no-angles", action="store_true", help="skip the smallest-angle streaming")
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0, help="shuffling seed")
    p.add_argument("--out", default=os.path.join("runs", PROG), help="output folder")
    p.add_argument("--no-progress", action="store_true")
    return p


def run(args) -> str:
    depths = parse_ints(args.depths, "--depths", 0)
    activations = [parse_activation(a) for a in args.activations]
    ds = load_data(args, seed=args.seed)
    n_all, d = ds.x.shape
    n_max = min(n_all, args.max_n)
    sizes = default_sizes(n_max) if args.sizes is None else parse_ints(args.sizes, "--sizes", 2)
    if sizes[-1] > n_all:
        raise ValueError(f"--sizes: expected sizes <= n = {n_all} ({ds.name}), got {sizes[-1]}")
    order = np.random.default_rng(args.seed).permutation(n_all)
    config = {"dataset": ds.name, "split": ds.split, "d": d, "sizes": sizes, "depths": depths,
              "activations": [a.name for a in activations], "width": "inf", "trainable": "all",
              "seed": args.seed, "nested": True, "preprocessing": ds.preprocessing}
    os.makedirs(args.out, exist_ok=True)
    atomic_write(os.path.join(args.out, "config.json"), json.dumps(config, indent=2) + "\n")
    records_path = os.path.join(args.out, "records.jsonl")
    atomic_write(records_path, "")
    records = []
    for n in tqdm(sizes, desc=PROG, unit="size", disable=args.no_progress):
        x = ds.x[order[:n]]
        angles = None
        if not args.no_angles:
            angles = streaming_smallest_angles(x, depths=depths, activations=activations,
                                               block=args.block)
        for act in activations:
            t0 = time.perf_counter()
            # Linear: κ is the same at every depth (K = (L+1)·XXᵀ/d); one kernel serves all.
            conds = exact_conditioning(x, depths=depths[:1] if act.is_linear else depths,
                                       activation=act, block=args.block)
            seconds = time.perf_counter() - t0
            for L in depths:
                c = conds[depths[0]] if act.is_linear else conds[L]
                rec = {"dataset": ds.name, "n": n, "d": d, "activation": act.name, "depth": L,
                       "lambda_max": c.lambda_max, "lambda_min_nonzero": c.lambda_min_nonzero,
                       "rank": c.rank, "kappa_eff": c.kappa_eff,
                       "kappa": c.kappa if math.isfinite(c.kappa) else None,
                       "precision_limited": c.precision_limited, "seconds": seconds}
                if angles is not None:
                    r = angles.get(act.name, L)
                    rec.update(min_grad_angle_deg=r.degrees, min_grad_angle_pair=[int(order[r.pair[0]]), int(order[r.pair[1]])])
                append_jsonl(records_path, rec)
                records.append(rec)
    atomic_write(os.path.join(args.out, "table.csv"), table_csv(records, config))
    figure = plot(records, config, os.path.join(args.out, "figure.png"))
    print(f"{ds.name} ({ds.split}), d = {d}, nested batches, infinite width")
    print(format_table(records))
    print("(rank < n: the kernel is singular; kappa_eff is measured on its range)")
    print(f"figure: {os.path.abspath(figure)}")
    return figure


def table_csv(records, config) -> str:
    buf = io.StringIO()
    buf.write(f"# {json.dumps(config)}\n")
    fields = ["n", "activation", "depth", "rank", "kappa_eff", "kappa", "lambda_max",
              "lambda_min_nonzero", "precision_limited", "min_grad_angle_deg"]
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(records)
    return buf.getvalue()


def format_table(records) -> str:
    keys = list(dict.fromkeys((r["activation"], r["depth"]) for r in records
                              if not (r["activation"] == "linear" and r["depth"] != min(q["depth"] for q in records))))
    head = f"{'n':>6} " + " ".join(f"{(a if a == 'linear' else f'{a} L={L}'):>22}" for a, L in keys)
    lines = [head, f"{'':>6} " + " ".join(f"{'kappa_eff  rank  angle':>22}" for _ in keys)]
    for n in sorted({r["n"] for r in records}):
        cells = []
        for a, L in keys:
            r = next(q for q in records if q["n"] == n and q["activation"] == a and q["depth"] == L)
            angle = r.get("min_grad_angle_deg")
            cells.append(f"{r['kappa_eff']:10.4g}{'*' if r['precision_limited'] else ' '}{r['rank']:6d} "
                         f"{'' if angle is None else f'{angle:5.2f}':>5}")
        lines.append(f"{n:6d} " + " ".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)


def plot(records, config, path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    series = list(dict.fromkeys((r["activation"], r["depth"]) for r in records))
    for a, L in series:
        if a == "linear" and L != config["depths"][0]:
            continue
        rs = sorted((r for r in records if r["activation"] == a and r["depth"] == L), key=lambda r: r["n"])
        label = "linear (any depth)" if a == "linear" else f"{a}, L = {L}"
        style = dict(marker="o", ms=3, ls="--" if a == "linear" else "-")
        axes[0].plot([r["n"] for r in rs], [r["kappa_eff"] for r in rs], label=label, **style)
        axes[2].plot([r["n"] for r in rs], [r["rank"] for r in rs], label=label, **style)
        if rs[0].get("min_grad_angle_deg") is not None:
            axes[1].plot([r["n"] for r in rs], [r["min_grad_angle_deg"] for r in rs], label=label, **style)
    for ax in axes:
        ax.axvline(config["d"], color="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_xlabel("batch size n")
    axes[0].text(config["d"], 0.02, " n = d", color="grey", transform=axes[0].get_xaxis_transform())
    axes[0].set_yscale("log")
    axes[0].set_ylabel("effective condition number κ_eff")
    axes[1].set_ylabel("smallest gradient angle (degrees)")
    ns = sorted({r["n"] for r in records})
    axes[2].plot(ns, ns, color="grey", lw=0.8, label="rank = n")
    axes[2].set_yscale("log")
    axes[2].set_ylabel("numerical rank (eigenvalues > n·eps·λ_max)")
    axes[2].legend(fontsize=8)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{os.path.basename(config['dataset'])} ({config['split']}), d = {config['d']}, infinite width, nested batches",
                 fontsize=10)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=120, metadata={"Description": json.dumps(config)})
    plt.close(fig)
    return path


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
