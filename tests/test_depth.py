"""Records of one batch (``ntkcond.runs.depth``): ``measure_finite_batch`` against the structured
kernel and against the reference path of one net at a time."""
import numpy as np
import pytest

pytest.importorskip("jax")

import ntkcond  # noqa: E402
from ntkcond._core.x64 import x64  # noqa: E402
from ntkcond.runs.depth import RECORD_KEYS, measure_finite_batch  # noqa: E402


def test_measure_finite_batch_records_are_the_structured_kernel():
    x = np.random.RandomState(0).randn(6, 4)
    index = np.arange(10, 16)
    recs = measure_finite_batch(x, index, depths=[2, 0], activations=["relu"], width=16, seeds=[3],
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
    nets = NetWeights()
    kw = dict(depths=[0, 1, 2, 4], activations=["relu", "linear"], width=24, seeds=[0, 2],
              trainable=trainable)
    for batch in range(2):  # the second batch reuses every net
        xb = x[batch::2]
        ours = measure_finite_batch(xb, index[batch::2], nets=nets, workers=workers, **kw)
        ref = reference_records(xb, index[batch::2], **kw)
        assert len(ours) == len(ref) == 16
        for a, b in zip(ours, ref):
            for key, value in b.items():
                if isinstance(value, float):
                    assert a[key] == pytest.approx(value, rel=1e-12, abs=0.0), key
                else:
                    assert a[key] == value, key
    assert (nets.draws, nets.hits) == (8, 24)  # 2 seeds x 4 depths drawn once, used 4 times
