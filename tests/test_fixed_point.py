"""ntkcond.network.fixed_point: deep nets past the fixed point of their layer map, in closed
form, against the layer-by-layer route (``engine.evaluate`` of ``family.network(L)``: every
layer map applied in turn, the route every depth took before).

Tolerances. Past the fixed point l₀ the two routes round differently (once per layer there,
once per squaring here), and each carries a rounding of order L·eps of the exact recursion
(measured: the layer-by-layer angles of erf with biases drift by 1e-12 rad between depths 1000
and 20 000, where the exact value is π/2 to far below that). They agree within
TOL(L) = 16·L·eps: gradient angles absolutely (radians) and in relative terms where the angle
is below 1 (the ordered phase: angles ~1e-80 rad keep their relative precision), plus the
rounding ``ANGLE_FLOOR``²/φ of 1 − cos φ; NTK entries relative to √(Θ(x, x)Θ(x′, x′)). A
planted error (the map one block off) fails them.
"""
import time

import numpy as np
import pytest

import ntkcond
from ntkcond.infinite.engine import evaluate, evaluate_family
from ntkcond.infinite.geometry import pair_geometry
from ntkcond.network import KernelRangeError, resolve_mlp
from ntkcond.network.fixed_point import AffineMap, decaying_gap, settled
from ntkcond.network.state import PairState

EPS = np.finfo(np.float64).eps

#: For nets with biases 1 − cos φ ≈ φ²/2 = (G − ½(√A − √B)²)/√(AB) carries an absolute
#: rounding of ~ANGLE_FLOOR² in either route: the diagonals A, B of rows at the same fixed
#: point differ in their last bits (measured: 2.9e-16 rad from the layer maps and 0 from the
#: closed form where the exact angle is ~1e-27; 1e-12 relative at φ = 7e-11). Hence the
#: allowance ANGLE_FLOOR²/φ (``ntkcond.infinite.kernels``' precision statement).
ANGLE_FLOOR = 1e-15


def _x():
    """Issue 34's X: five rows in R⁴, two of them 1e-3 apart."""
    x = np.random.default_rng(0).standard_normal((5, 4))
    x[1] = x[0] + 1e-3
    return x


# (activation, options, depth for the comparison: past the fixed point l₀, the layer maps still
# affordable, the angles of the ordered phase still far above ``ANGLE_FLOOR``). Chaotic phase
# (c settles at 0; l₀ ≈ 410), a fixed point with c* ≠ 0 (biases; l₀ ≈ 405), the ordered phase
# with its gap D decaying (l₀ = 165, 53, 47; softplus 67, tanh 269).
NETS = [
    ("erf", dict(w_std=1.5), 1200),
    ("erf", dict(w_std=1.5, b_std=0.1), 900),
    ("erf", dict(w_std=1.0, b_std=0.3), 190),
    ("gelu", dict(w_std=1.2, b_std=0.2), 70),
    ("sin", dict(w_std=0.8, b_std=0.5), 65),
]
SLOW_NETS = [  # (softplus: its angles at l₀ are ~1e-21, below the rounding allowance, and its
    # kernel has converged: one block more or less changes nothing the tolerance sees, so no
    # planted error there; the closed form's ρⁿ is checked by the other nets)
    ("softplus", dict(w_std=1.0), 80, False),
    ("tanh", dict(w_std=1.0, b_std=0.1), 290, True),
]


def _close(fast, slow, L, kernels=True):
    """Whether two ``Evaluated`` agree within TOL(L) (module docstring)."""
    tol = 16 * L * EPS
    if kernels:
        K, Ks = fast.ntk, slow.ntk
        scale = np.sqrt(np.outer(np.diag(Ks), np.diag(Ks)))
        if not np.all(np.abs(K - Ks) <= tol * scale):
            return False
    phi, phis = fast.angles(), slow.angles()
    with np.errstate(divide="ignore"):
        rounding = ANGLE_FLOOR**2 / np.maximum(phi, phis)
    return bool(np.all(np.abs(phi - phis) <= tol * np.minimum(1.0, phis) + rounding))


