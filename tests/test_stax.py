"""ntkcond.stax: neural-tangents' interface on ntkcond's layer algebra.

Checked here: neural-tangents 0.6.5's NNGP and NTK (float64) for nets mixing activations per
layer, with biases and residual blocks (nets whose only nonlinearities are smooth, or whose
ReLUs follow a smooth layer, to 1e-11 of √(KᵢᵢKⱼⱼ); the bias-free ReLU family to 1e-6,
neural-tangents' own precision there: its arccos route drifts by up to 3.4e-8 on CIFAR-10
images, where ntkcond agrees with mpmath to 1e-12); an independent 30-digit mpmath reference
of the same layer stacks to 1e-12 (near-duplicate pairs of unequal norm included, and the
real images when ../shared/data holds them); one-activation stacks equal ``ntkcond.infinite_ntk`` with the same w_std/b_std
to 1e-14 of the scale; the finite nets' empirical NTK (``init_fn``/``apply_fn`` through
``ntkcond.empirical_ntk_fn``) converges to ``kernel_fn`` at the m^-1/2 rate; the API.
"""
import math
import os

import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
import ntkcond
from conftest import SHARED_DATA
from ntkcond import stax


def _nets(s):
    """Nets of neural-tangents' stax (``s`` is either module): mixed activations, biases,
    residual blocks."""
    return {
        "relu_deep": s.serial(*[s.Dense(64, W_std=1.5), s.Relu()] * 3, s.Dense(1, W_std=1.5)),
        "mixed_bias": s.serial(s.Dense(64, W_std=1.5, b_std=0.05), s.Erf(),
                               s.Dense(64, W_std=1.3, b_std=0.1), s.Relu(),
                               s.Dense(64, W_std=1.4), s.Gelu(),
                               s.Dense(1, W_std=1.5, b_std=0.05)),
        "residual": s.serial(s.Dense(64, W_std=1.4, b_std=0.1),
                             s.FanOut(2), s.parallel(s.serial(s.Relu(), s.Dense(64, W_std=0.7)),
                                                     s.Identity()), s.FanInSum(),
                             s.FanOut(2), s.parallel(s.serial(s.Erf(), s.Dense(64, W_std=0.6,
                                                                               b_std=0.05)),
                                                     s.Identity()), s.FanInSum(),
                             s.LeakyRelu(0.2), s.Dense(1, W_std=1.3)),
        "leaky_abs": s.serial(s.Dense(32, W_std=2.0), s.LeakyRelu(-0.5), s.Dense(32), s.Abs(),
                              s.Dense(32, W_std=1.2), s.ABRelu(-0.3, 2.0), s.Dense(1)),
        "smooth_residual": s.serial(s.Dense(64, W_std=1.4, b_std=0.1),
                                    s.FanOut(2), s.parallel(s.serial(s.Gelu(), s.Dense(64, W_std=0.7)),
                                                            s.Identity()), s.FanInSum(),
                                    s.Erf(), s.Dense(1, W_std=1.3, b_std=0.1)),
        "smooth": s.serial(s.Dense(32, W_std=1.5, b_std=0.1), s.Sin(), s.Dense(32, W_std=1.2),
                           s.Erf(2.0, 0.5, 0.1), s.Dense(32, W_std=1.3), s.Gelu(),
                           s.Dense(1, W_std=1.5, b_std=0.2)),
    }


SMOOTH_NETS = {"smooth", "smooth_residual"}  # no ReLU-family layer: 1e-11 against NT


