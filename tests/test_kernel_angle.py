"""``scale.kernel_angle.streaming_smallest_kernel_angle``: scale and bad input (the agreement
with the dense kernel is in test_streaming.py)."""
import numpy as np
import pytest

from ntkcond.scale.kernel_angle import streaming_smallest_kernel_angle


@pytest.fixture(scope="module")
def feats():
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((70, 5)), rng.standard_normal((70, 3))),
            (np.abs(rng.standard_normal((70, 6))), None)]


@pytest.mark.parametrize("k", [-700, -300, 300, 500])
def test_same_answer_at_any_scale(feats, k):
    # H·2^k scales every layer's term of K by 2^(2k): the angles are unchanged, and with the
    # features rescaled by powers of two inside, bit for bit (before: K overflowed at 2^300
    # and the function returned None; at 2^-700 the diagonal underflowed to 0 and it refused)
    ref = streaming_smallest_kernel_angle(feats, block=16)
    scaled = [(np.ldexp(H, k), D) for H, D in feats]
    assert streaming_smallest_kernel_angle(scaled, block=16) == ref


@pytest.mark.parametrize("bad, exc, match", [
    ([(np.full((3, 2), np.nan), None)], ValueError,
     r"^streaming_smallest_kernel_angle: expected finite features, got a non-finite entry in "
     r"features\[0\] H, row 0$"),
    ([(np.ones((3, 2)), np.array([[1.0], [np.inf], [1.0]]))], ValueError,
     r"non-finite entry in features\[0\] D, row 1$"),
    ([(np.ones((3, 2)) * 1j, None)], TypeError,
     r"^streaming_smallest_kernel_angle: expected features\[0\] H as a real numeric array, "
     r"got dtype complex128$"),
    ([(np.array([["a", "b"]] * 3), None)], TypeError, r"H as a real numeric array, got dtype <U1$"),
    ([(np.ones((3, 2)), np.ones((4, 1)))], ValueError, r"of shapes \(n, m\) and \(n, k\)"),
    ([], ValueError, "at least one layer"),
    (5, TypeError, "expected a sequence of \\(H, D\\) array pairs, got int"),
])
def test_bad_input(bad, exc, match):
    with pytest.raises(exc, match=match):
        streaming_smallest_kernel_angle(bad)
