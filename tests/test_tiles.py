"""The tiles of the n × n NTK (``ntkcond.scale.tiles``): the kernel-only recursion against the
gradient recursion of ``ntkcond.infinite``."""
import numpy as np
import pytest

from ntkcond.activations import parse_activation
from ntkcond.infinite._recursion import gradient_recursion
from ntkcond.scale.tiles import kernel_recursion


@pytest.mark.parametrize("activation", ["relu", ("leaky_relu", 0.1), ("leaky_relu", 0.9), "linear"])
@pytest.mark.parametrize("layers", [None, "last", {0}, {0, 2}])
def test_kernel_recursion_equals_gradient_recursion(activation, layers):
    # Both compute T of eq. (2); the kernel-only recursion keeps θ to absolute precision (its
    # errors enter T through ġ = 1 − βθ and cos θ), so T agrees to a few eps absolute, angles
    # down to 1e-12 rad and up to π − 1e-12 rad included (3e-15 measured at depth 10).
    rng = np.random.default_rng(0)
    angle = np.concatenate([np.geomspace(1e-12, 0.1, 300), rng.uniform(0, np.pi, 300),
                            np.pi - np.geomspace(1e-12, 0.1, 300), [0.0, np.pi]])
    cos = np.cos(angle)
    act = parse_activation(activation)
    ref = {L: T.copy() for L, T, _, _, _ in gradient_recursion(angle, cos, [0, 1, 3, 10], act, layers)}
    kept = angle.copy()
    for L, T in kernel_recursion(angle, cos, [0, 1, 3, 10], act, layers):
        assert np.max(np.abs(T - ref[L])) <= 5e-15 * max(1.0, np.max(np.abs(ref[L])))
    assert np.array_equal(angle, kept)  # inputs untouched without overwrite=True
