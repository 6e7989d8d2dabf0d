#!/usr/bin/env python3
"""The Figure-2 finite-width sweep against its FLOP floor, in one process.

    python benchmarks/bench_fig2_sweep.py --batches 4            # MNIST test, width 512, 5 seeds
    python benchmarks/bench_fig2_sweep.py --batches 19
    python benchmarks/bench_fig2_sweep.py --batches 1 --reference-batches 1   # before/after

Runs ``ntkcond.runs.cond_vs_depth.cond_vs_depth`` end to end, as

    scripts/cond_vs_depth.py --dataset DATA --split test --preset mnist --batch 512
        --max-batches B --drop-last --width 512 --seeds 5 --no-progress --out DIR --overwrite

does (depths 0–10, ReLU and linear, float64; records, summary.csv and figure.png written into a
temporary run directory), and compares its time with the floor of the same work:

  per batch (n rows, d inputs, width m): the input Gram n²d once, and per net (seed ×
  activation) and depth L ≥ 1: forward 2ndm + 2nm²(L−1), backward 2nm²(L−1), per-layer Grams
  as symmetric rank-k updates 2Ln²m, all at the machine's float64 GEMM rate; plus one
  eigvalsh(n) per record.

The rate and the eigvalsh time are measured in this process, between batches (alternating
with the sweep: the machine may be shared): before each batch, a probe times a 2048² matmul
on the BLAS threads and ``workers`` concurrent 1024² matmuls with BLAS at one thread (the best
of the two is the rate), and eigvalsh(n) of a PSD matrix at one and at all BLAS threads (the
faster is the floor's). The probes' own time is not counted in the sweep's. The floor of
batch b uses the probe taken just before it; the ratio is Σ time / Σ floor. Beside the wall
times the process CPU time is reported against a CPU-time floor (rate and eigvalsh measured
in CPU seconds of the single-threaded probes), which a loaded machine disturbs less.

``--reference-batches K`` also times the code before this optimisation on the first K batches
(per record: ``MLP.init`` + ``empirical_ntk`` + the record, one after the other on the default
BLAS threads) and reports the largest relative difference between its records and the sweep's,
and again with the code before run on BLAS at one thread (the sweep's kernels run so; OpenBLAS
rounds some GEMMs differently on one and on two threads).

Writes benchmarks/results/bench_fig2_sweep_<B>b.md and .json (``--out-dir``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(ROOT, "..", "shared", "data", "mnist_test.npz")
#: Batches of 512 in MNIST-train as the issue counts them: ⌈60,000 / 512⌉.
MNIST_TRAIN_BATCHES = math.ceil(60000 / 512)


def batch_flops(n: int, d: int, m: int, depths, nets: int) -> float:
    """FLOPs of one batch's floor: n²d + Σ_nets Σ_{L≥1} [2ndm + 4nm²(L−1) + 2Ln²m]."""
    total = float(n) * n * d
    for L in depths:
        if L >= 1:
            total += nets * (2.0 * n * d * m + 4.0 * n * m * m * (L - 1) + 2.0 * L * n * n * m)
    return total


