#!/usr/bin/env python3
"""Certified κ brackets (``condition_number_bounds``): tightness on 512-image batches and speed
on whole data sets, as a ratio to one float64 GEMM measured in the same process.

    python benchmarks/bench_bounds.py [--n 10000] [--depths 1 3 10] [--small 512]
                                      [--big 60000] [--repeats 2] [--out FILE.md]

* tightness: on the first ``--small`` MNIST and CIFAR-10 test images (papers' normalisation;
  ../shared/data, else digits and Gaussian rows, labelled), at each depth, the bracket against
  κ of the exact spectrum (``conditioning(infinite_ntk(x)).kappa``): lower ≤ κ ≤ upper, and
  upper/lower, and the λmax/λmin bounds against the exact eigenvalues;
* speed: the bracket on the first ``--n`` MNIST test images at each depth, alternating with
  one n × d @ d × n float64 GEMM (``x @ y.T``, y a copy); medians of ``--repeats`` runs and
  the ratio to the adjacent GEMM;
* ``--big N``: the bracket on an N × 784 Gaussian stand-in (MNIST train's shape), wall time
  and the GEMM-equivalent (N/n)² times the n-row GEMM.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from ntkcond import condition_number_bounds, conditioning, datasets, infinite_ntk
from ntkcond._core.io import atomic_write

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")


def real_sets(n):
    sets = []
    for name, preset in (("mnist_test", "mnist"), ("cifar10_test", "cifar10")):
        path = os.path.join(DATA, f"{name}.npz")
        if os.path.exists(path):
            sets.append((f"{name} (papers' normalisation)", datasets.load(path, preset=preset).x[:n]))
    if not sets:
        sets.append(("digits (../shared/data absent)", datasets.load("digits").x[:n]))
    return sets


def load_avg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def gemm_seconds(x, y) -> float:
    t0 = time.perf_counter()
    x @ y.T
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=10000, help="rows for the speed runs")
    p.add_argument("--depths", type=int, nargs="+", default=[1, 3, 10], help="depths L")
    p.add_argument("--small", type=int, default=512, help="batch size for the tightness table")
    p.add_argument("--big", type=int, default=60000, help="Gaussian N x 784 stand-in (0: off)")
    p.add_argument("--repeats", type=int, default=2, help="speed runs per depth")
    p.add_argument("--out", default=None, help="write the Markdown result here (and .json beside)")
    args = p.parse_args(argv)
    record = {"load_before": load_avg(), "tightness": [], "speed": []}
    lines = ["# Certified κ brackets: tightness and speed (`benchmarks/bench_bounds.py`)", "",
             f"Load average at start: {record['load_before']} (2-core machine shared with other jobs).", "",
             "## Tightness (exact κ from eigvalsh of the infinite-width NTK)", "",
             "| data | L | κ_lower | κ (exact) | κ_upper | upper/lower | λmax lower / exact / upper | λmin lower / exact / upper | split p | ok |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, x in real_sets(args.small):
        for L in args.depths:
            b = condition_number_bounds(x, depth=L)
            c = conditioning(infinite_ntk(x, depth=L))
            lam = c.eigenvalues
            ok = bool(b.lower <= c.kappa <= b.upper)
            record["tightness"].append(dict(data=name, n=len(x), depth=L, lower=b.lower, kappa=c.kappa,
                                            upper=b.upper, ratio=b.ratio, ok=ok,
                                            lmax=[b.lambda_max_lower, float(lam[-1]), b.lambda_max_upper],
                                            lmin=[b.lambda_min_lower, float(lam[0]), b.lambda_min_upper],
                                            split=b.split))
            lines.append(f"| {name}, n = {len(x)} | {L} | {b.lower:.4g} | {c.kappa:.4g} | {b.upper:.4g} | "
                         f"{b.ratio:.3g} | {b.lambda_max_lower:.4g} / {lam[-1]:.4g} / {b.lambda_max_upper:.4g} | "
                         f"{b.lambda_min_lower:.3g} / {lam[0]:.3g} / {b.lambda_min_upper:.3g} | {b.split} | {ok} |")
            print(lines[-1], flush=True)
    name, x = real_sets(args.n)[0]
    x = np.ascontiguousarray(x[: args.n])
    y = x.copy()
    lines += ["", f"## Speed: {name}, n = {len(x)}, d = {x.shape[1]}", "",
              "| L | bracket (s) | GEMM (s) | ratio | κ_lower | κ_upper | upper/lower | series / scan / pairs (s) |",
              "|---|---|---|---|---|---|---|---|"]
    gemm_seconds(x, y)  # warm-up
    for L in args.depths:
        runs, gemms, ratios = [], [], []
        for _ in range(args.repeats):
            g = gemm_seconds(x, y)
            t0 = time.perf_counter()
            b = condition_number_bounds(x, depth=L)
            t = time.perf_counter() - t0
            runs.append(t)
            gemms.append(g)
            ratios.append(t / g)
        rec = dict(depth=L, seconds=runs, gemm=gemms, ratio=statistics.median(ratios), lower=b.lower,
                   upper=b.upper, split=b.split, parts=b.seconds, closest=list(b.closest))
        record["speed"].append(rec)
        lines.append(f"| {L} | {statistics.median(runs):.2f} | {statistics.median(gemms):.2f} | "
                     f"{rec['ratio']:.2f}x | {b.lower:.4g} | {b.upper:.4g} | {b.ratio:.3g} | "
                     f"{b.seconds['series']:.2f} / {b.seconds['scan']:.2f} / {b.seconds['pairs']:.2f} |")
        print(lines[-1], flush=True)
    if args.big:
        rng = np.random.default_rng(0)
        big = rng.standard_normal((args.big, x.shape[1]))
        t0 = time.perf_counter()
        b = condition_number_bounds(big, depth=args.depths[-1])
        t = time.perf_counter() - t0
        g = gemm_seconds(x, y) * (args.big / len(x)) ** 2
        record["big"] = dict(n=args.big, depth=args.depths[-1], seconds=t, gemm_equivalent=g,
                             lower=b.lower, upper=b.upper, parts=b.seconds)
        lines += ["", f"## {args.big} × {x.shape[1]} Gaussian stand-in, L = {args.depths[-1]}", "",
                  f"bracket {t:.1f} s (series {b.seconds['series']:.2f} s, scan {b.seconds['scan']:.1f} s); "
                  f"one {args.big}-row GEMM ≈ {g:.1f} s ((N/n)² × the {len(x)}-row GEMM); "
                  f"κ ∈ [{b.lower:.4g}, {b.upper:.4g}] (upper/lower {b.ratio:.3g})."]
        print(lines[-1], flush=True)
    record["load_after"] = load_avg()
    lines += ["", f"Load average at the end: {record['load_after']}.", "",
              "Command: `python benchmarks/bench_bounds.py " + " ".join(argv if argv is not None else sys.argv[1:]) + "`"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        atomic_write(args.out, text)
        atomic_write(os.path.splitext(args.out)[0] + ".json", json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
