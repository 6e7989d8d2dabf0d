"""The activation study (``ntkcond.runs.activation_study``): its weight-std rule, one run
directory per (activation, b_std, width group), the gathered table and figure, and a resumed
study that computes nothing new."""
import math
import os

import numpy as np
import pytest

pytest.importorskip("jax")

from ntkcond import datasets  # noqa: E402
from ntkcond.runs import activation_study as st  # noqa: E402


def test_weight_std_rule():
    assert st.study_w_std("relu", 0.0) is None and st.study_w_std("abs", 0.0) is None
    assert st.study_w_std("relu", 0.1) == math.sqrt(2.0)
    assert st.study_w_std("leaky:-0.5", 0.1) == pytest.approx(math.sqrt(1.6), rel=1e-15, abs=0)
    assert st.study_w_std("erf", 0.0) == st.study_w_std("tanh", 0.1) == st.SMOOTH_W_STD == 1.5
    assert st.run_name("leaky:-0.5", 0.1) == "leaky-0.5_b0.1"


def test_study_writes_runs_table_and_figure_and_resumes(tmp_path):
    ds = datasets.load("gaussian", n=24, dim=6, seed=0)
    kw = dict(out=str(tmp_path), batch=12, max_batches=2, depths=range(3), deep_depths=(5,),
              activations=("relu", "erf"), b_stds=(0.0, 0.1), widths=("inf", 32), seeds=2,
              progress=False)
    res = st.activation_study(ds, **kw)
    names = sorted(os.listdir(tmp_path))
    assert {"relu_b0_inf", "relu_b0_w32", "erf_b0_inf", "relu_b0.1_inf", "erf_b0.1_w32"} <= set(names)
    assert {"study.csv", "study.md", "study.png"} <= set(names)
    assert os.path.getsize(res.figure) > 10_000
    rows = st.read_rows(res.csv)
    inf = {(r["activation"], r["b_std"]): r for r in rows if r["width"] == "inf" and r["depth"] == 5}
    assert set(inf) == {("relu", 0.0), ("erf", 0.0), ("relu", 0.1), ("erf", 0.1)}  # deep depth
    assert all(r["count"] == 2 for r in rows if r["width"] == "inf")  # two batches
    finite = [r for r in rows if r["width"] == "32"]
    assert {(r["activation"], r["b_std"]) for r in finite} == set(inf)  # biases, erf too
    assert all(r["count"] == 4 for r in finite)  # 2 batches × 2 seeds
    assert all(r["w_std"] == "1.5" for r in rows if r["activation"] == "erf")
    md = open(res.markdown).read()
    assert "| relu | 0.1 | 1.41421 | ∞ |" in md and "κ_eff L=1" in md
    again = st.activation_study(ds, **kw)  # everything resumed: the same rows
    assert [r["kappa_eff_median"] for r in again.rows] == [r["kappa_eff_median"] for r in res.rows]


def test_bias_free_leaky_rows_equal_the_family_path_with_sqrt_c():
    """The study's bias-free leaky nets (w_std None) and s_w = √c at every layer: same κ."""
    from ntkcond.network import resolve_mlps
    from ntkcond.runs.depth import measure_infinite_batch

    x = np.random.default_rng(5).standard_normal((10, 5))
    for act in ("relu", "leaky:0.2"):
        a = measure_infinite_batch(x, np.arange(10), depths=[3],
                                   nets=resolve_mlps([act], where="t"))[0]
        w = st.study_w_std(act, 0.1)  # √c
        b = measure_infinite_batch(x, np.arange(10), depths=[3],
                                   nets=resolve_mlps([act], w, where="t"))[0]
        assert b["kappa_eff"] == pytest.approx(a["kappa_eff"], rel=1e-12, abs=0)


def test_custom_depths_and_seeds_shape_the_tables_figure_and_frame(tmp_path, capsys):
    """The issue's run, smaller: --depths 0-4 --deep-depths 8 --seeds 2 gives tables with
    exactly those depths, a note saying 2 seeds, a depth axis labelled 0 1 2 3 4 8, one
    progress label per part, and a study folder ntkcond.runs.load reads."""
    from ntkcond import command, plot

    out = tmp_path / "act"
    argv = ["activation-study", "--dataset", "digits", "--batch", "64", "--max-batches", "1",
            "--depths", "0-4", "--deep-depths", "8", "--activations", "relu",
            "--b-stds", "0", "--width", "inf", "16", "--seeds", "2", "--out", str(out)]
    assert command.main(argv) == 0
    captured = capsys.readouterr()
    md = (out / "study.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| activation"))
    assert [c.strip() for c in header.split("|") if "κ_eff" in c] == [
        f"κ_eff L={L}" for L in (0, 1, 2, 3, 4, 8)]
    assert "Medians over 1 batch of n = 64 (× 2 seeds at width 16)" in md
    assert "Blank: not computed (width 16 at depths 0–4 only)." in md
    assert "× 5 seeds" not in md and "L=10" not in md and "L=100" not in md
    # progress: one label per part, none read "cond_vs_depth:"
    labels = {line.split(":")[0] for line in captured.err.splitlines()}
    assert labels == {"activation_study 1/2 relu b_std=0 width ∞",
                      "activation_study 2/2 relu b_std=0 width 16"}
    pd = pytest.importorskip("pandas")
    import ntkcond.runs

    df = ntkcond.runs.load(out)
    assert sorted(df.depth.unique()) == [0, 1, 2, 3, 4, 8]
    assert sorted(df.seed.dropna().unique()) == [0, 1] and set(df.b_std) == {0.0}
    assert df.attrs["depths"] == [0, 1, 2, 3, 4] and df.attrs["deep_depths"] == [8]
    fig = plot.study(df)
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].xaxis.get_ticklabels() if t.get_text()]
    assert ticks == ["0", "1", "2", "3", "4", "8"]
    plot.pyplot().close(fig)


def test_study_in_memory(tmp_path):
    ds = datasets.load("gaussian", n=24, dim=6, seed=0)
    res = st.activation_study(ds, out=None, batch=12, max_batches=1, depths=[0, 1],
                              deep_depths=[3], activations=["relu"], b_stds=[0.0, 0.1],
                              widths=["inf"], progress=False)
    assert res.csv is None and res.figure is None and "| relu | 0.1 |" in res.table
    frame = res.frame()
    assert set(frame.b_std) == {0.0, 0.1} and len(frame) == 2 * 3
    assert not os.listdir(tmp_path)  # nothing written anywhere
