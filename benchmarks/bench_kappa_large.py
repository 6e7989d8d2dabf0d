#!/usr/bin/env python3
"""Time and peak memory of the exact and matrix-free κ_eff routes against n.

    python benchmarks/bench_kappa_large.py [--exact 1000,2000,5000,10000] [--matrix-free 1000,2000]
        [--no-cache 2000] [--exact-threads 1] [--exact-default 2000] [--pass-at 10000]
        [--exponent-at 10000] [--extrapolate 60000] [--depth 3] [--repeat 1]
        [--out FILE.md]

Each (route, n) runs in a fresh subprocess on the first n MNIST test images (papers'
preprocessing; Gaussian inputs when ../shared/data is absent), ReLU, infinite width. Peak memory
is the child's maximum resident set size (``getrusage``), given beside the increment over its
state after loading the data.

Exact rows split the time into the kernel build (tiles on the BLAS threads as workers) and the
``eigvalsh``; ``--exact-threads`` runs them with the default BLAS threads and/or with BLAS at
one thread, ``--exact-default`` adds default-thread runs at some n (on a shared machine a
multi-threaded LAPACK can be many times slower than a single thread; the faster of the two is
the exact route's time the matrix-free one is compared with). Matrix-free rows run with the
default tile cache (half the available memory: at n ≤ 10⁴ every tile is kept after the first
pass) and, at the ``--no-cache`` n, with ``cache=0`` (every pass recomputes every tile). They
give the passes, the median wall time of a pass and, without the cache, its floors: the n²d
flops of the pass's Gram tiles (symmetric: half of 2n²d) at the machine's float64 GEMM rate,
measured in the same child (the best of a 2048² matmul on the BLAS threads and ``workers``
concurrent 1024² matmuls at one thread each), and that plus the elementwise recursion (one
512 × 512 tile at one thread, its GEMM taken off, per entry × n(n+1)/2 / workers); and κ_eff's
relative difference from the exact route at the same n. ``--repeat R`` runs all rows R times in
alternating rounds and reports each row's median-time run. ``--pass-at N`` times single passes at n = N and extrapolates the
matrix-free time to ``--extrapolate`` inputs: a pass scales as n²; the passes as (n/r)^a, r the
default sketch rank (capped at 2048, so beyond n = 10⁴ the passes grow), with a measured by
``--exponent-at`` (the same n at a quarter of the default sketch rank); plus the two sketch
passes' K·Ω products, 2n²r flops each at the measured GEMM rate; then the same with the default
cache, from a cached pass timed at n = N and the fraction of the tiles half the memory available
now would keep.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

from ntkcond._core.io import atomic_write
from ntkcond.scale.conditioning import default_sketch

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = """
import json, resource, statistics, sys, time, warnings
import concurrent.futures
import numpy as np
import scipy.linalg
sys.path.insert(0, {here!r})
from bench_min_angle import data
from ntkcond._core.threads import blas_threads, single_threaded_blas
from ntkcond.scale.conditioning import exact_conditioning
from ntkcond.scale.matrix_free import KernelOperator, matrix_free_conditioning
from ntkcond.scale.tiles import kernel_tile, prepare
x, source = data({n})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
workers = blas_threads()

def med(f, r=3):
    f(); ts = []
    for _ in range(r):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)

def gemm_rate():
    rng = np.random.default_rng(0)
    big = rng.standard_normal((2048, 2048))
    mids = [rng.standard_normal((1024, 1024)) for _ in range(workers)]
    rate = 2.0 * 2048 ** 3 / med(lambda: big @ big)
    with single_threaded_blas(), concurrent.futures.ThreadPoolExecutor(workers) as pool:
        rate = max(rate, workers * 2.0 * 1024 ** 3 / med(lambda: list(pool.map(lambda a: a @ a, mids))))
    return rate

