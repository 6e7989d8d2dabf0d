"""Inputs of the finite-width kernels (issue 14): the dtype the user passed is the dtype computed
in (float64 stays float64 with jax's x64 mode off), and bad inputs end in one clear error that
names the function, what was expected and what was got: NaN/Inf (the row or parameter leaf),
complex or non-numeric arrays, overflow, and non-integer counts.

Every test runs with jax's x64 mode explicitly off (``x64(False)``), the default a user has.
"""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import ntkcond  # noqa: E402
from ntkcond._core.x64 import x64  # noqa: E402

N, D, M = 5, 3, 32  # width 32: no input loses every ReLU at these seeds (zero gradient)


@pytest.fixture(autouse=True)
def _x64_off():
    with x64(False):
        assert not jax.config.jax_enable_x64
        yield
        assert not jax.config.jax_enable_x64  # nothing flipped the setting for good


def data(n=N, d=D, seed=0, dtype=np.float64):
    return np.random.RandomState(seed).randn(n, d).astype(dtype)


@pytest.fixture
def net():
    return ntkcond.mlp(2, M)


@pytest.fixture
def p32(net):
    return net.init(jax.random.PRNGKey(0), D)  # jax's default: float32 with x64 off


def reference(fn, *args, **kwargs):
    """The same call with x64 on: what a float64 user gets when they enable it themselves."""
    with x64():
        return fn(*args, **kwargs)


# ----------------------------------------------------------------------- dtype: float64 kept
def test_x64_off_float64_input_is_computed_in_float64(net, p32):
    x = data()
    K = ntkcond.empirical_ntk(net, p32, x)
    assert K.dtype == jnp.float64
    # the same code on the same float64 values in both cases: identical to the last bit
    np.testing.assert_array_equal(np.asarray(K), np.asarray(reference(ntkcond.empirical_ntk, net, p32, x)))
    assert ntkcond.conditioning(K).dtype == "float64"
    layers = ntkcond.empirical_ntk_layers(net, p32, x, data(2, seed=1))
    assert layers.dtype == jnp.float64 and layers.shape == (3, N, 2)
    features = ntkcond.empirical_ntk_features(net, p32, x)
    assert all(h.dtype == np.float64 for h, _ in features)


def test_x64_off_float64_params_are_computed_in_float64(net):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # jax's "float64 not available, truncated" warning
        p64 = net.init(jax.random.PRNGKey(0), D, dtype=np.float64)
    assert all(w.dtype == jnp.float64 for w in p64)
    np.testing.assert_array_equal(np.asarray(p64[0]), np.asarray(
        reference(net.init, jax.random.PRNGKey(0), D, dtype=np.float64)[0]))
    x32 = data(dtype=np.float32)
    assert ntkcond.empirical_ntk(net, p64, x32).dtype == jnp.float64
    assert net.apply(p64, x32).dtype == jnp.float64


def test_x64_off_float32_stays_float32(net, p32):
    assert ntkcond.empirical_ntk(net, p32, data(dtype=np.float32)).dtype == jnp.float32
    assert ntkcond.monte_carlo_ntk(net, data(dtype=np.float32), seeds=2).dtype == "float32"


def test_x64_off_monte_carlo_keeps_float64(net):
    x = data()
    mc = ntkcond.monte_carlo_ntk(net, x, seeds=2)
    assert mc.dtype == "float64"
    ref = reference(ntkcond.monte_carlo_ntk, net, x, seeds=2)
    np.testing.assert_array_equal(mc.mean, ref.mean)  # same float64 computation
    assert ntkcond.monte_carlo_ntk(net, data(dtype=np.float32), seeds=[3], dtype=np.float64).dtype == "float64"


