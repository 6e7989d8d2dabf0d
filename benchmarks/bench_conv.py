#!/usr/bin/env python3
"""Time ntkcond's convolutional kernels (issue 31's speed targets), side by side in one run.

    python benchmarks/bench_conv.py [--rounds 3] [--n 10000] [--skip-flatten] [--out FILE.md]

1. **Global average pooling against neural-tangents**: the NTK of a 4-layer ReLU CNN
   (``stax.serial(*[Conv(C, (3, 3), padding="SAME", W_std=√2), Relu()] * 4, GlobalAvgPool(),
   Dense(1))``) on the first 8 CIFAR-10 test images (32 × 32 × 3, float64): ``ntkcond.stax``'s
   ``kernel_fn`` beside neural-tangents 0.6.5's jitted ``kernel_fn``, second call of each (the
   first compiles: numba's, XLA's), then alternating rounds; the medians, their ratio, and
   the largest difference over √(KᵢᵢKⱼⱼ). Target: ≥ 5x. Skipped with a line when
   neural-tangents does not import (it needs jax ≤ 0.5).
2. **Flatten, κ_eff of n images**: the depth-5 ReLU CNN-flatten net (3 × 3 SAME convolutions,
   the norm-preserving W_std = √2, ``--arch cnn --readout flatten``) on the first n CIFAR-10
   test images (n = 10000: the lossy JPEG copy, the only one with 10,000; fewer: the exact
   copy), built by ``ntkcond.scale.exact_conditioning`` (the blockwise route: the compiled
   kernel by blocks of rows, mirrored, then one float64 ``eigvalsh``); build and eigvalsh
   seconds, κ_eff. Target: ≤ 15 minutes for n = 10000.

Images from ../shared/data when present, else uniform random images of the same shape (the
cost does not depend on the values; the ratio is still side by side). The result names the
load (``os.getloadavg``) before and after each part, the CPU count, the versions, the command
line and the time.
"""
from __future__ import annotations

import argparse
import datetime
import os
import shlex
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")


def images(n: int) -> tuple[np.ndarray, str]:
    from ntkcond import datasets

    exact = os.path.join(DATA, "cifar10_test.npz")
    lossy = os.path.join(DATA, "cifar10_test_jpeg_lossy.npz")
    path = exact if n <= 1000 else lossy
    if os.path.exists(path):
        what = "CIFAR-10 test images" if path == exact else "CIFAR-10 test images (lossy JPEG copy)"
        return datasets.load(path, preset="cifar10").images[:n], f"the first {n} {what}"
    rng = np.random.default_rng(0)
    return (rng.uniform(-2, 2, (n, 32, 32, 3)),
            f"{n} uniform random 32 x 32 x 3 images (no ../shared/data here)")


def load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def gap_part(rounds: int) -> dict:
    """Part 1: medians of ntkcond's and neural-tangents' second calls, alternating."""
    import jax
    import jax.numpy as jnp

    from ntkcond import stax
    from ntkcond._core.x64 import x64

    x, what = images(8)
    out = {"images": what, "load_before": load()}
    net = stax.serial(*[stax.Conv(64, (3, 3), padding="SAME", W_std=np.sqrt(2)),
                        stax.Relu()] * 4, stax.GlobalAvgPool(), stax.Dense(1))
    ours = net.kernel_fn
    t0 = time.perf_counter()
    K = ours(x, None, "ntk")
    out["ntkcond_first_call_s"] = time.perf_counter() - t0
    try:
        from neural_tangents import stax as nt
    except Exception as err:  # noqa: BLE001 - any import failure: report and time ours only
        nt = None
        out["neural_tangents"] = f"not importable here ({type(err).__name__}: {err})"
    theirs = None
    if nt is not None:
        import neural_tangents

        out["neural_tangents"] = neural_tangents.__version__
        theirs_net = nt.serial(*[nt.Conv(64, (3, 3), padding="SAME", W_std=np.sqrt(2)),
                                 nt.Relu()] * 4, nt.GlobalAvgPool(), nt.Dense(1))
        with x64():
            jitted = jax.jit(theirs_net[2], static_argnames="get")
            xj = jnp.asarray(x)
            t0 = time.perf_counter()
            theirs = np.asarray(jitted(xj, None, "ntk"))
            out["nt_first_call_s"] = time.perf_counter() - t0
        scale = np.sqrt(np.outer(np.diag(theirs), np.diag(theirs)))
        out["max_diff_over_scale"] = float(np.max(np.abs(K - theirs) / scale))
    t_ours, t_theirs = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        ours(x, None, "ntk")
        t_ours.append(time.perf_counter() - t0)
        if theirs is not None:
            with x64():
                t0 = time.perf_counter()
                np.asarray(jitted(xj, None, "ntk")).sum()
                t_theirs.append(time.perf_counter() - t0)
    out["ntkcond_s"] = t_ours
    out["ntkcond_median_s"] = statistics.median(t_ours)
    if t_theirs:
        out["nt_s"] = t_theirs
        out["nt_median_s"] = statistics.median(t_theirs)
        out["ratio"] = out["nt_median_s"] / out["ntkcond_median_s"]
        out["round_ratios"] = [b / a for a, b in zip(t_ours, t_theirs)]
    out["entries"] = 8 * 8 * 1024 * 1024 * 4  # image pairs × pixel pairs × layers (NT's count)
    out["load_after"] = load()
    return out


