#!/usr/bin/env python3
"""Smallest infinite-width gradient angle over all pairs of a data set, per depth and activation.

    python scripts/min_angle.py                                  # digits (1797 images), depths 0-10
    python scripts/min_angle.py --dataset mnist --split test --depths 0-10
    python scripts/min_angle.py --dataset ../shared/data/mnist_test.npz --mean 0.5 --std 0.5

Streams the n(n−1)/2 pairs block by block (``ntkcond.streaming``): memory O(block² + n·d).
Writes to --out: result.json (config, preprocessing, per activation × depth the angle in
radians and degrees and its pair), table.csv, and checkpoint.json while running; an interrupted
run started again with the same arguments resumes from its last finished block row
(--fresh starts over). Prints the table.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys

from ntkcond import parse_activation
from ntkcond._core.io import atomic_write
from ntkcond.scale.streaming import streaming_smallest_angles
from ntkcond.runs.cli import add_data_arguments, load_data, parse_depths, run_main

PROG = "min_angle"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_data_arguments(p)
    p.add_argument("--limit", type=int, default=None, help="use only the first N examples")
    p.add_argument("--seed", type=int, default=0, help="gaussian: seed")
    p.add_argument("--depths", default="0-10", help="e.g. 0-10 or 0,1,5 (default 0-10)")
    p.add_argument("--activations", nargs="+", default=["relu", "linear"],
                   help="relu linear leaky:0.1 ... (default relu linear)")
    p.add_argument("--trainable", default="all", choices=["all", "first", "last"])
    p.add_argument("--block", type=int, default=1024, help="block size (default 1024)")
    p.add_argument("--backend", default="auto", choices=["auto", "numpy", "jax"])
    p.add_argument("--devices", type=int, default=None, help="jax: use the first N devices")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                   help="jax backend only: float32 blocks with highest-precision matmuls")
    p.add_argument("--workers", type=int, default=None, help="numpy: threads (default: CPUs)")
    p.add_argument("--fresh", action="store_true", help="ignore and replace a checkpoint")
    p.add_argument("--out", default=os.path.join("runs", PROG), help="output folder")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def run(args) -> dict:
    depths = parse_depths(args.depths)
    activations = [parse_activation(a).name for a in args.activations]
    ds = load_data(args, seed=args.seed)
    x = ds.x
    if args.limit is not None:
        if not 2 <= args.limit <= len(x):
            raise ValueError(f"--limit: expected 2 <= N <= {len(x)} ({ds.name}), got {args.limit}")
        x = x[: args.limit]
    os.makedirs(args.out, exist_ok=True)
    checkpoint = os.path.join(args.out, "checkpoint.json")
    if args.fresh and os.path.exists(checkpoint):
        os.unlink(checkpoint)
    res = streaming_smallest_angles(
        x, depths=depths, activations=activations, trainable=args.trainable, block=args.block,
        backend=args.backend, devices=args.devices, dtype=args.dtype, workers=args.workers,
        checkpoint=checkpoint, progress=not args.no_progress,
    )
    config = {"dataset": ds.name, "split": ds.split, "n": res.n, "d": res.d, "depths": depths,
              "activations": activations, "width": "inf", "trainable": args.trainable,
              "block": res.block, "backend": res.backend, "devices": res.devices,
              "dtype": res.dtype, "preprocessing": ds.preprocessing}
    rows = [{"activation": r.activation, "depth": r.depth, "angle_rad": r.angle,
             "angle_deg": r.degrees, "i": r.pair[0], "j": r.pair[1]} for r in res.results]
    result = {"config": config, "pairs": res.pairs, "seconds": res.seconds,
              "resumed_from_row_block": res.resumed_from_row_block,
              "input_angle_rad": res.input_angle, "input_angle_deg": math.degrees(res.input_angle),
              "input_pair": list(res.input_pair), "results": rows}
    atomic_write(os.path.join(args.out, "result.json"), json.dumps(result, indent=2) + "\n")
    buf = io.StringIO()
    buf.write(f"# {json.dumps(config)}\n")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(os.path.join(args.out, "table.csv"), buf.getvalue())
    os.unlink(checkpoint)  # the run is complete: result.json holds everything
    print(f"{ds.name} ({ds.split}), n = {res.n}, {res.pairs} pairs, infinite width, "
          f"trainable = {args.trainable}, {res.backend} x{res.devices}, {res.seconds:.1f} s")
    print(f"smallest input angle: {math.degrees(res.input_angle):.6g} deg, pair {res.input_pair}")
    print(format_table(res))
    print(f"result: {os.path.abspath(os.path.join(args.out, 'result.json'))}")
    return result


def format_table(res) -> str:
    """One line per depth: per activation the smallest angle in degrees and its pair."""
    acts = list(dict.fromkeys(r.activation for r in res.results))
    head = f"{'depth':>5} " + " ".join(f"{a + ' (deg)':>16} {'pair':>13}" for a in acts)
    lines = [head]
    for L in sorted({r.depth for r in res.results}):
        cells = []
        for a in acts:
            r = res.get(a, L)
            cells.append(f"{r.degrees:16.10g} {str(r.pair):>13}")
        lines.append(f"{L:5d} " + " ".join(cells))
    return "\n".join(lines)


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
