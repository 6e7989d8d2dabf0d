#!/usr/bin/env python3
"""Time the streaming smallest gradient angle over all pairs of the MNIST test set.

    python benchmarks/bench_min_angle.py [--n 10000] [--depths 10] [--block 1024]
                                         [--check 2000] [--scaling 3000] [--out FILE.md]

Uses ../shared/data/mnist_test.npz (papers' preprocessing) when present, else Gaussian inputs
of the same shape (the cost does not depend on the values; labelled in the output). Reports:
the wall time of all n(n−1)/2 pairs, depths 0..DEPTHS, ReLU and linear (target: n = 10,000 in
under 5 minutes on a 2-core machine), the minimum angle and pair per depth, a brute-force check
on the first --check images (``gradient_angles`` on the full matrix), and with --scaling N the
JAX backend on 1, 2 and 4 forced CPU devices (subprocesses) on the first N images.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

from ntkcond import datasets, gradient_angles
from ntkcond._core.io import atomic_write
from ntkcond.scale.streaming import streaming_smallest_angles

HERE = os.path.dirname(os.path.abspath(__file__))
MNIST = os.path.join(HERE, "..", "..", "shared", "data", "mnist_test.npz")


def data(n: int):
    if os.path.exists(MNIST):
        return datasets.load(MNIST, mean=0.5, std=0.5).x[:n], "MNIST test images"
    return np.random.default_rng(0).standard_normal((n, 784)), "Gaussian inputs (MNIST absent)"


def load_avg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


SCALING_CHILD = """
import json, sys, time
import jax
from ntkcond.scale.streaming import streaming_smallest_angles
sys.path.insert(0, {here!r})
from bench_min_angle import data
x, _ = data({n})
streaming_smallest_angles(x[:300], depths=range({L} + 1), block={b}, backend="jax")  # compile
t = time.perf_counter()
res = streaming_smallest_angles(x, depths=range({L} + 1), block={b}, backend="jax")
print(json.dumps({{"devices": res.devices, "seconds": time.perf_counter() - t,
                  "angles": [r.angle for r in res.results]}}))
"""


def scaling(n, depths, block):
    rows = []
    for count in (1, 2, 4):
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={count}",
                   JAX_PLATFORMS="cpu")
        code = SCALING_CHILD.format(here=HERE, n=n, L=depths, b=block)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    ref = np.array(rows[0]["angles"])
    for r in rows:
        r["max_rel_diff_vs_1"] = float(np.max(np.abs(np.array(r.pop("angles")) - ref) / ref))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--depths", type=int, default=10, help="depths 0..DEPTHS")
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--check", type=int, default=2000, help="brute-force check on this many (0: off)")
    p.add_argument("--scaling", type=int, default=0, help="JAX 1/2/4-device timing on this many")
    p.add_argument("--out", default=None, help="write the Markdown result here (and .json beside)")
    args = p.parse_args(argv)
    x, source = data(args.n)
    depths = list(range(args.depths + 1))
    lines = [f"# Streaming smallest gradient angle: {len(x)} {source}, depths 0-{args.depths}, "
             f"ReLU and linear, infinite width", "",
             f"machine: {os.cpu_count()} CPUs, load average before: {load_avg()}"]
    t0 = time.perf_counter()
    res = streaming_smallest_angles(x, depths=depths, block=args.block, backend="numpy",
                                    workers=args.workers, progress=True)
    wall = time.perf_counter() - t0
    lines += [f"load average after: {load_avg()}", "",
              f"**{res.pairs:,} pairs in {wall:.1f} s** (numpy backend, block {args.block}, "
              f"{args.workers or min(8, os.cpu_count() or 1)} threads)", "",
              f"smallest input angle: {math.degrees(res.input_angle):.10g} deg, pair {res.input_pair}",
              "", "| depth | ReLU (deg) | pair | linear (deg) | pair |", "|---|---|---|---|---|"]
    for L in depths:
        r, li = res.get("relu", L), res.get("linear", L)
        lines.append(f"| {L} | {r.degrees:.10g} | {r.pair} | {li.degrees:.10g} | {li.pair} |")
    record = {"n": len(x), "source": source, "seconds": wall, "pairs": res.pairs,
              "results": [[r.activation, r.depth, r.angle, list(r.pair)] for r in res.results]}
    if args.check:
        m = min(args.check, len(x))
        t0 = time.perf_counter()
        sub = streaming_smallest_angles(x[:m], depths=depths, block=args.block, backend="numpy")
        worst = 0.0
        for r in sub.results:
            phi = gradient_angles(x[:m], depth=r.depth, activation=r.activation)
            phi = np.where(np.tri(m, dtype=bool), np.inf, phi)
            best = phi.min()
            worst = max(worst, abs(r.angle - best) / best, abs(phi[r.pair] - best) / best)
        lines += ["", f"brute force on the first {m}: max relative difference {worst:.2e} "
                      f"(angle and the brute-force angle at the streamed pair), "
                      f"{time.perf_counter() - t0:.1f} s"]
        record["check"] = {"n": m, "max_rel_diff": worst}
    if args.scaling:
        rows = scaling(args.scaling, args.depths, args.block // 2)
        lines += ["", f"JAX backend, forced CPU devices, first {args.scaling} images, block {args.block // 2}:",
                  "", "| devices | seconds | max rel. diff vs 1 device |", "|---|---|---|"]
        lines += [f"| {r['devices']} | {r['seconds']:.1f} | {r['max_rel_diff_vs_1']:.1e} |" for r in rows]
        record["scaling"] = rows
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        atomic_write(args.out, text)
        atomic_write(os.path.splitext(args.out)[0] + ".json", json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
