"""ntkcond.infinite.power_series against the closed-form kernels (infinite_ntk / infinite_nngp
of unit vectors) and against an independent 50-digit mpmath Cauchy integral."""
import numpy as np
import pytest

from ntkcond import infinite_nngp, infinite_ntk, nngp_power_series, ntk_power_series
from ntkcond.infinite.power_series import MAX_ORDER

RHO = np.concatenate([np.linspace(-1, 1, 401), [0.999, 0.9999, -0.9999]])


def _unit_kernel(kernel_fn, rho, depth, activation, trainable="all"):
    """The normalised kernel of e₁ and the unit vectors at cos θ = ρ (d = 2)."""
    theta = np.arccos(np.clip(rho, -1, 1))
    x1 = np.array([[1.0, 0.0]])
    x2 = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    if kernel_fn is infinite_ntk:
        K = infinite_ntk(x1, x2, depth=depth, activation=activation, trainable=trainable)[0]
        diag = infinite_ntk(x1, depth=depth, activation=activation, trainable=trainable)[0, 0]
    else:
        K = infinite_nngp(x1, x2, depth=depth, activation=activation)[0]
        diag = infinite_nngp(x1, depth=depth, activation=activation)[0, 0]
    return K / diag


@pytest.mark.parametrize("depth", [1, 3, 10])
def test_relu_order_400_reproduces_infinite_ntk_within_its_tail(depth):
    # The must-show: non-negative coefficients, and Σ a_p ρ^p within tail + 1e-12 of
    # the normalised infinite_ntk at every ρ (1e-12: infinite_ntk's and Horner's rounding).
    s = ntk_power_series(depth, "relu", order=400)
    assert s.coefficients.shape == (401,) and np.all(s.coefficients >= 0)
    assert 0 < s.tail < 0.1 and 0 <= s.tail_lower <= s.tail
    err = np.abs(_unit_kernel(infinite_ntk, RHO, depth, "relu") - s(RHO))
    assert np.all(err <= s.tail + 1e-12), (err - s.tail).max()
    # away from |ρ| = 1 the series converges geometrically: far tighter than the tail
    inner = np.abs(RHO) <= 0.5
    assert np.all(err[inner] <= 1e-11)
    # and at ρ = 1 the tail is attained (the bound is tight there)
    assert abs(float(s(np.array([1.0]))[0]) + s.tail - 1.0) <= 1e-12


@pytest.mark.parametrize("activation", [("leaky_relu", 0.2), 0.7, "linear"])
@pytest.mark.parametrize("depth", [0, 2, 5])
def test_other_slopes_and_nngp(activation, depth):
    s = ntk_power_series(depth, activation, order=300)
    err = np.abs(_unit_kernel(infinite_ntk, RHO, depth, activation) - s(RHO))
    assert np.all(s.coefficients >= 0) and np.all(err <= s.tail + 1e-12)
    g = nngp_power_series(depth, activation, order=300)
    err = np.abs(_unit_kernel(infinite_nngp, RHO, depth, activation) - g(RHO))
    assert np.all(g.coefficients >= 0) and np.all(err <= g.tail + 1e-12)


def test_linear_net_has_the_single_coefficient_a1():
    for depth in (0, 1, 7):
        s = ntk_power_series(depth, "linear", order=50)
        assert s.coefficients[1] == pytest.approx(1.0, rel=1e-15, abs=0)
        assert np.all(np.delete(s.coefficients, 1) == 0) and s.tail <= 1e-15


@pytest.mark.parametrize("trainable", ["first", "last", (0, 2)])
def test_trainable_subsets(trainable):
    s = ntk_power_series(3, "relu", order=300, trainable=trainable)
    err = np.abs(_unit_kernel(infinite_ntk, RHO, 3, "relu", trainable) - s(RHO))
    assert np.all(err <= s.tail + 1e-12)


