"""Closest and farthest pairs in angle (ntkcond.infinite.extremes) against brute force.

The reference is the definition itself: the lexicographic minimum of (θ̃_ij, i, j) (closest)
and of (−θ̃_ij, i, j) (farthest) over all pairs i < j, θ̃ = ``kahan_angles`` of every pair.
The search rechecks its candidates with the same elementwise formula, so the comparison is
exact (same pair, same float). The adversarial case plants near-ties below the Gram route's
resolution, where picking the largest screened cosine alone returns the wrong pair.
"""
import json
import math

import numpy as np
import pytest

from ntkcond import datasets
from ntkcond.infinite.extremes import (
    ExtremePairs,
    ExtremeSearch,
    extreme_pairs,
    norm_excess,
    numpy_extreme_row,
    screening_margin,
    smallest_from_extremes,
)
from ntkcond.infinite.geometry import kahan_angles, normalised_rows


def unit(x):
    return normalised_rows(np.asarray(x, dtype=np.float64), "test", "x")[0]


def brute_force(xh):
    n = len(xh)
    i, j = np.triu_indices(n, 1)
    theta = kahan_angles(xh, xh, i, j)
    lo = np.lexsort((j, i, theta))[0]
    hi = np.lexsort((j, i, -theta))[0]
    return (float(theta[lo]), int(i[lo]), int(j[lo])), (float(theta[hi]), int(i[hi]), int(j[hi]))


def planted(rng, n=90, d=12):
    """Gaussian rows with a near-parallel pair (1e-9), a parallel, an anti-parallel and
    duplicated rows (exact ties: θ̃ = 0 for three pairs, the lowest must win)."""
    x = rng.standard_normal((n, d))
    x[40] = x[7] + 1e-9 * rng.standard_normal(d)
    x[61] = 3.0 * x[12]
    x[75] = -x[20] + 1e-6 * rng.standard_normal(d)
    x[50] = x[5]
    x[51] = x[5]
    return x


@pytest.mark.parametrize("block", [7, 16, 1000])
def test_equals_brute_force(block):
    rng = np.random.default_rng(0)
    for x in (planted(rng), datasets.load("digits").x[:200], rng.standard_normal((60, 3))):
        xh = unit(x)
        ext = extreme_pairs(xh, block=block)
        assert (ext.closest, ext.farthest) == brute_force(xh)
    assert ext.margin == screening_margin(3, norm_excess(xh))


def test_exact_ties_go_to_the_lowest_pair():
    x = planted(np.random.default_rng(1))
    ext = extreme_pairs(unit(x), block=16)
    assert ext.closest == (0.0, 5, 50)  # (5, 50), (5, 51), (50, 51) are all exactly 0


