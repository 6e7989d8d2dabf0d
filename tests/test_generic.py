"""Tests of ntkcond.generic: empirical NTKs of any JAX model, and stax networks."""
import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import rel_err  # noqa: E402
import ntkcond  # noqa: E402
from ntkcond._core.x64 import x64  # noqa: E402
from ntkcond.finite.generic import _parameter_groups  # noqa: E402

# float64 agreement of two exact contractions (see tests/test_empirical.py for the margin).
RTOL = 1e-10
METHODS = ["jacobian", "ntk_vp"]


@pytest.fixture(autouse=True)
def _float64(x64):  # every test here runs in scoped jax float64 (conftest.x64)
    yield


def data(seed, n, d=5):
    return jax.random.normal(jax.random.PRNGKey(seed), (n, d), jnp.float64)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("budget", [1 << 30, 400])  # 400 bytes: one row (18 params·8 B) per chunk
def test_generic_equals_structured_on_mlp(method, budget):
    net = ntkcond.mlp(2, 3, ("leaky_relu", 0.2))
    params = net.init(jax.random.PRNGKey(0), 2)
    x1, x2 = data(1, 7, 2), data(2, 4, 2)
    fn = ntkcond.empirical_ntk_fn(net.apply, method=method, memory_budget=budget)
    assert rel_err(fn(params, x1, x2), ntkcond.empirical_ntk(net, params, x1, x2)) < RTOL
    K = fn(params, x1)
    assert K.shape == (7, 7) and K.dtype == jnp.float64
    assert rel_err(K, ntkcond.empirical_ntk(net, params, x1)) < RTOL


def test_accelerator_gram_equals_cpu_gram(monkeypatch):
    # the "jacobian" method contracts in NumPy's BLAS on the CPU and in jax elsewhere
    net, apply = two_output_model()
    params = net.init(jax.random.PRNGKey(3), 5)
    x1, x2 = data(4, 5), data(5, 3)
    fn = ntkcond.empirical_ntk_fn(apply, full_outputs=True)
    cpu = [np.asarray(fn(params, x1, x2)), np.asarray(fn(params, x1))]
    monkeypatch.setattr(ntkcond.finite.generic, "on_cpu", lambda *arrays: False)
    for a, b in zip(cpu, [fn(params, x1, x2), fn(params, x1)]):
        assert rel_err(b, a) < 1e-13  # the same products summed in another order


ROW_BYTES = 2 * 72 * 8  # one example's Jacobian: O = 2 outputs x P = 5·6 + 6·6 + 6 x float64


def two_output_model():
    net = ntkcond.mlp(2, 6, "relu")
    apply = lambda p, x: jnp.stack([net.apply(p, x), jnp.sin(net.apply(p, 2 * x))], axis=-1)
    return net, apply


@pytest.mark.parametrize("method", METHODS)
def test_vector_output_full_and_trace(method):
    net, apply = two_output_model()
    params = net.init(jax.random.PRNGKey(3), 5)
    x1, x2 = data(4, 5), data(5, 3)
    # reference: the (n, O, P) Jacobian of the batched model from one plain jax.jacrev
    flat = lambda x: np.concatenate([j.reshape(x.shape[0], 2, -1) for j in jax.jacrev(apply)(params, x)], -1)
    J1, J2 = flat(x1), flat(x2)
    ref = np.einsum("iap,jbp->ijab", J1, J2)
    full = ntkcond.empirical_ntk_fn(apply, method=method, full_outputs=True)(params, x1, x2)
    assert full.shape == (5, 3, 2, 2) and rel_err(full, ref) < RTOL
    chunked = ntkcond.empirical_ntk_fn(apply, method=method, full_outputs=True,
                                       memory_budget=2 * ROW_BYTES)(params, x1, x2)  # 1 row per chunk
    assert rel_err(chunked, ref) < RTOL
    traced = ntkcond.empirical_ntk_fn(apply, method=method)(params, x1, x2)
    assert rel_err(traced, np.einsum("ijaa->ij", ref) / 2) < RTOL  # mean over outputs


def test_symmetric_chunked_fill_full_outputs():
    net, apply = two_output_model()
    params = net.init(jax.random.PRNGKey(3), 5)
    x = data(6, 5)
    one = ntkcond.empirical_ntk_fn(apply, full_outputs=True)(params, x)
    chunked = ntkcond.empirical_ntk_fn(apply, full_outputs=True, memory_budget=4 * ROW_BYTES)(params, x)  # rows 2+2+1
    assert rel_err(chunked, one) < RTOL
    assert np.allclose(one, np.transpose(one, (1, 0, 3, 2)), rtol=0, atol=1e-14 * np.abs(one).max())


