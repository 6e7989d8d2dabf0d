"""ntkcond.runs.provenance: every config.json records the versions, the command line and the
time of each invocation that wrote it (``open_run`` adds it; resumes append)."""
import datetime
import json
import platform

import pytest

import ntkcond
from ntkcond.runs import provenance as P
from ntkcond.runs.rundir import open_run

VERSIONS = ("ntkcond", "python", "jax", "jaxlib", "numpy", "scipy")


def test_an_entry_names_versions_call_and_time():
    entry = P.provenance("somewhere")
    assert entry["ntkcond"] == ntkcond.__version__
    assert entry["python"] == platform.python_version()
    import numpy
    import scipy

    assert entry["numpy"] == numpy.__version__ and entry["scipy"] == scipy.__version__
    assert entry["call"] == "somewhere" and entry["command"] is None
    when = datetime.datetime.fromisoformat(entry["time"])
    assert when.tzinfo is not None
    assert abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()) < 60
    with P.command_line(["ntkcond", "cond-vs-depth", "--depths", "0,1"]):
        assert P.provenance("x")["command"] == ["ntkcond", "cond-vs-depth", "--depths", "0,1"]
    assert P.current_command() is None


def test_open_run_records_each_invocation_and_resume_compares_without_it(tmp_path):
    config = {"a": 1}
    with open_run(str(tmp_path), config, key_fields=("k",)) as run:
        run.append({"k": 0})
    first = json.loads((tmp_path / "config.json").read_text())["provenance"]
    assert len(first) == 1 and set(VERSIONS) <= set(first[0])
    with P.command_line(["ntkcond", "x", "--resume"]):
        with open_run(str(tmp_path), config, key_fields=("k",), resume=True) as run:
            assert [r["k"] for r in run.records] == [0]
    both = json.loads((tmp_path / "config.json").read_text())["provenance"]
    assert both[0] == first[0] and both[1]["command"] == ["ntkcond", "x", "--resume"]
    with pytest.raises(ValueError, match="configuration differs in \\['a'\\]"):
        open_run(str(tmp_path), {"a": 2}, key_fields=("k",), resume=True)
    with pytest.raises(ValueError, match="expected a configuration without 'provenance'"):
        open_run(str(tmp_path / "other"), {"provenance": []}, key_fields=("k",))


COMMANDS = {  # the cheapest run of every command
    "cond-vs-depth": ["--batch", "32", "--max-batches", "1", "--depths", "0,1"],
    "cond-vs-batch": ["--sizes", "16,32", "--depths", "1"],
    "min-angle": ["--limit", "40", "--depths", "0,1"],
    "train-vs-depth": ["--batch", "8", "--depths", "1", "--width", "inf", "--max-steps", "5"],
    "check-claims": ["--only", "4"],
    "activation-study": ["--batch", "16", "--max-batches", "1", "--depths", "0,1",
                         "--deep-depths", "2", "--activations", "relu", "--b-stds", "0",
                         "--width", "inf"],
    "biasfree-dynamics": ["ntk", "--fast"],
    "train-track": ["--train", "16", "--probe", "8", "--width", "4", "--steps", "2",
                    "--snapshots", "2"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_records_versions_command_line_and_time(name, tmp_path, capsys):
    from ntkcond import command

    if name == "train-track":
        pytest.importorskip("optax")  # the train extra
    out = tmp_path / "run"
    argv = [name] + COMMANDS[name] + ["--out", str(out), "--no-progress"]
    assert command.main(argv) == 0, capsys.readouterr().err
    config = json.loads((out / "config.json").read_text())
    (entry,) = config["provenance"]
    assert set(VERSIONS) <= set(entry) and all(entry[k] for k in VERSIONS)
    assert entry["command"] == ["ntkcond"] + argv
    assert datetime.datetime.fromisoformat(entry["time"]).tzinfo is not None
    pd = pytest.importorskip("pandas")
    frame = ntkcond.runs.load(out)  # every command's folder reads back
    assert isinstance(frame, pd.DataFrame) and len(frame) > 0
    assert frame.attrs["provenance"] == config["provenance"]
