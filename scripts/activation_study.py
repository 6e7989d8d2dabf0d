#!/usr/bin/env python3
"""The activation study: κ_eff and the smallest gradient angle against depth for relu, abs,
leaky:-0.5, leaky:0.2, erf, gelu and tanh, with b_std 0 and 0.1, at infinite width and width 512.

examples:
  python scripts/activation_study.py --dataset ../shared/data/mnist_test.npz --preset mnist
  python scripts/activation_study.py --dataset ../shared/data/cifar10_test.npz --preset cifar10 \
      --out runs/activation_study_cifar10 --activations relu abs erf

Each (activation, b_std, width group) is a cond_vs_depth run directory under --out (rerunning
resumes what is there); study.csv, study.md and study.png gather them. Weight stds: the leaky
family's norm-preserving net without biases, s_w = √c with biases; s_w = 1.5 for erf, gelu,
tanh. The library call: ntkcond.runs.activation_study.activation_study.
"""
from __future__ import annotations

import os
import sys

from ntkcond.runs.activation_study import ACTIVATIONS, activation_study
from ntkcond.runs.cli import (add_data_arguments, load_data, parse_depths, parse_width, parser,
                              positive_int, run_main)

PROG = "activation_study"


def build_parser():
    p = parser(PROG, __doc__)
    add_data_arguments(p, split="test")
    p.add_argument("--batch", type=positive_int, default=512, help="batch size n")
    p.add_argument("--max-batches", type=positive_int, default=2, help="batches (closed forms)")
    p.add_argument("--quadrature-batches", type=positive_int, default=1,
                   help="batches for gelu and tanh (trapezoid quadrature)")
    p.add_argument("--depths", default="0-10", help="depths at every width")
    p.add_argument("--deep-depths", default="15,20,30,50,70,100",
                   help="more depths at infinite width (closed-form activations)")
    p.add_argument("--activations", nargs="+", default=list(ACTIVATIONS), help="activations")
    p.add_argument("--b-stds", type=float, nargs="+", default=[0.0, 0.1], help="bias stds")
    p.add_argument("--width", type=parse_width, nargs="+", default=["inf", 512], help="widths")
    p.add_argument("--seeds", type=positive_int, default=5, help="finite width: nets per depth")
    p.add_argument("--finite-activations", nargs="+", default=None,
                   help="activations also run at the finite widths (default: all)")
    p.add_argument("--seed", type=int, default=0, help="shuffling seed")
    p.add_argument("--out", default=os.path.join("runs", PROG), help="study directory")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


def run(args):
    ds = load_data(args, seed=args.seed)
    res = activation_study(ds, out=args.out, batch=args.batch, max_batches=args.max_batches,
                           quadrature_batches=args.quadrature_batches,
                           depths=parse_depths(args.depths),
                           deep_depths=parse_depths(args.deep_depths),
                           activations=tuple(args.activations), b_stds=tuple(args.b_stds),
                           widths=args.width, seeds=args.seeds, seed=args.seed,
                           finite_activations=args.finite_activations,
                           progress=not args.no_progress)
    with open(res.markdown, encoding="utf-8") as f:
        print(f.read())
    print(f"table: {os.path.abspath(res.csv)}\nfigure: {os.path.abspath(res.figure)}")
    return res


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
