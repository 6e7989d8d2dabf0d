#!/usr/bin/env python3
"""Compute floors of the 60,000-image jobs of ``bench_distributed.py``, at one BLAS thread per
process, from a GEMM-rate and an eigvalsh probe measured here (fresh, alone, one thread).

    OPENBLAS_NUM_THREADS=1 python benchmarks/floors_distributed.py --n 60000 --d 784 \\
        --kappa-passes 60 --fig2-batches 117

Floors (flop counts; rate: the median of 5 float64 GEMMs (4096 × d) @ (d × 4096)):

- min_angle: one n × d @ d × n GEMM, 2n²d (the README's reference for the streaming search:
  it computes the upper triangle, n²d, plus its elementwise recursion);
- kappa: the tiles' GEMM once, n²d, plus every pass's K·V product, 2n²·columns (columns:
  r = ``default_sketch(n)`` or ``--kappa-sketch`` for the two sketch passes, k + 4 = 68 for the others); the
  elementwise recursion of the tiles and the cache misses are above it;
- fig2: ``bench_fig2_sweep.batch_flops`` per batch (the Gram, and the
  forward and Jacobian-contraction GEMMs of the 10 nets per depth: ReLU and linear × 5 seeds)
  plus one eigvalsh(512) per record (110 a batch).

A process count P divides each floor by P (the work splits evenly).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def median_time(fn, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=60000)
    p.add_argument("--d", type=int, default=784)
    p.add_argument("--kappa-passes", type=int, required=True, help="passes of the kappa job")
    p.add_argument("--kappa-sketch", type=int, default=None,
                   help="the kappa job's sketch rank r (default: default_sketch(n))")
    p.add_argument("--fig2-batches", type=int, default=117)
    args = p.parse_args(argv)
    from bench_fig2_sweep import batch_flops

    from ntkcond.scale.matrix_free import default_sketch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((4096, args.d))
    rate = 2.0 * 4096 * 4096 * args.d / median_time(lambda: a @ a.T)
    k = rng.standard_normal((512, 512))
    k = k @ k.T
    eig = median_time(lambda: np.linalg.eigvalsh(k))
    n, d = args.n, args.d
    r = default_sketch(n) if args.kappa_sketch is None else args.kappa_sketch
    floors = {
        "min_angle": 2.0 * n * n * d / rate,
        "kappa": (n * n * d + 2.0 * n * n * (2 * r + (args.kappa_passes - 2) * 68)) / rate,
        "fig2": args.fig2_batches * (batch_flops(512, d, 512, range(11), 10) / rate + 110 * eig),
    }
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"GEMM rate {rate / 1e9:.1f} GFLOP/s, eigvalsh(512) {eig * 1e3:.1f} ms "
          f"(OPENBLAS_NUM_THREADS={threads}; load average {os.getloadavg()[0]:.2f})")
    for job, f in floors.items():
        print(f"{job}: floor {f:.1f} s at one process, {f / 2:.1f} s at two")
    return 0


if __name__ == "__main__":
    sys.exit(main())