t = time.perf_counter()
route = {route!r}
if route.startswith("exact"):
    timings = {{}}
    if route == "exact-1":
        with single_threaded_blas():
            c = exact_conditioning(x, depths=[{depth}], timings=timings)[{depth}]
    else:
        c = exact_conditioning(x, depths=[{depth}], timings=timings)[{depth}]
    out = dict(kappa=c.kappa_eff, lmax=c.lambda_max, lmin=c.lambda_min_nonzero, rank=c.rank,
               build=timings["build"], eigvalsh=timings["eigvalsh"])
elif route.startswith("matrix-free"):
    sketch = int(route.split(":")[1]) if ":" in route else None
    cache = 0 if route == "matrix-free-nocache" else None
    c = matrix_free_conditioning(x, depth={depth}, sketch=sketch, cache=cache)
    out = dict(kappa=c.kappa_eff, lmax=c.lambda_max, lmin=c.lambda_min_nonzero, passes=c.matvecs,
               residual=c.residual, residual_max=c.residual_max, estimate=c.error_estimate,
               converged=c.converged, pass_seconds=c.seconds_per_pass, sketch=c.sketch,
               k=c.block_size, cache_bytes=c.cache_bytes, cached_fraction=c.cached_fraction)
else:  # single passes: k + top = 68 columns, as the default LOBPCG passes carry
    x, xh, norms, d, act, depths, layers, block = prepare(x, [{depth}], "relu", "all", 512, "pass")
    op = KernelOperator(xh, norms, d, act, {depth}, layers, block, workers, 0, x)
    V = np.random.default_rng(0).standard_normal((x.shape[0], 68))
    ts = []
    for _ in range(2):
        s = time.perf_counter(); op(V); ts.append(time.perf_counter() - s)
    cached = KernelOperator(xh, norms, d, act, {depth}, layers, block, workers, 1 << 62, x)
    cached(V)  # computes and keeps every tile
    tc = []
    for _ in range(3):
        s = time.perf_counter(); cached(V); tc.append(time.perf_counter() - s)
    from ntkcond._core.memory import available_memory
    out = dict(pass_seconds=min(ts), cached_pass_seconds=min(tc), available=available_memory())
