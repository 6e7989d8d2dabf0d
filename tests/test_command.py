"""The ``ntkcond`` command (ntkcond/command.py, ntkcond/__main__.py): one subcommand per
script, the same flags, lazy imports, and the data it needs from a wheel (no repository)."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, load_script
from ntkcond import command

#: The registry's commands and their scripts: read, not kept by hand.
SCRIPTS = {c.name: c.script for c in command.COMMANDS}


def _flags(text: str) -> set:
    return set(re.findall(r"--[a-z][a-z-]*", text))


def test_one_subcommand_per_script_and_module():
    assert sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "scripts")) if f.endswith(".py")) \
        == sorted(SCRIPTS.values())
    for c in command.COMMANDS:  # each record's module is the command: its NAME and functions
        module = c.module()
        assert module.NAME == c.script and module.main is c.main
        assert module.build_parser is c.build_parser
    # the shims are one file: each finds its command by its own name
    texts = {open(os.path.join(REPO, "scripts", f"{s}.py"), encoding="utf-8").read()
             for s in SCRIPTS.values()}
    assert len(texts) == 1


@pytest.mark.parametrize("sub", sorted(SCRIPTS))
def test_subcommand_has_the_scripts_flags_and_help(sub, capsys, monkeypatch):
    script = load_script(SCRIPTS[sub])
    positional = ["all"] if sub == "biasfree-dynamics" else []
    with pytest.raises(SystemExit) as exit_:
        script.main(["--help"])
    assert exit_.value.code == 0
    script_help = capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        command.main([sub, "--help"])
    assert exit_.value.code == 0
    sub_help = capsys.readouterr().out
    assert sub_help.startswith(f"usage: ntkcond {sub} ")
    assert _flags(sub_help) == _flags(script_help) and "--out" in _flags(sub_help)
    # the examples name the way it was invoked
    assert f"python scripts/{SCRIPTS[sub]}.py" in script_help and "ntkcond " not in script_help
    assert f"ntkcond {sub}" in sub_help and "python scripts/" not in sub_help
    # the script is a shim: it runs the very function the subcommand runs
    calls = []
    monkeypatch.setattr(command.command(sub).module(), "main",
                        lambda argv=None, prog=None: calls.append((argv, prog)) or 7)
    assert script.main(["--x"]) == 7 and calls == [(["--x"], None)]
    monkeypatch.undo()
    # a bad flag: one line naming the subcommand, exit 2
    with pytest.raises(SystemExit) as exit_:
        command.main([sub, *positional, "--no-such-flag"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"ntkcond {sub}: error:") and "--no-such-flag" in err


@pytest.mark.parametrize("sub", sorted(SCRIPTS))
def test_help_states_each_default_once_and_never_none(sub, capsys):
    import re

    with pytest.raises(SystemExit):
        command.main([sub, "--help"])
    text = capsys.readouterr().out
    assert "(default: None)" not in text and "(default: False)" not in text
    # each flag's help (from its line to the next flag) mentions its default at most once
    entries = re.split(r"\n  (?=-)", text.split("options:", 1)[1].split("examples:", 1)[0])
    twice = [e.split()[0] for e in entries if e.count("default") > 1
             and "the set's (default)" not in e]
    assert twice == [], twice


def test_top_level_help_version_and_unknown_command(capsys):
    assert command.main(["--help"]) == 0
    out = capsys.readouterr().out
    for sub in SCRIPTS:
        assert f"\n  {sub} " in out
    assert command.main([]) == 2 and "usage: ntkcond" in capsys.readouterr().err
    import ntkcond

    assert command.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"ntkcond {ntkcond.__version__}"
    assert command.main(["cond-vs-dept"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ntkcond: error: unknown command 'cond-vs-dept'")
    assert "cond-vs-depth" in err


def test_subcommand_runs_and_writes_its_run_directory(tmp_path, capsys):
    out = tmp_path / "run"
    assert command.main(["cond_vs_depth", "--depths", "0,1", "--batch", "64", "--max-batches", "1",
                         "--no-progress", "--out", str(out)]) == 0  # underscores work too
    assert "kappa_eff relu" in capsys.readouterr().out
    assert len([line for line in open(out / "records.jsonl") if line.strip()]) == 2 * 2
    assert command.main(["cond-vs-depth", "--depths", "0,1", "--batch", "64", "--max-batches", "1",
                         "--no-progress", "--out", str(out)]) == 2  # never replaced silently
    err = capsys.readouterr().err
    assert err.startswith("ntkcond cond-vs-depth: error:") and "--overwrite" in err


def test_python_m_ntkcond_from_outside_the_repository_is_lazy(tmp_path):
    # `ntkcond --help` imports no jax, no sweep and no paper; the default --out is relative to
    # the current directory
    env = dict(os.environ, PYTHONPATH=REPO)
    code = ("import sys, runpy; sys.argv = ['ntkcond', '--help']\n"
            "try:\n    runpy.run_module('ntkcond', run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'ntkcond'))\n"
            "print('LOADED', ' '.join(loaded))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True).stdout
    loaded = out.split("LOADED", 1)[1].split()
    assert "cond-vs-depth" in out
    assert not any(m == "jax" or m.startswith(("ntkcond.runs", "ntkcond.papers")) for m in loaded), loaded
    run = subprocess.run([sys.executable, "-m", "ntkcond", "cond-vs-depth", "--depths", "0",
                          "--batch", "32", "--max-batches", "1", "--no-progress"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "runs" / "cond_vs_depth" / "records.jsonl").exists()


def test_check_claims_data_dir_default_and_a_missing_folder(tmp_path, capsys, monkeypatch):
    # From a wheel (any cwd) there is no ../shared/data: the default is used only if it
    # exists; a --data-dir given but absent is an error, not a silent fallback to digits.
    monkeypatch.chdir(tmp_path)
    assert command.main(["check-claims", "--only", "4", "--no-progress", "--out", "claims"]) == 0
    config = json.loads((tmp_path / "claims" / "config.json").read_text())
    assert config["data_dir"] is None
    capsys.readouterr()
    assert command.main(["check-claims", "--only", "4", "--no-progress", "--out", "claims2",
                         "--data-dir", "no/such/folder"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no/such/folder" in err and "no such folder" in err


def test_named_data_set_through_tfds_mock_data(tmp_path, capsys):
    tfds = pytest.importorskip("tensorflow_datasets")
    out = tmp_path / "run"
    with tfds.testing.mock_data(num_examples=20):
        assert command.main(["cond-vs-depth", "--dataset", "mnist", "--split", "test",
                             "--data-dir", str(tmp_path / "tfds"), "--batch", "16", "--drop-last", "--depths", "0,1",
                             "--no-progress", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"] == "mnist" and config["split"] == "test"
    assert config["preprocessing"]["source"].startswith("tfds:mnist:test:")
    records = [json.loads(line) for line in open(out / "records.jsonl") if line.strip()]
    assert {r["n"] for r in records} == {16} and {r["dataset"] for r in records} == {"mnist"}


def test_named_data_set_missing_is_one_line_saying_how_to_get_it(tmp_path, capsys, monkeypatch):
    # without tensorflow-datasets (a wheel with the core only)
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)
    assert command.main(["cond-vs-depth", "--dataset", "mnist", "--no-progress",
                         "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ntkcond cond-vs-depth: error:")
    for part in ("mnist", "pip install 'ntkcond[tfds]'", "--data-dir", "mnist_train.npz", "--preset mnist"):
        assert part in err, (part, err)
    assert not (tmp_path / "run").exists()  # nothing written


def test_named_data_set_offline_is_one_line(tmp_path, capsys, monkeypatch):
    pytest.importorskip("tensorflow_datasets")
    from ntkcond import datasets

    monkeypatch.setattr(datasets, "_download_reachable", lambda timeout=3.0: False)
    assert command.main(["min-angle", "--dataset", "mnist", "--split", "test", "--data-dir",
                         str(tmp_path / "tfds"), "--no-progress", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ntkcond min-angle: error:")
    assert "no network" in err and "mnist_test.npz" in err and "--data-dir" in err


def test_ctrl_c_while_a_command_loads_is_130_and_one_line(monkeypatch, capsys):
    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(command.importlib, "import_module", interrupted)
    assert command.main(["cond-vs-depth"]) == 130
    err = capsys.readouterr().err
    assert err == "ntkcond: interrupted\n"


def test_ctrl_c_while_a_script_loads_its_command_is_one_line_and_130(capsys, monkeypatch):
    """Ctrl-C while the command's module (jax, numpy) is still importing: exit 130, one line."""
    script = load_script("cond_vs_depth")

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(command.importlib, "import_module", interrupted)
    assert script.main(["--help"]) == 130
    assert capsys.readouterr().err == "cond_vs_depth: interrupted\n"
