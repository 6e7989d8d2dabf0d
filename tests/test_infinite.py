import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import _reference as ref
from ntkcond import (
    conditioning,
    depth_sweep,
    gradient_angles,
    infinite_nngp,
    infinite_ntk,
    infinite_ntk_layers,
    input_angles,
    pairwise_angles,
    smallest_gradient_angle,
    smallest_pairwise_angle,
)

ACTIVATIONS = ["relu", "linear", ("leaky_relu", 0.2)]
SLOPE = {"relu": 0.0, "linear": 1.0, ("leaky_relu", 0.2): 0.2}


def _sample_pairs(n, count, seed=0):
    rng = np.random.default_rng(seed)
    pairs = {(int(i), int(j)) for i, j in rng.integers(0, n, size=(count, 2))}
    return sorted(pairs | {(0, 0), (1, 1)})


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=["relu", "linear", "leaky0.2"])
@pytest.mark.parametrize("depth", [0, 1, 2, 3, 5, 10, 20])
def test_kernels_match_extended_precision(digits_batch, activation, depth):
    # Issue target: relative 1e-12 per entry against a 50-digit reference (un-normalised
    # covariance recursion with acos, from exact dot products of the float64 inputs).
    # Measured worst: 2.4e-15. Real images have dot products far from 0, so the float64 Gram
    # entries carry relative error ~1e-15 and the recursion adds a few eps per layer.
    x = digits_batch[:40]
    K = infinite_ntk(x, depth=depth, activation=activation)
    N = infinite_nngp(x, depth=depth, activation=activation)
    for i, j in _sample_pairs(40, 12, seed=depth):
        nngp, ntk, _ = ref.kernels(x[i], x[j], depth, SLOPE[activation])
        assert K[i, j] == pytest.approx(float(ntk), rel=1e-12, abs=0)
        assert N[i, j] == pytest.approx(float(nngp), rel=1e-12, abs=0)


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=["relu", "linear", "leaky0.2"])
def test_kernels_gaussian_inputs_extended_precision(activation):
    # Gaussian inputs have small dot products (|x·x'| ~ √d ‖x‖‖x'‖/d): an entry near 0 has a
    # large relative error from the float64 Gram entry alone, so we measure the error relative
    # to the entry's natural scale sqrt(K_ii K_jj) (measured ≲ 1e-15).
    x = np.random.default_rng(3).standard_normal((16, 50))
    for depth in (0, 1, 4, 12):
        K = infinite_ntk(x, depth=depth, activation=activation)
        for i, j in _sample_pairs(16, 10, seed=depth):
            _, ntk, _ = ref.kernels(x[i], x[j], depth, SLOPE[activation])
            assert abs(K[i, j] - float(ntk)) <= 1e-12 * np.sqrt(K[i, i] * K[j, j])


def test_real_mnist_kernels_extended_precision(mnist_batch):
    x = mnist_batch[:24]
    for depth in (0, 1, 5, 10):
        K = infinite_ntk(x, depth=depth)
        for i, j in _sample_pairs(24, 8, seed=depth):
            _, ntk, _ = ref.kernels(x[i], x[j], depth, 0.0)
            assert K[i, j] == pytest.approx(float(ntk), rel=1e-12, abs=0)


def test_linear_ntk_is_gram_times_depth(digits_batch):
    x = digits_batch
    G = x @ x.T / x.shape[1]
    for depth in (0, 1, 7):
        # Θ = (L + 1)·G/d exactly, up to the rounding of the normalised Gram route (~4 eps).
        assert np.allclose(infinite_ntk(x, depth=depth, activation="linear"), (depth + 1) * G,
                           rtol=1e-14, atol=1e-14 * np.abs(G).max())
        kappa = conditioning(infinite_ntk(x, depth=depth, activation="linear")).kappa_eff
        assert kappa == pytest.approx(conditioning(G).kappa_eff, rel=1e-6, abs=0)


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=["relu", "linear", "leaky0.2"])
def test_diagonal_is_depth_plus_one_times_squared_norm(digits_batch, activation):
    x = digits_batch[:30]
    for depth in (0, 3, 9):
        K = infinite_ntk(x, depth=depth, activation=activation)
        assert np.allclose(np.diag(K), (depth + 1) * np.sum(x**2, 1) / x.shape[1], rtol=1e-14)
        assert np.allclose(np.diag(infinite_nngp(x, depth=depth, activation=activation)),
                           np.sum(x**2, 1) / x.shape[1], rtol=1e-14)


