#!/usr/bin/env python3
"""Every number of the activation study's reading (README "Beyond bias-free ReLU",
docs/results/activations.md), recomputed from the study's CSV files:

    python docs/results/study_numbers.py

The CSV files are the study.csv of the two runs (medians over 2 batches, width 512: × 5 nets):

    python scripts/activation_study.py --dataset ../shared/data/mnist_test.npz --preset mnist --out runs/study_mnist
    python scripts/activation_study.py --dataset ../shared/data/cifar10_test.npz --preset cifar10 --out runs/study_cifar10

copied to docs/results/activations_mnist.csv and activations_cifar10.csv. Those runs kept a
final smaller batch: the CIFAR-10 file holds 1,000 test images, so its batches have 512 and
488 images (rank_min 488 is the second batch at full rank), MNIST's two batches 512 each.
"""
import csv
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILY = ("relu", "abs", "leaky:-0.5", "leaky:0.2", "erf", "gelu", "tanh")


def table(name: str) -> dict:
    """(activation, b_std, width, depth) → the CSV row, numbers parsed."""
    with open(os.path.join(HERE, f"activations_{name}.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for r in rows:
        r = {**r, "kappa": float(r["kappa_eff_median"]), "angle": float(r["min_grad_angle_deg_median"]),
             "rank_min": int(r["rank_min"]), "limited": r["precision_limited"] == "True"}
        out[(r["activation"], float(r["b_std"]), r["width"], int(r["depth"]))] = r
    return out


def bias_changes(t: dict, width: str = "inf") -> dict:
    """activation → (largest |change| in % of median κ_eff from s_b = 0 to 0.1 over L = 1–10,
    the depth where it is)."""
    out = {}
    for a in FAMILY:
        changes = {L: 100 * (t[(a, 0.1, width, L)]["kappa"] / t[(a, 0.0, width, L)]["kappa"] - 1)
                   for L in range(1, 11)}
        L = max(changes, key=lambda k: abs(changes[k]))
        out[a] = (changes[L], L)
    return out


def main() -> None:
    for name in ("mnist", "cifar10"):
        t = table(name)
        print(f"== {name}")
        linear = t[("relu", 0.0, "inf", 0)]["kappa"]
        orders = {a: math.log10(linear / t[(a, 0.0, "inf", 1)]["kappa"]) for a in FAMILY}
        print(f"orders of magnitude below the linear net (kappa {linear:.3g}) at L = 1, no "
              "biases: " + ", ".join(f"{a} {v:.2f}" for a, v in orders.items())
              + f"  (range {min(orders.values()):.1f}-{max(orders.values()):.1f}, i.e. "
              f"{10 ** min(orders.values()):.0f}x-{10 ** max(orders.values()):.0f}x)")
        for width in ("inf", "512"):
            print(f"biases s_b = 0 -> 0.1, largest change of median kappa_eff at L = 1-10, width "
                  f"{width}: " + ", ".join(f"{a} {c:+.1f}% (L = {L})"
                                           for a, (c, L) in bias_changes(t, width).items()))
        print("|s| against ReLU (no biases, infinite width), median kappa_eff: "
              + ", ".join(f"L = {L}: {100 * (t[('abs', 0.0, 'inf', L)]['kappa'] / t[('relu', 0.0, 'inf', L)]['kappa'] - 1):+.1f}%"
                          for L in (1, 3, 10)))
        for a in ("gelu", "tanh"):
            for b in (0.0, 0.1):
                cells = [(L, t[(a, b, "inf", L)]) for L in (10, 15, 20, 30, 50, 70, 100)]
                print(f"{a}, s_b = {b:g}, infinite width: " + "; ".join(
                    f"L = {L}: kappa_eff {c['kappa']:.3g}{' (float64 limit)' if c['limited'] else ''}, "
                    f"rank_min {c['rank_min']}, angle {c['angle']:.3g} deg" for L, c in cells))


if __name__ == "__main__":
    main()
