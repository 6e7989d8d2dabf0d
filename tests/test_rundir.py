"""Tests of ntkcond.runs.rundir and of the run-directory policy of every script that writes one:
locking against a second process, data fingerprints, torn tails, no silent overwrite, and
malformed state, each ending in one clear line."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import REPO, load_script
from ntkcond.runs.rundir import RunLockedError, data_fingerprint, open_run, read_records

KEYS = ("i",)


def _open(path, config=None, **kw):
    return open_run(str(path), config or {"a": 1}, key_fields=KEYS, **kw)


def _lines(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def test_fresh_resume_and_refusals(tmp_path):
    with _open(tmp_path) as run:
        run.append({"i": 0, "v": 1.5})
        run.append({"i": 1, "v": 2.5})
        with pytest.raises(ValueError, match="already in"):
            run.append({"i": 1, "v": 9})
    with pytest.raises(ValueError, match="pass --resume to continue it or --overwrite"):
        _open(tmp_path)
    with _open(tmp_path, resume=True) as run:
        assert run.records == [{"i": 0, "v": 1.5}, {"i": 1, "v": 2.5}] and run.key({"i": 1}) in run.done
    with pytest.raises(ValueError, match=r"configuration differs in \['a'\]"):
        _open(tmp_path, {"a": 2}, resume=True)
    with pytest.raises(ValueError, match="at most one of --resume and --overwrite"):
        _open(tmp_path, resume=True, overwrite=True)
    with _open(tmp_path, {"a": 2}, overwrite=True) as run:
        assert run.records == [] and (tmp_path / "records.jsonl").read_text() == ""


def test_changed_data_is_named(tmp_path):
    x = np.arange(6.0).reshape(3, 2)
    with _open(tmp_path, {"data_fingerprint": data_fingerprint(x)}) as run:
        run.append({"i": 0})
    y = x.copy()
    y[2, 1] += 1e-12  # the same file name, different contents
    assert data_fingerprint(y) != data_fingerprint(x)
    assert data_fingerprint(x.astype(np.float32)) != data_fingerprint(x)
    with pytest.raises(ValueError, match="the data differ from those the run was started with"):
        _open(tmp_path, {"data_fingerprint": data_fingerprint(y)}, resume=True)


def test_overwrite_empties_records_before_the_new_config(tmp_path, monkeypatch):
    with _open(tmp_path) as run:
        run.append({"i": 0})
    from ntkcond.runs import rundir

    writes, real = [], rundir.atomic_write

    def record(path, data):
        writes.append(os.path.basename(path))
        if os.path.basename(path) == "config.json":
            raise OSError("disk full")  # a crash between the two writes
        real(path, data)

    monkeypatch.setattr(rundir, "atomic_write", record)
    with pytest.raises(OSError):
        _open(tmp_path, {"a": 2}, overwrite=True)
    assert writes == ["records.jsonl", "config.json"]
    # The old config with no records: resuming it recomputes, never mixes.
    monkeypatch.setattr(rundir, "atomic_write", real)
    with _open(tmp_path, resume=True) as run:
        assert run.records == []


@pytest.mark.parametrize(
    "text, kept, repaired",
    [
        ('{"i": 0}\n{"i": 1}\n', [0, 1], False),
        ('{"i": 0}\n{"i": 1}', [0, 1], True),      # a complete last record lost its newline
        ('{"i": 0}\n{"i": 1, "v"', [0], True),     # torn by a kill mid-write
    ],
)
def test_torn_tail_is_repaired_only_when_provable(tmp_path, text, kept, repaired):
    path = tmp_path / "records.jsonl"
    path.write_text(text)
    assert [r["i"] for r in read_records(str(path), KEYS)] == kept
    after = path.read_text()
    assert after.endswith("\n") and (after != text) == repaired
    with open(path, "a") as f:  # the next append starts on a clean line
        f.write('{"i": 7}\n')
    assert [r["i"] for r in read_records(str(path), KEYS)] == kept + [7]


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"i": 0}\ngarbage\n{"i": 2}\n', "line 2 is not a JSON record"),
        ('{"i": 0}\ngarbage\n{"i": 2}', "line 2 is not a JSON record"),  # not the last line
        ('{"i": 0}\n[1, 2]\n', "line 2: expected a JSON object, got list"),
        ('{"i": 0}\n{"v": 1}\n', r"line 2: record lacks the key fields \['i'\]"),
    ],
)
def test_damage_other_than_a_torn_tail_is_refused_with_the_line(tmp_path, text, message):
    path = tmp_path / "records.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_records(str(path), KEYS, "f")
    assert path.read_text() == text  # nothing rewritten


def test_malformed_state_is_one_clear_error(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="config.json to hold a JSON object, got list"):
        _open(tmp_path / "a", resume=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config.json").write_text('{"a": 1}')
    (tmp_path / "b" / "records.jsonl").mkdir()
    with pytest.raises(ValueError, match="records.jsonl to be a file, got a directory"):
        _open(tmp_path / "b", resume=True)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "records.jsonl").write_text('{"i": 0}\n')
    with pytest.raises(ValueError, match="config.json is missing"):
        _open(tmp_path / "c", resume=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="expected --out to be a directory, got the file"):
        _open(tmp_path / "file")
    with pytest.raises(ValueError, match="not valid JSON"):
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "config.json").write_text("{")
        _open(tmp_path / "d", resume=True)


def test_a_second_process_is_refused_while_the_first_holds_the_directory(tmp_path):
    holder = textwrap.dedent(f"""
        import sys, time
        from ntkcond.runs.rundir import open_run
        with open_run({str(tmp_path)!r}, {{"a": 1}}, key_fields=("i",)) as run:
            print("locked", flush=True)
            sys.stdin.readline()
    """)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match=r"is in use by another run \(pid \d+"):
            _open(tmp_path, resume=True)
    finally:
        proc.communicate("\n", timeout=60)
    with _open(tmp_path, resume=True) as run:  # released when the holder ended
        assert run.records == []


def test_two_real_script_runs_into_one_directory(tmp_path):
    """Two cond_vs_depth processes started together: one runs, the other exits 2 at once."""
    cmd = [sys.executable, os.path.join(REPO, "scripts", "cond_vs_depth.py"), "--batch", "200",
           "--max-batches", "3", "--depths", "0-10", "--no-progress", "--out", str(tmp_path)]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    b = subprocess.Popen(cmd + ["--resume"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    (_, err_a), (_, err_b) = a.communicate(timeout=300), b.communicate(timeout=300)
    codes = sorted([a.returncode, b.returncode])
    errs = [e for e in (err_a, err_b) if "error" in e]
    # Either they overlapped (one refused: in use, or already a run) or ran one after the other.
    assert codes in ([0, 0], [0, 2]), (codes, err_a, err_b)
    assert all(e.count("\n") == 1 for e in errs)
    records = _lines(tmp_path / "records.jsonl")
    keys = [(r["batch_index"], r["depth"], r["activation"]) for r in records]
    assert len(keys) == len(set(keys)) == 3 * 11 * 2  # complete, no duplicates


SCRIPT_RUNS = {
    "cond_vs_depth": ["--batch", "64", "--max-batches", "1", "--depths", "0-1"],
    "cond_vs_batch": ["--sizes", "20,30", "--depths", "1", "--no-angles"],
    "min_angle": ["--limit", "40", "--depths", "0-1", "--block", "16"],
    "check_claims": ["--only", "4"],
    "biasfree_dynamics": ["ntk", "--fast"],
    "train_vs_depth": ["--batch", "16", "--depths", "0", "--width", "inf", "8", "--max-steps", "20"],
}


@pytest.mark.parametrize("name", sorted(SCRIPT_RUNS))
def test_no_script_replaces_a_run_silently(tmp_path, capsys, name):
    script = load_script(name)
    argv = SCRIPT_RUNS[name] + ["--out", str(tmp_path), "--no-progress"]
    assert script.main(argv) == 0
    capsys.readouterr()
    before = {f: (tmp_path / f).read_bytes() for f in sorted(os.listdir(tmp_path))
              if (tmp_path / f).is_file() and not f.startswith(".lock")}
    assert script.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"{name}: error:") and "--overwrite" in err
    after = {f: (tmp_path / f).read_bytes() for f in before}
    assert after == before  # nothing already written is lost
    assert script.main(argv + ["--overwrite"]) == 0
    if name not in ("check_claims",):
        assert script.main(argv + ["--resume"]) == 0  # a complete run resumes to the same outputs


# --- reliability III: symlinks, killed overwrites, tampered records -------------------------

@pytest.mark.parametrize("name", [".lock.owner", "records.jsonl", "config.json", ".lock", "summary.csv"])
def test_symlink_plant_is_refused_and_its_target_untouched(tmp_path, name):
    run_dir, victim = tmp_path / "run", tmp_path / "victim.txt"
    with _open(run_dir) as run:
        run.append({"i": 0})
    victim.write_text("precious\n")
    if (run_dir / name).exists():
        (run_dir / name).unlink()
    os.symlink(victim, run_dir / name)
    for kw in ({"resume": True}, {"overwrite": True}, {}):
        with pytest.raises(ValueError, match=f"symbolic link {name}"):
            _open(run_dir, **kw)
    assert victim.read_text() == "precious\n"


def test_nofollow_writes_refuse_a_link_planted_after_the_check(tmp_path):
    from ntkcond._core.io import SymlinkError, append_jsonl, write_nofollow

    victim = tmp_path / "victim"
    victim.write_text("x\n")
    os.symlink(victim, tmp_path / "link")
    with pytest.raises(SymlinkError, match="symbolic link"):
        append_jsonl(str(tmp_path / "link"), {"a": 1})
    with pytest.raises(SymlinkError, match="symbolic link"):
        write_nofollow(str(tmp_path / "link"), "y", "here")
    assert victim.read_text() == "x\n"


def test_killed_overwrite_leaves_no_output_of_the_old_run(tmp_path, monkeypatch):
    from ntkcond.runs import rundir

    with _open(tmp_path, outputs=("summary.csv", "figure.png", "spectra")) as run:
        run.append({"i": 0})
    for name in ("summary.csv", "figure.png", ".tmp-stray"):
        (tmp_path / name).write_text("old\n")
    (tmp_path / "spectra").mkdir()
    (tmp_path / "spectra" / "b0.npy").write_text("old\n")
    (tmp_path / "notes.txt").write_text("mine\n")  # not an output: kept

    def killed(path, data):  # planted crash: the kill comes as the new config is written
        if path.endswith("config.json"):
            raise KeyboardInterrupt
        return real(path, data)

    real = rundir.atomic_write
    monkeypatch.setattr(rundir, "atomic_write", killed)
    with pytest.raises(KeyboardInterrupt):
        _open(tmp_path, {"a": 2}, overwrite=True, outputs=("summary.csv", "figure.png", "spectra"))
    left = sorted(f for f in os.listdir(tmp_path) if not f.startswith(".lock"))
    assert left == [".overwritten", "config.json", "notes.txt", "records.jsonl"], left
    assert (tmp_path / "records.jsonl").read_text() == ""  # no old records under the config
    monkeypatch.setattr(rundir, "atomic_write", real)
    with _open(tmp_path, resume=True):  # the next open drops the killed overwrite's backup
        assert not (tmp_path / ".overwritten").exists()


def test_records_are_validated_field_by_field_naming_file_and_line(tmp_path):
    from ntkcond.runs.rundir import check_record_fields

    def validate(rec):
        check_record_fields(rec, {"i": "int>=0", "v": "float>0", "ok": "bool", "s": "str|None"})

    good = {"i": 0, "v": 1.5, "ok": True, "s": None}
    with open_run(str(tmp_path), {"a": 1}, key_fields=KEYS, validate=validate) as run:
        run.append(good)
        run.append(dict(good, i=1))
    with open_run(str(tmp_path), {"a": 1}, key_fields=KEYS, resume=True, validate=validate) as run:
        assert len(run.records) == 2
    cases = [({"v": -1.0}, "expected v as a finite number > 0, got -1.0"),
             ({"v": "abc"}, "expected v as a finite number > 0, got 'abc'"),
             ({"ok": 1}, "expected ok as true or false, got 1"),
             ({"i": 2.5}, "expected i as an integer >= 0, got 2.5")]
    for change, message in cases:
        lines = [json.dumps(good), json.dumps({**good, "i": 1, **change})]
        (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
        with pytest.raises(ValueError, match=rf"records.jsonl line 2: {message}") as err:
            open_run(str(tmp_path), {"a": 1}, key_fields=KEYS, resume=True, validate=validate)
        assert "\n" not in str(err.value)
    bad = dict(good, i=1)
    del bad["v"]
    (tmp_path / "records.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match="line 2: expected a field 'v', got none"):
        open_run(str(tmp_path), {"a": 1}, key_fields=KEYS, resume=True, validate=validate)


def test_undecodable_byte_is_reported_on_its_own_line(tmp_path):
    lines = [json.dumps({"i": k}).encode() for k in range(45)]
    lines[40] = lines[40][:3] + b"\xff" + lines[40][4:]
    (tmp_path / "records.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(ValueError, match=r"records.jsonl line 41 is not UTF-8 text \(byte b'\\xff' at column 4\)"):
        read_records(str(tmp_path / "records.jsonl"), KEYS)


@pytest.mark.parametrize("out", ["", "   "])
def test_empty_out_is_refused(out):
    with pytest.raises(ValueError, match="expected --out as a nonempty directory path"):
        open_run(out, {"a": 1}, key_fields=KEYS)


# --- issue 34: refusals leave --out as it was --------------------------------------------

def _tree(path):
    """{relative path: bytes} of every file under path (the lock's owner file aside)."""
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            full = os.path.join(root, f)
            if f != ".lock.owner":
                out[os.path.relpath(full, path)] = open(full, "rb").read()
    return out


@pytest.mark.parametrize("error", [ValueError("bad --block"), TypeError("bad type"),
                                   OverflowError("extreme")])
def test_a_refused_fresh_run_leaves_nothing(tmp_path, error):
    """min-angle --block 0 left config.json, an empty records.jsonl and .lock, so the corrected
    command was refused ("already holds a run"): a refusal before the first record, with
    nothing written, removes what open_run made (here the folders too)."""
    out = tmp_path / "a" / "b" / "run"
    with pytest.raises(type(error)):
        with _open(out):
            raise error
    assert not (tmp_path / "a").exists()
    with _open(out) as run:  # the corrected command starts afresh
        run.append({"i": 0})
    # in a folder that existed with a file of the user's: only the run's files go
    own = tmp_path / "mine"
    own.mkdir()
    (own / "notes.txt").write_text("keep\n")
    with pytest.raises(ValueError):
        with _open(own):
            raise ValueError("refused")
    assert sorted(os.listdir(own)) == ["notes.txt"]


def test_a_refused_overwrite_puts_the_old_run_back(tmp_path):
    out = tmp_path / "run"
    with _open(out, outputs=("summary.csv", "spectra")) as run:
        run.append({"i": 0})
        run.append({"i": 1})
    (out / "summary.csv").write_text("old table\n")
    (out / "spectra").mkdir()
    (out / "spectra" / "b0.npy").write_bytes(b"old")
    before = _tree(out)
    with pytest.raises(ValueError):
        with _open(out, {"a": 2}, overwrite=True, outputs=("summary.csv", "spectra")):
            raise ValueError("--block: expected an integer >= 2, got 0")
    assert _tree(out) == before and not (out / ".overwritten").exists()
    with _open(out, resume=True) as run:  # the old run, resumable as it was
        assert [r["i"] for r in run.records] == [0, 1]
    # an overwrite that gets under way (its first record) drops the old run for good
    with _open(out, {"a": 2}, overwrite=True, outputs=("summary.csv", "spectra")) as run:
        run.append({"i": 5})
        assert not (out / ".overwritten").exists()
    assert _lines(out / "records.jsonl") == [{"i": 5}] and not (out / "summary.csv").exists()


def test_a_run_that_wrote_something_or_was_interrupted_is_kept(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ValueError):  # a checkpoint was written: a run under way, not a refusal
        with _open(out, outputs=("checkpoint.json",)) as run:
            (out / "checkpoint.json").write_text("{}")
            raise ValueError("late")
    assert (out / "config.json").exists() and (out / "checkpoint.json").exists()
    other = tmp_path / "other"
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C is not a refusal: --resume continues it
        with _open(other):
            raise KeyboardInterrupt
    assert (other / "config.json").exists()
    with _open(other, resume=True):
        pass


@pytest.mark.parametrize("name,argv", [
    ("min_angle", ["--dataset", "gaussian", "--n", "50", "--dim", "4", "--block", "0"]),
    ("min_angle", ["--dataset", "gaussian", "--n", "50", "--dim", "4", "--workers", "0"]),
    ("biasfree_dynamics", ["bias-breaking", "--b-stds", "nan"]),
    ("biasfree_dynamics", ["closed-form", "--lrs", "1e6"]),
    ("cond_vs_depth", ["--dataset", "gaussian", "--n", "8", "--dim", "3", "--batch", "4",
                       "--depths", "0", "--activations", "erf"]),
    ("train_vs_depth", ["--dataset", "gaussian", "--n", "8", "--dim", "3", "--batch", "4",
                        "--depths", "1", "--target", "class:12"]),
    ("activation_study", ["--dataset", "gaussian", "--n", "8", "--dim", "3", "--batch", "4",
                          "--activations", "relu", "--finite-activations", "erf"]),
])
def test_refused_commands_leave_out_as_they_found_it(tmp_path, capsys, name, argv):
    """The scripts: one line on stderr, exit 2, and --out as it was — absent, or (with
    --overwrite over a finished run) that run, byte for byte."""
    from conftest import load_script

    script = load_script(name)
    out = tmp_path / "out"
    try:
        code = script.main(argv + ["--no-progress", "--out", str(out)])
    except SystemExit as exit_:  # refused where argparse parses the flag: before any folder
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists(), sorted(os.listdir(out))
