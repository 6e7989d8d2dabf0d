#!/usr/bin/env python3
"""One process against two on this machine: the whole-data-set routes on JAX's
multi-controller runtime (``ntkcond.scale.processes``), BLAS at one thread per process.

    python benchmarks/bench_distributed.py --data ../shared/data/mnist_test.npz --limit 5000 \\
        --out benchmarks/results/distributed_mnist5000.md
    python benchmarks/bench_distributed.py --data ../shared/data/mnist_test.npz --augmented-60k \\
        --fig2-batches 117 --out benchmarks/results/distributed_mnist60k.md   # the 60,000 jobs

Jobs (``--jobs``): ``min_angle`` — ``streaming_smallest_angles(x, depths=range(11),
backend=--backend)``; ``kappa`` — ``matrix_free_conditioning(x, depth=3)``; ``fig2`` — the
Figure-2 sweep (``runs.cond_vs_depth``: MNIST preset, batch 512, width 512, 5 seeds, depths
0-10, ReLU and linear, --fig2-batches batches, dropping a last smaller one). Each job runs in
a fresh process alone, then in two processes joined over gloo on 127.0.0.1
(``OPENBLAS_NUM_THREADS=1`` in all), and the results are compared: angles and pairs, and the
Figure-2 records, bit for bit; κ_eff to 1e-12 (and ``jax.device_count()`` in each of the two).

The floor of the two-process time is half the one-process time plus the communication:
T₁/2 + c, with c the time in collectives of the process that waited least (the other's also
holds its wait for the slower one), so the speed-up floor is T₁/(T₁/2 + c) (2× minus the
communication). κ_eff splits only its kernel passes: the dense algebra between them (n·r²
for the Nyström factor, n·k² a LOBPCG step) runs on every process, so with the time in passes
(P₁ of T₁, ``MatrixFreeConditioning.seconds_in_passes``) the table adds the bound
T₁/(P₁/2 + (T₁ − P₁) + c). ``--counts 2`` runs a job at two processes only (the 60,000 κ_eff, too long for one process here), with
``--kappa-sketch`` and ``--kappa-cache`` (bytes of tiles per process) to fit its memory.
--augmented-60k builds the 60,000 × 784 set of issue 24: the MNIST test images
(--data, mnist preset), each shifted by one pixel up, down, left and right, and one pixel
diagonally (down-right), the background filling in.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
JOBS = ("min_angle", "kappa", "fig2")


def augmented_60k(x):
    """x (10000, 784) normalised MNIST images → (60000, 784): x and its five one-pixel shifts
    (up, down, left, right, down-right), the vacated pixels set to the background value."""
    import numpy as np

    img = x.reshape(-1, 28, 28)
    bg = float(np.min(x))  # the normalised 0 pixel
    out = [img]
    for dy, dx in ((-1, 0), (1, 0), (0, -1), (0, 1), (1, 1)):
        s = np.full_like(img, bg)
        ys, yd = (slice(1, None), slice(None, -1)) if dy < 0 else (slice(None, 28 - dy), slice(dy, None))
        xs, xd = (slice(1, None), slice(None, -1)) if dx < 0 else (slice(None, 28 - dx), slice(dx, None))
        s[:, yd, xd] = img[:, ys, xs]
        out.append(s)
    return np.concatenate(out).reshape(-1, 784)


def worker(args) -> int:
    """One process of a job: join (if several), run, write {seconds, collective seconds, result}."""
    from ntkcond.scale import processes

    share = processes.Share()
    if args.num_processes > 1:
        share = processes.initialize(args.coordinator, args.num_processes, args.process_id)
    spent = [0.0]
    original = processes.Share.allgather_bytes

    def timed(self, payload):  # the time in collectives (transfers and waits)
        t0 = time.perf_counter()
        try:
            return original(self, payload)
        finally:
            spent[0] += time.perf_counter() - t0

    processes.Share.allgather_bytes = timed
    import ntkcond

    ds = load_data(args)
    x = ds.x if args.limit is None else ds.x[: args.limit]
    spent[0] = 0.0
    in_passes = None
    t0 = time.perf_counter()
    if args.worker == "min_angle":
        r = ntkcond.streaming_smallest_angles(x, depths=range(11), backend=args.backend)
        result = {"input": [r.input_angle, *r.input_pair],
                  "minima": [[a.activation, a.depth, a.angle, *a.pair] for a in r.results]}
    elif args.worker == "kappa":
        r = ntkcond.matrix_free_conditioning(x, depth=3, sketch=args.kappa_sketch,
                                             cache=None if args.kappa_cache is None
                                             else int(args.kappa_cache))
        result = {"kappa_eff": r.kappa_eff, "passes": r.matvecs, "converged": r.converged,
                  "cached_fraction": r.cached_fraction, "cache_bytes": r.cache_bytes}
        in_passes = r.seconds_in_passes  # the part that splits over processes
    else:
        from ntkcond.runs.cond_vs_depth import cond_vs_depth

        with tempfile.TemporaryDirectory() as tmp:
            cond_vs_depth(ds, out=os.path.join(tmp, "run"), batch=512, depths=range(11),
                          widths=[512], seeds=5, drop_last=True, max_batches=args.fig2_batches,
                          progress=False)
            if share.is_root:
                with open(os.path.join(tmp, "run", "records.jsonl"), encoding="utf-8") as f:
                    recs = [json.loads(line) for line in f]
                result = {"records": [{k: v for k, v in r.items() if k != "seconds"} for r in recs]}
                x = ds.x[: 512 * len({r["batch_index"] for r in recs})]  # the rows swept
            else:
                result = None
    seconds = time.perf_counter() - t0
    devices = None
    if share.distributed:
        import jax

        devices = jax.device_count()  # all processes' devices
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump({"seconds": seconds, "collectives": spent[0], "result": result, "devices": devices,
                   "n": int(x.shape[0]), "share": [share.index, share.count],
                   "pass_seconds": in_passes,
                   "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}, f)
    return 0


def load_data(args):
    from ntkcond import datasets

    ds = datasets.load(args.data, preset="mnist")
    if args.augmented_60k:
        import dataclasses

        import numpy as np

        ds = dataclasses.replace(ds, x=augmented_60k(ds.x), y=np.tile(ds.y, 6),
                                 name=ds.name + " + 5 one-pixel shifts")
    return ds


def run_job(job, count, argv, tmp) -> list[dict]:
    from ntkcond.runs.launcher import free_port

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in [env.get("PYTHONPATH")] if p])
    port = free_port()
    procs, files = [], []
    for i in range(count):
        files.append(os.path.join(tmp, f"{job}_{count}_{i}.json"))
        cmd = [sys.executable, os.path.abspath(__file__), *argv, "--worker", job,
               "--coordinator", f"127.0.0.1:{port}", "--num-processes", str(count),
               "--process-id", str(i), "--result", files[-1]]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL))
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"bench_distributed: {job} with {count} process(es) failed: {codes}")
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            out.append(json.load(fh))
    return out


def same(job, one, two) -> str:
    a, b = one["result"], two["result"]
    if job == "kappa":
        rel = abs(b["kappa_eff"] / a["kappa_eff"] - 1.0)
        return f"κ_eff {b['kappa_eff']:.12g} vs {a['kappa_eff']:.12g}: rel. {rel:.1e} ({'≤' if rel <= 1e-12 else '>'} 1e-12); passes {b['passes']} vs {a['passes']}"
    if job == "min_angle":
        return "angles and pairs bit for bit: " + ("yes" if a == b else "NO")
    return f"{len(b['records'])} records bit for bit: " + ("yes" if a == b else "NO")


def describe(job, r) -> str:
    """One run's result in words (for a job run at one process count only)."""
    a = r["result"]
    if job == "kappa":
        return (f"κ_eff {a['kappa_eff']:.12g}, {a['passes']} passes, converged {a['converged']}, "
                f"tiles cached {100 * a['cached_fraction']:.0f}% ({a['cache_bytes'] / 2**30:.2f} GiB)")
    if job == "min_angle":
        return "smallest angles " + ", ".join(f"{m[0]} {m[1]}: {m[2]:.6g}" for m in a["minima"][-2:])
    return f"{len(a['records'])} records"


