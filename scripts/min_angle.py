#!/usr/bin/env python3
"""Smallest infinite-width gradient angle over all pairs of a data set, per depth and activation.

examples:
  python scripts/min_angle.py                                  # digits (1797 images), depths 0-10
  python scripts/min_angle.py --dataset mnist --split test --data-dir ../shared/data
  python scripts/min_angle.py --dataset ../shared/data/mnist_test.npz --preset mnist

Streams the n(n−1)/2 pairs block by block: memory O(block² + n·d). Writes config.json,
records.jsonl (one record per activation × depth), result.json (also the input angle and the
run's timing) and table.csv to --out, and checkpoint.json while running: --resume continues
a killed run from its last finished block row; --overwrite starts over. Prints the table.
The library call: ntkcond.runs.min_angle.min_angle.
"""
from __future__ import annotations

import math
import os
import sys

from ntkcond.runs.cli import (ACTIVATIONS_HELP, activation_name, add_net_arguments, net_kwargs,
                              add_data_arguments, add_run_arguments, load_data, parse_depths,
                              parser, run_main)
from ntkcond.runs.launcher import add_process_arguments
from ntkcond.runs.min_angle import format_table, min_angle

PROG = "min_angle"


def build_parser():
    p = parser(PROG, __doc__)
    add_data_arguments(p)
    p.add_argument("--limit", type=int, default=None, help="use only the first N examples")
    p.add_argument("--seed", type=int, default=0, help="gaussian: seed")
    p.add_argument("--depths", default="0-10", help="e.g. 0-10 or 0,1,5")
    p.add_argument("--activations", nargs="+", type=activation_name, default=["relu", "linear"],
                   help=ACTIVATIONS_HELP)
    add_net_arguments(p)
    p.add_argument("--trainable", default="all", choices=["all", "first", "last"],
                   help="which weights are trained: all layers, W1 only, or the read-out only")
    p.add_argument("--block", type=int, default=1024, help="block size")
    p.add_argument("--backend", default="auto", choices=["auto", "numpy", "jax"])
    p.add_argument("--devices", type=int, default=None, help="jax: use the first N devices")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                   help="jax backend only: float32 blocks with highest-precision matmuls")
    p.add_argument("--workers", type=int, default=None, help="numpy: threads (default: CPUs)")
    add_run_arguments(p, PROG)
    add_process_arguments(p)
    return p


def run(args):
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers: expected an integer >= 1, got {args.workers}")
    ds = load_data(args, seed=args.seed)
    res = min_angle(ds, **net_kwargs(args), out=args.out, depths=parse_depths(args.depths), activations=args.activations,
                    trainable=args.trainable, limit=args.limit, block=args.block,
                    backend=args.backend, devices=args.devices, dtype=args.dtype,
                    workers=args.workers, resume=args.resume, overwrite=args.overwrite,
                    progress=not args.no_progress)
    r, c = res.result, res.result["config"]
    print(f"{os.path.basename(c['dataset'])} ({c['split']}), n = {c['n']}, {r['pairs']} pairs, "
          f"infinite width, trainable = {c['trainable']}, {c['backend']} x{c['devices']}, "
          f"{r['seconds']:.1f} s")
    print(f"smallest input angle: {math.degrees(r['input_angle_rad']):.6g} deg, pair {tuple(r['input_pair'])}")
    print(format_table(r))
    print(f"result: {os.path.abspath(res.result_json)}")
    return res


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
