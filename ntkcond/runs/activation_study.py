"""The activation study of issue 21: does nonlinearity soothe the NTK's condition number?

κ_eff and the smallest gradient angle against depth, for each activation of ``ACTIVATIONS``
with biases off and on (``B_STDS``), at infinite width and at finite width, on the batches of
one data set. Every (activation, b_std) is its own ``cond_vs_depth`` run directory
``<out>/<activation>_b<b_std>`` (resumable, fingerprinted), so the study reruns only what is
missing; ``activation_study`` then gathers their ``summary.csv`` rows into one table
(``study.csv``, ``study.md``) and one figure (``study.png``).

The nets (NTK parameterisation, all layers trained; ``ntkcond.network.mlp``):

* leaky family (relu, abs, leaky:α), no biases: the norm-preserving net of
  ``ntkcond.infinite.kernels`` (w_std None: hidden layers √c, read-out 1, c = 2/(1 + α²)).
  Every layer at s_w = √c instead multiplies the whole NTK by c, so κ and the angles are the
  same (``tests/test_activation_study.py`` checks it).
* leaky family with biases: s_w = √c at every layer, s_b = b_std.
* smooth activations (erf, gelu, tanh): s_w = ``SMOOTH_W_STD`` = 1.5 at every layer (the
  grid of issue 21; the variance map q ↦ s_w² E[σ(√q z)²] + s_b² is near 1 at q = 1:
  1.5² E[erf(z)²] = 1.05, GELU 0.96, tanh 0.89), s_b = b_std.

``study_w_std`` gives the rule. Every activation runs the same plan: tanh's dual (Mehler's
series of ``ntkcond.activations.mehler``, truncated per pair) costs about twice ReLU's closed form
per sweep (``benchmarks/results/bench_infinite_sweep.md``), so no activation needs its depth
or batch count capped.
"""
from __future__ import annotations

import csv
import dataclasses
import math
import os
from collections.abc import Iterable

from .. import datasets
from .._core.io import atomic_savefig, atomic_write
from ..activations import parse_activation, parse_activations
from .cond_vs_depth import cond_vs_depth
from .tables import write_csv

__all__ = ["ACTIVATIONS", "B_STDS", "SMOOTH_W_STD", "study_w_std", "StudyResult",
           "activation_study", "gather", "read_rows", "format_markdown", "compact_table",
           "plot_study", "main"]

ACTIVATIONS = ("relu", "abs", "leaky:-0.5", "leaky:0.2", "erf", "gelu", "tanh")
B_STDS = (0.0, 0.1)
#: Weight std of the smooth activations' nets (every layer).
SMOOTH_W_STD = 1.5


def study_w_std(activation, b_std: float):
    """The study's weight std: None (norm-preserving) for the leaky family without biases,
    √c = √(2/(1 + α²)) with biases, ``SMOOTH_W_STD`` for smooth activations."""
    act = parse_activation(activation, "study_w_std")
    if act.homogeneous:
        return None if b_std == 0 else math.sqrt(act.norm_preserving_scale)
    return SMOOTH_W_STD


@dataclasses.dataclass(frozen=True)
class StudyResult:
    """Result of ``activation_study``: the gathered ``rows`` and the paths written."""

    rows: tuple
    csv: str
    markdown: str
    figure: str

    def __repr__(self) -> str:
        return f"StudyResult({len(self.rows)} rows, figure={self.figure!r})"


def run_name(activation: str, b_std: float) -> str:
    """``<activation>_b<b_std>`` with ':' dropped: ``leaky-0.5_b0.1``."""
    return f"{activation.replace(':', '')}_b{b_std:g}"