def _both(act, kw, L, layers=None):
    family = resolve_mlp(act, where="test", **kw)
    geometry = pair_geometry(_x(), None, "test")
    fast = evaluate_family(family, L, geometry, layers, angles=True)
    slow = evaluate(family.network(L, layers), geometry, angles=True)
    return family, geometry, fast, slow


def _compare(act, kw, L, planted=True):
    family, geometry, fast, slow = _both(act, kw, L)
    assert _close(fast, slow, L)
    if planted:  # the map one block off
        off = evaluate_family(family, L + 1, geometry, angles=True)
        assert not _close(off, slow, L)


@pytest.mark.parametrize("act,kw,L", NETS, ids=[f"{a}-{k}" for a, k, _ in NETS])
def test_closed_form_matches_the_layer_maps(act, kw, L):
    _compare(act, kw, L)


@pytest.mark.slow
@pytest.mark.parametrize("act,kw,L,planted", SLOW_NETS,
                         ids=[f"{a}-{k}" for a, k, _, _ in SLOW_NETS])
def test_closed_form_matches_the_layer_maps_quadrature(act, kw, L, planted):
    # Activations without closed forms cost 2–45 ms a layer (Mehler's series, the small gaps'
    # quadrature): the layer-by-layer reference takes 5–10 s.
    _compare(act, kw, L, planted)


@pytest.mark.slow
def test_tanh_chaotic_angles_match_the_layer_maps():
    # tanh at w_std = 1.5 settles at l₀ = 1060. Angles only: in the chaotic phase the layer
    # maps' own diagonal pairs (x, x) leave c = q (an unstable fixed point of the correlation
    # map; Mehler's series rounds below it), so Θ(x, x) of the block is rounding in both
    # routes (a defect of the layer maps, reported; the rows' A, B and the angles are not
    # affected).
    _, _, fast, slow = _both("tanh", dict(w_std=1.5), 1500)
    assert _close(fast, slow, 1500, kernels=False)


def test_trainable_sets_and_the_sweep_give_the_same_answer():
    # A trainable set with a hidden index: the blocks are the same only past it, and the
    # sweep (one pass to its deepest depth) gives each depth's net bit for bit.
    family = resolve_mlp("erf", w_std=1.5, b_std=0.1, where="test")
    geometry = pair_geometry(_x(), None, "test")
    for layers in (frozenset({0, 600}), frozenset({0, 3}), "last"):
        fast = evaluate_family(family, 900, geometry, layers, angles=True)
        slow = evaluate(family.network(900, layers), geometry, angles=True)
        assert _close(fast, slow, 900)
    x = _x()
    kw = dict(activation="erf", w_std=1.5, b_std=0.1)
    for item in ntkcond.depth_sweep(x, [3, 500, 900, 2000], **kw):
        assert np.array_equal(item.angles, ntkcond.gradient_angles(x, depth=item.depth, **kw))
        assert np.array_equal(item.ntk, ntkcond.infinite_ntk(x, depth=item.depth, **kw))


def test_the_leaky_kink_is_not_taken_for_a_decaying_gap():
    # ReLU with biases (s_w² < 2): its gap decays, but Dσ′ ∝ θ ∝ √D, not ∝ D, so the map
    # built at a decaying gap does not predict two blocks on (AffineMap.predicts): the layers
    # run until D is 0 bit for bit. Equal to the layer maps bit for bit until then.
    family, geometry, fast, slow = _both("relu", dict(w_std=1.4, b_std=0.1), 3000)
    assert np.array_equal(fast.angles(), slow.angles()) and np.array_equal(fast.ntk, slow.ntk)


@pytest.mark.parametrize("act,kw", [("erf", dict(w_std=1.5)), ("tanh", dict(w_std=1.5)),
                                    ("erf", dict(w_std=1.5, b_std=0.1)),
                                    ("gelu", dict(w_std=1.2, b_std=0.2)),
                                    ("sin", dict(w_std=0.8, b_std=0.5))])
