"""The collapse of the leaky-slope loss curves after t → c·t
(``ntkcond.papers.zhang_saxe_latham.nets.collapse``)."""
import numpy as np
import pytest

from ntkcond.papers.zhang_saxe_latham.nets import biasfree as bf
from ntkcond.papers.zhang_saxe_latham.nets import collapse


def test_slope_collapse_small_lr_collapses_and_oscillation_breaks_it():
    x0 = bf.whiten(np.random.default_rng(0).standard_normal((16, 4)))
    x, y = bf.symmetrize(x0, x0[:, 0])  # teacher s = 1 along e1
    W1, W2 = bf.mirrored_init(4, 2, scale=0.3, seed=0)
    small = collapse.slope_collapse(x, y, W1, W2, alphas=(0.0, 0.5), lr=0.004, time=5.0)
    # Mirrored init: the curves are GD runs of one linear net at rates c*lr, O(lr) apart
    # (observed ~1e-3 at lr = 0.004); 1e-2 bounds it.
    assert small.max_error < 1e-2 and not any(small.oscillating)
    assert small.errors[-1] == 0.0 and small.alphas[-1] == 1.0
    big = collapse.slope_collapse(x, y, W1, W2, alphas=(0.0, 0.5), lr=1.5, time=5.0)
    # lr*c*s = 1.5 for the linear net (s = 1): beyond the stability edge 1 -> no collapse.
    assert big.oscillating[-1] and big.max_error > 0.1
    with pytest.raises(ValueError, match="slope_collapse: expected nonzero targets"):
        collapse.slope_collapse(x, 0 * y, W1, W2, lr=0.1, time=1.0)


def test_slope_collapse_batch_matches_one_call_per_member():
    data, inits = [], []
    for seed in (0, 1):
        x0 = bf.whiten(np.random.default_rng(seed).standard_normal((16, 4)))
        data.append(bf.symmetrize(x0, x0[:, 0]))
        inits.append(bf.mirrored_init(4, 2, scale=0.3, seed=seed))
    xs, ys = np.stack([d[0] for d in data]), np.stack([d[1] for d in data])
    W1s, W2s = np.stack([w[0] for w in inits]), np.stack([w[1] for w in inits])
    for lr in (0.05, 1.5):  # smooth, and oscillating (lr*c*s = 1.5 > 1 for the linear net)
        batch = collapse.slope_collapse_batch(xs, ys, W1s, W2s, alphas=(0.0, 0.5), lr=lr, time=3.0)
        for b in range(2):
            one = collapse.slope_collapse(xs[b], ys[b], W1s[b], W2s[b], alphas=(0.0, 0.5), lr=lr,
                                          time=3.0)
            # vmapped vs single runs: round-off only (observed ~1e-16 relative); the two
            # members differ by O(1e-2) or more, so a swapped member fails.
            np.testing.assert_allclose(batch[b].errors, one.errors, rtol=1e-9, atol=1e-12)
            assert batch[b].oscillating == one.oscillating and batch[b].diverged == one.diverged
        assert abs(batch[0].max_error - batch[1].max_error) > 1e-4
    with pytest.raises(ValueError, match="slope_collapse_batch: expected xs \\(B, n, d\\)"):
        collapse.slope_collapse_batch(xs[0], ys, W1s, W2s, lr=0.1, time=1.0)
    with pytest.raises(ValueError, match="slope_collapse_batch: expected nonzero targets"):
        collapse.slope_collapse_batch(xs, 0 * ys, W1s, W2s, lr=0.1, time=1.0)
