"""Certificates that φ_L(θ) has no interior minimum (ntkcond.infinite.unimodal).

Reference values come from 50-digit mpmath evaluations of the same real-number recursion
(T and its θ-derivatives by mpmath's numerical differentiation at that precision). The
enclosures must contain them exactly (no tolerance: they are rigorous bounds). The float64
layer map's error must stay below the 2⁻⁵⁰ the module docstring states (measured: ≤ 4u = 2⁻⁵¹),
64 times below the 2⁻⁴⁴ the enclosures allow for it.
"""
import functools
import math

import mpmath as mp
import numpy as np
import pytest

from ntkcond.activations import parse_activation
from ntkcond.infinite.recursion import layer_step
from ntkcond.infinite.angles import gradient_angle
from ntkcond.infinite.unimodal import (
    Certificate,
    certify,
    enclose_recursion,
    sign_pattern_certificate,
)

SLOPES = [0.0, 0.2, 0.5, 0.9]


def g_mp(t, a):
    k1 = (mp.sin(t) + (mp.pi - t) * mp.cos(t)) / mp.pi
    return mp.acos((2 * a * mp.cos(t) + (1 - a) ** 2 * k1) / (1 + a * a))


def T_mp(t, *, a, depth, member):
    """T(θ) = Σ_{i∈S} cos θ_i Π_{j=i}^{L−1} (1 − βθ_j) in mpmath."""
    beta = (1 - a) ** 2 / (mp.pi * (1 + a * a))
    T = mp.cos(t) if member(0) else mp.mpf(0)
    for k in range(depth):
        t_next = g_mp(t, a)
        T = (mp.cos(t_next) if member(k + 1) else 0) + (1 - beta * t) * T
        t = t_next
    return T


@pytest.mark.parametrize("slope", SLOPES)
def test_float_layer_map_is_within_the_stated_error(slope):
    mp.mp.dps = 50
    act = parse_activation(slope)
    rng = np.random.default_rng(0)
    t = np.concatenate([rng.uniform(1e-3, np.pi, 400), np.pi - np.logspace(-12, -1, 40), [np.pi / 2, np.pi]])
    g = layer_step(t, np.cos(t), act)[0]
    a = mp.mpf(slope)
    worst = max(abs(mp.mpf(float(gi)) / g_mp(mp.mpf(float(ti)), a) - 1) for gi, ti in zip(g, t))
    assert worst <= 2.0**-50


@pytest.mark.parametrize("slope, trainable", [(0.0, "all"), (0.0, "first"), (0.2, "all"), (0.5, (1, 2))])
def test_enclosures_contain_the_exact_values(slope, trainable):
    mp.mp.dps = 50
    act = parse_activation(slope)
    member = {"all": lambda k: True, "first": lambda k: k == 0}.get(trainable, lambda k: k in trainable)
    edges = np.linspace(np.pi / 2, np.pi, 65)
    wanted = {1, 3, 8}
    enc = {L: (T, dT, d2T) for L, T, dT, d2T, _ in
           enclose_recursion(edges[:-1], edges[1:], act, member, max(wanted)) if L in wanted}
    rng = np.random.default_rng(1)
    a = mp.mpf(slope)
    for cell in list(rng.choice(64, 6, replace=False)) + [0, 63]:
        t = mp.mpf(float(rng.uniform(edges[cell], edges[cell + 1])))
        for L in wanted:
            f = functools.partial(T_mp, a=a, depth=L, member=member)
            exact = (f(t), mp.diff(f, t, 1), mp.diff(f, t, 2))
            for (lo, hi), value in zip(enc[L], exact):
                assert lo[cell] <= value <= hi[cell], (L, cell, float(value), lo[cell], hi[cell])


