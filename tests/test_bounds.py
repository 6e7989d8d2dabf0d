"""ntkcond.scale.bounds: certified brackets of λmin, λmax and κ of the infinite-width NTK,
checked against the exact spectrum (eigvalsh of infinite_ntk) on Gaussian, digits and (where
present) MNIST/CIFAR-10 batches."""
import math
import os

import numpy as np
import pytest

from ntkcond import (condition_number_bounds, conditioning, datasets, infinite_ntk,
                     lambda_min_lower_bound)
from ntkcond.scale.bounds import exponent_grid

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
EPS = np.finfo(np.float64).eps


def _exact(x, depth, activation="relu", trainable="all"):
    K = infinite_ntk(x, depth=depth, activation=activation, trainable=trainable)
    c = conditioning(K)
    # eigvalsh is backward stable: the exact eigenvalues of the float kernel are within
    # n·eps·λmax of these (the bounds are for the exact kernel, whose entries the float kernel
    # carries to ~1e-14 relative: 1e3·n·eps·λmax covers both)
    slack = 1e3 * len(x) * EPS * c.lambda_max
    return c, slack


def _check(x, depth, activation="relu", trainable="all", **kw):
    b = condition_number_bounds(x, depth=depth, activation=activation, trainable=trainable, **kw)
    c, slack = _exact(x, depth, activation, trainable)
    lam = c.eigenvalues
    assert b.lower <= c.kappa <= b.upper, (b.lower, c.kappa, b.upper)
    assert b.lambda_max_lower - slack <= lam[-1] <= b.lambda_max_upper + slack
    assert b.lambda_min_lower - slack <= lam[0] <= b.lambda_min_upper + slack
    assert b.lower_eff <= c.kappa_eff <= b.upper_eff
    return b, c


def _digits(n):
    return datasets.load("digits").x[:n]


@pytest.mark.parametrize("depth", [1, 3, 10])
@pytest.mark.parametrize("activation", ["relu", ("leaky_relu", 0.3)])
def test_bracket_on_digits(depth, activation):
    b, c = _check(_digits(200), depth, activation)
    assert math.isfinite(b.upper) and b.ratio < 20  # measured 2.9–6 (ReLU)
    assert set(b.seconds) == {"series", "scan", "pairs", "total"}


@pytest.mark.parametrize("n,d", [(150, 40), (64, 300)])
def test_bracket_on_gaussian_rows_of_unequal_norms(n, d):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, d)) * rng.uniform(0.2, 5.0, size=(n, 1))
    for depth in (1, 4):
        _check(x, depth)
        _check(x, depth, trainable="first")


def test_small_blocks_and_one_worker_give_valid_bounds():
    x = _digits(130)
    for block in (2, 7, 64):
        _check(x, 3, block=block)
    _check(x, 3, order=64)


def test_lambda_min_lower_bound_alone():
    x = _digits(120)
    c, slack = _exact(x, 5)
    lb = lambda_min_lower_bound(x, depth=5)
    assert 0 < lb.value <= c.eigenvalues[0] + slack
    assert lb.split is not None and lb.split >= 1 and lb.margin < 1e-12
    # the unit-diagonal kernel's bound, against its exact λmin
    d = np.sqrt(np.diagonal(infinite_ntk(x, depth=5)))
    Kt = infinite_ntk(x, depth=5) / np.outer(d, d)
    assert lb.normalised <= np.linalg.eigvalsh(Kt)[0] + 1e3 * len(x) * EPS * len(x)


def test_duplicates_give_an_infinite_upper_bound():
    x = _digits(60)
    x = np.vstack([x, x[:1]])  # an exact duplicate: λmin = 0
    b = condition_number_bounds(x, depth=3)
    assert b.upper == math.inf and b.lambda_min_lower == 0.0 and b.lower > 1e10
    assert lambda_min_lower_bound(x, depth=3).value == 0.0
    assert b.closest[0] == 0.0


def test_linear_nets_from_the_small_gram_matrix():
    rng = np.random.default_rng(3)
    wide = rng.standard_normal((40, 60))  # n ≤ d: κ finite and bracketed tightly
    for depth in (0, 2):
        b, c = _check(wide, depth, "linear")
        assert b.upper / b.lower < 1 + 1e-9
    tall = rng.standard_normal((80, 20))  # n > d: λmin = 0, κ = ∞; κ_eff from XᵀX
    b, c = _check(tall, 2, "linear")
    assert b.upper == math.inf and b.lambda_min_upper == 0.0
    assert b.upper_eff / b.lower_eff < 1 + 1e-9
    b, c = _check(tall, 0, "relu")  # depth 0 is the linear model whatever the activation
    assert b.upper == math.inf


def test_exponent_grid():
    assert exponent_grid(1025) == [0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 1024]
    assert exponent_grid(5) == [0, 1, 2, 3, 4]


def test_bad_input():
    with pytest.raises(ValueError, match=r"condition_number_bounds: expected n >= 2 rows"):
        condition_number_bounds(np.ones((1, 3)), depth=1)
    with pytest.raises(ValueError, match=r"nonzero rows"):
        condition_number_bounds(np.array([[1.0, 0.0], [0.0, 0.0]]), depth=1)
    with pytest.raises(ValueError, match=r"condition_number_bounds"):
        condition_number_bounds(np.array([[1.0, np.nan], [0.0, 1.0]]), depth=1)
    with pytest.raises(ValueError, match=r"lambda_min_lower_bound: expected order <= "):
        lambda_min_lower_bound(np.eye(3), depth=1, order=10**9)
    with pytest.raises(TypeError, match=r"condition_number_bounds: expected an integer depth"):
        condition_number_bounds(np.eye(3), depth="3")


