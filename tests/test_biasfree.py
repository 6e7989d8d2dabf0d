"""Tests of ntkcond.papers.zhang_saxe_latham.nets.biasfree (and its use of nets.saxe) against
exact answers (arXiv 2406.12615)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ntkcond
from ntkcond._core.x64 import x64
from ntkcond.papers.zhang_saxe_latham.nets import biasfree as bf
from ntkcond.papers.zhang_saxe_latham.nets import training as zsl_training
from ntkcond.papers.zhang_saxe_latham.nets import saxe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPS = np.finfo(np.float64).eps


def _problem(n_half=24, d=5, s=2.0, seed=0):
    """Whitened symmetric Gaussian inputs and a rank-one linear teacher y = s vᵀx."""
    rng = np.random.default_rng(seed)
    x0 = bf.whiten(rng.standard_normal((n_half, d)))
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    x, y = bf.symmetrize(x0, s * x0 @ v)
    return x, y, v


# ----------------------------------------------------------------------------- item 1


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_odd_part_is_linear_map_for_random_two_layer_nets(alpha):
    rng = np.random.default_rng(1)
    W1, W2, x = rng.standard_normal((11, 4)), rng.standard_normal((3, 11)), rng.standard_normal((50, 4))
    odd, even = bf.odd_even_parts(lambda z: bf.network_apply([W1, W2], z, alpha), x)
    scale = np.abs(W2) @ np.abs(W1) @ np.abs(x).T  # bound on every summand of every output
    # Two float64 matrix products of length h·d: rounding below 10·(h + d)·eps of the sum of
    # |terms| (classical bound h·eps per product, factor 10 of slack).
    tol = 10 * (11 + 4) * EPS * scale.T
    assert np.all(np.abs(odd - x @ bf.odd_linear_map(W1, W2, alpha).T) <= tol)
    assert np.all(np.abs(even - (1 - alpha) / 2 * np.abs(x @ W1.T) @ W2.T) <= tol)


def test_odd_part_is_linear_after_training_and_not_for_a_deep_net():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 3))
    y = np.sin(3 * x[:, :1]) + x[:, 1:2] ** 2  # no symmetry at all
    W = bf.gaussian_init([3, 8, 1], scale=0.5, seed=3)
    r = zsl_training.train_two_layer(x, y, *W, activation=0.1, lr=0.05, steps=200)
    assert r.loss[-1] < 0.9 * r.loss[0]  # it did train
    odd, _ = bf.odd_even_parts(lambda z: bf.network_apply(r.weights, z, 0.1), x)
    dev = np.max(np.abs(odd - x @ bf.odd_linear_map(*r.weights, 0.1).T)) / np.max(np.abs(odd))
    assert dev < 1e-13  # round-off of two small matmuls (~1e-16 observed)
    # The check can fail: a depth-3 net's odd part is not linear (least-squares residual large).
    W3 = bf.gaussian_init([3, 8, 8, 1], scale=1.0, seed=4)
    odd3, _ = bf.odd_even_parts(lambda z: bf.network_apply(W3, z, 0.0), x)
    beta, *_ = np.linalg.lstsq(x, odd3, rcond=None)
    assert np.linalg.norm(odd3 - x @ beta) > 1e-3 * np.linalg.norm(odd3)


def test_two_layer_floor_for_product_target():
    rng = np.random.default_rng(5)
    x, y = bf.symmetrize(rng.standard_normal((300, 3)))[0], None
    y = x[:, 0] * x[:, 1] * x[:, 2]
    floor = bf.two_layer_floor(x, y)
    # Exact decomposition eq. (2): for ANY two-layer net, loss = L_odd + L_even >= floor.
    for seed in range(3):
        W = bf.gaussian_init([3, 6, 1], scale=1.0, seed=seed)
        f = bf.network_apply(W, x, 0.0)[:, 0]
        assert 0.5 * np.mean((f - y) ** 2) >= floor * (1 - 1e-12)
    W = bf.gaussian_init([3, 16, 1], scale=1.0, seed=6)
    W = [W[0] * np.sqrt(2 / 3), W[1] / 4]
    r = zsl_training.train_network(x, y, W, activation=0.0, lr=0.1, steps=1500)
    # Trained: never below the floor (up to rounding), and close to it (within 2%: the
    # odd part converges to the least-squares map, the even part to 0).
    assert floor * (1 - 1e-12) <= r.loss[-1] <= 1.02 * floor


# ----------------------------------------------------------------------------- item 2


@pytest.mark.parametrize("loss", ["square", "logistic"])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_exact_linear_equivalence_and_planted_asymmetry(loss, alpha):
    x, y, _ = _problem()
    y = y if loss == "square" else np.sign(y)
    W1, W2 = bf.mirrored_init(x.shape[1], 3, scale=1e-2, seed=1)
    kw = dict(activation=alpha, lr=0.05, steps=600, loss=loss, snapshot_every=20)
    eq = bf.linear_equivalence(x, y, W1, W2, **kw)
    assert eq.mirrored and eq.symmetric and eq.c == (1 + alpha) / 2
    assert eq.relu.loss[-1] < 0.5 * eq.relu.loss[0]  # the nets did learn
    # Exact in exact arithmetic (module docstring (iii)); in float64 the two runs differ by
    # rounding only: ~1e-15 observed over 600 steps. 1e-12 leaves a margin of ~1000.
    TOL = 1e-12
    assert eq.loss_deviation < TOL and eq.weight_deviation < TOL
    # The mirrored structure itself is kept (to the same rounding).
    assert np.max(np.abs(eq.relu.weights[0][3:] + eq.relu.weights[0][:3])) < TOL
    # A planted asymmetry (one input off its mirror by 1e-2) must break it far above TOL.
    xp = x.copy()
    xp[-1] += 1e-2
    bad = bf.linear_equivalence(xp, y, W1, W2, **kw)
    assert not bad.symmetric
    assert bad.weight_deviation > 1e4 * TOL
    if alpha < 1:  # and without the mirrored init
        G1, G2 = bf.gaussian_init([x.shape[1], 6, 1], scale=1e-2, seed=2)
        assert bf.linear_equivalence(x, y, G1, G2, **kw).weight_deviation > 1e4 * TOL


def test_time_rescaling_recomputed_from_gradient_ratio():
    # c = (1+α)/2 independently: ∂L/∂W of the mirrored ReLU net equals √c × the linear net's
    # gradient at √c·W (module docstring (iii)); use finite differences in plain numpy.
    x, y, _ = _problem(n_half=10, d=3)
    W1, W2 = bf.mirrored_init(3, 2, scale=0.3, seed=7)
    for alpha in (0.0, 0.25, 0.7):
        c = saxe.time_rescaling(alpha)
        assert c == pytest.approx((1 + alpha) / 2, abs=0)

        def loss(A, B, a):
            return 0.5 * np.mean(np.sum((bf.network_apply([A, B], x, a) - y) ** 2, axis=1))

        h = 1e-6
        E = np.zeros_like(W1)
        E[0, 1] = h
        g_relu = (loss(W1 + E, W2, alpha) - loss(W1 - E, W2, alpha)) / (2 * h)
        s = np.sqrt(c)
        g_lin = (loss(s * W1 + E, s * W2, 1.0) - loss(s * W1 - E, s * W2, 1.0)) / (2 * h)
        # Central differences: O(h²) truncation + O(eps/h) rounding, ~1e-9 relative.
        assert g_relu == pytest.approx(s * g_lin, rel=1e-7, abs=0)


# ----------------------------------------------------------------------------- item 3


def test_closed_form_time_course():
    s, u0 = 3.0, 1e-3
    x, y, v = _problem(n_half=32, d=6, s=s, seed=3)
    u_dir = np.ones(1)
    errors = {}
    for alpha in (0.0, 1.0):
        c = saxe.time_rescaling(alpha)
        W1, W2 = bf.aligned_init(u_dir, v, u0=u0, activation=alpha, pairs=3, seed=1)
        assert bf.mode_strength(W1, W2, u_dir, v, alpha) == pytest.approx(u0, rel=1e-14, abs=0)
        for lr in (0.008, 0.004):
            steps = int(round(5.0 / lr))
            r = zsl_training.train_two_layer(x, y, W1, W2, activation=alpha, lr=lr, steps=steps,
                                   snapshot_every=1)
            u = np.array([bf.mode_strength(a, b, u_dir, v, alpha) for a, b in zip(*r.snapshots)])
            # GD is exactly the scalar map eq. (3): rounding only (~1e-15 observed).
            disc = saxe.saxe_discrete_mode_strength(steps, s=s, u0=u0, c=c, lr=lr)
            assert np.max(np.abs(u - disc)) < 1e-11 * s
            # The loss is exactly ½(s − u)² on whitened data (x has (1/n)Σxxᵀ = I to 1e-15).
            assert np.max(np.abs(r.loss - 0.5 * (s - u) ** 2)) < 1e-11 * s**2
            errors[(alpha, lr)] = np.max(np.abs(u - saxe.saxe_mode_strength(r.time, s=s, u0=u0, c=c))) / s
        # Closed form eq. (2) vs Euler: first order in lr; error ≈ 0.75·lr·c·s·s/s (observed),
        # so at lr = 0.004 below 1.5·lr·c·s; halving lr halves it (ratio 2 ± 10%).
        assert errors[(alpha, 0.004)] < 1.5 * 0.004 * c * s
        assert 1.8 < errors[(alpha, 0.008)] / errors[(alpha, 0.004)] < 2.2


# ----------------------------------------------------------------------------- diagnostics


def test_effective_rank_positive_mass_and_odd_even_losses():
    assert bf.effective_rank(np.outer([1.0, 2.0], [3.0, 1.0, 0.5])) == pytest.approx(1.0, abs=1e-6)
    assert bf.effective_rank(np.eye(4)) == pytest.approx(4.0, rel=1e-12, abs=0)
    assert bf.positive_mass_fraction(np.array([[1.0, -1.0], [2.0, 0.0]])) == 0.75  # 3/4, exact
    x, y, _ = _problem(n_half=10, d=3)
    y = y + 0.3  # even part 0.3
    W = bf.gaussian_init([3, 4, 1], scale=0.5, seed=0)
    r = zsl_training.train_network(x, y, W, activation=0.0, lr=0.05, steps=10, snapshot_every=5)
    lo, le = bf.odd_even_losses(r, x, y)
    # L = L_odd + L_even exactly on a symmetric set (rounding ~1e-16).
    np.testing.assert_allclose(lo + le, r.loss[r.snapshot_steps], rtol=1e-12)


def test_symmetric_ntk_rank_and_first_layer_orthogonality():
    rng = np.random.default_rng(0)
    x, _ = bf.symmetrize(rng.standard_normal((6, 10)))
    lin = ntkcond.conditioning(ntkcond.infinite_ntk(x, depth=2, activation="linear"))
    relu = ntkcond.conditioning(ntkcond.infinite_ntk(x, depth=2, activation="relu"))
    assert lin.rank == 6 and relu.rank == 12  # rows x and −x are opposite for the linear net
    first = ntkcond.infinite_ntk_layers(x, depth=2, activation="relu")[0]
    # ReLU: E[σ'(z)σ'(−z)] = 0, the pair's first-layer gradients are orthogonal (exact 0 up
    # to the recursion's rounding).
    assert np.max(np.abs(np.diagonal(first[:6, 6:]))) < 1e-12 * np.max(first)


# ----------------------------------------------------------------------------- bad input


def test_batched_training_matches_one_run_per_member():
    rng = np.random.default_rng(3)
    xs, ys = rng.standard_normal((3, 10, 4)), rng.standard_normal((3, 10))
    inits = [bf.gaussian_init([4, 6, 1], scale=0.3, seed=s) for s in range(3)]
    stacked = [np.stack([w[i] for w in inits]) for i in range(2)]
    for method in ("gd", "rk4"):
        batch = zsl_training.train_network_batch(xs, ys, stacked, activation=0.2, lr=0.05,
                                                 steps=40, snapshot_every=10, method=method)
        assert len(batch) == 3
        for b, rb in enumerate(batch):
            r = zsl_training.train_network(xs[b], ys[b], inits[b], activation=0.2, lr=0.05,
                                           steps=40, snapshot_every=10, method=method)
            # Same arithmetic, vmapped: sums may run in another order (observed <= 1.1e-16 on
            # losses ~1); 1e-13 relative leaves a margin of 1000 and still catches a wrong
            # member (the three problems differ at O(1)).
            assert np.max(np.abs(r.loss - rb.loss)) < 1e-13 * r.loss[0]
            for a, c in zip(r.snapshots, rb.snapshots):
                assert np.max(np.abs(a - c)) < 1e-13 * np.max(np.abs(a))
            assert rb.snapshot_steps.tolist() == [0, 10, 20, 30, 40]
        assert np.max(np.abs(batch[0].loss - batch[1].loss)) > 1e-2
    with pytest.raises(ValueError, match="train_network_batch: expected one leading batch size"):
        zsl_training.train_network_batch(xs[:2], ys, stacked, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="train_network_batch: expected xs \\(B, n, d\\)"):
        zsl_training.train_network_batch(xs[0], ys, stacked, lr=0.1, steps=1)
    with pytest.raises(TypeError, match="train_network_batch: expected weights as a list"):
        zsl_training.train_network_batch(xs, ys, stacked[0], lr=0.1, steps=1)


def test_rejects_bad_configurations():
    x, y, _ = _problem(n_half=4, d=3)
    W1, W2 = bf.mirrored_init(3, 2, scale=0.1)
    with pytest.raises(ValueError, match="slope in \\[0, 1\\]"):
        zsl_training.train_two_layer(x, y, W1, W2, activation=-0.1, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="slope in \\[0, 1\\]"):
        saxe.time_rescaling(1.5)
    with pytest.raises(ValueError, match="train_network: expected a non-empty x"):
        zsl_training.train_two_layer(np.zeros((0, 3)), np.zeros(0), W1, W2, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="same number of rows"):
        zsl_training.train_two_layer(x, y[:-1], W1, W2, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="expected W1 with 2 columns.*got shape \\(4, 3\\)"):
        zsl_training.train_two_layer(x[:, :2], y, W1, W2, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="does not follow"):
        zsl_training.train_network(x, y, [W1, W2[:, :2]], lr=0.1, steps=1)
    with pytest.raises(ValueError, match="lr > 0"):
        zsl_training.train_two_layer(x, y, W1, W2, lr=-1.0, steps=1)
    with pytest.raises(ValueError, match="steps as an integer"):
        zsl_training.train_two_layer(x, y, W1, W2, lr=0.1, steps=0)
    with pytest.raises(ValueError, match="snapshot_every to divide"):
        zsl_training.train_two_layer(x, y, W1, W2, lr=0.1, steps=5, snapshot_every=2)
    with pytest.raises(ValueError, match="loss in"):
        zsl_training.train_two_layer(x, y, W1, W2, lr=0.1, steps=1, loss="hinge")
    with pytest.raises(ValueError, match="finite x"):
        zsl_training.train_two_layer(np.full_like(x, np.nan), y, W1, W2, lr=0.1, steps=1)
    with pytest.raises(TypeError, match="list of 2-D arrays"):
        zsl_training.train_network(x, y, W1, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="two_layer_floor: expected symmetric"):
        bf.two_layer_floor(x[:-1], y[:-1])
    with pytest.raises(TypeError, match="odd_even_parts: expected a callable"):
        bf.odd_even_parts(np.ones(3), x)


# ----------------------------------------------------------------------------- notebook


def test_notebook_runs_in_fast_mode(monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    # The kernel inherits the environment: make it import this checkout, in fast mode.
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("NTKCOND_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "biasfree_linear.ipynb"), as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": ROOT}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "ReLU vs linear max deviation" in text and "Traceback" not in text


def test_first_layer_ntk_against_autodiff_and_pair_orthogonality():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(8)
    W1, W2 = rng.standard_normal((9, 4)), rng.standard_normal((2, 9))
    x, _ = bf.symmetrize(rng.standard_normal((3, 4)))
    for alpha in (0.0, 0.4, 1.0):
        K1 = bf.first_layer_ntk(W1, W2, x, activation=alpha)
        with x64():  # scoped float64, both jax versions
            def f(w, z):
                h = z @ w.T
                return (jax.numpy.where(h > 0, h, alpha * h) @ W2.T).reshape(-1)
            J = np.stack([np.asarray(jax.jacobian(f)(W1, z[None])).reshape(2, -1) for z in x])
        ref = np.einsum("ikp,jkp->ij", J, J)
        # Same sums in another order: rounding ~1e-15 relative to the largest entry.
        assert np.max(np.abs(K1 - ref)) < 1e-12 * np.max(np.abs(ref))
        pair = np.diagonal(K1[:3, 3:])
        expected = -alpha * np.sum(x[:3] ** 2, axis=1) * np.sum(W2**2)
        assert np.allclose(pair, expected, rtol=1e-12, atol=0)  # exactly 0 for ReLU
