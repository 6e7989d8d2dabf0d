"""Orthogonal and XOR data as independent linear nets
(``ntkcond.papers.zhang_saxe_latham.nets.independent_nets``, with the inits of
``nets.independent_inits``; arXiv 2406.12615). Exact answers come from the scalar maps of the
module docstring; every tolerance is justified where it is used."""
from __future__ import annotations

import numpy as np
import pytest

import ntkcond
from ntkcond.papers import zhang_saxe_latham as zsl
from ntkcond.papers.zhang_saxe_latham.nets import biasfree as bf
from ntkcond.papers.zhang_saxe_latham.nets import training as zsl_training


def _orthogonal_problem(seed=0):
    """3 scaled basis vectors in R^5 (norms 1.5, 2, 2) and targets of both signs."""
    x = np.eye(3, 5) * np.array([1.5, 2.0, 2.0])[:, None]
    y = np.array([1.2, -0.8, -1.5])
    return x, y


# ----------------------------------------------------------------------------- orthogonal


def test_orthogonal_decomposition_matches_independent_saxe_nets():
    x, y = _orthogonal_problem()
    for groups in (None, [[0], [1, 2]]):  # one net per point; points 1, 2 share one net
        W1, W2 = zsl.orthogonal_init(x, y, groups=groups, units=2, scale=1e-2, seed=1)
        nets = zsl.orthogonal_nets(x, y, W1, W2, groups=groups)
        # rate = ‖x_g‖/n: a norm and a division, a rounding or two (measured: equal to the bit)
        assert nets.rate.tolist() == pytest.approx([r / 3 for r in
                                                    ([1.5, 2.0, 2.0] if groups is None else [1.5, 2.0])],
                                                   rel=1e-15, abs=0)
        T = 1.2 * np.max(nets.learning_times(0.99))
        errs = {}
        for lr in (0.02, 0.01):
            steps = int(round(T / lr))
            r = zsl_training.train_two_layer(x, y, W1, W2, activation=0.0, lr=lr, steps=steps)
            assert r.loss[-1] < 1e-6 * r.loss[0]  # everything was learned
            # GD is exactly the per-net map m <- m(1 + lr r (Y - m))^2: rounding only
            # (~1e-15 observed); 1e-12 leaves a margin of 1000.
            assert np.max(np.abs(r.loss - nets.discrete_loss(steps, lr))) < 1e-12 * r.loss[0]
            errs[lr] = np.max(np.abs(r.loss - nets.loss(r.time))) / r.loss[0]
        # Closed form (gradient flow) vs Euler: first order, so halving lr halves the error
        # (ratio 2 +- 10%), and it is small (observed ~0.5 lr r Y / ... ~ 1e-2 at lr = 0.02).
        assert 1.8 < errs[0.02] / errs[0.01] < 2.2 and errs[0.01] < 2e-2


def test_orthogonal_nets_are_independent_and_a_shared_unit_couples_them():
    x, y = _orthogonal_problem()
    W1, W2 = zsl.orthogonal_init(x, y, units=2, scale=1e-2, seed=1)
    kw = dict(activation=0.0, lr=0.02, steps=600, snapshot_every=60)
    r = zsl_training.train_two_layer(x, y, W1, W2, **kw)
    y2 = y.copy()
    y2[2] = -3.0  # change point 2's target only
    r2 = zsl_training.train_two_layer(x, y2, W1, W2, **kw)
    f, f2 = (np.array([bf.network_apply([a, b], x, 0.0)[:, 0] for a, b in zip(*q.snapshots)])
             for q in (r, r2))
    # Points 0, 1 never see point 2: their outputs are identical (rounding only).
    assert np.max(np.abs(f[:, :2] - f2[:, :2])) < 1e-14
    assert np.max(np.abs(f[:, 2] - f2[:, 2])) > 0.1
    # Planted violation: a unit of point 1 switched on for point 2 (same target sign, so it
    # stays on): its second-layer weight couples the two nets and the prediction fails by
    # ~9% of L(0) (observed), far above the 1e-12 of the exact case.
    bad = W1.copy()
    bad[2, 2] = bad[2, 1]
    nets = zsl.orthogonal_nets(x, y, bad, W2)
    steps = 1500
    rb = zsl_training.train_two_layer(x, y, bad, W2, activation=0.0, lr=0.02, steps=steps)
    assert np.max(np.abs(rb.loss - nets.discrete_loss(steps, 0.02))) > 1e-2 * rb.loss[0]


# ----------------------------------------------------------------------------- XOR


