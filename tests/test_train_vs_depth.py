"""runs.train_vs_depth and scripts/train_vs_depth.py: finite nets trained by gradient descent
against the step counts their NTK predicts (digits and Gaussian data only)."""
import csv
import json
import math

import numpy as np
import pytest

pytest.importorskip("jax")

import ntkcond  # noqa: E402
from conftest import load_script  # noqa: E402
from ntkcond import datasets  # noqa: E402
from ntkcond.network import resolve_mlp  # noqa: E402
from ntkcond.runs import train_vs_depth as tvd  # noqa: E402


@pytest.fixture(scope="module")
def batch():
    """32 digits images (d = 64) and centred lt5 targets."""
    ds = datasets.load("digits")
    index = datasets.batches(ds, 32, seed=0)[0]
    return ds.x[index], tvd.make_targets(ds.y[index])


def _net_and_kernel(depth, width, activation, x, seed=0):
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    net = ntkcond.mlp(depth, width, activation)
    with x64():
        params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=jnp.float64)
        K = np.asarray(ntkcond.empirical_ntk(net, params, jnp.asarray(x)), np.float64)
        f0 = np.asarray(net.apply(params, jnp.asarray(x)), np.float64)
    return net, params, K, f0


def test_linear_model_trains_exactly_as_predicted(batch):
    """Depth 0 (f = xW/√d) is linear in its parameters: its NTK never moves, GD is eq. (1)
    exactly, so the measured count equals the prediction and the loss curves agree to
    accumulated float64 rounding (measured 2.2e-14 relative over 1239 steps; 1e-10 allowed)."""
    x, y = batch
    net, params, K, f0 = _net_and_kernel(0, 1, "linear", x)
    lr, eps = 1.0 / ntkcond.conditioning(K).lambda_max, 1e-2
    predicted = ntkcond.steps_to_loss(K, y, lr=lr, rel_target=eps, f0=f0)
    run = tvd.train_to_loss(net, params, x, y, lr=lr, rel_target=eps, max_steps=5000)
    assert run.steps == predicted == len(run.losses) - 1 > 100
    curve = ntkcond.ntk_gd_loss(K, y, lr=lr, steps=predicted, f0=f0)
    assert np.max(np.abs(run.losses - curve) / curve) < 1e-10
    # The crossing is not a coin toss at rounding level: the target lies well between steps.
    rel = curve / curve[0]
    assert rel[predicted - 1] > eps * (1 + 1e-6) and rel[predicted] < eps * (1 - 1e-6)


def test_wide_linear_net_is_close_to_its_prediction(batch):
    """Depth 1: the NTK of a deep linear net moves during training, by O(1/m) here (measured
    drift ‖Θ_T − Θ₀‖_F/‖Θ₀‖_F = 0.45, 0.12, 0.030, 0.0065 at m = 64, 256, 1024, 4096), so the
    count is close to, not equal to, the prediction: measured 947 against 972 steps (−2.6%) at
    m = 1024, 1081 against 1200 (−9.9%) at m = 256. Allowed: 5% at m = 1024, and the gap at
    least halving from m = 256 to 1024 (measured ÷3.9)."""
    x, y = batch
    gaps = {}
    for width in (256, 1024):
        rec = tvd.finite_record(x, y, depth=1, net=resolve_mlp("linear", where="t"), width=width, seed=0,
                                rel_target=1e-2, max_steps=5000)
        assert rec["reached"] and rec["predicted_finite"]
        assert rec["rel_loss_at_stop"] <= 1e-2 < rec["predicted_rel_loss_at_stop"] * 1.2
        gaps[width] = abs(rec["steps"] - rec["predicted_steps"]) / rec["predicted_steps"]
    assert gaps[1024] <= 0.05 and gaps[1024] <= gaps[256] / 2
    assert 0 < rec["ntk_drift"] < 0.05