def test_tails_bracket_the_true_tail():
    # true tail Σ_{p>400} a_p: at least the order-2000 coefficients 401..2000 (lower bounds),
    # at most those (upper bounds) plus the order-2000 tail.
    lo, hi = ntk_power_series(3, "relu", order=400), ntk_power_series(3, "relu", order=2000)
    # both are certified brackets of the same a_p: each lower bound is below the other's upper
    assert np.all(hi.upper_coefficients[:401] >= lo.coefficients)
    assert np.all(lo.upper_coefficients >= hi.coefficients[:401])
    mid_lo = hi.coefficients[401:].sum()
    mid_hi = hi.upper_coefficients[401:].sum() + hi.tail
    assert lo.tail_lower <= mid_hi and lo.tail >= mid_lo
    assert lo.tail - lo.tail_lower <= 1e-10  # the two bounds differ by the rounding allowance


def _mp_cauchy_coefficients(depth, slope, P, mp):
    """a_0..a_P of the normalised ReLU/leaky NTK by a Cauchy integral on |z| = 1/2 of the
    closed form (arcsin/sqrt of complex z, principal branches: analytic in the unit disk)."""
    w_lin = mp.mpf(2 * slope) / (1 + mp.mpf(slope) ** 2)
    w_relu = (1 - mp.mpf(slope)) ** 2 / (1 + mp.mpf(slope) ** 2)

    def ntk(z):
        rho, T = z, z
        for _ in range(depth):
            asin = mp.asin(rho)
            gdot = w_lin + w_relu * (mp.mpf(1) / 2 + asin / mp.pi)
            rho = w_lin * rho + w_relu * (mp.sqrt(1 - rho * rho) + rho * (mp.pi / 2 + asin)) / mp.pi
            T = rho + gdot * T
        return T / (depth + 1)

    N, r = 96, mp.mpf(1) / 2
    vals = [ntk(r * mp.expj(2 * mp.pi * k / N)) for k in range(N)]
    return [mp.re(sum(v * mp.expj(-2 * mp.pi * k * p / N) for k, v in enumerate(vals)) / N / r**p)
            for p in range(P + 1)]


@pytest.mark.parametrize("depth,slope", [(1, 0.0), (4, 0.0), (10, 0.0), (3, 0.3)])
def test_coefficients_against_mpmath_cauchy_integral(depth, slope):
    mp = pytest.importorskip("mpmath").mp
    mp.dps = 50
    P = 24  # aliasing a_{p+96}·2⁻⁹⁶ and the r^-p amplification of 1e-50 are both < 1e-30
    exact = _mp_cauchy_coefficients(depth, slope, P, mp)
    s = ntk_power_series(depth, slope, order=P)
    for p in range(P + 1):
        a = float(exact[p])
        assert s.coefficients[p] <= a + 1e-30  # a lower bound
        assert s.upper_coefficients[p] >= a - 1e-30  # and the upper bound above it
        # lowered by the stated bound r and one rounding down to float64, no more
        assert a - s.coefficients[p] <= (2 * s.relative_error + 4.5e-16) * a + 1e-30


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"ntk_power_series: expected order >= 0"):
        ntk_power_series(1, order=-1)
    with pytest.raises(ValueError, match=r"ntk_power_series: expected order <= "):
        ntk_power_series(1, order=MAX_ORDER + 1)
    with pytest.raises(TypeError, match=r"ntk_power_series: expected an integer order"):
        ntk_power_series(1, order=2.5)
    with pytest.raises(ValueError, match=r"ntk_power_series: activation: expected one of 'relu'"):
        ntk_power_series(1, "tanh-ish", order=3)
    with pytest.raises(ValueError, match=r"ntk_power_series: expected trainable"):
        ntk_power_series(1, order=3, trainable="middle")
    with pytest.raises(ValueError, match=r"PowerSeries: expected rho in \[-1, 1\]"):
        ntk_power_series(1, order=3)(np.array([1.5]))
    assert "order=3" in repr(ntk_power_series(1, order=3))
