#!/usr/bin/env python3
"""Time and peak memory of the exact and matrix-free κ_eff routes against n.

    python benchmarks/bench_kappa_large.py [--exact 1000,2000,5000,10000] [--matrix-free 1000,2000]
                                           [--depth 3] [--out FILE.md]

Each (route, n) runs in a fresh subprocess on the first n MNIST test images (papers'
preprocessing; Gaussian inputs when ../shared/data is absent), ReLU, infinite width. Peak memory
is the child's maximum resident set size (``getrusage``), given beside the increment over its
state after loading the data. The matrix-free result is compared with the exact one at the same n.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from ntkcond._core.io import atomic_write

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = """
import json, resource, sys, time, warnings
sys.path.insert(0, {here!r})
from bench_min_angle import data
from ntkcond.scale.conditioning import exact_conditioning, matrix_free_conditioning
x, source = data({n})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
if {route!r} == "exact":
    c = exact_conditioning(x, depths=[{depth}], block=1024)[{depth}]
    out = dict(kappa=c.kappa_eff, lmax=c.lambda_max, lmin=c.lambda_min_nonzero, rank=c.rank)
else:
    c = matrix_free_conditioning(x, depth={depth}, block=1024)
    out = dict(kappa=c.kappa_eff, lmax=c.lambda_max, lmin=c.lambda_min_nonzero, passes=c.matvecs,
               residual=c.residual, converged=c.converged)
out.update(seconds=time.perf_counter() - t, source=source,
           peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, base_mb=base)
print(json.dumps(out))
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exact", default="1000,2000,5000,10000")
    p.add_argument("--matrix-free", default="1000,2000")
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    runs = [("exact", int(n)) for n in args.exact.split(",") if n] + \
           [("matrix-free", int(n)) for n in args.matrix_free.split(",") if n]
    results = {}
    for route, n in runs:
        code = CHILD.format(here=HERE, n=n, route=route, depth=args.depth)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if proc.returncode:
            print(f"{route} n={n} failed: {proc.stderr.strip().splitlines()[-1]}", file=sys.stderr)
            continue
        results[(route, n)] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(route, n, results[(route, n)], flush=True)
    try:
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        load = "unknown"
    source = next(iter(results.values()))["source"] if results else "?"
    lines = [f"# κ_eff beyond one batch: exact vs matrix-free, {source}, ReLU, depth {args.depth}", "",
             f"machine: {os.cpu_count()} CPUs, load average at the end: {load}", "",
             "| route | n | seconds | peak RSS (MB) | over data (MB) | κ_eff | λ_min⁺ | rel. diff vs exact | notes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (route, n), r in results.items():
        ex = results.get(("exact", n))
        diff = f"{abs(r['kappa'] / ex['kappa'] - 1):.1e}" if ex and route != "exact" else ""
        notes = (f"rank {r['rank']}" if route == "exact" else
                 f"{r['passes']} kernel passes, residual {r['residual']:.1e}·λ_max")
        lines.append(f"| {route} | {n} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | "
                     f"{r['peak_mb'] - r['base_mb']:.0f} | {r['kappa']:.6g} | {r['lmin']:.6g} | {diff} | {notes} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        atomic_write(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
