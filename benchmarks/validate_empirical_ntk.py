#!/usr/bin/env python3
"""Empirical NTKs on real image batches: every implementation against every other, and the
Monte Carlo approach to ``infinite_ntk`` over widths.

    python benchmarks/validate_empirical_ntk.py --out benchmarks/results/validate_empirical_ntk.md
    python benchmarks/validate_empirical_ntk.py --quick        # digits, small: a smoke run

Data: the first n images of ../shared/data/mnist_test.npz and cifar10_test.npz (papers'
normalisation), or scikit-learn's digits where those files are absent (named in the report).

Agreement (float64, width --width, depths --depths, relu / linear / leaky_relu 0.2): the
reference is a plain ``jax.jacrev`` contraction Σ J Jᵀ; the report gives the largest
relative deviation max|K − K_ref| / max|K_ref| of ntkcond's structured path (NumPy route,
the CPU default in float64, and the jitted jax route that accelerators run), its generic
path (methods "jacobian" and "ntk_vp") and neural-tangents' ``empirical_ntk_fn``
(JACOBIAN_CONTRACTION, NTK_VECTOR_PRODUCTS), and the relative spread of κ_eff.

Convergence (ReLU, depth --mc-depth): ‖Θ_m − Θ_∞‖_F / ‖Θ_∞‖_F averaged over --seeds
initialisations at each width m, its fitted power law in m (theory: m^(−1/2), Jacot et al.
2018), and κ_eff(Θ_m) against κ_eff(Θ_∞).
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "data")
ACTIVATIONS = ("relu", "linear", ("leaky_relu", 0.2))


def image_sets(n: int, quick: bool) -> dict:
    """{name: (n, d) float64} of real images; digits stands in when the files are absent."""
    from ntkcond import datasets

    sets = {}
    for name, preset in (("mnist", "mnist"), ("cifar10", "cifar10")):
        path = os.path.join(SHARED, f"{name}_test.npz")
        if not quick and os.path.exists(path):
            sets[f"{name} (test images 0–{n - 1})"] = datasets.load(path, preset=preset).x[:n]
    if not sets:
        sets[f"digits (images 0–{n - 1})"] = datasets.load("digits").x[:n]
    return sets


def rel_dev(a, ref) -> float:
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(a - ref)) / np.max(np.abs(ref)))


def kernels(net, params, x) -> dict:
    """The same (n, n) NTK from every implementation available here."""
    import jax
    import jax.numpy as jnp

    import ntkcond
    from ntkcond.finite import empirical

    jac = jax.jacrev(net.apply)(params, x)
    flat = [np.asarray(j).reshape(x.shape[0], -1) for j in jac]
    out = {"jacrev": sum(j @ j.T for j in flat)}
    out["structured (NumPy, CPU)"] = ntkcond.empirical_ntk(net, params, x)
    on_cpu = empirical.on_cpu
    empirical.on_cpu = lambda *arrays: False  # the jitted route that accelerators run
    try:
        out["structured (jitted jax)"] = ntkcond.empirical_ntk(net, params, x)
    finally:
        empirical.on_cpu = on_cpu
    for method in ("jacobian", "ntk_vp"):
        out[f"generic {method}"] = ntkcond.empirical_ntk_fn(net.apply, method=method)(params, x)
    try:
        import neural_tangents as nt
    except ImportError:
        return out
    for impl in (nt.NtkImplementation.JACOBIAN_CONTRACTION, nt.NtkImplementation.NTK_VECTOR_PRODUCTS):
        fn = nt.empirical_ntk_fn(net.apply, trace_axes=(), vmap_axes=0, implementation=impl)
        out[f"nt {impl.name}"] = fn(jnp.asarray(x), None, params)
    return out


def agreement(sets, depths, width, bar) -> list[str]:
    import jax
    import jax.numpy as jnp

    import ntkcond

    lines = ["| data | σ | L | implementation | max rel. dev. from jacrev | κ_eff | κ_eff rel. dev. |",
             "|---|---|---|---|---|---|---|"]
    worst = {}
    for name, x in sets.items():
        xj = jnp.asarray(x, jnp.float64)
        for act in ACTIVATIONS:
            for depth in depths:
                bar(f"agreement {name.split()[0]} {act} L={depth}")
                net = ntkcond.mlp(depth, width, act)
                params = net.init(jax.random.PRNGKey(depth), x.shape[1], dtype=jnp.float64)
                ks = kernels(net, params, xj)
                ref = ks.pop("jacrev")
                k_ref = ntkcond.effective_condition_number(ref)
                label = act if isinstance(act, str) else f"{act[0]} {act[1]:g}"
                lines.append(f"| {name} | {label} | {depth} | jacrev (reference) | 0 | {k_ref:.6g} | 0 |")
                for impl, K in ks.items():
                    dev = rel_dev(K, ref)
                    kappa = ntkcond.effective_condition_number(np.asarray(K, np.float64))
                    kdev = abs(kappa - k_ref) / k_ref
                    worst[impl] = max(worst.get(impl, 0.0), dev)
                    lines.append(f"| {name} | {label} | {depth} | {impl} | {dev:.1e} | {kappa:.6g} | {kdev:.1e} |")
    summary = [f"- {impl}: worst max rel. dev. {dev:.1e}" for impl, dev in worst.items()]
    return summary + [""] + lines


def convergence(sets, depth, widths, seeds, bar) -> list[str]:
    import jax
    import jax.numpy as jnp

    import ntkcond

    lines = ["| data | m | mean ‖Θ_m − Θ_∞‖_F/‖Θ_∞‖_F ± s.e. | mean κ_eff(Θ_m) ± s.e. | κ_eff(Θ_∞) |",
             "|---|---|---|---|---|"]
    fits = []
    for name, x in sets.items():
        xj = jnp.asarray(x, jnp.float64)
        K_inf = ntkcond.infinite_ntk(x, depth=depth)
        k_inf = ntkcond.effective_condition_number(K_inf)
        means = []
        for m in widths:
            bar(f"convergence {name.split()[0]} m={m}")
            net = ntkcond.mlp(depth, m)
            errs, kappas = [], []
            for s in range(seeds):
                K = np.asarray(ntkcond.empirical_ntk(net, net.init(jax.random.PRNGKey(s), x.shape[1],
                                                                   dtype=jnp.float64), xj))
                errs.append(np.linalg.norm(K - K_inf) / np.linalg.norm(K_inf))
                kappas.append(ntkcond.effective_condition_number(K))
            se = lambda v: np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
            means.append(np.mean(errs))
            lines.append(f"| {name} | {m} | {np.mean(errs):.3e} ± {se(errs):.1e} "
                         f"| {np.mean(kappas):.4g} ± {se(kappas):.2g} | {k_inf:.4g} |")
        slope = np.polyfit(np.log(widths), np.log(means), 1)[0]
        fits.append(f"- {name}: error ∝ m^{slope:.3f} over m = {widths[0]}–{widths[-1]} "
                    f"(theory m^-0.5)")
    return fits + [""] + lines


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=64, help="images per data set (default 64)")
    p.add_argument("--width", type=int, default=256, help="agreement: hidden width")
    p.add_argument("--depths", type=int, nargs="+", default=[1, 3, 10])
    p.add_argument("--mc-depth", type=int, default=3, help="convergence: depth")
    p.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024, 4096])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="digits, n=16, width 16, depths 1 3, widths 16 64 256, 3 seeds")
    p.add_argument("--out", default=None, help="write the Markdown report here")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.n, args.width, args.depths, args.widths, args.seeds = 16, 16, [1, 3], [16, 64, 256], 3
    from tqdm.auto import tqdm

    from ntkcond._core.io import atomic_write
    from ntkcond._core.x64 import x64

    progress = tqdm(total=None, desc="validate_empirical_ntk", leave=False)

    def bar(text):
        progress.set_postfix_str(text)
        progress.update()

    with x64():
        sets = image_sets(args.n, args.quick)
        agree = agreement(sets, args.depths, args.width, bar)
        conv = convergence(sets, args.mc_depth, args.widths, args.seeds, bar)
    progress.close()
    command = "python benchmarks/validate_empirical_ntk.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    report = "\n".join([
        "# Empirical NTK validation on real images", "",
        f"- date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}",
        f"- command: {command}",
        f"- float64; agreement at width {args.width}, depths {args.depths}; convergence: ReLU, "
        f"depth {args.mc_depth}, {args.seeds} seeds", "",
        "## Agreement (reference: jax.jacrev contraction)", "", *agree, "",
        "## Monte Carlo convergence to infinite_ntk", "", *conv, ""])
    print(report)
    if args.out:
        atomic_write(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
