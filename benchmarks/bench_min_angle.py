#!/usr/bin/env python3
"""Time the smallest gradient angle over all pairs: pairs route vs recursion vs one GEMM.

    python benchmarks/bench_min_angle.py [--n 10000] [--depths 10] [--deep 1000] [--block 1024]
                                         [--repeats 3] [--big 60000] [--check 0]
                                         [--scaling 0] [--out FILE.md]

Uses ../shared/data/mnist_test.npz with the papers' normalisation (``preset="mnist"``) when
present, else Gaussian inputs of the same shape (labelled in the output). All in one process,
so that speed is a ratio to one float64 GEMM measured alongside, not a wall time on a shared
machine:

* the reference: one n × d @ d × n float64 GEMM, both as ``x @ x.T`` (numpy may use SYRK) and
  as ``x @ y.T`` with y a copy (general GEMM); the faster of the two is the denominator;
* the pairs route (``streaming_smallest_angles(..., method="pairs")``), depths 0..DEPTHS and
  0..DEEP, ReLU and linear, each run alternating with the GEMMs, ``--repeats`` times (medians,
  and the median of the ratios to the adjacent GEMM);
* the recursion route (``method="recursion"``, the reference) once, depths 0..DEPTHS, and the
  agreement of all 2·(DEPTHS + 1) minima: same pairs, largest relative angle difference;
* ``--big N``: the pairs route on an N × d Gaussian stand-in (MNIST train: 60,000 × 784), with
  the GEMM-equivalent (N/n)² times the n-row GEMM;
* ``--check M``: brute force (``gradient_angles``, the full matrix) on the first M images;
* ``--scaling M``: the JAX backend on 1, 2 and 4 forced CPU devices (subprocesses), first M.
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
        return datasets.load(MNIST, preset="mnist").x[:n], "MNIST test images (papers' normalisation)"
    return np.random.default_rng(0).standard_normal((n, 784)), "Gaussian inputs (MNIST absent)"


def load_avg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


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
    p.add_argument("--depths", type=int, default=10, help="depths 0..DEPTHS (both routes)")
    p.add_argument("--deep", type=int, default=1000, help="pairs route also at depths 0..DEEP (0: off)")
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-recursion", action="store_true", help="skip the recursion route")
    p.add_argument("--big", type=int, default=60000, help="Gaussian N x d stand-in (0: off)")
    p.add_argument("--check", type=int, default=0, help="brute force on this many (0: off)")
    p.add_argument("--scaling", type=int, default=0, help="JAX 1/2/4-device timing on this many")
    p.add_argument("--out", default=None, help="write the Markdown result here (and .json beside)")
    args = p.parse_args(argv)
    x, source = data(args.n)
    n, d = x.shape
    y = x.copy()
    depths = list(range(args.depths + 1))
    acts = ["relu", "linear"]
    record = {"n": n, "d": d, "source": source, "block": args.block, "cpus": os.cpu_count(),
              "load_before": load_avg()}

    def pairs(ds):
        return streaming_smallest_angles(x, depths=ds, activations=acts, block=args.block,
                                         backend="numpy", method="pairs")

    runs = {"syrk": [], "gemm": [], "pairs": [], "pairs_ratio": []}
    if args.deep:
        runs.update(deep=[], deep_ratio=[])
    for _ in range(args.repeats):
        runs["syrk"].append(timed(lambda: x @ x.T)[0])
        runs["gemm"].append(timed(lambda: x @ y.T)[0])
        ref = min(runs["syrk"][-1], runs["gemm"][-1])
        seconds, res = timed(lambda: pairs(depths))
        runs["pairs"].append(seconds)
        runs["pairs_ratio"].append(seconds / ref)
        if args.deep:
            seconds, deep = timed(lambda: pairs(range(args.deep + 1)))
            runs["deep"].append(seconds)
            runs["deep_ratio"].append(seconds / ref)
    med = {k: float(np.median(v)) for k, v in runs.items()}
    gemm_ref = min(med["syrk"], med["gemm"])
    record.update(runs=runs, medians=med, gemm_reference_seconds=gemm_ref,
                  pairs_results=[[r.activation, r.depth, r.angle, list(r.pair)] for r in res.results],
                  input_angle=res.input_angle, input_pair=list(res.input_pair), fallback=list(res.fallback))
    lines = [f"# Smallest gradient angle over all pairs: {n} {source}, infinite width", "",
             f"machine: {os.cpu_count()} CPUs (shared), load average before: {record['load_before']}; "
             f"block {args.block}, numpy backend, {args.repeats} repeats alternating with the GEMMs", "",
             "| what | seconds (median) | / one GEMM |", "|---|---|---|",
             f"| GEMM x @ x.T ({n}×{d} @ {d}×{n}, float64) | {med['syrk']:.2f} | {med['syrk'] / gemm_ref:.2f} |",
             f"| GEMM x @ y.T (general) | {med['gemm']:.2f} | {med['gemm'] / gemm_ref:.2f} |",
             f"| pairs route, depths 0-{args.depths}, ReLU + linear | {med['pairs']:.2f} | "
             f"{med['pairs'] / gemm_ref:.2f} (median of adjacent ratios {med['pairs_ratio']:.2f}) |"]
    if args.deep:
        lines.append(f"| pairs route, depths 0-{args.deep}, ReLU + linear | {med['deep']:.2f} | "
                     f"{med['deep'] / gemm_ref:.2f} (median of adjacent ratios {med['deep_ratio']:.2f}) |")
        record["deep_results"] = {f"relu/{L}": [deep.get("relu", L).angle, list(deep.get("relu", L).pair)]
                                  for L in (10, 100, 1000) if L <= args.deep}
    if not args.no_recursion:
        before = timed(lambda: x @ y.T)[0]
        seconds, old = timed(lambda: streaming_smallest_angles(
            x, depths=depths, activations=acts, block=args.block, backend="numpy", method="recursion"))
        after = timed(lambda: x @ y.T)[0]
        around = float(np.median([before, after]))
        same_pairs = all(a.pair == b.pair for a, b in zip(res.results, old.results))
        worst = max(abs(a.angle - b.angle) / b.angle for a, b in zip(res.results, old.results))
        record["recursion"] = {"seconds": seconds, "gemm_around": [before, after],
                               "ratio": seconds / around, "same_pairs": same_pairs,
                               "max_rel_angle_diff": worst, "targets": len(old.results),
                               "speedup_vs_pairs": seconds / med["pairs"]}
        lines.append(f"| recursion route, depths 0-{args.depths}, ReLU + linear | {seconds:.2f} | "
                     f"{seconds / around:.1f} (to the GEMMs just before/after) |")
        lines += ["", f"pairs vs recursion route, all {len(old.results)} minima (ReLU and linear, depths "
                      f"0-{args.depths}): same pairs: **{same_pairs}**, largest relative angle difference "
                      f"**{worst:.1e}**; the pairs route is {seconds / med['pairs']:.0f}x faster"]
    lines += ["", f"smallest input angle: {math.degrees(res.input_angle):.10g} deg, pair {res.input_pair}; "
                  f"targets left to the recursion: {list(res.fallback) or 'none'}", "",
              "| depth | ReLU (deg) | pair | linear (deg) | pair |", "|---|---|---|---|---|"]
    for L in depths:
        r, li = res.get("relu", L), res.get("linear", L)
        lines.append(f"| {L} | {r.degrees:.10g} | {r.pair} | {li.degrees:.10g} | {li.pair} |")
    if args.deep:
        lines += ["", f"ReLU at depth {args.deep}: {deep.get('relu', args.deep).degrees:.10g} deg, "
                      f"pair {deep.get('relu', args.deep).pair}"]
    if args.big:
        xb = np.random.default_rng(1).standard_normal((args.big, d))
        seconds, big = timed(lambda: streaming_smallest_angles(
            xb, depths=depths, activations=acts, block=args.block, backend="numpy", method="pairs"))
        equiv = (args.big / n) ** 2 * gemm_ref
        record["big"] = {"n": args.big, "d": d, "seconds": seconds, "gemm_equivalent": equiv,
                         "input_angle": big.input_angle, "input_pair": list(big.input_pair),
                         "fallback": list(big.fallback),
                         "relu": [[L, big.get("relu", L).angle, list(big.get("relu", L).pair)] for L in depths]}
        lines += ["", f"**{args.big:,} × {d} Gaussian stand-in (MNIST train size), pairs route, depths "
                      f"0-{args.depths}, ReLU + linear: {seconds:.1f} s** "
                      f"({seconds / equiv:.2f}x the GEMM-equivalent ({args.big}/{n})² × {gemm_ref:.2f} s = "
                      f"{equiv:.1f} s); smallest input angle {math.degrees(big.input_angle):.6g} deg, "
                      f"ReLU depth {args.depths} {big.get('relu', args.depths).degrees:.6g} deg; "
                      f"targets left to the recursion: {list(big.fallback) or 'none'}"]
    if args.check:
        m = min(args.check, n)
        t0 = time.perf_counter()
        sub = streaming_smallest_angles(x[:m], depths=depths, block=args.block, backend="numpy")
        worst = 0.0
        for r in sub.results:
            phi = gradient_angles(x[:m], depth=r.depth, activation=r.activation)
            phi = np.where(np.tri(m, dtype=bool), np.inf, phi)
            best = phi.min()
            worst = max(worst, abs(r.angle - best) / best, abs(phi[r.pair] - best) / best)
        lines += ["", f"brute force on the first {m}: max relative difference {worst:.2e} "
                      f"(angle and the brute-force angle at the pair), {time.perf_counter() - t0:.1f} s"]
        record["check"] = {"n": m, "max_rel_diff": worst}
    if args.scaling:
        rows = scaling(args.scaling, args.depths, args.block // 2)
        lines += ["", f"JAX backend, forced CPU devices, first {args.scaling} images, block {args.block // 2}:",
                  "", "| devices | seconds | max rel. diff vs 1 device |", "|---|---|---|"]
        lines += [f"| {r['devices']} | {r['seconds']:.1f} | {r['max_rel_diff_vs_1']:.1e} |" for r in rows]
        record["scaling"] = rows
    record["load_after"] = load_avg()
    lines += ["", f"load average after: {record['load_after']}",
              f"command: python benchmarks/bench_min_angle.py {' '.join(argv if argv is not None else sys.argv[1:])}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        atomic_write(args.out, text)
        atomic_write(os.path.splitext(args.out)[0] + ".json", json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
