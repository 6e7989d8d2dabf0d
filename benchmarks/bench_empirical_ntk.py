#!/usr/bin/env python3
"""Empirical-NTK timing: ntkcond's structured and generic paths against neural-tangents.

    python benchmarks/bench_empirical_ntk.py --d 3072 --m 1024 --depth 5 --out results.md
    python benchmarks/bench_empirical_ntk.py --quick            # small smoke run

Methods (all jitted, all computing the same (n, n) float NTK of ``ntkcond.mlp(L, m)`` on the
same inputs: x ~ N(0, 1) from PRNGKey(1), weights from PRNGKey(0)):
  structured   ntkcond.empirical_ntk (per-layer Grams, no Jacobian)
  generic      ntkcond.empirical_ntk_fn(net.apply, method="jacobian", memory_budget=--budget-gb)
  generic_vp   the same with method="ntk_vp"
  nt_jacobian  neural_tangents.empirical_ntk_fn(..., vmap_axes=0, JACOBIAN_CONTRACTION)
  nt_ntk_vp    neural_tangents.empirical_ntk_fn(..., vmap_axes=0, NTK_VECTOR_PRODUCTS)
  jacrev       Σ J Jᵀ with J = jax.jacrev(net.apply)(params, x), the plain contraction

Each (configuration, method) runs in its own child process under --timeout seconds and an
address-space limit of --mem-limit-gb (so one method's OOM cannot take the machine or the
other methods with it): it builds the inputs, runs once to compile and warm up, then times
up to --repeats runs (fewer if they would exceed --min-time; none if the warm-up run took
over --single-run-above seconds, which is then the time) and reports the median and the
peak resident memory (``ru_maxrss``, the whole process: jax runtime included). The floor is
the structured formula's FLOPs (forward + backward GEMMs + 2 Grams per layer, 2mnk each)
divided by the machine's GEMM rate: the better of a 2048² matmul in XLA (Precision.HIGHEST)
and in NumPy's BLAS, same dtype, measured in the same child right after the timing (shared
machines drift; the rate is not a constant). On CPUs XLA's float64 GEMM is far below
OpenBLAS's, so the floor is the BLAS one there.
Every child also returns a fingerprint of its kernel, and the table reports its relative
deviation from the structured kernel, so all rows are checked to compute the same thing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ("structured", "generic", "generic_vp", "nt_jacobian", "nt_ntk_vp", "jacrev")
NT_METHODS = ("nt_jacobian", "nt_ntk_vp")


def structured_flops(n: int, d: int, m: int, depth: int) -> float:
    """FLOPs of eq. (1) of ntkcond.finite.empirical for n inputs (x2 = x1), all layers trainable.

    forward 2n(dm + (L−1)m² + m), backward 2n(L−1)m², Grams 2n²(d + Lm) of inputs and
    2n²·Lm of output gradients. Depth 0: 2n·d + 2n²d.
    """
    if depth == 0:
        return 2.0 * n * d + 2.0 * n * n * d
    forward = 2.0 * n * (d * m + (depth - 1) * m * m + m)
    backward = 2.0 * n * (depth - 1) * m * m
    grams = 2.0 * n * n * (d + depth * m) + 2.0 * n * n * depth * m
    return forward + backward + grams


# ----------------------------------------------------------------------------- child side
def _child_kernel_fn(method, net, params, budget_bytes):
    import jax
    import jax.numpy as jnp

    import ntkcond

    if method == "structured":
        return lambda x: ntkcond.empirical_ntk(net, params, x)
    if method in ("generic", "generic_vp"):
        fn = ntkcond.empirical_ntk_fn(net.apply, method="jacobian" if method == "generic" else "ntk_vp",
                                      memory_budget=budget_bytes)
        return lambda x: fn(params, x)
    if method in NT_METHODS:
        import neural_tangents as nt

        impl = (nt.NtkImplementation.JACOBIAN_CONTRACTION if method == "nt_jacobian"
                else nt.NtkImplementation.NTK_VECTOR_PRODUCTS)
        fn = jax.jit(nt.empirical_ntk_fn(net.apply, trace_axes=(), vmap_axes=0, implementation=impl))
        return lambda x: fn(x, None, params)
    if method == "jacrev":
        @jax.jit
        def fn(params, x):
            jac = jax.jacrev(net.apply)(params, x)
            hi = jax.lax.Precision.HIGHEST
            return sum(jnp.matmul(j.reshape(x.shape[0], -1), j.reshape(x.shape[0], -1).T, precision=hi)
                       for j in jac)
        return lambda x: fn(params, x)
    raise ValueError(f"unknown method {method!r}")


def _gemm_rate(dtype_name: str, repeats: int, size: int = 2048) -> dict:
    """FLOP/s of a size² matmul in XLA (Precision.HIGHEST) and in NumPy's BLAS; the best is the floor's."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    a = jax.random.normal(jax.random.PRNGKey(0), (size, size), getattr(jnp, dtype_name))
    mm = jax.jit(lambda a: jnp.matmul(a, a, precision=jax.lax.Precision.HIGHEST))
    a_np = np.array(a)
    rates = {}
    for name, run in (("xla", lambda: mm(a).block_until_ready()), ("blas", lambda: a_np @ a_np)):
        run()
        times = []
        for _ in range(max(3, repeats)):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        rates[name] = 2.0 * size**3 / statistics.median(times)
    return rates


