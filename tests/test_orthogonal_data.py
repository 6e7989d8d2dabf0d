"""Orthogonal and XOR data (``ntkcond.papers.zhang_saxe_latham.nets.orthogonal_data``): the
feature alignment of a generic init trained on XOR (orthogonalised digits and the errors for
inputs that are not orthogonal: test_independent_nets)."""
import numpy as np

from ntkcond.papers import zhang_saxe_latham as zsl
from ntkcond.papers.zhang_saxe_latham.nets import biasfree as bf
from ntkcond.papers.zhang_saxe_latham.nets import training as zsl_training


def test_xor_generic_init_features_align_with_data_directions():
    x, y = zsl.xor_data(d=2)
    W = bf.gaussian_init([2, 16, 1], scale=1e-2, seed=3)
    r = zsl_training.train_network(x, y, W, activation=0.0, lr=0.02, steps=1500)
    assert r.loss[-1] < 1e-6
    W1, W2 = r.weights
    al = zsl.feature_alignment(W1, x[:2])
    big = np.linalg.norm(W1, axis=1) > 0.1 * np.max(np.linalg.norm(W1, axis=1))
    assert np.min(al[big]) > 0.999  # observed 1 - 1e-15: the units sit on ±p or ±q
    along_p = np.abs(W1 @ x[0]) > np.abs(W1 @ x[1])
    assert np.all(along_p[big] == (W2[0, big] > 0))  # a > 0 units serve y = +1 (p), a < 0 q
    # The random init itself is not aligned (the check can fail).
    assert np.min(zsl.feature_alignment(W[0], x[:2])) < 0.99
