#!/usr/bin/env python3
"""Time ``ntkcond.NTKTracker`` snapshots (issue 32's two speed targets).

    python benchmarks/bench_tracker.py [--rounds 7] [--snapshots 200] [--out FILE.md]

1. **One snapshot against the loop a user would write**: a ReLU MLP of width 256 (depth
   ``--depths``, default 1 and 2 hidden layers) on 256 probe inputs of dimension 784: the
   tracker's ``update`` (structured empirical NTK, float64, then ``conditioning`` and the other
   fields) beside ``jax.jit(jax.jacrev(f))`` of the params, the leaves flattened into J (n × P),
   K = J Jᵀ (``jnp``) and ``numpy.linalg.eigvalsh(K)`` — also float64, compiled once before
   timing. Side by side in one process, in alternating rounds (tracker, user, tracker, …),
   after warm-up; the medians, their ratio, and κ_eff of both (they compute the same kernel).
   Target: ≥ 10x.
2. **200 snapshots** of a width-512 depth-3 ReLU MLP on 1,024 probe images: the parameters are
   perturbed between snapshots (θ ← θ + 1e-3·ξ, not timed; a trained net's snapshots cost the
   same); the wall time of the 200 ``update`` calls, and the tracker's own split between the
   kernel and its reduction (eigvalsh of 1024 × 1024 and eqs. (2)–(5)). Target: ≤ 2 minutes.

The probe inputs are the first MNIST test images from ../shared/data when present, else
Gaussian inputs of the same shape (the cost does not depend on the values). The result names
the load (``os.getloadavg``) before and after each part, the versions and the command line.
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
MNIST = os.path.join(HERE, "..", "..", "shared", "data", "mnist_test.npz")


def probe(n: int) -> tuple[np.ndarray, str]:
    if os.path.exists(MNIST):
        from ntkcond import datasets

        return datasets.load(MNIST, mean=0.5, std=0.5).x[:n], f"the first {n} MNIST test images"
    return np.random.default_rng(0).standard_normal((n, 784)), f"{n} Gaussian inputs (no MNIST here)"


def load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def one_snapshot(depth: int, x: np.ndarray, rounds: int) -> dict:
    """Part 1 for one depth: medians of the tracker's update and the user's loop."""
    import jax
    import jax.numpy as jnp

    import ntkcond
    from ntkcond._core.x64 import x64

    net = ntkcond.mlp(depth, 256)
    with x64():
        params = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=jnp.float64)
        xj = jnp.asarray(x)
        jac = jax.jit(jax.jacrev(lambda p: net.apply(p, xj)))

        def user(p):
            J = jnp.concatenate([j.reshape(x.shape[0], -1) for j in jac(p)], axis=1)
            K = J @ J.T
            w = np.linalg.eigvalsh(np.asarray(K))
            above = w[w > len(w) * np.finfo(np.float64).eps * w[-1]]
            return w[-1] / above[0]

        tracker = ntkcond.NTKTracker(net, x)
        step = 0
        kappa_user = user(params)  # compile
        kappa_tracker = tracker.update(params, step).kappa_eff
        t_tracker, t_user = [], []
        for _ in range(rounds):
            step += 1
            t0 = time.perf_counter()
            tracker.update(params, step)
            t1 = time.perf_counter()
            user(params)
            t2 = time.perf_counter()
            t_tracker.append(t1 - t0)
            t_user.append(t2 - t1)
    P = net.num_params(x.shape[1])
    return {"depth": depth, "P": P, "tracker": statistics.median(t_tracker),
            "user": statistics.median(t_user), "ratios": [u / t for t, u in zip(t_tracker, t_user)],
            "kappa_tracker": kappa_tracker, "kappa_user": kappa_user}


def many_snapshots(x: np.ndarray, count: int) -> dict:
    """Part 2: ``count`` updates of a width-512 depth-3 net, perturbed between them."""
    import jax
    import jax.numpy as jnp

    import ntkcond
    from ntkcond._core.x64 import x64

    net = ntkcond.mlp(3, 512)
    rng = np.random.default_rng(1)
    with x64():
        params = [np.asarray(w) for w in net.init(jax.random.PRNGKey(0), x.shape[1], dtype=jnp.float64)]
        tracker = ntkcond.NTKTracker(net, x)
        wall = 0.0
        for step in range(count):
            t0 = time.perf_counter()
            tracker.update(params, step)
            wall += time.perf_counter() - t0
            params = [w + 1e-3 * rng.standard_normal(w.shape) for w in params]
    s = tracker.seconds
    last = tracker.snapshots[-1]
    return {"count": count, "wall": wall, "kernel": s["kernel"], "spectrum": s["spectrum"],
            "kappa_first": tracker.snapshots[0].kappa_eff, "kappa_last": last.kappa_eff,
            "distance_last": last.kernel_distance}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="part 1: timed rounds per depth")
    p.add_argument("--depths", type=int, nargs="+", default=[1, 2], help="part 1: hidden layers")
    p.add_argument("--snapshots", type=int, default=200, help="part 2: snapshots (0: skip)")
    p.add_argument("--n1", type=int, default=256, help="part 1: probe inputs")
    p.add_argument("--n2", type=int, default=1024, help="part 2: probe inputs")
    p.add_argument("--out", default=None, help="write the Markdown result here")
    args = p.parse_args(argv)
    import jax

    import ntkcond

    lines = ["# NTKTracker snapshots: speed (issue 32)", "",
             f"`python benchmarks/bench_tracker.py {' '.join(map(shlex.quote, argv if argv is not None else sys.argv[1:]))}`"
             f" — {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}, "
             f"ntkcond {ntkcond.__version__}, jax {jax.__version__}, numpy {np.__version__}, "
             f"{os.cpu_count()} CPU cores, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}", ""]
    x1, source1 = probe(args.n1)
    lines += [f"## One snapshot against jacrev → J Jᵀ → eigvalsh ({source1}, d = {x1.shape[1]}, "
              "ReLU, width 256, float64)", "",
              f"Medians over {args.rounds} alternating rounds after warm-up (compilation not timed).", "",
              "| hidden layers | P | tracker.update (s) | jacrev + J Jᵀ + eigvalsh (s) | ratio of medians "
              "| ratio per round (min–max) | κ_eff tracker / user | load before → after |",
              "|---|---|---|---|---|---|---|---|"]
    for depth in args.depths:
        before = load()
        r = one_snapshot(depth, x1, args.rounds)
        lines.append(f"| {depth} | {r['P']:,} | {r['tracker']:.4f} | {r['user']:.3f} | "
                     f"**{r['user'] / r['tracker']:.1f}x** | {min(r['ratios']):.1f}–{max(r['ratios']):.1f} | "
                     f"{r['kappa_tracker']:.6g} / {r['kappa_user']:.6g} | {before} → {load()} |")
        print(lines[-1], flush=True)
    if args.snapshots:
        x2, source2 = probe(args.n2)
        before = load()
        r = many_snapshots(x2, args.snapshots)
        lines += ["", f"## {r['count']} snapshots: width 512, 3 hidden layers, ReLU, {source2}", "",
                  "| snapshots | wall (s) | kernel (s, share) | eigvalsh + fields (s, share) | per snapshot (s) | load before → after |",
                  "|---|---|---|---|---|---|",
                  f"| {r['count']} | **{r['wall']:.1f}** | {r['kernel']:.1f} ({r['kernel'] / r['wall']:.0%}) | "
                  f"{r['spectrum']:.1f} ({r['spectrum'] / r['wall']:.0%}) | {r['wall'] / r['count']:.3f} | "
                  f"{before} → {load()} |", "",
                  f"κ_eff {r['kappa_first']:.4g} at the first snapshot, {r['kappa_last']:.4g} at the last "
                  f"(kernel distance {r['distance_last']:.2g} after {r['count'] - 1} perturbations of 1e-3)."]
        print("\n".join(lines[-5:]), flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        from ntkcond._core.io import atomic_write

        atomic_write(args.out, text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
