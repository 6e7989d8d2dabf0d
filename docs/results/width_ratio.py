#!/usr/bin/env python3
"""The README's "width 512 is far from the limit" numbers, recomputed from the sweep's CSV:
median κ_eff of the width-512 ReLU nets over the infinite-width median, per depth.

    python docs/results/width_ratio.py docs/results/cond_vs_depth_mnist.csv
    python docs/results/width_ratio.py docs/results/cond_vs_depth_cifar10.csv

Prints one line per depth and the range over depths 1–10 (at depth 0 both are the same
linear model, ratio 1 up to the net's sampling).
"""
import csv
import sys


def ratios(path: str, activation: str = "relu", width: str = "512") -> dict:
    """depth → kappa_eff_median(width) / kappa_eff_median(inf) for ``activation``."""
    rows = [r for r in csv.DictReader(open(path, encoding="utf-8")) if r["activation"] == activation]
    median = {(r["width"], int(r["depth"])): float(r["kappa_eff_median"]) for r in rows}
    return {d: median[(width, d)] / median[("inf", d)]
            for (w, d) in sorted(median) if w == width and ("inf", d) in median}


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "docs/results/cond_vs_depth_mnist.csv"
    r = ratios(path)
    for depth, ratio in r.items():
        print(f"L = {depth:2d}: width 512 / infinite width, ReLU kappa_eff median: {ratio:.3f}")
    deep = [v for d, v in r.items() if d >= 1]
    print(f"L = 1-10: {min(deep):.2f}-{max(deep):.2f}x")
