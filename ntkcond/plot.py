"""One plotting module: the figures of every run, drawn from its records in one style.

Every function takes the records of a run — a result's ``records`` (a list of dicts), or the
DataFrame of ``result.frame()`` / ``ntkcond.runs.load(path)`` — and returns the matplotlib
``Figure`` (``path=None``), or writes it atomically to ``path`` and returns the path:

  ``depth_curves``   κ_eff and the smallest gradient angle against depth (Liu & Hui's Fig. 2–3
                     layout; ``cond-vs-depth``), medians over batches and seeds with the min–max
                     band, colour by activation, line style by width;
  ``spectra``        the eigenvalue decay λᵢ/λmax of each kernel (``--save-spectra``);
  ``batch_curves``   κ_eff, angle and rank against the batch size n (``cond-vs-batch``);
  ``train_steps``    gradient-descent steps against depth beside the NTK's predictions
                     (``train-vs-depth``);
  ``study``          κ_eff and angle against depth per activation, without and with biases
                     (``activation-study``);
  ``curves``         any y (or several, one panel each) against any x per group (tracker
                     runs: loss, κ_eff, kernel distance, … against the training step;
                     ``train-track``).

The axes follow what ran: depth ticks are the depths of the records (``depth_axis``: linear
when they are few, symlog otherwise, labelled with plain integers), log axes carry only major
labels (``log_axis``), and titles say how many batches and seeds each line summarises.

``style()`` is the one style (also used by the claims' and the bias-free experiments'
figures); ``pyplot()`` gives matplotlib's pyplot with the Agg backend unless one was chosen.
matplotlib is imported on first use: ``import ntkcond`` does not load this module.
"""
from __future__ import annotations

import contextlib
import math
import sys

import numpy as np

from ._core.io import atomic_savefig

__all__ = ["STYLE", "ACTIVATION_COLOURS", "pyplot", "style", "save", "log_axis", "depth_axis",
           "records_of", "bands", "depth_curves", "spectra", "batch_curves", "train_steps",
           "study", "curves", "width_label"]

#: The one style: matplotlib rc parameters every figure is drawn under.
STYLE = {
    "figure.dpi": 110, "savefig.dpi": 120, "font.size": 9, "axes.titlesize": 10,
    "axes.labelsize": 9, "xtick.labelsize": 8, "ytick.labelsize": 8, "legend.fontsize": 8,
    "legend.title_fontsize": 8, "axes.grid": True, "grid.alpha": 0.3, "lines.linewidth": 1.4,
    "lines.markersize": 3.5, "figure.constrained_layout.use": False,
}
#: ReLU red, linear blue; other activations take the next colours of the cycle.
ACTIVATION_COLOURS = {"relu": "C3", "linear": "C0"}
FINITE_WIDTH_STYLES = ("--", ":", "-.")


def pyplot():
    """matplotlib.pyplot (Agg backend unless one is already chosen)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


@contextlib.contextmanager
def style():
    """Within the block, figures are drawn in ``STYLE``."""
    import matplotlib

    with matplotlib.rc_context(STYLE):
        yield


def save(fig, path: str, *, metadata: dict | None = None) -> str:
    """Write ``fig`` to ``path`` atomically (PNG; ``metadata`` as its Description, e.g. the
    run's configuration), close it, return ``path``."""
    atomic_savefig(fig, path, dpi=STYLE["savefig.dpi"], bbox_inches="tight",
                   metadata={"Description": str(metadata)} if metadata else None)
    pyplot().close(fig)
    return path


def _done(fig, path, metadata):
    return fig if path is None else save(fig, path, metadata=metadata)


def log_axis(ax, axis: str = "y", ticks=None) -> None:
    """A log axis whose labels never overlap and are never missing: ``ticks`` (e.g. the widths
    of a sweep) with plain labels; else, from the data's span once drawn: powers of ten over
    more than two decades, 1, 2, 5 × 10ᵏ over one to two, 1–9 × 10ᵏ (every other labelled)
    below one; no minor labels. Call it after the data are plotted."""
    import matplotlib.ticker as mt

    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    plain = mt.FuncFormatter(_plain)
    if ticks is not None:
        target.set_major_locator(mt.FixedLocator(sorted(set(ticks))))
        target.set_major_formatter(plain)
    else:
        lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
        decades = math.log10(hi / lo) if lo > 0 and hi > lo else 3.0
        if decades > 2.0:
            target.set_major_locator(mt.LogLocator(base=10, numticks=8))
        elif decades > 1.0:
            target.set_major_locator(mt.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            target.set_major_formatter(plain)
        else:
            target.set_major_locator(mt.LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0, 7.0)))
            target.set_major_formatter(plain)
    target.set_minor_formatter(mt.NullFormatter())