@given(st.lists(st.lists(st.integers(1, 6), max_size=4), min_size=1, max_size=4), st.integers(1, 50))
def test_parameter_groups_tile_every_leaf_once(shapes, cap):
    # the "jacobian" method's Θ = Σ_g J_g J_gᵀ is right iff the groups' boxes cover each
    # parameter exactly once; and each group must respect the cap (the memory budget)
    shapes = [tuple(s) for s in shapes]
    counts = [np.zeros(s, int) for s in shapes]
    for group in _parameter_groups(shapes, cap):
        assert sum(math.prod(sizes) for _, _, sizes in group) <= cap or len(group) == 1
        for leaf, starts, sizes in group:
            assert math.prod(sizes) <= cap
            counts[leaf][tuple(slice(a, a + s) for a, s in zip(starts, sizes))] += 1
    assert all((c == 1).all() for c in counts)


@pytest.mark.nt
def test_jacobian_groups_split_inside_conv_kernels():
    # 320 bytes: one row per block and groups of ≤ 10 (diagonal) or 5 parameters, so the
    # (2, 2, 1, 3) conv kernel and the (48, 2) dense weight are cut into boxes with fixed
    # leading indices: the same kernel as the default budget's one block, one group
    stax = pytest.importorskip("neural_tangents.stax")
    init_fn, apply_fn, _ = stax.serial(stax.Conv(3, (2, 2), padding="SAME"), stax.Relu(),
                                       stax.Flatten(), stax.Dense(2))
    x1 = jax.random.normal(jax.random.PRNGKey(9), (5, 4, 4, 1), jnp.float64)
    x2 = jax.random.normal(jax.random.PRNGKey(10), (3, 4, 4, 1), jnp.float64)
    params = init_fn(jax.random.PRNGKey(1), x1.shape)[1]
    one = ntkcond.empirical_ntk_fn(apply_fn, full_outputs=True)
    small = ntkcond.empirical_ntk_fn(apply_fn, full_outputs=True, memory_budget=2 * 2 * 2 * 5 * 8)
    for args in ((x1,), (x1, x2)):
        assert rel_err(small(params, *args), one(params, *args)) < RTOL


def test_generic_bad_inputs():
    net = ntkcond.mlp(1, 4)
    params = net.init(jax.random.PRNGKey(0), 5)
    with pytest.raises(ValueError, match=r"one example's Jacobian \(1 outputs x 24 parameters x 8 bytes"):
        ntkcond.empirical_ntk_fn(net.apply, method="ntk_vp", memory_budget=100)(params, data(1, 3))
    with pytest.raises(ValueError, match=r"one parameter's Jacobian column \(1 outputs x 8 bytes\)"):
        ntkcond.empirical_ntk_fn(net.apply, memory_budget=10)(params, data(1, 3))
    with pytest.raises(ValueError, match=r"same example shape, got \(3, 5\) and \(2, 4\)"):
        ntkcond.empirical_ntk_fn(net.apply)(params, data(1, 3), data(2, 2, 4))
    with pytest.raises(ValueError, match="method"):
        ntkcond.empirical_ntk_fn(net.apply, method="structured")
    with pytest.raises(TypeError, match="callable"):
        ntkcond.from_stax(None, None, None)


def stax_mlp(depth, width, activation):
    from neural_tangents import stax

    act = ntkcond.parse_activation(activation)
    layer = stax.Relu() if act.slope == 0 else stax.Identity() if act.slope == 1 else stax.LeakyRelu(act.slope)
    hidden = [stax.Dense(width, W_std=math.sqrt(act.scale), b_std=None), layer] * depth
    return stax.serial(*hidden, stax.Dense(1, b_std=None))


@pytest.mark.nt
@pytest.mark.parametrize("activation", ["relu", "linear", ("leaky_relu", 0.2)])
def test_from_stax_mlp_matches_ntkcond(activation):
    pytest.importorskip("neural_tangents")
    net = ntkcond.from_stax(*stax_mlp(3, 6, activation))
    x1, x2 = data(7, 5), data(8, 3)
    # infinite width: stax's arccos formulas vs ntkcond's angle recursion. They agree to
    # ~1e-12 away from tiny angles (the random inputs here are far from parallel).
    assert rel_err(net.infinite_ntk(x1, x2), ntkcond.infinite_ntk(x1, x2, depth=3, activation=activation)) < 1e-10
    params = net.init(jax.random.PRNGKey(0), (-1, 5))
    ours = ntkcond.mlp(3, 6, activation)
    weights = [layer[0] for layer in params if layer]  # stax Dense params are (W, None)
    K = net.empirical_ntk(params, x1, x2)
    assert rel_err(K, ntkcond.empirical_ntk(ours, weights, x1, x2)) < RTOL