def run_child(spec: dict) -> dict:
    """Time one (configuration, method) in this process; returns the result row."""
    import numpy as np

    from ntkcond._core.x64 import x64

    with x64(spec["dtype"] == "float64"):
        import jax
        import jax.numpy as jnp

        import ntkcond

        dtype = getattr(jnp, spec["dtype"])
        net = ntkcond.mlp(spec["depth"], spec["m"])
        params = net.init(jax.random.PRNGKey(0), spec["d"], dtype=dtype)
        x = jax.random.normal(jax.random.PRNGKey(1), (spec["n"], spec["d"]), dtype)
        fn = _child_kernel_fn(spec["method"], net, params, int(spec["budget_gb"] * 2**30))
        start = time.perf_counter()
        K = fn(x).block_until_ready()
        first = time.perf_counter() - start
        times, spent = [], 0.0
        if first > spec["single_run_above"]:  # slow: the warm-up run is the measurement
            times, spent = [first], first
        while len(times) < spec["repeats"] and (not times or spent + times[-1] <= spec["min_time"]):
            start = time.perf_counter()
            fn(x).block_until_ready()
            times.append(time.perf_counter() - start)
            spent += times[-1]
        K = np.asarray(K, dtype=np.float64)
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # before the GEMM test
        rates = _gemm_rate(spec["dtype"], 5, spec["gemm_size"])  # same process, right after
        runs = "warm-up only" if first > spec["single_run_above"] else len(times)
        return {"gemm_flops_per_s": max(rates.values()), "gemm_xla": rates["xla"],
                "gemm_blas": rates["blas"], "status": "ok", "median_s": statistics.median(times), "runs": runs,
                "first_s": first,
                "fingerprint": K[:8, :8].ravel().tolist() + [float(np.trace(K))],
                "peak_gb": peak_gb}


# ---------------------------------------------------------------------------- parent side
def spawn(spec: dict, timeout: float, mem_limit_gb: float) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    limit = int(mem_limit_gb * 2**30)

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout (> {timeout:g} s)"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode == 0 and lines:
        return json.loads(lines[-1][len("RESULT "):])
    err = proc.stderr
    oom_signs = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory", "MemoryError", "bad_alloc")
    if any(sign in err for sign in oom_signs) or proc.returncode in (-9, 137):
        return {"status": f"OOM (> {mem_limit_gb:g} GB)"}
    tail = (err.strip().splitlines() or ["?"])[-1][:120]
    return {"status": f"error: {tail}"}


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} CPUs"


def versions() -> str:
    from importlib import metadata

    found = []
    for pkg in ("jax", "jaxlib", "neural-tangents"):
        try:
            found.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            found.append(f"{pkg} (not installed)")
    return ", ".join(found) + f", Python {platform.python_version()}"


def rel_dev(fp, ref):
    if not fp or not ref:
        return None
    return max(abs(a - b) for a, b in zip(fp, ref)) / max(abs(b) for b in ref)


def format_report(rows, header: dict) -> str:
    out = ["# Empirical NTK benchmark", ""]
    out += [f"- {k}: {v}" for k, v in header.items()]
    for dt in sorted({r["dtype"] for r in rows}):
        for key, name in (("gemm_xla", "XLA, Precision.HIGHEST"), ("gemm_blas", "NumPy's BLAS")):
            rates = [r[key] / 1e9 for r in rows if r["dtype"] == dt and r["status"] == "ok" and key in r]
            if rates:
                out.append(f"- GEMM rate (2048² matmul, {name}), {dt}, measured in each child: "
                           f"{min(rates):.1f}–{max(rates):.1f} GFLOP/s")
    out += ["", "Times are medians after a warm-up run; x floor = time / (structured FLOPs / the "
            "better of the two GEMM rates of the same child, the GFLOP/s column); vs structured = method time / structured time; peak = "
            "process ru_maxrss; dev = max relative deviation of the kernel fingerprint from "
            "structured.", "",
            "| n | d | m | L | dtype | method | status | median s | runs | GFLOP/s | x floor "
            "| vs structured | peak GB | dev |", "|" + "---|" * 14]
    for r in rows:
        ok = r["status"] == "ok"
        fmt = lambda key, f: (f.format(r[key]) if ok and r.get(key) is not None else "")
        out.append(f"| {r['n']} | {r['d']} | {r['m']} | {r['depth']} | {r['dtype']} | {r['method']} "
                   f"| {r['status']} | {fmt('median_s', '{:.4g}')} | {fmt('runs', '{}')} "
                   f"| {(r['gemm_flops_per_s'] / 1e9 if ok else 0):.0f} "
                   f"| {fmt('x_floor', '{:.2f}')} | {fmt('vs_structured', '{:.1f}x')} "
                   f"| {fmt('peak_gb', '{:.2f}')} | {fmt('dev', '{:.1e}')} |")
    out += ["", *summaries(rows)]
    return "\n".join(out) + "\n"


