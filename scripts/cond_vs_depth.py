#!/usr/bin/env python3
"""NTK condition number and smallest gradient angle against depth, ReLU beside linear.

    python scripts/cond_vs_depth.py                      # digits, batch 512, depths 0-10
    python scripts/cond_vs_depth.py --dataset path/to/file.npz --batch 256 --depths 0,1,5
    python scripts/cond_vs_depth.py --width inf 512 2048 --seeds 5   # finite beside infinite

Finite widths are exact empirical NTKs of ntkcond.mlp nets (structured path, float64), one
net per seed 0 … --seeds − 1, the same nets on every batch.

Writes to --out: records.jsonl (one JSON record per batch × depth × activation, appended as
each finishes), summary.csv, figure.png and config.json; prints the summary table and the
figure's path. --resume continues a killed run without recomputing or duplicating records;
a run directory is never silently overwritten (--overwrite).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys

import numpy as np
from tqdm.auto import tqdm

from ntkcond import datasets, parse_activation
from ntkcond._core.io import atomic_write
from ntkcond.runs.depth import (format_table, measure_finite_batch, measure_infinite_batch,
                                plot_cond_vs_depth, summarize)
from ntkcond.runs.rundir import open_run
from ntkcond.runs.cli import add_data_arguments, load_data, parse_depths, run_main

PROG = "cond_vs_depth"


def parse_width(text: str):
    """'inf' or an int >= 1 (argparse type for --width)."""
    if text.strip().lower() in ("inf", "infinite", "∞"):
        return "inf"
    try:
        width = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'inf' or an integer width >= 1, got {text!r}") from None
    if width < 1:
        raise argparse.ArgumentTypeError(f"expected 'inf' or an integer width >= 1, got {text!r}")
    return width


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_data_arguments(p)
    p.add_argument("--batch", type=int, default=512, help="batch size n (default 512)")
    p.add_argument("--max-batches", type=int, default=None, help="at most this many batches")
    p.add_argument("--depths", default="0-10", help="e.g. 0-10 or 0,1,5 (default 0-10)")
    p.add_argument("--activations", nargs="+", default=["relu", "linear"],
                   help="relu linear leaky:0.1 ... (default relu linear)")
    p.add_argument("--width", type=parse_width, nargs="+", default=["inf"],
                   help="inf and/or finite widths, e.g. --width inf 512 2048 (default inf)")
    p.add_argument("--seeds", type=int, default=5,
                   help="finite widths: number of random nets, seeds 0..S-1 (default 5)")
    p.add_argument("--trainable", default="all", choices=["all", "first", "last"])
    p.add_argument("--seed", type=int, default=0, help="shuffling seed")
    p.add_argument("--in-order", action="store_true", help="keep the file order (no shuffling)")
    p.add_argument("--drop-last", action="store_true", help="drop a final smaller batch")
    p.add_argument("--normalize", default="default", choices=["default", "unit", "none"])
    p.add_argument("--out", default=os.path.join("runs", PROG), help="output folder")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out (its configuration must match)")
    p.add_argument("--overwrite", action="store_true", help="discard the records in --out")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def run(args) -> str:
    depths = parse_depths(args.depths)
    activations = [parse_activation(a).name for a in args.activations]
    widths = sorted(set(args.width), key=lambda w: float("inf") if w == "inf" else w)
    if args.seeds < 1:
        raise ValueError(f"--seeds: expected >= 1, got {args.seeds}")
    seeds = list(range(args.seeds))
    ds = load_data(args, seed=args.seed, normalize=args.normalize)
    index_batches = datasets.batches(ds, args.batch, seed=args.seed, shuffle=not args.in_order,
                                     max_batches=args.max_batches, drop_last=args.drop_last)
    config = {"dataset": ds.name, "split": ds.split, "batch": args.batch, "depths": depths,
              "activations": activations, "width": widths, "trainable": args.trainable,
              "init_seeds": seeds if widths != ["inf"] else None,
              "seed": args.seed, "in_order": args.in_order, "drop_last": args.drop_last,
              "max_batches": args.max_batches, "preprocessing": ds.preprocessing}
    run_dir = open_run(args.out, config, resume=args.resume, overwrite=args.overwrite)
    records = list(run_dir.records)
    todo = []  # (batch, activation, width, seed, depths still missing)
    for b in range(len(index_batches)):
        for width in widths:
            for act in activations:
                for seed in ([None] if width == "inf" else seeds):
                    missing = [L for L in depths
                               if (b, L, act, str(width), seed) not in run_dir.done]
                    if missing:
                        todo.append((b, act, width, seed, missing))
    total = len(index_batches) * len(activations) * len(depths) * sum(
        1 if w == "inf" else len(seeds) for w in widths)
    with tqdm(total=total, initial=len(run_dir.done), desc=PROG, unit="kernel",
              disable=args.no_progress) as bar:
        for b, act, width, seed, missing in todo:
            index = index_batches[b]
            meta = {"dataset": ds.name, "split": ds.split, "batch_index": b}
            if width == "inf":
                new = measure_infinite_batch(ds.x[index], index, depths=missing, activations=[act],
                                             trainable=args.trainable, meta=meta)
            else:
                new = measure_finite_batch(ds.x[index], index, depths=missing, activations=[act],
                                           width=width, seeds=[seed], trainable=args.trainable,
                                           meta=meta)
            for rec in new:
                run_dir.append(rec)
                records.append(rec)
                bar.update(1)
    rows = summarize(records)
    buf = io.StringIO()
    buf.write(f"# preprocessing: {json.dumps(ds.preprocessing)}\n")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(os.path.join(args.out, "summary.csv"), buf.getvalue())
    title = (f"{ds.name} ({ds.split}), n = {args.batch}, {len(index_batches)} batch(es), "
             f"width {', '.join('∞' if w == 'inf' else str(w) for w in widths)}"
             + (f" ({args.seeds} seeds)" if widths != ["inf"] else "")
             + f", trainable = {args.trainable}")
    figure = plot_cond_vs_depth(rows, os.path.join(args.out, "figure.png"), title=title,
                                metadata=config)
    print(title)
    print(format_table(rows))
    print("(* = kappa_eff at the float64 resolution limit)")
    print(f"figure: {os.path.abspath(figure)}")
    return figure


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