def test_collapsed_linear_route_is_the_same_gradient_descent(batch):
    """A linear net evaluated right to left (matrix-vector products) is the same function of
    the same weights: 500 GD steps agree with ``MLP.apply``'s to rounding (measured 3e-15;
    1e-12 allowed), whatever the chunking."""
    x, y = batch
    net, params, K, _ = _net_and_kernel(3, 64, "linear", x, seed=1)
    lr = 1.0 / ntkcond.conditioning(K).lambda_max
    a = tvd.train_to_loss(net, params, x, y, lr=lr, rel_target=1e-9, max_steps=500, chunk=64)
    b = tvd.train_to_loss(net, params, x, y, lr=lr, rel_target=1e-9, max_steps=500,
                          collapsed_linear=False)
    assert a.steps is None and b.steps is None and a.steps_run == b.steps_run == 500
    assert len(a.losses) == len(b.losses) == 501
    assert np.max(np.abs(a.losses - b.losses) / b.losses) < 1e-12
    assert a.losses[-1] < 0.05 * a.losses[0]  # it did train
    for u, v in zip(a.params, b.params):
        assert np.max(np.abs(u - v)) < 1e-12 * np.max(np.abs(v))


def test_not_reached_is_recorded_at_the_cap(batch):
    x, y = batch
    net, params, K, f0 = _net_and_kernel(2, 32, "relu", x)
    lr = 1.0 / ntkcond.conditioning(K).lambda_max
    run = tvd.train_to_loss(net, params, x, y, lr=lr, rel_target=1e-2, max_steps=130, chunk=50)
    assert run.steps is None and not run.diverged
    assert run.steps_run == 130 and len(run.losses) == 131  # chunks 50, 50, 30: no step past the cap
    assert run.losses[-1] > 1e-2 * run.losses[0]
    assert np.all(np.diff(run.losses) < 0)  # η = 1/λmax: the loss falls at every step here


def test_prediction_is_infinite_exactly_when_the_null_space_holds_more_than_eps(batch):
    """The linear kernel of 128 digits has rank ≤ 64 (< n): the part φ of ‖y‖² in its null
    space is never fitted, so the prediction is ∞ for ε < φ and finite for ε > φ; ReLU's kernel
    is full rank and finite for both."""
    ds = datasets.load("digits")
    index = datasets.batches(ds, 128, seed=0)[0]
    x, y = ds.x[index], tvd.make_targets(ds.y[index])
    K = ntkcond.infinite_ntk(x, depth=1, activation="linear")
    cond = ntkcond.conditioning(K)
    lam, U = np.linalg.eigh(K)
    phi = float(np.sum((U[:, lam <= cond.cutoff].T @ y) ** 2) / (y @ y))
    assert cond.rank <= 64 and 0.05 < phi < 0.95
    below = tvd.infinite_record(x, y, depth=1, net=resolve_mlp("linear", where="t"), rel_target=0.99 * phi, max_steps=100)
    above = tvd.infinite_record(x, y, depth=1, net=resolve_mlp("linear", where="t"), rel_target=1.01 * phi, max_steps=100)
    assert below["predicted_steps"] is None and not below["predicted_finite"]
    assert below["kappa_target"] is None  # κ_target ∞ together with the count
    assert isinstance(above["predicted_steps"], int) and above["predicted_finite"]
    # exact, not up to rounding: both divide λmax by one of conditioning's eigenvalues
    # (κ_target's λ_k is at or above κ_eff's smallest nonzero one), one eigensolver for both
    assert above["kappa_target"] <= above["kappa_eff"]
    for eps in (0.99 * phi, 1.01 * phi):
        relu = tvd.infinite_record(x, y, depth=1, net=resolve_mlp("relu", where="t"), rel_target=eps, max_steps=100)
        assert relu["predicted_finite"] and relu["predicted_steps"] > 0