def row(job, ones, twos) -> list[str]:
    """The table row from R rounds: n, the medians of T₁ and T₂ (the slower process of a round),
    the speed-up of the medians (each round's after it), collectives, floor, peak RSS and the
    result compared with the first one-process round (blank where a count was not run).
    ``ones``: one record a round; ``twos``: the two processes' records a round."""
    med = statistics.median
    rss = max(r["peak_rss_gb"] for r in ([p for two in twos for p in two] or ones))
    t1s = [o["seconds"] for o in ones]
    t2s = [max(r["seconds"] for r in two) for two in twos]
    cmin = [min(r["collectives"] for r in two) for two in twos]
    cmax = [max(r["collectives"] for r in two) for two in twos]
    if ones and twos:
        t1, t2, c = med(t1s), med(t2s), med(cmin)
        floor = t1 / (t1 / 2 + c)
        counts = ", ".join(str(r["devices"]) for r in twos[0])
        checks = [same(job, ones[0], r) for r in ones[1:] + [two[0] for two in twos]]
        text = "; ".join(dict.fromkeys(checks)) + f"; jax.device_count() = {counts}"
        if ones[0].get("pass_seconds") is not None:  # Amdahl: only the kernel passes split
            t_pass = med(o["pass_seconds"] for o in ones)
            text += (f"; one process: {t_pass:.1f} s in kernel passes, {t1 - t_pass:.1f} s in the "
                     f"dense algebra every process repeats, so at most "
                     f"{t1 / (t_pass / 2 + (t1 - t_pass) + c):.2f}x")
        speed = f"{t1 / t2:.2f}x"
        if len(ones) > 1 and len(ones) == len(twos):
            speed += " (" + ", ".join(f"{a / b:.2f}" for a, b in zip(t1s, t2s)) + ")"
        return [job, str(ones[0]["n"]), f"{t1:.2f}", f"{t2:.2f}", speed, f"{c:.2f}",
                f"{med(cmax):.2f}", f"{floor:.2f}x", f"{rss:.1f}", text]
    if not twos:
        return [job, str(ones[0]["n"]), f"{med(t1s):.2f}", "not run", "", "", "", "", f"{rss:.1f}",
                describe(job, ones[0])]
    counts = ", ".join(str(r["devices"]) for r in twos[0])
    return [job, str(twos[0][0]["n"]), "not run", f"{med(t2s):.2f}", "", f"{med(cmin):.2f}",
            f"{med(cmax):.2f}", "", f"{rss:.1f}", describe(job, twos[0][0]) + f"; jax.device_count() = {counts}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", default=os.path.join(REPO, "..", "shared", "data", "mnist_test.npz"))
    p.add_argument("--limit", type=int, default=0, help="first N rows (0: all)")
    p.add_argument("--augmented-60k", action="store_true", help="the 60,000 × 784 set (docstring)")
    p.add_argument("--jobs", default=",".join(JOBS))
    p.add_argument("--backend", default="numpy", choices=["numpy", "jax"], help="min_angle")
    p.add_argument("--fig2-batches", type=int, default=8)
    p.add_argument("--kappa-sketch", type=int, default=None,
                   help="kappa: Nyström rank r (default: default_sketch(n))")
    p.add_argument("--kappa-cache", type=float, default=None,
                   help="kappa: tile-cache bytes per process (default: the library's)")
    p.add_argument("--counts", default="1,2",
                   help="process counts to run, e.g. 2 alone for a job too long for one")
    p.add_argument("--repeats", type=int, default=1,
                   help="rounds of each job (one process, then two); the table gives medians")
    p.add_argument("--out", default=None, help="markdown file for the results")
    p.add_argument("--worker", default=None, choices=JOBS, help=argparse.SUPPRESS)
    p.add_argument("--coordinator", default=None, help=argparse.SUPPRESS)
    p.add_argument("--num-processes", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--process-id", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.limit == 0:
        args.limit = None
    if args.worker:
        return worker(args)
    raw = sys.argv[1:] if argv is None else list(argv)
    passed = [a for a in raw if a != "--out" and not a.endswith(".md")]
    jobs = [j for j in args.jobs.split(",") if j]
    counts = {int(c) for c in args.counts.split(",") if c}
    if not counts or not counts <= {1, 2}:
        p.error(f"--counts: expected 1, 2 or 1,2, got {args.counts!r}")
    if args.repeats < 1:
        p.error(f"--repeats: expected a count >= 1, got {args.repeats}")
    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for job in jobs:
            ones, twos = [], []
            for _ in range(args.repeats):  # alternating, so drifts in the load hit both
                if 1 in counts:
                    ones.append(run_job(job, 1, passed, tmp)[0])
                if 2 in counts:
                    twos.append(run_job(job, 2, passed, tmp))
            rows.append(row(job, ones, twos))
            print(" | ".join(rows[-1]), flush=True)
    load_after = os.getloadavg()
    lines = [
        "# One process against two: the whole-data-set routes on JAX's multi-controller runtime",
        "",
        f"Command: `python benchmarks/bench_distributed.py {' '.join(raw)}`  ",
        f"Date: {started:%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, {os.cpu_count()} "
        f"cores, Python {platform.python_version()}, host {socket.gethostname()!r}  ",
        f"Load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in load_before)}; "
        f"after: {', '.join(f'{v:.2f}' for v in load_after)}",
        "",
        "Each job in a fresh process alone (T₁), then in two processes joined over gloo on "
        "127.0.0.1 (T₂, the slower), `OPENBLAS_NUM_THREADS=1` in all. c: seconds in collectives "
        "of the process that waited least (transfers; the other's figure adds its wait). "
        "Floor: T₁/(T₁/2 + c). "
        f"{args.repeats} round(s) a job, one process then two, alternating; times are medians "
        "(each round's speed-up in brackets).",
        "",
        "| job | n | T₁ (s) | T₂ (s) | speed-up | c (s) | other's (s) | floor | peak RSS a process (GB) | same result |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