seconds = time.perf_counter() - t
rate = gemm_rate()
if route.startswith("matrix-free") or route == "pass":
    # the elementwise half of a pass's floor: one off-diagonal 512 × 512 tile at one BLAS
    # thread, its Gram GEMM's time taken off, per entry, × n(n+1)/2 entries / workers
    h = min(512, x.shape[0] // 2)
    _, xh, norms, d, act, depths, layers, _ = prepare(x[:2 * h], [{depth}], "relu", "all", h, "pass")
    with single_threaded_blas():
        tile = med(lambda: kernel_tile(xh, norms, d, 0, h, h, 2 * h, act, depths, layers), 5)
        gram = med(lambda: xh[:h] @ xh[h:2 * h].T, 5)
    n_ = x.shape[0]
    out.update(elementwise_floor=max(tile - gram, 0.0) / h ** 2 * n_ * (n_ + 1) / 2 / workers)
out.update(seconds=seconds, source=source, gemm_rate=rate,
           pass_floor=x.shape[0] ** 2 * x.shape[1] / rate,
           peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, base_mb=base)
print(json.dumps(out))
"""


def _list(text):
    return [int(v) for v in text.split(",") if v]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exact", default="1000,2000,5000,10000")
    p.add_argument("--exact-threads", default="1",
                   help="BLAS threads of the exact route at every --exact n: default and/or 1")
    p.add_argument("--exact-default", default="2000",
                   help="n at which the exact route also runs on the default BLAS threads")
    p.add_argument("--matrix-free", default="1000,2000")
    p.add_argument("--no-cache", default="2000",
                   help="n at which the matrix-free route also runs with cache=0 (no tiles kept)")
    p.add_argument("--pass-at", default="", help="n at which to time single passes")
    p.add_argument("--exponent-at", default="",
                   help="n at which to rerun the matrix-free route at a quarter of the default "
                        "sketch rank, to measure how the passes grow with n/r")
    p.add_argument("--extrapolate", type=int, default=60000)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--repeat", type=int, default=1,
                   help="rounds over all runs; each row reports its median-time run")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    modes = [m.strip() for m in args.exact_threads.split(",") if m.strip()]
    runs = ([("exact" if m == "default" else "exact-1", n) for n in _list(args.exact) for m in modes]
            + [("exact", n) for n in _list(args.exact_default) if "default" not in modes]
            + [("matrix-free", n) for n in _list(args.matrix_free)]
            + [("matrix-free-nocache", n) for n in _list(args.no_cache)]
            + [(f"matrix-free:{default_sketch(n) // 4}", n) for n in _list(args.exponent_at)]
            + [("pass", n) for n in _list(args.pass_at)])
    results = {}
    for _ in range(args.repeat):  # rounds over all runs: a load change hits every route alike
        for route, n in runs:
            code = CHILD.format(here=HERE, n=n, route=route, depth=args.depth)
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            if proc.returncode:
                print(f"{route} n={n} failed: {proc.stderr.strip().splitlines()[-1]}", file=sys.stderr)
                continue
            results.setdefault((route, n), []).append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(route, n, results[(route, n)][-1], flush=True)
    for key, rows in results.items():  # the run with the median time (upper median)
        rows.sort(key=lambda r: r.get("seconds", 0.0))
        results[key] = dict(rows[len(rows) // 2], repeats=[r.get("seconds") for r in rows])
    try:
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        load = "unknown"
    source = next(iter(results.values()))["source"] if results else "?"

    def full_floor(r):  # the floor of a pass: the n²d GEMM plus the recursion
        return r["pass_floor"] + r.get("elementwise_floor", 0.0)

    def best_exact(n):
        rows = [results[(r, n)] for r in ("exact", "exact-1") if (r, n) in results]
        return min(rows, key=lambda r: r["seconds"]) if rows else None

    lines = [f"# κ_eff beyond one batch: exact vs matrix-free, {source}, ReLU, depth {args.depth}", "",
             f"machine: {os.cpu_count()} CPUs, load average at the end: {load}; each row the "
             f"median of {args.repeat} run(s) in alternating rounds", "",
             "| route | n | seconds | peak RSS (MB) | over data (MB) | κ_eff | λ_min⁺ | rel. diff vs exact | notes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (route, n), r in results.items():
        if route == "pass":
            continue
        ex = best_exact(n)
        diff = (f"{abs(r['kappa'] / ex['kappa'] - 1):.1e}" if ex and route.startswith("matrix-free")
                else "")
        if route.startswith("exact"):
            threads = "BLAS at 1 thread" if route == "exact-1" else "default BLAS threads"
            notes = (f"{threads}; build {r['build']:.2f} s + eigvalsh {r['eigvalsh']:.2f} s; "
                     f"rank {r['rank']}")
        elif r.get("cached_fraction", 0.0) > 0:
            ratio = f"{r['seconds'] / ex['seconds']:.1f}× the exact route, " if ex else ""
            notes = (f"{ratio}{r['passes']} passes (sketch rank {r['sketch']}, k = {r['k']}); "
                     f"{100 * r['cached_fraction']:.0f} % of the tiles kept "
                     f"({r['cache_bytes'] / 2**20:.0f} MB), so a pass after the first takes "
                     f"{r['pass_seconds']:.3f} s (recomputing all: GEMM floor {r['pass_floor']:.3f} s); "
                     f"residuals {r['residual']:.1e}, {r['residual_max']:.1e}·λ_max "
                     f"(estimated error {r['estimate']:.0e})")
        else:
            ratio = f"{r['seconds'] / ex['seconds']:.1f}× the exact route, " if ex else ""
            notes = (f"{ratio}{r['passes']} passes (sketch rank {r['sketch']}, k = {r['k']}), "
                     f"{r['pass_seconds']:.3f} s a pass = {r['pass_seconds'] / r['pass_floor']:.1f}× "
                     f"its GEMM floor {r['pass_floor']:.3f} s ({r['pass_seconds'] / full_floor(r):.1f}× "
                     f"GEMM + elementwise recursion, {full_floor(r):.3f} s); residuals {r['residual']:.1e}, "
                     f"{r['residual_max']:.1e}·λ_max (estimated error {r['estimate']:.0e})")
        name = ("exact" if route.startswith("exact") else
                route.replace("matrix-free:", "matrix-free, sketch rank ")
                .replace("matrix-free-nocache", "matrix-free, cache=0"))
        lines.append(f"| {name} | {n} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | "
                     f"{r['peak_mb'] - r['base_mb']:.0f} | {r['kappa']:.6g} | {r['lmin']:.6g} | {diff} | {notes} |")
    mf = dict((n, r) for (route, n), r in results.items() if route == "matrix-free")
    small = [(n, r) for (route, n), r in results.items() if route.startswith("matrix-free:")]
    exponent = None
    for n, r in small:  # passes ∝ (n/r)^a: a from two sketch ranks at the same n
        if n in mf and r["sketch"] and r["sketch"] != mf[n]["sketch"]:
            exponent = (math.log(r["passes"] / mf[n]["passes"])
                        / math.log(mf[n]["sketch"] / r["sketch"]))
            lines += ["", f"At n = {n}: {mf[n]['passes']} passes at sketch rank {mf[n]['sketch']}, "
                          f"{r['passes']} at {r['sketch']}: passes ∝ (n/r)^{exponent:.2f}."]
    for (route, n), r in results.items():
        if route != "pass":
            continue
        N = args.extrapolate
        per = r["pass_seconds"] * (N / n) ** 2
        lines += ["", f"One pass at n = {n} (68 columns): {r['pass_seconds']:.2f} s, its GEMM floor "
                      f"{r['pass_floor']:.2f} s ({r['pass_seconds'] / r['pass_floor']:.1f}×), GEMM + "
                      f"elementwise recursion {full_floor(r):.2f} s ({r['pass_seconds'] / full_floor(r):.1f}×)."]
        if exponent is not None and mf:
            n2 = max(mf)
            r2 = mf[n2]
            rN = default_sketch(N)
            passes = r2["passes"] * ((N / rN) / (n2 / r2["sketch"])) ** exponent
            sketch_extra = 2 * 2.0 * N * N * rN / r["gemm_rate"]  # two sketch passes' K·Ω
            total = passes * per + sketch_extra
            lines.append(
                f"Extrapolated to n = {N}: {per:.0f} s a pass (× (N/n)²); sketch rank {rN}; "
                f"{r2['passes']} passes at n = {n2} × ((N/{rN})/({n2}/{r2['sketch']}))^{exponent:.2f} "
                f"≈ {passes:.0f} passes; the two sketch passes add 2·2N²r flops ≈ "
                f"{sketch_extra:.0f} s: about {total / 3600:.1f} h on this machine with cache=0 "
                f"(memory: a few n × r float64 arrays, {N * rN * 8 / 2**30:.1f} GiB each).")
            # default cache: half the available memory keeps a fraction f of the tiles
            # (8·N(N + b)/2 bytes in all); a pass recomputes 1 − f and multiplies the rest
            tiles = 8.0 * N * (N + 512) / 2
            f = min(1.0, r["available"] / 2 / tiles)
            per_c = (1 - f) * per + f * r["cached_pass_seconds"] * (N / n) ** 2
            total_c = per + passes * per_c + sketch_extra
            lines.append(
                f"With the default cache (half of the {r['available'] / 2**30:.0f} GiB available "
                f"now: {100 * f:.0f} % of the {tiles / 2**30:.1f} GiB of tiles), a pass after the "
                f"first ≈ {per_c:.0f} s (a cached pass at n = {n}: {r['cached_pass_seconds']:.2f} s, "
                f"× (N/n)²): about {total_c / 3600:.1f} h.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        atomic_write(args.out, text)
        atomic_write(os.path.splitext(args.out)[0] + ".json",
                     json.dumps({f"{route} {n}": r for (route, n), r in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
