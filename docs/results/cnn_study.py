#!/usr/bin/env python3
"""Does ReLU soothe the NTK's condition number of a convolutional net? (issue 31's study)

    python docs/results/cnn_study.py --part infinite     # every infinite-width run
    python docs/results/cnn_study.py --part finite       # the finite-width runs (slower)
    python docs/results/cnn_study.py --report            # docs/results/cnn.md, CSV, figures

Every run is one ``ntkcond cond-vs-depth`` command (``ntkcond.runs.cond_vs_depth.main``, in
this process), printed before it runs and written beside its rows in ``cnn_summary.csv``; its
run directory is ``--runs``/<dataset>/<name> and a rerun resumes it (finished runs are read,
not redone).

All runs: the CIFAR-10 and MNIST test images of ``--data-dir`` (default ../shared/data; the
papers' normalisation), 2 batches of n = 256 shuffled with seed 0 (the same images for every
net), ReLU beside linear, bias-free and with b_std = 0.1 (w_std the norm-preserving √2 / 1):

* ``fc``: the fully-connected nets of Liu & Hui, depths 0–20;
* ``cnn_flatten``: convolutional nets (3 × 3 SAME convolutions, stride 1, ``Flatten`` then a
  dense read-out) on the whole images (32 × 32 × 3, 28 × 28 × 1), depths 0–20: a flatten
  read-out needs only the spatial diagonal, so the cost is that of 1024 (784) pixels per pair
  and layer;
* ``cnn_gap_8``: the same convolutions with global average pooling on the images averaged over
  4 × 4 blocks (8 × 8 × 3, 7 × 7 × 1, ``--downsample 4``), depths 0–10: pooling needs every
  pixel pair, (HW)² per image pair and layer — 1M at 32 × 32, where the 2 × 32,896 pairs of
  one run would take about 2 hours per net here, against 4,096 at 8 × 8;
* ``cnn_flatten_8`` and ``fc_8``: flatten and fully-connected nets on the same 8 × 8 images,
  so that the read-outs (and the architectures) are compared on identical inputs;
* ``--part finite``: ``cnn_flatten_8`` and ``cnn_gap_8`` at 64 channels, 3 seeds (bias-free),
  the exact empirical NTK of the finite nets.
"""
from __future__ import annotations

import argparse
import functools
import os
import shlex
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = {"cifar10": "CIFAR-10", "mnist": "MNIST"}
ARCHS = {  # name → (flags, title)
    "fc": (["--depths", "0-20"], "fully-connected"),
    "cnn_flatten": (["--arch", "cnn", "--readout", "flatten", "--depths", "0-20"],
                    "CNN, flatten"),
    "fc_8": (["--downsample", "4", "--depths", "0-10"], "fully-connected, 8 x 8"),
    "cnn_flatten_8": (["--arch", "cnn", "--readout", "flatten", "--downsample", "4",
                       "--depths", "0-10"], "CNN, flatten, 8 x 8"),
    "cnn_gap_8": (["--arch", "cnn", "--readout", "gap", "--downsample", "4", "--depths", "0-10"],
                  "CNN, global average pooling, 8 x 8"),
}
FINITE = ("cnn_flatten_8", "cnn_gap_8")


def configs(part: str, dataset: str, data_dir: str):
    """(name, argv) of every run of ``part`` on ``dataset``."""
    data = ["--dataset", dataset, "--split", "test", "--data-dir", data_dir, "--batch", "256",
            "--max-batches", "2", "--seed", "0", "--activations", "relu", "linear"]
    if part == "infinite":
        for arch, (flags, _) in ARCHS.items():
            for bias in (0.0, 0.1):
                extra = ["--b-std", "0.1"] if bias else []
                yield f"{arch}_b{bias:g}", data + flags + extra
    else:
        for arch in FINITE:
            yield f"{arch}_w64", data + ARCHS[arch][0] + ["--width", "64", "--seeds", "3"]


def run(part: str, datasets, data_dir: str, runs: str) -> None:
    from ntkcond.runs import cond_vs_depth

    for dataset in datasets:
        for name, argv in configs(part, dataset, data_dir):
            out = os.path.join(runs, dataset, name)
            argv = argv + ["--out", out, "--no-progress"] + (
                ["--resume"] if os.path.exists(os.path.join(out, "config.json")) else [])
            print("ntkcond cond-vs-depth " + " ".join(shlex.quote(a) for a in argv), flush=True)
            code = cond_vs_depth.main(argv)
            if code != 0:
                raise SystemExit(f"cnn_study: the run {out} failed (exit {code})")


