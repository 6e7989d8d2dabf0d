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
    [("swish", ValueError, "expected one of 'relu'"), (-1.1, ValueError, r"slope in \[-1, 1\]"),
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
    from ntkcond.activations import REGISTRY

    z = np.linspace(-4, 4, 17)
    for name in [n for n, a in REGISTRY.items() if not a.homogeneous]:  # the registry: data
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
                       (lambda z: z.mean() + 0 * z, "not elementwise"),
                       (jnp.sort, "not elementwise"),  # its probe grid is sorted: one more probe
                       (lambda z: 0 * z, "identically zero"),
                       (lambda z: jnp.sum(z), "keep the shape")]:
        with pytest.raises(ValueError, match=match):
            parse_activation(bad)


def test_parse_activations_one_str_is_one_activation_and_duplicates_are_refused():
    from ntkcond.activations import parse_activations

    assert [a.name for a in parse_activations("relu", "f")] == ["relu"]
    assert [a.name for a in parse_activations(["relu", "linear"], "f")] == ["relu", "linear"]
    with pytest.raises(ValueError, match=r"f: expected each activation once, got \['relu'\]"):
        parse_activations(["relu", "ReLU"], "f")
    with pytest.raises(ValueError, match="f: expected at least one activation"):
        parse_activations([], "f")
    with pytest.raises(TypeError, match="f: expected activations as a spelling"):
        parse_activations(3, "f")


@pytest.mark.parametrize("bad, err", [(2.0, ValueError), (float("nan"), ValueError),
                                      (-1.5, ValueError), ("0.5", TypeError), (True, TypeError)])
def test_activation_objects_check_their_slope_as_the_parser_does(bad, err):
    with pytest.raises(err, match="Activation: expected slope"):
        Activation(bad)
    with pytest.raises((TypeError, ValueError), match="slope"):
        parse_activation(bad)


def test_the_registry_is_what_the_help_and_the_parser_read():
    """One registry: every name parses to its object, the help lists every name, and each
    object says what the engines need (homogeneous ones their angle map, the rest w_std)."""
    from ntkcond.activations import REGISTRY, activation_names, activations_help
    from ntkcond.runs.cli import add_network_arguments, parser

    assert activation_names() == tuple(REGISTRY)
    assert {"relu", "linear", "abs", "erf", "gelu", "gelu_tanh", "sin", "tanh", "softplus",
            "silu"} <= set(REGISTRY)
    p = parser("x", "doc")
    add_network_arguments(p)
    help_text = " ".join(p.format_help().split())
    for name, act in REGISTRY.items():
        assert parse_activation(name) is act and name in activations_help()
        assert name in help_text
        if act.homogeneous:
            assert act.angle_activation.homogeneous and norm_preserving_scale(act) > 0
        else:
            with pytest.raises(ValueError, match="not homogeneous"):
                norm_preserving_scale(act)
