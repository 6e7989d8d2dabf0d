"""Records of one batch (``ntkcond.runs.depth``): ``measure_finite_batch`` against the structured
kernel and against the reference path of one net at a time."""
import numpy as np
import pytest

pytest.importorskip("jax")

import ntkcond  # noqa: E402
from conftest import load_script  # noqa: E402
from ntkcond._core.x64 import x64  # noqa: E402
from ntkcond.network import resolve_mlps  # noqa: E402
from ntkcond.runs.depth import RECORD_KEYS, measure_finite_batch  # noqa: E402


def nets(activations, **options):
    """The nets the batch functions take (built once, as the commands build them)."""
    return resolve_mlps(activations, where="test", **options)


def test_measure_finite_batch_records_are_the_structured_kernel():
    x = np.random.RandomState(0).randn(6, 4)
    index = np.arange(10, 16)
    recs = measure_finite_batch(x, index, depths=[2, 0], nets=nets(["relu"]), width=16, seeds=[3],
                                meta={"dataset": "toy", "split": "train", "batch_index": 0})
    assert [r["depth"] for r in recs] == [0, 2]
    for r in recs:
        assert set(RECORD_KEYS) <= set(r) and r["width"] == 16 and r["seed"] == 3 and r["dataset"] == "toy"
    with x64():
        import jax
        import jax.numpy as jnp

        net = ntkcond.mlp(2, 16)
        K = np.asarray(ntkcond.empirical_ntk(net, net.init(jax.random.PRNGKey(3), 4, dtype=jnp.float64),
                                             jnp.asarray(x)))
    cond = ntkcond.conditioning(K)
    angle, i, j = ntkcond.smallest_pairwise_angle(K)
    # same float64 kernel, same eigensolver: agreement to rounding of eigvalsh (~1e-13)
    assert np.isclose(recs[1]["kappa_eff"], cond.kappa_eff, rtol=1e-10)
    assert np.isclose(recs[1]["min_grad_angle_deg"], np.degrees(angle), rtol=1e-10)
    assert recs[1]["min_grad_angle_pair"] == [int(index[i]), int(index[j])]
    assert not recs[1]["precision_limited"]


def reference_records(x, index, *, depths, activations, width, seeds, trainable="all"):
    """The records as ``iter_finite_batch`` computed them before the sweep engine: per record
    ``MLP.init`` + ``empirical_ntk`` + ``spectrum_record``, one after the other."""
    import math

    import jax
    import jax.numpy as jnp

    from ntkcond.infinite.geometry import input_angles
    from ntkcond.runs.depth import spectrum_record
    from ntkcond.spectrum import argmin_upper, pairwise_angles

    min_input = math.degrees(argmin_upper(input_angles(x))[0])
    out = []
    for act in activations:
        for seed in seeds:
            for depth in depths:
                with x64():
                    net = ntkcond.mlp(depth, width, act)
                    params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=jnp.float64)
                    K = np.asarray(ntkcond.empirical_ntk(net, params, jnp.asarray(x, jnp.float64),
                                                         trainable=trainable))
                rec = {"n": len(x), "depth": depth, "activation": net.activation.name,
                       "width": width, "seed": seed, "trainable": trainable}
                rec.update(spectrum_record(K, pairwise_angles(K), index, dtype=np.float64))
                rec["min_input_angle_deg"] = min_input
                out.append(rec)
    return out


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("trainable", ["all", "last"])
def test_sweep_engine_records_equal_the_reference_path(digits_batch, workers, trainable):
    # Two batches of 24 digits: the same float64 operations in the same order as the reference
    # give the same bits; 1e-12 relative admits a BLAS that rounds an entry differently
    # (tests/test_sweep.py). Rank-deficient linear batches: test_sweep.
    from ntkcond.finite.sweep import NetWeights

    x, index = digits_batch[:48], np.arange(100, 148)
    weights = NetWeights()
    kw = dict(depths=[0, 1, 2, 4], width=24, seeds=[0, 2], trainable=trainable)
    for batch in range(2):  # the second batch reuses every net
        xb = x[batch::2]
        ours = measure_finite_batch(xb, index[batch::2], nets=nets(["relu", "linear"]),
                                    weights=weights, workers=workers, **kw)
        ref = reference_records(xb, index[batch::2], activations=["relu", "linear"], **kw)
        assert len(ours) == len(ref) == 16
        for a, b in zip(ours, ref):
            for key, value in b.items():
                if isinstance(value, float):
                    assert a[key] == pytest.approx(value, rel=1e-12, abs=0.0), key
                else:
                    assert a[key] == value, key
    assert (weights.draws, weights.hits) == (8, 24)  # 2 seeds x 4 depths drawn once, used 4 times


