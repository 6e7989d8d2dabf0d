"""The general nets (ntkcond.network.mlp) through the public kernels: w_std, b_std,
residual and the activation family against extended-precision references
(tests/_family_reference.py, mpmath/arb at 30 digits), neural-tangents, and the bias-free
routes. Tolerances: kernels 1e-12 relative to √(KᵢᵢKⱼⱼ); gradient angles of near-duplicate
pairs (θ ≈ 1e-6 rad) 1e-9 relative; neural-tangents to its own precision (1e-13 for closed
forms, 1e-3 for its Gauss–Hermite ElementwiseNumerical)."""
import os

import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
import ntkcond
from conftest import SHARED_DATA

ACTS = ["relu", "abs", "leaky:-0.5", "leaky:0.2", "erf", "gelu", "tanh", "sin"]
CONFIGS = [(1.5, 0.0), (1.5, 0.1), (1.0, 0.5)]
DEPTHS = [0, 1, 3, 10]


def _synthetic(n=3, d=20, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _real(name, rows):
    path = os.path.join(SHARED_DATA, f"{name}_test.npz")
    if not os.path.exists(path):
        pytest.skip(f"../shared/data/{name}_test.npz not present")
    from ntkcond import datasets

    return datasets.load(path, preset=name.replace("10", "10")).x[rows]


def _check_kernels(x, act, sw, sb, depths, residual=None):
    """Max error of infinite_ntk/infinite_nngp against the reference, relative to √(KᵢᵢKⱼⱼ)."""
    worst = 0.0
    ntks = {L: ntkcond.infinite_ntk(x, depth=L, activation=act, w_std=sw, b_std=sb,
                                    residual=residual) for L in depths}
    nngps = {L: ntkcond.infinite_nngp(x, depth=L, activation=act, w_std=sw, b_std=sb,
                                      residual=residual) for L in depths}
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            r = ref.kernels(x[i], x[j], depths, act, sw, sb, residual)
            for L in depths:
                nngp, ntk, _, nxx, nyy = r[L]
                scale = float(mp.sqrt(nxx * nyy))
                worst = max(worst, abs(ntks[L][i, j] - float(ntk)) / scale,
                            abs(ntks[L][i, i] - float(nxx)) / scale)
                # NNGP diagonal scale: Σ(x, x) from the reference's NNGP of (x, x)
                worst = max(worst, abs(nngps[L][i, j] - float(nngp)) / np.sqrt(
                    nngps[L][i, i] * nngps[L][j, j]))
    return worst


@pytest.mark.slow
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("sw, sb", CONFIGS)
def test_kernels_against_reference_synthetic(act, sw, sb):
    assert _check_kernels(_synthetic(), act, sw, sb, DEPTHS) <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("act", ACTS)
def test_residual_kernels_against_reference(act):
    assert _check_kernels(_synthetic(), act, 1.2, 0.1, [1, 3, 10], residual=0.5) <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
@pytest.mark.parametrize("act", ACTS)
def test_kernels_against_reference_real_images(dataset, act):
    x = _real(dataset, [3, 17])
    for sw, sb in CONFIGS:
        assert _check_kernels(x, act, sw, sb, DEPTHS) <= 1e-12


def _near_duplicates(kind, d=30, theta=1e-6, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(d)
    if kind == "rotation":  # equal norms, angle θ
        e = rng.standard_normal(d)
        e -= (e @ x) / (x @ x) * x
        e *= np.linalg.norm(x) / np.linalg.norm(e)
        y = np.cos(theta) * x + np.sin(theta) * e
    else:  # x + small perturbation: norms differ by about θ·‖x‖/√d
        u = rng.standard_normal(d)
        y = x + theta * np.linalg.norm(x) * u / np.linalg.norm(u)
    return np.stack([x, y])


@pytest.mark.slow
@pytest.mark.parametrize("act", ["erf", "gelu", "tanh", "relu", "abs"])
@pytest.mark.parametrize("sb", [0.0, 0.1])
@pytest.mark.parametrize("kind", ["rotation", "perturbation"])
def test_near_duplicate_gradient_angles(act, sb, kind):
    x = _near_duplicates(kind)
    depths = [1, 3, 10]
    r = ref.kernels(x[0], x[1], depths, act, 1.5, sb)
    for L in depths:
        phi = ntkcond.gradient_angles(x, depth=L, activation=act, w_std=1.5, b_std=sb)[0, 1]
        with mp.workdps(ref.DPS):
            want = float(mp.acos(r[L][2]))
        assert 1e-7 < want < 1e-2  # ReLU-like: φ ~ √(Lθ/π) ≈ 1e-3; smooth: φ ~ θ
        assert abs(phi - want) <= 1e-9 * want, (L, phi, want)


@pytest.mark.parametrize("act", ["relu", "abs", "leaky:-0.5"])
def test_default_net_unchanged_and_general_route_agrees(act):
    x = _synthetic(6, 9, 3)
    old = ntkcond.infinite_ntk(x, depth=4, activation=act)
    # b_std=0 with w_std=None is the default net, bit for bit
    assert np.array_equal(ntkcond.infinite_ntk(x, depth=4, activation=act, b_std=0.0), old)
    # the general recursion with the norm-preserving weights (through a tiny residual-free
    # route: b_std = 0 but w_std given as √c gives the same net up to the read-out scale c)
    c = ntkcond.parse_activation(act).scale
    general = ntkcond.infinite_ntk(x, depth=4, activation=act, w_std=np.sqrt(c))
    # with w_std = √c the read-out also has variance c: each layer's term gets a factor c
    assert np.max(np.abs(general / c - old)) <= 1e-14 * np.max(old)
    # angles do not depend on w_std for bias-free leaky nets
    a1 = ntkcond.gradient_angles(x, depth=4, activation=act)
    a2 = ntkcond.gradient_angles(x, depth=4, activation=act, w_std=1.7)
    assert np.max(np.abs(a1 - a2)) <= 1e-14


@pytest.mark.parametrize("act, sw, sb, res", [("erf", 1.5, 0.1, None), ("gelu", 1.2, 0.3, 0.5),
                                                ("relu", 1.5, 0.1, 0.7), ("sin", 1.0, 0.5, None)])
def test_sweep_layers_and_angles_consistent(act, sw, sb, res):
    x = _synthetic(5, 8, 4)
    kw = dict(activation=act, w_std=sw, b_std=sb, residual=res)
    sweep = list(ntkcond.depth_sweep(x, [0, 2, 3], **kw))
    assert [s.depth for s in sweep] == [0, 2, 3]
    for s in sweep:
        K = ntkcond.infinite_ntk(x, depth=s.depth, **kw)
        assert np.array_equal(s.ntk, K)
        assert np.array_equal(s.angles, ntkcond.gradient_angles(x, depth=s.depth, **kw))
        cos = K / np.sqrt(np.outer(np.diag(K), np.diag(K)))
        assert np.max(np.abs(np.cos(s.angles) - cos)) <= 1e-14
    layers = ntkcond.infinite_ntk_layers(x, depth=3, **kw)
    assert np.max(np.abs(layers.sum(0) - ntkcond.infinite_ntk(x, depth=3, **kw))) <= 1e-14 * np.max(
        layers.sum(0))
    last = ntkcond.infinite_ntk(x, depth=3, trainable="last", **kw)
    assert np.max(np.abs(last - ntkcond.infinite_nngp(x, depth=3, **kw))) <= 1e-15 * np.max(last)
    phi, i, j = ntkcond.smallest_gradient_angle(x, depth=3, **kw)
    full = ntkcond.gradient_angles(x, depth=3, **kw)
    assert phi == full[i, j] == np.min(full[np.triu_indices(5, 1)])


def test_callable_matches_named():
    import jax.numpy as jnp

    x = _synthetic(4, 6, 5)
    a = ntkcond.infinite_ntk(x, depth=2, activation=lambda z: jnp.tanh(z), w_std=1.5, b_std=0.1)
    b = ntkcond.infinite_ntk(x, depth=2, activation="tanh", w_std=1.5, b_std=0.1)
    assert np.max(np.abs(a - b)) <= 1e-13 * np.max(b)


@pytest.mark.parametrize("kw, err, match", [
    (dict(activation="tanh"), ValueError, "infinite_ntk: .*pass w_std"),
    (dict(w_std=0.0), ValueError, r"infinite_ntk: expected w_std in \[1e-150, 1e\+150\]"),
    (dict(w_std=-1.0), ValueError, "infinite_ntk: expected w_std in"),
    (dict(w_std=1e200), ValueError, "infinite_ntk: expected w_std in"),
    (dict(w_std=1.0, b_std=-0.1), ValueError, "infinite_ntk: expected b_std 0 or in"),
    (dict(w_std=1.0, b_std=1e200), ValueError, "infinite_ntk: expected b_std 0 or in"),
    (dict(w_std=1.0, residual=0.0), ValueError, "infinite_ntk: expected residual in"),
    (dict(w_std=1.0, residual=1e200), ValueError, "infinite_ntk: expected residual in"),
    (dict(w_std=float("nan")), ValueError, "w_std"),
    (dict(w_std="1"), TypeError, "infinite_ntk: expected w_std a real number"),
    (dict(activation="leaky:1.5"), ValueError, r"infinite_ntk: activation: .*slope in \[-1, 1\]"),
    (dict(activation="swish"), ValueError, "infinite_ntk: activation: expected one of 'relu'"),
    (dict(activation="softplus", w_std=3.0, b_std=1.0, depth=40), ValueError,
     "infinite_ntk: .*nodes"),
])
def test_bad_input(kw, err, match):
    args = dict(depth=3)
    args.update(kw)
    with pytest.raises(err, match=match):
        ntkcond.infinite_ntk(_synthetic(), **args)


@pytest.mark.parametrize("call, where", [
    (lambda a: ntkcond.infinite_nngp(_synthetic(), depth=2, activation=a), "infinite_nngp"),
    (lambda a: ntkcond.gradient_angles(_synthetic(), depth=2, activation=a), "gradient_angles"),
    (lambda a: ntkcond.depth_sweep(_synthetic(), [1], activation=a), "depth_sweep"),
    (lambda a: ntkcond.blockwise_ntk(_synthetic(), depths=[1], activation=a), "blockwise_ntk"),
    (lambda a: ntkcond.mlp(2, 8, activation=a), "mlp"),
])
def test_a_bad_activation_names_the_public_function(call, where):
    with pytest.raises(ValueError, match=rf"^{where}: activation: expected one of 'relu'"):
        call("swish")
    with pytest.raises(ValueError, match=rf"^{where}: activation: .*slope in \[-1, 1\]"):
        call("leaky:2")


def test_bad_callables():
    import jax.numpy as jnp

    for f, match in [(lambda z: jnp.log(z), "non-finite"), (lambda z: z.sum() * z, "not elementwise"),
                     (lambda z: z[:2], "must keep the shape")]:
        with pytest.raises(ValueError, match=match):
            ntkcond.infinite_ntk(_synthetic(), depth=2, activation=f, w_std=1.0)


@pytest.mark.nt
@pytest.mark.parametrize("act", ["relu", "abs", "leaky:-0.5", "leaky:0.2", "erf", "gelu", "sin",
                                 "tanh"])
@pytest.mark.parametrize("sw, sb, res", [(1.5, 0.0, None), (1.5, 0.1, None), (1.0, 0.5, None),
                                         (1.2, 0.1, 0.5)])
def test_against_neural_tangents(act, sw, sb, res):
    pytest.importorskip("neural_tangents")
    import jax.numpy as jnp
    from neural_tangents import stax

    from ntkcond._core.x64 import x64

    L = 3
    x = _synthetic(5, 7, 6)
    with x64(), _quiet():  # NT warns about ElementwiseNumerical and FanInSum by design
        layer = {"relu": stax.Relu(), "abs": stax.Abs(), "leaky:-0.5": stax.ABRelu(-0.5, 1.0),
                 "leaky:0.2": stax.LeakyRelu(0.2), "erf": stax.Erf(), "gelu": stax.Gelu(),
                 "sin": stax.Sin(), "tanh": stax.ElementwiseNumerical(jnp.tanh, deg=100)}[act]
        if res is None:
            net = stax.serial(*[stax.Dense(8, W_std=sw, b_std=sb), layer] * L,
                              stax.Dense(1, W_std=sw, b_std=sb))
        else:
            block = stax.serial(stax.FanOut(2), stax.parallel(
                stax.serial(layer, stax.Dense(8, W_std=res * sw, b_std=res * sb)),
                stax.Identity()), stax.FanInSum())
            net = stax.serial(stax.Dense(8, W_std=sw, b_std=sb), *[block] * (L - 1), layer,
                              stax.Dense(1, W_std=sw, b_std=sb))
        k = net[2](jnp.asarray(x), None, ("nngp", "ntk"))
        K, N = np.asarray(k.ntk, np.float64), np.asarray(k.nngp, np.float64)
    kw = dict(depth=L, activation=act, w_std=sw, b_std=sb, residual=res)
    mine, mine_n = ntkcond.infinite_ntk(x, **kw), ntkcond.infinite_nngp(x, **kw)
    tol = 1e-3 if act == "tanh" else 1e-13  # NT's tanh: Gauss–Hermite with 100 nodes
    scale = np.sqrt(np.outer(np.diag(mine), np.diag(mine)))
    assert np.max(np.abs(mine - K) / scale) <= tol
    scale_n = np.sqrt(np.outer(np.diag(mine_n), np.diag(mine_n)))
    assert np.max(np.abs(mine_n - N) / scale_n) <= tol


def _quiet():
    import contextlib
    import warnings

    @contextlib.contextmanager
    def ctx():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield

    return ctx()


@pytest.mark.parametrize("kw", [dict(activation="erf", w_std=1.5, b_std=0.1),
                                dict(activation="relu", w_std=1.2, b_std=0.2, residual=0.5),
                                dict(activation="tanh", w_std=1.5, b_std=0.1)])
def test_scale_engines_run_the_same_recursion(kw):
    # blockwise_ntk / exact_conditioning / matrix_free_conditioning tile the same
    # family_state: equal to infinite_ntk to the rounding of the blocked Gram products
    # (tanh: 1e-13, its Mehler series is truncated per tile at 1e-14 of the diagonal).
    x = _synthetic(40, 9, 7)
    B = ntkcond.blockwise_ntk(x, depths=[1, 3], block=16, **kw)
    tol = 1e-13 if kw["activation"] == "tanh" else 1e-14
    for L in (1, 3):
        K = ntkcond.infinite_ntk(x, depth=L, **kw)
        assert np.max(np.abs(B[L] - K)) <= tol * np.max(K)
    ev = np.linalg.eigvalsh(ntkcond.infinite_ntk(x, depth=3, **kw))
    exact = ntkcond.exact_conditioning(x, depths=[3], block=16, **kw)[3]
    assert exact.kappa_eff == pytest.approx(ev[-1] / ev[0], rel=1e-10, abs=0)
    mf = ntkcond.matrix_free_conditioning(x, depth=3, block=16, **kw)
    assert mf.kappa_eff == pytest.approx(ev[-1] / ev[0], rel=1e-8, abs=0)
    with pytest.raises(ValueError, match="blockwise_ntk: .*backend 'numpy' only"):
        ntkcond.blockwise_ntk(x, depths=[1], backend="jax", **kw)


@pytest.mark.parametrize("method", ["pairs", "recursion"])
def test_streaming_smallest_angles_general_nets(method):
    # No unimodality certificate with biases: the general nets' targets go through the
    # recursion (listed in ``fallback`` by the pairs route) and equal smallest_gradient_angle.
    x = _synthetic(50, 9, 0)
    x[7] = x[3] + 1e-7 * _synthetic(1, 9, 1)[0]
    r = ntkcond.streaming_smallest_angles(x, depths=[1, 3], activations=("erf", "relu"),
                                          w_std=1.5, b_std=0.1, block=16, method=method)
    for item in r.results:
        act = item.activation.split(",")[0]
        assert item.activation == f"{act},w_std=1.5,b_std=0.1"
        want = ntkcond.smallest_gradient_angle(x, depth=item.depth, activation=act, w_std=1.5,
                                               b_std=0.1)
        assert (item.angle, *item.pair) == want
    assert len(r.fallback) == (4 if method == "pairs" else 0)
    with pytest.raises(ValueError, match="backend 'numpy' only"):
        ntkcond.streaming_smallest_angles(x, depths=[1], activations=("erf",), w_std=1.5,
                                          backend="jax")


def _gelu_closed_form(name, q1, q2, c):
    """GELU's (M, Ṁ) by eq. (6) in mpmath (the reference's closed form): valid at any
    variance (the reference's trapezoid needs ~√q nodes); at 50 digits δ² = (1 + q₁)(1 + q₂)
    − c² keeps > 40 digits for q ≤ 1e7."""
    assert name == "gelu"
    return ref.gelu_closed_form(q1, q2, c)[:2]


def test_gelu_depth_100_large_variances(monkeypatch):
    # GELU, w_std = 1.5: variances grow ~1.125^L from ‖x‖²/d ≳ 0.5 (to ~1e6 at depth 100),
    # where the trapezoid would need ~50,000 nodes a side; the gaps come from Price's
    # theorem (gelu_dual eqs. (6a)–(6b)). Against the reference's textbook recursion with eq. (6)
    # in mpmath at 50 digits (itself checked against the trapezoid reference at depth 3):
    # kernels 1e-12 relative to √(KᵢᵢKⱼⱼ), gradient angles 1e-9 relative (the near-duplicate
    # pair at θ = 1e-6 rad included).
    rng = np.random.default_rng(7)
    d = 40
    x = rng.standard_normal((4, d))
    x *= np.sqrt(np.array([1.0, 1.5, 2.0, 3.0]) * d / (x * x).sum(1))[:, None]
    x = np.vstack([x, _near_duplicates("rotation", d=d, seed=2) * np.sqrt(2.0 * d) / np.linalg.norm(
        _near_duplicates("rotation", d=d, seed=2)[0])])
    pairs = [(4, 5), (0, 1), (2, 3), (1, 4)]
    trap = ref.kernels(x[4], x[5], [3], "gelu", 1.5, 0.0)[3]
    monkeypatch.setattr(ref, "DPS", 50)
    monkeypatch.setattr(ref, "expectations", _gelu_closed_form)
    closed = ref.kernels(x[4], x[5], [3], "gelu", 1.5, 0.0)[3]
    with mp.workdps(30):
        assert abs(closed[1] - trap[1]) <= mp.mpf(10) ** -20 * abs(trap[1])
        assert abs(closed[2] - trap[2]) <= mp.mpf(10) ** -20
    K = ntkcond.infinite_ntk(x, depth=100, activation="gelu", w_std=1.5)
    phi = ntkcond.gradient_angles(x, depth=100, activation="gelu", w_std=1.5)
    assert np.all(np.isfinite(K)) and np.all(np.isfinite(phi))
    assert np.max(np.abs(K - K.T)) <= 1e-14 * np.max(np.abs(K))
    assert np.max(np.abs(phi - phi.T)) <= 1e-14 * np.max(phi) and np.all(np.diag(phi) == 0)
    for i, j in pairs:
        r = ref.kernels(x[i], x[j], [100], "gelu", 1.5, 0.0)[100]
        _, ntk, cos, nxx, nyy = r
        with mp.workdps(50):
            assert nxx > 1e5  # the variances did grow past the trapezoid's node limit
            want = float(2 * mp.atan2(mp.sqrt(1 - cos), mp.sqrt(1 + cos)))
            scale = float(mp.sqrt(nxx * nyy))
        assert abs(K[i, j] - float(ntk)) <= 1e-12 * scale, (i, j)
        assert abs(K[i, i] - float(nxx)) <= 1e-12 * float(nxx)
        assert abs(phi[i, j] - want) <= 1e-9 * want, (i, j, phi[i, j], want)
    assert phi[4, 5] < 1e-2


def test_check_variances_stops_at_the_fixed_point_and_bounds_the_rest():
    # The diagonal recursion q_{l+1} = s_w²P(q_l) (+ s_b²) of an activation without closed forms
    # reaches its fixed point bit for bit within ~100 layers at w_std = 1.5: depth 10⁶ costs
    # those (was 10⁶ quadratures). At w_std = 1 (q → 0 like 1/l, no fixed point) a depth
    # beyond the budget is one ValueError naming the caller and the depth that fits.
    import time

    from ntkcond.network import resolve_mlp

    q = np.array([0.3, 1.7])
    tanh = resolve_mlp("tanh", w_std=1.5, where="test")
    t0 = time.perf_counter()
    tanh.check_variances(q, 10**6, "test")
    assert time.perf_counter() - t0 < 5.0
    slow = resolve_mlp("tanh", w_std=1.0, where="test")
    slow.check_variances(q, 1000, "test")  # FREE_DEPTH always runs
    with pytest.raises(ValueError, match=r"^test: expected depth <= \d+ for activation 'tanh' on "
                                         r"these inputs .*got depth 1000000$"):
        slow.check_variances(q, 10**6, "test")