@pytest.mark.parametrize("method", ["jacobian", "ntk_vp"])
def test_x64_off_generic_keeps_float64(net, p32, method):
    fn = ntkcond.empirical_ntk_fn(net.apply, method=method)
    x = data()
    K = fn(p32, x)
    assert K.dtype == jnp.float64
    # the generic path is another contraction order of the same float64 sums as the
    # structured one: a few eps apart, held to 1e-12
    K_ref = np.asarray(ntkcond.empirical_ntk(net, p32, x))
    assert np.max(np.abs(np.asarray(K) - K_ref)) <= 1e-12 * np.max(np.abs(K_ref))
    assert fn(p32, data(dtype=np.float32)).dtype == jnp.float32


@pytest.mark.nt
def test_x64_off_from_stax_keeps_float64():
    pytest.importorskip("neural_tangents")
    from neural_tangents import stax

    net = ntkcond.from_stax(*stax.serial(stax.Dense(M, b_std=None), stax.Relu(), stax.Dense(1, b_std=None)))
    params = net.init(jax.random.PRNGKey(0), (-1, D), dtype=np.float64)
    assert all(leaf.dtype == jnp.float64 for leaf in jax.tree_util.tree_leaves(params))
    x = data()
    assert net.empirical_ntk(params, x).dtype == jnp.float64
    K_inf = net.infinite_ntk(x)
    assert K_inf.dtype == np.float64
    np.testing.assert_array_equal(K_inf, reference(net.infinite_ntk, x))  # same float64 arithmetic
    assert net.infinite_nngp(data(dtype=np.float32)).dtype == np.float32


# -------------------------------------------------------------------------------- bad values
def _nan_at(x, row, col, value=np.nan):
    x = np.array(x)
    x[row, col] = value
    return x


def _structured(where):
    return {"empirical_ntk": ntkcond.empirical_ntk, "empirical_ntk_layers": ntkcond.empirical_ntk_layers,
            "empirical_ntk_features": ntkcond.empirical_ntk_features}[where]


def _generic(net):
    return ntkcond.empirical_ntk_fn(net.apply)


def _bad_param(params, index, entry, value):
    out = list(params)
    out[index] = out[index].at[entry].set(value)
    return out


