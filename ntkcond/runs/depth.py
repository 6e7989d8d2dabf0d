"""The condition-number-against-depth measurement of Liu & Hui (arXiv 2305.08813, Fig. 2–3).

For each batch of inputs, depth L and activation, the NTK Θ of the bias-free net is computed
and summarised by one record (a dict with the keys below, a contract other tools read):

  dataset, split, batch_index, n, depth, activation, width ("inf" or int), seed (None at
  infinite width), trainable, lambda_max, lambda_min_nonzero, rank, kappa_eff, kappa (None
  when the kernel is numerically singular: κ = ∞), precision_limited, min_grad_angle_deg,
  min_grad_angle_pair ([i, j] as indices into the data set), min_input_angle_deg, seconds.

``summarize`` aggregates records over batches and seeds, ``format_table`` prints ReLU beside
linear, and ``plot_cond_vs_depth`` draws the paper's two panels.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._core.io import atomic_savefig
from .._core.x64 import x64
from ..activations import parse_activation
from ..infinite.geometry import input_angles, pair_geometry
from ..infinite.kernels import sweep_geometry
from ..spectrum import argmin_upper, conditioning, pairwise_angles

__all__ = ["measure_infinite_batch", "measure_finite_batch", "summarize", "format_table",
           "plot_cond_vs_depth"]

RECORD_KEYS = (
    "dataset",
    "split",
    "batch_index",
    "n",
    "depth",
    "activation",
    "width",
    "seed",
    "trainable",
    "lambda_max",
    "lambda_min_nonzero",
    "rank",
    "kappa_eff",
    "kappa",
    "precision_limited",
    "min_grad_angle_deg",
    "min_grad_angle_pair",
    "min_input_angle_deg",
    "lambda_min_upper_bound",
    "lambda_min_bound_ratio",
    "seconds",
)


def spectrum_record(ntk, angles, index, *, dtype=None) -> dict:
    """The kernel part of a record: conditioning of ``ntk`` and the smallest angle.

    Args:
      ntk: (n, n) kernel; angles: (n, n) gradient angles in radians;
      index: (n,) data-set indices of the rows (for ``min_grad_angle_pair``).

    Also ``lambda_min_upper_bound``, the closest-pair bound min_{i<j} λ₋(i, j) ≥ λ_min
    (``ntkcond.lambda_min_upper_bound``, Liu & Hui Prop. 4.1), and ``lambda_min_bound_ratio`` =
    lambda_min_nonzero / that bound (≤ 1 up to rounding for a full-rank kernel; None when the
    bound is ≤ 0).
    """
    from ..spectrum import lambda_min_upper_bound

    cond = conditioning(ntk, dtype=dtype)
    angle, i, j = argmin_upper(angles)
    bound = lambda_min_upper_bound(ntk)[0]  # closest-pair interlacing bound ≥ λ_min
    return {
        "lambda_max": cond.lambda_max,
        "lambda_min_nonzero": cond.lambda_min_nonzero,
        "rank": cond.rank,
        "kappa_eff": cond.kappa_eff,
        "kappa": cond.kappa if math.isfinite(cond.kappa) else None,
        "precision_limited": cond.precision_limited,
        "min_grad_angle_deg": math.degrees(angle),
        "min_grad_angle_pair": [int(index[i]), int(index[j])],
        "lambda_min_upper_bound": bound,
        "lambda_min_bound_ratio": cond.lambda_min_nonzero / bound if bound > 0 else None,
    }


def measure_infinite_batch(x, index, *, depths, activations, trainable="all", meta=None) -> list[dict]:
    """Records for one batch at infinite width: every depth × activation.

    The Gram matrix, input angles and layer recursion are shared across depths
    (``depth_sweep``); one float64 ``eigvalsh`` per kernel.

    Args:
      x: (n, d) float64 batch; index: (n,) data-set indices of its rows.
      depths: iterable of depths; activations: iterable of activation spellings.
      trainable: "all", "first" or "last".
      meta: keys copied into every record (dataset, split, batch_index, ...).

    Returns:
      list of record dicts (``RECORD_KEYS``).
    """
    meta = dict(meta or {})
    x = np.asarray(x, dtype=np.float64)
    if x.shape[0] < 2:
        raise ValueError(f"measure_infinite_batch: expected a batch of n >= 2, got {x.shape}")
    start = time.perf_counter()
    geometry = pair_geometry(x, None, "measure_infinite_batch")  # shared by every depth and activation
    min_input = math.degrees(argmin_upper(geometry[0])[0])
    records = []
    for activation in activations:
        act = parse_activation(activation)
        for item in sweep_geometry(geometry, depths, act, trainable):
            rec = dict(meta)
            rec.update(
                n=int(x.shape[0]),
                depth=item.depth,
                activation=act.name,
                width="inf",
                seed=None,
                trainable=trainable,
            )
            rec.update(spectrum_record(item.ntk, item.angles, index))
            rec["min_input_angle_deg"] = min_input
            now = time.perf_counter()
            rec["seconds"] = now - start
            start = now
            records.append(rec)
    return records


def measure_finite_batch(x, index, *, depths, activations, width: int, seeds, trainable="all",
                         meta=None) -> list[dict]:
    """Records for one batch at finite width: every activation × seed × depth.

    Each kernel is the exact empirical NTK of ``ntkcond.mlp(depth, width, activation)`` with
    weights from ``jax.random.PRNGKey(seed)`` (the same seed gives the same net on every
    batch), computed by the structured path (``ntkcond.empirical_ntk``) in float64 under a
    scoped x64 context; angles are read off the kernel (``pairwise_angles``), so they are
    resolved down to ~1e-8 rad only.

    Args:
      x: (n, d) batch; index: (n,) data-set indices of its rows.
      depths: iterable of depths; activations: iterable of activation spellings.
      width: hidden width m ≥ 1; seeds: iterable of int seeds.
      trainable: "all", "first" or "last".
      meta: keys copied into every record.

    Returns:
      list of record dicts (``RECORD_KEYS``), ``width`` an int and ``seed`` the seed.
    """
    from ..finite.empirical import empirical_ntk
    from ..finite.models import mlp

    meta = dict(meta or {})
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"measure_finite_batch: expected a batch of shape (n, d), n >= 2, got {x.shape}")
    seeds = [int(s) for s in seeds]
    min_input = math.degrees(argmin_upper(input_angles(x))[0])
    records = []
    with x64():
        import jax
        import jax.numpy as jnp

        xj = jnp.asarray(x, jnp.float64)
        for activation in activations:
            act = parse_activation(activation)
            for seed in seeds:
                for depth in sorted(set(depths)):
                    start = time.perf_counter()
                    net = mlp(depth, width, act)
                    params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=jnp.float64)
                    K = np.asarray(empirical_ntk(net, params, xj, trainable=trainable), np.float64)
                    rec = dict(meta)
                    rec.update(n=int(x.shape[0]), depth=depth, activation=act.name, width=int(width),
                               seed=seed, trainable=trainable)
                    rec.update(spectrum_record(K, pairwise_angles(K), index, dtype=np.float64))
                    rec["min_input_angle_deg"] = min_input
                    rec["seconds"] = time.perf_counter() - start
                    records.append(rec)
    return records


def summarize(records) -> list[dict]:
    """Mean, median, min and max of κ_eff and of the smallest gradient angle.

    Groups by (width, activation, depth, trainable), over batches and seeds.

    Returns:
      list of rows sorted by width, activation, depth.
    """
    groups: dict = {}
    for r in records:
        key = (str(r["width"]), r["activation"], int(r["depth"]), r["trainable"])
        groups.setdefault(key, []).append(r)
    rows = []
    for (width, activation, depth, trainable), recs in groups.items():
        row = {"width": width, "activation": activation, "depth": depth, "trainable": trainable,
               "count": len(recs)}
        for field in ("kappa_eff", "min_grad_angle_deg"):
            v = np.array([r[field] for r in recs], dtype=np.float64)
            row.update({f"{field}_mean": float(v.mean()), f"{field}_median": float(np.median(v)),
                        f"{field}_min": float(v.min()), f"{field}_max": float(v.max())})
        row["rank_min"] = int(min(r["rank"] for r in recs))
        row["precision_limited"] = any(r["precision_limited"] for r in recs)
        rows.append(row)

    def order(row):
        w = row["width"]
        return (math.inf if w == "inf" else int(w), row["activation"], row["depth"])

    return sorted(rows, key=order)


def format_table(rows) -> str:
    """Plain-text table: one line per (width, depth), activations side by side.

    Columns per activation: median κ_eff and median smallest gradient angle in degrees
    ('*' marks a precision-limited κ_eff).
    """
    acts = sorted({r["activation"] for r in rows}, key=lambda a: (a != "relu", a != "linear", a))
    index = {(r["width"], r["depth"], r["activation"]): r for r in rows}
    keys = sorted({(r["width"], r["depth"]) for r in rows},
                  key=lambda k: (math.inf if k[0] == "inf" else int(k[0]), k[1]))
    head = f"{'width':>6} {'depth':>5}" + "".join(
        f" | {('kappa_eff ' + a):>18} {('angle° ' + a):>16}" for a in acts)
    lines = [head, "-" * len(head)]
    for width, depth in keys:
        line = f"{width:>6} {depth:>5}"
        for a in acts:
            r = index.get((width, depth, a))
            if r is None:
                line += f" | {'':>18} {'':>16}"
            else:
                flag = "*" if r["precision_limited"] else " "
                line += f" | {r['kappa_eff_median']:>17.4g}{flag} {r['min_grad_angle_deg_median']:>16.4f}"
        lines.append(line)
    return "\n".join(lines)


def plot_cond_vs_depth(rows, path: str, *, title: str = "", metadata: dict | None = None) -> str:
    """The paper's layout: smallest gradient angle (left) and κ_eff (right, log) vs depth.

    ReLU solid, linear dashed, leaky dotted; one colour per width; shaded min–max band
    over batches and seeds; the line is the mean. Written atomically; returns ``path``.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt


    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    widths = sorted({r["width"] for r in rows}, key=lambda w: math.inf if w == "inf" else int(w))
    colours = {w: f"C{i}" for i, w in enumerate(widths)}
    styles = {"relu": "-", "linear": "--"}
    for (width, act) in sorted({(r["width"], r["activation"]) for r in rows}):
        sel = sorted((r for r in rows if r["width"] == width and r["activation"] == act),
                     key=lambda r: r["depth"])
        depth = [r["depth"] for r in sel]
        label = f"{act}, width {'∞' if width == 'inf' else width}"
        for ax, field in zip(axes, ("min_grad_angle_deg", "kappa_eff")):
            mean = [r[f"{field}_mean"] for r in sel]
            ax.plot(depth, mean, styles.get(act, ":"), color=colours[width], marker="o", ms=3,
                    label=label)
            ax.fill_between(depth, [r[f"{field}_min"] for r in sel],
                            [r[f"{field}_max"] for r in sel], color=colours[width], alpha=0.15)
    axes[0].set(xlabel="depth L (hidden layers)", ylabel="smallest gradient angle (degrees)")
    axes[1].set(xlabel="depth L (hidden layers)", ylabel="effective condition number κ_eff",
                yscale="log")
    axes[0].legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    meta = {"Description": str(metadata)} if metadata else None
    atomic_savefig(fig, path, dpi=120, metadata=meta)
    plt.close(fig)
    return path
