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


@pytest.mark.parametrize("depth,slope", [(1, 0.0), (4, 0.0), (10, 0.0), (3, 0.3), (4, -0.5),
                                         (3, -1.0)])
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
        # the enclosure is tight: within its stated relative width r and one float64 rounding
        assert a - s.coefficients[p] <= (s.relative_error + 4.5e-16) * a + 1e-30
        slack = s.spread if s.coefficients[p] == 0 else 1e-30  # r covers ǎ_p > 0 only
        assert s.upper_coefficients[p] - a <= (s.relative_error + 4.5e-16) * a + slack


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


# ------------------------------------------------------------------ a certified bound at depth
def _mp_theta_at_zero(depth, slope, mp):
    """Θ̃(0) = a_0 by the scalar recursion of module eq. (4) at ρ = 0, in mpmath."""
    a = mp.mpf(slope)
    w_lin, w_relu = 2 * a / (1 + a * a), (1 - a) ** 2 / (1 + a * a)
    rho = T = mp.mpf(0)
    for _ in range(depth):
        asin = mp.asin(rho)
        gdot = w_lin + w_relu * (mp.mpf(1) / 2 + asin / mp.pi)
        rho = w_lin * rho + w_relu * (mp.sqrt(1 - rho * rho) + rho * (mp.pi / 2 + asin)) / mp.pi
        T = rho + gdot * T
    return T / (depth + 1)


@pytest.mark.parametrize("depth,slope", [(1000, 0.0), (10**4, 0.0), (2000, 0.5), (300, -1.0)])
def test_deep_nets_coefficient_zero_is_enclosed(depth, slope):
    """Issue 34: at depth 10⁶ the old first-order bound excluded a_0 = Θ̃(0) (→ 1/4 for deep
    ReLU); the enclosure now contains the 40-digit value at every accepted depth, and its width
    grows like L³u (u = 2⁻⁶⁴): ≤ 1e-10 relative at 10³, ≤ 1e-7 at 10⁴."""
    mp = pytest.importorskip("mpmath").mp
    mp.dps = 40
    exact = _mp_theta_at_zero(depth, slope, mp)
    s = ntk_power_series(depth, slope, order=4)
    assert s.coefficients[0] <= exact <= s.upper_coefficients[0]
    assert s.tail_lower <= 1 - exact and s.tail >= s.tail_lower
    assert s.relative_error <= {1000: 1e-10, 10**4: 1e-7, 2000: 1e-9, 300: 1e-11}[depth]
    if slope == 0.0:
        assert abs(float(exact) - 0.25) <= 5.0 / depth  # Θ̃(0) → 1/4 (like 3.3/L)


def test_enclosure_without_outward_rounding_misses_the_truth(monkeypatch):
    """The mpmath test above can fail: with the outward rounding switched off the 'enclosure'
    is a point that misses the exact a_0 at depth 2000 (the planted error the widening covers)."""
    mp = pytest.importorskip("mpmath").mp
    mp.dps = 40
    from ntkcond.infinite import power_series as ps

    exact = _mp_theta_at_zero(2000, 0.0, mp)
    monkeypatch.setattr(ps, "_down", lambda v, k: v)
    monkeypatch.setattr(ps, "_up", lambda v, k: v)
    ps._cached_series.cache_clear()
    try:
        s = ps.ntk_power_series(2000, 0.0, order=4)
        lo, hi = s.coefficients[0], s.upper_coefficients[0]
        assert not (lo <= exact <= hi) or hi - lo > 1e-14
    finally:
        ps._cached_series.cache_clear()


@pytest.mark.slow
def test_the_deepest_accepted_depth_is_certified():
    """At the largest depth accepted at order 2 (~15 s), the enclosure still holds a_0."""
    mp = pytest.importorskip("mpmath").mp
    mp.dps = 40
    from ntkcond.infinite.power_series import MAX_COST, series_cost

    depth = MAX_COST // series_cost(1, 2)
    s = ntk_power_series(depth, "relu", order=2)
    assert s.coefficients[0] <= _mp_theta_at_zero(depth, 0.0, mp) <= s.upper_coefficients[0]


def test_depths_beyond_the_cost_bound_are_refused_at_once():
    import time

    from ntkcond.infinite.power_series import max_certified_order

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"ntk_power_series: expected depth·\(order \+ 17\).*"
                                         r"got depth 1000000 and order 10.*largest depth is \d+"):
        ntk_power_series(10**6, order=10)
    with pytest.raises(ValueError, match=r"nngp_power_series: expected depth"):
        nngp_power_series(10**5, order=1000)
    assert time.perf_counter() - t0 < 1.0
    assert max_certified_order(10**6) == -1 and max_certified_order(0) == MAX_ORDER
    assert 500 < max_certified_order(1000) < 700


def test_non_leaky_activation_is_refused():
    with pytest.raises(ValueError, match=r"^ntk_power_series: activation 'erf' is not homogeneous"):
        ntk_power_series(2, "erf", order=3)


def test_a_scaled_activation_has_the_series_of_its_angle_map():
    """3·relu(z) and −relu(−z)·2 (``Affine`` of ReLU) have ReLU's normalised kernels: the same
    certified enclosure (``parse_angle_activation``)."""
    from ntkcond.activations import RELU
    from ntkcond.activations.affine import Affine

    relu = ntk_power_series(4, "relu", order=12)
    for act in (Affine(RELU, out_scale=3.0), Affine(RELU, out_scale=-2.0, in_scale=-1.0)):
        s = ntk_power_series(4, act, order=12)
        assert s.activation == "relu"
        assert np.array_equal(s.coefficients, relu.coefficients)
        assert np.array_equal(s.upper_coefficients, relu.upper_coefficients)


def test_abs_has_exact_zero_odd_coefficients_enclosed():
    s = ntk_power_series(5, "abs", order=20)
    odd = s.coefficients[1::2]
    assert np.all(odd == 0) and np.all(s.upper_coefficients[1::2] <= 1e-15)
    assert s.spread <= 1e-13 and 0 <= s.relative_error <= 1e-14
