"""The layer objects (ntkcond.network.layers) and their kernel state (ntkcond.network.state):
the maps of eqs. (1)–(2) on small blocks against direct formulas, gaps carried without
cancellation, exact power-of-two rescaling, fast paths decided by properties, and the finite
``init``/``apply`` against neural-tangents' conventions. Tolerances stated per test."""
import math

import numpy as np
import pytest

from ntkcond import activations as A
from ntkcond.network import (Dense, FanInSum, FanOut, Identity, Nonlinearity, PairState,
                             Parallel, Serial, homogeneous_chain, resolve_mlp, serial)
from ntkcond.network.state import RESCALE_BITS


def _state(rng, n=4, ntk=True):
    x = rng.standard_normal((n, 3))
    g = x @ x.T / 3
    q = np.diag(g)
    D = 0.5 * (q[:, None] + q[None, :]) - g
    zero = 0.0 if ntk else None
    return PairState(q[:, None], q[None, :], g, D, zero, zero, zero, zero)


def test_dense_and_activation_maps_are_the_textbook_recursion():
    """Dense(s_w², s_b²) then erf: Σ′ = s_w²Σ + s_b², Θ′ = Σ′ + s_w²Θ, then (M, ṀΘ): to 1e-15."""
    rng = np.random.default_rng(0)
    s = _state(rng)
    d = Dense(weight_variance=2.25, bias_variance=0.01)
    t = d.kernel(s)
    assert np.allclose(t.c, 2.25 * s.c + 0.01, rtol=1e-15, atol=0)
    assert np.array_equal(t.C, t.c) and np.allclose(t.D, 2.25 * s.D, rtol=1e-15, atol=0)
    u = Nonlinearity(A.ERF).kernel(t)
    M, _, Md, _ = A.ERF.dual(t.q1, t.q2, t.c, t.D)
    assert np.allclose(u.c, M, rtol=1e-15, atol=0) and np.allclose(u.C, Md * t.C, rtol=1e-15, atol=0)
    # the NTK's gap stays ½(A + B) − C, computed without cancellation
    assert np.allclose(u.G, 0.5 * (u.A + u.B) - u.C, rtol=1e-12, atol=1e-15)
    frozen = Dense(weight_variance=2.25, trainable=False).kernel(u)
    assert np.allclose(frozen.C, 2.25 * u.C, rtol=1e-15, atol=0)


def test_fan_in_sum_adds_kernels_and_gaps_and_aligns_scales():
    rng = np.random.default_rng(1)
    a = Dense(weight_variance=2.0).kernel(_state(rng))
    b = a.replace(q1=np.ldexp(a.q1, -300), q2=np.ldexp(a.q2, -300), c=np.ldexp(a.c, -300),
                  D=np.ldexp(a.D, -300), nngp_exp=300)  # the same block, stored 2^300 smaller
    total = FanInSum().kernel([a, b])
    assert np.array_equal(np.ldexp(total.c, total.nngp_exp), 2 * a.c)
    assert np.array_equal(np.ldexp(total.D, total.nngp_exp), 2 * a.D)
    assert FanOut(3).kernel(a) == [a, a, a] and Identity().kernel(a) is a
    with pytest.raises(ValueError, match="parallel: expected 2 inputs"):
        Parallel((Identity(), Identity())).kernel([a])


def test_rescaling_is_exact_and_only_out_of_range():
    """Blocks are divided by a power of two only when their diagonal leaves
    [2^-256, 2^256]: exact, the stored bits unchanged otherwise."""
    rng = np.random.default_rng(2)
    s = _state(rng)
    assert s.rescaled() is s or s.rescaled() == s
    big = s.replace(q1=s.q1 * 2.0**300, q2=s.q2 * 2.0**300, c=s.c * 2.0**300, D=s.D * 2.0**300)
    r = big.rescaled()
    assert r.nngp_exp > RESCALE_BITS and np.array_equal(np.ldexp(r.c, r.nngp_exp), big.c)


