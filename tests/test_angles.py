import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate

import _reference as ref
from ntkcond import angles as A
from ntkcond import conditioning, infinite_ntk, parse_activation

SLOPES = [0.0, 0.1, 0.5, 0.9, 1.0]
GRID = np.array([1e-3, 0.1, 0.7, np.pi / 2, 2.0, 3.0, np.pi])


def _circle_mean(f, angle):
    """(1/2π)∫₀^{2π} f(cos ψ, cos(ψ − θ)) dψ with the kinks as break points."""
    kinks = np.mod([np.pi / 2, 3 * np.pi / 2, angle + np.pi / 2, angle + 3 * np.pi / 2], 2 * np.pi)
    # quad may warn that it cannot certify 1e-13 at the kinks; the assertions below check
    # the value against the closed form at 1e-13 regardless.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        val, _ = integrate.quad(lambda p: f(np.cos(p), np.cos(p - angle)), 0, 2 * np.pi,
                                points=sorted(set(kinks)), epsabs=1e-14, epsrel=1e-13, limit=200)
    return val / (2 * np.pi)


@pytest.mark.parametrize("alpha", SLOPES)
def test_angle_map_equals_gaussian_integral(alpha):
    # Independent check of eq. (2): for unit-variance (u, v) at angle θ, write
    # (u, v) = r (cos ψ, cos(ψ − θ)); E[r²] = 2, so E[σ(u)σ(v)] = 2·mean_ψ σ(cos ψ)σ(cos(ψ−θ)),
    # and cos g(θ) = c·E[σ(u)σ(v)]. quad on the smooth pieces is accurate to ~1e-14.
    act = parse_activation(alpha)
    for angle in GRID:
        expected = act.scale * 2 * _circle_mean(lambda a, b: act(a) * act(b), angle)
        assert np.cos(A.angle_map(angle, alpha)) == pytest.approx(expected, abs=1e-13)


@pytest.mark.parametrize("alpha", SLOPES)
def test_derivative_factor_equals_gaussian_integral(alpha):
    # ġ(θ) = c·E[σ'(u)σ'(v)]; σ' is 0-homogeneous so E = mean_ψ σ'(cos ψ)σ'(cos(ψ − θ)).
    act = parse_activation(alpha)
    dsigma = lambda z: np.where(z > 0, 1.0, alpha)
    for angle in GRID:
        expected = act.scale * _circle_mean(lambda a, b: dsigma(a) * dsigma(b), angle)
        assert A.derivative_factor(angle, alpha) == pytest.approx(expected, abs=1e-13)


def test_relu_forms_of_the_paper():
    t = np.linspace(0, np.pi, 101)
    # cos θ' = (sin θ + (π − θ) cos θ)/π and (π − θ)/π, Liu & Hui's one-layer and derivative maps
    assert np.allclose(np.cos(A.angle_map(t)), (np.sin(t) + (np.pi - t) * np.cos(t)) / np.pi,
                       rtol=0, atol=1e-15)
    assert np.allclose(A.relu_kappa1(t), np.cos(A.angle_map(t)), rtol=0, atol=1e-15)
    # 1 − θ/π and (π − θ)/π differ by rounding only (≤ 2 eps)
    assert np.allclose(A.derivative_factor(t), (np.pi - t) / np.pi, rtol=0, atol=5e-16)
    assert np.array_equal(A.angle_map(t, "linear"), t)


@pytest.mark.parametrize("alpha", [0.0, 0.2])
@pytest.mark.parametrize("angle", [1e-12, 1e-8, 1e-6, 1e-3, 0.5])
def test_angle_map_small_angles_extended_precision(alpha, angle):
    # 50-digit evaluation of eq. (2) through acos; ntkcond never calls arccos, so it keeps
    # full relative precision (a few eps) at tiny angles where acos(float64) would fail.
    with mp.workdps(50):
        t, a = mp.mpf(angle), mp.mpf(alpha)
        k1 = (mp.sin(t) + (mp.pi - t) * mp.cos(t)) / mp.pi
        expected = mp.acos((2 * a * mp.cos(t) + (1 - a) ** 2 * k1) / (1 + a * a))
    assert A.angle_map(angle, alpha) == pytest.approx(float(expected), rel=1e-14, abs=0)


@pytest.mark.parametrize("alpha", [0.0, 0.2, 1.0])
@pytest.mark.parametrize("depth", [0, 1, 2, 5, 20, 50])
def test_gradient_angle_extended_precision(alpha, depth):
    # Issue target: relative 1e-9 for angles ≥ 1e-2 rad and 1e-6 down to 1e-6 rad. Every term
    # of the recursion is non-negative, so rounding stays at a few eps per layer: we hold the
    # implementation to 1e-12 relative everywhere (50 layers × ~4 eps ≈ 5e-14, with margin).
    for angle in [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.3, 1.5, 3.0]:
        x = np.array([1.0, 0.0, 0.0])
        y = np.array([np.cos(angle), np.sin(angle), 0.0])
        exact_in = float(ref.input_angle(x, y))  # the float64 vectors' true angle
        got = A.gradient_angle(exact_in, depth, alpha)
        assert got == pytest.approx(float(ref.gradient_angle(x, y, depth, alpha)), rel=1e-12, abs=0)


@pytest.mark.parametrize("trainable", ["first", "last", {0, 2}, [1]])
def test_gradient_angle_trainable_extended_precision(trainable):
    layers = A.resolve_trainable(trainable, 3)
    for angle in [1e-5, 0.1, 2.0]:
        x, y = np.array([1.0, 0.0]), np.array([np.cos(angle), np.sin(angle)])
        expected = float(ref.gradient_angle(x, y, 3, 0.0, set(layers)))
        got = A.gradient_angle(float(ref.input_angle(x, y)), 3, "relu", trainable)
        assert got == pytest.approx(expected, rel=1e-12, abs=0)