def test_kinds_for_the_papers_settings():
    relu = certify("relu", range(11), "all")
    assert relu[0].kind == "proof" and all(c.kind == "unimodal" for c in relu[1:])
    assert all(c.kind == "proof" for c in certify("leaky:0.2", range(11), "last"))
    assert all(c.kind == "proof" for c in certify("linear", range(11), "first"))
    # ReLU without the first layer: proof (d); leaky ReLU needs the verified part
    assert all(c.kind == "proof" for c in certify("relu", range(2, 6), (1, 2)))
    assert all(c.kind == "unimodal" for c in certify("leaky:0.2", range(2, 6), (1, 2)))
    for c in relu[1:]:  # the maximum of φ lies in (q₁, q₂) or at a cell edge, past 140°
        assert math.radians(140) <= c.increasing_until <= c.decreasing_from <= math.pi
        assert c.covers(0.1, 3.0, 0.5, 0.4) and c.unimodal


@pytest.mark.slow
def test_deep_nets_are_certified_to_depth_1000():
    for act, trainable in [("relu", "all"), ("relu", "first"), ("leaky:0.2", "all")]:
        certs = certify(act, [10, 100, 1000], trainable)
        assert [c.kind for c in certs] == ["unimodal"] * 3


def test_certified_functions_have_no_interior_minimum_on_a_grid():
    # Sanity check of the certificates against float64 values on a grid: between any two
    # grid angles φ stays above the smaller endpoint value, to rounding (1e-13 relative).
    theta = np.linspace(0.0, np.pi, 4001)
    for act, trainable in [("relu", "all"), ("relu", "first"), ("leaky:0.2", "all"), ("leaky:0.5", "first")]:
        for c in certify(act, [1, 3, 10], trainable):
            phi = gradient_angle(theta, c.depth, act, trainable)
            peak = int(np.argmax(phi))
            assert np.all(np.diff(phi[: peak + 1]) >= -1e-13 * phi[1 : peak + 1])
            assert np.all(np.diff(phi[peak:]) <= 1e-13 * phi[peak:-1])


def _cells(f, df, d2f, edges):
    """Exact-enough enclosures of a planted T with known extrema positions (test helper):
    min/max over a fine sub-grid, padded by the sub-grid spacing times a derivative bound."""
    lo, hi = edges[:-1], edges[1:]
    sub = np.linspace(lo, hi, 33)  # (33, N)
    pad = (hi - lo) / 32 * 30.0  # |f'|, |f''|, |f'''| ≤ 27 for the planted functions

    def enc(g):
        v = g(sub)
        return v.min(0) - pad, v.max(0) + pad

    return enc(f), enc(df), enc(d2f)


def test_certificate_refuses_a_planted_non_unimodal_function():
    # φ = arccos(T): T = cos 3θ on [π/2, π] rises then falls, so φ falls to 0 at θ = 2π/3 and
    # rises again — an interior minimum. The certificate must not call it unimodal, its floor
    # must be at most that minimum, and data straddling it must be refused.
    edges = np.linspace(np.pi / 2, np.pi, 257)
    T, dT, d2T = _cells(lambda t: np.cos(3 * t), lambda t: -3 * np.sin(3 * t),
                        lambda t: -9 * np.cos(3 * t), edges)
    q1, q2, unimodal, floor = sign_pattern_certificate(edges, T, dT, d2T, 1.0)
    assert not unimodal
    assert q1 == edges[0] and q2 == edges[-1]  # neither a rising start nor a falling end
    assert floor <= 1e-6  # φ(2π/3) = 0
    cert = Certificate("planted", 1, "all", "floor", q1, q2, floor, 256)
    assert not cert.covers(1.9, 2.3, 0.6, 0.6)  # both ends above the interior minimum
    assert cert.covers(1.0, 1.2, 0.3, 0.4)  # all angles left of q₁: φ rises there


def test_certificate_accepts_a_planted_unimodal_function():
    # T = (θ − 2.5)² − 1 falls then rises (convex): φ = arccos(T/2) rises to its maximum
    # at θ = 2.5, then falls.
    edges = np.linspace(np.pi / 2, np.pi, 129)
    T, dT, d2T = _cells(lambda t: (t - 2.5) ** 2 - 1.0, lambda t: 2 * (t - 2.5),
                        lambda t: 2.0 + 0 * t, edges)
    q1, q2, unimodal, floor = sign_pattern_certificate(edges, T, dT, d2T, 2.0)
    assert unimodal and floor == math.inf and q1 <= 2.5 <= q2


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [(dict(depths=[]), ValueError, "at least one depth"),
     (dict(cells=0), ValueError, "cells as an integer"),
     (dict(trainable="middle"), ValueError, "trainable"),
     (dict(activation="swish"), ValueError, "certify: activation: expected")],
)
def test_bad_input(kwargs, exc, message):
    args = dict(activation="relu", depths=[1])
    args.update(kwargs)
    with pytest.raises(exc, match=message):
        certify(args.pop("activation"), args.pop("depths"), **args)


