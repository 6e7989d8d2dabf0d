"""Tests of ntkcond.runs.train_track: the schedule, the command's run directory, resumption
after SIGKILL at several points (no snapshot lost or computed twice), and bad input.

Runs use scikit-learn's bundled digits (d = 64): no download, no ../shared/data."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("optax")
from conftest import REPO, load_script  # noqa: E402
from ntkcond.runs import train_track as tt  # noqa: E402

#: A short run: MLP L=1 m=32, Adam on minibatches of 16 (the optimizer state and the minibatch
#: order must both survive a kill), 40 steps, 8 log-spaced snapshots.
ARGV = ["--train", "64", "--probe", "32", "--width", "32", "--optimizer", "adam", "--lr", "0.01",
        "--batch-size", "16", "--steps", "40", "--snapshots", "8", "--no-progress"]
SCHEDULE = [0, 1, 2, 3, 6, 12, 22, 40]
#: Fields of a record that are measurements (the rest, seconds and time, are not compared).
MEASURED = ["step", "loss", *tt.SNAPSHOT_FIELDS]


def records(path):
    return [json.loads(line) for line in open(os.path.join(path, "records.jsonl")) if line.strip()]


def test_snapshot_steps():
    assert tt.snapshot_steps(40, 8) == SCHEDULE
    assert tt.snapshot_steps(100, 5, "linear") == [0, 25, 50, 75, 100]
    assert tt.snapshot_steps(10, 30) == list(range(11))  # rounding duplicates dropped
    assert tt.snapshot_steps(100, 2) == [0, 100]
    assert tt.snapshot_steps(100, at=[50, 10, 10]) == [0, 10, 50, 100]
    with pytest.raises(ValueError, match=r"snapshot_steps: expected snapshot steps in \[0, steps = 100\], got \[101\]"):
        tt.snapshot_steps(100, at=[101])
    with pytest.raises(ValueError, match="expected spacing 'linear' or 'log'"):
        tt.snapshot_steps(100, 5, "cubic")
    with pytest.raises(ValueError, match="expected count as an integer >= 2"):
        tt.snapshot_steps(100, 1)


def test_command_writes_its_run_directory(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    import ntkcond.runs

    out = tmp_path / "run"
    script = load_script("train_track")
    assert script.main(ARGV + ["--save-spectra", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "digits (all), n = 64, probe 32: mlp L=1 m=32 relu; adam lr 0.01, batch 16, 40 steps" in printed
    assert "8 snapshots computed, 0 resumed" in printed
    assert sorted(os.listdir(out)) == [".lock", "checkpoint.npz", "config.json", "figure.png",
                                       "records.jsonl", "snapshots.csv", "spectra.npz"]
    recs = records(out)
    assert [r["step"] for r in recs] == SCHEDULE
    assert recs[0]["kernel_distance"] == 0.0 and all(r["kernel_distance"] > 0 for r in recs[1:])
    assert recs[-1]["loss"] < recs[0]["loss"]  # it trains
    frame = ntkcond.runs.load(out)
    assert list(frame.step) == SCHEDULE and frame.attrs["model"]["width"] == 32
    table = pd.read_csv(out / "snapshots.csv")
    assert list(table.columns) == tt.CSV_FIELDS and len(table) == 8
    with np.load(out / "spectra.npz") as f:
        assert f["eigenvalues"].shape == (8, 32) and f["steps"].tolist() == SCHEDULE
        assert f["eigenvalues"][-1, -1] == recs[-1]["lambda_max"]
    # the shared provenance (runs.provenance), with optax's version and the records resumed
    (prov,) = json.loads((out / "config.json").read_text())["provenance"]
    assert prov["optax"] and prov["jax"] and prov["time"].endswith("+00:00")
    assert prov["resumed_records"] == 0 and prov["call"] == "train_track"
    assert prov["command"][:6] == ["python", "scripts/train_track.py", "--train", "64", "--probe", "32"]
    assert frame.attrs["provenance"] == [prov]
    assert (out / "figure.png").stat().st_size > 20_000
    # the last record is the tracker's snapshot of the checkpoint's parameters
    with np.load(out / "checkpoint.npz", allow_pickle=False) as f:
        assert int(f["step"]) == 40
        weights = [f["leaf_00000"], f["leaf_00001"]]  # params first: [W1, W2]
    import jax

    from ntkcond import NTKTracker, datasets, mlp
    from ntkcond._core.x64 import x64

    ds = datasets.load("digits")
    x = ds.x[datasets.batches(ds, 64, seed=0, max_batches=1)[0]][:32]
    with x64():
        snap = NTKTracker(mlp(1, 32), x).update([jax.numpy.asarray(w) for w in weights], 40)
    assert snap.kappa_eff == recs[-1]["kappa_eff"] and snap.rank == recs[-1]["rank"]
    # finished: resuming recomputes nothing and rewrites the outputs
    capsys.readouterr()
    assert script.main(ARGV + ["--save-spectra", "--out", str(out), "--resume"]) == 0
    assert "0 snapshots computed, 8 resumed" in capsys.readouterr().out
    assert records(out) == recs


CHILD = r"""
import os, signal, sys
import ntkcond.runs.train_track as tt
from ntkcond.runs import rundir