def _real(name, preset, n=512):
    path = os.path.join(DATA, f"{name}.npz")
    if not os.path.exists(path):
        pytest.skip(f"{name}.npz not in ../shared/data (real images are optional)")
    return datasets.load(path, preset=preset).x[:n]


@pytest.mark.parametrize("name,preset", [("mnist_test", "mnist"), ("cifar10_test", "cifar10")])
def test_bracket_on_512_real_images(name, preset):
    # The must-show: lower ≤ κ ≤ upper at depths 1, 3, 10 on 512 test images.
    x = _real(name, preset)
    for depth in (1, 3, 10):
        b, c = _check(x, depth)
        assert math.isfinite(b.upper)


def test_data_separation_against_all_pairs():
    from ntkcond import input_angles
    from ntkcond.scale.bounds import data_separation

    rng = np.random.default_rng(5)
    x = rng.standard_normal((90, 12))
    x[7] = -2.5 * x[3] + 1e-6 * rng.standard_normal(12)  # a nearly antipodal pair
    sep = data_separation(x, block=16)
    theta = input_angles(x)
    iu = np.triu_indices(len(x), 1)
    star = min(theta[iu].min(), np.pi - theta[iu].max())
    assert sep.antipodal[1:] == (3, 7)
    assert sep.delta == pytest.approx(2 * np.sin(star / 2), rel=1e-9, abs=0)
    with pytest.raises(ValueError, match=r"data_separation: expected n >= 2 rows"):
        data_separation(np.ones((1, 4)))


@pytest.mark.parametrize("eps", [1e-3, 1e-6])
def test_near_duplicates_are_bracketed(eps):
    # one close pair dominates λmin (Prop 4.1 nearly tight); the series bound must stay below
    x = _digits(80)
    rng = np.random.default_rng(1)
    noise = rng.standard_normal(x.shape[1])
    x = np.vstack([x, x[0] + eps * np.linalg.norm(x[0]) * noise / np.linalg.norm(noise)])
    for depth in (1, 5):
        b, c = _check(x, depth)
        assert b.closest[1:] == (0, 80)
        assert b.lambda_min_upper <= 1.5 * c.eigenvalues[0]  # the pair bound is nearly attained


# --------------------------------------------------------------------------- issue 34
def _five_rows():
    """Issue 34's X: five rows in R⁴, two of them 1e-3 apart."""
    x = np.random.default_rng(0).standard_normal((5, 4))
    x[1] = x[0] + 1e-3
    return x


@pytest.mark.parametrize("activation", ["relu", "linear"])
def test_kappa_bracket_is_scale_invariant_and_lambdas_saturate_outward(activation):
    """1e200·X raised OverflowError; κ does not depend on the scale of x, so every finite
    scale gets the same bracket, and the λ's leave float64's range outward (a lower bound as the
    largest float64, an upper bound as inf; below the range 0 and the smallest subnormal)."""
    x = _five_rows()
    base = condition_number_bounds(x, depth=2, activation=activation)
    # powers of two scale x exactly (the bracket is then the same to rounding); 1e±200 rounds
    # each entry (~1e-16 relative), which the close pair amplifies by ~1/θ² (θ = 2.5e-3): 1e-9
    for c, tol in ((2.0**-996, 1e-12), (2.0**-664, 1e-12), (2.0**664, 1e-12), (2.0**996, 1e-12),
                   (1e-200, 1e-9), (1e200, 1e-9)):
        b = condition_number_bounds(c * x, depth=2, activation=activation)
        assert b.lower == pytest.approx(base.lower, rel=tol, abs=0)
        assert b.upper == pytest.approx(base.upper, rel=tol, abs=0) or b.upper == base.upper
        if c > 1:
            assert b.lambda_max_lower == np.finfo(np.float64).max and b.lambda_max_upper == math.inf
        else:
            assert b.lambda_max_lower == 0.0 and 0.0 < b.lambda_max_upper <= 1e-300
    _check(1e150 * x, 2, activation)  # within float64's range: against the exact spectrum
    lb = lambda_min_lower_bound(1e-200 * x, depth=2)
    assert lb.value == 0.0 and lb.normalised == pytest.approx(
        lambda_min_lower_bound(x, depth=2).normalised, rel=1e-12, abs=0)


def test_errors_name_the_function_called():
    x = _five_rows()
    x[2] = 0.0
    with pytest.raises(ValueError, match=r"^lambda_min_lower_bound: expected nonzero rows of x.*index 2"):
        lambda_min_lower_bound(x, depth=2)
    with pytest.raises(ValueError, match=r"^condition_number_bounds: expected nonzero rows"):
        condition_number_bounds(x, depth=2, activation="linear")
    with pytest.raises(ValueError, match=r"^condition_number_bounds: activation 'erf' is not "
                                         r"homogeneous"):
        condition_number_bounds(_five_rows(), depth=2, activation="erf")


def test_deep_nets_get_a_certified_bracket_or_a_clear_refusal():
    """The bracket holds where the certified series is affordable (an explicit small order at
    depth 1000; the default order shrinks with the depth, ``max_certified_order``), and depths
    where no order is affordable are refused at once instead of running for hours."""
    import time

    x = _five_rows()
    b, _ = _check(x, 1000, order=16)
    assert b.order == 16
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"^condition_number_bounds: expected a depth whose "
                                         r"certified power series fits .* got depth 1000000"):
        condition_number_bounds(x, depth=10**6)
    with pytest.raises(ValueError, match=r"^lambda_min_lower_bound: expected depth·\(order"):
        lambda_min_lower_bound(x, depth=10**4, order=1024)
    assert time.perf_counter() - t0 < 1.0
