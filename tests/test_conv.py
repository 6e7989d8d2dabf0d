"""Convolutional nets in ntkcond.stax (``ntkcond.network.conv``, ``ntkcond.network.spatial``,
``ntkcond.infinite.images`` and the compiled route ``ntkcond.infinite.conv_chain``).

Checked here:

* neural-tangents 0.6.5's NNGP and NTK (float64) for conv nets with SAME, VALID and CIRCULAR
  padding, 3 × 3 and 5 × 5 filters, stride 2, ``AvgPool``, ``GlobalAvgPool`` and ``Flatten``
  read-outs, biases, residual blocks: nets whose nonlinearities are smooth to 1e-11 of
  √(KᵢᵢKⱼⱼ), the ReLU family to 1e-6 (neural-tangents' own arccos precision, as for
  fully-connected nets in ``tests/test_stax.py``); on CIFAR-10 and MNIST test images when
  ../shared/data holds them, else on synthetic images of the same shapes (nets that pool:
  their central 12 × 12 crops; ``benchmarks/bench_conv.py`` compares whole images);
* an independent 30-digit mpmath reference of the same stacks (``tests/_conv_reference.py``)
  to 1e-12 of √(KᵢᵢKⱼⱼ), near-duplicate images included (x + 1e-7·e; images whose pixels
  are near-duplicates of unequal norm, 1.3·x + 1e-7·e, are resolved to ~eps·0.3²/1e-7 and are
  checked against that bound);
* the compiled route equals the layer maps (1e-13 of the scale, and the gradient angles'
  terms), for every padding, strides and the leaky family;
* the finite nets' empirical NTK is exact (against jax.jacrev) and its Monte Carlo average
  over channels m = 64 … 1024 reaches ``kernel_fn`` at the m^-1/2 rate;
* bad input is one clear error.
"""
import os

import mpmath as mp
import numpy as np
import pytest

import _conv_reference as cref
import ntkcond
from conftest import SHARED_DATA
from ntkcond import stax
from ntkcond.infinite.images import diagonal_state, full_state


def _nets(s):
    """Conv nets of neural-tangents' stax (``s`` is either module)."""
    return {
        "relu_same_gap": s.serial(s.Conv(8, (3, 3), padding="SAME", W_std=1.4), s.Relu(),
                                  s.Conv(8, (3, 3), padding="SAME", W_std=1.4), s.Relu(),
                                  s.GlobalAvgPool(), s.Dense(1)),
        "relu_valid5_stride_flatten": s.serial(
            s.Conv(8, (5, 5), padding="VALID", W_std=1.5), s.Relu(),
            s.Conv(8, (3, 3), strides=(2, 2), padding="SAME", W_std=1.4), s.Relu(),
            s.Flatten(), s.Dense(1, W_std=1.2)),
        "leaky_abs_circular": s.serial(
            s.Conv(8, (3, 3), padding="CIRCULAR", W_std=1.3), s.LeakyRelu(0.1),
            s.Conv(8, (3, 3), strides=(2, 2), padding="CIRCULAR", W_std=1.2), s.Abs(),
            s.GlobalAvgPool(), s.Dense(1)),
        "bias_relu_avgpool": s.serial(
            s.Conv(8, (3, 3), padding="SAME", W_std=1.3, b_std=0.1), s.Relu(),
            s.AvgPool((2, 2), strides=(2, 2)),
            s.Conv(8, (3, 3), padding="VALID", W_std=1.4, b_std=0.1), s.Relu(),
            s.Flatten(), s.Dense(1, b_std=0.1)),
        "residual_relu": s.serial(
            s.Conv(8, (3, 3), padding="SAME", W_std=1.4),
            s.FanOut(2), s.parallel(s.serial(s.Relu(), s.Conv(8, (3, 3), padding="SAME",
                                                                W_std=0.8)), s.Identity()),
            s.FanInSum(), s.Relu(), s.GlobalAvgPool(), s.Dense(1)),
        "smooth_bias_avgpool": s.serial(
            s.Conv(8, (3, 3), padding="SAME", W_std=1.3, b_std=0.1), s.Erf(),
            s.AvgPool((2, 2), strides=(2, 2), padding="SAME"),
            s.Conv(8, (5, 5), padding="SAME", W_std=1.2, b_std=0.05), s.Gelu(),
            s.GlobalAvgPool(), s.Dense(1, b_std=0.1)),
        "smooth_valid_flatten": s.serial(
            s.Conv(8, (3, 3), padding="VALID", W_std=1.5, b_std=0.2), s.Sin(),
            s.Conv(8, (3, 3), strides=(2, 2), padding="VALID", W_std=1.3), s.Erf(),
            s.Flatten(), s.Dense(1, W_std=1.1, b_std=0.1)),
    }


