"""ntkcond.plot: the figures of every run drawn from its records (a list of dicts or a
DataFrame), axes that follow what ran, and labels that never overlap."""
import math

import numpy as np
import pytest

from ntkcond import plot


def _records(depths, widths=("inf",), acts=("relu", "linear"), batches=2, seeds=(0, 1)):
    rng = np.random.default_rng(0)
    out = []
    for b in range(batches):
        for w in widths:
            for a in acts:
                for s in ([None] if w == "inf" else seeds):
                    for L in depths:
                        out.append({"batch_index": b, "n": 64, "width": w, "activation": a,
                                    "seed": s, "depth": L,
                                    "kappa_eff": float(10 ** (3 - 0.1 * L) * (1 + 0.1 * rng.random())),
                                    "min_grad_angle_deg": 5.0 + L, "rank": 64})
    return out


def _labels(axis):
    return [t.get_text() for t in axis.get_ticklabels() if t.get_text()]


def test_depth_axis_follows_the_depths_that_ran():
    plt = plot.pyplot()
    fig, ax = plt.subplots()
    plot.depth_axis(ax, [0, 1, 2, 3, 4, 8])  # the run: linear, a tick per depth
    fig.canvas.draw()
    assert _labels(ax.xaxis) == ["0", "1", "2", "3", "4", "8"]
    assert ax.get_xscale() == "linear"
    fig2, bx = plt.subplots()
    plot.depth_axis(bx, list(range(11)) + [15, 20, 30, 50, 70, 100])
    fig2.canvas.draw()
    labels = _labels(bx.xaxis)
    assert bx.get_xscale() == "symlog" and labels[-6:] == ["15", "20", "30", "50", "70", "100"]
    assert all(s.isdigit() for s in labels)  # plain integers, never 8×10⁰
    plt.close(fig), plt.close(fig2)


def test_log_axis_has_no_minor_labels():
    plt = plot.pyplot()
    fig, ax = plt.subplots()
    ax.plot([256, 512, 1024, 2048, 4096], [1, 2, 3, 4, 5])
    plot.log_axis(ax, "x", ticks=[256, 512, 1024, 2048, 4096])
    fig.canvas.draw()
    assert _labels(ax.xaxis) == ["256", "512", "1024", "2048", "4096"]
    assert not [t.get_text() for t in ax.xaxis.get_minorticklabels() if t.get_text()]
    plt.close(fig)


def test_depth_curves_from_records_and_from_a_frame(tmp_path):
    records = _records([0, 1, 3], widths=("inf", 32))
    fig = plot.depth_curves(records, title="t")
    angle, kappa = fig.axes[:2]
    assert kappa.get_yscale() == "log" and len(angle.lines) == 4  # 2 activations × 2 widths
    # the median line: batches (and seeds) pooled per depth
    line = next(l for l in kappa.lines if l.get_label() == "relu, width ∞")
    want = [np.median([r["kappa_eff"] for r in records if r["activation"] == "relu"
                       and r["width"] == "inf" and r["depth"] == L]) for L in (0, 1, 3)]
    assert list(line.get_ydata()) == pytest.approx(want, rel=1e-15, abs=0)
    assert "n = 64 per batch, 2 batches; 2 seeds at finite width" in fig._suptitle.get_text()
    plot.pyplot().close(fig)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame.from_records(records)
    path = plot.depth_curves(frame, str(tmp_path / "f.png"))
    assert path.endswith("f.png") and (tmp_path / "f.png").stat().st_size > 10_000


def test_records_of_a_frame_turns_nan_into_none():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame.from_records([{"kappa": None, "x": 1.0}, {"kappa": 2.0, "x": 2.0}])
    assert plot.records_of(frame) == [{"kappa": None, "x": 1.0}, {"kappa": 2.0, "x": 2.0}]


def test_batches_of_different_sizes_are_stated():
    records = _records([0, 1], batches=2)
    records[-1]["n"] = 40
    records[-2]["n"] = 40
    fig = plot.depth_curves(records)
    assert "n = 40–64 (batches differ in size)" in fig._suptitle.get_text()
    plot.pyplot().close(fig)


def test_study_columns_per_bias_and_curves():
    records = _records([0, 1, 2, 15], widths=("inf",), acts=("relu", "erf"))
    for r in records[: len(records) // 2]:
        r["b_std"] = 0.1
    fig = plot.study(records, notes={0.0: "s_w: erf 1.5", 0.1: "s_w: relu 1.414"})
    titles = [ax.get_title() for ax in fig.axes[:2]]
    assert titles[0].startswith("b_std = 0\n") or "b_std = 0" in "".join(titles)
    plot.pyplot().close(fig)
    tracked = [{"step": s, "width": w, "kappa_eff": float(w + s)} for s in range(3) for w in (8, 16)]
    fig = plot.curves(tracked, "step", "kappa_eff", by=("width",), logy=True)
    assert [l.get_label() for l in fig.axes[0].lines] == ["width = 8", "width = 16"]
    plot.pyplot().close(fig)


def test_import_ntkcond_does_not_load_the_plot_module():
    import subprocess
    import sys

    code = ("import sys, ntkcond; ntkcond.infinite_ntk; "
            "print('ntkcond.plot' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