# ---------------------------------------------------------------------------- the report
#: The depths shown in the tables (those that ran, of these).
SHOWN = (0, 1, 2, 3, 5, 10, 20)
FIELDS = ["dataset", "run", "title", "b_std", "width", "depth", "n", "image_shape", "kernels", "kappa_relu",
          "kappa_linear", "ratio_linear_over_relu", "rank_relu", "rank_linear", "angle_relu",
          "angle_linear", "limited_relu", "limited_linear", "kappa_relu_min", "kappa_relu_max",
          "kappa_linear_min", "kappa_linear_max", "command"]


def _command(argv, out) -> str:
    return "ntkcond cond-vs-depth " + " ".join(shlex.quote(a) for a in argv + ["--out", out])


@functools.lru_cache(maxsize=None)
def _image_shape(dataset: str, data_dir: str, downsample: int) -> tuple:
    """(H, W, C) of the images a run read (after its --downsample)."""
    from ntkcond import datasets as D

    return tuple(D.load(dataset, "test", data_dir=data_dir, downsample=downsample).images.shape[1:])


def summary(runs: str, datasets, data_dir: str) -> list[dict]:
    """One row per (dataset, run, width, depth): medians over batches (and seeds) of ReLU's and
    linear's κ_eff (with their min and max), their ratio, the smallest rank and the median
    smallest gradient angle (degrees) of each, and whether any kernel hit float64's
    resolution (``precision_limited``)."""
    import ntkcond.runs

    rows = []
    for dataset in datasets:
        for part in ("infinite", "finite"):
            for name, argv in configs(part, dataset, data_dir):
                out = os.path.join(runs, dataset, name)
                if not os.path.exists(os.path.join(out, "records.jsonl")):
                    continue
                frame = ntkcond.runs.load(out)
                if not len(frame):
                    continue
                arch = name.rsplit("_", 1)[0]
                shape = _image_shape(dataset, data_dir, int(dict(zip(argv, argv[1:])).get("--downsample", 1)))
                for (width, depth), group in frame.groupby(["width", "depth"]):
                    if set(group["activation"]) != {"relu", "linear"}:
                        continue  # a run still under way: both activations or neither
                    row = {"dataset": dataset, "run": name, "title": ARCHS[arch][1],
                           "b_std": 0.1 if "--b-std" in argv else 0.0, "width": width,
                           "depth": int(depth), "n": int(group["n"].iloc[0]),
                           "kernels": len(group), "image_shape": shape,
                           "command": _command(argv, os.path.relpath(out))}
                    for act in ("relu", "linear"):
                        sel = group[group["activation"] == act]
                        row[f"kappa_{act}"] = float(sel["kappa_eff"].median())
                        row[f"kappa_{act}_min"] = float(sel["kappa_eff"].min())
                        row[f"kappa_{act}_max"] = float(sel["kappa_eff"].max())
                        row[f"rank_{act}"] = int(sel["rank"].min())
                        row[f"angle_{act}"] = float(sel["min_grad_angle_deg"].median())
                        row[f"limited_{act}"] = bool(sel["precision_limited"].any())
                    row["ratio_linear_over_relu"] = row["kappa_linear"] / row["kappa_relu"]
                    rows.append(row)
    return rows


def g(v, digits=3) -> str:
    """``v`` to ``digits`` significant digits; whole and thousands-separated from 10³ to 10⁷."""
    if v != v:
        return "—"
    if 1e3 <= abs(v) < 1e7:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def pick(rows, dataset, run, depth, width="inf"):
    """The row of (dataset, run, depth, width), or None."""
    return next((r for r in rows if (r["dataset"], r["run"], r["depth"], r["width"])
                 == (dataset, run, depth, width)), None)


def depths_of(rows, dataset, run, width="inf") -> list[int]:
    return sorted(r["depth"] for r in rows if (r["dataset"], r["run"], r["width"]) == (dataset, run, width))


