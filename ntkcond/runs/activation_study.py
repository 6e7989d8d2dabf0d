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

import argparse
import csv
import dataclasses
import math
import os
from collections.abc import Iterable

from .. import datasets, plot
from .._core.io import atomic_write
from ..activations import parse_activation, parse_activations
from .cli import (activation_name, add_data_arguments, add_network_arguments, add_run_arguments,
                  check_batch, command_parser, load_data, nonnegative_float, parse_depths,
                  parse_width, positive_int, run_main)
from .cond_vs_depth import cond_vs_depth
from .frames import RunResult
from .rundir import data_fingerprint, open_run
from .tables import write_csv

__all__ = ["ACTIVATIONS", "B_STDS", "SMOOTH_W_STD", "KEY_FIELDS", "study_w_std", "StudyResult",
           "activation_study", "table_depths_of", "weight_note", "gather", "read_rows",
           "format_markdown", "summary_sentence", "compact_table", "main"]

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
class StudyResult(RunResult):
    """Result of ``activation_study``: the ``records`` (every kernel of every part, with
    ``b_std`` and ``w_std`` set, as the study's records.jsonl holds them) and ``config``
    (``frame()``: what ``ntkcond.runs.load`` reads from ``out``), the gathered summary
    ``rows`` (study.csv), the Markdown ``table``, and the paths of study.csv, study.md and
    study.png (None without a run directory)."""

    records: tuple
    config: dict
    rows: tuple
    table: str
    csv: str | None
    markdown: str | None
    figure: str | None

    def __repr__(self) -> str:
        return f"StudyResult({len(self.rows)} rows, {len(self.records)} records, figure={self.figure!r})"


def run_name(activation: str, b_std: float) -> str:
    """``<activation>_b<b_std>`` with ':' dropped: ``leaky-0.5_b0.1``."""
    return f"{activation.replace(':', '')}_b{b_std:g}"


#: The study's records: one per kernel, keyed by the part (b_std, activation, width) and the
#: kernel within it.
KEY_FIELDS = ("b_std", "activation", "width", "batch_index", "depth", "seed")
#: What the study derives from its records (deleted first by an overwrite).
OUTPUTS = ("study.csv", "study.md", "study.png")


def activation_study(ds: datasets.Dataset, *, out: str | None, batch: int = 512,
                     max_batches: int = 2, depths=range(11),
                     deep_depths=(15, 20, 30, 50, 70, 100), activations=ACTIVATIONS,
                     b_stds=B_STDS, widths=("inf", 512), seeds: int = 5,
                     finite_activations=None, seed: int = 0, drop_last: bool = True,
                     table_depths=None, resume: bool = True, overwrite: bool = False,
                     progress: bool = True) -> StudyResult:
    """Run (or resume) the study on ``ds`` into ``out`` (module docstring; None: in memory).

    ``out`` is itself a run directory (config.json with the study's settings, records.jsonl
    with every part's kernels, ``b_std`` and ``w_std`` set on each, so ``ntkcond.runs.load(out)``
    reads the whole study), and holds one ``cond_vs_depth`` run directory per part.

    Args:
      depths: depths at every width; deep_depths: more depths at infinite width.
      widths: "inf" and finite widths; seeds: nets per depth at finite width.
      finite_activations: the activations (names) also run at the finite widths, None for
        all (the finite sweep costs ~10x the infinite one on a CPU).
      drop_last: drop a final batch smaller than ``batch`` (``cond_vs_depth``).
      table_depths: the depths of study.md's columns (default ``table_depths`` of the depths
        that ran).
      resume: continue the study already in ``out`` (default; its settings must be the same);
        overwrite: discard it and start over.
      progress: show progress on stderr, one labelled display per part.
    """
    where = "activation_study"
    nets, names, finite_names, b_stds = _checked(out, activations, b_stds, finite_activations,
                                                 where)  # every net checked before any folder
    depths, deep_depths = sorted(set(depths)), sorted(set(deep_depths) - set(depths))
    plan = []  # (net, b_std, widths, depths) of each part
    for net in nets:  # b_std outer, activation inner
        finite = [w for w in widths if w != "inf"]
        if finite_names is not None and net.act.name not in finite_names:
            finite = []
        if "inf" in widths:
            plan.append((net, net.b_std, ["inf"], sorted(set(depths) | set(deep_depths))))
        if finite:
            plan.append((net, net.b_std, finite, depths))
    config = {"dataset": ds.name, "split": ds.split, "batch": batch, "max_batches": max_batches,
              "drop_last": drop_last, "depths": depths, "deep_depths": deep_depths,
              "activations": list(names), "b_stds": b_stds,
              "widths": list(widths), "seeds": seeds, "finite_activations": finite_names,
              "seed": seed, "w_std": {net.name: net.w_std for net in nets},
              "preprocessing": ds.preprocessing, "data_fingerprint": data_fingerprint(ds.x)}
    again = (resume and not overwrite and out is not None
             and os.path.exists(os.path.join(out, "config.json")))
    rows = []
    with open_run(out, config, key_fields=KEY_FIELDS, resume=again, overwrite=overwrite,
                  where=where, outputs=OUTPUTS) as run:
        for k, (net, b_std, ws, part_depths) in enumerate(plan):
            tag = "inf" if ws == ["inf"] else "w" + "-".join(str(w) for w in ws)
            sub = None if out is None else os.path.join(out, f"{run_name(net.act.name, b_std)}_{tag}")
            label = (f"{where} {k + 1}/{len(plan)} {net.act.name} b_std={b_std:g} width "
                     f"{'∞' if tag == 'inf' else tag[1:]}")
            sweep = cond_vs_depth(
                ds, out=sub, batch=batch, depths=part_depths, activations=[net], widths=ws,
                seeds=seeds, seed=seed, max_batches=max_batches, drop_last=drop_last,
                resume=(sub is not None and resume and not overwrite
                        and os.path.exists(os.path.join(sub, "config.json"))),
                overwrite=overwrite and sub is not None, progress=label if progress else False)
            for rec in sweep.records:
                rec = {**rec, "b_std": float(b_std), "w_std": net.w_std}
                if run.key(rec) not in run.done:
                    run.append(rec)
            for r in sweep.rows:
                rows.append({"activation": net.act.name, "b_std": b_std,
                             "w_std": "norm-preserving" if net.w_std is None else f"{net.w_std:.6g}",
                             **{k: v for k, v in r.items() if k != "activation"}})
        rows.sort(key=lambda r: (r["b_std"], names.index(r["activation"]), r["width"] != "inf",
                                 str(r["width"]), r["depth"]))
        name = os.path.basename(ds.name) if ds.name.endswith(".npz") else ds.name
        title = f"{name} ({ds.split}): κ_eff and smallest gradient angle vs depth"
        shown = table_depths_of(depths + deep_depths) if table_depths is None else \
            sorted(set(table_depths))
        table = format_markdown(rows, title=title, depths=shown, records=run.records)
        path_csv = path_md = figure = None
        if run.path is not None:
            path_csv = write_csv(run.file("study.csv"), rows)
            path_md = run.file("study.md")
            atomic_write(path_md, table)
            figure = plot.study(run.records, run.file("study.png"), title=title,
                                notes=weight_note(nets, b_stds), metadata=config)
        return StudyResult(records=tuple(run.records), config=dict(run.config), rows=tuple(rows),
                           table=table, csv=path_csv, markdown=path_md, figure=figure)