# (label, call(net, params) -> None, error type, parts of the message)
BAD_VALUES = [
    ("NaN x1", lambda net, p: ntkcond.empirical_ntk(net, p, _nan_at(data(), 2, 1)), ValueError,
     ["empirical_ntk:", "expected finite x1", "got NaN in row 2", "x1[2, 1]"]),
    ("Inf x2", lambda net, p: ntkcond.empirical_ntk(net, p, data(), _nan_at(data(3), 1, 0, np.inf)), ValueError,
     ["empirical_ntk:", "expected finite x2", "got Inf in row 1"]),
    ("-Inf x layers", lambda net, p: ntkcond.empirical_ntk_layers(net, p, _nan_at(data(), 4, 2, -np.inf)), ValueError,
     ["empirical_ntk_layers:", "expected finite x1", "got Inf in row 4"]),
    ("NaN x features", lambda net, p: ntkcond.empirical_ntk_features(net, p, _nan_at(data(), 0, 0)), ValueError,
     ["empirical_ntk_features:", "expected finite x1", "got NaN in row 0"]),
    ("NaN weight", lambda net, p: ntkcond.empirical_ntk(net, _bad_param(p, 1, (3, 4), jnp.nan), data()), ValueError,
     ["empirical_ntk:", "expected finite params[1]", "got NaN at entry (3, 4)"]),
    ("NaN read-out weight, trainable last",
     lambda net, p: ntkcond.empirical_ntk(net, _bad_param(p, 2, (0, 0), jnp.nan), data(), trainable="last"),
     ValueError, ["empirical_ntk:", "expected finite params[2]", "got NaN at entry (0, 0)"]),
    ("complex x", lambda net, p: ntkcond.empirical_ntk(net, p, data() + 1j), TypeError,
     ["empirical_ntk:", "expected real x1", "got complex dtype complex128"]),
    ("complex weight", lambda net, p: ntkcond.empirical_ntk(net, [p[0].astype(jnp.complex64)] + p[1:], data()),
     TypeError, ["empirical_ntk:", "expected real params[0]", "got complex dtype complex64"]),
    ("string x", lambda net, p: ntkcond.empirical_ntk(net, p, np.full((N, D), "a")), TypeError,
     ["empirical_ntk:", "expected x1 with a real floating or integer dtype", "got <U1"]),
    ("bool x", lambda net, p: ntkcond.empirical_ntk(net, p, np.ones((N, D), bool)), TypeError,
     ["empirical_ntk:", "real floating or integer dtype", "got bool"]),
    ("float32 overflow", lambda net, p: ntkcond.empirical_ntk(net, p, data(dtype=np.float32) * np.float32(1e30)),
     ValueError, ["empirical_ntk:", "expected a finite kernel", "overflow in float32", "pass float64",
                  "rescale x", "largest |x| = "]),
    ("float64 overflow", lambda net, p: ntkcond.empirical_ntk(net, p, data() * 1e200), ValueError,
     ["empirical_ntk:", "expected a finite kernel", "overflow in float64", "rescale x"]),
    ("float32 overflow features",
     lambda net, p: ntkcond.empirical_ntk_features(net, p, data(dtype=np.float32) * np.float32(1e30)),
     ValueError, ["empirical_ntk_features:", "expected a finite kernel", "overflow in float32", "pass float64"]),
    ("generic NaN x1", lambda net, p: _generic(net)(p, _nan_at(data(), 3, 2)), ValueError,
     ["empirical_ntk_fn:", "expected finite x1", "got NaN in row 3"]),
    ("generic Inf x2", lambda net, p: _generic(net)(p, data(), _nan_at(data(2), 1, 1, np.inf)), ValueError,
     ["empirical_ntk_fn:", "expected finite x2", "got Inf in row 1"]),
    ("generic Inf param leaf", lambda net, p: _generic(net)(_bad_param(p, 0, (2, 5), jnp.inf), data()),
     ValueError, ["empirical_ntk_fn:", "expected finite params[0]", "got Inf at entry (2, 5)"]),
    ("generic NaN dict leaf",
     lambda net, p: ntkcond.empirical_ntk_fn(lambda q, x: x @ q["w"])({"w": jnp.array([[1.0], [jnp.nan]])},
                                                                        data(d=2)),
     ValueError, ["empirical_ntk_fn:", "expected finite params['w']", "got NaN at entry (1, 0)"]),
    ("generic complex x", lambda net, p: _generic(net)(p, data().astype(np.complex64)), TypeError,
     ["empirical_ntk_fn:", "expected real x1", "got complex dtype complex64"]),
    ("generic float32 overflow", lambda net, p: _generic(net)(p, data(dtype=np.float32) * np.float32(1e30)),
     ValueError, ["empirical_ntk_fn:", "expected a finite kernel", "overflow in float32", "pass float64"]),
    ("generic ntk_vp overflow",
     lambda net, p: ntkcond.empirical_ntk_fn(net.apply, method="ntk_vp")(p, data(dtype=np.float32) * np.float32(1e30)),
     ValueError, ["empirical_ntk_fn:", "overflow in float32"]),
    ("monte carlo NaN x", lambda net, p: ntkcond.monte_carlo_ntk(net, _nan_at(data(), 1, 0), seeds=1), ValueError,
     ["monte_carlo_ntk:", "expected finite x", "got NaN in row 1"]),
    ("monte carlo complex x", lambda net, p: ntkcond.monte_carlo_ntk(net, data() * 1j, seeds=1), TypeError,
     ["monte_carlo_ntk:", "expected real x", "got complex dtype complex128"]),
    ("monte carlo float32 overflow",
     lambda net, p: ntkcond.monte_carlo_ntk(net, data(dtype=np.float32) * np.float32(1e30), seeds=1),
     ValueError, ["monte_carlo_ntk:", "overflow in float32", "pass float64"]),
]


