#!/usr/bin/env python3
"""Effective condition number and smallest gradient angle against the batch size n.

examples:
  python scripts/cond_vs_batch.py                                   # digits (d = 64), up to 1797
  python scripts/cond_vs_batch.py --dataset ../shared/data/mnist_test.npz --preset mnist
  python scripts/cond_vs_batch.py --dataset ../shared/data/cifar10_test_jpeg_lossy.npz --preset cifar10

Batches are nested (the first n of one fixed shuffled order). For each n, activation and
depth: the exact κ_eff of the n × n infinite-width NTK, its numerical rank, and the smallest
gradient angle over all pairs. Writes config.json, records.jsonl, table.csv and figure.png to
--out (--resume continues a killed run, --overwrite starts over); prints the table. The
library call: ntkcond.runs.cond_vs_batch.cond_vs_batch.
"""
from __future__ import annotations

import os
import sys

from ntkcond.runs.cli import (ACTIVATIONS_HELP, activation_name, add_net_arguments, net_kwargs,
                              add_data_arguments, add_run_arguments, load_data, parse_depths,
                              parse_sizes, parser, run_main)
from ntkcond.runs.launcher import add_process_arguments
from ntkcond.runs.cond_vs_batch import cond_vs_batch, format_table

PROG = "cond_vs_batch"


def build_parser():
    p = parser(PROG, __doc__)
    add_data_arguments(p, split="test")
    p.add_argument("--sizes", default=None,
                   help="batch sizes, e.g. 64,128,1000 (default: 64, 128, ... and the data-set size)")
    p.add_argument("--max-n", type=int, default=10000, help="cap on the default batch sizes")
    p.add_argument("--depths", default="1,3,10", help="e.g. 1,3,10 or 0-10")
    p.add_argument("--activations", nargs="+", type=activation_name, default=["relu", "linear"],
                   help=ACTIVATIONS_HELP)
    add_net_arguments(p)
    p.add_argument("--no-angles", action="store_true", help="skip the smallest-angle streaming")
    p.add_argument("--block", type=int, default=1024, help="block size")
    p.add_argument("--seed", type=int, default=0, help="shuffling seed")
    add_run_arguments(p, PROG)
    add_process_arguments(p)
    return p


def run(args):
    ds = load_data(args, seed=args.seed)
    sweep = cond_vs_batch(ds, **net_kwargs(args), out=args.out, sizes=None if args.sizes is None else parse_sizes(args.sizes),
                          max_n=args.max_n, depths=parse_depths(args.depths),
                          activations=args.activations, angles=not args.no_angles, block=args.block,
                          seed=args.seed, resume=args.resume, overwrite=args.overwrite,
                          progress=not args.no_progress)
    print(sweep.title)
    print(format_table(sweep.records))
    print("(rank < n: the kernel is singular; kappa_eff is measured on its range)")
    print(f"table: {os.path.abspath(sweep.table_csv)}")
    print(f"figure: {os.path.abspath(sweep.figure)}")
    return sweep


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