def table_depths_of(depths, count: int = 6) -> list:
    """The depths of study.md's columns: all of ``depths`` when at most ``count``, else
    ``count`` of them evenly spaced in the sorted list (the first and the last included)."""
    depths = sorted(set(depths))
    if len(depths) <= count:
        return depths
    picks = {round(i * (len(depths) - 1) / (count - 1)) for i in range(count)}
    return [depths[i] for i in sorted(picks)]


def weight_note(nets, b_stds) -> dict:
    """{b_std: 's_w: relu, abs norm-preserving; erf, gelu, tanh 1.5'}: the weight stds of the
    nets that ran (``MLPFamily``s), per bias std (the figure's column titles)."""
    out = {}
    for b in b_stds:
        by_w: dict = {}
        for net in nets:
            if net.b_std == b:
                w = "norm-preserving" if net.w_std is None else f"{net.w_std:.4g}"
                by_w.setdefault(w, []).append(net.act.name)
        out[float(b)] = "s_w: " + "; ".join(f"{', '.join(v)} {w}" for w, v in by_w.items())
    return out


def _checked(out, activations, b_stds, finite_activations, where):
    """The study's arguments, checked before any run directory is made: (the nets, b_std
    outer and activation inner, each an ``MLPFamily`` from ``resolve_mlp``; the activation
    names; the finite activations' names, sorted, or None; the bias stds as floats).
    ``out`` None is a study in memory."""
    from ..network import resolve_mlp
    from ..network.layers import check_std

    if out is not None:
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
        finite = sorted(finite)
    return nets, names, finite, [float(b) for b in stds]


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


def format_markdown(rows, *, title: str, depths, records=()) -> str:
    """A Markdown table: one line per (activation, b_std, w_std, width), median κ_eff and
    smallest gradient angle (degrees) at ``depths`` (those that ran: ``table_depths_of``), then
    what a cell summarises, read off the ``records`` (batches and their sizes, seeds)."""
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
    lines += ["", summary_sentence(rows, records)]
    return "\n".join(lines) + "\n"