def test_depth_1e6_costs_seconds(act, kw):
    # Issue 34: erf, tanh, GELU (w_std = 1.5) at depth 10⁶ took over 2 minutes; now the layers
    # up to the fixed point (≤ ~1100) and ~20 squarings: ≤ ~5 s here (bound 20 s for CI).
    x = _x()
    t0 = time.perf_counter()
    phi = ntkcond.gradient_angles(x, depth=10**6, activation=act, **kw)
    assert time.perf_counter() - t0 < 20.0
    assert phi.shape == (5, 5) and np.all(np.diag(phi) == 0)
    if act in ("erf", "tanh") and kw.get("w_std") == 1.5:
        # the chaotic phase: Θ(x, x′)/√(Θ(x, x)Θ(x′, x′)) → 0, every angle → π/2 (within the
        # recursion's rounding, L·eps = 2.2e-10)
        off = phi[~np.eye(5, dtype=bool)]
        assert np.all(np.abs(off - np.pi / 2) <= 16 * 10**6 * EPS)
        with pytest.raises(KernelRangeError, match=r"^infinite_ntk: .*leaves float64's range"):
            ntkcond.infinite_ntk(x, depth=10**6, activation=act, **kw)


def test_gelu_whose_variance_underflows_is_refused_at_once():
    """Bias-free GELU at s_w = 1.5 maps q to ~0.56·q near 0: the variance entering layer 1232
    is below 2.2e-308 and no float64 kernel or angle recursion represents the net beyond it
    (it returned angles of exactly 0 there): one ValueError naming the depth that fits."""
    t0 = time.perf_counter()
    for f in (ntkcond.gradient_angles, ntkcond.infinite_ntk):
        with pytest.raises(ValueError, match=rf"^{f.__name__}: expected depth <= 12\d\d for activation "
                                             r"'gelu' on these inputs .*got depth 1000000"):
            f(_x(), depth=10**6, activation="gelu", w_std=1.5)
    assert time.perf_counter() - t0 < 20.0
    assert np.all(np.isfinite(ntkcond.gradient_angles(_x(), depth=1231, activation="gelu", w_std=1.5)))


@pytest.mark.slow
def test_softplus_depth_1e4():
    # Issue 34: softplus at depth 10⁴ took over a minute (its small gaps' quadrature, ~45 ms a
    # layer); the decaying gap joins the recursion at ~70 layers.
    t0 = time.perf_counter()
    phi = ntkcond.gradient_angles(_x(), depth=10**4, activation="softplus", w_std=1.0)
    K = ntkcond.infinite_ntk(_x(), depth=10**4, activation="softplus", w_std=1.0)
    assert time.perf_counter() - t0 < 30.0
    assert np.all(phi >= 0) and np.all(phi < ANGLE_FLOOR)  # ordered phase: angles → 0
    assert np.all(np.isfinite(K)) and np.ptp(K) < 1e-12 * K.max()  # → a constant kernel


def test_no_fixed_point_is_refused_with_a_clear_error(monkeypatch):
    # A residual net's variances grow without bound: no fixed point. Past its budget of
    # blocks (``layer_budget``; here lowered so that the test takes a second) one ValueError
    # naming the function, the depth that fits and the depth asked.
    import ntkcond.infinite.engine as engine

    monkeypatch.setattr(engine, "MAX_PAIR_BLOCKS", 1)
    with pytest.raises(ValueError, match=r"^gradient_angles: expected depth <= 1000 for this net "
                                         r"on these pairs .*got depth 5000$"):
        ntkcond.gradient_angles(_x(), depth=5000, residual=0.5)
    ok = ntkcond.gradient_angles(_x(), depth=1000, residual=0.5)  # FREE_DEPTH always runs
    assert np.all(np.isfinite(ok))


def _state(c, D, q=1.0):
    c, D = np.asarray(c, dtype=np.float64), np.asarray(D, dtype=np.float64)
    one = np.full_like(c, q)
    return PairState(one, one, c, D, one, one, c, D)


