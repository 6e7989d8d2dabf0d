"""ntkcond.runs.load (ntkcond/runs/frames.py): a run directory's records as a DataFrame."""
import json
import math
import sys

import pytest

import ntkcond.runs
from conftest import load_script

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("frames") / "run"
    assert load_script("cond_vs_depth").main(["--batch", "64", "--max-batches", "2", "--depths", "0,1",
                                              "--no-progress", "--out", str(out)]) == 0
    return out


def _lines(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def test_records_as_rows_and_config_as_attrs(run_dir):
    df = ntkcond.runs.load(run_dir)
    records = _lines(run_dir / "records.jsonl")
    assert isinstance(df, pd.DataFrame) and len(df) == len(records) == 2 * 2 * 2
    assert df.attrs == json.loads((run_dir / "config.json").read_text())
    assert df.attrs["batch"] == 64 and df.attrs["data_fingerprint"].startswith("sha256:")
    for i, r in enumerate(records):  # row i is record i, every value as written
        for key, value in r.items():
            got = df[key].iloc[i]
            if value is None:
                assert got is None or math.isnan(got), (key, got)
            elif isinstance(value, list):
                assert list(got) == value
            else:
                assert got == value, (key, got, value)
    assert df["kappa_eff"].dtype == "float64" and df["depth"].dtype == "int64"
    # κ = ∞ (rank-deficient linear kernels of digits) is null in JSON: NaN in the frame
    assert df.loc[df.activation == "linear", "kappa"].isna().all()
    medians = df.groupby(["activation", "depth"])["kappa_eff"].median()
    assert medians.loc[("relu", 1)] < medians.loc[("linear", 1)]


def test_a_run_being_written_is_read_as_it_stands(run_dir, tmp_path):
    import shutil

    live = tmp_path / "live"
    shutil.copytree(run_dir, live)
    with open(live / "records.jsonl", "a") as f:
        f.write('{"batch_index": 1, "dep')  # an append in flight
    before = (live / "records.jsonl").read_bytes()
    assert len(ntkcond.runs.load(str(live))) == 8
    assert (live / "records.jsonl").read_bytes() == before  # a reader writes nothing


def test_empty_run_and_every_record_kept(tmp_path):
    (tmp_path / "config.json").write_text('{"a": 1}')
    (tmp_path / "records.jsonl").write_text("")
    df = ntkcond.runs.load(tmp_path)
    assert df.empty and df.attrs == {"a": 1}
    (tmp_path / "records.jsonl").write_text('{"x": 1, "w": "inf"}\n{"x": 2, "w": 512, "extra": [1]}\n')
    df = ntkcond.runs.load(tmp_path)
    assert list(df.columns) == ["x", "w", "extra"] and list(df.w) == ["inf", 512]
    assert df.extra.iloc[0] is None or math.isnan(df.extra.iloc[0])


@pytest.mark.parametrize("case, message", [
    ("missing", "no such folder"), ("file", ": a file"), ("no_config", "without config.json"),
    ("no_records", "without records.jsonl"), ("list_config", "to hold a JSON object, got list"),
    ("bad_json", "is not valid JSON"), ("bad_line", "line 1 is not a JSON record"),
])
def test_not_a_run_directory_is_a_clear_value_error(tmp_path, case, message):
    path = tmp_path / "run"
    if case == "file":
        path.write_text("x")
    elif case != "missing":
        path.mkdir()
        if case != "no_config":
            (path / "config.json").write_text({"list_config": "[1]", "bad_json": "{"}.get(case, "{}"))
        if case != "no_records":
            (path / "records.jsonl").write_text("nope\n{}\n" if case == "bad_line" else "")
    with pytest.raises(ValueError, match="ntkcond.runs.load: ") as info:
        ntkcond.runs.load(str(path))
    assert message in str(info.value)
    with pytest.raises(TypeError, match="ntkcond.runs.load: expected path as a str"):
        ntkcond.runs.load(3)


def test_without_pandas_the_error_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import raises ImportError
    with pytest.raises(ImportError, match=r"ntkcond.runs.load: needs pandas: pip install 'ntkcond\[pandas\]'"):
        ntkcond.runs.load(tmp_path)


# ------------------------------------------------------------------------------------------
# Results in memory: each run's result.frame() is what load reads from its run directory, and
# a run without a directory (out=None) gives the same records.
# ------------------------------------------------------------------------------------------

def _same_frame(result, path):
    """result.frame() equals load(path): values, dtypes, column order and attrs."""
    disk = ntkcond.runs.load(path)
    mine = result.frame()
    pd.testing.assert_frame_equal(mine, disk)
    assert mine.attrs == disk.attrs


def _same_without_timing(memory, disk):
    """An in-memory run against a run on disk: equal but for the seconds each record took and
    the provenance (another invocation, another time)."""
    a, b = memory.frame(), disk.frame()
    drop = [c for c in ("seconds",) if c in a]
    pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop))
    strip = lambda attrs: {k: v for k, v in attrs.items() if k != "provenance"}  # noqa: E731
    assert strip(a.attrs) == strip(b.attrs)
    assert a.attrs["provenance"][0]["command"] is None  # a library call, not a command