def _median_time(fn, repeats: int) -> tuple[float, float]:
    """(median wall seconds, median process-CPU seconds) of ``fn`` over ``repeats`` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        c, t = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def probe(n: int, workers: int, repeats: int = 3) -> dict:
    """GEMM rates (FLOP/s, wall and CPU) and eigvalsh(n) seconds, measured now."""
    import concurrent.futures

    from ntkcond._core.threads import single_threaded_blas

    rng = np.random.default_rng(0)
    big = rng.standard_normal((2048, 2048))
    mid = [rng.standard_normal((1024, 1024)) for _ in range(workers)]
    g = rng.standard_normal((n, n + 64))
    K = g @ g.T
    big @ big  # warm
    wall_big, _ = _median_time(lambda: big @ big, repeats)
    out = {"rate_blas_threads": 2.0 * 2048**3 / wall_big}
    with single_threaded_blas(), concurrent.futures.ThreadPoolExecutor(workers) as pool:
        def par():
            list(pool.map(lambda a: (a @ a, a @ a), mid))
        par()
        wall_par, cpu_par = _median_time(par, repeats)
        flops = workers * 2 * 2.0 * 1024**3
        out["rate_workers"] = flops / wall_par
        out["rate_cpu"] = flops / cpu_par
        np.linalg.eigvalsh(K)
        eig1_wall, eig1_cpu = _median_time(lambda: np.linalg.eigvalsh(K), 2 * repeats)
    eigall_wall, _ = _median_time(lambda: np.linalg.eigvalsh(K), 2 * repeats)
    out.update(rate=max(out["rate_blas_threads"], out["rate_workers"]),
               eig_1thread=eig1_wall, eig_all_threads=eigall_wall, eig=min(eig1_wall, eigall_wall),
               eig_cpu=eig1_cpu)
    return out


class Probes:
    """Wraps ``iter_finite_batch`` as cond_vs_depth calls it: a probe before each new batch,
    its time kept apart from the sweep's."""

    def __init__(self, inner, n, workers):
        self.inner, self.n, self.workers = inner, n, workers
        self.by_batch: dict = {}
        self.records: dict = {}
        self.wall = self.cpu = 0.0

    def __call__(self, x, index, **kw):
        b = kw.get("meta", {}).get("batch_index")
        if b not in self.by_batch:
            c, t = time.process_time(), time.perf_counter()
            self.by_batch[b] = probe(self.n, self.workers)
            self.wall += time.perf_counter() - t
            self.cpu += time.process_time() - c
        for rec in self.inner(x, index, **kw):
            self.records.setdefault(b, []).append(rec)
            yield rec


def reference_records(x, index, *, depths, activations, width, seeds, meta):
    """The records as computed before this optimisation (``iter_finite_batch`` of ebf933a)."""
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64
    from ntkcond.activations import parse_activation
    from ntkcond.finite.empirical import empirical_ntk
    from ntkcond.finite.models import mlp
    from ntkcond.infinite.geometry import input_angles
    from ntkcond.runs.depth import spectrum_record
    from ntkcond.spectrum import argmin_upper, pairwise_angles

    x = np.asarray(x, dtype=np.float64)
    min_input = math.degrees(argmin_upper(input_angles(x))[0])
    out = []
    for activation in activations:
        act = parse_activation(activation)
        for seed in seeds:
            for depth in sorted(set(depths)):
                start = time.perf_counter()
                with x64():
                    net = mlp(depth, width, act)
                    params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=jnp.float64)
                    K = np.asarray(empirical_ntk(net, params, jnp.asarray(x, jnp.float64)), np.float64)
                rec = dict(meta)
                rec.update(n=int(x.shape[0]), depth=depth, activation=act.name, width=int(width),
                           seed=seed, trainable="all")
                rec.update(spectrum_record(K, pairwise_angles(K), index, dtype=np.float64))
                rec["min_input_angle_deg"] = min_input
                rec["seconds"] = time.perf_counter() - start
                out.append(rec)
    return out