def test_linear_gradient_angle_is_input_angle():
    t = np.linspace(0, np.pi, 50)
    for depth in (0, 3, 30):
        assert np.array_equal(A.gradient_angle(t, depth, "linear"), t)


@given(st.floats(1e-150, np.pi), st.sampled_from([0.0, 0.3, 0.8]))
def test_angle_map_contracts_and_is_monotone(angle, alpha):
    g = A.angle_map(angle, alpha)
    # g(θ) = θ(1 − cθ + …) with c ≤ 1/(3π): once cθ is below eps the correction is lost in
    # rounding and g may land within 1 ulp either side of θ.
    if angle > 1e-12:
        assert 0 < g < angle
    else:
        assert 0 < g <= np.nextafter(angle, np.inf)
    assert A.angle_map(min(angle * 1.001, np.pi), alpha) >= g


def test_angle_map_fixed_point_only_at_zero():
    assert A.angle_map(0.0) == 0.0
    t = np.geomspace(1e-6, np.pi, 200)
    assert np.all(A.angle_map(t) < t)


def test_embedding_angles_collapse_like_three_pi_over_l():
    # gˡ(θ) ~ 3π/l: l·gˡ(θ)/(3π) → 1 with an O(log l / l) correction (measured: 0.983 at
    # l = 1e3 and 0.998 at 1e4 for θ = 1).
    t = np.array([0.3, 1.0, 3.0])
    r3 = 1e3 * A.angle_map_iterate(t, 1000) / A.embedding_angle_asymptote(1000)
    r4 = 1e4 * A.angle_map_iterate(t, 10000) / A.embedding_angle_asymptote(1)
    assert np.all(np.abs(1 - r4) < 0.01) and np.all(np.abs(1 - r4) < np.abs(1 - r3) / 5)


def test_small_angle_law_remainder_vanishes():
    # (cos φ − (1 − Lθ/(2π)) cos θ)/θ → 0: the remainder is O(θ²) (measured: the ratio drops
    # 10x per decade of θ for L = 5), so o(θ) holds.
    for depth in (1, 5, 10):
        ratios = []
        for angle in (1e-2, 1e-3, 1e-4):
            exact = np.cos(A.gradient_angle(angle, depth))
            ratios.append(abs(exact - A.small_angle_gradient_cos(angle, depth)) / angle)
        assert ratios[1] < ratios[0] / 5 and ratios[2] < ratios[1] / 5


def test_relu_infinite_depth_angle():
    # φ(θ, L) → arccos(1/4) = 75.52°, error O(1/L) (measured 2.6e-3 at L = 1e4 for θ = 0.1).
    assert np.degrees(A.relu_infinite_depth_angle()) == pytest.approx(75.5225, abs=1e-4)
    t = np.array([0.1, 1.0, 2.5])
    e3 = np.abs(A.gradient_angle(t, 1000) - A.relu_infinite_depth_angle())
    e4 = np.abs(A.gradient_angle(t, 10000) - A.relu_infinite_depth_angle())
    assert np.all(e4 < 3e-3) and np.all(e4 < e3 / 5)


def test_infinite_depth_kappa_is_n_plus_3_over_3():
    # The normalised NTK of unit-norm, non-parallel inputs tends to ¾I + ¼·11ᵀ, κ = (n+3)/3.
    # The paper's (n+4)/3 is wrong; note the finite-depth κ passes through (n+4)/3 on the way
    # (κ = 4.02 at L = 100 for n = 8), so a check at moderate depth could mislead.
    n = 8
    x = np.random.default_rng(0).standard_normal((n, 20))
    errors = []
    for depth in (1000, 10000):
        K = infinite_ntk(x, depth=depth)
        d = np.sqrt(np.diag(K))
        errors.append(conditioning(K / np.outer(d, d)).kappa - A.infinite_depth_kappa(n))
    assert A.infinite_depth_kappa(n) == (n + 3) / 3
    assert 0 < errors[1] < 0.01 and errors[1] < errors[0] / 5
    assert abs(errors[1]) < abs(errors[1] + A.infinite_depth_kappa(n) - (n + 4) / 3) / 10


@pytest.mark.parametrize(
    "call, match",
    [(lambda: A.angle_map(-0.1), r"angles in \[0, pi\]"), (lambda: A.angle_map(4.0), "angles"),
     (lambda: A.gradient_angle(0.1, -1), "depth >= 0"), (lambda: A.gradient_angle(0.1, 1.5), "integer"),
     (lambda: A.gradient_angle(0.1, 2, trainable=[3]), r"indices in \[0, 2\]"),
     (lambda: A.gradient_angle(0.1, 2, trainable="middle"), "'all', 'first', 'last'"),
     (lambda: A.infinite_depth_kappa(0), "n >= 1"),
     (lambda: A.gradient_angle(0.1, True), r"^gradient_angle: expected an integer depth, got True$"),
     (lambda: A.angle_map_iterate(0.1, 10**7), r"^angle_map_iterate: expected layers <= 1000000 .*got 10000000$"),
     (lambda: A.gradient_angle(0.1, 2, trainable=[1.0]),
      r"^gradient_angle: expected trainable .* integer layer indices, got 1.0 \(float\) in \[1.0\]$")],
)
def test_bad_inputs(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_infinite_depth_kappa_has_no_depth_limit():
    # n is a data-set size in a closed form, not a depth: no maximum
    assert A.infinite_depth_kappa(10**12) == (10**12 + 3) / 3