def _data():
    """Gaussian rows, a near-duplicate of unequal norm and a near-antipodal row, and the first
    CIFAR-10 / MNIST test images when ../shared/data holds them."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 12))
    x[1] = 1.3 * x[0] + 1e-7 * x[2]
    x[3] = -0.8 * x[4] + 1e-6 * x[5]
    sets = {"gaussian": x}
    for name, preset, shape in (("cifar10_test.npz", "cifar10", 3072), ("mnist_test.npz", "mnist", 784)):
        path = os.path.join(SHARED_DATA, name)
        if os.path.exists(path):
            sets[preset] = ntkcond.datasets.load(path, preset=preset).x[:8]
    return sets


def _scale(K11, K22):
    return np.sqrt(np.outer(np.abs(np.diag(K11)), np.abs(np.diag(K22))))


@pytest.mark.nt
@pytest.mark.parametrize("name", sorted(_nets(stax)))
def test_against_neural_tangents(name):
    nt_stax = pytest.importorskip("neural_tangents.stax")
    import jax

    from ntkcond._core.x64 import x64

    tol = 1e-11 if name in SMOOTH_NETS else 1e-6
    theirs, ours = _nets(nt_stax)[name][2], _nets(stax)[name][2]
    for label, x in _data().items():
        x1, x2 = x[:5], x[3:]
        with x64():
            t = {k: np.asarray(v) for k, v in zip(("nngp", "ntk"), theirs(jax.numpy.asarray(x1),
                                                                   jax.numpy.asarray(x2),
                                                                   ("nngp", "ntk")))}
            t11 = theirs(jax.numpy.asarray(x1), None, ("nngp", "ntk"))
            t22 = theirs(jax.numpy.asarray(x2), None, ("nngp", "ntk"))
        o = ours(x1, x2, ("nngp", "ntk"))
        for i, key in enumerate(("nngp", "ntk")):
            err = np.max(np.abs(getattr(o, key) - t[key]) / _scale(np.asarray(t11[i]), np.asarray(t22[i])))
            assert err <= tol, (label, key, err)


def _mp_stack(layer, state):
    """The layer stack on (q₁, q₂, c, A, B, C) in mpmath: the textbook recursion at 30 digits
    (``tests/_family_reference.py``'s expectations), independent of ntkcond's maps."""
    from ntkcond.network import layers as L

    if isinstance(layer, L.Serial):
        for item in layer.layers:
            state = _mp_stack(item, state)
        return state
    if isinstance(layer, L.FanOut):
        return [state] * layer.num
    if isinstance(layer, L.Parallel):
        return [_mp_stack(b, s) for b, s in zip(layer.branches, state)]
    if isinstance(layer, L.FanInSum):
        return tuple(sum(s[i] for s in state) for i in range(6))
    if isinstance(layer, L.Identity):
        return state
    q1, q2, c, A, B, C = state
    if isinstance(layer, L.Dense):
        w, b = mp.mpf(layer.weight_variance), mp.mpf(layer.bias_variance or 0)
        q1, q2, c = w * q1 + b, w * q2 + b, w * c + b
        return q1, q2, c, q1 + w * A, q2 + w * B, c + w * C
    act = layer.act
    a, b, shift = mp.mpf(1), mp.mpf(1), mp.mpf(0)
    if isinstance(act, __import__("ntkcond").activations.Affine):  # a·φ(b·z) + c, by hand
        a, b, shift, act = mp.mpf(act.out_scale), mp.mpf(act.in_scale), mp.mpf(act.shift), act.base
    b2 = b * b
    m12, d12 = ref.expectations(act.name, b2 * q1, b2 * q2, b2 * c)
    m11, d11 = ref.expectations(act.name, b2 * q1, b2 * q1, b2 * q1)
    m22, d22 = ref.expectations(act.name, b2 * q2, b2 * q2, b2 * q2)
    k, kd, s2 = a * a, a * a * b2, shift * shift
    return (k * m11 + s2, k * m22 + s2, k * m12 + s2, kd * d11 * A, kd * d22 * B, kd * d12 * C)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_nets(stax)))
def test_against_extended_precision(name):
    """Every entry of both kernels to 1e-12 of √(KᵢᵢKⱼⱼ) against the 30-digit reference; the
    near-duplicate pair (0, 1) of norm ratio 1.3 and the near-antipodal (3, 4) included."""
    spec = _nets(stax)[name].spec
    for label, x in _data().items():  # real images: 3 rows (the 30-digit GELU trapezoid is slow)
        _check_stack(spec, x[:5] if label == "gaussian" else x[:3], label)


def _check_stack(spec, x, label):
    out = stax.Layer(spec).kernel_fn(x, None, ("nngp", "ntk"))
    d = x.shape[1]
    with mp.workdps(ref.DPS):
        for i in range(len(x)):
            for j in range(i, len(x)):
                g = {k: ref._dot(a, b) / d for k, (a, b) in
                     {"12": (x[i], x[j]), "11": (x[i], x[i]), "22": (x[j], x[j])}.items()}
                zero = mp.mpf(0)
                q1, q2, c, A, B, C = _mp_stack(spec, (g["11"], g["22"], g["12"], zero, zero, zero))
                for got, want, s in ((out.nngp[i, j], c, mp.sqrt(q1 * q2)),
                                     (out.ntk[i, j], C, mp.sqrt(A * B))):
                    assert abs(got - float(want)) <= 1e-12 * float(s), (label, i, j)


@pytest.mark.parametrize("act, kw", [("relu", {"w_std": 1.5}), ("erf", {"w_std": 1.5, "b_std": 0.1}),
                                     ("tanh", {"w_std": 1.4, "b_std": 0.05}),
                                     ("leaky:-0.5", {}), ("gelu", {"w_std": 1.3, "b_std": 0.2})])
def test_one_activation_stack_equals_infinite_ntk(act, kw):
    """``stax.serial(*[Dense(m, W_std, b_std), act] * L, Dense(1, W_std, b_std))`` is the net of
    ``infinite_ntk(depth=L, activation=act, w_std, b_std)``: to 1e-14 of the scale (the same
    layer objects: measured bit for bit)."""
    layer = {"relu": stax.Relu, "erf": stax.Erf, "tanh": stax.Tanh, "leaky:-0.5":
             lambda: stax.LeakyRelu(-0.5), "gelu": stax.Gelu}[act]
    w = kw.get("w_std", math.sqrt(ntkcond.norm_preserving_scale(act)) if act.startswith("leaky") else 1.0)
    b = kw.get("b_std")
    x = np.random.default_rng(1).standard_normal((7, 5))
    for depth in (0, 1, 3):
        hidden = [stax.Dense(16, W_std=w, b_std=b), layer()] * depth
        readout = stax.Dense(1, W_std=kw.get("w_std", 1.0), b_std=b)
        _, _, kernel_fn = stax.serial(*hidden, readout) if depth else readout
        k = kernel_fn(x, None, ("nngp", "ntk"))
        K = ntkcond.infinite_ntk(x, depth=depth, activation=act, **kw)
        N = ntkcond.infinite_nngp(x, depth=depth, activation=act, **kw)
        assert np.max(np.abs(k.ntk - K)) <= 1e-14 * np.max(np.abs(np.diag(K)))
        assert np.max(np.abs(k.nngp - N)) <= 1e-14 * np.max(np.abs(np.diag(N)))


def test_empirical_ntk_converges_at_the_inverse_square_root_rate():
    """The finite nets' empirical NTK (``init_fn``, ``apply_fn``, ``ntkcond.empirical_ntk_fn``)
    tends to ``kernel_fn``: the rms deviation over 8 nets and all entries, relative to the mean
    diagonal, falls like m^-1/2 (fitted slope within [−0.65, −0.35] over m = 16 … 1024: the
    deviation of one net is O(m^-1/2), its mean's bias O(1/m))."""
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    x = np.random.default_rng(2).standard_normal((4, 6))
    widths, errs = [16, 64, 256, 1024], []
    for m in widths:
        init_fn, apply_fn, kernel_fn = stax.serial(stax.Dense(m, W_std=1.5, b_std=0.1), stax.Erf(),
                                                   stax.Dense(m, W_std=1.5), stax.Relu(),
                                                   stax.Dense(1, W_std=1.5, b_std=0.1))
        K = kernel_fn(x, None, "ntk")
        ntk_fn = ntkcond.empirical_ntk_fn(apply_fn)
        with x64():
            Ks = np.stack([np.asarray(ntk_fn(init_fn(jax.random.PRNGKey(s), x.shape)[1],
                                             jnp.asarray(x))) for s in range(8)])
        errs.append(np.sqrt(np.mean((Ks - K) ** 2)) / np.mean(np.diag(K)))
    slope = np.polyfit(np.log(widths), np.log(errs), 1)[0]
    assert -0.65 <= slope <= -0.35, (errs, slope)


def test_kernel_fn_interface():
    init_fn, apply_fn, kernel_fn = stax.serial(stax.Dense(8, W_std=1.5, b_std=0.1), stax.Tanh(),
                                               stax.Dense(1, W_std=1.5))
    x = np.random.default_rng(3).standard_normal((5, 3))
    both = kernel_fn(x)
    assert isinstance(both, stax.Kernel) and both.nngp.shape == both.ntk.shape == (5, 5)
    assert np.array_equal(kernel_fn(x, None, "ntk"), both.ntk)
    nngp, ntk = kernel_fn(x, x[:2], ("nngp", "ntk"))
    assert nngp.shape == (5, 2) and np.array_equal(both.ntk, both.ntk.T)
    only = kernel_fn(x, None, ("ntk",))
    assert only.nngp is None and np.array_equal(only.ntk, both.ntk)
    out_shape, params = init_fn(__import__("jax").random.PRNGKey(0), (-1, 3))
    assert out_shape == (-1, 1) and params[0][0].shape == (3, 8) and params[0][1].shape == (8,)
    assert params[2][1] is None and apply_fn(params, x).shape == (5, 1)


def test_kernel_fn_under_jit_calls_the_engine():
    import jax

    from ntkcond._core.x64 import x64

    _, _, kernel_fn = stax.serial(stax.Dense(8, W_std=1.5), stax.Relu(), stax.Dense(1))
    x = np.random.default_rng(4).standard_normal((4, 3))
    with x64():
        jitted = jax.jit(kernel_fn, static_argnames="get")
        assert np.array_equal(np.asarray(jitted(x, None, "ntk")), kernel_fn(x, None, "ntk"))


@pytest.mark.parametrize("call, err, match", [
    (lambda: stax.Dense(8, parameterization="standard"), ValueError, "Dense: parameterization 'standard'"),
    (lambda: stax.Dense(8, W_std=0.0), ValueError, "Dense: expected W_std in"),
    (lambda: stax.Dense(8, W_std=float("nan")), ValueError, "Dense: expected W_std in"),
    (lambda: stax.Dense(8, b_std=-1.0), ValueError, "Dense: expected b_std 0 or in"),
    (lambda: stax.Dense(2.5), TypeError, "Dense: expected out_dim a positive integer"),
    (lambda: stax.serial(stax.Relu(), (lambda *a: 0, lambda *a: 0, lambda *a: 0)), TypeError,
     "serial: expected layers of ntkcond.stax"),
    (lambda: stax.ABRelu(0.0, 0.0), ValueError, "ABRelu: expected a and b not both 0"),
    (lambda: stax.Erf(c=1.0, a=float("inf")), ValueError, "Erf: expected a a finite"),
    (lambda: stax.Elementwise(lambda z: z.sort()), ValueError, "Elementwise: activation: the callable"),
    (lambda: stax.serial(stax.Relu())[2](np.ones((2, 3)), None, "cov1"), ValueError,
     "kernel_fn: expected get 'nngp', 'ntk'"),
    (lambda: stax.serial(stax.Relu())[2](np.ones((2, 3)), None, None, pattern=1), TypeError,
     "kernel_fn: unexpected keyword argument pattern"),
    (lambda: stax.serial(stax.Dense(2))[2](np.ones(3)), ValueError, "kernel_fn: expected x1"),
])
def test_bad_input_is_one_clear_error(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_activation_layers_carry_their_objects():
    """The activation objects behind the layers: no name chains, one object per function."""
    from ntkcond import activations as A

    assert stax.Relu().spec.act is A.RELU and stax.Erf().spec.act is A.ERF
    assert stax.LeakyRelu(0.2).spec.act == A.Activation(0.2)
    assert stax.ABRelu(2.0, 1.0).spec.act.homogeneous  # −2·leaky_{0.5}(−z): same angle map
    assert stax.ABRelu(2.0, 1.0).spec.act.angle_activation == A.Activation(0.5)
    assert stax.Gelu(approximate=True).spec.act.name == "gelu_tanh"
    z = np.linspace(-3, 3, 13)
    for layer, f in ((stax.ABRelu(-0.3, 2.0), lambda t: np.where(t > 0, 2.0 * t, -0.3 * t)),
                     (stax.ABRelu(2.0, 1.0), lambda t: np.where(t > 0, t, 2.0 * t)),
                     (stax.Erf(2.0, 0.5, 0.1), lambda t: 2.0 * __import__("scipy").special.erf(0.5 * t) + 0.1),
                     (stax.Sin(1.5, 2.0, 0.3), lambda t: 1.5 * np.sin(2.0 * t + 0.3))):
        assert np.allclose(np.asarray(layer.apply_fn((), z)), f(z), rtol=1e-6, atol=1e-6)