SMOOTH_NETS = {"smooth_bias_avgpool", "smooth_valid_flatten"}


def _images(shape, n, seed):
    """Smooth-ish synthetic images in [0, 1] (neighbouring pixels correlated), normalised as
    the data sets are."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n,) + shape)
    x = (x + np.roll(x, 1, axis=1) + np.roll(x, 1, axis=2)) / 3
    return (x - 0.5) / 0.5


def _data(n):
    """{"cifar10": (n, 32, 32, 3), "mnist": (n, 28, 28, 1)}: the first test images when
    ../shared/data holds them, else synthetic images of the same shapes."""
    sets = {}
    for name, preset, shape in (("cifar10_test.npz", "cifar10", (32, 32, 3)),
                                ("mnist_test.npz", "mnist", (28, 28, 1))):
        path = os.path.join(SHARED_DATA, name)
        if os.path.exists(path):
            sets[preset] = ntkcond.datasets.load(path, preset=preset).images[:n]
        else:
            sets[preset + "_synthetic"] = _images(shape, n, len(sets))
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
    pooled = _nets(stax)[name].spec.needs_pixel_pairs
    for label, x in _data(4).items():
        if pooled:  # every pixel pair: the central 12 × 12 crops (the full images: benchmarks)
            x = x[:, 10:22, 10:22, :]
        x1, x2 = x[:3], x[2:]
        with x64():
            t = theirs(jax.numpy.asarray(x1), jax.numpy.asarray(x2), ("nngp", "ntk"))
            t11 = theirs(jax.numpy.asarray(x1), None, ("nngp", "ntk"))
            t22 = theirs(jax.numpy.asarray(x2), None, ("nngp", "ntk"))
        o = ours(x1, x2, ("nngp", "ntk"))
        o11 = ours(x1, None, ("nngp", "ntk"))
        for i, key in enumerate(("nngp", "ntk")):
            s = _scale(np.asarray(t11[i]), np.asarray(t22[i]))
            err = np.max(np.abs(getattr(o, key) - np.asarray(t[i])) / s)
            assert err <= tol, (label, key, err)
            s11 = _scale(np.asarray(t11[i]), np.asarray(t11[i]))
            err = np.max(np.abs(getattr(o11, key) - np.asarray(t11[i])) / s11)
            assert err <= tol, (label, key, "x2=None", err)


def _near_duplicates(shape, scaled: bool, seed=0, delta=1e-7):
    """Three images: x, x + δ·e, and 1.3·x + δ·e′ (``scaled``) or another image."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (3,) + shape)
    x[1] = x[0] + delta * rng.standard_normal(shape)
    if scaled:
        x[2] = 1.3 * x[0] + delta * rng.standard_normal(shape)
    return x


def _check_against_mp(net, x, tol=1e-12):
    out = net.kernel_fn(x, None, ("nngp", "ntk"))
    worst = 0.0
    for i in range(len(x)):
        for j in range(i, len(x)):
            r = cref.mp_pair(net.spec, x[i], x[j])
            for k, key in enumerate(("nngp", "ntk")):
                s = float(mp.sqrt(r["xx"][k] * r["yy"][k]))
                err = abs(float(getattr(out, key)[i, j]) - float(r["xy"][k])) / s
                worst = max(worst, err)
                assert err <= tol, (i, j, key, err)
    return worst


