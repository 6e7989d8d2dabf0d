"""The one engine (ntkcond.infinite.engine): one net, one answer whatever its spelling, against
extended precision; the fast angle recursion and the general layer maps agree where both
serve; scales carried apart from the kernels' shape.

Tolerances (stated per test): kernels to 1e-12 of √(KᵢᵢKⱼⱼ), gradient angles to 1e-9 relative,
against mpmath at 30 digits (tests/_family_reference.py), on near-duplicate pairs of unequal
norm (‖x′‖ = 1.3‖x‖, θ = 1e-5 and 1e-7 rad) and near-antipodal ones (θ = π − 1e-5, π − 1e-7).
"""
import math

import mpmath as mp
import numpy as np
import pytest

import _family_reference as ref
import _reference as ref60
import ntkcond
from ntkcond.infinite.engine import evaluate, sweep
from ntkcond.infinite.geometry import pair_geometry
from ntkcond.network import KernelRangeError, resolve_mlp


def _pair(theta, ratio=1.3, d=6, seed=0, antipodal=False):
    """Rows x, x′ = ±ratio·(cos θ·x + sin θ·‖x‖·e), e ⊥ x a unit vector (float64)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(d)
    e = rng.standard_normal(d)
    e -= (e @ x) / (x @ x) * x
    e /= np.linalg.norm(e)
    y = ratio * (math.cos(theta) * x + math.sin(theta) * np.linalg.norm(x) * e)
    return np.stack([x, -y if antipodal else y])


def _reference(X, depth, name, w_std):
    """(nngp, ntk, φ, nngp scale, ntk scale) in mpmath, the scales √(K(x, x)K(x′, x′)): the
    default net (w_std None) from the 60-digit reference, the w_std net from the 30-digit one
    (at 30+ digits acos of cos φ keeps φ to far below float64's resolution)."""
    x, y = X
    if w_std is None:
        alpha = {"relu": 0, "abs": -1, "leaky:-0.5": -0.5}[name]
        with mp.workdps(ref60.DPS):
            nngp, ntk, cos_phi = ref60.kernels(x, y, depth, alpha)
            nxx, txx, _ = ref60.kernels(x, x, depth, alpha)
            nyy, tyy, _ = ref60.kernels(y, y, depth, alpha)
            return (nngp, ntk, mp.acos(min(cos_phi, mp.mpf(1))), mp.sqrt(nxx * nyy),
                    mp.sqrt(txx * tyy))
    nngp, ntk, cos_phi, txx, tyy = ref.kernels(x, y, [depth], name, w_std, 0.0)[depth]
    nxx = ref.kernels(x, x, [depth], name, w_std, 0.0)[depth][0]
    nyy = ref.kernels(y, y, [depth], name, w_std, 0.0)[depth][0]
    with mp.workdps(ref.DPS):
        return (nngp, ntk, mp.acos(max(min(cos_phi, mp.mpf(1)), mp.mpf(-1))),
                mp.sqrt(nxx * nyy), mp.sqrt(txx * tyy))


SPELLINGS = {  # the same nets, spelled three ways: default, w_std = √c, w_std = 1.5
    "default": lambda act: {},
    "sqrt_c": lambda act: {"w_std": math.sqrt(ntkcond.norm_preserving_scale(act)), "b_std": 0},
    "1.5": lambda act: {"w_std": 1.5, "b_std": 0},
}


@pytest.mark.parametrize("act", ["relu", "abs", "leaky:-0.5"])
@pytest.mark.parametrize("depth", [1, 3, 10])
@pytest.mark.parametrize("theta, antipodal", [(1e-5, False), (1e-7, False), (1e-5, True),
                                              (1e-7, True)])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_one_net_one_answer_against_mpmath(act, depth, theta, antipodal, spelling):
    X = _pair(theta, antipodal=antipodal)
    kw = SPELLINGS[spelling](act)
    nngp, ntk, phi, n_scale, t_scale = _reference(X, depth, act, kw.get("w_std"))
    K = ntkcond.infinite_ntk(X, depth=depth, activation=act, **kw)
    N = ntkcond.infinite_nngp(X, depth=depth, activation=act, **kw)
    assert abs(K[0, 1] - float(ntk)) <= 1e-12 * float(t_scale)
    assert abs(N[0, 1] - float(nngp)) <= 1e-12 * float(n_scale)
    got = ntkcond.gradient_angles(X, depth=depth, activation=act, **kw)[0, 1]
    assert abs(got - float(phi)) <= 1e-9 * float(phi)


@pytest.mark.parametrize("act", ["relu", "abs", "leaky:-0.5", "leaky:0.2"])
def test_spellings_agree_to_rounding(act):
    """κ and angles of the three spellings are one number (to a few eps), and their kernels
    differ by the exact output-variance factor G_L."""
    x = np.random.default_rng(3).standard_normal((12, 7))
    x[5] = 1.3 * x[4] + 1e-8 * x[6]
    base = ntkcond.gradient_angles(x, depth=5, activation=act)
    for spelling in ("sqrt_c", "1.5"):
        kw = SPELLINGS[spelling](act)
        phi = ntkcond.gradient_angles(x, depth=5, activation=act, **kw)
        assert np.max(np.abs(phi - base) / np.maximum(base, 1e-300)) <= 1e-13


@pytest.mark.parametrize("act", ["relu", "leaky:-0.5", "abs", "leaky:0.3"])
def test_fast_path_and_layer_maps_agree_bias_free(act):
    """The fast angle recursion (a HomogeneousChain) and the general layer maps (the same net
    with an Identity in front: no longer a chain) agree to 1e-14 of the scale on kernels and
    1e-12 relative on angles, near-duplicate pairs of unequal norm included."""
    from ntkcond.network import Identity, Serial

    x = np.random.default_rng(4).standard_normal((15, 6))
    x[3] = 1.3 * x[2] + 1e-6 * x[1]
    net = resolve_mlp(act, 1.5, 0.0, None, where="t")
    off = ~np.eye(15, dtype=bool)
    for L in range(5):
        stack = net.network(L)
        general = Serial((Identity(),) + stack.layers)
        a = evaluate(stack, pair_geometry(x, None, "t"), angles=True)
        b = evaluate(general, pair_geometry(x, None, "t"), angles=True)
        for Ka, Kb in ((a.ntk, b.ntk), (a.nngp, b.nngp)):
            scale = np.sqrt(np.outer(np.diag(Ka), np.diag(Ka)))
            assert np.max(np.abs(Ka - Kb) / scale) <= 1e-14
        pa, pb = a.angles(), b.angles()
        assert np.max(np.abs(pa - pb)[off] / pa[off]) <= 1e-12


def test_sweep_equals_the_network_of_each_depth_bit_for_bit():
    """``MLPFamily.sweep_states`` runs the layer objects of ``network(L)``: the same kernels."""
    x = np.random.default_rng(5).standard_normal((9, 4))
    g = pair_geometry(x, None, "test")
    for net in (resolve_mlp("erf", 1.5, 0.1, None, where="t"),
                resolve_mlp("tanh", 1.4, 0.2, 0.5, where="t"),
                resolve_mlp("relu", 1.5, 0.1, 0.7, where="t")):
        for L, K, _, _ in sweep(g, net, range(4), angles=False):
            alone = evaluate(net.network(L), pair_geometry(x, None, "test"), nngp=False).ntk
            assert np.array_equal(K, alone), (net.name, L)


def test_scale_is_carried_apart_from_the_shape():
    """Angles of bias-free homogeneous nets do not depend on w_std or on the depth's scale:
    w_std 1e-150 (kernels ~1e-300·…) and 1e150, depth 2000, all give the default angles."""
    x = np.random.default_rng(6).standard_normal((5, 4))
    x[1] = x[0] + 1e-3 * x[2]
    base = ntkcond.gradient_angles(x, depth=2)
    for w in (1e-150, 1e-20, 1e20, 1e150):
        assert np.max(np.abs(ntkcond.gradient_angles(x, depth=2, w_std=w) - base)) <= 1e-15
    deep = ntkcond.gradient_angles(x, depth=2000)
    assert np.all(np.isfinite(deep)) and np.all(deep[~np.eye(5, dtype=bool)] > 0)
    # residual homogeneous nets (the general layer maps) are scale-free in x
    ref_ = ntkcond.gradient_angles(x, depth=3, w_std=1.2, residual=0.5)
    for scale in (1e-150, 1e150):
        res = ntkcond.gradient_angles(scale * x, depth=3, w_std=1.2, residual=0.5)
        assert np.max(np.abs(res - ref_)) <= 1e-14
    # where the kernel itself leaves float64's range: one clear error
    with pytest.raises(KernelRangeError, match="infinite_ntk: .*leaves float64's range"):
        ntkcond.infinite_ntk(x, depth=3, w_std=1e-150)
    with pytest.raises(KernelRangeError, match="infinite_ntk: .*leaves float64's range"):
        ntkcond.infinite_ntk(x, depth=3, w_std=1e120, residual=1.0)


def test_deep_erf_ntk_overflow_names_the_depth_and_angles_survive():
    """Θ of a deep erf net grows like (s_w²Ṗ)^L (×2.2 a layer at s_w = 3): the angles are still computed (π/2 at the
    fixed point), the kernel raises naming the depth."""
    x = np.random.default_rng(7).standard_normal((5, 4))
    phi = ntkcond.gradient_angles(x, depth=1000, activation="erf", w_std=3.0)
    off = ~np.eye(5, dtype=bool)
    assert np.all(np.isfinite(phi)) and np.all(np.abs(phi[off] - np.pi / 2) < 1e-6)
    with pytest.raises(KernelRangeError, match="infinite_ntk: the NTK leaves float64's range"):
        ntkcond.infinite_ntk(x, depth=1000, activation="erf", w_std=3.0)
