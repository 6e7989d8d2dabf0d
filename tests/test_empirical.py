"""Tests of ntkcond.empirical: the structured empirical NTK of ntkcond.mlp nets.

References: a plain ``jax.jacrev`` contraction J Jᵀ (per layer), neural-tangents'
``empirical_ntk_fn`` (JACOBIAN_CONTRACTION and NTK_VECTOR_PRODUCTS), and at large width
``ntkcond.infinite_ntk``. float64 throughout (x64 scoped to each test by a fixture).
"""
import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from conftest import rel_err  # noqa: E402
import ntkcond  # noqa: E402
from ntkcond.infinite.angles import resolve_trainable  # noqa: E402
from ntkcond._core.x64 import x64  # noqa: E402

# float64 rounding of eq. (1) and of J Jᵀ differ by ~depth·eps·(cancellation) ≈ 1e-15; the
# issue's agreement tolerance 1e-10 leaves 5 orders of margin and still catches a missing
# scale factor, a transposed weight or a wrong σ' (all O(1) errors).
RTOL = 1e-10
ACTIVATIONS = ["relu", "linear", ("leaky_relu", 0.2)]
N1, N2, D, M = 6, 4, 5, 7


@pytest.fixture(autouse=True)
def _float64(x64):  # every test here runs in scoped jax float64 (conftest.x64)
    yield


def data(seed=1, n=N1, d=D):
    return jax.random.normal(jax.random.PRNGKey(seed), (n, d), jnp.float64)


def jacrev_layers(net, params, x1, x2):
    """Reference per-layer NTKs J_i(x1) J_i(x2)ᵀ from jax.jacrev of net.apply."""
    j1 = jax.jacrev(net.apply)(params, x1)
    j2 = jax.jacrev(net.apply)(params, x2)
    return np.stack([np.asarray(a.reshape(len(x1), -1) @ b.reshape(len(x2), -1).T)
                     for a, b in zip(j1, j2)])