def test_target_condition_number_on_known_eigenpairs(rng=np.random.default_rng(0)):
    from conftest import orthogonal

    U = orthogonal(6, rng)
    lam = np.array([100.0, 50.0, 10.0, 2.0, 1.0, 0.0])
    K = (U * lam) @ U.T
    c = np.array([0.5, 0.2, 0.2, 0.06, 0.04, 0.0])  # energies along u_1 … u_6
    r0 = U @ np.sqrt(c)
    # tails S_k/S_1: 1, 0.5, 0.3, 0.1, 0.04, 0 → the last k with S_k > ε
    assert tvd.target_condition_number(K, r0, 0.2) == pytest.approx(100 / 10, rel=1e-12, abs=0)
    assert tvd.target_condition_number(K, r0, 0.05) == pytest.approx(100 / 2, rel=1e-12, abs=0)
    assert tvd.target_condition_number(K, r0, 0.01) == pytest.approx(100 / 1, rel=1e-12, abs=0)
    assert tvd.target_condition_number(K, r0, 1.0) == 1.0
    r0_null = U @ np.sqrt(np.array([0.5, 0.2, 0.2, 0.0, 0.0, 0.1]))
    assert tvd.target_condition_number(K, r0_null, 0.05) == math.inf
    assert ntkcond.steps_to_loss(K, -r0_null, rel_target=0.05) == math.inf


def test_make_targets():
    labels = np.array([0, 1, 5, 7, 4, 9, 2, 2])
    y = tvd.make_targets(labels)
    assert y.sum() == pytest.approx(0.0, rel=0, abs=1e-12)
    assert np.all((y > 0) == (labels < 5))
    assert list(tvd.make_targets(labels, "class:2", center=False)) == [-1, -1, -1, -1, -1, -1, 1, 1]
    assert list(tvd.make_targets(labels, "even", center=False)) == [1, -1, -1, -1, 1, -1, 1, 1]
    with pytest.raises(ValueError, match="make_targets: expected target"):
        tvd.make_targets(labels, "odd")
    with pytest.raises(ValueError, match="same sign"):
        tvd.make_targets(np.zeros(8, dtype=int))  # gaussian data: no labels


ARGV = ["--batch", "32", "--depths", "0,2", "--width", "inf", "32", "--max-steps", "200",
        "--no-progress"]