def test_xor_pair_nets_prediction_and_slope():
    x, y = zsl.xor_data(d=2)
    assert bf.is_symmetric(x) and np.array_equal(y[:2], y[2:]) and y.tolist() == [1, -1, 1, -1]
    W1, W2 = zsl.pair_init(x, y, pairs=2, scale=1e-2, seed=1)
    for alpha in (0.0, 0.5):
        nets = zsl.pair_nets(x, y, W1, W2, activation=alpha)
        assert nets.rate == pytest.approx((1 - alpha) * np.sqrt(2) / 4 * np.ones(2), rel=1e-14, abs=0)
        errs = {}
        for lr in (0.02, 0.01):
            steps = int(round(30 / lr))
            r = zsl_training.train_two_layer(x, y, W1, W2, activation=alpha, lr=lr, steps=steps)
            disc = np.max(np.abs(r.loss - nets.discrete_loss(steps, lr))) / r.loss[0]
            if alpha == 0.0:
                # ReLU on exact basis data: the cross pre-activations stay exactly 0 and the
                # GD map is exact (rounding ~1e-15).
                assert disc < 1e-12
            errs[lr] = np.max(np.abs(r.loss - nets.loss(r.time))) / r.loss[0]
        # Flow prediction vs GD: O(lr) (Euler, and for alpha > 0 the GD chatter of the units
        # at the zero pre-activation of the other pair, also O(lr)): halves with lr.
        assert 1.8 < errs[0.02] / errs[0.01] < 2.2 and errs[0.01] < 1e-2
    # alpha = 1: a linear net has no even part and never fits XOR: loss stays at 1/2.
    r = zsl_training.train_two_layer(x, y, W1, W2, activation=1.0, lr=0.01, steps=2000)
    nets = zsl.pair_nets(x, y, W1, W2, activation=1.0)
    assert nets.rate.tolist() == [0.0, 0.0] and nets.loss(20.0)[0] == 0.5
    assert np.max(np.abs(r.loss - 0.5)) < 1e-12  # f = 0 exactly on this data (rounding)
    # Slower as alpha -> 1: predicted half-times grow like 1/(1 - alpha) up to the log factor.
    t = [np.max(zsl.pair_nets(x, y, W1, W2, activation=a).learning_times()) for a in (0, 0.5, 0.9)]
    assert t[0] < t[1] < t[2]


def test_xor_and_pair_errors():
    x, y = zsl.xor_data(d=2)
    W1, W2 = zsl.pair_init(x, y, scale=1e-2)
    with pytest.raises(ValueError, match="pair_nets: expected even targets"):
        zsl.pair_nets(x, np.array([1.0, -1.0, -1.0, 1.0]), W1, W2)
    with pytest.raises(ValueError, match="pair_init: expected symmetric inputs"):
        zsl.pair_init(x[[0, 1, 3, 2]], y, scale=1e-2)
    xn, yn = zsl.xor_data(d=4, noise=0.1, copies=2)
    assert bf.is_symmetric(xn)
    with pytest.raises(ValueError, match=r"pair_init: expected pairwise orthogonal .*got largest \|cos\|"):
        zsl.pair_init(xn, yn, scale=1e-2)
    with pytest.raises(ValueError, match="xor_data: expected noise >= 0"):
        zsl.xor_data(noise=-1.0)


def test_orthogonalize_digits_and_errors_for_non_orthogonal_inputs():
    digits = ntkcond.datasets.load("digits").x[:6]
    z = zsl.orthogonalize(digits)
    assert zsl.max_abs_cosine(z) < 1e-13  # SVD round-off ~1e-16
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), np.linalg.norm(digits, axis=1), rtol=1e-12)
    assert zsl.max_abs_cosine(digits) > 0.3  # the raw images are far from orthogonal
    y = np.ones(6)
    W1, W2 = zsl.orthogonal_init(z, y, scale=1e-2)
    assert zsl.orthogonal_nets(z, y, W1, W2).m0.min() > 0
    cos = zsl.max_abs_cosine(digits)
    with pytest.raises(ValueError, match=rf"orthogonal_nets: expected pairwise orthogonal.*largest \|cos\| = {cos:.3g}"):
        zsl.orthogonal_nets(digits, y, W1, W2)
    with pytest.raises(ValueError, match="orthogonal_init: expected pairwise orthogonal"):
        zsl.orthogonal_init(digits, y, scale=1e-2)
    x, y = _orthogonal_problem()
    with pytest.raises(ValueError, match="one norm"):
        zsl.orthogonal_init(x, y, groups=[[0, 1], [2]], scale=1e-2)
    with pytest.raises(ValueError, match="positive multiples of one direction"):
        # equal norms in group [0, 1], but targets 1.2 and -0.8 of opposite signs
        zsl.orthogonal_init(x * [[1], [0.75], [1]], y, groups=[[0, 1], [2]], scale=1e-2)
    with pytest.raises(ValueError, match="partition"):
        zsl.orthogonal_init(x, y, groups=[[0], [1]], scale=1e-2)
    with pytest.raises(ValueError, match="m0 > 0"):
        W1, W2 = zsl.orthogonal_init(x, y, scale=1e-2)
        zsl.orthogonal_nets(x, y, W1, -W2)
    with pytest.raises(ValueError, match="at most d = 64 rows"):
        zsl.orthogonalize(np.ones((65, 64)))