def _plain(value, _pos=None) -> str:
    """A tick label: whole numbers below 10⁶ as integers (1024), others to 3 digits (0.02)."""
    if value == int(value) and abs(value) < 1e6:
        return f"{int(value)}"
    return f"{value:.3g}"


def depth_axis(ax, depths, label: str = "depth L (hidden layers)") -> None:
    """The depth axis of the depths that ran: linear with a tick at each depth when the largest
    is at most 12, else symlog (linear to 10, log beyond) with ticks at the depths (at most 12
    in the linear part, every depth beyond), labelled with plain integers."""
    import matplotlib.ticker as mt

    depths = sorted({int(d) for d in depths})
    top = depths[-1]
    if top <= 12:
        ax.set_xlim(depths[0] - 0.3, top + 0.3)
        ticks = depths
    else:
        ax.set_xscale("symlog", linthresh=10, linscale=1.5)
        ax.set_xlim(depths[0], top * 1.05)
        low = [d for d in depths if d <= 10]
        step = max(1, math.ceil(len(low) / 6))
        ticks = low[::step] + [d for d in depths if d > 10]
        label += "; linear to 10, log beyond"
    ax.xaxis.set_major_locator(mt.FixedLocator(ticks))
    ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:.0f}"))
    ax.xaxis.set_minor_locator(mt.NullLocator())
    ax.set_xlabel(label)