def test_per_layer_contributions_and_trainable(digits_batch):
    x = digits_batch[:25]
    layers = infinite_ntk_layers(x, depth=4)
    assert layers.shape == (5, 25, 25)
    # sums are exact up to reassociation of 5 positive terms
    assert np.allclose(layers.sum(0), infinite_ntk(x, depth=4), rtol=1e-14)
    assert np.allclose(layers[0], infinite_ntk(x, depth=4, trainable="first"), rtol=1e-14)
    assert np.allclose(layers[4], infinite_ntk(x, depth=4, trainable="last"), rtol=1e-14)
    assert np.allclose(layers[[1, 3]].sum(0), infinite_ntk(x, depth=4, trainable={1, 3}), rtol=1e-14)
    # read-out only: the NTK is the NNGP of the output
    assert np.allclose(layers[4], infinite_nngp(x, depth=4), rtol=1e-14)


def test_first_layer_only_matches_extended_precision(digits_batch):
    x = digits_batch[:12]
    K = infinite_ntk(x, depth=6, trainable="first")
    for i, j in _sample_pairs(12, 6):
        _, ntk, _ = ref.kernels(x[i], x[j], 6, 0.0, trainable={0})
        assert K[i, j] == pytest.approx(float(ntk), rel=1e-12, abs=0)


def test_cross_kernel_is_block_of_full_kernel(digits_batch):
    x1, x2 = digits_batch[:10], digits_batch[10:17]
    full = infinite_ntk(np.vstack([x1, x2]), depth=3)
    assert infinite_ntk(x1, x2, depth=3).shape == (10, 7)
    assert np.allclose(infinite_ntk(x1, x2, depth=3), full[:10, 10:], rtol=1e-14)
    assert np.allclose(gradient_angles(x1, x2, depth=3), gradient_angles(np.vstack([x1, x2]), depth=3)[:10, 10:],
                       rtol=1e-13, atol=0)


def test_depth_sweep_equals_single_depths(digits_batch):
    x = digits_batch[:40]
    for trainable in ("all", "first", "last"):
        items = list(depth_sweep(x, [5, 0, 2], activation="relu", trainable=trainable))
        assert [it.depth for it in items] == [0, 2, 5]
        for it in items:
            np.testing.assert_array_equal(it.ntk, infinite_ntk(x, depth=it.depth, trainable=trainable))
            np.testing.assert_array_equal(it.angles, gradient_angles(x, depth=it.depth, trainable=trainable))


def test_gradient_angles_agree_with_kernel_angles(digits_batch):
    x = digits_batch[:60]
    for activation in ACTIVATIONS:
        K = infinite_ntk(x, depth=5, activation=activation)
        # Angles from the kernel carry error ~eps/θ²; for θ > 0.05 rad that is < 1e-12 relative.
        A, B = gradient_angles(x, depth=5, activation=activation), pairwise_angles(K)
        mask = A > 0.05
        assert np.allclose(A[mask], B[mask], rtol=1e-11, atol=0)


def test_tiny_angles_need_the_data_route():
    # A pair 1e-7 rad apart. For ReLU the gradient angle is amplified to ~sqrt(Lθ/π) ≈ 3e-4
    # (eq. (5)), which a kernel still resolves; for a linear net φ = θ = 1e-7, where
    # 1 − cos φ = 5e-15 is at the rounding level of a float64 kernel: the kernel route loses
    # most digits, while gradient_angles stays exact.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 30))
    x[4] = x[1] + 1e-7 * np.linalg.norm(x[1]) * rng.standard_normal(30) / np.sqrt(30)
    for activation, slope in (("relu", 0.0), ("linear", 1.0)):
        exact = float(ref.gradient_angle(x[1], x[4], 3, slope))
        assert gradient_angles(x, depth=3, activation=activation)[1, 4] == pytest.approx(exact, rel=1e-12, abs=0)
        assert smallest_gradient_angle(x, depth=3, activation=activation) == (
            pytest.approx(exact, rel=1e-12, abs=0), 1, 4)
    kernel_route = pairwise_angles(infinite_ntk(x, depth=3, activation="linear"))[1, 4]
    assert abs(kernel_route - exact) / exact > 1e-4  # measured: several percent


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_smallest_gradient_angle_pairs_route_equals_full_matrix(activation):
    # The closest/farthest-pair route (default) and the n × n recursion: same pair, angles to
    # 1e-12 relative (both evaluate the recursion at the same pair; the input angles differ by
    # ≲ 1e-16/sin θ between the Gram and Kahan routes away from 0 and π).
    rng = np.random.default_rng(5)
    x = rng.standard_normal((40, 6))
    x[20] = x[3]  # exact tie θ = 0 with (3, 33): the lower pair wins in both routes
    x[33] = x[3]
    x[25] = -x[7] + 1e-8 * rng.standard_normal(6)  # θ_hi > π/2: certificates are consulted
    for data in (x, x[21:], rng.standard_normal((30, 50))):
        for trainable in ("all", "first", "last"):
            for depth in (0, 1, 4, 10):
                got = smallest_gradient_angle(data, depth=depth, activation=activation, trainable=trainable)
                ref = smallest_gradient_angle(data, depth=depth, activation=activation, trainable=trainable,
                                              method="recursion")
                assert got[1:] == ref[1:]
                assert got[0] == pytest.approx(ref[0], rel=1e-12, abs=0)