def test_records_read_each_built_kernel_without_checking_it_again(monkeypatch):
    """Validated once: the kernels ``measure_*_batch`` build (finite: checked for NaN/Inf where
    built; exactly symmetric by construction) reach the spectrum cores with no second
    finiteness pass and float64 copy (``as_square_kernel``), no symmetry test and no transpose
    (``check_symmetric``, ``symmetric_part``); ``spectrum_record``, for a kernel from outside,
    runs each once, shared by κ and the bound, and gives the same record bit for bit."""
    import ntkcond.spectrum._kernel_checks as checks
    from ntkcond.infinite.kernels import depth_sweep
    from ntkcond.runs.depth import measure_infinite_batch, spectrum_record

    calls = []
    modules = [checks] + [__import__(f"ntkcond.spectrum.{m}", fromlist=["_"])
                          for m in ("condition_numbers", "interlacing", "kernel_angles")]
    for name in ("as_square_kernel", "check_symmetric", "symmetric_part"):
        real = getattr(checks, name)

        def spy(*args, _real=real, _name=name, **kw):
            calls.append(_name)
            return _real(*args, **kw)

        for module in modules:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, spy)
    x = np.random.RandomState(1).randn(12, 5)
    index = np.arange(12)
    finite = measure_finite_batch(x, index, depths=[0, 2], nets=nets(["relu", "linear"]), width=8,
                                  seeds=[0], workers=1)
    infinite = measure_infinite_batch(x, index, depths=[0, 2], nets=nets(["relu"]))
    assert len(finite) == 4 and len(infinite) == 2
    assert calls == []
    for item, rec in zip(depth_sweep(x, [0, 2]), infinite):
        again = spectrum_record(item.ntk, item.angles, index)
        assert calls == ["as_square_kernel", "check_symmetric", "symmetric_part"]
        calls.clear()
        for key, value in again.items():
            assert rec[key] == value, key