def records_of(data) -> list:
    """The records as a list of dicts: a list/tuple of dicts as it is, a pandas DataFrame row
    by row (its NaN, a JSON null read back, as None)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.DataFrame):
        out = []
        for row in data.to_dict("records"):
            out.append({k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()})
        return out
    return [dict(r) for r in data]


def width_label(width) -> str:
    return "∞" if str(width) == "inf" else str(width)


def _width_key(width):
    return math.inf if str(width) == "inf" else int(width)


def _activation_order(acts) -> list:
    return sorted(set(acts), key=lambda a: (a != "relu", a != "linear", a))


def _colours(acts) -> dict:
    return {a: ACTIVATION_COLOURS.get(a, f"C{i + 4}") for i, a in enumerate(acts)}


def bands(records, keys, field: str) -> dict:
    """{group: (x values, medians, minima, maxima, counts)} of ``field`` over the records of
    each group (the values of ``keys[:-1]``), against ``keys[-1]`` (e.g. depth), ascending; a
    None value (a JSON null) is left out."""
    groups: dict = {}
    for r in records:
        value = r.get(field)
        if value is None:
            continue
        key = tuple(r.get(k) for k in keys[:-1])
        groups.setdefault(key, {}).setdefault(r[keys[-1]], []).append(float(value))
    out = {}
    for key, by_x in groups.items():
        xs = sorted(by_x)
        vals = [np.asarray(by_x[x]) for x in xs]
        out[key] = (xs, [float(np.median(v)) for v in vals], [float(v.min()) for v in vals],
                    [float(v.max()) for v in vals], [v.size for v in vals])
    return out


def _summary_note(records) -> str:
    """'n = 512 per batch, 2 batches; 5 seeds at finite width' of depth records."""
    sizes = sorted({int(r["n"]) for r in records if r.get("n") is not None})
    batches = len({r.get("batch_index") for r in records})
    seeds = sorted({r["seed"] for r in records if r.get("seed") is not None})
    n = (f"n = {sizes[0]}" if len(sizes) == 1 else
         f"n = {sizes[0]}–{sizes[-1]} (batches differ in size)") if sizes else ""
    parts = [f"{n} per batch, {batches} batch{'es' if batches != 1 else ''}" if n else ""]
    if seeds:
        parts.append(f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} at finite width")
    return "; ".join(p for p in parts if p)


def depth_curves(records, path: str | None = None, *, title: str = "",
                 metadata: dict | None = None):
    """Smallest gradient angle (left) and κ_eff (right, log) against depth: the median over
    batches and seeds per (activation, width), its min–max band shaded; colour by activation
    (ReLU red, linear blue), line style by width (∞ solid, finite dashed, dotted, dash-dot)."""
    records = records_of(records)
    plt = pyplot()
    with style():
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
        widths = sorted({r["width"] for r in records}, key=_width_key)
        finite = [w for w in widths if str(w) != "inf"]
        styles = {**{w: FINITE_WIDTH_STYLES[i % 3] for i, w in enumerate(finite)}, "inf": "-"}
        acts = _activation_order(r["activation"] for r in records)
        colours = _colours(acts)
        for ax, field in zip(axes, ("min_grad_angle_deg", "kappa_eff")):
            for (width, act), (xs, med, lo, hi, _) in sorted(
                    bands(records, ("width", "activation", "depth"), field).items(),
                    key=lambda kv: (_width_key(kv[0][0]), acts.index(kv[0][1]))):
                ax.plot(xs, med, styles[str(width)] if str(width) == "inf" else styles[width],
                        color=colours[act], marker="o", label=f"{act}, width {width_label(width)}")
                ax.fill_between(xs, lo, hi, color=colours[act], alpha=0.12, lw=0)
        depths = sorted({r["depth"] for r in records})
        for ax in axes:
            depth_axis(ax, depths)
        axes[0].set_ylabel("smallest gradient angle (degrees)")
        axes[1].set_ylabel("effective condition number κ_eff")
        log_axis(axes[1], "y")
        axes[0].legend(title="line: median; band: min–max", loc="best")
        note = _summary_note(records)
        fig.suptitle(f"{title}\n{note}" if title and note else title or note)
        fig.tight_layout()
    return _done(fig, path, metadata)


def spectra(arrays: dict, records, path: str | None = None, *, key, title: str = "",
            metadata: dict | None = None):
    """Eigenvalue decay λᵢ/λmax against i/n (descending, log y) of the first batch's kernels:
    one panel per width (the net of the lowest seed at finite width), colour by depth, ReLU
    solid, linear dashed, others dotted; eigenvalues ≤ 0 left out; grey: κ_eff's cutoff n·eps.
    ``arrays`` maps ``key(record)`` to the record's (n,) eigenvalues."""
    import matplotlib

    records = records_of(records)
    plt = pyplot()
    first = min(r["batch_index"] for r in records)
    seeds = {}
    for r in records:
        if r["seed"] is not None:
            seeds[r["width"]] = min(seeds.get(r["width"], r["seed"]), r["seed"])
    sel = [r for r in records if r["batch_index"] == first and r["seed"] == seeds.get(r["width"])]
    widths = sorted({r["width"] for r in sel}, key=_width_key)
    depths = sorted({r["depth"] for r in sel})
    with style():
        cmap = plt.get_cmap("viridis")
        norm = matplotlib.colors.Normalize(vmin=depths[0], vmax=max(depths[-1], depths[0] + 1))
        line = {"relu": "-", "linear": "--"}
        fig, axes = plt.subplots(1, len(widths), figsize=(5.5 * len(widths) + 1, 4.4),
                                 squeeze=False)
        for ax, width in zip(axes[0], widths):
            acts = {}
            for r in sorted((r for r in sel if r["width"] == width),
                            key=lambda r: (r["depth"], r["activation"])):
                lam = np.sort(np.asarray(arrays[key(r)]))[::-1]
                i = np.arange(1, lam.size + 1) / lam.size
                keep = lam > 0
                acts[r["activation"]] = ls = line.get(r["activation"], ":")
                ax.plot(i[keep], lam[keep] / lam[0], ls, color=cmap(norm(r["depth"])), lw=1.1)
            n = max(np.asarray(arrays[key(r)]).size for r in sel)
            ax.axhline(n * np.finfo(np.float64).eps, color="grey", lw=0.8, ls="-.")
            log_axis(ax, "y")
            ax.set(xlabel="i / n (eigenvalues in descending order)", ylabel="λᵢ / λmax",
                   title=f"width {width_label(width)}"
                   + ("" if str(width) == "inf" else f" (seed {seeds[width]})"))
            for act, ls in acts.items():
                ax.plot([], [], ls, color="k", label=act)
            ax.legend(title="activation")
        bar = fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap),
                           ax=list(axes[0]), fraction=0.03, pad=0.02)
        bar.set_label("depth L")
        head = f"batch {first}; grey: κ_eff's cutoff n·eps"
        fig.suptitle(f"{title}\n{head}" if title else head)
    return _done(fig, path, metadata)