def arch_table(rows, dataset, archs, bias) -> list[str]:
    """κ_eff (ReLU / linear) and the ratio per depth, one column group per architecture; the
    rank (ReLU / linear) where either is below n; * marks a kernel at float64's resolution."""
    runs = [f"{a}_b{bias:g}" for a in archs if depths_of(rows, dataset, f"{a}_b{bias:g}")]
    if not runs:
        return []
    header = "| L | " + " | ".join(f"{ARCHS[r.rsplit('_', 1)[0]][1]}: ReLU / linear (ratio)" for r in runs) + " |"
    lines = [header, "|---|" + "---|" * len(runs)]
    depths = sorted(set.union(*(set(depths_of(rows, dataset, r)) for r in runs)) & set(SHOWN))
    for L in depths:
        cells = []
        for run in runs:
            r = pick(rows, dataset, run, L)
            if r is None:
                cells.append("")
                continue
            star = lambda act: "*" if r[f"limited_{act}"] else ""  # noqa: E731
            cell = (f"{g(r['kappa_relu'])}{star('relu')} / {g(r['kappa_linear'])}{star('linear')} "
                    f"({g(r['ratio_linear_over_relu'])}×)")
            if min(r["rank_relu"], r["rank_linear"]) < r["n"]:
                cell += f", rank {r['rank_relu']} / {r['rank_linear']}"
            cells.append(cell)
        lines.append(f"| {L} | " + " | ".join(cells) + " |")
    return lines


def finite_table(rows, dataset) -> list[str]:
    """Width 64 (median over batches and seeds, [min, max]) beside infinite width."""
    lines = []
    for arch in FINITE:
        run = f"{arch}_w64"
        widths = sorted({r["width"] for r in rows if (r["dataset"], r["run"]) == (dataset, run)})
        if not widths:
            continue
        width = widths[0]
        lines += [f"**{ARCHS[arch][1]}**, {width} channels against infinite width (bias-free)", "",
                  "| L | ReLU, width " + f"{width} | ReLU, ∞ | linear, width {width} | linear, ∞ |",
                  "|---|---|---|---|---|"]
        for L in depths_of(rows, dataset, run, width):
            f, inf = pick(rows, dataset, run, L, width), pick(rows, dataset, f"{arch}_b0", L)
            cells = []
            for act in ("relu", "linear"):
                cells.append(f"{g(f[f'kappa_{act}'])} [{g(f[f'kappa_{act}_min'])}, {g(f[f'kappa_{act}_max'])}]")
                cells.append(g(inf[f"kappa_{act}"]) if inf else "")
            lines.append(f"| {L} | " + " | ".join([cells[0], cells[1], cells[2], cells[3]]) + " |")
        lines.append("")
    return lines