MP_NETS = {  # small enough for the 30-digit pixel-pair reference on 5 × 5 images; (net,
    # near-duplicates' distance δ: 1e-6 for a net pooling inside, whose pooled gaps are
    # differences (``ntkcond.network.spatial``): error ~eps/δ², 1.0e-12 at δ = 1e-7)
    "relu_same_gap": (lambda: stax.serial(
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.4), stax.Relu(),
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.4), stax.Relu(),
        stax.GlobalAvgPool(), stax.Dense(1)), 1e-7),
    "leaky_valid_flatten": (lambda: stax.serial(
        stax.Conv(4, (3, 3), padding="VALID", W_std=1.3), stax.LeakyRelu(-0.5),
        stax.Conv(4, (2, 2), strides=(2, 2), padding="SAME", W_std=1.2), stax.Abs(),
        stax.Flatten(), stax.Dense(1)), 1e-7),
    "bias_relu_avgpool": (lambda: stax.serial(
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.3, b_std=0.1), stax.Relu(),
        stax.AvgPool((2, 2), padding="SAME"),
        stax.Conv(4, (3, 3), padding="CIRCULAR", W_std=1.4, b_std=0.1), stax.Relu(),
        stax.GlobalAvgPool(), stax.Dense(1, b_std=0.1)), 1e-6),
    "erf_bias_flatten": (lambda: stax.serial(
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.5, b_std=0.2), stax.Erf(),
        stax.Conv(4, (3, 3), padding="VALID", W_std=1.3, b_std=0.1), stax.Relu(),
        stax.Flatten(), stax.Dense(1, b_std=0.1)), 1e-7),
}


@pytest.mark.parametrize("name", sorted(MP_NETS))
def test_against_extended_precision(name):
    """Every entry to 1e-12 of √(KᵢᵢKⱼⱼ) against the 30-digit pixel-pair reference, with
    near-duplicate images x + δ·e."""
    make, delta = MP_NETS[name]
    _check_against_mp(make(), _near_duplicates((5, 5, 2), scaled=False, delta=delta))


@pytest.mark.parametrize("name", ["relu_same_gap", "erf_bias_flatten"])
def test_near_duplicates_of_unequal_norm_within_the_stated_bound(name):
    """Images whose pixels are near-duplicates of unequal norm (1.3·x + 1e-7·e): the pixel
    angles come from the Euclidean gap, whose ½(√q − √q′)² cancels to ~eps·0.3²/1e-7 of the
    kernel (``ntkcond.stax``'s stated limit): within 1e-10 of √(KᵢᵢKⱼⱼ) (measured 5e-12)."""
    _check_against_mp(MP_NETS[name][0](), _near_duplicates((5, 5, 2), scaled=True), tol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["relu_same_gap", "erf_bias_flatten"])
def test_against_extended_precision_on_real_image_crops(name):
    """The same on 6 × 6 crops of the first CIFAR-10 and MNIST test images (skipped without
    ../shared/data; MNIST's constant background makes many pixel pairs exact duplicates)."""
    sets = {k: v for k, v in _data(2).items() if not k.endswith("_synthetic")}
    if not sets:
        pytest.skip("../shared/data not present")
    for label, x in sets.items():
        _check_against_mp(MP_NETS[name][0](), x[:, 11:17, 11:17, :])