def batch_curves(records, path: str | None = None, *, d: int, title: str = "",
                 metadata: dict | None = None):
    """κ_eff, smallest gradient angle and numerical rank against the batch size n (log x), one
    line per (activation, depth) — a bias-free fully-connected linear net's once (the same
    at every depth; a linear CNN's is not);
    the dotted line marks n = d."""
    records = records_of(records)
    plt = pyplot()
    series = []
    for r in records:
        key = (r["activation"], r["depth"])
        if key not in series:
            series.append(key)
    ns = sorted({r["n"] for r in records})
    with style():
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
        seen_linear = False
        for a, L in series:
            plain_linear = a == "linear" and not any(r.get("b_std") or r.get("arch") == "cnn"
                                                     for r in records)
            if plain_linear and seen_linear:
                continue
            seen_linear = seen_linear or plain_linear
            rs = sorted((r for r in records if r["activation"] == a and r["depth"] == L),
                        key=lambda r: r["n"])
            label = "linear (any depth)" if plain_linear else f"{a}, L = {L}"
            kw = dict(marker="o", ls="--" if a == "linear" else "-")
            x = [r["n"] for r in rs]
            axes[0].plot(x, [r["kappa_eff"] for r in rs], label=label, **kw)
            axes[2].plot(x, [r["rank"] for r in rs], label=label, **kw)
            if rs[0].get("min_grad_angle_deg") is not None:
                axes[1].plot(x, [r["min_grad_angle_deg"] for r in rs], label=label, **kw)
        axes[2].plot(ns, ns, color="grey", lw=0.8, label="rank = n")
        for ax in axes:
            ax.axvline(d, color="grey", lw=0.8, ls=":")
            log_axis(ax, "x", ticks=ns)
            ax.set_xlabel("batch size n")
        axes[0].text(d, 0.02, " n = d", color="grey", transform=axes[0].get_xaxis_transform())
        axes[0].set_ylabel("effective condition number κ_eff")
        log_axis(axes[0], "y")
        axes[1].set_ylabel("smallest gradient angle (degrees)")
        axes[2].set_ylabel("numerical rank (eigenvalues > n·eps·λmax)")
        log_axis(axes[2], "y")
        axes[0].legend()
        axes[2].legend()
        fig.suptitle(title)
        fig.tight_layout()
    return _done(fig, path, metadata)


