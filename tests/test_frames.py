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