@pytest.mark.nt
def test_from_stax_conv_net_matches_neural_tangents():
    nt = pytest.importorskip("neural_tangents")
    from neural_tangents import stax

    layers = stax.serial(stax.Conv(3, (2, 2), padding="SAME"), stax.Relu(), stax.Flatten(), stax.Dense(2))
    x = jax.random.normal(jax.random.PRNGKey(9), (5, 4, 4, 1), jnp.float64)
    params = ntkcond.from_stax(*layers).init(jax.random.PRNGKey(1), x.shape)
    # neural-tangents' trace_axes=(-1,) is the mean over the 2 outputs, as ours
    ref = nt.empirical_ntk_fn(layers[1], trace_axes=(-1,), vmap_axes=0,
                              implementation=nt.NtkImplementation.JACOBIAN_CONTRACTION)(x, None, params)
    for method in METHODS:
        net = ntkcond.from_stax(*layers, method=method)
        K = net.empirical_ntk(params, x)
        assert K.shape == (5, 5) and rel_err(K, ref) < RTOL, method
    K_inf = net.infinite_ntk(x)
    assert K_inf.shape == (5, 5) and K_inf.dtype == np.float64
    assert ntkcond.conditioning(K_inf).rank == 5 and ntkcond.conditioning(K).kappa_eff >= 1


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("budget", [1 << 30, 2 * ROW_BYTES])  # all rows at once; 1 row per block
def test_kernel_runs_under_jit(method, budget):
    # traced: jax matmuls and functional block placement instead of NumPy's BLAS and buffers
    net, apply = two_output_model()
    params = net.init(jax.random.PRNGKey(3), 5)
    x1, x2 = data(4, 5), data(5, 3)
    for full in (False, True):
        fn = ntkcond.empirical_ntk_fn(apply, method=method, full_outputs=full, memory_budget=budget)
        jitted = jax.jit(fn)
        for args in ((params, x1, x2), (params, x1)):
            eager, traced = fn(*args), jitted(*args)
            assert traced.shape == eager.shape and traced.dtype == jnp.float64
            assert rel_err(traced, eager) < RTOL
    with pytest.raises(ValueError, match="empirical_ntk_fn: expected x1 and x2 of shapes"):
        jitted(params, x1, data(5, 3, 4))  # shape checks still run while tracing


# --------------------------------------------------------------- issue 34: models that are not
# one output per example. Each is refused, naming empirical_ntk_fn and what it got.
_W = {"w": np.linspace(-1.0, 1.0, 8).reshape(4, 2)}


def _linear(p, x):
    return x @ p["w"]


@pytest.mark.parametrize("apply_fn,message", [
    (lambda p, x: jnp.sum(_linear(p, x)), r"one output per example.*got a scalar"),
    (lambda p, x: _linear(p, x)[1:], r"one output per example, shape \(n, \.\.\.\) with n = 4.*"
                                     r"got shape \(3, 2\)"),
    (lambda p, x: _linear(p, x).T, r"got shape \(2, 4\).*\(O, n\) instead of \(n, O\)"),
    (lambda p, x: (x - x.mean(0)) @ p["w"], r"act on the examples independently"),
    (lambda p, x: (x @ jnp.tile(p["w"], (1, 2))).T,  # (O, n) with O = n = 4 (the probe's rows)
     r"apply_fn\(params, x\) of one example to have shape \(1,\) \+ \(4,\)"),
    (lambda p, x: _linear(p, x)[:, :0], r"expected at least one output per example"),
])
@pytest.mark.parametrize("method", ["jacobian", "ntk_vp"])
def test_models_that_are_not_one_output_per_example_are_refused(apply_fn, message, method):
    x = np.random.default_rng(0).standard_normal((5, 4))
    with pytest.raises(ValueError, match=r"^empirical_ntk_fn: (.*)?" + message):
        ntkcond.empirical_ntk_fn(apply_fn, method=method)(_W, x)
    with pytest.raises(ValueError, match=r"^empirical_ntk_fn: "):
        ntkcond.empirical_ntk_fn(apply_fn, method=method)(_W, x[:1], x[1:])


def test_rows_that_are_independent_pass_the_probe_in_float32_and_float64():
    """The probe's tolerance is √eps of the output dtype: a model whose batched and one-row
    evaluations differ only by rounding passes (float32 too), and under jax.jit nothing is
    probed (no values)."""
    x = np.random.default_rng(1).standard_normal((9, 4))
    for dtype in (np.float32, np.float64):
        w = {"w": _W["w"].astype(dtype)}
        K = ntkcond.empirical_ntk_fn(_linear)(w, x.astype(dtype))
        assert K.shape == (9, 9) and K.dtype == dtype
    assert jax.jit(ntkcond.empirical_ntk_fn(_linear))(_W, x).shape == (9, 9)


def test_zero_examples_and_integer_parameters_are_refused():
    x = np.random.default_rng(0).standard_normal((5, 4))
    fn = ntkcond.empirical_ntk_fn(_linear)
    with pytest.raises(ValueError, match=r"^empirical_ntk_fn: expected x1 with at least one "
                                         r"example, got shape \(0, 4\)"):
        fn(_W, x[:0])
    with pytest.raises(ValueError, match=r"expected x2 with at least one example"):
        fn(_W, x, x[:0])
    for leaf in (np.ones((4, 2), dtype=np.int64), np.ones((4, 2), dtype=np.int32)):
        with pytest.raises(TypeError, match=r"^empirical_ntk_fn: expected floating parameter "
                                            r"leaves .* got int\d+ at params\['w'\]"):
            fn({"w": leaf}, x)
    with pytest.raises(TypeError, match=r"got int64 at params\['s'\]"):
        fn({"w": _W["w"], "s": 3}, x)
