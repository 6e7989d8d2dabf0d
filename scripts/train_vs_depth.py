#!/usr/bin/env python3
"""Gradient-descent steps to a relative loss against depth, ReLU beside linear: finite nets
trained, beside the steps their initial NTK and the infinite-width NTK predict.

examples:
  python scripts/train_vs_depth.py                      # digits, n = 256, depths 1,2,3,5,10
  python scripts/train_vs_depth.py --dataset ../shared/data/mnist_test.npz --preset mnist
  python scripts/train_vs_depth.py --dataset ../shared/data/cifar10_test.npz --preset cifar10
  python scripts/train_vs_depth.py --target class:0 --no-center --rel-target 0.1

One batch of --batch images (shuffled with --seed), targets from the labels (--target lt5:
+1 for label < 5, -1 otherwise; even; class:K one against the rest), centred unless
--no-center (an uncentred target puts its mean on the NTK's top, near-constant eigenvector,
which one step removes). Each finite-width net (ntkcond.mlp, NTK
parameterisation, weights from PRNGKey(--init-seed)) is trained in float64 by full-batch
gradient descent on L = 1/2 ||f(X) - y||^2 with lr = 1/lambda_max of its NTK at init, until
L <= --rel-target * L(0) or --max-steps (then "not reached", printed >cap). Beside it: the
steps the linearised model predicts from that NTK and the net's own f(X) at init
(ntkcond.steps_to_loss), and from the infinite-width NTK with f = 0 at init (width inf);
kappa_eff and kappa_target (the condition number the initial residual sees), and the NTK's
relative drift over training. Writes config.json, records.jsonl, table.csv and figure.png to
--out (--resume continues a killed run, --overwrite starts over). The library call:
ntkcond.runs.train_vs_depth.train_vs_depth. The defaults take about 2 minutes on digits and 6
on MNIST on two busy CPU cores (docs/results/train_vs_depth_mnist.md), mostly the ReLU nets.
"""
from __future__ import annotations

import os
import sys

from ntkcond.runs.cli import (ACTIVATIONS_HELP, activation_name, add_net_arguments, net_kwargs,
                              add_data_arguments, add_run_arguments, load_data, parse_depths,
                              parse_width, parser, positive_float, positive_int, run_main)
from ntkcond.runs.train_vs_depth import format_table, train_vs_depth

PROG = "train_vs_depth"



def build_parser():
    p = parser(PROG, __doc__)
    add_data_arguments(p, split="test")
    p.add_argument("--batch", type=positive_int, default=256, help="batch size n (one batch)")
    p.add_argument("--depths", default="1,2,3,5,10", help="e.g. 1,2,3,5,10 or 0-10")
    p.add_argument("--activations", nargs="+", type=activation_name, default=["relu", "linear"],
                   help=ACTIVATIONS_HELP)
    add_net_arguments(p)
    p.add_argument("--width", type=parse_width, nargs="+", default=["inf", 512],
                   help="inf (prediction only) and/or finite widths of the trained nets")
    p.add_argument("--target", default="lt5", help="lt5, even or class:K (K = 0..9)")
    p.add_argument("--no-center", action="store_true", help="do not subtract the targets' mean")
    p.add_argument("--rel-target", type=positive_float, default=1e-2,
                   help="stop at loss <= this fraction of the initial loss")
    p.add_argument("--max-steps", type=positive_int, default=3000,
                   help="cap on gradient-descent steps per net (then 'not reached')")
    p.add_argument("--seed", type=int, default=0, help="shuffling seed (which batch)")
    p.add_argument("--init-seed", type=int, default=0, help="PRNGKey of the nets' weights")
    add_run_arguments(p, PROG)
    return p


def run(args):
    ds = load_data(args, seed=args.seed)
    sweep = train_vs_depth(ds, **net_kwargs(args), out=args.out, n=args.batch, depths=parse_depths(args.depths),
                           activations=args.activations, widths=args.width, target=args.target,
                           center=not args.no_center, rel_target=args.rel_target,
                           max_steps=args.max_steps, seed=args.seed, init_seed=args.init_seed,
                           resume=args.resume, overwrite=args.overwrite,
                           progress=not args.no_progress)
    print(sweep.title)
    print(format_table(sweep.records))
    print("(steps: measured, >cap = not reached; predicted: by the kernel of that row, inf = "
          "never; rel loss: loss/loss0 where the run stopped, measured and predicted)")
    print(f"table: {os.path.abspath(sweep.table_csv)}")
    print(f"figure: {os.path.abspath(sweep.figure)}")
    print(f"{sweep.computed} computed, {sweep.resumed} resumed in {sweep.seconds:.0f} s")
    return sweep


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