def test_certificate_cost_bound_falls_back_to_the_cheaper_recursion(monkeypatch):
    """Data with input angles above π/2 at a depth no certificate is cached for: with a budget
    below the verification's cost, ``certify`` returns "unverified" without computing
    anything; ``smallest_gradient_angle`` then takes the recursion over its 435 pairs (cheaper
    than 512 cells × L) and gives the recursion's answer."""
    from ntkcond import smallest_gradient_angle
    from ntkcond.infinite import unimodal

    L = 1777  # beyond depth 1000 (always affordable), and not cached by other tests
    assert unimodal.verification_cost("relu", [L]) == unimodal.CELL_LAYER_COST * 512 * L
    assert unimodal.verification_cost("relu", [L], "last") == 0  # proved: free
    calls = []
    real = unimodal._verify
    monkeypatch.setattr(unimodal, "_verify", lambda *a: calls.append(a) or real(*a))
    (cert,) = certify("relu", [L], max_cost=10.0)
    assert cert.kind == "unverified" and not cert.unimodal and calls == []
    assert cert.covers(0.1, math.pi / 2, 0.2, 0.3) and not cert.covers(0.1, 2.0, 0.2, 0.3)
    x = np.random.default_rng(1).standard_normal((30, 3))  # input angles above π/2
    got = smallest_gradient_angle(x, depth=L)
    assert calls == []  # the certificate was never computed: 435·L < 32·512·L
    assert got == smallest_gradient_angle(x, depth=L, method="recursion")
    (cert,) = certify("leaky:0.37", [5], max_cost=10.0)  # within ALWAYS_AFFORDABLE: verified
    assert cert.kind == "unimodal" and len(calls) == 1


# --------------------------------------------------------------------------- issue 34
def test_certify_without_max_cost_refuses_depths_beyond_its_range_at_once():
    """Depth 10⁵ took over 30 s (512 cells × 10⁵ layers of interval arithmetic); without a
    max_cost the verified part is bounded by DEFAULT_MAX_COST (depth 10⁴) and deeper depths are
    refused in microseconds; with max_cost they are "unverified", as before."""
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"^certify: expected depths whose verified part costs "
                                         r"at most DEFAULT_MAX_COST .*depth 10000 at 512 cells.* "
                                         r"got depth 100000"):
        certify("leaky:0.2", [3, 10**5])
    assert time.perf_counter() - t0 < 0.5
    assert certify("relu", [10**5], "last")[0].kind == "proof"  # proved: no cost, no refusal
    (c,) = certify("leaky:0.2", [10**5], max_cost=1e6)
    assert c.kind == "unverified"
    from ntkcond.infinite import unimodal

    assert unimodal.DEFAULT_MAX_COST == unimodal.CELL_LAYER_COST * 512 * 10**4


@pytest.mark.parametrize("max_cost,error,message", [
    (float("nan"), ValueError, r"expected max_cost >= 0 pair-layers .* got nan"),
    (-1, ValueError, r"expected max_cost >= 0 pair-layers .* got -1"),
    ("10", TypeError, r"expected max_cost as a number of pair-layers >= 0 \(or None\), got str"),
    (True, TypeError, r"expected max_cost as a number .* got bool True"),
])
def test_certify_refuses_bad_max_cost(max_cost, error, message):
    with pytest.raises(error, match=r"^certify: " + message):
        certify("leaky:0.2", [3], max_cost=max_cost)
    assert certify("leaky:0.2", [3], max_cost=math.inf)[0].kind == "unimodal"