def activation_study(ds: datasets.Dataset, *, out: str, batch: int = 512, max_batches: int = 2,
                     depths=range(11), deep_depths=(15, 20, 30, 50, 70, 100),
                     activations=ACTIVATIONS, b_stds=B_STDS, widths=("inf", 512),
                     seeds: int = 5, finite_activations=None, seed: int = 0, resume: bool = True,
                     overwrite: bool = False, progress: bool = True) -> StudyResult:
    """Run (or resume) the study on ``ds`` into ``out`` (module docstring).

    Args:
      depths: depths at every width; deep_depths: more depths at infinite width.
      widths: "inf" and finite widths.
      finite_activations: the activations (names) also run at the finite widths, None for
        all (the finite sweep costs ~10x the infinite one on a CPU).
      resume: continue the run directories already under ``out`` (default); overwrite:
        discard them and start over.
    """
    where = "activation_study"
    nets, names, finite_activations = _checked(out, activations, b_stds, finite_activations,
                                               where)
    rows = []
    for net in nets:
        act, w_std, b_std = net.act, net.w_std, net.b_std
        finite = [w for w in widths if w != "inf"]
        if finite_activations is not None and act.name not in finite_activations:
            finite = []
        plan = [(["inf"], sorted(set(depths) | set(deep_depths)))]
        if "inf" not in widths:
            plan = []
        if finite:
            plan.append((finite, sorted(set(depths))))
        for ws, ds_depths in plan:
            tag = "inf" if ws == ["inf"] else "w" + "-".join(str(w) for w in ws)
            sweep = cond_vs_depth(
                ds, out=os.path.join(out, f"{run_name(act.name, b_std)}_{tag}"), batch=batch,
                depths=ds_depths, activations=[net], widths=ws, seeds=seeds,
                seed=seed, max_batches=max_batches,
                resume=resume and not overwrite and os.path.exists(os.path.join(
                    out, f"{run_name(act.name, b_std)}_{tag}", "config.json")),
                overwrite=overwrite, progress=progress)
            for r in sweep.rows:
                rows.append({"activation": act.name, "b_std": b_std,
                             "w_std": "norm-preserving" if w_std is None else f"{w_std:.6g}",
                             **{k: v for k, v in r.items() if k != "activation"}})
    rows.sort(key=lambda r: (r["b_std"], names.index(r["activation"]) if r["activation"]
                             in names else 99, r["width"] != "inf", str(r["width"]), r["depth"]))
    path_csv = write_csv(os.path.join(out, "study.csv"), rows)
    title = (f"{os.path.basename(ds.name)} ({ds.split}), batches of {batch}: "
             f"κ_eff and smallest gradient angle vs depth")
    md = format_markdown(rows, title=title)
    path_md = os.path.join(out, "study.md")
    atomic_write(path_md, md)
    figure = plot_study(rows, os.path.join(out, "study.png"), title=title)
    return StudyResult(rows=tuple(rows), csv=path_csv, markdown=path_md, figure=figure)


def _checked(out, activations, b_stds, finite_activations, where):
    """The study's arguments, checked before any run directory is made: (the nets, b_std
    outer and activation inner, each an ``MLPFamily`` from ``resolve_mlp``; the activation
    names; the finite activations' names or None)."""
    from ..network import resolve_mlp
    from ..network.layers import check_std

    if isinstance(out, os.PathLike):
        out = os.fspath(out)
    if not isinstance(out, str) or not out.strip():
        raise ValueError(f"{where}: expected --out as a nonempty directory path, got {out!r}")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"{where}: expected --out to be a directory, got the file {out}")
    names = tuple(a.name for a in parse_activations(activations, where))
    if isinstance(b_stds, (str, bytes)) or not isinstance(b_stds, Iterable):
        raise TypeError(f"{where}: expected --b-stds as a sequence of numbers, got {b_stds!r}")
    stds = [check_std(b, "each --b-stds value", where, allow_none=False, allow_zero=True)
            for b in b_stds]
    if not stds:
        raise ValueError(f"{where}: expected at least one --b-stds value, got none")
    if len(set(stds)) != len(stds):
        raise ValueError(f"{where}: expected each --b-stds value once, got {list(b_stds)!r}")
    nets = [resolve_mlp(name, study_w_std(name, b), b, where=where) for b in stds for name in names]
    finite = None
    if finite_activations is not None:
        finite = {a.name for a in parse_activations(finite_activations, where)}
        extra = sorted(finite - set(names))
        if extra:
            raise ValueError(f"{where}: expected --finite-activations among --activations "
                             f"{list(names)}, got {extra} (not in the study)")
    return nets, names, finite