point, k = sys.argv[1], int(sys.argv[2])
calls = [0]


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def counted(fn, before=True):
    def wrapped(*args, **kwargs):
        calls[0] += 1
        if before and calls[0] == k:
            die()
        out = fn(*args, **kwargs)
        if not before and calls[0] == k:
            die()
        return out
    return wrapped


if point == "append-before":
    rundir.RunDir.append = counted(rundir.RunDir.append)
elif point == "append-after":
    rundir.RunDir.append = counted(rundir.RunDir.append, before=False)
elif point == "checkpoint-before":
    tt._save_checkpoint = counted(tt._save_checkpoint)
elif point == "torn":  # half of the record's line reaches the file, then the kill
    def torn(path, record, where="append_jsonl"):
        calls[0] += 1
        if calls[0] == k:
            import json
            line = json.dumps(record, sort_keys=True)
            with open(path, "a") as f:
                f.write(line[: len(line) // 2])
            die()
        real(path, record, where)
    real = rundir.append_jsonl
    rundir.append_jsonl = torn
elif point == "training":  # in the middle of the optimizer steps between two snapshots
    real_compiled = tt._compiled
    def compiled(apply_fn, tx):
        step, loss = real_compiled(apply_fn, tx)
        return counted(step), loss
    tt._compiled = compiled
sys.exit(tt.main(sys.argv[3:]))
"""


@pytest.mark.slow
def test_killed_and_resumed_loses_and_duplicates_no_snapshot(tmp_path, capsys):
    """SIGKILL at five points in turn, each time resumed with --resume: before the 3rd record is
    appended (its checkpoint is written: the snapshot is recomputed from it), in the optimizer
    steps between two snapshots, right after a record, half-way through writing a record (the
    torn line is dropped, its checkpoint is ahead of the records), before a checkpoint (the
    steps since the last one are trained again). The records are the schedule's, each once,
    and equal an uninterrupted run's measurements to 1e-12 relative (the same float64
    computations in another process: measured equal bit for bit)."""
    ref_out, out = tmp_path / "ref", tmp_path / "run"
    assert tt.main(ARGV + ["--out", str(ref_out)]) == 0
    reference = records(ref_out)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1")
    kills = [("append-before", 3, []), ("training", 4, ["--resume"]), ("append-after", 2, ["--resume"]),
             ("torn", 1, ["--resume"]), ("checkpoint-before", 2, ["--resume"])]
    seen = []
    for point, k, flags in kills:
        proc = subprocess.run([sys.executable, "-c", CHILD, point, str(k), *ARGV, "--out", str(out), *flags],
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == -9, (point, proc.returncode, proc.stderr[-2000:])
        steps = [json.loads(line)["step"] for line in open(out / "records.jsonl") if line.endswith("\n")]
        assert steps == SCHEDULE[:len(steps)], (point, steps)  # a prefix, each once
        seen.append(len(steps))
    assert seen == [2, 4, 6, 6, 7], seen  # every kill point was reached, with work still to do
    assert tt.main(ARGV + ["--out", str(out), "--resume"]) == 0
    assert "1 snapshots computed, 7 resumed" in capsys.readouterr().out
    got = records(out)
    assert [r["step"] for r in got] == SCHEDULE
    for a, b in zip(got, reference):
        for field in MEASURED:
            assert a[field] == pytest.approx(b[field], rel=1e-12, abs=0), (a["step"], field)
    prov = json.loads((out / "config.json").read_text())["provenance"]
    assert [p["resumed_records"] for p in prov] == [0, 2, 4, 6, 6, 7]


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    script = load_script("train_track")
    cases = [
        (["--at", "5,500", "--steps", "100"], "snapshot_steps: expected snapshot steps in [0, steps = 100], got [500]"),
        (["--at", "x"], "--at: expected comma-separated steps"),
        (["--snapshots", "1"], "--snapshots: expected an integer >= 2"),
        (["--probe", "300"], "expected n_probe <= n = 256"),
        (["--batch-size", "300"], "expected batch_size in [1, n = 256]"),
        (["--lr", "nan"], "--lr: expected a number > 0, got 'nan'"),
        (["--activations", "erf"], "activation 'erf' is not homogeneous"),
        (["--activations", "nope"], "--activations: parse_activation: expected"),
        (["--activations", "relu", "linear"], "--activations: expected one activation (train-track trains one net), got ['relu', 'linear']"),
        (["--depths", "1-3"], "--depths: expected one depth (train-track trains one net), got '1-3'"),
        (["--depths", "x"], "--depths: expected e.g. '0-10' or '0,1,5', got 'x'"),
        (["--b-std", "-1"], "--b-std: expected 0 or a number in [1e-150, 1e+150], got '-1'"),
        (["--init-scale", "0"], "--init-scale: expected a number > 0"),
        (["--target", "odd"], "--target: expected lt5, even or class:K (K an integer), got 'odd'"),
        (["--init-seed", "-1"], "--init-seed: expected an integer >= 0, got '-1'"),
        (["--train", "5000"], "--train: expected at most n = 1797 (the rows of digits), got 5000"),
        (["--lr", "1e4", "--steps", "50"], "(step 3): expected a nonzero kernel"),  # all ReLUs dead
        (["--lr", "1e4", "--steps", "500", "--activations", "linear"], "the loss is inf at step 4"),
    ]
    for argv, message in cases:
        try:
            code = script.main(argv + ["--width", "16", "--no-progress", "--out", str(tmp_path / "r"),
                                       "--overwrite"])
        except SystemExit as exit_:  # argparse type errors
            code = exit_.code
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith("train_track: error:"), (argv, err)
        assert message in err, (argv, err)
    # divergence names the step and the learning rate
    assert "(the training diverged); lower the learning rate (lr = 10000)" in err and "at step" in err


def test_resume_refuses_another_configuration_or_a_tampered_record(tmp_path, capsys):
    out = str(tmp_path / "run")
    argv = ["--train", "32", "--width", "8", "--steps", "6", "--snapshots", "3", "--no-progress", "--out", out]
    assert tt.main(argv) == 0
    assert tt.main(argv) == 2
    assert "already holds a run; pass --resume to continue it or --overwrite" in capsys.readouterr().err
    assert tt.main(argv[:-2] + ["--lr", "0.1", "--out", out, "--resume"]) == 2
    assert "its configuration differs in ['lr']" in capsys.readouterr().err
    lines = open(os.path.join(out, "records.jsonl")).read().splitlines()
    rec = json.loads(lines[1])
    rec["kappa_eff"] *= 2
    lines[1] = json.dumps(rec)
    open(os.path.join(out, "records.jsonl"), "w").write("\n".join(lines[:2]) + "\n")
    assert tt.main(argv + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "records.jsonl line 2: expected kappa_eff = lambda_max/lambda_min_nonzero" in err
    # records without their checkpoint
    assert tt.main(argv + ["--overwrite"]) == 0
    lines = open(os.path.join(out, "records.jsonl")).read().splitlines()
    open(os.path.join(out, "records.jsonl"), "w").write(lines[0] + "\n")
    os.unlink(os.path.join(out, "checkpoint.npz"))
    assert tt.main(argv + ["--resume"]) == 2
    assert "holds 1 snapshots but no checkpoint.npz" in capsys.readouterr().err


def test_missing_optax_is_one_line_saying_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "optax", None)  # import optax raises ImportError
    assert tt.main(["--width", "8", "--steps", "4", "--no-progress", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "train_track: error: needs optax: pip install 'ntkcond[train]' (or pip install optax)\n"


def test_build_model_and_small_initialisation():
    import jax

    from ntkcond.network import resolve_mlp

    base = tt.build_model("relu", (5,), depth=1, width=4, init_seed=0)
    small = tt.build_model(resolve_mlp("relu", where="test"), (5,), depth=1, width=4,
                           init_seed=0, init_scale=0.01)
    for a, b in zip(base.params, small.params):
        assert np.array_equal(np.asarray(b), 0.01 * np.asarray(a)) and b.dtype == np.float64
    assert small.config == {"arch": "mlp", "depth": 1, "width": 4, "activation": "relu",
                            "init_seed": 0, "init_scale": 0.01}
    biased = tt.build_model(resolve_mlp("tanh", 1.5, 0.1, where="test"), (5,), depth=2,
                            width=4, init_seed=1)
    assert biased.config["w_std"] == 1.5 and biased.config["b_std"] == 0.1
    assert len(jax.tree_util.tree_leaves(biased.params)) == 6  # 3 weights, 3 biases
    with pytest.raises(ValueError, match=r"build_model: expected input_shape \(d,\) of rows"):
        tt.build_model("relu", (4, 4, 1), depth=1, width=4, init_seed=0)
    with pytest.raises(ValueError, match="build_model: activation 'tanh' is not homogeneous"):
        tt.build_model("tanh", (5,), depth=1, width=4, init_seed=0)


def test_float32_training_tracks_the_float64_kernel_of_its_parameters(tmp_path, capsys):
    import jax

    from ntkcond import NTKTracker, datasets, mlp
    from ntkcond._core.x64 import x64

    out = tmp_path / "run"
    assert tt.main(["--train", "32", "--width", "8", "--steps", "5", "--snapshots", "2", "--dtype", "float32",
                    "--no-progress", "--out", str(out)]) == 0
    assert "trained in float32" in capsys.readouterr().out
    with np.load(out / "checkpoint.npz", allow_pickle=False) as f:
        weights = [f["leaf_00000"], f["leaf_00001"]]
    assert all(w.dtype == np.float32 for w in weights)
    ds = datasets.load("digits")
    x = ds.x[datasets.batches(ds, 32, seed=0, max_batches=1)[0]]
    with x64():
        snap = NTKTracker(mlp(1, 8), x).update([jax.numpy.asarray(w) for w in weights], 5)
    assert snap.kappa_eff == records(out)[-1]["kappa_eff"]


def test_in_memory_run_is_the_frame_load_reads_back_and_plot_draws_it(tmp_path):
    """``out=None``: nothing written, no checkpoint; the records equal a run directory's to
    1e-12 relative (the same float64 computations), and ``frame()`` equals ``runs.load`` of
    the run on disk, provenance aside (another invocation, another time)."""
    pytest.importorskip("pandas")
    import ntkcond.runs
    from ntkcond import datasets, plot

    ds = datasets.load("digits")
    model = tt.build_model("relu", ds.x.shape[1:], depth=1, width=8, init_seed=0)
    kw = dict(n=32, steps=6, snapshots=[0, 2, 6], progress=False)
    memory = tt.train_track(ds, model, out=None, **kw)
    assert memory.table_csv is None and memory.figure is None
    assert memory.config["provenance"][0]["call"] == "train_track"
    disk = tt.train_track(ds, model, out=str(tmp_path / "run"), **kw)
    assert sorted(os.listdir(tmp_path / "run")) == [".lock", "checkpoint.npz", "config.json",
                                                    "figure.png", "records.jsonl", "snapshots.csv"]
    for a, b in zip(memory.records, disk.records):
        for field in MEASURED:
            assert a[field] == pytest.approx(b[field], rel=1e-12, abs=0), field
    loaded = ntkcond.runs.load(tmp_path / "run")
    frame = disk.frame()
    assert frame.equals(loaded) and frame.attrs == loaded.attrs
    strip = lambda attrs: {k: v for k, v in attrs.items() if k != "provenance"}  # noqa: E731
    assert strip(memory.frame().attrs) == strip(loaded.attrs)
    fig = plot.curves(memory.frame(), "step", tt.PANELS, logy=("loss", "kappa_eff"),
                      labels=tt.PANELS, xscale="symlog", title=memory.title)
    assert [ax.get_ylabel() for ax in fig.axes] == list(tt.PANELS.values())
    assert fig.axes[1].get_yscale() == "log" and fig.axes[0].get_xscale() == "symlog"
    plot.pyplot().close(fig)


def test_convolutional_net_from_flags(tmp_path, capsys):
    """--arch cnn: the finite CNN of CNNFamily.network(depth, width) on the NHWC images (4 × 4
    × 1 block means of digits); the step-0 snapshot's λmax and κ_eff are those of the jacrev
    NTK of the same net at initialisation (the stax stack with the weights of
    PRNGKey(--init-seed); 1e-9 relative); config.json's model has arch, readout and filter;
    the title says what ran; it trains; --resume recomputes nothing."""
    import jax
    import jax.numpy as jnp

    import ntkcond
    from ntkcond import datasets, stax
    from ntkcond._core.x64 import x64

    out = tmp_path / "run"
    argv = ["--dataset", "digits", "--downsample", "2", "--train", "12", "--probe", "10",
            "--arch", "cnn", "--readout", "gap", "--width", "6", "--depths", "1",
            "--steps", "5", "--at", "2", "--lr", "0.5", "--no-progress", "--out", str(out)]
    assert tt.main(argv) == 0
    printed = capsys.readouterr().out
    assert "cnn L=1 C=6 relu readout=gap filter=3" in printed
    model = json.loads((out / "config.json").read_text())["model"]
    assert (model["arch"], model["readout"], model["filter"], model["width"]) == ("cnn", "gap", 3, 6)
    recs = records(out)
    assert [r["step"] for r in recs] == [0, 2, 5] and recs[-1]["loss"] < recs[0]["loss"]
    ds = datasets.load("digits", downsample=2)
    x = ds.images[datasets.batches(ds, 12, seed=0, max_batches=1)[0]][:10]
    init_fn, apply_fn, _ = stax.serial(stax.Conv(6, (3, 3), padding="SAME", W_std=np.sqrt(2.0)),
                                       stax.Relu(), stax.GlobalAvgPool(), stax.Dense(1))
    params = init_fn(jax.random.PRNGKey(0), x.shape)[1]
    with x64():
        params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), params)
        J = jax.jacrev(lambda p: apply_fn(p, jnp.asarray(x)).reshape(-1))(params)
        J = jnp.concatenate([j.reshape(len(x), -1) for j in jax.tree_util.tree_leaves(J)], 1)
        K = np.asarray(J @ J.T)
    assert abs(recs[0]["lambda_max"] / np.linalg.eigvalsh(K)[-1] - 1) < 1e-9
    assert abs(recs[0]["kappa_eff"] / ntkcond.effective_condition_number(K) - 1) < 1e-9
    assert tt.main(argv[:-2] + ["--out", str(out), "--resume"]) == 0
    assert "0 snapshots computed, 3 resumed" in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"build_model: expected input_shape \(H, W, C\)"):
        from ntkcond.network import resolve_cnn

        tt.build_model(resolve_cnn("relu", where="test"), (16,), depth=1, width=4, init_seed=0)