def flatten_part(n: int) -> dict:
    """Part 2: κ_eff of n images through the blockwise route, build and eigvalsh seconds."""
    import ntkcond
    from ntkcond.network import resolve_cnn

    x, what = images(n)
    out = {"images": what, "n": n, "load_before": load()}
    net = resolve_cnn("relu", readout="flatten", filter=3, where="bench_conv")
    small, _ = images(16)
    ntkcond.scale.exact_conditioning(small, depths=[5], activation=net)  # compile (numba)
    timings = {}
    t0 = time.perf_counter()
    cond = ntkcond.scale.exact_conditioning(x, depths=[5], activation=net, timings=timings)[5]
    out["total_s"] = time.perf_counter() - t0
    out.update(build_s=timings["build"], eigvalsh_s=timings["eigvalsh"],
               kappa_eff=cond.kappa_eff, lambda_max=cond.lambda_max,
               lambda_min_nonzero=cond.lambda_min_nonzero, rank=cond.rank,
               precision_limited=cond.precision_limited,
               entry_layers=n * (n + 1) // 2 * 1024 * 5, load_after=load())
    return out


def report(args, gap, flat) -> str:
    import jax
    import numba

    import ntkcond

    lines = [f"# bench_conv: ntkcond's convolutional kernels ({datetime.datetime.now().isoformat(timespec='seconds')})",
             "",
             f"Command: `{' '.join(shlex.quote(a) for a in [sys.executable.split('/')[-1]] + sys.argv)}`  ",
             f"ntkcond {ntkcond.__version__}, numpy {np.__version__}, numba {numba.__version__}, "
             f"jax {jax.__version__} (devices: {', '.join(str(d) for d in jax.devices())}); "
             f"{os.cpu_count()} CPUs.", ""]
    if gap is not None:
        lines += ["## 1. Global average pooling: 4-layer ReLU CNN, 8 images, NTK (float64)", "",
                  f"Images: {gap['images']}. Load before/after: {gap['load_before']} / "
                  f"{gap['load_after']}. neural-tangents: {gap['neural_tangents']}.", "",
                  "| | first call (s) | median of later calls (s) | rounds (s) |",
                  "|---|---|---|---|",
                  f"| ntkcond.stax | {gap['ntkcond_first_call_s']:.2f} | {gap['ntkcond_median_s']:.3f} "
                  f"| {', '.join(f'{t:.3f}' for t in gap['ntkcond_s'])} |"]
        if "nt_median_s" in gap:
            lines += [f"| neural-tangents (jit) | {gap['nt_first_call_s']:.2f} | {gap['nt_median_s']:.3f} "
                      f"| {', '.join(f'{t:.3f}' for t in gap['nt_s'])} |", "",
                      f"**Ratio of medians: {gap['ratio']:.1f}x** (per round: "
                      f"{', '.join(f'{r:.1f}x' for r in gap['round_ratios'])}); "
                      f"max |K_ntkcond − K_nt| / √(KᵢᵢKⱼⱼ) = {gap['max_diff_over_scale']:.2e}.",
                      f"Per kernel entry (image pair × pixel pair × layer, {gap['entries']:.3g} "
                      f"of them as neural-tangents counts): ntkcond "
                      f"{gap['ntkcond_median_s'] / gap['entries'] * 1e9:.2f} ns, neural-tangents "
                      f"{gap['nt_median_s'] / gap['entries'] * 1e9:.2f} ns."]
        lines.append("")
    if flat is not None:
        lines += ["## 2. Flatten: κ_eff of n images, depth-5 ReLU CNN (float64)", "",
                  f"Images: {flat['images']}. Load before/after: {flat['load_before']} / "
                  f"{flat['load_after']}.", "",
                  "| n | build (s) | eigvalsh (s) | total (s) | κ_eff | λ_max | λ_min (above cutoff) | rank |",
                  "|---|---|---|---|---|---|---|---|",
                  f"| {flat['n']} | {flat['build_s']:.1f} | {flat['eigvalsh_s']:.1f} | "
                  f"{flat['total_s']:.1f} ({flat['total_s'] / 60:.1f} min) | {flat['kappa_eff']:.6g} | "
                  f"{flat['lambda_max']:.6g} | {flat['lambda_min_nonzero']:.6g} | {flat['rank']} |",
                  "",
                  f"Build: {flat['build_s'] / flat['entry_layers'] * 1e9 * (os.cpu_count() or 1):.2f} "
                  f"CPU-ns per pixel-layer of the {flat['entry_layers']:.3g} (image pairs j ≥ i × "
                  "1024 pixels × 5 layers).", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating timed rounds (part 1)")
    p.add_argument("--n", type=int, default=10000, help="images of part 2")
    p.add_argument("--skip-gap", action="store_true")
    p.add_argument("--skip-flatten", action="store_true")
    p.add_argument("--out", default=None, help="write the report here (markdown)")
    args = p.parse_args(argv)
    gap = None if args.skip_gap else gap_part(args.rounds)
    flat = None if args.skip_flatten else flatten_part(args.n)
    text = report(args, gap, flat)
    print(text)
    if args.out:
        from ntkcond._core.io import atomic_write

        atomic_write(args.out, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