def summaries(rows) -> list[str]:
    """One line per configuration: structured vs the fastest neural-tangents that completed."""
    lines = []
    keys = sorted({(r["n"], r["d"], r["m"], r["depth"], r["dtype"]) for r in rows})
    for key in keys:
        sel = {r["method"]: r for r in rows if (r["n"], r["d"], r["m"], r["depth"], r["dtype"]) == key}
        s = sel.get("structured")
        if not s or s["status"] != "ok":
            continue
        text = (f"- n={key[0]} d={key[1]} m={key[2]} L={key[3]} {key[4]}: structured "
                f"{s['median_s']:.3g} s = {s['x_floor']:.2f}x floor, peak {s['peak_gb']:.2f} GB")
        nts = [sel[k] for k in NT_METHODS if k in sel and sel[k]["status"] == "ok"]
        if nts:
            best = min(nts, key=lambda r: r["median_s"])
            text += f"; fastest neural-tangents ({best['method']}) {best['median_s']:.3g} s = " \
                    f"{best['median_s'] / s['median_s']:.0f}x slower"
            for name in ("generic", "generic_vp"):
                g = sel.get(name)
                if g and g["status"] == "ok":
                    text += f"; {name}/nt-best = {g['median_s'] / best['median_s']:.2f}"
        elif any(k in sel for k in NT_METHODS):
            text += "; no neural-tangents implementation completed (" + ", ".join(
                f"{k}: {sel[k]['status']}" for k in NT_METHODS if k in sel) + ")"
        lines.append(text)
    return lines


def _header(args, argv) -> dict:
    return {"date (UTC)": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
            "machine": machine(),
            "versions": versions(),
            "command": "python benchmarks/bench_empirical_ntk.py "
                       + " ".join(argv if argv is not None else sys.argv[1:]),
            "limits": f"{args.timeout:g} s and {args.mem_limit_gb:g} GB per child; generic "
                      f"memory_budget {args.budget_gb:g} GB"}


def _write_atomic(path: str, text: str) -> None:
    from ntkcond._core.io import atomic_write

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write(path, text)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--d", type=int, nargs="+", default=[784, 3072])
    p.add_argument("--m", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--depth", type=int, nargs="+", default=[1, 3, 5, 10])
    p.add_argument("--dtype", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--repeats", type=int, default=5, help="timed runs after warm-up (default 5)")
    p.add_argument("--min-time", type=float, default=20.0,
                   help="stop repeating once the timed runs would exceed this many seconds")
    p.add_argument("--single-run-above", type=float, default=60.0,
                   help="a warm-up run longer than this many seconds is the measurement "
                        "(compilation, ~1 s, is then included; default 60)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per child (default 300)")
    p.add_argument("--mem-limit-gb", type=float, default=12.0, help="address-space cap per child")
    p.add_argument("--budget-gb", type=float, default=1.0, help="generic path's memory_budget")
    p.add_argument("--quick", action="store_true", help="n=128, d=784, m=256, L=1 (a smoke run)")
    p.add_argument("--out", default=None, help="write the Markdown table here")
    p.add_argument("--gemm-size", type=int, default=2048, help=argparse.SUPPRESS)  # tests: small
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.child is not None:
        print("RESULT " + json.dumps(run_child(json.loads(args.child))), flush=True)
        return 0
    if args.quick:
        args.n, args.d, args.m, args.depth = 128, [784], [256], [1]
    rows = []
    for d in args.d:
        for m in args.m:
            for depth in args.depth:
                for dt in args.dtype:
                    ref = None
                    for method in sorted(args.methods, key=lambda k: k != "structured"):
                        spec = {"n": args.n, "d": d, "m": m, "depth": depth, "dtype": dt,
                                "method": method, "repeats": args.repeats,
                                "min_time": args.min_time, "budget_gb": args.budget_gb,
                                "single_run_above": args.single_run_above,
                                "gemm_size": args.gemm_size}
                        row = dict(spec, **spawn(spec, args.timeout, args.mem_limit_gb))
                        if row["status"] == "ok":
                            floor = structured_flops(args.n, d, m, depth) / row["gemm_flops_per_s"]
                            row["x_floor"] = row["median_s"] / floor
                            if method == "structured":
                                ref = row
                            row["vs_structured"] = row["median_s"] / ref["median_s"] if ref else None
                            row["dev"] = rel_dev(row["fingerprint"], ref["fingerprint"]) if ref else None
                        rows.append(row)
                        if args.out:  # after every row, so an interrupted grid keeps what it measured
                            _write_atomic(args.out, format_report(rows, _header(args, argv)))
                        print(f"n={args.n} d={d} m={m} L={depth} {dt} {method}: {row['status']} "
                              + (f"{row['median_s']:.4g} s, x floor {row['x_floor']:.2f}, "
                                 f"peak {row['peak_gb']:.2f} GB" if row["status"] == "ok" else ""),
                              flush=True)
    report = format_report(rows, _header(args, argv))
    print(report)
    if args.out:
        _write_atomic(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