def test_fast_path_is_a_property_of_the_object_not_its_spelling():
    """A bias-free Dense/σ stack of homogeneous activations is a chain however it is built:
    from keywords, nested serials, mixed slopes; a bias, an Identity or a smooth activation
    makes it not one."""
    net = resolve_mlp("relu", 1.5, 0.0, None, where="t").network(3)
    chain = homogeneous_chain(net)
    assert chain is not None and chain.depth == 3 and chain.variances == (2.25,) * 4
    nested = Serial((serial(Dense(weight_variance=2.0), Nonlinearity(A.Activation(-0.5))),
                     Serial((Dense(weight_variance=1.0), Nonlinearity(A.ABS))),
                     Dense(weight_variance=0.5)))
    assert homogeneous_chain(nested).acts == (A.Activation(-0.5), A.ABS)
    assert homogeneous_chain(Serial((Dense(bias_variance=0.1), Nonlinearity(A.RELU), Dense()))) is None
    assert homogeneous_chain(Serial((Identity(), Dense()))) is None
    assert homogeneous_chain(Serial((Dense(), Nonlinearity(A.ERF), Dense()))) is None
    assert homogeneous_chain(Serial((Dense(bias_variance=0.0), Nonlinearity(A.RELU),
                                     Dense()))) is not None  # b_std = 0: no bias
    # and the gain, in (mantissa, exponent) form, has no overflow or underflow at any depth:
    # w_std = 1e-100 at depth 10 gives G = 1e-2200·2^-10 (float64 alone would give 0)
    m, e = homogeneous_chain(resolve_mlp("relu", 1e-100, 0.0, None, where="t").network(10)).gain()
    assert 0.5 <= m < 1
    assert abs(math.log10(m) + e * math.log10(2) - (-2200 - 10 * math.log10(2))) < 1e-12


@pytest.mark.parametrize("make, err, match", [
    (lambda: Dense(weight_variance=0.0), ValueError, "Dense: expected weight_variance"),
    (lambda: Dense(weight_variance=float("inf")), ValueError, "Dense: expected weight_variance"),
    (lambda: Dense(bias_variance=-1.0), ValueError, "Dense: expected bias_variance"),
    (lambda: Dense(out_dim=0), ValueError, "Dense: expected out_dim >= 1"),
    (lambda: Dense(trainable="yes"), TypeError, "Dense: expected trainable a bool"),
    (lambda: Dense.of_std(4, W_std=1e200), ValueError, "Dense: expected W_std in"),
    (lambda: Nonlinearity("relu"), TypeError, "Nonlinearity: expected an activation object"),
    (lambda: FanOut(0), ValueError, "FanOut: expected num a positive integer"),
    (lambda: FanInSum().kernel(PairState(1.0, 1.0, 1.0, 0.0)), TypeError,
     "FanInSum: expected a list of inputs"),
])
def test_bad_layers_are_one_clear_error(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_finite_layers_follow_neural_tangents():
    """Dense: W_std/√fan_in·xW + b_std·b, W (fan_in, out), b (out,) or None; serial splits the
    key per layer; parallel per branch; FanOut/FanInSum on lists."""
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    with x64():
        x = jnp.asarray(np.random.default_rng(3).standard_normal((5, 3)))
        d = Dense.of_std(4, W_std=1.5, b_std=0.2)
        shape, (W, b) = d.init(jax.random.PRNGKey(0), x.shape)
        assert shape == (5, 4) and W.shape == (3, 4) and b.shape == (4,)
        assert np.allclose(d.apply((W, b), x), 1.5 / math.sqrt(3) * x @ W + 0.2 * b, rtol=1e-14)
        net = Serial((Dense.of_std(4), FanOut(2), Parallel((Nonlinearity(A.RELU), Identity())),
                      FanInSum()))
        shape, params = net.init(jax.random.PRNGKey(1), x.shape)
        assert shape == (5, 4) and params[0][1] is None
        y = net.apply(params, x)
        h = x @ params[0][0] / math.sqrt(3)
        assert np.allclose(y, jnp.maximum(h, 0) + h, rtol=1e-14)
    with pytest.raises(ValueError, match="Dense: a finite-width net needs out_dim"):
        Dense().output_shape((5, 3))
