#!/usr/bin/env python3
"""Bias-free ReLU networks as linear networks (Zhang, Saxe & Latham, arXiv 2406.12615).

    python scripts/biasfree_dynamics.py all --fast           # every experiment, small and quick
    python scripts/biasfree_dynamics.py equivalence --dataset digits
    python scripts/biasfree_dynamics.py closed-form --lrs 0.004,0.05,0.2,0.6

Subcommands: expressivity (item 1), equivalence (2), closed-form (3), symmetry-breaking (4),
deep (5), ntk (6); orthogonal, xor, rank-one, large-init (independent linear nets on
orthogonal and XOR data, the conserved rank-one structure, collapse at large init and
learning rate); bias-breaking (the equivalence of item 2 with a trained hidden bias of scale
s_b: how far it breaks); all. Each writes <name>.png and summary_<name>.json to --out (``all`` also
writes summary.json with every result) and prints the JSON summary. The experiments are
``ntkcond.papers.zhang_saxe_latham.experiments``, the figures ``.figures.plot``; the run
directory ``.experiments_run.run_experiments``: one directory collects
experiments with the same --fast/--seed (--resume adds to it; --overwrite starts over).
"""
from __future__ import annotations

import argparse
import json
import sys

from tqdm.auto import tqdm

from ntkcond.papers.zhang_saxe_latham import experiments as ex
from ntkcond.papers.zhang_saxe_latham.experiments_run import run_experiments
from ntkcond.runs.cli import add_run_arguments, parser, run_main

PROG = "biasfree_dynamics"


def _floats(text: str | None, name: str) -> list[float] | None:
    """'0.1,0.05' → [0.1, 0.05]; None (flag not given) → None (the experiment's default)."""
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None
    if not values:
        raise ValueError(f"{name}: expected at least one number, got {text!r}")
    return values


def _experiments(args) -> dict:
    """Subcommand → (experiment function, its keyword arguments from the flags)."""
    sizes = _floats(args.sizes, "--sizes")
    if sizes is not None and any(v != int(v) for v in sizes):
        raise ValueError(f"--sizes: expected whole numbers, got {args.sizes!r}")
    return {
        "expressivity": (ex.expressivity, {}),
        "equivalence": (ex.equivalence, dict(dataset=args.dataset, lr=args.lr, time=args.time,
                                             strength=args.strength, init_scale=args.init_scale)),
        "closed-form": (ex.closed_form, dict(lrs=_floats(args.lrs, "--lrs"))),
        "symmetry-breaking": (ex.symmetry_breaking, dict(dys=_floats(args.dys, "--dys"),
                                                         perturbation=args.perturbation,
                                                         init=args.init,
                                                         whitened=not args.no_whiten,
                                                         seeds=args.seeds)),
        "deep": (ex.deep, dict(layers=args.layers)),
        "ntk": (ex.symmetric_ntk, {}),
        "orthogonal": (ex.orthogonal, dict(sizes=None if sizes is None else [int(v) for v in sizes],
                                           data=args.ortho_data, seeds=args.seeds)),
        "xor": (ex.xor, dict(seeds=args.seeds)),
        "rank-one": (ex.rank_one, {}),
        "bias-breaking": (ex.bias_breaking, dict(b_stds=_floats(args.b_stds, "--b-stds"))),
        "large-init": (ex.large_init, dict(scales=_floats(args.scales, "--scales"),
                                           lrs=_floats(args.grid_lrs, "--grid-lrs"),
                                           seeds=args.seeds)),
    }


def build_parser() -> argparse.ArgumentParser:
    p = parser(PROG, __doc__)
    p.add_argument("command", choices=["expressivity", "equivalence", "closed-form",
                                       "symmetry-breaking", "deep", "ntk", "orthogonal", "xor",
                                       "rank-one", "large-init", "bias-breaking", "all"])
    p.add_argument("--fast", action="store_true", help="small, quick configuration")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=None,
                   help="large-init, orthogonal (generic init), xor, symmetry-breaking: number "
                        "of draws seed, seed+1, ... (default: the experiment's; large-init 8, "
                        "the others 5; --fast 3)")
    p.add_argument("--dataset", default="gaussian", choices=["gaussian", "digits"],
                   help="equivalence: whitened Gaussian or whitened digits (+ negatives)")
    p.add_argument("--lr", type=float, default=0.004, help="equivalence: learning rate")
    p.add_argument("--time", type=float, default=10.0, help="equivalence: linear-net time c·t")
    p.add_argument("--strength", type=float, default=2.0, help="equivalence: teacher strength s")
    p.add_argument("--init-scale", type=float, default=1e-3, help="equivalence: init std")
    p.add_argument("--lrs", default=None, help="closed-form: learning rates (default 0.004,0.05,0.2,0.6)")
    p.add_argument("--dys", default=None, help="symmetry-breaking: perturbations Δy")
    p.add_argument("--perturbation", default="shift", choices=["shift", "abs"],
                   help="symmetry-breaking: constant shift of the mirrored targets, or dy|r.x|")
    p.add_argument("--init", default="mirrored", choices=["mirrored", "gaussian"],
                   help="symmetry-breaking: initialisation (both small, std 1e-3)")
    p.add_argument("--no-whiten", action="store_true",
                   help="symmetry-breaking: symmetric Gaussian inputs without whitening")
    p.add_argument("--layers", type=int, default=4, help="deep: number of weight layers")
    p.add_argument("--sizes", default=None, help="orthogonal: data sizes (default 2,4,8,16)")
    p.add_argument("--ortho-data", default="basis", choices=["basis", "digits"],
                   help="orthogonal: scaled basis vectors or orthogonalised digits images")
    p.add_argument("--scales", default=None, help="large-init: init scales of the phase diagram")
    p.add_argument("--grid-lrs", default=None, help="large-init: learning rates of the phase diagram")
    p.add_argument("--b-stds", default=None,
                   help="bias-breaking: bias scales s_b (default 0,0.01,0.03,0.1,0.3,1)")
    add_run_arguments(p, PROG)
    return p


def run(args) -> dict:
    experiments = _experiments(args)  # every flag is parsed before anything runs
    names = list(experiments) if args.command == "all" else [args.command]

    def bar(it, name):
        label = PROG if name is None else f"{PROG} {name}"
        quiet = args.no_progress or (name is None and len(names) == 1)
        return tqdm(it, desc=label, disable=quiet, leave=name is None)

    config = {"fast": args.fast, "seed": args.seed}
    summary = run_experiments({n: experiments[n] for n in names}, args.out, config=config,
                              write_all=args.command == "all", resume=args.resume,
                              overwrite=args.overwrite, progress=bar)
    print(json.dumps(summary, indent=2, default=float))
    return summary


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
