"""Tests of ntkcond.finite.tracker: NTKTracker and its NTKSnapshot along short training runs.

The reference is independent of the tracker, of ``empirical_ntk`` and of ``empirical_ntk_fn``:
one plain ``jax.jacrev`` of the batched model w.r.t. the flattened parameters
(``jax.flatten_util.ravel_pytree``), K = J Jᵀ in float64, its ``eigvalsh``, and each formula of
the module written out directly (1 − ⟨K₀, K⟩/(‖K₀‖‖K‖) for the kernel distance, the entropy of
the normalised eigenvalues above n·eps·λmax, yᵀKy/(‖K‖‖y‖²)). Both sides are float64 exact
contractions of the same Jacobian; they differ by rounding, amplified at most by κ_eff (≤ 1e4
here) in λ_min⁺ and κ_eff and by 1/S in the 1 − cos form of the kernel distance (S ≥ 1e-4
here): RTOL = 1e-10 relative (the issue's tolerance) holds with margin (measured ≤ 1e-12).
"""
import dataclasses
import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

import ntkcond  # noqa: E402
from ntkcond.finite import NTKSnapshot, NTKTracker  # noqa: E402

RTOL = 1e-10
F64 = jnp.float64
EPS = float(np.finfo(np.float64).eps)


@pytest.fixture(autouse=True)
def _float64(x64):  # every test here runs in scoped jax float64 (conftest.x64)
    yield


def probe(n=16, d=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    return x, y - y.mean()


# ------------------------------------------------------------------ the independent reference
def reference(batched, params, x, y, K0):
    """Every snapshot field from K = J Jᵀ, J = jacrev of the flat parameters; K0 = step 0's K."""
    flat, unravel = ravel_pytree(params)
    J = np.asarray(jax.jacrev(lambda v: batched(unravel(v), jnp.asarray(x)).reshape(-1))(flat))
    K = J @ J.T
    K0 = K if K0 is None else K0
    n = K.shape[0]
    w = np.linalg.eigvalsh(K)
    above = w[w > n * EPS * w[-1]]
    p = above / above.sum()
    kappa = w[-1] / above[0]
    fields = {"kappa_eff": kappa, "lambda_max": w[-1], "lambda_min_nonzero": above[0],
              "rank": len(above), "precision_limited": bool(kappa >= 0.1 / (n * EPS)),
              "effective_rank": math.exp(-float(np.sum(p * np.log(p)))),
              "kernel_distance": 1.0 - np.sum(K0 * K) / (np.linalg.norm(K0) * np.linalg.norm(K)),
              "alignment": None if y is None else y @ K @ y / (np.linalg.norm(K) * (y @ y)),
              "ntk_drift": np.linalg.norm(K - K0) / np.linalg.norm(K0)}
    return fields, K


def mismatches(snapshot, ref) -> list:
    """Fields of ``snapshot`` that differ from ``ref``: exact for rank and the flag, RTOL relative
    otherwise (both zero at step 0 for the distance and drift: 1 − cos gives rounding there,
    ≤ 1e-15, so absolute RTOL where the reference is below it)."""
    bad = []
    for field, want in ref.items():
        got = getattr(snapshot, field)
        if field in ("rank", "precision_limited") or want is None:
            ok = got == want
        else:
            ok = got is not None and abs(got - want) <= RTOL * max(abs(want), 1e-5 if field in ("kernel_distance", "ntk_drift") else 0)
        if not ok:
            bad.append(field)
    return bad


def train_and_check(model, batched, params, x, y, *, lr, steps=(0, 3, 7, 12), **kwargs):
    """Plain gradient descent on ½·mean (f − y)² with snapshots at ``steps``; every field
    against the reference; returns the snapshots and the last reference."""
    tracker = NTKTracker(model, x, y=y, **kwargs)
    loss = lambda p: 0.5 * jnp.mean((batched(p, jnp.asarray(x)).reshape(-1) - y) ** 2)
    grad = jax.jit(jax.grad(loss))
    K0, snaps, refs = None, [], []
    for t in range(steps[-1] + 1):
        if t in steps:
            snap = tracker.update(params, t)
            ref, K = reference(batched, params, x, y, K0)
            K0 = K if K0 is None else K0
            assert mismatches(snap, ref) == [], (t, snap, ref)
            snaps.append(snap)
            refs.append(ref)
        params = jax.tree_util.tree_map(lambda w, g: w - lr * g, params, grad(params))
    # the run moves the kernel: the comparison of the distance is not between zeros
    assert snaps[-1].kernel_distance > 1e-4 and snaps[-1].ntk_drift > 1e-2
    assert [s.step for s in tracker.snapshots] == list(steps)
    return snaps, refs


# ----------------------------------------------------------------------- the four model kinds
def test_ntkcond_mlp_fields_equal_jacrev_along_training():
    x, y = probe()
    net = ntkcond.mlp(2, 24)
    params = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)
    train_and_check(net, net.apply, params, x, y, lr=2.0)


