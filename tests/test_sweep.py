"""Tests of ntkcond.finite.sweep: the Figure-2 sweep engine (NetWeights, BatchNTK).

The reference is ``ntkcond.empirical_ntk`` on the same weights. BatchNTK performs the same
float64 operations in the same order on the same BLAS, so the kernels are expected to agree
bit for bit; the assertion allows 1e-12 relative (records of nearly singular kernels, κ ~ 1e9,
move by ~κ·eps ≈ 1e-7 under a different summation order, so anything above rounding of the
order of operations would show up far above it, while 1e-12 still admits a BLAS that rounds
an entry differently).
"""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from conftest import rel_err  # noqa: E402
import ntkcond  # noqa: E402
from ntkcond._core.x64 import x64  # noqa: E402
from ntkcond.finite.sweep import IDENTICAL_ROWS, BatchNTK, NetWeights  # noqa: E402

RTOL = 1e-12
ACTIVATIONS = ["relu", "linear", ("leaky_relu", 0.2)]


def reference(net, seed, x, trainable="all"):
    with x64():
        params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=jnp.float64)
        return np.asarray(ntkcond.empirical_ntk(net, params, jnp.asarray(x, jnp.float64),
                                                trainable=trainable))


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("trainable", ["all", "first", "last"])
@pytest.mark.parametrize("n", [IDENTICAL_ROWS - 6, 3 * IDENTICAL_ROWS])  # below / above the rows
def test_batch_kernel_equals_empirical_ntk(activation, trainable, n):
    x = np.random.default_rng(n).standard_normal((n, 9))
    nets, batch = NetWeights(), BatchNTK(x)
    for depth in (0, 1, 3):
        net = ntkcond.mlp(depth, 11, activation)
        params, _ = nets.get(net, 4, x.shape[1])
        K = batch.kernel(net, params, trainable)
        assert K.shape == (n, n) and K.dtype == np.float64
        assert rel_err(K, reference(net, 4, x, trainable)) <= RTOL


def test_linear_rows_shortcut_falls_back_where_the_blas_disagrees():
    # Pretend every shape failed the bit-for-bit check: the kernel is recomputed on n rows.
    x = np.random.default_rng(0).standard_normal((40, 6))
    net = ntkcond.mlp(3, 20, "linear")
    params, _ = NetWeights().get(net, 1, 6)
    batch = BatchNTK(x)
    K = batch.kernel(net, params)
    assert set(batch._verdicts) == {("gemm", (20, 20)), ("gram", 20)}  # one check per shape
    batch._verdicts.update(dict.fromkeys(batch._verdicts, False))
    K_full = batch.kernel(net, params)
    ref = reference(net, 1, x)
    assert rel_err(K, ref) <= RTOL and rel_err(K_full, ref) <= RTOL


def test_rank_deficient_linear_batch_gives_the_reference_records():
    # n = 48 > d = 5: the linear kernels have rank 5, the most rounding-sensitive records.
    x = np.random.default_rng(3).standard_normal((48, 5))
    batch, nets = BatchNTK(x), NetWeights()
    for depth in (0, 2):
        net = ntkcond.mlp(depth, 16, "linear")
        K = batch.kernel(net, nets.get(net, 0, 5)[0])
        ours, ref = ntkcond.conditioning(K), ntkcond.conditioning(reference(net, 0, x))
        assert ours.rank == ref.rank == 5
        assert ours.kappa_eff == pytest.approx(ref.kappa_eff, rel=RTOL, abs=0.0)


def test_net_weights_are_drawn_once_and_equal_init():
    store = NetWeights()
    relu, linear = ntkcond.mlp(2, 8, "relu"), ntkcond.mlp(2, 8, "linear")
    p1, t1 = store.get(relu, 7, 3)
    p2, t2 = store.get(linear, 7, 3)  # the weights do not depend on the activation
    assert p2 is p1 and t1 > 0.0 and t2 == 0.0 and (store.draws, store.hits) == (1, 1)
    with x64():
        ref = relu.init(jax.random.PRNGKey(7), 3, dtype=jnp.float64)
    assert all(isinstance(w, np.ndarray) and np.array_equal(w, np.asarray(r)) for w, r in zip(p1, ref))
    assert store.nbytes == sum(w.nbytes for w in p1)
    assert store.get(relu, 8, 3)[0] is not p1  # another seed, another net


def test_net_weights_over_budget_are_not_kept():
    store = NetWeights(max_bytes=0)
    net = ntkcond.mlp(1, 4)
    a, _ = store.get(net, 0, 3)
    b, _ = store.get(net, 0, 3)
    assert a is not b and all(np.array_equal(u, v) for u, v in zip(a, b))
    assert store.nbytes == 0 and store.draws == 2


def test_bad_arguments_name_the_function():
    with pytest.raises(ValueError, match="BatchNTK: expected finite x, got NaN in row 1"):
        BatchNTK(np.array([[1.0, 2.0], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match=r"BatchNTK: expected x of shape \(n, d\)"):
        BatchNTK(np.ones(3))
    batch = BatchNTK(np.ones((4, 3)))
    net = ntkcond.mlp(1, 5)
    with pytest.raises(ValueError, match=r"BatchNTK.kernel: expected params of shapes"):
        batch.kernel(net, [np.ones((3, 5))])
    with pytest.raises(ValueError, match="BatchNTK.kernel: expected float64 NumPy weights"):
        batch.kernel(net, [np.ones((3, 5), np.float32), np.ones((5, 1), np.float32)])
    with pytest.raises(TypeError, match="NetWeights.get: expected net from ntkcond.mlp"):
        NetWeights().get("relu", 0, 3)