def test_dead_net_is_named_instead_of_a_kernel_message(tmp_path, capsys):
    """A width-1 bias-free ReLU net has inputs on which every unit of a layer is inactive: its
    gradient there is zero and its angles are undefined. The error names the net (width,
    activation, seed, depth), the batch and the data-set row, in one line, exit 2."""
    script = load_script("cond_vs_depth")
    argv = ["--batch", "32", "--max-batches", "1", "--width", "1", "--seeds", "1",
            "--depths", "0-4", "--no-progress", "--out", str(tmp_path)]
    assert script.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the width-1 relu net of seed 0 at depth" in err and "of batch 0 (first: row" in err


# --- the network options of issue 21 (w_std, b_std, residual) -------------------------------

from ntkcond.runs.depth import NET_KEYS, measure_infinite_batch  # noqa: E402


@pytest.mark.parametrize("kwargs, message", [
    ({"w_std": 0.0}, "expected w_std in"), ({"w_std": -1.0}, "expected w_std in"),
    ({"w_std": float("nan")}, "expected w_std in"), ({"w_std": 1e200}, "expected w_std in"),
    ({"w_std": 1.0, "b_std": -0.1}, "expected b_std 0 or in"),
    ({"w_std": 1.0, "residual": 0.0}, "expected residual in"),
])
def test_net_options_reject_bad_values(kwargs, message):
    with pytest.raises(ValueError, match="where_x: " + message):
        resolve_mlps(["relu"], **kwargs, where="where_x")


def test_net_options_types_and_defaults():
    assert resolve_mlps(["relu"], where="w")[0].options() == {}
    assert resolve_mlps(["relu"], None, 0, None, where="w")[0].options() == {}
    assert resolve_mlps(["relu"], 1.5, 0.1, 0.5, where="w")[0].options() == {
        "w_std": 1.5, "b_std": 0.1, "residual": 0.5}
    # norm-preserving weights with biases: one net, whatever spelling reaches it
    assert resolve_mlps(["relu"], None, 0.1, where="w")[0].options() == {"b_std": 0.1}
    with pytest.raises(TypeError, match="w: expected w_std a real number"):
        resolve_mlps(["relu"], "1.5", where="w")
    with pytest.raises(ValueError, match="w: activation 'gelu' is not homogeneous"):
        resolve_mlps(["gelu"], where="w")
    built = resolve_mlps(["relu", "erf"], 1.5, where="w")
    assert resolve_mlps(built, where="again") == built  # the objects pass, unchecked again
    with pytest.raises(ValueError, match="again: expected either nets"):
        resolve_mlps(built, 1.5, where="again")


def _relu_bias_reference(x, depth, sw, sb):
    """The NTK of eq. (1) of ``ntkcond.network.mlp`` for ReLU, by the textbook arc-cosine
    formulas (Cho & Saul; arccos form, fine away from near-duplicate pairs): an independent check."""
    d = x.shape[1]
    S = sw**2 * (x @ x.T) / d + sb**2
    T = S.copy()
    for _ in range(depth):
        q = np.sqrt(np.diag(S))
        rho = np.clip(S / np.outer(q, q), -1, 1)
        th = np.arccos(rho)
        np.fill_diagonal(th, 0.0)  # ρ = 1 exactly there; arccos of its rounding would be ~1e-8
        M = np.outer(q, q) * (np.sin(th) + (np.pi - th) * np.cos(th)) / (2 * np.pi)
        Md = (np.pi - th) / (2 * np.pi)
        S = sw**2 * M + sb**2
        T = S + sw**2 * Md * T
    return T


def test_family_records_match_an_independent_recursion_with_biases():
    x = np.random.default_rng(1).standard_normal((20, 7))
    recs = measure_infinite_batch(x, np.arange(20), depths=[0, 1, 4],
                                  nets=nets(["relu"], w_std=1.3, b_std=0.4))
    for r in recs:
        K = _relu_bias_reference(x, r["depth"], 1.3, 0.4)
        cond = ntkcond.conditioning(K)
        # two float64 evaluations of one kernel (arccos route vs gap-carrying recursion):
        # κ_eff of a well-conditioned 20 × 20 kernel agrees to ~κ·1e-14
        assert r["kappa_eff"] == pytest.approx(cond.kappa_eff, rel=1e-9, abs=0)
        assert r["w_std"] == 1.3 and r["b_std"] == 0.4 and "residual" not in r
        cos = np.clip(K / np.sqrt(np.outer(np.diag(K), np.diag(K))), -1, 1)
        phi = np.degrees(np.arccos(cos[np.triu_indices(20, 1)]).min())  # angles > 10° here
        assert r["min_grad_angle_deg"] == pytest.approx(phi, rel=1e-9, abs=1e-9)


def test_norm_preserving_weights_as_w_std_give_the_default_records():
    """s_w = √c at every layer multiplies the NTK by c: the same κ and angles (to rounding)."""
    x = np.random.default_rng(2).standard_normal((16, 9))
    for act, c in [("relu", 2.0), ("abs", 1.0), ("leaky:-0.5", 1.6), ("leaky:0.2", 2 / 1.04)]:
        base = measure_infinite_batch(x, np.arange(16), depths=range(5), nets=nets([act]))
        fam = measure_infinite_batch(x, np.arange(16), depths=range(5),
                                     nets=nets([act], w_std=c**0.5))
        for a, b in zip(base, fam):
            assert not set(NET_KEYS) & set(a) and b["w_std"] == c**0.5
            assert b["kappa_eff"] == pytest.approx(a["kappa_eff"], rel=1e-12, abs=0)
            assert b["min_grad_angle_deg"] == pytest.approx(a["min_grad_angle_deg"], rel=1e-12, abs=0)
            assert b["lambda_max"] == pytest.approx(c * a["lambda_max"], rel=1e-12, abs=0)


def test_finite_batch_with_options():
    x = np.random.default_rng(3).standard_normal((6, 4))
    kw = dict(depths=[1], nets=nets(["relu"], w_std=1.5, b_std=0.1), width=8, seeds=[0])
    recs = measure_finite_batch(x, np.arange(6), **kw)
    assert recs[0]["w_std"] == 1.5 and recs[0]["b_std"] == 0.1