def max_rel_diff(a: list, b: list) -> float:
    """Largest relative difference over the float fields of matching records (ints, pairs and
    strings must be equal); inf if they do not match up."""
    worst = 0.0
    if len(a) != len(b):
        return math.inf
    for ra, rb in zip(a, b):
        for key, va in ra.items():
            if key == "seconds":
                continue
            vb = rb.get(key)
            if isinstance(va, float) and isinstance(vb, float):
                if va != vb:
                    worst = max(worst, abs(va - vb) / max(abs(va), abs(vb)))
            elif va != vb:
                return math.inf
    return worst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="MNIST test .npz (preset 'mnist')")
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--depths", default="0-10")
    p.add_argument("--reference-batches", type=int, default=0,
                   help="also time the code before the optimisation on this many batches")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "benchmarks", "results"))
    args = p.parse_args(argv)

    import ntkcond.runs.cond_vs_depth as cvd
    from ntkcond import datasets
    from ntkcond._core.threads import blas_threads
    from ntkcond.runs.cli import parse_depths

    depths = parse_depths(args.depths)
    acts = ["relu", "linear"]
    ds = datasets.load(args.data, "test", preset="mnist")
    index_batches = datasets.batches(ds, args.batch, seed=0, shuffle=True,
                                     max_batches=args.batches, drop_last=True)
    n, d, m = args.batch, ds.x.shape[1], args.width
    workers = blas_threads()
    nets = len(acts) * args.seeds
    records_per_batch = nets * len(depths)
    flops = batch_flops(n, d, m, depths, nets)

    probes = Probes(cvd.iter_finite_batch, n, workers)
    cvd.iter_finite_batch = probes
    try:
        with tempfile.TemporaryDirectory() as out:
            c, t = time.process_time(), time.perf_counter()
            cvd.cond_vs_depth(ds, out=out, batch=n, depths=depths, activations=acts, widths=(m,),
                              seeds=args.seeds, max_batches=args.batches, drop_last=True,
                              overwrite=True, progress=False)
            wall = time.perf_counter() - t - probes.wall
            cpu = time.process_time() - c - probes.cpu
    finally:
        cvd.iter_finite_batch = probes.inner
    after = probe(n, workers)
    batches = sorted(probes.by_batch)
    floor = sum(flops / probes.by_batch[b]["rate"] + records_per_batch * probes.by_batch[b]["eig"]
                for b in batches)
    floor_cpu = sum(flops / probes.by_batch[b]["rate_cpu"]
                    + records_per_batch * probes.by_batch[b]["eig_cpu"] for b in batches)
    per_batch = [sum(r["seconds"] for r in probes.records[b]) for b in batches]
    result = {
        "command": " ".join(["python", "benchmarks/bench_fig2_sweep.py"] + (argv or sys.argv[1:])),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {workers} BLAS threads/workers",
        "load_average_end": os.getloadavg(),
        "data": os.path.basename(args.data), "batches": len(batches), "n": n, "d": d, "width": m,
        "seeds": args.seeds, "depths": depths, "activations": acts,
        "records": records_per_batch * len(batches),
        "floor_gflop_per_batch": flops / 1e9,
        "gemm_rate_gflops_median": statistics.median(probes.by_batch[b]["rate"] for b in batches) / 1e9,
        "eigvalsh_ms_median": 1e3 * statistics.median(probes.by_batch[b]["eig"] for b in batches),
        "seconds": wall, "floor_seconds": floor, "ratio": wall / floor,
        "cpu_seconds": cpu, "cpu_floor_seconds": floor_cpu, "cpu_ratio": cpu / floor_cpu,
        "probes": {str(b): probes.by_batch[b] for b in batches} | {"after": after},
        "record_seconds_per_batch": per_batch,
        "extrapolated_mnist_train_seconds": wall / len(batches) * MNIST_TRAIN_BATCHES,
    }
    if args.reference_batches:
        from ntkcond._core.threads import single_threaded_blas

        ref_wall = ref_floor = 0.0
        worst = {"default_all": 0.0, "default_kappa_below_1e6": 0.0, "one_thread_all": 0.0}
        for b in batches[: args.reference_batches]:
            pr = probe(n, workers)
            index = index_batches[b]
            meta = {"dataset": ds.name, "split": ds.split, "batch_index": b}
            kw = dict(depths=depths, activations=acts, width=m, seeds=range(args.seeds), meta=meta)
            t = time.perf_counter()
            ref = reference_records(ds.x[index], index, **kw)
            ref_wall += time.perf_counter() - t
            ref_floor += flops / pr["rate"] + records_per_batch * pr["eig"]
            ours = probes.records[b]
            worst["default_all"] = max(worst["default_all"], max_rel_diff(ref, ours))
            well = [i for i, r in enumerate(ref) if r["kappa_eff"] < 1e6]
            worst["default_kappa_below_1e6"] = max(worst["default_kappa_below_1e6"], max_rel_diff(
                [ref[i] for i in well], [ours[i] for i in well]))
            with single_threaded_blas():  # the BLAS thread count the sweep's kernels run at
                ref1 = reference_records(ds.x[index], index, **kw)
            worst["one_thread_all"] = max(worst["one_thread_all"], max_rel_diff(ref1, ours))
        result["reference"] = {"batches": args.reference_batches, "seconds": ref_wall,
                               "floor_seconds": ref_floor, "ratio": ref_wall / ref_floor,
                               "max_rel_diff_vs_sweep": worst}
    os.makedirs(args.out_dir, exist_ok=True)
    stem = os.path.join(args.out_dir, f"bench_fig2_sweep_{len(batches)}b")
    with open(stem + ".json", "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1, default=float)
    lines = [
        f"# Figure-2 sweep vs its FLOP floor: {len(batches)} MNIST test batch(es) of {n}, width {m}, "
        f"{args.seeds} seeds, depths {depths[0]}–{depths[-1]}, ReLU + linear, float64",
        "",
        f"`{result['command']}` — {result['date']}, {result['machine']}, load average at the end "
        f"{' '.join(f'{v:.2f}' for v in result['load_average_end'])}",
        "",
        "| | seconds | floor (s) | ratio |",
        "|---|---|---|---|",
        f"| sweep, wall (cond_vs_depth end to end) | {wall:.1f} | {floor:.1f} | {wall / floor:.2f} |",
        f"| sweep, process CPU | {cpu:.1f} | {floor_cpu:.1f} | {cpu / floor_cpu:.2f} |",
    ]
    if "reference" in result:
        r = result["reference"]
        lines.append(f"| before (ebf933a path), wall, {r['batches']} batch(es) | {r['seconds']:.1f} | "
                     f"{r['floor_seconds']:.1f} | {r['ratio']:.2f} |")
    lines += [
        "",
        f"Floor per batch: {flops / 1e9:.1f} GFLOP at the measured GEMM rate (median "
        f"{result['gemm_rate_gflops_median']:.1f} GFLOP/s over the probes) + {records_per_batch} × "
        f"eigvalsh({n}) (median {result['eigvalsh_ms_median']:.1f} ms).",
        f"Wall seconds per batch (records' own): {', '.join(f'{s / workers:.1f}' for s in per_batch)} "
        f"(sum of record seconds / {workers} workers).",
        f"Extrapolated to the {MNIST_TRAIN_BATCHES} batches of MNIST-train (60,000 images): "
        f"{wall / len(batches) * MNIST_TRAIN_BATCHES / 60:.1f} min (this run's wall time per batch; "
        f"its floor {floor / len(batches) * MNIST_TRAIN_BATCHES / 60:.1f} min).",
    ]
    if "reference" in result:
        w = result["reference"]["max_rel_diff_vs_sweep"]
        lines.append(
            f"Largest relative difference between the records before and after (every float "
            f"field): {w['one_thread_all']:.1e} against the code before run with BLAS at one "
            f"thread, as the sweep's kernels run; against it on the default BLAS threads "
            f"{w['default_all']:.1e} over all records and {w['default_kappa_below_1e6']:.1e} over "
            f"those with κ_eff < 1e6 (the rest, linear nets and depth 0 with κ_eff ≈ 1e8–1e9, move "
            f"by ~κ·eps between BLAS thread counts in the code before, too).")
    text = "\n".join(lines) + "\n"
    with open(stem + ".md", "w", encoding="utf-8") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