def gather(out: str) -> list[dict]:
    """The study's rows from the finished run directories under ``out`` (their config.json
    and summary.csv; nothing is computed), sorted as ``activation_study`` sorts them."""
    import json

    rows = []
    for name in sorted(os.listdir(out)):
        config, summary = (os.path.join(out, name, f) for f in ("config.json", "summary.csv"))
        if not (os.path.exists(config) and os.path.exists(summary)):
            continue
        with open(config, encoding="utf-8") as f:
            cfg = json.load(f)
        with open(summary, newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                row = {"activation": r["activation"], "b_std": float(cfg.get("b_std", 0.0)),
                       "w_std": ("norm-preserving" if "w_std" not in cfg
                                 else f"{cfg['w_std']:.6g}")}
                for k, v in r.items():
                    if k == "activation":
                        continue
                    row[k] = (int(v) if k in ("depth", "count", "rank_min") else
                              float(v) if k.startswith(("kappa_eff_", "min_grad_angle_deg_"))
                              else v)
                rows.append(row)
    order = {a: i for i, a in enumerate(parse_activation(a).name for a in ACTIVATIONS)}
    rows.sort(key=lambda r: (r["b_std"], order.get(r["activation"], 99), r["width"] != "inf",
                             str(r["width"]), r["depth"]))
    return rows


def read_rows(path: str) -> list[dict]:
    """The rows of a ``study.csv`` (numbers parsed)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["b_std"], r["depth"], r["count"] = float(r["b_std"]), int(r["depth"]), int(r["count"])
        for k in list(r):
            if k.startswith(("kappa_eff_", "min_grad_angle_deg_")):
                r[k] = float(r[k])
    return rows


def format_markdown(rows, *, title: str, depths=(0, 1, 3, 10, 100)) -> str:
    """A Markdown table: one line per (activation, b_std, w_std, width), median κ_eff and
    smallest gradient angle (degrees) at ``depths``."""
    keys = list(dict.fromkeys((r["activation"], r["b_std"], r["w_std"], str(r["width"]))
                              for r in rows))
    index = {(r["activation"], r["b_std"], str(r["width"]), r["depth"]): r for r in rows}
    head = (["activation", "b_std", "w_std", "width", "count"]
            + [f"κ_eff L={L}" for L in depths] + [f"angle° L={L}" for L in depths])
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for a, b, w, width in keys:
        cells = [index.get((a, b, width, L)) for L in depths]
        count = next((c["count"] for c in cells if c is not None), "")
        lines.append("| " + " | ".join(
            [a, f"{b:g}", w, "∞" if width == "inf" else width, str(count)]
            + ["" if c is None else f"{c['kappa_eff_median']:.4g}" for c in cells]
            + ["" if c is None else f"{c['min_grad_angle_deg_median']:.2f}" for c in cells])
            + " |")
    lines += ["", "Medians over batches (× 5 seeds at finite width); count = kernels per cell. "
              "Blank: not computed (finite width to depth 10)."]
    return "\n".join(lines) + "\n"


def compact_table(rows, *, depths=(1, 3, 10), deep=100, field="kappa_eff") -> str:
    """One Markdown line per (activation, b_std): the median ``field`` at width ∞ for
    ``depths`` and ``deep``, then at the finite width for ``depths`` (blank: not run)."""
    finite = sorted({str(r["width"]) for r in rows} - {"inf"})
    index = {(r["activation"], r["b_std"], str(r["width"]), r["depth"]): r for r in rows}
    keys = list(dict.fromkeys((r["activation"], r["b_std"]) for r in rows))
    head = (["activation", "b_std"] + [f"∞, L={L}" for L in (*depths, deep)]
            + [f"{w}, L={L}" for w in finite for L in depths])
    fmt = (lambda v: f"{v:.3g}") if field == "kappa_eff" else (lambda v: f"{v:.1f}")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a, b in keys:
        cells = [index.get((a, b, "inf", L)) for L in (*depths, deep)]
        cells += [index.get((a, b, w, L)) for w in finite for L in depths]
        lines.append("| " + " | ".join([a, f"{b:g}"] + [
            "" if c is None else fmt(c[f"{field}_median"]) for c in cells]) + " |")
    return "\n".join(lines) + "\n"


def plot_study(rows, path: str, *, title: str = "") -> str:
    """2 × 2 panels: κ_eff (top, log y) and the smallest gradient angle (bottom) against depth
    (symlog x: 0–10 linear, then log to 100), without biases (left) and with (right). Colour
    by activation; infinite width solid, finite width dashed with the min–max band over
    batches and seeds. Written atomically."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    b_stds = sorted({r["b_std"] for r in rows})
    acts = list(dict.fromkeys(r["activation"] for r in rows))
    colours = {a: f"C{i}" for i, a in enumerate(acts)}
    fig, axes = plt.subplots(2, len(b_stds), figsize=(6.5 * len(b_stds), 8.5), squeeze=False)
    for col, b in enumerate(b_stds):
        for a in acts:
            for width in sorted({str(r["width"]) for r in rows}, key=lambda w: w != "inf"):
                sel = sorted((r for r in rows if r["activation"] == a and r["b_std"] == b
                              and str(r["width"]) == width), key=lambda r: r["depth"])
                if not sel:
                    continue
                x = [r["depth"] for r in sel]
                style = "-" if width == "inf" else "--"
                label = f"{a}" + ("" if width == "inf" else f", width {width}")
                for row, field in enumerate(("kappa_eff", "min_grad_angle_deg")):
                    ax = axes[row, col]
                    ax.plot(x, [r[f"{field}_median"] for r in sel], style, color=colours[a],
                            marker="o" if width == "inf" else None, ms=2.5, lw=1.3, label=label)
                    if width != "inf":
                        ax.fill_between(x, [r[f"{field}_min"] for r in sel],
                                        [r[f"{field}_max"] for r in sel], color=colours[a],
                                        alpha=0.12)
        w_note = "leaky: norm-preserving" if b == 0 else "leaky: s_w = √c"
        axes[0, col].set(yscale="log", ylabel="κ_eff (median)",
                         title=f"b_std = {b:g} ({w_note}; erf, gelu, tanh: s_w = {SMOOTH_W_STD})")
        axes[1, col].set(ylabel="smallest gradient angle (degrees)")
        for ax in axes[:, col]:
            ax.set_xscale("symlog", linthresh=10, linscale=1.5)
            ax.set_xlim(0, max(r["depth"] for r in rows))
            ax.set_xlabel("depth L (hidden layers); linear to 10, log beyond")
            ax.grid(alpha=0.3, which="both")
    handles = {}
    for ax in axes[0]:  # one legend for all panels, below them (none hides a curve)
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    finite = sorted({str(r["width"]) for r in rows} - {"inf"})
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", fontsize=8,
               ncol=min(7, max(1, len(handles))), frameon=False,
               title="solid: width ∞" + (f"; dashed: width {', '.join(finite)} (band: min–max "
                                         "over batches and seeds)" if finite else ""),
               title_fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    rows_of_legend = math.ceil(len(handles) / min(7, max(1, len(handles))))
    fig.tight_layout(rect=(0, 0.035 + 0.025 * rows_of_legend, 1, 1))
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)
    return path


