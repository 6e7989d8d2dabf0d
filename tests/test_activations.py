import numpy as np
import pytest

from ntkcond import Activation, norm_preserving_scale, parse_activation


@pytest.mark.parametrize(
    "spelling, slope",
    [("relu", 0.0), ("linear", 1.0), ("identity", 1.0), (("leaky_relu", 0.1), 0.1),
     (0.25, 0.25), ("leaky:0.3", 0.3), ("leaky_relu:0.5", 0.5), (0, 0.0), (1, 1.0),
     ("abs", -1.0), ("leaky:-0.5", -0.5), (-1, -1.0), (-0.0, 0.0)],
)
def test_spellings(spelling, slope):
    assert parse_activation(spelling).slope == slope


def test_scale_is_inverse_second_moment():
    # c = 1/E[σ(z)²] for z ~ N(0,1): check against Gauss-Hermite quadrature of the second
    # moment (exact for the piecewise quadratic σ² up to the kink; 200 nodes: error < 1e-4).
    z, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()
    for alpha in (-1.0, -0.5, 0.0, 0.1, 0.5, 1.0):
        act = parse_activation(alpha)
        second_moment = np.sum(w * act(z) ** 2)
        assert norm_preserving_scale(alpha) == pytest.approx(1 / second_moment, rel=1e-4, abs=0)
    assert norm_preserving_scale("relu") == 2.0
    assert norm_preserving_scale("linear") == 1.0


def test_names_round_trip():
    for spelling in ("relu", "linear", "leaky:0.1", "abs", "leaky:-0.5", "erf", "gelu", "sin",
                     "tanh", "softplus", "silu"):
        act = parse_activation(spelling)
        assert parse_activation(act.name) == act
    assert isinstance(parse_activation(Activation(0.2)), Activation)


@pytest.mark.parametrize(
    "bad, err, match",
    [("swish", ValueError, "expected 'relu'"), (-1.1, ValueError, r"slope in \[-1, 1\]"),
     (1.5, ValueError, r"slope in \[-1, 1\]"), ("leaky:x", ValueError, "leaky:<slope>"),
     ("leaky:-2", ValueError, r"slope in \[-1, 1\]"),
     (("gelu", 1), ValueError, "leaky_relu"), (None, TypeError, "NoneType"),
     (True, TypeError, "bool"), (float("nan"), ValueError, "slope")],
)
def test_bad_activation(bad, err, match):
    with pytest.raises(err, match=match):
        parse_activation(bad)


def test_ab_form_and_derivative():
    z = np.linspace(-3, 3, 13)
    for alpha in (-1.0, -0.5, 0.0, 0.2, 1.0):
        act = parse_activation(alpha)
        a, b = act.ab
        assert np.allclose(act(z), a * z + b * np.abs(z), rtol=0, atol=1e-15)
        assert np.array_equal(act.derivative(z), np.where(z > 0, 1.0, alpha))
    assert parse_activation("abs").name == "abs"


def test_smooth_activations_and_derivatives():
    # numpy forms against jax (same function) and against central differences of σ, σ'.
    import jax
    import jax.numpy as jnp

    from ntkcond._core.x64 import x64
    from ntkcond.activations import SMOOTH_NAMES

    z = np.linspace(-4, 4, 17)
    for name in SMOOTH_NAMES:
        act = parse_activation(name)
        with x64():
            jz = jnp.asarray(z)
            assert np.allclose(act(z), np.asarray(act.jax_fn(jz)), rtol=1e-14, atol=1e-15)
            d1 = np.asarray(jax.vmap(jax.grad(act.jax_fn))(jz))
            d2 = np.asarray(jax.vmap(jax.grad(jax.grad(act.jax_fn)))(jz))
        assert np.allclose(act.derivative(z), d1, rtol=1e-13, atol=1e-14), name
        assert np.allclose(act.second_derivative(z), d2, rtol=1e-12, atol=1e-13), name
    with pytest.raises(ValueError, match="not homogeneous"):
        norm_preserving_scale("erf")


def test_callable_activation():
    import jax.numpy as jnp

    from ntkcond.activations import CallableActivation

    def cube_ish(z):
        return z + 0.1 * jnp.sin(z)

    act = parse_activation(cube_ish)
    assert isinstance(act, CallableActivation) and act.name == "cube_ish"
    z = np.linspace(-2, 2, 5)
    assert np.allclose(act(z), z + 0.1 * np.sin(z), rtol=1e-15, atol=1e-15)
    assert np.allclose(act.derivative(z), 1 + 0.1 * np.cos(z), rtol=1e-15, atol=1e-15)
    assert np.allclose(act.second_derivative(z), -0.1 * np.sin(z), rtol=1e-14, atol=1e-15)
    for bad, match in [(lambda z: z / 0.0 * 0.0, "non-finite"),
                       (lambda z: jnp.cumsum(z), "not elementwise"),
                       (lambda z: z.mean() + 0 * z, "not elementwise")]:
        with pytest.raises(ValueError, match=match):
            parse_activation(bad)