def test_settled_and_decaying_gap_rules():
    # settled: D bit for bit; c bit for bit or both below 2^-64 of the diagonal
    assert settled(_state([0.3], [0.7]), _state([0.3], [0.7]))
    assert not settled(_state([0.3], [0.7]), _state([0.3], [np.nextafter(0.7, 1)]))
    assert settled(_state([2.0**-70], [1.0]), _state([2.0**-71], [1.0]))
    assert not settled(_state([2.0**-60], [1.0]), _state([2.0**-61], [1.0]))
    # decaying gap: values settled, D tiny, its ratio repeated within 4 ulps
    q = 1.0
    a, b, c = (_state([q], [d]) for d in (1e-20, 0.5e-20, 0.25e-20))
    assert np.array_equal(decaying_gap(a, b, c), [0.5])
    bent = _state([q], [0.25e-20 * (1 + 64 * EPS)])
    assert decaying_gap(a, b, bent) is None
    big = [_state([q], [d]) for d in (1e-10, 0.5e-10, 0.25e-10)]
    assert decaying_gap(*big) is None  # not below 2^-50 of the diagonal


def test_powers_of_the_map_are_the_map_applied_n_times():
    # AffineMap.advance(n) against n applications of its own constant affine map, with a
    # kernel that grows by 2^20 per block (the exponents carried apart): 1e-13 relative.
    rng = np.random.default_rng(2)
    shape = (3, 3)
    q = np.ones(shape)
    s = PairState(q[:, :1], q[:1, :], 0.2 * q, 0.8 * q, rng.uniform(1, 2, (3, 1)),
                  rng.uniform(1, 2, (1, 3)), rng.uniform(-1, 1, shape), rng.uniform(1, 2, shape))
    m = AffineMap(s, [np.full((3, 1), 2.0**20), np.full((1, 3), 2.0**20), np.full(shape, 0.5),
                      np.full(shape, 2.0**20), None, np.full(shape, 0.25), np.full(shape, 0.25),
                      np.full(shape, 0.1), None],
                  [np.full((3, 1), 3.0), np.full((1, 3), 3.0), np.full(shape, 0.3),
                   np.full(shape, 0.7), None], 0)
    x = [np.asarray(getattr(s, k), dtype=np.float64) for k in "ABCG"]
    for n in range(1, 40):
        x = [m.matrix[0] * x[0] + 3.0, m.matrix[1] * x[1] + 3.0, m.matrix[2] * x[2] + 0.3,
             m.matrix[5] * x[0] + m.matrix[6] * x[1] + m.matrix[7] * x[2]
             + m.matrix[3] * x[3] + 0.7]
        got = m.advance(n)
        for k, want in zip("ABCG", x):
            have = np.ldexp(np.asarray(getattr(got, k)), got.ntk_exp)
            np.testing.assert_allclose(have, want, rtol=1e-13, atol=1e-13 * np.max(np.abs(x[0])))


def test_self_pairs_stay_identical_in_the_chaotic_phase():
    """tanh at s_w = 1.5 is chaotic (χ = s_w²·E[tanh′(z)²] ≈ 1.139 at its fixed point q*):
    rounding in a self pair's gap grew by χ a layer until, after ~300 layers, Θ(x, x) decayed
    like an off-diagonal entry (1.13 at depth 1000, where the truth is 2.7e57). Identical
    inputs now stay identical exactly, so Θ_L(x, x)/Θ_{L−1}(x, x) → χ: checked at L = 1000
    against χ by 200-node Gauss–Hermite quadrature at q* (relative 1e-9: q* and χ converge
    geometrically, the quadrature to ~1e-15)."""
    z, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()
    q = 1.0
    for _ in range(2000):  # q* of q ↦ s_w²·E[tanh(√q z)²]
        q = 2.25 * np.sum(w * np.tanh(np.sqrt(q) * z) ** 2)
    chi = 2.25 * np.sum(w * (1 - np.tanh(np.sqrt(q) * z) ** 2) ** 2)
    x = _x()
    d999, d1000 = (np.diag(ntkcond.infinite_ntk(x, depth=L, activation="tanh", w_std=1.5))
                   for L in (999, 1000))
    assert np.all(d1000 > 1e50)
    assert np.max(np.abs(d1000 / d999 / chi - 1)) < 1e-9
