"""How biases break the two-layer equivalence to linear nets (Zhang, Saxe & Latham, arXiv
2406.12615, item 2 of ``equivalence_runs`` with a hidden bias; issue 21).

The equivalence rests on two symmetries: mirrored units (w, a), (−w, −a) make the net linear,
a·σ(w·x) − a·σ(−w·x) = (1 + α)·a·w·x, and symmetric data x ∪ −x keep the units mirrored
under gradient descent. A hidden bias b (trained) keeps the first — a mirrored init
(w, b, a), (−w, −b, −a) is still the linear net (1 + α)·a·(w·x + b) — but not the second: the
gradient of the mirror unit sums σ'(−w·x − b) over the data, and x ↦ −x maps it to
σ'(w·x − b), not σ'(w·x + b). The bias is a weight on a constant input of value s_b (the
neural-tangents meaning of ``b_std``: pre-activation w·x + s_b·β with β trained), so the
experiment trains, with ``nets.biasfree.linear_equivalence``, the leaky-ReLU net and its
rescaled linear net on the inputs [x, s_b] from a mirrored init, and reports how far they
drift apart (largest loss difference over training / initial loss; largest relative weight
difference) against s_b, for each slope α < 1. s_b = 0 is the bias-free experiment (the
constant input is 0): exact to round-off.

The theory it measures: ``nets.biasfree``.
"""
from __future__ import annotations

import numpy as np

from ..nets.biasfree import linear_equivalence, mirrored_init, symmetrize
from ..nets.saxe import time_rescaling
from ._common import ALPHAS, Progress, positive_values, progress_callback, symmetric_gaussian, unit_vector
from .result import ExperimentResult

__all__ = ["B_STDS", "bias_breaking"]

#: Bias scales s_b of the sweep (0: bias-free, the exact equivalence).
B_STDS = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0)


def bias_breaking(*, b_stds=None, lr: float = 0.004, time: float = 10.0, strength: float = 2.0,
                  init_scale: float = 1e-3, fast: bool = False, seed: int = 0,
                  progress: Progress | None = None) -> ExperimentResult:
    """The equivalence of ``equivalence`` (symmetric whitened Gaussian data, odd teacher
    y = strength·v·x, mirrored init, square loss) with a hidden bias of scale s_b ∈ ``b_stds``
    (module docstring), for every slope of ``ALPHAS`` but the linear one.

    Returns an ``ExperimentResult`` named "bias_breaking" whose summary holds, per α and s_b,
    ``loss_dev`` and ``weight_dev`` (``linear_equivalence``), and per α the log-log slope of
    loss_dev against s_b over the nonzero s_b below 0.1 (how the break grows).
    """
    b_stds = list(B_STDS if b_stds is None else b_stds)
    if not b_stds or any(not np.isfinite(b) or b < 0 for b in b_stds):
        raise ValueError(f"bias_breaking: expected b_stds >= 0, got {b_stds!r}")
    for name, value in (("lr", lr), ("time", time), ("strength", strength),
                        ("init_scale", init_scale)):
        positive_values("bias_breaking", name, value)
    bar = progress_callback(progress)
    x0, _ = symmetric_gaussian(32 if fast else 128, 8, seed)
    x, y = symmetrize(x0, strength * x0 @ unit_vector(x0.shape[1], seed))
    d = x.shape[1]
    W1, W2 = mirrored_init(d + 1, 4, scale=init_scale, seed=seed)  # last column: the bias weight
    alphas = [a for a in ALPHAS if a != 1.0]
    per, curves = {}, {}
    for alpha in bar(alphas):
        c = time_rescaling(alpha)
        steps = int(round(time / (c * lr)))
        rows = {}
        for b in b_stds:
            xb = np.concatenate([x, np.full((x.shape[0], 1), float(b))], axis=1)
            eq = linear_equivalence(xb, y, W1 / np.sqrt(c), W2 / np.sqrt(c), activation=alpha,
                                    lr=lr, steps=steps, snapshot_every=steps)
            rows[f"{b:g}"] = {"loss_dev": eq.loss_deviation, "weight_dev": eq.weight_deviation,
                              "final_loss_relu": float(eq.relu.loss[-1]),
                              "final_loss_linear": float(eq.linear.loss[-1])}
            curves[(alpha, b)] = eq
        small = [b for b in b_stds if 0 < b < 0.1 + 1e-12]
        slope = None
        if len(small) >= 2:
            dev = [rows[f"{b:g}"]["loss_dev"] for b in small]
            if min(dev) > 0:
                slope = float(np.polyfit(np.log(small), np.log(dev), 1)[0])
        per[f"{alpha:g}"] = {"by_b_std": rows, "loss_dev_slope_vs_b_std": slope}
    summary = {"n": int(x.shape[0]), "d": int(d), "lr": lr, "time": time, "strength": strength,
               "init_scale": init_scale, "b_stds": b_stds, "alphas": alphas, "per_alpha": per,
               "bias_free_max_loss_dev": max(per[f"{a:g}"]["by_b_std"][f"{b:g}"]["loss_dev"]
                                             for a in alphas for b in b_stds if b == 0)
               if 0 in b_stds or 0.0 in b_stds else None}
    return ExperimentResult("bias_breaking", summary, curves)