@pytest.mark.parametrize("label, call, error, parts", BAD_VALUES, ids=[case[0] for case in BAD_VALUES])
def test_bad_values_raise_one_clear_error(net, p32, label, call, error, parts):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning on the way to the error
        with pytest.raises(error) as info:
            call(net, p32)
    assert type(info.value) is error
    message = str(info.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)


@pytest.mark.nt
def test_from_stax_bad_values():
    pytest.importorskip("neural_tangents")
    from neural_tangents import stax

    net = ntkcond.from_stax(*stax.serial(stax.Dense(M), stax.Relu(), stax.Dense(1)))
    params = net.init(jax.random.PRNGKey(0), (-1, D))
    with pytest.raises(ValueError, match=r"empirical_ntk_fn: expected finite x1, got NaN in row 2"):
        net.empirical_ntk(params, _nan_at(data(), 2, 0))
    with pytest.raises(ValueError, match=r"StaxNet.infinite_ntk: expected finite x2, got Inf in row 0"):
        net.infinite_ntk(data(), _nan_at(data(2), 0, 1, np.inf))
    with pytest.raises(TypeError, match=r"StaxNet.infinite_nngp: expected real x1, got complex"):
        net.infinite_nngp(data() + 0j)
    with pytest.raises(TypeError, match=r"StaxNet.init: expected dtype as a real floating dtype .*int32"):
        net.init(jax.random.PRNGKey(0), (-1, D), dtype=np.int32)


# --------------------------------------------------------------------- counts and flags
BAD_ARGUMENTS = [
    ("seeds=True", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=True), TypeError,
     ["monte_carlo_ntk:", "expected seeds as a count >= 1", "got bool True"]),
    ("seeds=False", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=False), TypeError,
     ["monte_carlo_ntk:", "expected seeds", "got bool False"]),
    ("seeds=2.0", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=2.0), TypeError,
     ["monte_carlo_ntk:", "expected seeds", "got float 2.0"]),
    ("seeds='3'", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds="3"), TypeError,
     ["monte_carlo_ntk:", "expected seeds", "got str '3'"]),
    ("seeds=[0, True]", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=[0, True]), TypeError,
     ["monte_carlo_ntk:", "expected int seeds", "got bool True"]),
    ("seeds=[0, 1.5]", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=[0, 1.5]), TypeError,
     ["monte_carlo_ntk:", "expected int seeds", "got float 1.5"]),
    ("seeds=0", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=0), ValueError,
     ["monte_carlo_ntk:", "expected seeds as an integer >= 1", "got 0"]),
    ("seeds=[]", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=[]), ValueError,
     ["monte_carlo_ntk:", "expected at least one seed", "got none"]),
    ("seeds=[1, 1]", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=[1, 1]), ValueError,
     ["monte_carlo_ntk:", "expected distinct seeds", "got [1, 1]"]),
    ("seeds=[-1]", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=[-1]), ValueError,
     ["monte_carlo_ntk:", "expected seeds in [0, 2**32)", "got -1"]),
    ("seeds=[2**32]", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=[2**32]), ValueError,
     ["monte_carlo_ntk:", "expected seeds in [0, 2**32)", "got 4294967296"]),
    ("dtype=int32", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=1, dtype=np.int32), TypeError,
     ["monte_carlo_ntk:", "expected dtype as a real floating dtype", "int32"]),
    ("dtype=complex64", lambda net, p: ntkcond.monte_carlo_ntk(net, data(), seeds=1, dtype=np.complex64),
     TypeError, ["monte_carlo_ntk:", "expected dtype as a real floating dtype", "complex64"]),
    ("block_size=True", lambda net, p: ntkcond.empirical_ntk(net, p, data(), block_size=True), TypeError,
     ["empirical_ntk:", "expected block_size as an integer >= 1", "got bool True"]),
    ("block_size=2.5", lambda net, p: ntkcond.empirical_ntk_layers(net, p, data(), block_size=2.5), TypeError,
     ["empirical_ntk_layers:", "expected block_size as an integer >= 1", "got float 2.5"]),
    ("block_size=0", lambda net, p: ntkcond.empirical_ntk(net, p, data(), block_size=0), ValueError,
     ["empirical_ntk:", "expected block_size as an integer >= 1", "got 0"]),
    ("memory_budget=True", lambda net, p: ntkcond.empirical_ntk_fn(net.apply, memory_budget=True), TypeError,
     ["empirical_ntk_fn:", "expected memory_budget as a number of bytes > 0", "got bool True"]),
    ("memory_budget='1e9'", lambda net, p: ntkcond.empirical_ntk_fn(net.apply, memory_budget="1e9"), TypeError,
     ["empirical_ntk_fn:", "expected memory_budget", "got str '1e9'"]),
    ("memory_budget=0", lambda net, p: ntkcond.empirical_ntk_fn(net.apply, memory_budget=0), ValueError,
     ["empirical_ntk_fn:", "expected memory_budget >= 1 byte", "got 0"]),
    ("memory_budget=inf", lambda net, p: ntkcond.empirical_ntk_fn(net.apply, memory_budget=float("inf")),
     ValueError, ["empirical_ntk_fn:", "expected memory_budget >= 1 byte", "got inf"]),
    ("full_outputs='yes'", lambda net, p: ntkcond.empirical_ntk_fn(net.apply, full_outputs="yes"), TypeError,
     ["empirical_ntk_fn:", "expected full_outputs as a bool", "got str 'yes'"]),
    ("from_stax memory_budget=True",
     lambda net, p: ntkcond.from_stax(len, len, len, memory_budget=True), TypeError,
     ["from_stax:", "expected memory_budget", "got bool True"]),
    ("MLP.init dtype=int32", lambda net, p: net.init(jax.random.PRNGKey(0), D, dtype=np.int32), TypeError,
     ["MLP.init:", "expected dtype as a real floating dtype", "int32"]),
    ("MLP.init d=True", lambda net, p: net.init(jax.random.PRNGKey(0), True), TypeError,
     ["MLP.init:", "expected an integer d", "got True"]),
]