def _span(values) -> str:
    lo, hi = g(min(values)), g(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def reading(rows, dataset) -> list[str]:
    """Sentences, each from the numbers of the tables (bias-free, infinite width)."""
    out = []
    fc, cnn = "fc_b0", "cnn_flatten_b0"
    top = max(depths_of(rows, dataset, cnn) or [0])
    if top == 0 or not depths_of(rows, dataset, fc):
        return out
    f0, f1, ft = (pick(rows, dataset, fc, L) for L in (0, 1, top))
    c0, c1, ct = (pick(rows, dataset, cnn, L) for L in (0, 1, top))
    drift = ct["kappa_linear"] / c0["kappa_linear"] - 1
    fc_lin = [r["kappa_linear"] for r in rows if (r["dataset"], r["run"], r["width"]) == (dataset, fc, "inf")]
    out.append(
        f"* **The linear nets.** The fully-connected linear net's κ_eff is {_span(fc_lin)} at each depth "
        f"0–{top} (Liu & Hui's invariance); the linear CNN's moves from {g(c0['kappa_linear'])} to "
        f"{g(ct['kappa_linear'])} at L = {top} ({drift:+.1%}): zero padding reweights the border at "
        "each layer (claim 22b; with circular padding it would not move, claim 22a).")
    out.append(
        f"* **ReLU soothes both.** At L = 1 ReLU divides κ_eff by {g(f1['ratio_linear_over_relu'])} in the "
        f"fully-connected net and by {g(c1['ratio_linear_over_relu'])} in the CNN; at L = {top} by "
        f"{g(ft['ratio_linear_over_relu'])} and {g(ct['ratio_linear_over_relu'])}.")
    word = "below" if ct["kappa_relu"] < ft["kappa_relu"] else "above"
    first = word1 = "below" if c1["kappa_relu"] < f1["kappa_relu"] else "above"
    cross = next((L for L in depths_of(rows, dataset, cnn)
                  if L > 0 and pick(rows, dataset, fc, L)
                  and (pick(rows, dataset, cnn, L)["kappa_relu"] < pick(rows, dataset, fc, L)["kappa_relu"])
                  != (first == "below")), None)
    out.append(
        f"* **Convolution changes how fast.** The ReLU CNN's κ_eff is {word1} the fully-connected "
        f"net's at L = 1 ({g(c1['kappa_relu'])} against {g(f1['kappa_relu'])}) and {word} it at "
        f"L = {top} ({g(ct['kappa_relu'])} against {g(ft['kappa_relu'])})"
        + (f"; the order changes first at L = {cross}." if cross is not None else "."))
    gap, fl8 = "cnn_gap_8_b0", "cnn_flatten_8_b0"
    gdepths = [L for L in depths_of(rows, dataset, gap) if L > 0]
    if gdepths:
        gr = [pick(rows, dataset, gap, L) for L in gdepths]
        fr = [pick(rows, dataset, fl8, L) for L in gdepths if pick(rows, dataset, fl8, L)]
        over = [a["kappa_relu"] / b["kappa_relu"] for a, b in zip(gr, fr)]
        out.append(
            f"* **Pooling is another matter.** On the 8 × 8 images the global-average-pooling CNN's κ_eff "
            f"is {_span([r['kappa_linear'] for r in gr])} for the linear net and "
            f"{_span([r['kappa_relu'] for r in gr])} for ReLU over L = {gdepths[0]}–{gdepths[-1]}: ReLU "
            f"divides it by {_span([r['ratio_linear_over_relu'] for r in gr])}, yet it stays "
            f"{_span(over)} times the flatten read-out's on the same images"
            + (" (some linear pooled kernels at float64's resolution, marked *)."
               if any(r["limited_linear"] for r in gr) else "."))
        h, w, channels = gr[0]["image_shape"]
        field = [min(channels * (2 * L + 1) ** 2, channels * h * w) for L in gdepths]
        ranks = [r["rank_linear"] for r in gr]
        if ranks == field:
            out.append(
                f"* The linear pooled kernel's rank is the receptive field's: {', '.join(map(str, ranks))} "
                f"at L = {', '.join(map(str, gdepths))}, i.e. C·min((2L + 1)², HW) with C = {channels}: "
                "the pooled output of a linear net sees the channel means of (2L + 1)² shifted images.")
    fin = [r for r in rows if r["dataset"] == dataset and r["width"] != "inf" and r["depth"] > 0]
    if fin:
        ratios = {"relu": [], "linear": []}
        for r in fin:
            inf = pick(rows, dataset, r["run"].replace("_w64", "_b0"), r["depth"])
            for act in ratios:
                if inf:
                    ratios[act].append(r[f"kappa_{act}"] / inf[f"kappa_{act}"])
        apart = sum(r["kappa_relu_max"] < r["kappa_linear_min"] for r in fin)
        if ratios["relu"]:
            out.append(
                f"* **Finite width.** At {fin[0]['width']} channels (3 seeds × 2 batches per cell) the "
                f"median κ_eff is {_span(ratios['relu'])} times the infinite-width value for ReLU and "
                f"{_span(ratios['linear'])} times for the linear nets over depths 1–10, both read-outs; "
                f"ReLU's largest κ_eff is below linear's smallest in {apart} of the {len(fin)} "
                "(read-out, depth) cells.")
    return out


def figure(rows, dataset, archs, path, title) -> str | None:
    """κ_eff against depth (ReLU solid, linear dashed), one colour per architecture, one panel
    per b_std."""
    from ntkcond import plot

    runs = [a for a in archs if depths_of(rows, dataset, f"{a}_b0")]
    if not runs:
        return None
    plt = plot.pyplot()
    with plot.style():
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
        for ax, bias in zip(axes, (0.0, 0.1)):
            depths = []
            for i, arch in enumerate(runs):
                sel = sorted((r for r in rows if (r["dataset"], r["run"], r["width"])
                              == (dataset, f"{arch}_b{bias:g}", "inf")), key=lambda r: r["depth"])
                L = [r["depth"] for r in sel]
                depths += L
                for act, ls in (("relu", "-o"), ("linear", "--")):
                    ax.plot(L, [r[f"kappa_{act}"] for r in sel], ls, color=f"C{i}", ms=3,
                            label=f"{ARCHS[arch][1]}, {act}")
            ax.set_yscale("log")
            top = max(depths)
            ax.set_xticks(range(0, top + 1, 2 if top > 12 else 1))  # depths 0–20 on a linear axis
            ax.set_xlabel("depth L (hidden layers; convolutions for a CNN)")
            n = rows[0]["n"]
            ax.set(ylabel="κ_eff of the infinite-width NTK",
                   title=f"{NAMES[dataset]} test, n = {n}, b_std = {bias:g}")
            ax.legend(fontsize=7)
        fig.suptitle(title)
        fig.tight_layout()
        return plot.save(fig, path)


def report(runs: str, datasets, data_dir: str, out_dir: str) -> None:
    from ntkcond._core.io import atomic_write
    from ntkcond.runs.tables import write_csv

    rows = summary(runs, datasets, data_dir)
    write_csv(os.path.join(out_dir, "cnn_summary.csv"), rows, FIELDS)
    batches = sorted({r["kernels"] for r in rows if r["width"] == "inf"})
    lines = ["# Does ReLU soothe the NTK's condition number of a convolutional net?", "",
             "[← README](../../README.md) · made by `python docs/results/cnn_study.py --part infinite`, "
             "`--part finite`, then `--report`; every row's `ntkcond cond-vs-depth` command is in "
             "[`cnn_summary.csv`](cnn_summary.csv), and the run directories are in `cnn_runs/`.", "",
             f"κ_eff = λmax / (smallest eigenvalue above the cutoff) of the NTK, median over "
             f"{'/'.join(str(b // 2) for b in batches)} kernels per cell (2 batches of n = 256 test "
             "images, shuffled with seed 0; × 3 seeds at finite width). Ratio = κ_eff(linear)/κ_eff(ReLU). "
             "Image sizes: the fully-connected and flatten nets ran on the whole images (32 × 32 × 3, "
             "28 × 28 × 1: a flatten read-out needs only each pixel's own variance); global average "
             "pooling needs every pixel pair ((HW)² per image pair and layer), so it ran on the images "
             "averaged over 4 × 4 blocks (8 × 8 × 3, 7 × 7 × 1, `--downsample 4`) beside flatten and "
             "fully-connected nets on the same small images. At that size n = 256 exceeds the input "
             "dimension (192, 49): the linear kernels have rank ≤ d (shown where below n), so a ratio "
             "there compares kernels of different rank, and ReLU's full rank is itself the main change.", ""]
    for dataset in datasets:
        name = NAMES[dataset]
        lines += [f"## {name}", "", *reading(rows, dataset), ""]
        for bias in (0.0, 0.1):
            lines += [f"### Whole images, b_std = {bias:g}", "",
                      *arch_table(rows, dataset, ("fc", "cnn_flatten"), bias), ""]
        for bias in (0.0, 0.1):
            lines += [f"### 8 × 8 images (4 × 4 block means), b_std = {bias:g}", "",
                      *arch_table(rows, dataset, ("fc_8", "cnn_flatten_8", "cnn_gap_8"), bias), ""]
        lines += ["### Finite width", "", *finite_table(rows, dataset)]
        for archs, stem, title in ((("fc", "cnn_flatten"), "whole", "whole images"),
                                   (("fc_8", "cnn_flatten_8", "cnn_gap_8"), "small", "8 × 8 block means")):
            path = figure(rows, dataset, archs, os.path.join(out_dir, f"cnn_{dataset}_{stem}.png"),
                          f"{name}: fully-connected against convolutional nets, {title}")
            if path:
                lines += [f"![{name}, {title}]({os.path.basename(path)})", ""]
    atomic_write(os.path.join(out_dir, "cnn.md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", choices=["infinite", "finite"], default=None)
    p.add_argument("--report", action="store_true", help="write cnn.md, cnn_summary.csv, figures")
    p.add_argument("--datasets", nargs="+", default=["cifar10", "mnist"], choices=sorted(NAMES))
    p.add_argument("--data-dir", default=os.path.join(HERE, "..", "..", "..", "shared", "data"))
    p.add_argument("--runs", default=os.path.join(HERE, "cnn_runs"))
    p.add_argument("--out", default=HERE, help="folder of cnn.md, the CSV and the figures")
    args = p.parse_args(argv)
    data_dir = os.path.abspath(args.data_dir)
    if args.part:
        run(args.part, args.datasets, data_dir, args.runs)
    if args.report:
        report(args.runs, args.datasets, data_dir, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