LAYER_MAP_NETS = {
    "relu_same": lambda ro: stax.serial(stax.Conv(4, (3, 3), padding="SAME", W_std=1.4),
                                        stax.Relu(), stax.Conv(4, (3, 3), padding="SAME",
                                                               W_std=1.4, b_std=0.1),
                                        stax.Relu(), ro, stax.Dense(1)),
    "leaky_valid_stride": lambda ro: stax.serial(
        stax.Conv(4, (5, 5), padding="VALID", W_std=1.3), stax.LeakyRelu(0.2),
        stax.Conv(4, (3, 3), strides=(2, 2), padding="SAME", W_std=1.2), stax.Abs(), ro,
        stax.Dense(1)),
    "circular_linear": lambda ro: stax.serial(
        stax.Conv(4, (3, 3), padding="CIRCULAR", W_std=1.1, b_std=0.3), stax.LeakyRelu(-0.7),
        stax.Conv(4, (2, 3), strides=(1, 2), padding="CIRCULAR", W_std=0.9), stax.Relu(), ro,
        stax.Dense(1, b_std=0.2)),
    # three convolutions and no activation: stages of one layout in turn in both buffers of a
    # work item (the compiled route once left the input's NTK padding from the last item)
    "circular_three_linear": lambda ro: stax.serial(
        *[stax.Conv(4, (3, 3), padding="CIRCULAR", W_std=1.1)] * 3, ro, stax.Dense(1)),
    # the pooling route's 3 × 3 SAME path in every arrangement: a stage handed padded to the
    # next convolution with and without an activation between, then to a strided one (taken
    # out of the padded layout), then on a smaller image in the buffers the larger one used
    "same3_mixed": lambda ro: stax.serial(
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.3, b_std=0.2),
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.2), stax.Relu(),
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.4), stax.LeakyRelu(-0.3),
        stax.Conv(4, (3, 3), strides=(2, 2), padding="SAME", W_std=1.1), stax.Relu(),
        stax.Conv(4, (3, 3), padding="SAME", W_std=1.5, b_std=0.1), stax.Abs(),
        stax.Conv(4, (3, 3), padding="SAME", W_std=0.9), ro, stax.Dense(1)),
}


@pytest.mark.parametrize("readout", ["flatten", "gap"])
@pytest.mark.parametrize("name", sorted(LAYER_MAP_NETS))
def test_compiled_route_equals_the_layer_maps(name, readout):
    """``ntkcond.infinite.conv_chain`` (taken by these nets) against the layer maps on the
    same unit-norm images: NNGP, NTK and 1 + cos φ to 1e-13 of the scale, 1 − cos φ of Flatten
    nets to 1e-11 relative."""
    from ntkcond.infinite import engine
    from ntkcond.infinite.conv_chain import ConvChain

    ro = stax.Flatten() if readout == "flatten" else stax.GlobalAvgPool()
    spec = LAYER_MAP_NETS[name](ro).spec
    x = _images((9, 9, 3), 5, 1)
    x[1] = x[0] + 1e-6 * np.random.default_rng(2).standard_normal(x[0].shape)
    x /= np.sqrt(np.sum(x ** 2, axis=(1, 2, 3), keepdims=True))
    assert ConvChain.of(spec, x.shape[1:3]) is not None
    for a, b in ((x, None), (x[:3], x[2:])):
        got = engine._evaluate_images(spec, a, b, True, True, True, "t", None)
        state = full_state(a, b, angles=True, where="t") if readout == "gap" else \
            diagonal_state(a, b, angles=True)
        want = engine._outputs(spec.kernel(state), got.ntk.shape, True, True, True, "t")
        for key in ("nngp", "ntk"):
            w = getattr(want, key)
            assert np.max(np.abs(getattr(got, key) - w)) <= 1e-13 * np.max(np.abs(w)), key
        for key in ("R", "Z"):  # 1 ∓ cos φ: near-duplicates' R to relative precision
            w = getattr(want, key)
            # (relative 1e-11 for R of Flatten nets, whose near-duplicates keep R ~ 1e-6 to
            # relative precision: measured 1.1e-12, the two routes round the pixel gaps apart)
            tol = 1e-11 * np.abs(w) if (readout == "flatten" and key == "R") else 1e-13
            assert np.all(np.abs(getattr(got, key) - w) <= tol + 1e-300), key


def test_empirical_ntk_is_exact():
    """The finite CNN's NTK from ``ntkcond.empirical_ntk_fn`` (``init_fn``/``apply_fn``) equals
    J·Jᵀ from jax.jacrev to 1e-12 relative (3 × 3 SAME and 2 × 2 VALID stride-2 convolutions,
    average pooling, biases)."""
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    x = _images((6, 6, 2), 3, 4)
    init_fn, apply_fn, _ = stax.serial(
        stax.Conv(16, (3, 3), padding="SAME", W_std=1.4, b_std=0.1), stax.Relu(),
        stax.AvgPool((2, 2), padding="SAME"),
        stax.Conv(16, (2, 2), strides=(2, 2), padding="VALID", W_std=1.3), stax.Erf(),
        stax.Flatten(), stax.Dense(1, b_std=0.2))
    with x64():
        params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64),
                                        init_fn(jax.random.PRNGKey(0), x.shape)[1])
        K = np.asarray(ntkcond.empirical_ntk_fn(apply_fn)(params, jnp.asarray(x)))
        J = jax.jacrev(lambda p: apply_fn(p, jnp.asarray(x))[:, 0])(params)
    flat = np.concatenate([np.asarray(v).reshape(len(x), -1)
                           for v in jax.tree_util.tree_leaves(J)], axis=1)
    direct = flat @ flat.T
    assert np.max(np.abs(K - direct)) <= 1e-12 * np.max(np.abs(direct))


