#!/usr/bin/env python3
"""NTK condition number and smallest gradient angle against depth, ReLU beside linear.

examples:
  python scripts/cond_vs_depth.py                      # digits, batch 512, depths 0-10
  python scripts/cond_vs_depth.py --dataset cifar10 --split test --data-dir ../shared/data
  python scripts/cond_vs_depth.py --dataset path/to/file.npz --preset mnist --depths 0,1,5
  python scripts/cond_vs_depth.py --width inf 512 2048 --seeds 5   # finite beside infinite

Finite widths are exact empirical NTKs of ntkcond.mlp nets (float64), one net per seed
0 … --seeds − 1, the same nets on every batch. Writes to --out: config.json, records.jsonl
(one record per batch × width × activation × seed × depth, appended as each finishes),
summary.csv (median, mean, min, max over batches and seeds) and figure.png; prints the table
(medians) and the figure's path. --save-spectra also keeps every kernel's eigenvalues
(spectra/<key>.npy as each finishes, packed into spectra.npz, keys
b{batch}_L{depth}_{activation}_w{width}_s{seed}) and draws spectra.png (eigenvalue decay per
depth, ReLU vs linear, first batch). --resume continues a killed run; a run directory is never
replaced without --overwrite. The library call: ntkcond.runs.cond_vs_depth.cond_vs_depth.
"""
from __future__ import annotations

import argparse
import os
import sys

from ntkcond.runs.cli import (ACTIVATIONS_HELP, activation_name, add_net_arguments, net_kwargs,
                              add_data_arguments, add_run_arguments, load_data, parse_depths,
                              parse_width, parser, positive_int, run_main)
from ntkcond.runs.launcher import add_process_arguments
from ntkcond.runs.cond_vs_depth import cond_vs_depth, format_table

PROG = "cond_vs_depth"


def build_parser() -> argparse.ArgumentParser:
    p = parser(PROG, __doc__)
    add_data_arguments(p)
    p.add_argument("--batch", type=positive_int, default=512, help="batch size n")
    p.add_argument("--max-batches", type=positive_int, default=None, help="at most this many batches")
    p.add_argument("--depths", default="0-10", help="e.g. 0-10 or 0,1,5")
    p.add_argument("--activations", nargs="+", type=activation_name, default=["relu", "linear"],
                   help=ACTIVATIONS_HELP)
    add_net_arguments(p)
    p.add_argument("--width", type=parse_width, nargs="+", default=["inf"],
                   help="inf and/or finite widths, e.g. --width inf 512 2048")
    p.add_argument("--seeds", type=positive_int, default=5,
                   help="finite widths: number of random nets, seeds 0..S-1")
    p.add_argument("--trainable", default="all", choices=["all", "first", "last"],
                   help="which weights are trained: all layers, W1 only, or the read-out only")
    p.add_argument("--seed", type=int, default=0, help="shuffling seed")
    p.add_argument("--in-order", action="store_true", help="keep the file order (no shuffling)")
    p.add_argument("--drop-last", action="store_true", help="drop a final smaller batch")
    p.add_argument("--save-spectra", action="store_true",
                   help="keep every kernel's eigenvalues: spectra.npz and spectra.png")
    add_run_arguments(p, PROG)
    add_process_arguments(p)
    return p


def run(args):
    ds = load_data(args, seed=args.seed)
    sweep = cond_vs_depth(ds, **net_kwargs(args), out=args.out, batch=args.batch, depths=parse_depths(args.depths),
                          activations=args.activations, widths=args.width, seeds=args.seeds,
                          trainable=args.trainable, seed=args.seed, in_order=args.in_order,
                          drop_last=args.drop_last, max_batches=args.max_batches,
                          resume=args.resume, overwrite=args.overwrite,
                          progress=not args.no_progress, save_spectra=args.save_spectra)
    print(sweep.title)
    print(format_table(sweep.rows))
    print("(medians over batches and seeds; * = kappa_eff at the float64 resolution limit)")
    print(f"summary: {os.path.abspath(sweep.summary_csv)}")
    print(f"figure: {os.path.abspath(sweep.figure)}")
    if sweep.spectra:
        print(f"spectra: {os.path.abspath(sweep.spectra)}, {os.path.abspath(sweep.spectra_figure)}")
    return sweep


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