def test_input_angles_near_zero_and_pi():
    rng = np.random.default_rng(1)
    v = rng.standard_normal(20)
    w = rng.standard_normal(20)
    w -= (w @ v) / (v @ v) * v
    for t in (1e-9, 1e-4, 0.3):
        y = np.cos(t) * v / np.linalg.norm(v) + np.sin(t) * w / np.linalg.norm(w)
        for other, expected in ((y, ref.input_angle(v, y)), (-y, ref.input_angle(v, -y))):
            got = input_angles(v[None], other[None])[0, 0]
            assert got == pytest.approx(float(expected), rel=1e-13, abs=0)


def test_agreement_with_neural_tangents(digits_batch):
    pytest.importorskip("neural_tangents")
    import jax
    from jax.experimental import enable_x64
    from neural_tangents import stax

    x = digits_batch[:32]
    layers = {"relu": stax.Relu(), "linear": stax.Identity(), 0.2: stax.LeakyRelu(0.2)}
    with enable_x64():
        for activation, layer in layers.items():
            c = 2.0 / (1.0 + (0.0 if activation == "relu" else 1.0 if activation == "linear" else 0.04))
            for depth in (0, 1, 2, 5, 10, 20):
                net = []
                for _ in range(depth):
                    net += [stax.Dense(512, W_std=np.sqrt(c), b_std=None), layer]
                _, _, kernel_fn = stax.serial(*net, stax.Dense(1, W_std=1.0, b_std=None))
                k = kernel_fn(jax.numpy.asarray(x), None, ("nngp", "ntk"))
                ntk = infinite_ntk(x, depth=depth, activation=activation)
                # stax takes sqrt(prod − nngp²) on the diagonal, where the exact value is 0:
                # ~sqrt(eps) = 1.5e-8 relative per nonlinear layer, accumulating over depth
                # (measured 6e-8 at L = 20). Linear layers have no such step: 1e-13.
                tol = 1e-13 if activation == "linear" else 2e-8 * max(depth, 1)
                assert np.allclose(np.asarray(k.ntk), ntk, rtol=tol, atol=0)
                assert np.allclose(np.asarray(k.nngp), infinite_nngp(x, depth=depth, activation=activation),
                                   rtol=tol, atol=0)
                # κ_eff agrees to about the same relative level times κ's sensitivity
                if depth in (1, 10):
                    k_nt = conditioning(np.asarray(k.ntk)).kappa_eff
                    assert k_nt == pytest.approx(conditioning(ntk).kappa_eff, rel=1e-5, abs=0)


@given(n=st.integers(2, 16), d=st.integers(1, 4), seed=st.integers(0, 2**32 - 1),
       copy=st.sampled_from([None, 1.0, -1.0, 2.5]),
       activation=st.sampled_from(["relu", "leaky:0.2", "leaky:0.7", "linear"]),
       trainable=st.sampled_from(["all", "first", "last"]), depth=st.integers(0, 12))