def test_ntkcond_mlp_with_biases_and_a_smooth_activation():
    x, y = probe(seed=1)
    net = ntkcond.mlp(2, 24, "tanh", w_std=1.5, b_std=0.3)
    params = net.init(jax.random.PRNGKey(1), x.shape[1], dtype=F64)
    train_and_check(net, net.apply, params, x, y, lr=2.0)


def test_flax_nnx_model_fields_equal_jacrev_along_training():
    nnx = pytest.importorskip("flax.nnx")

    class MLP(nnx.Module):
        def __init__(self, rngs):
            kw = dict(param_dtype=F64, rngs=rngs)
            self.l1, self.l2 = nnx.Linear(6, 20, **kw), nnx.Linear(20, 1, **kw)

        def __call__(self, x):
            return self.l2(jax.nn.relu(self.l1(x)))

    net = ntkcond.from_nnx(MLP(nnx.Rngs(0)))
    x, y = probe(seed=2)
    train_and_check(net, net.apply_fn, net.params, x, y, lr=1.0)


def test_plain_apply_fn_fields_equal_jacrev_along_training():
    def apply_fn(params, x):  # a two-layer tanh net written by hand, dict params
        return jnp.tanh(x @ params["w1"] / np.sqrt(6) + params["b1"]) @ params["w2"] / np.sqrt(16)

    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    params = {"w1": jax.random.normal(keys[0], (6, 16), F64), "b1": jnp.zeros(16, F64),
              "w2": jax.random.normal(keys[1], (16,), F64)}
    x, y = probe(seed=3)
    snaps, _ = train_and_check(apply_fn, apply_fn, params, x, y, lr=2.0)
    assert isinstance(snaps[0], NTKSnapshot) and snaps[0].kernel_distance == 0.0


def test_ntkcond_stax_apply_fn_and_from_stax():
    """An ``ntkcond.stax`` net (neural-tangents' interface; its Layer unpacks as the triple),
    tracked through its ``apply_fn`` and as a ``StaxNet`` (``ntkcond.from_stax``): both equal
    the jacrev reference, and each other bit for bit (the same route)."""
    from ntkcond import stax

    init_fn, apply_fn, kernel_fn = stax.serial(stax.Dense(24, W_std=1.5, b_std=0.05), stax.Relu(),
                                               stax.Dense(1))
    x, y = probe(seed=4)
    _, params = init_fn(jax.random.PRNGKey(4), x.shape)
    params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, F64), params)
    plain, _ = train_and_check(apply_fn, apply_fn, params, x, y, lr=2.0)
    wrapped, _ = train_and_check(ntkcond.from_stax(init_fn, apply_fn, kernel_fn), apply_fn, params,
                                 x, y, lr=2.0)
    assert [s.kappa_eff for s in plain] == [s.kappa_eff for s in wrapped]
    assert repr(NTKTracker(ntkcond.from_stax(*stax.serial(stax.Dense(1))), x)).startswith(
        "NTKTracker(stax, n=16")


