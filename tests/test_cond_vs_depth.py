"""``ntkcond.runs.cond_vs_depth`` and its script: --save-spectra (every kernel's eigenvalues,
from the eigendecomposition the record already needs, kept across a kill and a resume; digits
only), finite and infinite widths overlaid, and the grouping of work items into calls."""
import json
import os
import re

import numpy as np
import pytest

pytest.importorskip("jax")

import ntkcond  # noqa: E402
from conftest import load_script  # noqa: E402
from ntkcond import datasets  # noqa: E402
from ntkcond.runs import cond_vs_depth as sweep  # noqa: E402

ARGV = ["--batch", "48", "--max-batches", "2", "--depths", "0,2", "--width", "inf", "8",
        "--seeds", "2", "--no-progress", "--save-spectra"]


def _records(path):
    return [json.loads(line) for line in open(path) if line.strip()]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("spectra") / "run"
    assert load_script("cond_vs_depth").main(ARGV + ["--out", str(out)]) == 0
    return out


def test_one_spectrum_per_record_with_the_records_keys(full_run):
    records = _records(full_run / "records.jsonl")
    assert len(records) == 2 * 2 * 2 * (1 + 2)  # batches × depths × activations × (∞ + 2 seeds)
    with np.load(full_run / "spectra.npz") as npz:
        spectra = {k: npz[k] for k in npz.files}
    assert set(spectra) == {sweep.spectrum_key(r) for r in records}
    assert "b1_L2_relu_winf_s-" in spectra and "b0_L0_linear_w8_s1" in spectra
    for r in records:
        lam = spectra[sweep.spectrum_key(r)]
        assert lam.shape == (48,) and lam.dtype == np.float64 and np.all(np.diff(lam) >= 0)
        # the record's own numbers come from the same eigenvalues: exactly equal
        assert lam[-1] == r["lambda_max"]
        assert r["rank"] == int(np.count_nonzero(lam > 48 * np.finfo(float).eps * lam[-1]))
    assert sorted(os.listdir(full_run / "spectra")) == sorted(k + ".npy" for k in spectra)
    assert (full_run / "spectra.png").stat().st_size > 10_000
    assert json.loads((full_run / "config.json").read_text())["save_spectra"] is True


def test_stored_eigenvalues_are_those_of_the_recomputed_kernel(full_run):
    """Recomputed kernels: infinite width by ``infinite_ntk`` (the sweep builds them through
    ``depth_sweep``, the same float64 recursion), finite width by the same net. Measured:
    identical eigenvalues; allowed 1e-12·λmax, room for a kernel that differs in the last bits
    (eigenvalues move by at most ‖ΔK‖₂ ≤ n·max|ΔK_ij| ≈ 48·1e-16·λmax)."""
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    ds = datasets.load("digits")
    index = datasets.batches(ds, 48, seed=0, max_batches=2)[1]
    x = ds.x[index]
    with np.load(full_run / "spectra.npz") as npz:
        for act in ("relu", "linear"):
            K = ntkcond.infinite_ntk(x, depth=2, activation=act)
            expected = ntkcond.conditioning(K).eigenvalues
            got = npz[f"b1_L2_{act}_winf_s-"]
            assert np.max(np.abs(got - expected)) <= 1e-12 * expected[-1]
        net = ntkcond.mlp(2, 8, "relu")
        with x64():
            params = net.init(jax.random.PRNGKey(1), x.shape[1], dtype=jnp.float64)
            K = np.asarray(ntkcond.empirical_ntk(net, params, jnp.asarray(x)), np.float64)
        expected = ntkcond.conditioning(K, dtype=np.float64).eigenvalues
        assert np.max(np.abs(npz["b1_L2_relu_w8_s1"] - expected)) <= 1e-12 * expected[-1]