def test_empirical_ntk_converges_at_the_inverse_square_root_rate():
    """The Monte Carlo average of the finite CNN's NTK over 6 nets reaches ``kernel_fn``: the
    rms deviation over all entries, relative to the mean diagonal, falls like m^-1/2 (fitted
    slope within [−0.65, −0.35] over m = 64, 256, 1024 channels; the deviation of one net is
    O(m^-1/2), its mean's bias O(1/m)). The second convolution is 1 × 1 to keep m = 1024 cheap."""
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    x = _images((4, 4, 2), 3, 3)
    widths, errs = [64, 256, 1024], []
    for m in widths:
        init_fn, apply_fn, kernel_fn = stax.serial(
            stax.Conv(m, (3, 3), padding="SAME", W_std=1.4, b_std=0.1), stax.Relu(),
            stax.Conv(m, (1, 1), padding="SAME", W_std=1.4), stax.Relu(),
            stax.GlobalAvgPool(), stax.Dense(1))
        K = kernel_fn(x, None, "ntk")
        ntk_fn = ntkcond.empirical_ntk_fn(apply_fn)
        Ks = []
        with x64():
            for seed in range(6):
                params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64),
                                                init_fn(jax.random.PRNGKey(seed), x.shape)[1])
                Ks.append(np.asarray(ntk_fn(params, jnp.asarray(x))))
        errs.append(np.sqrt(np.mean((np.stack(Ks) - K) ** 2)) / np.mean(np.diag(K)))
    slope = np.polyfit(np.log(widths), np.log(errs), 1)[0]
    assert -0.65 <= slope <= -0.35, (errs, slope)