def summary_sentence(rows, records) -> str:
    """What the medians of the table are over, from what ran: 'Medians over 2 batches of
    n = 512 (× 5 seeds at width 512); count = kernels per cell. Blank: not computed (width 512
    at depths 0–10 only).'"""
    sizes = sorted({int(r["n"]) for r in records})
    batches = sorted({r["batch_index"] for r in records})
    seeds = sorted({r["seed"] for r in records if r.get("seed") is not None})
    finite = sorted({str(r["width"]) for r in rows} - {"inf"}, key=int)
    over = (f"{len(batches)} batch{'es' if len(batches) != 1 else ''} of n = "
            + " and ".join(map(str, sizes))) if records else "batches"
    seeds_text = (f" (× {len(seeds)} seed{'s' if len(seeds) != 1 else ''} at width "
                  f"{', '.join(finite)})" if seeds and finite else "")
    text = f"Medians over {over}{seeds_text}; count = kernels per cell."
    if finite:
        fd = sorted({r["depth"] for r in rows if str(r["width"]) != "inf"})
        text += (f" Blank: not computed (width {', '.join(finite)} at depths "
                 f"{_span(fd)} only).")
    return text


def _span(depths) -> str:
    """'0–10' for a run of consecutive depths, else '0, 1, 5'."""
    depths = sorted(depths)
    if len(depths) > 2 and depths == list(range(depths[0], depths[-1] + 1)):
        return f"{depths[0]}–{depths[-1]}"
    return ", ".join(map(str, depths))


def compact_table(rows, *, depths, deep=None, field="kappa_eff") -> str:
    """One Markdown line per (activation, b_std): the median ``field`` at width ∞ for
    ``depths`` and the deepest depth that ran at infinite width (``deep``, default that), then
    at the finite width for ``depths`` (blank: not run)."""
    if deep is None:
        deep = max(r["depth"] for r in rows if str(r["width"]) == "inf")
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


# The command: ``ntkcond activation-study`` and ``scripts/activation_study.py``.

NAME = "activation_study"
COMMAND_DOC = """The activation study: κ_eff and the smallest gradient angle against depth for relu, abs,
leaky:-0.5, leaky:0.2, erf, gelu and tanh, with b_std 0 and 0.1, at infinite width and width 512.

examples:
  {command} --dataset ../shared/data/mnist_test.npz --preset mnist
  {command} --dataset ../shared/data/cifar10_test.npz --preset cifar10 \
      --out runs/activation_study_cifar10 --activations relu abs erf

--out is a run directory (config.json: the study's settings, versions, command line, time;
records.jsonl: every kernel, with b_std and w_std, so ntkcond.runs.load(OUT) reads the whole
study) holding one cond_vs_depth run directory per (activation, b_std, width group); rerunning
with the same flags resumes what is there. study.csv, study.md (columns at the depths that ran)
and study.png (its depth axis those depths) gather them. Weight stds: the leaky family's
norm-preserving net without biases, s_w = √c with biases; s_w = 1.5 for erf, gelu, tanh. The
library call: ntkcond.runs.activation_study.activation_study.
"""


def build_parser(prog: str | None = None):
    """The flags of ``activation_study`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    add_data_arguments(p, split="test")
    p.add_argument("--batch", type=positive_int, default=512, help="batch size n")
    p.add_argument("--max-batches", type=positive_int, default=2, help="number of batches")
    p.add_argument("--drop-last", action=argparse.BooleanOptionalAction, default=True,
                   help="drop a final batch smaller than --batch (--no-drop-last keeps it)")
    add_network_arguments(p, depths="0-10", activations=ACTIVATIONS, options=False)
    g = p.add_argument_group("study")
    g.add_argument("--deep-depths", default="15,20,30,50,70,100",
                   help="more depths at infinite width, e.g. 15,20,30")
    g.add_argument("--b-stds", type=nonnegative_float, nargs="+", default=list(B_STDS),
                   metavar="B", help="bias stds s_b of the nets (0: no biases)")
    g.add_argument("--width", type=parse_width, nargs="+", default=["inf", 512],
                   help="inf and/or finite widths")
    g.add_argument("--seeds", type=positive_int, default=5,
                   help="finite widths: number of random nets per depth, seeds 0..S-1")
    g.add_argument("--finite-activations", nargs="+", type=activation_name, metavar="ACT",
                   help="activations also run at the finite widths (default: all of "
                        "--activations)")
    add_run_arguments(p, NAME, resume=False)
    return p


def _run_command(args):
    ds = load_data(args)
    check_batch(args.batch, ds)
    res = activation_study(ds, out=args.out, batch=args.batch, max_batches=args.max_batches,
                           depths=parse_depths(args.depths),
                           deep_depths=parse_depths(args.deep_depths, "--deep-depths"),
                           activations=tuple(args.activations), b_stds=tuple(args.b_stds),
                           widths=args.width, seeds=args.seeds, seed=args.seed,
                           finite_activations=args.finite_activations, drop_last=args.drop_last,
                           overwrite=args.overwrite, progress=not args.no_progress)
    print(res.table)
    print(f"table: {os.path.abspath(res.csv)}\nfigure: {os.path.abspath(res.figure)}")
    return res


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, run (or resume) the study, print its table; 0, 2 or 130."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