def test_pairs_route_property(n, d, seed, copy, activation, trainable, depth):
    # Small random data, d = 1 included (every angle is exactly 0 or π: ties everywhere), with
    # a duplicated, negated or scaled row: the two routes give the same pair, angles to 1e-12.
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    if copy is not None:
        x[-1] = copy * x[0]
    kwargs = dict(depth=depth, activation=activation, trainable=trainable)
    got = smallest_gradient_angle(x, **kwargs)
    ref_ = smallest_gradient_angle(x, method="recursion", **kwargs)
    assert got[1:] == ref_[1:]
    assert got[0] == pytest.approx(ref_[0], rel=1e-12, abs=1e-300)  # abs: exact 0 for duplicates


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda x: infinite_ntk(np.vstack([x[:3], np.zeros((1, 64))]), depth=1), ValueError,
         "nonzero rows of x1.*index 3"),
        (lambda x: infinite_ntk(x[:3], x[:3, :10], depth=1), ValueError,
         r"same dimension d, got \(3, 64\) and \(3, 10\)"),
        (lambda x: infinite_ntk(x[0], depth=1), ValueError, r"shape \(n, d\), got shape \(64,\)"),
        (lambda x: infinite_ntk(np.where(x[:3] > 0, np.nan, x[:3]), depth=1), ValueError, "NaN or Inf"),
        (lambda x: infinite_ntk(x[:3], depth=-1), ValueError, "depth >= 0"),
        (lambda x: infinite_ntk(x[:3], depth=1, activation="swish"), ValueError, "expected one of 'relu'"),
        (lambda x: infinite_ntk(x[:3], depth=1, trainable=[2]), ValueError, r"indices in \[0, 1\]"),
        (lambda x: infinite_ntk("abc", depth=1), TypeError, "x1 as an"),
        (lambda x: smallest_gradient_angle(x[:1], depth=1), ValueError, "n >= 2"),
        (lambda x: smallest_gradient_angle(x, depth=1, method="gram"), ValueError,
         "smallest_gradient_angle: expected method 'pairs' or 'recursion'"),
        (lambda x: smallest_gradient_angle(x, depth=1, trainable=[3]), ValueError, r"indices in \[0, 1\]"),
    ],
)
def test_bad_inputs(digits_batch, call, err, match):
    with pytest.raises(err, match=match):
        call(digits_batch)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda x: infinite_ntk(x, depth=True), TypeError, r"infinite_ntk: expected an integer depth, got True"),
        (lambda x: infinite_nngp(x, depth=np.True_), TypeError,
         r"infinite_nngp: expected an integer depth, got np.True_"),
        (lambda x: gradient_angles(x, depth=2.5), TypeError, r"gradient_angles: expected an integer depth, got 2.5"),
        (lambda x: infinite_ntk(x, depth=1, trainable=[1.5]), TypeError,
         r"infinite_ntk: expected trainable 'all', 'first', 'last' or integer layer indices, "
         r"got 1.5 \(float\) in \[1.5\]"),
        (lambda x: infinite_ntk(x, depth=1, trainable=["1"]), TypeError,
         r"infinite_ntk: expected trainable .* integer layer indices, got '1' \(str\) in \['1'\]"),
        (lambda x: gradient_angles(x, depth=2, trainable=[True]), TypeError,
         r"gradient_angles: expected trainable .* integer layer indices, got True \(bool\)"),
        (lambda x: infinite_ntk(x, depth=10**12), ValueError,
         r"infinite_ntk: expected depth <= 1000000 \(the recursion costs depth passes over every "
         r"pair; .*\), got 1000000000000$"),
        (lambda x: smallest_gradient_angle(x, depth=1e300), ValueError,
         r"smallest_gradient_angle: expected depth <= 1000000 .*, got 1e\+300$"),
        (lambda x: depth_sweep(x, 5), TypeError,
         r"depth_sweep: expected depths as an iterable of integers \(e.g. \[0, 1, 5\] or range\(11\)\), got 5"),
        (lambda x: depth_sweep(x, "5"), TypeError, r"depth_sweep: expected depths as an iterable .*got '5'"),
        (lambda x: depth_sweep(x, [1, 2.5]), TypeError, r"depth_sweep: expected an integer depth, got 2.5"),
        (lambda x: depth_sweep(x, [3], trainable=[0.5]), TypeError,
         r"depth_sweep: expected trainable .* integer layer indices, got 0.5 \(float\)"),
    ],
)
def test_bad_depths_and_trainable_are_type_and_value_errors(digits_batch, call, err, match):
    # bools and fractional numbers were taken as layers (depth=True as 1, trainable=[1.5] as
    # layer 1), strings were accepted, and huge depths died with MemoryError or OverflowError.
    # depth_sweep fails when called, not when iterated.
    with pytest.raises(err, match=match):
        call(digits_batch[:4])


def test_integral_floats_and_numpy_ints_are_still_depths(digits_batch):
    x = digits_batch[:5]
    ref_k = infinite_ntk(x, depth=2, trainable=[0, 2])
    assert np.array_equal(infinite_ntk(x, depth=2.0, trainable=np.array([0, 2])), ref_k)
    assert np.array_equal(infinite_ntk(x, depth=np.int64(2), trainable=(np.int32(0), 2)), ref_k)
    assert [it.depth for it in depth_sweep(x, range(3))] == [0, 1, 2]


def test_infinite_ntk_layers_refuses_a_quadratic_cost_up_front():
    # L + 1 kernels of depth L: at depth 10⁶ that would be 10¹² layers (the old route ran
    # them); refused at once, naming the depth that fits. What fits still runs.
    x = np.random.default_rng(0).standard_normal((5, 4))
    with pytest.raises(ValueError, match=r"^infinite_ntk_layers: expected depth <= 4634 for 25 "
                                         r"pairs .*got depth 1000000$"):
        infinite_ntk_layers(x, depth=10**6)
    parts = infinite_ntk_layers(x, depth=40)
    np.testing.assert_allclose(parts.sum(0), infinite_ntk(x, depth=40), rtol=1e-13, atol=0)