@pytest.fixture(scope="module")
def digits():
    from ntkcond import datasets

    return datasets.load("digits")


def test_cond_vs_depth_in_memory_and_on_disk(digits, tmp_path):
    from ntkcond.runs.cond_vs_depth import cond_vs_depth

    kw = dict(batch=64, max_batches=2, depths=[0, 2], widths=["inf", 16], seeds=2,
              progress=False, save_spectra=True)
    disk = cond_vs_depth(digits, out=str(tmp_path / "run"), **kw)
    _same_frame(disk, tmp_path / "run")
    memory = cond_vs_depth(digits, out=None, **kw)
    assert memory.summary_csv is None and memory.figure is None and memory.spectra_npz is None
    _same_without_timing(memory, disk)
    assert [r["kappa_eff_median"] for r in memory.rows] == [r["kappa_eff_median"] for r in disk.rows]
    assert set(memory.spectra) == set(disk.spectra)
    for key, lam in memory.spectra.items():
        assert (lam == disk.spectra[key]).all()  # the same eigendecomposition, bit for bit
    # ntkcond.plot draws the in-memory frame (no run directory involved)
    from ntkcond import plot

    fig = plot.depth_curves(memory.frame())
    assert [ax.get_xlabel() for ax in fig.axes[:2]] == ["depth L (hidden layers)"] * 2
    plot.pyplot().close(fig)


def test_resume_and_memory_refusals(digits, tmp_path):
    from ntkcond.runs.cond_vs_depth import cond_vs_depth

    with pytest.raises(ValueError, match="expected a run directory .out. to resume, got None"):
        cond_vs_depth(digits, out=None, batch=64, max_batches=1, depths=[0], resume=True,
                      progress=False)


def test_other_runs_in_memory_and_on_disk(digits, tmp_path):
    from ntkcond.runs.cond_vs_batch import cond_vs_batch
    from ntkcond.runs.min_angle import min_angle
    from ntkcond.runs.train_vs_depth import train_vs_depth

    import dataclasses

    small = dataclasses.replace(digits, x=digits.x[:96], y=digits.y[:96])
    runs = [
        (cond_vs_batch, dict(ds=small, sizes=[32, 96], depths=[1], progress=False)),
        (min_angle, dict(ds=small, depths=[0, 3], progress=False)),
        (train_vs_depth, dict(ds=digits, n=16, depths=[1], widths=["inf", 32], max_steps=40,
                              progress=False)),
    ]
    for fn, kw in runs:
        ds = kw.pop("ds")
        disk = fn(ds, out=str(tmp_path / fn.__name__), **kw)
        _same_frame(disk, tmp_path / fn.__name__)
        _same_without_timing(fn(ds, out=None, **kw), disk)