@pytest.mark.parametrize("label, call, error, parts", BAD_ARGUMENTS, ids=[case[0] for case in BAD_ARGUMENTS])
def test_bad_counts_and_flags_raise_one_clear_error(net, p32, label, call, error, parts):
    with pytest.raises(error) as info:
        call(net, p32)
    assert type(info.value) is error
    for part in parts:
        assert part in str(info.value), (part, str(info.value))


def test_integer_like_counts_are_accepted(net, p32):
    x = data(7)
    # np.int64 counts and ranges of seeds behave as their int values (same float32 code: equal)
    np.testing.assert_array_equal(np.asarray(ntkcond.empirical_ntk(net, p32, x, block_size=np.int64(3))),
                                  np.asarray(ntkcond.empirical_ntk(net, p32, x, block_size=3)))
    assert ntkcond.monte_carlo_ntk(net, x, seeds=np.int64(2)).seeds == (0, 1)
    assert ntkcond.monte_carlo_ntk(net, x, seeds=range(2, 4)).seeds == (2, 3)
    assert ntkcond.empirical_ntk_fn(net.apply, memory_budget=1e6)(p32, x).shape == (7, 7)


def test_structured_kernel_still_traces_under_jit(net, p32):
    # value checks are skipped for traced x (no values) and run eagerly on the concrete params
    x = jnp.asarray(data(dtype=np.float32))
    K = jax.jit(lambda x: ntkcond.empirical_ntk(net, p32, x))(x)
    # jit fuses the float32 work differently: a few float32 eps apart, held to 1e-5
    ref = np.asarray(ntkcond.empirical_ntk(net, p32, x))
    assert K.dtype == jnp.float32 and np.max(np.abs(np.asarray(K) - ref)) <= 1e-5 * np.max(np.abs(ref))
