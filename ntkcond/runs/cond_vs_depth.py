"""κ_eff and the smallest gradient angle against depth, ReLU beside linear (Liu & Hui, arXiv
2305.08813, Fig. 2–3), over the batches of a data set, as a resumable run directory.

``cond_vs_depth`` runs the sweep the script ``scripts/cond_vs_depth.py`` runs: per batch,
width (∞ or finite), activation and seed it computes the missing depths (``runs.depth``),
appends one record per kernel to ``records.jsonl``, then writes ``summary.csv`` (median, mean,
min and max over batches and seeds) and ``figure.png`` (medians, min–max band).
"""
from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from .. import datasets
from .._core.checks import as_int
from .._core.io import atomic_savefig
from ..activations import parse_activation
from .._core.memory import InsufficientMemoryError, available_memory
from ..finite.sweep import NetWeights
from .depth import iter_finite_batch, iter_infinite_batch
from .rundir import data_fingerprint, open_run
from .tables import text_table, write_csv

__all__ = ["DepthSweep", "cond_vs_depth", "summarize", "format_table", "plot_cond_vs_depth"]

KEY_FIELDS = ("batch_index", "depth", "activation", "width", "seed")


@dataclasses.dataclass(frozen=True)
class DepthSweep:
    """Result of ``cond_vs_depth``: ``rows`` of ``summarize``, the ``title``, the paths of
    ``summary.csv`` and ``figure.png``, and how many kernels were computed now / resumed."""

    rows: tuple
    title: str
    summary_csv: str
    figure: str
    computed: int
    resumed: int

    def __repr__(self) -> str:
        return f"DepthSweep({len(self.rows)} rows, {self.computed} computed, {self.resumed} resumed, figure={self.figure!r})"


def _width_key(w):
    return math.inf if w == "inf" else int(w)


def cond_vs_depth(ds: datasets.Dataset, *, out: str, batch: int = 512, depths=range(11),
                  activations=("relu", "linear"), widths=("inf",), seeds: int = 5,
                  trainable: str = "all", seed: int = 0, in_order: bool = False,
                  drop_last: bool = False, max_batches: int | None = None, resume: bool = False,
                  overwrite: bool = False, progress: bool = True) -> DepthSweep:
    """Run (or resume) the depth sweep on the batches of ``ds`` into the run directory ``out``.

    Args:
      ds: the data set (``datasets.load``); batches of ``batch`` rows (``datasets.batches``
        with ``seed``, ``in_order`` = no shuffling, ``drop_last``, ``max_batches``).
      depths: depths L ≥ 0; activations: spellings accepted by ``parse_activation``.
      widths: "inf" and/or finite widths m ≥ 1; finite widths use the nets of seeds
        0 … ``seeds`` − 1 (the same nets on every batch).
      trainable: "all", "first" or "last".
      resume, overwrite: the run-directory policy (``runs.rundir``).
      progress: show a progress bar (tqdm) on stderr.
    """
    where = "cond_vs_depth"
    depths = sorted({as_int(L, "depth", where, 0) for L in depths})
    acts = [parse_activation(a).name for a in activations]
    widths = sorted(set(widths), key=_width_key)
    seeds = list(range(as_int(seeds, "seeds", where, 1)))
    index_batches = datasets.batches(ds, batch, seed=seed, shuffle=not in_order,
                                     max_batches=max_batches, drop_last=drop_last)
    _check_batch_memory(batch, len(ds.x), where)
    config = {"dataset": ds.name, "split": ds.split, "batch": batch, "depths": depths,
              "activations": acts, "width": widths, "trainable": trainable,
              "init_seeds": seeds if widths != ["inf"] else None, "seed": seed,
              "in_order": in_order, "drop_last": drop_last, "max_batches": max_batches,
              "preprocessing": ds.preprocessing, "data_fingerprint": data_fingerprint(ds.x)}
    with open_run(out, config, key_fields=KEY_FIELDS, resume=resume, overwrite=overwrite,
                  where=where) as run:
        resumed = len(run.records)
        todo = []  # (batch, activation, width, seed, depths still missing)
        for b in range(len(index_batches)):
            for width in widths:
                for act in acts:
                    for s in ([None] if width == "inf" else seeds):
                        missing = [L for L in depths if run.key(
                            {"batch_index": b, "depth": L, "activation": act, "width": width, "seed": s}) not in run.done]
                        if missing:
                            todo.append((b, act, width, s, missing))
        total = len(index_batches) * len(acts) * len(depths) * sum(
            1 if w == "inf" else len(seeds) for w in widths)
        from tqdm.auto import tqdm

        nets = NetWeights()  # each (seed, depth) net drawn once for all batches and activations
        with tqdm(total=total, initial=resumed, desc=where, unit="kernel", disable=not progress) as bar:
            for b, act, width, s, missing in todo:
                index = index_batches[b]
                meta = {"dataset": ds.name, "split": ds.split, "batch_index": b}
                if width == "inf":
                    new = iter_infinite_batch(ds.x[index], index, depths=missing, activations=[act],
                                              trainable=trainable, meta=meta)
                else:
                    new = iter_finite_batch(ds.x[index], index, depths=missing, activations=[act],
                                            width=width, seeds=[s], trainable=trainable, meta=meta,
                                            nets=nets)
                for rec in new:
                    run.append(rec)
                    bar.update(1)
        rows = summarize(run.records)
        summary_csv = write_csv(run.file("summary.csv"), rows)
        name = os.path.basename(ds.name) if ds.name.endswith(".npz") else ds.name
        title = (f"{name} ({ds.split}), n = {batch}, {len(index_batches)} batch(es), width "
                 f"{', '.join('∞' if w == 'inf' else str(w) for w in sorted(widths, key=lambda w: w != 'inf'))}"
                 + (f" ({len(seeds)} seeds)" if widths != ["inf"] else "")
                 + f", trainable = {trainable}")
        figure = plot_cond_vs_depth(rows, run.file("figure.png"), title=title, metadata=config)
        return DepthSweep(rows=tuple(rows), title=title, summary_csv=summary_csv, figure=figure,
                          computed=len(run.records) - resumed, resumed=resumed)