def train_steps(records, path: str | None = None, *, title: str = "",
                metadata: dict | None = None):
    """Left: steps to the target against depth (log y), colour by activation; measured (solid,
    circles; not reached: a cross at the cap, with the loss/loss₀ it got to), predicted by Θ₀
    (dashed, squares) and by the infinite-width NTK (dotted, diamonds; ∞: a triangle at the
    top). Right: κ_eff of Θ₀ (dashed) and of the infinite-width NTK (dotted), and κ_target of
    Θ₀ (thin solid)."""
    records = records_of(records)
    plt = pyplot()
    nan = float("nan")
    with style():
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 6.4))
        acts = _activation_order(r["activation"] for r in records)
        colours = _colours(acts)
        widths = sorted({r["width"] for r in records}, key=_width_key)
        caps = {r["max_steps"] for r in records}
        top = max([max(caps)] + [r["predicted_steps"] for r in records
                                 if r["predicted_steps"]]) * 3
        for act in acts:
            colour = colours[act]
            for w in widths:
                sel = sorted((r for r in records if r["activation"] == act and r["width"] == w),
                             key=lambda r: r["depth"])
                if not sel:
                    continue
                L = [r["depth"] for r in sel]
                pred = [r["predicted_steps"] if r["predicted_finite"] else nan for r in sel]
                ls, mark = (":", "d") if str(w) == "inf" else ("--", "s")
                what = "∞-width NTK" if str(w) == "inf" else f"Θ₀ (width {w})"
                ax.plot(L, pred, ls, color=colour, marker=mark, ms=4, mfc="none",
                        label=f"{act}: predicted by {what}")
                inf_L = [r["depth"] for r in sel if not r["predicted_finite"]]
                if inf_L:
                    ax.plot(inf_L, [top] * len(inf_L), "^", color=colour, ms=7, mfc="none",
                            label=f"{act}: predicted ∞ ({what})")
                bx.plot(L, [nan if r["kappa_eff"] is None else r["kappa_eff"] for r in sel], ls,
                        color=colour, marker=mark, ms=4, mfc="none", label=f"{act}: κ_eff, {what}")
                if str(w) == "inf":
                    continue
                bx.plot(L, [nan if r["kappa_target"] is None else r["kappa_target"] for r in sel],
                        "-", color=colour, lw=0.8, marker="+", label=f"{act}: κ_target, {what}")
                ax.plot(L, [r["steps"] if r["reached"] else nan for r in sel], "-",
                        color=colour, marker="o", ms=5, label=f"{act}: measured, width {w}")
                capped = [r for r in sel if not r["reached"] and not r.get("dead")]
                if capped:
                    ax.plot([r["depth"] for r in capped], [r["max_steps"] for r in capped], "x",
                            color=colour, ms=9, mew=2,
                            label=f"{act}: not reached by the cap (width {w})")
                    for r in capped:  # how far it got: loss/loss₀ at the cap
                        ax.annotate(f"{r['rel_loss_at_stop']:.2g}", (r["depth"], r["max_steps"]),
                                    textcoords="offset points", xytext=(4, -11), fontsize=7,
                                    color=colour)
        for cap in caps:
            ax.axhline(cap, color="grey", lw=0.8, ls="-.")
            ax.text(min(r["depth"] for r in records), cap, f" cap {cap}", color="grey",
                    va="bottom", fontsize=8)
        ax.set_ylabel("gradient-descent steps to the target")
        bx.set_ylabel("condition number (NTK)")
        depths = sorted({r["depth"] for r in records})
        for a in (ax, bx):
            log_axis(a, "y")
            depth_axis(a, depths)
            a.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
        fig.suptitle(title)
        fig.tight_layout()
    return _done(fig, path, metadata)