def _records(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def test_script_smoke(tmp_path, capsys):
    script = load_script("train_vs_depth")
    out = tmp_path / "run"
    assert script.main(ARGV + ["--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "kappa_target" in printed and "figure:" in printed
    records = _records(out / "records.jsonl")
    assert len(records) == 2 * 2 * 2  # depths × activations × widths
    finite = [r for r in records if r["width"] == 32]
    assert all(r["seed"] == 0 and r["lr"] == pytest.approx(1 / r["lambda_max"], rel=1e-15, abs=0)
               for r in finite)
    for r in finite:  # a measured count is the step where the loss first met the target
        assert r["lambda_max_end"] > 0 and r["kappa_eff_end"] >= 1
        assert (r["ntk_drift"] == 0) == (r["depth"] == 0)  # depth 0: linear in its weights
        assert (r["steps"] is not None) == r["reached"]
        assert (r["rel_loss_at_stop"] <= 1e-2) == r["reached"]
    rows = list(csv.DictReader(open(out / "table.csv")))
    assert len(rows) == 8 and {"steps", "predicted_steps", "kappa_eff", "kappa_target"} <= set(rows[0])
    assert (out / "figure.png").stat().st_size > 10_000
    config = json.loads((out / "config.json").read_text())
    assert config["target"] == "lt5" and config["center"] and config["widths"] == [32, "inf"]


@pytest.mark.parametrize("argv, message", [
    (["--max-steps", "0"], "--max-steps"), (["--rel-target", "-1"], "--rel-target"),
    (["--target", "odd"], "argument --target: expected lt5, even or class:K"),
    (["--width", "0"], "--width"), (["--dataset", "gaussian"], "no labels"),
    (["--depths", "3-1"], "--depths"), (["--batch", "5000"], "--batch: expected at most n = 1797"),
    (["--init-seed", "-1"], "argument --init-seed: expected an integer >= 0"),
])
def test_script_bad_input_is_one_line(tmp_path, capsys, argv, message):
    script = load_script("train_vs_depth")
    try:
        code = script.main(argv + ["--out", str(tmp_path / "run"), "--no-progress"])
    except SystemExit as exit_:  # argparse's own type errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("train_vs_depth: error:")
    assert message in err


def test_script_killed_and_resumed(tmp_path, capsys, monkeypatch):
    script = load_script("train_vs_depth")
    assert script.main(ARGV + ["--out", str(tmp_path / "full")]) == 0
    full = _records(tmp_path / "full" / "records.jsonl")
    real, calls = tvd.finite_record, []

    def dies_on_third_net(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # stands for a kill: nothing after this point is written
        return real(*args, **kwargs)

    monkeypatch.setattr(tvd, "finite_record", dies_on_third_net)
    cut = tmp_path / "cut"
    assert script.main(ARGV + ["--out", str(cut)]) == 130
    assert len(_records(cut / "records.jsonl")) == 2
    with open(cut / "records.jsonl", "a") as f:
        f.write('{"depth": 2, "activ')  # a line torn by the kill
    monkeypatch.setattr(tvd, "finite_record", real)
    capsys.readouterr()
    assert script.main(ARGV + ["--out", str(cut)]) == 2  # never silently replaced
    assert "--resume" in capsys.readouterr().err
    assert script.main(ARGV[:-2] + ["100", "--no-progress", "--out", str(cut), "--resume"]) == 2
    assert "max_steps" in capsys.readouterr().err  # another cap is another run
    assert script.main(ARGV + ["--out", str(cut), "--resume"]) == 0
    assert "6 computed, 2 resumed" in capsys.readouterr().out
    resumed = _records(cut / "records.jsonl")
    key = lambda r: (r["depth"], r["activation"], str(r["width"]))  # noqa: E731
    assert sorted(map(key, resumed)) == sorted(map(key, full))  # complete, no duplicates
    by_key = {key(r): r for r in full}
    for r in resumed:  # deterministic: the same nets, the same counts
        for field in ("steps", "predicted_steps", "kappa_eff", "rel_loss_at_stop"):
            assert r[field] == by_key[key(r)][field], field


def test_dead_width_one_net_is_recorded_and_the_sweep_goes_on(tmp_path, capsys):
    """A bias-free width-1 ReLU net at depth 2 on this digits batch has a layer whose one unit
    is inactive on every input: its NTK is the zero matrix. The sweep records it (dead, no κ,
    nothing reached, loss stays loss₀) and goes on to the next net; the table says "dead"."""
    script = load_script("train_vs_depth")
    argv = ["--dataset", "digits", "--batch", "32", "--depths", "2,3", "--width", "1",
            "--activations", "relu", "linear", "--max-steps", "20", "--no-progress",
            "--out", str(tmp_path)]
    assert script.main(argv) == 0
    records = [json.loads(line) for line in open(tmp_path / "records.jsonl")]
    dead = [r for r in records if r.get("dead")]
    assert dead and all(r["activation"] == "relu" and r["kappa_eff"] is None and
                        r["reached"] is False and r["rel_loss_at_stop"] == 1.0 for r in dead)
    assert len(records) == 4 and not any(r.get("dead") for r in records if r["activation"] == "linear")
    assert "dead" in capsys.readouterr().out
    assert script.main(argv + ["--resume"]) == 0  # dead records pass the resume checks
def test_network_options_reach_the_records(tmp_path):
    """w_std/b_std (issue 21): the infinite-width prediction of a biased erf net, kept in
    config.json and every record; the default run has none of them."""
    ds = datasets.load("digits")
    sweep = tvd.train_vs_depth(ds, out=str(tmp_path / "run"), n=16, depths=[1, 2],
                               activations=["erf", "relu"], widths=["inf"], w_std=1.5,
                               b_std=0.1, progress=False)
    assert all(r["w_std"] == 1.5 and r["b_std"] == 0.1 and "residual" not in r
               for r in sweep.rows)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["w_std"] == 1.5 and config["b_std"] == 0.1
    plain = tvd.train_vs_depth(ds, out=str(tmp_path / "plain"), n=16, depths=[1],
                               activations=["relu"], widths=["inf"], progress=False)
    assert not {"w_std", "b_std", "residual"} & set(plain.records[0])
    # biases change the kernel: κ of the biased ReLU net differs from the plain one's
    biased = next(r for r in sweep.records if r["activation"] == "relu" and r["depth"] == 1)
    assert abs(biased["kappa_eff"] / plain.records[0]["kappa_eff"] - 1) > 1e-3
    with pytest.raises(ValueError, match="train_vs_depth: activation 'erf' is not homogeneous"):
        tvd.train_vs_depth(ds, out=str(tmp_path / "bad"), n=16, depths=[1], activations=["erf"],
                           widths=["inf"], progress=False)


def _stax_cnn(depth, width):
    """The ReLU net of ``CNNFamily.network(depth, width)`` (norm-preserving, bias-free, 3 × 3
    SAME, Flatten) in ``ntkcond.stax``."""
    from ntkcond import stax

    return stax.serial(*[stax.Conv(width, (3, 3), padding="SAME", W_std=np.sqrt(2.0)),
                         stax.Relu()] * depth, stax.Flatten(), stax.Dense(1))


def _jacrev_ntk(apply_fn, params, x):
    """J Jᵀ of the (n, P) Jacobian of f(θ, x) by ``jax.jacrev`` (float64): the empirical NTK
    straight from its definition, and f(θ, x)."""
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    with x64():
        params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), params)
        xj = jnp.asarray(x, jnp.float64)
        J = jax.jacrev(lambda p: apply_fn(p, xj).reshape(-1))(params)
        J = jnp.concatenate([j.reshape(len(x), -1) for j in jax.tree_util.tree_leaves(J)], 1)
        return np.asarray(J @ J.T), np.asarray(apply_fn(params, xj)).reshape(-1)


def test_convolutional_nets_from_flags(tmp_path, capsys):
    """--arch cnn on 4 × 4 × 1 block means of digits: each finite record's λmax and κ_eff are
    those of the jacrev NTK of the same CNN at initialisation (the stax stack, weights of
    PRNGKey(--init-seed); 1e-9 relative), loss₀ that of its own outputs; each width-inf
    record's λmax that of the stax kernel_fn (1e-10); the CNN trains (loss down); arch,
    readout and filter in config.json, every record and the title; --resume recomputes
    nothing."""
    import jax

    out = tmp_path / "run"
    argv = ["--dataset", "digits", "--downsample", "2", "--batch", "12", "--arch", "cnn",
            "--depths", "1", "--activations", "relu", "--width", "inf", "6",
            "--max-steps", "10", "--out", str(out), "--no-progress"]
    assert load_script("train_vs_depth").main(argv) == 0
    assert "arch = cnn, readout = flatten, filter = 3" in capsys.readouterr().out
    config = json.loads((out / "config.json").read_text())
    assert (config["arch"], config["readout"], config["filter"]) == ("cnn", "flatten", 3)
    recs = [json.loads(line) for line in open(out / "records.jsonl")]
    assert len(recs) == 2 and all((r["arch"], r["d"]) == ("cnn", 16) for r in recs)
    ds = datasets.load("digits", downsample=2)
    index = datasets.batches(ds, 12, seed=0, max_batches=1)[0]
    x, y = ds.images[index], tvd.make_targets(ds.y[index])
    for r in recs:
        if r["width"] == "inf":
            K = np.asarray(_stax_cnn(r["depth"], 1).kernel_fn(x, None, "ntk"))
            assert abs(r["lambda_max"] / np.linalg.eigvalsh(K)[-1] - 1) < 1e-10, r
            continue
        init_fn, apply_fn, _ = _stax_cnn(r["depth"], 6)
        params = init_fn(jax.random.PRNGKey(0), x.shape)[1]
        K, f0 = _jacrev_ntk(apply_fn, params, x)
        w = np.linalg.eigvalsh(K)
        assert abs(r["lambda_max"] / w[-1] - 1) < 1e-9, r
        assert abs(r["kappa_eff"] / ntkcond.effective_condition_number(K) - 1) < 1e-9
        assert abs(r["loss0"] / (0.5 * np.sum((f0 - y) ** 2)) - 1) < 1e-9
        assert r["rel_loss_at_stop"] < 1.0  # it trains
    assert load_script("train_vs_depth").main(argv[:-3] + ["--out", str(out), "--resume",
                                                           "--no-progress"]) == 0
    assert "0 computed, 2 resumed" in capsys.readouterr().out