#: float64 n × n arrays alive at once in one batch's infinite-width sweep (geometry, recursion
#: terms, kernel, angles, eigvalsh workspace): the tracemalloc peak of ``measure_infinite_batch``
#: (depths 0-10, ReLU and linear) is 26.0 of them at n = 256 and at n = 512; 28 leaves a margin.
BATCH_ARRAYS = 28


def _check_batch_memory(batch: int, n_data: int, where: str) -> None:
    n = min(int(batch), int(n_data))
    needed = BATCH_ARRAYS * 8 * n * n
    if needed > available_memory():
        raise InsufficientMemoryError(
            f"{where}: a batch of n = {n} needs about {needed / 2**30:.1f} GiB "
            f"({BATCH_ARRAYS} float64 n × n arrays) but only {available_memory() / 2**30:.1f} GiB "
            "is available; use a smaller --batch, or for a whole data set "
            "scripts/min_angle.py (angles) and ntkcond.exact_conditioning / "
            "matrix_free_conditioning (κ)")


def summarize(records) -> list[dict]:
    """Median, mean, min and max of κ_eff and of the smallest gradient angle (degrees).

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
    return sorted(rows, key=lambda row: (_width_key(row["width"]), row["activation"], row["depth"]))


def format_table(rows) -> str:
    """One line per (width, depth), activations side by side: median κ_eff ('*' when at the
    float64 resolution limit) and median smallest gradient angle in degrees."""
    acts = sorted({r["activation"] for r in rows}, key=lambda a: (a != "relu", a != "linear", a))
    index = {(r["width"], r["depth"], r["activation"]): r for r in rows}
    keys = sorted({(r["width"], r["depth"]) for r in rows}, key=lambda k: (_width_key(k[0]), k[1]))
    header = ["width", "depth"] + [h for a in acts for h in (f"kappa_eff {a}", f"angle° {a}")]
    body = []
    for width, depth in keys:
        line = [width, str(depth)]
        for a in acts:
            r = index.get((width, depth, a))
            line += (["", ""] if r is None else
                     [f"{r['kappa_eff_median']:.4g}{'*' if r['precision_limited'] else ' '}",
                      f"{r['min_grad_angle_deg_median']:.4f}"])
        body.append(line)
    return text_table(header, body)


ACTIVATION_COLOURS = {"relu": "C3", "linear": "C0"}
FINITE_WIDTH_STYLES = ("--", ":", "-.")


def plot_cond_vs_depth(rows, path: str, *, title: str = "", metadata: dict | None = None) -> str:
    """The paper's layout: smallest gradient angle (left) and κ_eff (right, log) vs depth.

    Colour by activation (ReLU red, linear blue, leaky others), line style by width (∞ solid,
    then finite widths dashed, dotted, dash-dot). Lines are medians over batches and seeds,
    the shaded band their min–max, as the table and ``summary.csv`` report. Written
    atomically; returns ``path``.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    widths = sorted({r["width"] for r in rows}, key=lambda w: (w != "inf", _width_key(w)))
    finite = [w for w in widths if w != "inf"]
    styles = {"inf": "-", **{w: FINITE_WIDTH_STYLES[i % 3] for i, w in enumerate(finite)}}
    acts = sorted({r["activation"] for r in rows}, key=lambda a: (a != "relu", a != "linear", a))
    colours = {a: ACTIVATION_COLOURS.get(a, f"C{i + 4}") for i, a in enumerate(acts)}
    for width in widths:
        for act in acts:
            sel = sorted((r for r in rows if r["width"] == width and r["activation"] == act),
                         key=lambda r: r["depth"])
            if not sel:
                continue
            depth = [r["depth"] for r in sel]
            label = f"{act}, width {'∞' if width == 'inf' else width}"
            for ax, field in zip(axes, ("min_grad_angle_deg", "kappa_eff")):
                ax.plot(depth, [r[f"{field}_median"] for r in sel], styles[width],
                        color=colours[act], marker="o", ms=3, label=label)
                ax.fill_between(depth, [r[f"{field}_min"] for r in sel],
                                [r[f"{field}_max"] for r in sel], color=colours[act], alpha=0.12)
    count = max(r["count"] for r in rows)
    band = f"line: median over {count} kernel(s) per point; band: min–max"
    axes[0].set(xlabel="depth L (hidden layers)", ylabel="smallest gradient angle (degrees)")
    axes[1].set(xlabel="depth L (hidden layers)", ylabel="effective condition number κ_eff",
                yscale="log")
    axes[0].legend(fontsize=8, title=band, title_fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    meta = {"Description": str(metadata)} if metadata else None
    atomic_savefig(fig, path, dpi=120, metadata=meta)
    plt.close(fig)
    return path
