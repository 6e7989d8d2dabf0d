#!/usr/bin/env python3
"""Time the infinite-width sweep of one batch: every depth × activation, kernels + eigvalsh.

    python benchmarks/bench_infinite_sweep.py [--n 512] [--d 3072] [--depths 0-10] [--repeats 7]
    python benchmarks/bench_infinite_sweep.py --family [--repeats 3]

``--family`` times ``ntkcond.depth_sweep`` (NTK and gradient angles, depths 0–10) side by
side for ReLU (the default bias-free net, and with w_std = 1.5, b_std = 0.1), erf, sin,
GELU and tanh (w_std = 1.5, b_std = 0.1) and reports each against the ReLU sweep (issue 21
targets: erf and sin ≤ 1.5x, quadrature activations ≤ 3x).

Uses the first n exact CIFAR-10 test images from ../shared/data when present (else Gaussian
inputs of the same shape: the cost does not depend on the values), after warm-up, and reports
the median and min over repeats, split into kernel/angle recursion and eigvalsh. Data loading
is not timed. Target (issue 4): ≤ 2 s at n = 512, d = 3072, depths 0–10, ReLU and linear.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from ntkcond import conditioning
from ntkcond.runs.depth import measure_infinite_batch
from ntkcond.infinite.kernels import pair_geometry, sweep_geometry

HERE = os.path.dirname(os.path.abspath(__file__))
CIFAR = os.path.join(HERE, "..", "..", "shared", "data", "cifar10_test.npz")


def batch(n: int, d: int) -> tuple[np.ndarray, str]:
    if d == 3072 and os.path.exists(CIFAR):
        from ntkcond import datasets

        return datasets.load(CIFAR, mean=[125.3 / 255, 123.0 / 255, 113.9 / 255],
                             std=[63.0 / 255, 62.1 / 255, 66.7 / 255]).x[:n], "CIFAR-10 test images"
    return np.random.default_rng(0).standard_normal((n, d)), "Gaussian inputs"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--d", type=int, default=3072)
    p.add_argument("--depths", type=int, default=10, help="depths 0..DEPTHS")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=None, help="write the Markdown result here")
    p.add_argument("--family", action="store_true", help="time the activation family instead")
    args = p.parse_args(argv)
    x, source = batch(args.n, args.d)
    if args.family:
        return family(x, source, args)
    depths = range(args.depths + 1)
    acts = ["relu", "linear"]
    measure_infinite_batch(x, np.arange(args.n), depths=depths, activations=acts)  # warm-up
    total, kernels = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        measure_infinite_batch(x, np.arange(args.n), depths=depths, activations=acts)
        total.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        geometry = pair_geometry(x, None, "bench")
        items = [it for a in acts for it in sweep_geometry(geometry, depths, a, "all")]
        kernels.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    conditioning(items[-1].ntk)
    one_eig = time.perf_counter() - t0
    lines = [
        f"Infinite-width sweep, {source}: n = {args.n}, d = {args.d}, depths 0-{args.depths}, "
        f"ReLU and linear ({len(items)} kernels), {args.repeats} repeats after warm-up",
        "",
        "| step | median (s) | min (s) |",
        "|---|---|---|",
        f"| whole sweep (Gram, recursion, angles, {len(items)} x eigvalsh, records) | "
        f"{statistics.median(total):.3f} | {min(total):.3f} |",
        f"| of which kernels and angles (Gram shared, one recursion pass per activation) | "
        f"{statistics.median(kernels):.3f} | {min(kernels):.3f} |",
        f"| one conditioning (float64 eigvalsh, n = {args.n}) | {one_eig:.3f} | |",
        "",
        f"Target: <= 2 s for the whole sweep. Machine: {os.cpu_count()} cores, numpy {np.__version__}.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        from ntkcond._core.io import atomic_write

        atomic_write(args.out, text + "\n")
    return 0


def family(x, source, args) -> int:
    from ntkcond import depth_sweep

    depths = range(args.depths + 1)
    cases = [("relu (default net)", dict(activation="relu")),
             ("relu, w_std 1.5, b_std 0.1", dict(activation="relu", w_std=1.5, b_std=0.1)),
             ("erf", dict(activation="erf", w_std=1.5, b_std=0.1)),
             ("sin", dict(activation="sin", w_std=1.5, b_std=0.1)),
             ("gelu", dict(activation="gelu", w_std=1.5, b_std=0.1)),
             ("tanh", dict(activation="tanh", w_std=1.5, b_std=0.1))]
    list(depth_sweep(x[:8], depths, activation="relu"))  # warm-up (imports)
    times = {name: [] for name, _ in cases}
    for _ in range(args.repeats):  # interleaved: the ratios are measured side by side
        for name, kw in cases:
            t0 = time.perf_counter()
            for _item in depth_sweep(x, depths, **kw):
                pass
            times[name].append(time.perf_counter() - t0)
    base = min(times[cases[0][0]])
    lines = [f"Infinite-width depth sweep (depth_sweep: NTK + gradient angles), {source}: "
             f"n = {x.shape[0]}, d = {x.shape[1]}, depths 0-{args.depths}, {args.repeats} "
             "interleaved repeats", "", "| activation | min (s) | median (s) | vs ReLU |",
             "|---|---|---|---|"]
    for name, _ in cases:
        t = times[name]
        lines.append(f"| {name} | {min(t):.2f} | {statistics.median(t):.2f} | "
                     f"{min(t) / base:.2f}x |")
    lines.append(f"\nMachine: {os.cpu_count()} cores, numpy {np.__version__}.")
    text = "\n".join(lines)
    print(text)
    if args.out:
        from ntkcond._core.io import atomic_write

        atomic_write(args.out, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
