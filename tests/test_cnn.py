"""ntkcond.network.cnn: the convolutional nets of the sweeps (``--arch cnn``).

Checked here: the family's layer stack is neural-tangents' ``stax.serial(*[Conv(C, (k, k),
padding="SAME", W_std, b_std), σ] * L, read-out, Dense(1))`` (its kernel equals the stax
stack's bit for bit); depth 0 with ``Flatten`` is the fully-connected depth-0 kernel x·x′/d;
the one-pass sweep over depths (``sweep_images_of``) equals each depth's own net to 1e-14 of
the scale, angles included; the validator's errors; the command-line flags.
"""
import numpy as np
import pytest

import ntkcond
from ntkcond import stax
from ntkcond.infinite.kernels import sweep_images_of
from ntkcond.network import CNNFamily, resolve_cnn


def _images(n=6, seed=0, shape=(6, 6, 3)):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (n,) + shape)


@pytest.mark.parametrize("readout", ["flatten", "gap"])
def test_the_family_is_the_stax_stack(readout):
    fam = resolve_cnn("relu", w_std=1.3, b_std=0.1, readout=readout, filter=3, where="t")
    ro = stax.Flatten() if readout == "flatten" else stax.GlobalAvgPool()
    net = stax.serial(*[stax.Conv(8, (3, 3), padding="SAME", W_std=1.3, b_std=0.1),
                        stax.Relu()] * 2, ro, stax.Dense(1, W_std=1.3, b_std=0.1))
    x = _images()
    a = net.kernel_fn(x, None, "ntk")
    b = stax.Layer(fam.network(2)).kernel_fn(x, None, "ntk")
    assert np.array_equal(a, b)
    assert fam.options() == {"arch": "cnn", "readout": readout, "filter": 3, "w_std": 1.3,
                             "b_std": 0.1}


def test_depth_zero_flatten_is_the_linear_kernel():
    x = _images()
    fam = resolve_cnn("relu", readout="flatten", where="t")
    K = stax.Layer(fam.network(0)).kernel_fn(x, None, "ntk")
    flat = x.reshape(len(x), -1)
    want = ntkcond.infinite_ntk(flat, depth=0)
    assert np.max(np.abs(K - want)) <= 1e-15 * np.max(np.abs(want))


@pytest.mark.parametrize("act, readout", [("relu", "flatten"), ("linear", "gap"),
                                          ("leaky:-0.5", "flatten"), ("erf", "flatten"),
                                          ("relu", "gap"), ("leaky:-0.5", "gap")])
def test_one_pass_sweep_equals_each_depth(act, readout):
    """The sweep's kernels and angles (one pass, read-outs after every depth; erf: the layer
    maps per depth) equal each depth's own net to 1e-14 of the scale."""
    w = 1.4 if act == "erf" else None
    fam = resolve_cnn(act, w_std=w, readout=readout, where="t")
    x = _images(5, 1)
    items = list(sweep_images_of(x, fam, [0, 1, 3]))
    assert [it.depth for it in items] == [0, 1, 3]
    for it in items:
        K = stax.Layer(fam.network(it.depth)).kernel_fn(x, None, "ntk")
        assert np.max(np.abs(it.ntk - K)) <= 1e-14 * np.max(np.abs(K))
        assert np.array_equal(it.ntk, it.ntk.T) and np.all(np.diag(it.angles) == 0)
        assert np.all((it.angles >= 0) & (it.angles <= np.pi))


@pytest.mark.parametrize("kwargs, err, match", [
    ({"readout": "max"}, ValueError, "t: expected readout one of flatten, gap"),
    ({"filter": 0}, ValueError, "t: expected filter a positive integer"),
    ({"filter": 2.5}, ValueError, "t: expected filter a positive integer"),
    ({"w_std": -1.0}, ValueError, "t: expected w_std"),
])
def test_bad_options_are_one_clear_error(kwargs, err, match):
    with pytest.raises(err, match=match):
        resolve_cnn("relu", where="t", **kwargs)


def test_a_non_homogeneous_activation_needs_w_std():
    with pytest.raises(ValueError, match="not homogeneous"):
        resolve_cnn("erf", where="t")
    assert isinstance(resolve_cnn("erf", w_std=1.5, where="t"), CNNFamily)


def test_sweep_refuses_rows_and_trainable_subsets():
    fam = resolve_cnn("relu", where="t")
    with pytest.raises(ValueError, match="expected x1 of shape"):
        sweep_images_of(np.ones((4, 12)), fam, [1])
    with pytest.raises(ValueError, match="train every layer"):
        sweep_images_of(_images(), fam, [1], trainable="last")