def test_no_extra_eigendecomposition(tmp_path, monkeypatch):
    calls = []
    for name in ("eigvalsh", "eigh", "eig", "eigvals"):
        real = getattr(np.linalg, name)
        monkeypatch.setattr(np.linalg, name,
                            lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    script = load_script("cond_vs_depth")
    argv = ARGV[:-1] + ["--max-batches", "1"]
    assert script.main(argv + ["--out", str(tmp_path / "plain")]) == 0
    plain, calls[:] = list(calls), []
    assert script.main(argv + ["--save-spectra", "--out", str(tmp_path / "kept")]) == 0
    assert calls == plain and len(plain) == 2 * 2 * 3  # one eigvalsh per kernel, either way


def test_killed_run_resumes_with_every_spectrum(full_run, tmp_path, monkeypatch):
    script = load_script("cond_vs_depth")
    real, calls = sweep.iter_finite_batch, []

    def dies_on_second_call(*args, **kwargs):  # one call per batch at finite width (grid_calls)
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # stands for a kill
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "iter_finite_batch", dies_on_second_call)
    cut = tmp_path / "cut"
    assert script.main(ARGV + ["--out", str(cut)]) == 130
    done = _records(cut / "records.jsonl")
    assert done and not (cut / "spectra.npz").exists()
    assert {sweep.spectrum_key(r) + ".npy" for r in done} <= set(os.listdir(cut / "spectra"))
    monkeypatch.setattr(sweep, "iter_finite_batch", real)
    # the flag is part of the configuration: resuming without it is refused
    assert script.main(ARGV[:-1] + ["--out", str(cut), "--resume"]) == 2
    assert script.main(ARGV + ["--out", str(cut), "--resume"]) == 0
    with np.load(cut / "spectra.npz") as a, np.load(full_run / "spectra.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:  # deterministic kernels: the same eigenvalues bit for bit
            assert np.array_equal(a[key], b[key]), key
    # --overwrite discards the old spectra with the old records
    assert script.main(ARGV[:-1] + ["--out", str(cut), "--overwrite"]) == 0
    assert not (cut / "spectra.npz").exists() and not (cut / "spectra").exists()


def test_script_overlays_finite_and_infinite_widths(tmp_path, capsys):
    out = str(tmp_path / "run")
    rc = load_script("cond_vs_depth").main(["--dataset", "gaussian", "--n", "32", "--dim", "8", "--batch", "32",
                             "--depths", "0-2", "--width", "inf", "64", "--seeds", "2",
                             "--max-batches", "1", "--out", out, "--no-progress"])
    assert rc == 0
    with open(os.path.join(out, "records.jsonl")) as fh:
        recs = [json.loads(line) for line in fh]
    # 3 depths x 2 activations x (infinite + 2 seeds at width 64)
    assert len(recs) == 18
    assert {(r["width"], r["seed"]) for r in recs} == {("inf", None), (64, 0), (64, 1)}
    assert os.path.getsize(os.path.join(out, "figure.png")) > 0
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["width"] == [64, "inf"] and config["init_seeds"] == [0, 1]
    table = capsys.readouterr().out
    assert re.search(r"^ *64 +2 ", table, re.M) and re.search(r"^ *inf +2 ", table, re.M)


def test_convolutional_nets_from_flags(tmp_path, capsys):
    """--arch cnn: the nets of ``ntkcond.network.CNNFamily`` on the images (digits, 8 × 8 × 1),
    at infinite width and a finite width (channels), recorded in config.json and every
    record; each infinite-width κ_eff is that of the stax stack's kernel on the same batch."""
    from ntkcond import stax

    out = str(tmp_path / "run")
    rc = load_script("cond_vs_depth").main([
        "--dataset", "digits", "--batch", "16", "--max-batches", "1", "--depths", "0,2",
        "--arch", "cnn", "--readout", "gap", "--filter", "3", "--width", "inf", "8",
        "--seeds", "1", "--out", out, "--no-progress"])
    assert rc == 0
    config = json.load(open(os.path.join(out, "config.json")))
    assert (config["arch"], config["readout"], config["filter"]) == ("cnn", "gap", 3)
    with open(os.path.join(out, "records.jsonl")) as fh:
        recs = [json.loads(line) for line in fh]
    assert len(recs) == 8 and all(r["arch"] == "cnn" and r["readout"] == "gap" for r in recs)
    ds = datasets.load("digits")
    idx = datasets.batches(ds, 16, seed=0, max_batches=1)[0]
    rec = next(r for r in recs if r["width"] == "inf" and r["depth"] == 2
               and r["activation"] == "relu")
    net = stax.serial(*[stax.Conv(8, (3, 3), padding="SAME", W_std=np.sqrt(2)), stax.Relu()] * 2,
                      stax.GlobalAvgPool(), stax.Dense(1))
    K = net.kernel_fn(ds.images[idx], None, "ntk")
    assert abs(ntkcond.effective_condition_number(K) / rec["kappa_eff"] - 1) <= 1e-10
    assert "arch = cnn, readout = gap, filter = 3" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--readout", "gap"], "--readout: applies to --arch cnn"),
    (["--arch", "cnn", "--residual", "0.5"], "--residual: residual blocks are fully-connected"),
    (["--arch", "cnn", "--dataset", "gaussian", "--n", "8", "--dim", "4"],
     "expected image data"),
])
def test_convolutional_flags_refused_where_they_do_not_apply(argv, message, capsys, tmp_path):
    rc = load_script("cond_vs_depth").main(argv + ["--no-progress", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0], err


def test_script_rejects_bad_width():
    with pytest.raises(SystemExit):
        load_script("cond_vs_depth").main(["--width", "0", "--no-progress"])


def test_grid_calls_merge_full_grids_in_record_order():
    """One iter_finite_batch call per batch and width where the activations × seeds grid is
    full with the same missing depths (records in the same order); partial (resumed) items
    and infinite width stay calls of their own."""
    from ntkcond.runs.cond_vs_depth import grid_calls

    todo = [(0, "relu", "inf", None, [0, 1]), (0, "linear", "inf", None, [0, 1]),
            (0, "relu", 8, 0, [0, 1]), (0, "relu", 8, 1, [0, 1]),
            (0, "linear", 8, 0, [0, 1]), (0, "linear", 8, 1, [0, 1]),
            (1, "relu", 8, 0, [1]), (1, "relu", 8, 1, [0, 1]),
            (1, "linear", 8, 0, [0, 1]), (1, "linear", 8, 1, [0, 1]),
            (2, "relu", 8, 0, [0]), (2, "relu", 16, 0, [0])]
    assert grid_calls(todo) == [
        (0, "inf", ["relu"], [None], [0, 1]), (0, "inf", ["linear"], [None], [0, 1]),
        (0, 8, ["relu", "linear"], [0, 1], [0, 1]),
        (1, 8, ["relu"], [0], [1]), (1, 8, ["relu"], [1], [0, 1]),
        (1, 8, ["linear"], [0, 1], [0, 1]),
        (2, 8, ["relu"], [0], [0]), (2, 16, ["relu"], [0], [0])]
    expanded = [(b, a, w, s, m) for b, w, acts, seeds, m in grid_calls(todo)
                for a in acts for s in seeds]
    assert expanded == todo  # the records' order is the items'