def test_planted_errors_in_a_field_are_caught():
    """A snapshot field computed with a wrong formula (or off by 1e-9) fails the comparison."""
    x, y = probe()
    net = ntkcond.mlp(1, 24)
    params = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)
    snaps, refs = train_and_check(net, net.apply, params, x, y, lr=2.0, keep_spectra=True)
    snap, ref = snaps[-1], refs[-1]
    cos = 1.0 - ref["kernel_distance"]
    lam = snap.eigenvalues
    above = lam[lam > len(lam) * EPS * lam[-1]]
    p = above / above.sum()
    planted = {
        "kernel_distance": 1.0 - cos**2,                                   # 1 − cos² for 1 − cos
        "alignment": snap.alignment * (y @ y) / np.linalg.norm(y),         # ‖y‖ for ‖y‖²
        "effective_rank": 2.0 ** float(-np.sum(p * np.log(p))),            # 2^H for e^H
        "kappa_eff": snap.kappa_eff * (1 + 1e-9),                          # off by 1e-9
        "lambda_min_nonzero": float(lam[0]) if lam[0] <= above[0] * (1 - 1e-9) else above[0] * 1.01,
        "ntk_drift": snap.ntk_drift**0.5,                                  # a square root too many
        "rank": snap.rank - 1,
        "precision_limited": not snap.precision_limited,
    }
    for field, value in planted.items():
        assert mismatches(dataclasses.replace(snap, **{field: value}), ref) == [field], field


# ---------------------------------------------------------------------- models linear in θ
def test_a_linear_model_has_kernel_distance_exactly_zero():
    x, y = probe(seed=5)
    # ntkcond's depth-0 net f = x W/√d (the structured route) and a plain affine apply_fn
    net = ntkcond.mlp(0)
    params = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)
    affine = lambda p, x: x @ p["w"] + p["b"]
    generic = {"w": jnp.ones(x.shape[1], F64), "b": jnp.zeros((), F64)}
    for model, apply_fn, p in ((net, net.apply, params), (affine, affine, generic)):
        tracker = NTKTracker(model, x, y=y)
        grad = jax.jit(jax.grad(lambda p: 0.5 * jnp.mean((apply_fn(p, jnp.asarray(x)) - y) ** 2)))
        for t in range(30):
            if t % 5 == 0:
                snap = tracker.update(p, t)
                assert snap.kernel_distance == 0.0 and snap.ntk_drift == 0.0, (t, snap)
            p = jax.tree_util.tree_map(lambda w, g: w - 0.5 * g, p, grad(p))
        assert len(tracker) == 6 and len({s.kappa_eff for s in tracker.snapshots}) == 1


def test_a_linearised_net_stays_at_distance_zero_while_the_net_moves():
    x, y = probe(seed=6)
    net = ntkcond.mlp(2, 16)
    p0 = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)

    def linearised(p, xs):  # f(θ₀) + J(θ₀)(θ − θ₀), by a jvp
        delta = jax.tree_util.tree_map(jnp.subtract, p, p0)
        f0, df = jax.jvp(lambda q: net.apply(q, xs), (p0,), (delta,))
        return f0 + df

    lin, full = NTKTracker(linearised, x, y=y), NTKTracker(net, x, y=y)
    p = p0
    grad = jax.jit(jax.grad(lambda p: 0.5 * jnp.mean((linearised(p, jnp.asarray(x)) - y) ** 2)))
    for t in range(12):
        if t % 4 == 0:
            assert lin.update(p, t).kernel_distance == 0.0
            full.update(p, t)
        p = jax.tree_util.tree_map(lambda w, g: w - 2.0 * g, p, grad(p))
    assert full.snapshots[-1].kernel_distance > 1e-4  # the net itself, at the same params, moved