def trainable_choices(depth):
    return ["all", "first", "last", sorted({0, depth // 2, depth})]


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("depth", range(11))
def test_structured_equals_jacrev_all_trainable_choices(depth, activation):
    # On the CPU ntkcond runs eqs. (1)-(2) in NumPy (ntkcond._jax.on_cpu); the jitted jax
    # route (accelerators) is checked against it below. Eager jacrev skips compilations.
    net = ntkcond.mlp(depth, M, activation)
    params = net.init(jax.random.PRNGKey(depth), D)
    x1, x2 = data(1), data(2, N2)
    with jax.disable_jit():
        ref = jacrev_layers(net, params, x1, x2)
        layers = ntkcond.empirical_ntk_layers(net, params, x1, x2)
        assert layers.shape == (depth + 1, N1, N2) and layers.dtype == jnp.float64
        assert rel_err(layers, ref) < RTOL
        for trainable in trainable_choices(depth):
            S = list(resolve_trainable(trainable, depth))
            K = ntkcond.empirical_ntk(net, params, x1, x2, trainable=trainable)
            assert K.shape == (N1, N2)
            assert rel_err(K, ref[S].sum(0)) < RTOL, trainable


# Every activation, depths 0 to 10 and each kind of trainable set at least once (the full grid
# is checked against jacrev above; neural-tangents costs ~1 s per call).
NT_CASES = [(0, "relu", "all"), (1, ("leaky_relu", 0.2), "last"), (3, "linear", "first"),
            (10, ("leaky_relu", 0.2), [0, 5, 10]), (10, "relu", "all")]


@pytest.mark.nt
@pytest.mark.parametrize("depth,activation,trainable", NT_CASES)
def test_structured_equals_neural_tangents(depth, activation, trainable):
    nt = pytest.importorskip("neural_tangents")
    net = ntkcond.mlp(depth, M, activation)
    params = net.init(jax.random.PRNGKey(10 + depth), D)
    x1, x2 = data(3), data(4, N2)
    S = resolve_trainable(trainable, depth)

    def f(sub, x):  # the net as a function of the trainable weights only
        full = list(params)
        for i, w in zip(S, sub):
            full[i] = w
        return net.apply(full, x)

    K = ntkcond.empirical_ntk(net, params, x1, x2, trainable=trainable)  # jitted path
    for impl in (nt.NtkImplementation.JACOBIAN_CONTRACTION, nt.NtkImplementation.NTK_VECTOR_PRODUCTS):
        ref = nt.empirical_ntk_fn(f, trace_axes=(), vmap_axes=0, implementation=impl)(
            x1, x2, [params[i] for i in S])
        assert rel_err(K, ref) < RTOL, impl


@pytest.mark.parametrize("depth,activation,trainable", NT_CASES)
def test_accelerator_route_equals_cpu_route(depth, activation, trainable, monkeypatch):
    # The same equations as jitted jax (what runs on GPUs/TPUs) and as NumPy (the CPU):
    # one-shot, row blocks (padded last block) and per-layer terms. Both are float64 sums of
    # the same products in different orders: a few eps, held to 1e-13.
    net = ntkcond.mlp(depth, M, activation)
    params = net.init(jax.random.PRNGKey(20 + depth), D)
    x1, x2 = data(11, 7), data(12, N2)
    calls = [lambda: ntkcond.empirical_ntk(net, params, x1, x2, trainable=trainable),
             lambda: ntkcond.empirical_ntk(net, params, x1, trainable=trainable, block_size=3),
             lambda: ntkcond.empirical_ntk_layers(net, params, x1, x2, block_size=4),
             lambda: np.concatenate([h for pair in ntkcond.empirical_ntk_features(
                 net, params, x1, trainable=trainable) for h in pair if h is not None], axis=1)]
    cpu = [np.asarray(call()) for call in calls]
    monkeypatch.setattr(ntkcond.finite.empirical, "on_cpu", lambda *arrays: False)
    jitted = [call() for call in calls]
    assert all(isinstance(K, jax.Array) for K in jitted[:3])
    for a, b in zip(cpu, jitted):
        assert a.shape == b.shape and rel_err(b, a) < 1e-13


def test_depth_zero_is_the_linear_kernel_exactly():
    # f = x W/√d: Θ = x x'ᵀ / d for every activation, equal to infinite_ntk at any width.
    x1, x2 = data(5, 7, 9), data(6, 3, 9)
    for act in ACTIVATIONS:
        net = ntkcond.mlp(0, 3, act)
        K = ntkcond.empirical_ntk(net, net.init(jax.random.PRNGKey(0), 9), x1, x2)
        # tolerance: a length-9 dot product in float64, ~10 eps
        assert rel_err(K, np.asarray(x1) @ np.asarray(x2).T / 9) < 1e-14
        assert rel_err(K, ntkcond.infinite_ntk(x1, x2, depth=0, activation=act)) < 1e-14


def test_per_layer_widths_and_self_kernel():
    net = ntkcond.mlp(3, [4, 9, 5], "relu")
    params = net.init(jax.random.PRNGKey(1), D)
    x = data(7)
    K = ntkcond.empirical_ntk(net, params, x)
    ref = jacrev_layers(net, params, x, x).sum(0)
    assert rel_err(K, ref) < RTOL
    assert np.array_equal(np.asarray(K), np.asarray(K).T)  # x2 = x1 shares the features


def test_row_blocks_match_one_shot():
    net = ntkcond.mlp(2, 8, ("leaky_relu", 0.2))
    params = net.init(jax.random.PRNGKey(2), D)
    x1, x2 = data(8, 11), data(9, 5)
    one = ntkcond.empirical_ntk_layers(net, params, x1, x2)
    # block_size 4 over 11 rows: three blocks, the last padded with a zero row
    blocked = ntkcond.empirical_ntk_layers(net, params, x1, x2, block_size=4)
    # tolerance: same operations on row subsets; XLA may reorder sums by a few eps
    assert blocked.shape == one.shape and rel_err(blocked, one) < 1e-13
    assert rel_err(ntkcond.empirical_ntk(net, params, x1, block_size=4),
                   ntkcond.empirical_ntk(net, params, x1)) < 1e-13


def test_dtype_follows_params_and_inputs():
    net = ntkcond.mlp(2, 6)
    p32 = net.init(jax.random.PRNGKey(0), D, dtype=jnp.float32)
    x32 = data(1).astype(jnp.float32)
    assert ntkcond.empirical_ntk(net, p32, x32).dtype == jnp.float32
    p64 = net.init(jax.random.PRNGKey(0), D)
    assert p64[0].dtype == jnp.float64
    assert ntkcond.empirical_ntk(net, p64, data(1)).dtype == jnp.float64
    assert ntkcond.empirical_ntk(net, p32, data(1)).dtype == jnp.float64  # promotes


@pytest.mark.parametrize("activation", ["relu", "linear"])
def test_error_to_infinite_width_falls_like_inverse_sqrt_width(activation):
    # Mean over 8 fixed seeds of ‖Θ_m − Θ_∞‖_F / ‖Θ_∞‖_F at m = 64 and 1024 (16x): 1/√m
    # predicts a ratio of 4. Measured 3.5–4.9 over several seed sets; each mean has ~15 %
    # relative spread, so we accept exponents in [1/3, 2/3] (ratio 2.5–6.3), which excludes
    # no convergence (ratio 1) and 1/m convergence (ratio 16).
    x = np.random.RandomState(0).randn(8, 10)
    K_inf = ntkcond.infinite_ntk(x, depth=3, activation=activation)
    err = {}
    for m in (64, 1024):
        net = ntkcond.mlp(3, m, activation)
        errs = [np.linalg.norm(np.asarray(ntkcond.empirical_ntk(
            net, net.init(jax.random.PRNGKey(s), 10), x)) - K_inf) for s in range(8)]
        err[m] = np.mean(errs) / np.linalg.norm(K_inf)
    exponent = math.log(err[64] / err[1024]) / math.log(16)
    assert 1 / 3 <= exponent <= 2 / 3, (err, exponent)


def test_monte_carlo_statistics():
    x = np.random.RandomState(1).randn(8, 10)
    net = ntkcond.mlp(3, 1024)
    mc = ntkcond.monte_carlo_ntk(net, x, seeds=8)
    kernels = [np.asarray(ntkcond.empirical_ntk(net, net.init(jax.random.PRNGKey(s), 10), x))
               for s in range(8)]
    assert mc.seeds == tuple(range(8)) and mc.dtype == "float64"
    # the bookkeeping is exact up to summation order (a few eps)
    assert rel_err(mc.mean, np.mean(kernels, 0)) < 1e-13
    assert rel_err(mc.stderr, np.std(kernels, 0, ddof=1) / math.sqrt(8)) < 1e-12
    kappas = [ntkcond.effective_condition_number(K) for K in kernels]
    angles = [ntkcond.smallest_pairwise_angle(K)[0] for K in kernels]
    assert np.allclose(mc.kappa_eff, kappas, rtol=1e-12)
    assert np.allclose(mc.min_angle, angles, rtol=1e-12)
    assert math.isclose(mc.kappa_eff_stderr, np.std(kappas, ddof=1) / math.sqrt(8), rel_tol=1e-12)
    assert math.isclose(mc.min_angle_mean, np.mean(angles), rel_tol=1e-12)
    # The mean kernel agrees with infinite_ntk within the Monte Carlo error: |t| < 5 for all
    # 36 distinct entries (Student t, 7 dof: P(|t| > 5) ≈ 0.0016 per entry, Bonferroni ≈ 6 %;
    # the O(1/m) finite-width bias is ~1e-3 relative, below one standard error). Measured 1.8.
    K_inf = ntkcond.infinite_ntk(x, depth=3)
    assert np.max(np.abs(mc.mean - K_inf) / mc.stderr) < 5


def test_monte_carlo_single_seed_has_nan_errors():
    mc = ntkcond.monte_carlo_ntk(ntkcond.mlp(1, 16), np.random.RandomState(2).randn(4, 3), seeds=[7])
    assert mc.seeds == (7,) and np.all(np.isnan(mc.stderr)) and math.isnan(mc.kappa_eff_stderr)


def test_bad_inputs_name_the_shapes():
    net = ntkcond.mlp(2, 7)
    params = net.init(jax.random.PRNGKey(0), D)
    with pytest.raises(ValueError, match=r"empirical_ntk: expected params of shapes .*\(6, 7\).*\(5, 7\)"):
        ntkcond.empirical_ntk(net, params, data(1, d=6))
    with pytest.raises(ValueError, match=r"empirical_ntk: expected x1 and x2 .*\(6, 5\) and \(4, 3\)"):
        ntkcond.empirical_ntk(net, params, data(1), data(2, 4, 3))
    with pytest.raises(ValueError, match=r"expected params of shapes"):
        ntkcond.empirical_ntk(net, params[:2], data(1))
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        ntkcond.empirical_ntk(net, params, jnp.ones(6))
    with pytest.raises(ValueError, match=r"layer indices in \[0, 2\]"):
        ntkcond.empirical_ntk(net, params, data(1), trainable=[3])
    with pytest.raises(TypeError, match="ntkcond.mlp"):
        ntkcond.empirical_ntk(object(), params, data(1))
    with pytest.raises(ValueError, match="block_size"):
        ntkcond.empirical_ntk(net, params, data(1), block_size=0)
    with pytest.raises(ValueError, match="seeds"):
        ntkcond.monte_carlo_ntk(net, data(1), seeds=0)


@pytest.mark.parametrize("activation", ["relu", "linear", ("leaky_relu", 0.2)])
@pytest.mark.parametrize("trainable", ["all", "first", [1, 2]])
def test_in_place_numpy_route_is_the_feature_route_bit_for_bit(activation, trainable):
    # empirical_ntk(x) runs numpy_self_ntk (in place; also BatchNTK's kernel); the feature
    # route (_features + _contract) is what x1 != x2 and the jax route run: the same float64
    # operations in the same order, so the same bits.
    from ntkcond.finite import empirical as emp

    x = np.random.default_rng(0).standard_normal((40, 7))
    net = ntkcond.mlp(2, 16, activation)
    with x64():
        import jax

        params = [np.asarray(w) for w in net.init(jax.random.PRNGKey(1), 7, "float64")]
    layers = resolve_trainable(trainable, net.depth)
    slope = net.activation.slope
    f = emp._features(params, x, slope, layers[0], np)
    ref = emp._contract(f, f, layers, False, np)
    scales = emp._layer_factors(params, slope)
    a0 = scales[0] * x
    assert np.array_equal(emp.numpy_self_ntk(a0, a0 @ a0.T, params, scales, slope, layers), ref)