@pytest.mark.parametrize("call, err, match", [
    (lambda: stax.serial(stax.Conv(2, (3, 3)), stax.Relu(), stax.Flatten(), stax.Dense(1))
     [2](np.ones((2, 12)), None, "ntk"), ValueError, r"kernel_fn: expected x1 of shape \(n, H, W, C\)"),
    (lambda: stax.serial(stax.Conv(2, (7, 7)), stax.Flatten(), stax.Dense(1))
     [2](np.ones((2, 5, 5, 1)), None, "ntk"), ValueError, "VALID"),
    (lambda: stax.Conv(2, (3, 3), strides=0), ValueError, "Conv: expected strides"),
    (lambda: stax.Conv(2, (3, 3), strides=1.5), TypeError, "Conv: expected strides"),
    (lambda: stax.Conv(2, (0, 3)), ValueError, "Conv: expected filter_shape"),
    (lambda: stax.Conv(2, (3, 3), padding="FULL"), ValueError, "Conv: expected padding"),
    (lambda: stax.AvgPool((0, 2)), ValueError, "AvgPool: expected window_shape"),
    (lambda: stax.AvgPool((2, 2), strides=(2, -1)), ValueError, "AvgPool: expected strides"),
    (lambda: stax.serial(stax.Conv(2, (3, 3)), stax.Relu(), stax.Dense(1))
     [2](np.ones((2, 5, 5, 1)), None, "ntk"), ValueError, "read-out"),
    (lambda: stax.serial(stax.Conv(2, (3, 3)), stax.Relu())
     [2](np.ones((2, 5, 5, 1)), None, "ntk"), ValueError, "read-out"),
    (lambda: stax.serial(stax.Conv(2, (3, 3), padding="SAME"), stax.GlobalAvgPool(),
                         stax.Dense(1))[2](np.ones((2, 5, 5, 1)), np.ones((2, 5, 4, 1)), "ntk"),
     ValueError, "expected x2 of shape"),
])
def test_bad_input_is_one_clear_error(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_state_that_cannot_fit_is_refused_before_allocating():
    from ntkcond._core.memory import InsufficientMemoryError
    from ntkcond.infinite.engine import evaluate_images

    spec = stax.serial(stax.Conv(2, (3, 3), padding="SAME"), stax.Erf(),
                       stax.GlobalAvgPool(), stax.Dense(1)).spec
    with pytest.raises(InsufficientMemoryError, match="Flatten read-out"):
        evaluate_images(spec, np.ones((2, 64, 64, 3)), memory_limit=10 ** 6)
    chain = stax.serial(stax.Conv(2, (3, 3), padding="SAME"), stax.Relu(),
                        stax.GlobalAvgPool(), stax.Dense(1)).spec
    with pytest.raises(InsufficientMemoryError, match="Flatten read-out"):
        evaluate_images(chain, np.ones((2, 64, 64, 3)), memory_limit=10 ** 6)
    flat = stax.serial(stax.Conv(2, (3, 3), padding="SAME"), stax.Relu(), stax.Flatten(),
                       stax.Dense(1)).spec  # the compiled route's per-image arrays
    with pytest.raises(InsufficientMemoryError, match="variances of 40 64 x 64 images"):
        evaluate_images(flat, np.ones((40, 64, 64, 3)), memory_limit=10 ** 6)


@pytest.mark.parametrize("readout", [stax.Flatten, stax.GlobalAvgPool])
def test_compiled_route_by_blocks_of_rows_equals_one_tile(monkeypatch, readout):
    """Blocks of rows (``CHAIN_BLOCK_BYTES``; each block the pairs j ≥ i of its rows) give
    the kernel of one tile, exactly symmetric (bit for bit where the pairs are computed in
    the same lanes; 1e-15 of the scale here)."""
    from ntkcond.infinite import engine

    spec = LAYER_MAP_NETS["relu_same"](readout()).spec
    x = _images((6, 6, 2), 21, 5)
    whole = engine._evaluate_images(spec, x, None, True, True, True, "t", None)
    # 5 rows asked: blocks of 8 (whole groups of LANES column images), 8 + 8 + 5
    monkeypatch.setattr(engine, "CHAIN_BLOCK_BYTES", 32 * 21 * 5)
    blocks = engine._evaluate_images(spec, x, None, True, True, True, "t", None)
    for key in ("nngp", "ntk", "R", "Z"):
        a, b = getattr(whole, key), getattr(blocks, key)
        assert np.array_equal(b, b.T), key
        assert np.max(np.abs(a - b)) <= 1e-15 * np.max(np.abs(a)), key


@pytest.mark.nt
def test_finite_nets_equal_neural_tangents_apply():
    """The same parameters give neural-tangents' outputs (its init_fn's layout: HWIO filters,
    (W, b) per convolution): SAME, VALID, CIRCULAR, strides, pooling, to 1e-12 relative
    (ntkcond's convolution is an im2col matrix product, neural-tangents' XLA's)."""
    nt_stax = pytest.importorskip("neural_tangents.stax")
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64

    def net(s):
        return s.serial(s.Conv(6, (3, 3), padding="SAME", W_std=1.3, b_std=0.2), s.Relu(),
                        s.Conv(5, (2, 3), strides=(2, 1), padding="VALID", W_std=1.1), s.Erf(),
                        s.Conv(4, (3, 3), strides=(1, 2), padding="CIRCULAR", W_std=1.2),
                        s.AvgPool((2, 2), padding="SAME"), s.Flatten(), s.Dense(1))
    x = _images((7, 9, 2), 3, 6)
    with x64():
        theirs_init, theirs_apply, _ = net(nt_stax)
        _, params = theirs_init(jax.random.PRNGKey(0), x.shape)
        params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), params)
        want = np.asarray(theirs_apply(params, jnp.asarray(x)))
        got = np.asarray(net(stax)[1](params, jnp.asarray(x)))
    assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))