# ----------------------------------------------------------------------------- options
def test_trainable_layers_float32_params_and_probe_inputs_per_update():
    x, y = probe(seed=7)
    net = ntkcond.mlp(2, 16)
    params = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)
    last = NTKTracker(net, x, trainable="last").update(params, 0)
    assert last.kappa_eff == pytest.approx(
        ntkcond.conditioning(ntkcond.empirical_ntk(net, params, x, trainable="last")).kappa_eff,
        rel=1e-12, abs=0)  # the same kernel, reduced by the same conditioning: rounding only
    # float32 params: the float64 kernel of those float32 values, exactly
    p32 = [w.astype(jnp.float32) for w in params]
    s32 = NTKTracker(net, x).update(p32, 0)
    s64 = NTKTracker(net, x).update([w.astype(jnp.float32).astype(F64) for w in params], 0)
    assert s32.kappa_eff == s64.kappa_eff
    # probe inputs given to one update
    tracker = NTKTracker(net, x)
    tracker.update(params, 0)
    other = tracker.update(params, 1, x=x[::-1].copy())  # the same rows, reversed: same spectrum
    assert other.kappa_eff == pytest.approx(tracker.snapshots[0].kappa_eff, rel=1e-10, abs=0)
    assert other.kernel_distance > 0.01  # a permuted kernel is another matrix


def test_frame_and_spectra():
    pd = pytest.importorskip("pandas")
    x, y = probe()
    net = ntkcond.mlp(1, 16)
    params = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)
    kept = NTKTracker(net, x, y=y, keep_spectra=True)
    plain = NTKTracker(net, x)
    for t in (0, 5, 9):
        kept.update(params, t)
        plain.update(params, t)
        params = [1.01 * w for w in params]
    frame = kept.frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.step) == [0, 5, 9]
    assert list(frame.columns) == ["step", "kappa_eff", "lambda_max", "lambda_min_nonzero", "rank",
                                   "precision_limited", "effective_rank", "kernel_distance",
                                   "alignment", "ntk_drift"]
    assert frame.attrs == {"model": "ntkcond.mlp", "n": 16, "rtol": 16 * EPS, "atol": 0.0}
    assert plain.frame().alignment.isna().all() and plain.snapshots[0].alignment is None
    steps, eig = kept.spectra()
    assert steps.tolist() == [0, 5, 9] and eig.shape == (3, 16)
    assert eig[1, -1] == kept.snapshots[1].lambda_max
    # a homogeneous net scaled by 1.01 per layer: the same normalised kernel up to rounding
    assert frame.kappa_eff.std() / frame.kappa_eff.mean() < 1e-12
    with pytest.raises(ValueError, match="NTKTracker.spectra: expected a tracker that keeps spectra"):
        plain.spectra()
    assert "NTKTracker(ntkcond.mlp, n=16, 3 snapshots, last step 9)" == repr(kept)
    assert repr(kept.snapshots[0]).startswith("NTKSnapshot(step=0, kappa_eff=")


