#!/usr/bin/env python3
"""Measure the precision of the general infinite-width kernels against the extended-precision
reference of tests/_family_reference.py (mpmath/arb, 30 digits).

    python benchmarks/validate_family_kernels.py [--out FILE]

Rows: activation; columns: max |K − K_ref|/√(K_ref(x,x)K_ref(x',x')) over NTK and NNGP, the
configurations (s_w, s_b) ∈ {(1.5, 0), (1.5, 0.1), (1.0, 0.5)}, depths 0, 1, 3, 10, on 3
Gaussian rows (d = 20) and on 2 MNIST and 2 CIFAR-10 test images (../shared/data, when
present); residual β = 0.5 with (1.2, 0.1); and the max relative error of the gradient angle
of a near-duplicate pair (θ ≈ 1e-6 rad, equal norms and perturbed) at depths 1, 3, 10 with
s_w = 1.5, s_b ∈ {0, 0.1}.
"""
from __future__ import annotations

import argparse
import os
import sys

import mpmath as mp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import _family_reference as ref  # noqa: E402
import ntkcond  # noqa: E402

DATA = os.path.join(HERE, "..", "..", "shared", "data")
ACTS = ["relu", "abs", "leaky:-0.5", "leaky:0.2", "erf", "gelu", "tanh", "sin"]
CONFIGS = [(1.5, 0.0), (1.5, 0.1), (1.0, 0.5)]


def kernel_error(x, act, sw, sb, depths, residual=None):
    worst = 0.0
    kw = dict(activation=act, w_std=sw, b_std=sb, residual=residual)
    ntk = {L: ntkcond.infinite_ntk(x, depth=L, **kw) for L in depths}
    nngp = {L: ntkcond.infinite_nngp(x, depth=L, **kw) for L in depths}
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            r = ref.kernels(x[i], x[j], depths, act, sw, sb, residual)
            for L in depths:
                g, t, _, txx, tyy = r[L]
                worst = max(worst, abs(ntk[L][i, j] - float(t)) / float(mp.sqrt(txx * tyy)),
                            abs(nngp[L][i, j] - float(g)) / np.sqrt(nngp[L][i, i] * nngp[L][j, j]))
    return worst


def near_duplicates(kind, d=30, theta=1e-6, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(d)
    if kind == "rotation":
        e = rng.standard_normal(d)
        e -= (e @ x) / (x @ x) * x
        e *= np.linalg.norm(x) / np.linalg.norm(e)
        y = np.cos(theta) * x + np.sin(theta) * e
    else:
        u = rng.standard_normal(d)
        y = x + theta * np.linalg.norm(x) * u / np.linalg.norm(u)
    return np.stack([x, y])


def angle_error(act, sb):
    worst = 0.0
    for kind in ("rotation", "perturbation"):
        x = near_duplicates(kind)
        r = ref.kernels(x[0], x[1], [1, 3, 10], act, 1.5, sb)
        for L in (1, 3, 10):
            phi = ntkcond.gradient_angles(x, depth=L, activation=act, w_std=1.5, b_std=sb)[0, 1]
            with mp.workdps(ref.DPS):
                want = float(mp.acos(r[L][2]))
            worst = max(worst, abs(phi - want) / want)
    return worst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None)
    p.add_argument("--acts", nargs="*", default=ACTS, help="activations (default: all eight)")
    args = p.parse_args(argv)
    sets = [("Gaussian", np.random.default_rng(0).standard_normal((3, 20)))]
    from ntkcond import datasets

    for name in ("mnist", "cifar10"):
        path = os.path.join(DATA, f"{name}_test.npz")
        if os.path.exists(path):
            sets.append((name, datasets.load(path, preset=name).x[[3, 17]]))
    head = ["activation"] + [s for s, _ in sets] + ["residual β=0.5", "angles s_b=0", "angles s_b=0.1"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for act in args.acts:
        row = [act]
        for _, x in sets:
            row.append(f"{max(kernel_error(x, act, sw, sb, [0, 1, 3, 10]) for sw, sb in CONFIGS):.1e}")
        row.append(f"{kernel_error(sets[0][1], act, 1.2, 0.1, [1, 3, 10], 0.5):.1e}")
        for sb in (0.0, 0.1):
            row.append(f"{angle_error(act, sb):.1e}" if act in ("erf", "gelu", "tanh", "relu", "abs")
                       else "")
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    if args.out:
        from ntkcond._core.io import atomic_write

        atomic_write(args.out, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
