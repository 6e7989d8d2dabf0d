import numpy as np
import pytest

from ntkcond import Activation, norm_preserving_scale, parse_activation


@pytest.mark.parametrize(
    "spelling, slope",
    [("relu", 0.0), ("linear", 1.0), ("identity", 1.0), (("leaky_relu", 0.1), 0.1),
     (0.25, 0.25), ("leaky:0.3", 0.3), ("leaky_relu:0.5", 0.5), (0, 0.0), (1, 1.0)],
)
def test_spellings(spelling, slope):
    assert parse_activation(spelling).slope == slope


def test_scale_is_inverse_second_moment():
    # c = 1/E[σ(z)²] for z ~ N(0,1): check against Gauss-Hermite quadrature of the second
    # moment (exact for the piecewise quadratic σ² up to the kink; 200 nodes: error < 1e-4).
    z, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()
    for alpha in (0.0, 0.1, 0.5, 1.0):
        act = parse_activation(alpha)
        second_moment = np.sum(w * act(z) ** 2)
        assert norm_preserving_scale(alpha) == pytest.approx(1 / second_moment, rel=1e-4, abs=0)
    assert norm_preserving_scale("relu") == 2.0
    assert norm_preserving_scale("linear") == 1.0


def test_names_round_trip():
    for spelling in ("relu", "linear", "leaky:0.1"):
        act = parse_activation(spelling)
        assert parse_activation(act.name) == act
    assert isinstance(parse_activation(Activation(0.2)), Activation)


@pytest.mark.parametrize(
    "bad, err, match",
    [("tanh", ValueError, "expected 'relu'"), (-0.1, ValueError, r"slope in \[0, 1\]"),
     (1.5, ValueError, r"slope in \[0, 1\]"), ("leaky:x", ValueError, "leaky:<slope>"),
     (("gelu", 1), ValueError, "leaky_relu"), (None, TypeError, "NoneType"),
     (True, TypeError, "bool"), (float("nan"), ValueError, "slope")],
)
def test_bad_activation(bad, err, match):
    with pytest.raises(err, match=match):
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