# ---------------------------------------------------------------------------- bad input
def test_bad_input_is_one_clear_error():
    x, y = probe()
    net = ntkcond.mlp(1, 16)
    params = net.init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)
    tracker = NTKTracker(net, x, y=y)
    tracker.update(params, 3)
    # params of another model
    other = ntkcond.mlp(1, 8).init(jax.random.PRNGKey(0), x.shape[1], dtype=F64)
    with pytest.raises(ValueError, match=r"NTKTracker.update \(step 4\): expected params of shapes"):
        tracker.update(other, 4)
    # a step that goes backwards, or repeats
    for step in (2, 3):
        with pytest.raises(ValueError, match="expected a step after the previous snapshot's step 3"):
            tracker.update(params, step)
    with pytest.raises(TypeError, match="NTKTracker.update: expected step as an integer"):
        tracker.update(params, 4.0)
    # non-finite parameters: the step, the leaf and the entry are named
    bad = [params[0].at[2, 5].set(jnp.nan), params[1]]
    with pytest.raises(ValueError, match=r"NTKTracker.update \(step 7\): expected finite params\[0\], got NaN at entry \(2, 5\)"):
        tracker.update(bad, 7)
    # probe inputs of another shape for one update
    with pytest.raises(ValueError, match=r"expected probe inputs x of shape \(16, 6\).*got shape \(8, 6\)"):
        tracker.update(params, 8, x=x[:8])
    assert [s.step for s in tracker.snapshots] == [3]  # nothing was appended by the failures
    # a generic model: params of another structure, outputs not one per example
    f = lambda p, x: x @ p["w"]
    gen = NTKTracker(f, x)
    gen.update({"w": jnp.ones(6, F64)}, 0)
    with pytest.raises(ValueError, match="expected params of the tracked model"):
        gen.update({"v": jnp.ones(6, F64)}, 1)
    with pytest.raises(ValueError, match=r"expected a model with one output per example .* got outputs of shape \(16, 3\)"):
        NTKTracker(f, x).update({"w": jnp.ones((6, 3), F64)}, 0)
    with pytest.raises(ValueError, match="apply_fn\\(params, x\\) fails on these params"):
        NTKTracker(f, x).update({"w": jnp.ones(5, F64)}, 0)
    # construction
    with pytest.raises(TypeError, match="NTKTracker: expected model as an ntkcond.mlp net"):
        NTKTracker("relu", x)
    with pytest.raises(ValueError, match="expected trainable='all' for a model that is not"):
        NTKTracker(f, x, trainable="last")
    with pytest.raises(ValueError, match=r"expected targets y of shape \(16,\)"):
        NTKTracker(net, x, y=y[:3])
    with pytest.raises(ValueError, match="expected targets y not all zero"):
        NTKTracker(net, x, y=np.zeros(16))
    with pytest.raises(ValueError, match="NTKTracker: expected finite x, got NaN in row 4"):
        NTKTracker(net, np.where(np.arange(16)[:, None] == 4, np.nan, x))
    with pytest.raises(ValueError, match=r"of shape \(n, d\) for an ntkcond.mlp net"):
        NTKTracker(net, x[:, :, None])
    with pytest.raises(TypeError, match="expected keep_spectra as a bool"):
        NTKTracker(net, x, keep_spectra="yes")
    with pytest.raises(ntkcond.InsufficientMemoryError, match="use fewer probe inputs"):
        NTKTracker(net, np.ones((400_000, 1)))  # 6 kernels of 400,000² float64: 7.7 PB
    # a dead net: the zero kernel
    with pytest.raises(ValueError, match=r"NTKTracker.update \(step 0\): expected a nonzero kernel"):
        NTKTracker(net, x).update([jnp.zeros_like(w) for w in params], 0)


def test_a_model_net_with_several_outputs_is_refused_at_construction():
    nnx = pytest.importorskip("flax.nnx")
    net = ntkcond.from_nnx(nnx.Linear(6, 3, param_dtype=F64, rngs=nnx.Rngs(0)))
    x, _ = probe()
    with pytest.raises(ValueError, match=r"NTKTracker: expected a model with one output per example"):
        NTKTracker(net, x)
    one = ntkcond.from_nnx(nnx.Linear(6, 1, param_dtype=F64, rngs=nnx.Rngs(0)))
    tracker = NTKTracker(one, x)
    with pytest.raises(ValueError, match="expected params of the tracked model"):
        tracker.update(net.params, 0)


@pytest.mark.slow  # a fresh interpreter and 1,000 optax steps: ~10 s
def test_the_training_page_example_prints_what_the_page_says():
    # docs/training.md: its optax example runs as printed (a fresh interpreter), and its table
    # matches the page's to 1e-3 relative for every number (printed to 4 digits; the training
    # is float32, whose rounding on another CPU moves the 4th digit of a kernel distance of
    # 1e-4 at most, measured here: the same digits) and exactly for the integers.
    pytest.importorskip("optax")
    pytest.importorskip("pandas")
    import os
    import re
    import subprocess
    import sys

    from conftest import REPO

    with open(os.path.join(REPO, "docs", "training.md"), encoding="utf-8") as f:
        page = f.read()
    code, expected = re.search(r"## With optax.*?```python\n(.*?)```\n+```text\n(.*?)```", page, re.S).groups()
    assert len(code.strip().splitlines()) <= 13
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": REPO})
    assert out.returncode == 0, out.stderr[-2000:]
    got, want = out.stdout.strip().splitlines(), expected.strip().splitlines()
    assert got[0] == want[0] and len(got) == len(want)
    for a, b in zip(got[1:], want[1:]):
        a, b = np.array(a.split(), float), np.array(b.split(), float)
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=0), (a, b)
