"""Tests of ntkcond.models: the finite-width bias-free norm-preserving MLP (eq. (1))."""
import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import ntkcond  # noqa: E402
from ntkcond._core.x64 import x64 as scoped_x64  # noqa: E402


@pytest.fixture(autouse=True)
def x64():
    with scoped_x64():
        yield


def numpy_forward(params, x, slope):
    """Eq. (1) written out independently in numpy (float64)."""
    params = [np.asarray(w) for w in params]
    c = 2.0 / (1.0 + slope**2)
    h = np.asarray(x)
    for w in params[:-1]:
        z = math.sqrt(c / h.shape[1]) * h @ w
        h = np.where(z > 0, z, slope * z)
    return (h @ params[-1])[:, 0] / math.sqrt(h.shape[1])


@pytest.mark.parametrize("depth,width,activation", [
    (0, 5, "relu"), (1, 8, "linear"), (3, [4, 9, 6], ("leaky_relu", 0.2)), (4, 3, "leaky:0.5")])
def test_apply_is_equation_one(depth, width, activation):
    net = ntkcond.mlp(depth, width, activation)
    params = net.init(jax.random.PRNGKey(0), 7)
    assert [w.shape for w in params] == net.shapes(7)
    assert net.num_params(7) == sum(w.size for w in params)
    x = jax.random.normal(jax.random.PRNGKey(1), (5, 7))
    y = net.apply(params, x)
    assert y.shape == (5,) and y.dtype == jnp.float64
    # tolerance: the same products summed in another order, ~depth·width eps
    np.testing.assert_allclose(y, numpy_forward(params, x, net.activation.slope), rtol=1e-12, atol=1e-14)


def test_scales_readout_factor_is_one_over_sqrt_width():
    net = ntkcond.mlp(2, [10, 40], "relu")
    assert net.scales(5) == [math.sqrt(2 / 5), math.sqrt(2 / 10), math.sqrt(1 / 40)]
    assert ntkcond.mlp(0, 3).scales(4) == [0.5]  # depth 0: x W/√d, no factor c


def test_init_is_standard_normal_and_seeded():
    net = ntkcond.mlp(1, 400)
    params = net.init(jax.random.PRNGKey(3), 300)
    w = np.asarray(params[0]).ravel()  # 120000 N(0,1) draws: mean sd 0.003, var sd 0.004
    assert abs(w.mean()) < 0.02 and abs(w.var() - 1) < 0.02
    again = net.init(jax.random.PRNGKey(3), 300)
    assert all(np.array_equal(a, b) for a, b in zip(params, again))
    assert net.init(jax.random.PRNGKey(3), 300, dtype=jnp.float32)[0].dtype == jnp.float32


def test_mlp_bad_inputs():
    with pytest.raises(ValueError, match="mlp: activation: expected one of 'relu'"):
        ntkcond.mlp(2, 8, "swish")
    with pytest.raises(ValueError, match="depth >= 0, got -1"):
        ntkcond.mlp(-1, 8)
    with pytest.raises(ValueError, match="width >= 1, got 0"):
        ntkcond.mlp(2, 0)
    with pytest.raises(ValueError, match="width >= 1, got 0"):
        ntkcond.mlp(2, [4, 0])
    with pytest.raises(ValueError, match=r"expected 2 widths .*got 3"):
        ntkcond.mlp(2, [4, 5, 6])
    with pytest.raises(TypeError, match="int or a sequence of ints, got 2.5"):
        ntkcond.mlp(1, 2.5)
    # depth=True was a 1-layer net; 10**12 layers died with MemoryError
    with pytest.raises(TypeError, match=r"^mlp: expected an integer depth, got True$"):
        ntkcond.mlp(True, 8)
    with pytest.raises(ValueError, match=r"^mlp: expected depth <= 1000000 .*, got 1000000000000$"):
        ntkcond.mlp(10**12, 8)
    net = ntkcond.mlp(1, 4)
    params = net.init(jax.random.PRNGKey(0), 3)
    with pytest.raises(ValueError, match=r"MLP.apply: expected params of shapes \[\(2, 4\), \(4, 1\)\] "
                                         r"for x of shape \(5, 2\), got \[\(3, 4\), \(4, 1\)\]"):
        net.apply(params, jnp.ones((5, 2)))
    with pytest.raises(TypeError, match="list of 2 weight arrays"):
        net.apply({"w": 1}, jnp.ones((5, 3)))