def study(records, path: str | None = None, *, title: str = "", metadata: dict | None = None,
          notes: dict | None = None):
    """2 × n panels: κ_eff (top, log y) and the smallest gradient angle (bottom) against depth,
    one column per bias std (``b_std``, 0 when absent), colour by activation; infinite width
    solid, finite widths dashed with the min–max band over batches and seeds. The depth axis
    is ``depth_axis`` of the depths that ran; ``notes`` ({b_std: text}) go under the columns'
    titles (e.g. the weight stds)."""
    records = records_of(records)
    plt = pyplot()
    for r in records:
        r.setdefault("b_std", 0.0)
    b_stds = sorted({float(r["b_std"] or 0.0) for r in records})
    acts = list(dict.fromkeys(r["activation"] for r in records))
    colours = {a: f"C{i}" for i, a in enumerate(acts)}
    widths = sorted({r["width"] for r in records}, key=_width_key)
    finite = [w for w in widths if str(w) != "inf"]
    with style():
        fig, axes = plt.subplots(2, len(b_stds), figsize=(6.5 * len(b_stds), 8.5),
                                 squeeze=False)
        for col, b in enumerate(b_stds):
            sel = [r for r in records if float(r["b_std"] or 0.0) == b]
            for row, field in enumerate(("kappa_eff", "min_grad_angle_deg")):
                ax = axes[row, col]
                for (act, width), (xs, med, lo, hi, _) in bands(
                        sel, ("activation", "width", "depth"), field).items():
                    inf = str(width) == "inf"
                    ax.plot(xs, med, "-" if inf else "--", color=colours[act],
                            marker="o" if inf else None, ms=2.5, lw=1.3,
                            label=act + ("" if inf else f", width {width}"))
                    if not inf:
                        ax.fill_between(xs, lo, hi, color=colours[act], alpha=0.12, lw=0)
                depth_axis(ax, [r["depth"] for r in records])
            log_axis(axes[0, col], "y")
            axes[0, col].set(ylabel="κ_eff (median)",
                             title=f"b_std = {b:g}" + (f"\n{notes[b]}" if notes and b in notes
                                                        else ""))
            axes[1, col].set_ylabel("smallest gradient angle (degrees, median)")
        handles = {}
        for ax in axes[0]:  # one legend for all panels, below them
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        ncol = min(7, max(1, len(handles)))
        fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
                   ncol=ncol, frameon=False,
                   title="solid: width ∞" + (f"; dashed: width {', '.join(map(str, finite))} "
                                             "(band: min–max over batches and seeds)"
                                             if finite else ""))
        summary = _summary_note(records)
        fig.suptitle(f"{title}\n{summary}" if title and summary else title or summary)
        rows = math.ceil(len(handles) / ncol)
        fig.tight_layout(rect=(0, 0.04 + 0.025 * rows, 1, 1))
    return _done(fig, path, metadata)


def curves(records, x: str, y, *, by=(), path: str | None = None, logy=False, labels=None,
           xscale: str = "linear", title: str = "", metadata: dict | None = None):
    """``y`` against ``x`` for each group of the records by the fields ``by`` (e.g. a tracker
    run's κ_eff against the training step per width): the median over the other records of a
    group at each x, the min–max band shaded.

    ``y``: a field, or a sequence of fields drawn side by side, one panel each (a tracker run:
    loss, κ_eff, kernel distance, alignment, effective rank). ``logy``: True (every panel) or
    the fields drawn on a log axis (``log_axis``; linear where a value is ≤ 0). ``labels``:
    {field: axis label} (default: the field's name). ``xscale``: "linear", or "symlog" (linear
    below 1, log above: training steps with step 0 among them)."""
    if xscale not in ("linear", "symlog"):
        raise ValueError(f"ntkcond.plot.curves: expected xscale 'linear' or 'symlog', got "
                         f"{xscale!r}")
    import matplotlib.ticker as mt

    records = records_of(records)
    fields = [y] if isinstance(y, str) else list(y)
    labels = labels or {}
    logs = set(fields) if logy is True else set(logy or ())
    plt = pyplot()
    by = tuple(by)
    with style():
        fig, axes = plt.subplots(1, len(fields), figsize=(max(6.5, 3.8 * len(fields)), 4.2),
                                 squeeze=False)
        for ax, field in zip(axes[0], fields):
            groups = bands(records, by + (x,), field)
            for i, (key, (xs, med, lo, hi, _)) in enumerate(groups.items()):
                label = ", ".join(f"{k} = {v}" for k, v in zip(by, key)) or field
                ax.plot(xs, med, color=f"C{i}", marker="o", label=label)
                ax.fill_between(xs, lo, hi, color=f"C{i}", alpha=0.12, lw=0)
            if xscale == "symlog":  # plain labels: 0, 1, 10, 100
                ax.set_xscale("symlog", linthresh=1)
                top = max((max(g[0]) for g in groups.values()), default=1)
                ax.set_xlim(0, max(1, top) * 1.3)
                ax.xaxis.set_major_formatter(mt.FuncFormatter(_plain))
            if field in logs and all(v > 0 for g in groups.values() for v in g[2]):
                log_axis(ax, "y")
            ax.set(xlabel=x, ylabel=labels.get(field, field))
            if by:
                ax.legend()
        if len(fields) == 1:
            axes[0, 0].set_title(title)
        elif title:
            fig.suptitle(title)
        fig.tight_layout()
    return _done(fig, path, metadata)