# The command: ``ntkcond activation-study`` and ``scripts/activation_study.py``.

NAME = "activation_study"
COMMAND_DOC = """The activation study: κ_eff and the smallest gradient angle against depth for relu, abs,
leaky:-0.5, leaky:0.2, erf, gelu and tanh, with b_std 0 and 0.1, at infinite width and width 512.

examples:
  {command} --dataset ../shared/data/mnist_test.npz --preset mnist
  {command} --dataset ../shared/data/cifar10_test.npz --preset cifar10 \
      --out runs/activation_study_cifar10 --activations relu abs erf

Each (activation, b_std, width group) is a cond_vs_depth run directory under --out (rerunning
resumes what is there); study.csv, study.md and study.png gather them. Weight stds: the leaky
family's norm-preserving net without biases, s_w = √c with biases; s_w = 1.5 for erf, gelu,
tanh. The library call: ntkcond.runs.activation_study.activation_study.
"""


def build_parser(prog: str | None = None):
    """The flags of ``activation_study`` (``command_parser``: as the script when prog is None)."""
    from .cli import add_data_arguments, add_run_arguments, command_parser, parse_width, positive_int

    p = command_parser(NAME, COMMAND_DOC, prog)
    add_data_arguments(p, split="test")
    p.add_argument("--batch", type=positive_int, default=512, help="batch size n")
    p.add_argument("--max-batches", type=positive_int, default=2, help="batches")
    p.add_argument("--depths", default="0-10", help="depths at every width")
    p.add_argument("--deep-depths", default="15,20,30,50,70,100",
                   help="more depths at infinite width")
    p.add_argument("--activations", nargs="+", default=list(ACTIVATIONS), help="activations")
    p.add_argument("--b-stds", type=float, nargs="+", default=[0.0, 0.1], help="bias stds")
    p.add_argument("--width", type=parse_width, nargs="+", default=["inf", 512], help="widths")
    p.add_argument("--seeds", type=positive_int, default=5, help="finite width: nets per depth")
    p.add_argument("--finite-activations", nargs="+", default=None,
                   help="activations also run at the finite widths (default: all)")
    add_run_arguments(p, NAME, resume=False)
    return p


def _run_command(args):
    from .cli import load_data, parse_depths

    ds = load_data(args)
    res = activation_study(ds, out=args.out, batch=args.batch, max_batches=args.max_batches,
                           depths=parse_depths(args.depths),
                           deep_depths=parse_depths(args.deep_depths, "--deep-depths"),
                           activations=tuple(args.activations), b_stds=tuple(args.b_stds),
                           widths=args.width, seeds=args.seeds, seed=args.seed,
                           finite_activations=args.finite_activations,
                           overwrite=args.overwrite, progress=not args.no_progress)
    with open(res.markdown, encoding="utf-8") as f:
        print(f.read())
    print(f"table: {os.path.abspath(res.csv)}\nfigure: {os.path.abspath(res.figure)}")
    return res


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, run (or resume) the study, print its table; 0, 2 or 130."""
    from .cli import run_main

    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