def near_ties(m=150, d=40, seed=3):
    """m pairs (a_k, b_k) with angles θ(1 + k·1e-15) in random orthogonal directions, all other
    pairs near 90°: cos of the planted angles differ by ~1e-17, far below the ~1e-15 error of
    the Gram route, so the largest screened cosine is not the closest pair."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((2 * m + d, 2 * m + d)))
    theta = 0.05 * (1.0 + rng.permutation(m) * 1e-15)
    a = q[: 2 * m : 2, :]
    b = np.cos(theta)[:, None] * a + np.sin(theta)[:, None] * q[1 : 2 * m : 2, :]
    x = np.empty((2 * m, 2 * m + d))
    x[0::2], x[1::2] = a, b
    return x[:, : 2 * m + d]


def test_margin_keeps_the_true_closest_pair_among_many_near_ties():
    xh = unit(near_ties())
    truth = brute_force(xh)
    G = xh @ xh.T
    i, j = np.triu_indices(len(xh), 1)
    naive = np.lexsort((j, i, -G[i, j]))[0]  # largest screened cosine alone
    assert (int(i[naive]), int(j[naive])) != truth[0][1:]  # the adversarial case is real
    near = np.sum(G[i, j] >= G[i, j].max() - screening_margin(xh.shape[1], norm_excess(xh)))
    assert near >= 20  # many candidates within the margin
    for block in (5, 64, 400):
        ext = extreme_pairs(xh, block=block)
        assert (ext.closest, ext.farthest) == truth


def test_margin_bounds_the_screening_error():
    # |ĉ − cos θ̃| ≤ margin/4 (the bound E of the docstring) on every pair of real data.
    for x in (datasets.load("digits").x[:300], near_ties(40)):
        xh = unit(x)
        i, j = np.triu_indices(len(xh), 1)
        err = np.abs((xh @ xh.T)[i, j] - np.cos(kahan_angles(xh, xh, i, j)))
        assert err.max() <= screening_margin(xh.shape[1], norm_excess(xh)) / 4


def test_margins():
    # 4·(γ_d(1 + η) + η(1 + η)/(1 − η) + (d + 32)u), to 1e-6: the formula, not a fit
    u, d, eta = 2.0**-53, 784, 1e-13
    expected = 4 * (d * u / (1 - d * u) * (1 + eta) + eta * (1 + eta) / (1 - eta) + (d + 32) * u)
    assert screening_margin(d, eta) == pytest.approx(expected, rel=1e-6, abs=0)
    assert screening_margin(d, eta) == pytest.approx(1.1e-12, rel=0.05, abs=0)  # MNIST's d
    assert screening_margin(d, eta, "float32") == pytest.approx(1.9e-4, rel=0.05, abs=0)
    with pytest.raises(ValueError, match="screening_margin: expected dtype"):
        screening_margin(10, 0.0, "float16")
    with pytest.raises(ValueError, match="screening_margin: expected 0 <= eta"):
        screening_margin(10, 0.7)


def test_state_round_trips_through_json():
    xh = unit(planted(np.random.default_rng(2)))
    first = ExtremeSearch(xh)
    for I in range(3):
        numpy_extreme_row(first, I, 16)
    state = json.loads(json.dumps(first.state()))
    second = ExtremeSearch(xh)
    second.restore(state)
    for I in range(3, 6):
        numpy_extreme_row(second, I, 16)
    ext = second.result()
    assert (ext.closest, ext.farthest) == brute_force(xh)


def test_summaries_merge_like_blocks():
    # add_summary (the device path) with the candidates a block would keep equals add_block.
    xh = unit(np.random.default_rng(4).standard_normal((30, 5)))
    search = ExtremeSearch(xh)
    G = xh @ xh.T
    i, j = np.triu_indices(30, 1)
    c = G[i, j]
    hi = c >= c.max() - search.margin
    lo = c <= c.min() + search.margin
    search.add_summary(c.max(), c.min(), i[hi], j[hi], c[hi], i[lo], j[lo], c[lo])
    search.add_summary(-math.inf, math.inf, [], [], [], [], [], [])  # a block without pairs
    ext = search.result()
    assert (ext.closest, ext.farthest) == brute_force(xh)


def _ext(t_lo, t_hi):
    return ExtremePairs(n=4, d=3, closest=(t_lo, 0, 1), farthest=(t_hi, 2, 3),
                        screen_max=math.cos(t_lo), screen_min=math.cos(t_hi), margin=1e-12)


def test_the_farther_pair_wins_when_its_angle_is_smaller():
    # ReLU, all layers, L = 1: φ(118°) = 91.3° > φ(179°) = 90.0° (synthetic extremes).
    found = smallest_from_extremes(_ext(math.radians(118), math.radians(179)), "relu", [1, 2])
    assert found[1][1:] == (2, 3) and found[2][1:] == (0, 1)
    assert smallest_from_extremes(_ext(0.3, 2.0), "linear", [0, 5])[5] == (0.3, 0, 1)


def test_uncovered_targets_are_none(monkeypatch):
    from ntkcond.infinite import extremes, unimodal

    def refuse(activation, depths, trainable="all", max_cost=None):
        return tuple(unimodal.Certificate("relu", L, trainable, "floor" if L else "proof",
                                          1.6, 3.0, 0.0, 1) for L in sorted(depths))

    monkeypatch.setattr(extremes, "certify", refuse)
    found = smallest_from_extremes(_ext(1.7, 2.9), "relu", [0, 1, 3])
    assert found[1] is None and found[3] is None
    assert found[0] is not None  # depth 0: φ = θ, no certificate needed
    # θ_hi ≤ π/2: proof (c) of ``unimodal`` covers it, no certificate is asked for
    assert smallest_from_extremes(_ext(0.2, 1.5), "relu", [3])[3] is not None


# --------------------------------------------------------------------------- issue 34
def _unit_rows(n=5, d=4):
    return normalised_rows(np.random.default_rng(3).standard_normal((n, d)), "test", "x")[0]


@pytest.mark.parametrize("block,error", [(0, ValueError), (2.5, ValueError), (-1, ValueError),
                                         (True, ValueError), ("8", ValueError)])
def test_extreme_pairs_bad_blocks(block, error):
    with pytest.raises(error, match=r"^extreme_pairs: expected an integer block size >= 2, got "):
        extreme_pairs(_unit_rows(), block=block)


def test_extreme_pairs_bad_rows():
    xh = _unit_rows()
    with pytest.raises(ValueError, match=r"^extreme_pairs: expected xh of shape \(n, d\), got "
                                         r"shape \(4,\)"):
        extreme_pairs(xh[0], block=2)
    bad = xh.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"^extreme_pairs: expected finite xh, got NaN or Inf in row 2"):
        extreme_pairs(bad, block=2)
    with pytest.raises(ValueError, match=r"^extreme_pairs: expected unit rows xh"):
        extreme_pairs(3 * xh, block=2)
    with pytest.raises(ValueError, match=r"^extreme_pairs: expected xh with n >= 2 rows"):
        extreme_pairs(xh[:1], block=2)
    with pytest.raises(ValueError, match=r"^extreme_pairs: expected x of the shape of xh"):
        extreme_pairs(xh, block=2, x=xh[:3])


@pytest.mark.parametrize("closest,farthest,message", [
    ((math.nan, 0, 1), (2.0, 2, 3), r"ext.closest with an angle in \[0, pi\] radians, got nan"),
    ((0.1, 0, 1), (math.inf, 2, 3), r"ext.farthest with an angle in \[0, pi\]"),
    ((-0.1, 0, 1), (2.0, 2, 3), r"ext.closest with an angle"),
    ((3.0, 0, 1), (0.1, 2, 3), r"ext.closest's angle <= ext.farthest's, got 3.0 > 0.1"),
    ((0.1, 1, 1), (2.0, 2, 3), r"ext.closest with a pair 0 <= i < j < n = 4, got \(1, 1\)"),
    ((0.1, 0, 7), (2.0, 2, 3), r"ext.closest with a pair 0 <= i < j < n = 4, got \(0, 7\)"),
])
def test_smallest_from_extremes_refuses_extremes_that_cannot_be(closest, farthest, message):
    ext = ExtremePairs(n=4, d=3, closest=closest, farthest=farthest, screen_max=0.9,
                       screen_min=-0.9, margin=1e-12)
    with pytest.raises(ValueError, match=r"^smallest_from_extremes: expected " + message):
        smallest_from_extremes(ext, "relu", [1])
    with pytest.raises(TypeError, match=r"^smallest_from_extremes: expected ext as an ExtremePairs"):
        smallest_from_extremes((closest, farthest), "relu", [1])
