"""ntkcond.optimization: the loss of gradient descent on the linearised model, eq. (2), and the
first step that reaches a target, against independent eigendecompositions, brute-force
iteration of r ← (I − ηK) r, and the single-mode closed form (3) in 50-digit arithmetic."""
import math

import mpmath
import numpy as np
import pytest
from conftest import orthogonal
from hypothesis import given
from hypothesis import strategies as st

from ntkcond import conditioning, ntk_gd_loss, steps_to_loss

EPS = np.finfo(np.float64).eps


def prescribed(eigenvalues, seed=0):
    """(K = Q diag(λ) Qᵀ, Q, λ): Q is the independent eigendecomposition of K."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    q = orthogonal(len(lam), np.random.default_rng(seed))
    K = (q * lam) @ q.T
    return 0.5 * (K + K.T), q, lam


def loss_from(q, lam, r0, lr, steps):
    """½ Σᵢ (1 − ηλᵢ)^{2t} (qᵢᵀr₀)² from the known eigenpairs (not from K)."""
    c = (q.T @ r0) ** 2
    c = c if c.ndim == 1 else c.sum(1)
    t = np.arange(steps + 1)[:, None]
    return 0.5 * np.sum((1 - lr * lam) ** (2 * t) * c, axis=1)


def iterate(K, r0, lr, steps):
    """Brute force: r_{t+1} = r_t − η K r_t, loss ½‖r_t‖²."""
    r, out = r0.copy(), [0.5 * np.sum(r0**2)]
    for _ in range(steps):
        r = r - lr * (K @ r)
        out.append(0.5 * np.sum(r**2))
    return np.array(out)


@pytest.mark.parametrize("kappa", [1.0, 10.0, 300.0])
@pytest.mark.parametrize("lr_scale", [0.3, 1.0, 1.9])
def test_full_rank_matches_eigenpairs_and_iteration(kappa, lr_scale):
    n, steps = 12, 150
    K, q, lam = prescribed(np.geomspace(2.0, 2.0 / kappa, n), seed=1)
    rng = np.random.default_rng(2)
    y, f0 = rng.standard_normal(n), rng.standard_normal(n)
    lr = lr_scale / 2.0
    got = ntk_gd_loss(K, y, lr=lr, steps=steps, f0=f0)
    assert got.shape == (steps + 1,)
    # Against the known eigenpairs: K's eigenpairs differ from (Q, λ) by O(n·eps·λmax) (forming
    # QΛQᵀ and eigh), each factor (1 − ηλ)^{2t} then by ≤ 2t·n·eps·ηλmax relative: 2·150·12·eps
    # ≈ 8e-13 of loss_0; allow 1e-11.
    loss0 = 0.5 * np.sum((f0 - y) ** 2)
    assert got == pytest.approx(loss_from(q, lam, f0 - y, lr, steps), rel=0, abs=1e-11 * loss0)
    # Against brute force: each step adds ~n·eps relative rounding to r, 150 steps ≈ 4e-13.
    assert got == pytest.approx(iterate(K, f0 - y, lr, steps), rel=0, abs=1e-11 * loss0)
    assert got[0] == pytest.approx(loss0, rel=4 * n * EPS, abs=0)


def test_rank_deficient_plateaus_at_the_null_space_residual():
    n, steps = 10, 400
    lam = np.r_[np.geomspace(3.0, 0.3, 6), np.zeros(4)]
    K, q, _ = prescribed(lam, seed=3)
    y = np.random.default_rng(4).standard_normal(n)
    got = ntk_gd_loss(K, y, lr=0.3, steps=steps)
    loss0 = 0.5 * np.sum(y**2)
    assert got == pytest.approx(loss_from(q, lam, -y, 0.3, steps), rel=0, abs=1e-11 * loss0)
    assert got == pytest.approx(iterate(K, -y, 0.3, steps), rel=0, abs=1e-11 * loss0)
    null = 0.5 * np.sum((q[:, 6:].T @ y) ** 2)
    # (1 − 0.3·0.3)^{800} ≈ 1e-33: the moving part is gone; the plateau is ½‖P_null y‖²
    assert got[-1] == pytest.approx(null, rel=1e-12, abs=0)
    frac = null / loss0
    assert steps_to_loss(K, y, lr=0.3, rel_target=0.999 * frac) == math.inf
    t = steps_to_loss(K, y, lr=0.3, rel_target=1.01 * frac)
    assert got[t] <= 1.01 * frac * loss0 < got[t - 1]


def test_multi_output_is_the_sum_over_outputs():
    n, k = 9, 3
    K, _, _ = prescribed(np.geomspace(1.0, 1e-2, n), seed=5)
    rng = np.random.default_rng(6)
    Y, F0 = rng.standard_normal((n, k)), rng.standard_normal((n, k))
    total = ntk_gd_loss(K, Y, lr=0.7, steps=50, f0=F0)
    parts = sum(ntk_gd_loss(K, Y[:, j], lr=0.7, steps=50, f0=F0[:, j]) for j in range(k))
    assert total == pytest.approx(parts, rel=1e-13, abs=0)
    assert total == pytest.approx(iterate(K, F0 - Y, 0.7, 50), rel=1e-11, abs=0)
    t = steps_to_loss(K, Y, lr=0.7, rel_target=1e-3, f0=F0)
    longer = ntk_gd_loss(K, Y, lr=0.7, steps=t, f0=F0)
    assert longer[t] <= 1e-3 * longer[0] < longer[t - 1]


@pytest.mark.parametrize("kappa, rel", [(5.0, 1e-3), (50.0, 1e-6), (400.0, 0.2)])
def test_steps_to_loss_matches_brute_force(kappa, rel):
    n = 15
    K, _, _ = prescribed(np.geomspace(1.0, 1.0 / kappa, n), seed=7)
    y = np.random.default_rng(8).standard_normal(n)
    lr = 1.0 / conditioning(K).lambda_max
    t = steps_to_loss(K, y, rel_target=rel)  # default lr = 1/λmax
    brute = iterate(K, -y, lr, t + 5)
    target = rel * brute[0]
    first = int(np.argmax(brute <= target))
    # the design keeps the target clear of every loss value (rounding ~1e-13 relative)
    assert np.min(np.abs(brute / target - 1)) > 1e-9
    assert t == first
    exact = ntk_gd_loss(K, y, lr=lr, steps=t)
    assert exact[t] <= target < exact[t - 1]


def test_single_mode_closed_form_for_huge_kappa():
    # K = diag(1, 1e-12): eigh is exact for a diagonal, lr = 1/λmax = 1, r₀ on the slow mode.
    # t* = ⌈ln(1/ε)/(−2 ln(1 − 1e-12))⌉ ≈ 3.5e12 steps: no iteration could check this.
    K = np.diag([1.0, 1e-12])
    y = np.array([0.0, 1.0])
    eps_target = 1e-3
    with mpmath.workdps(50):
        x = mpmath.mpf(1e-12)
        real_t = mpmath.log(1 / mpmath.mpf(eps_target)) / (-2 * mpmath.log1p(-x))
        ref = int(mpmath.ceil(real_t))
        margin = float(min(ref - real_t, real_t - (ref - 1)))  # distance to a step boundary
    # Float evaluation puts the exponent 2t·ln ρ ≈ −6.9 within a few eps, i.e. within ~2e-3 of a
    # step (one step moves it by 2e-12); the real-valued t* sits 0.34 steps from the nearest
    # integer, so float64 can decide it.
    assert margin > 0.05
    t = steps_to_loss(K, y, rel_target=eps_target)
    assert t == ref
    # eq. (4): ⌈(κ − 1) ln(1/ε)/2⌉ ≤ t* ≤ ⌈κ ln(1/ε)/2⌉
    kappa = 1e12
    assert math.ceil((kappa - 1) * math.log(1 / eps_target) / 2) <= t <= math.ceil(kappa * math.log(1 / eps_target) / 2)
    # the 50-digit loss ½(1 − 1e-12)^{2t} crosses the target exactly there. (Forming 1 − 1e-12 in
    # float64 first, as a plain power would, moves 1 − ρ by ~1e-4 relative and t* by ~3e8.)
    with mpmath.workdps(50):
        loss = lambda s: (1 - mpmath.mpf(1e-12)) ** (2 * s)  # noqa: E731, loss_t / loss_0
        assert loss(t) <= eps_target < loss(t - 1)


@given(st.integers(2, 8), st.integers(0, 2**31 - 1), st.floats(0.05, 1.99), st.floats(1e-8, 0.9))
def test_bounds_and_monotonicity(n, seed, lr_scale, rel):
    rng = np.random.default_rng(seed)
    lam = np.sort(rng.uniform(0.01, 1.0, n))[::-1]
    K, _, _ = prescribed(lam, seed=seed)
    y = rng.standard_normal(n)
    lam_max = conditioning(K).lambda_max
    losses = ntk_gd_loss(K, y, lr=lr_scale / lam_max, steps=60)
    # the module docstring's proof: non-increasing for 0 < lr < 2/λmax, in floating point too
    assert np.all(np.diff(losses) <= 0)
    # eq. (4) at lr = 1/λmax, no null space: at most the slowest single mode's count
    kappa = conditioning(K).kappa_eff
    t = steps_to_loss(K, y, rel_target=rel)
    t_star = math.ceil(math.log(1 / rel) / (-2 * math.log1p(-1 / kappa))) if kappa > 1 else 1
    assert t <= t_star


def test_zero_residual_and_loose_target_take_no_steps():
    K = np.eye(3)
    assert steps_to_loss(K, [1.0, 2.0, 3.0], rel_target=0.5, f0=[1.0, 2.0, 3.0]) == 0
    assert steps_to_loss(K, [1.0, 2.0, 3.0], rel_target=1.0) == 0
    # lr = 1/λmax on K = I removes everything in one step
    assert steps_to_loss(K, [1.0, 2.0, 3.0], rel_target=1e-30) == 1
    assert list(ntk_gd_loss(K, [1.0, 2.0, 3.0], lr=1.0, steps=2)) == [7.0, 0.0, 0.0]


def test_lr_at_or_above_two_over_lambda_max_is_refused():
    K = np.diag([2.0, 1.0])
    with pytest.raises(ValueError, match=r"steps_to_loss: expected lr < 2/lambda_max = 1 .*, got lr = 1\.0"):
        steps_to_loss(K, [1.0, 1.0], lr=1.0, rel_target=0.1)
    assert steps_to_loss(K, [1.0, 1.0], lr=0.999, rel_target=0.1) >= 1
    # ntk_gd_loss computes the divergence (|1 − 1.5·2| = 2: the first mode's loss ×4 per step)
    got = ntk_gd_loss(K, [1.0, 0.0], lr=1.5, steps=3)
    # exp(2t·ln 2): ln and exp round once each, the product 2t·ln 2 ≈ 4 once: ≤ ~8 eps
    assert got == pytest.approx([0.5, 2.0, 8.0, 32.0], rel=16 * EPS, abs=0)


@pytest.mark.parametrize("fn", ["ntk_gd_loss", "steps_to_loss"])
@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(K=np.ones((2, 3))), ValueError, r"K: expected a square \(n, n\) matrix"),
    (dict(K=np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError, "K: expected a positive semi-definite"),
    (dict(K=np.array([[1.0, 0.3], [0.0, 1.0]])), ValueError, "K: expected a symmetric matrix"),
    (dict(K="K"), TypeError, "K: expected a 2-D array"),
    (dict(y=np.ones(3)), ValueError, r"expected y of shape \(2,\) or \(2, k\)"),
    (dict(y=np.ones((2, 0))), ValueError, "expected y of shape"),
    (dict(y=[np.nan, 1.0]), ValueError, "expected finite y"),
    (dict(y="ab"), TypeError, "expected y as an"),
    (dict(f0=np.ones((2, 1))), ValueError, r"expected f0 of y's shape \(2,\), got \(2, 1\)"),
    (dict(lr=0.0), ValueError, "expected a finite lr > 0, got 0.0"),
    (dict(lr=-1.0), ValueError, "expected a finite lr > 0"),
    (dict(lr=float("nan")), ValueError, "expected a finite lr > 0"),
    (dict(lr=True), TypeError, "expected lr as a real number, got bool"),
    (dict(lr="0.1"), TypeError, "expected lr as a real number, got str"),
])
def test_bad_input(fn, kwargs, exc, match):
    args = dict(K=np.eye(2), y=np.ones(2), lr=0.5, f0=None)
    args.update(kwargs)
    if fn == "ntk_gd_loss":
        call = lambda: ntk_gd_loss(args["K"], args["y"], lr=args["lr"], steps=3, f0=args["f0"])  # noqa: E731
    else:
        call = lambda: steps_to_loss(args["K"], args["y"], lr=args["lr"], rel_target=0.1, f0=args["f0"])  # noqa: E731
    with pytest.raises(exc, match=match) as info:
        call()
    assert str(info.value).startswith(f"{fn}: ")


@pytest.mark.parametrize("steps, exc", [(-1, ValueError), (2.0, TypeError), (True, TypeError)])
def test_bad_steps(steps, exc):
    with pytest.raises(exc, match="ntk_gd_loss: expected steps"):
        ntk_gd_loss(np.eye(2), np.ones(2), lr=0.5, steps=steps)


@pytest.mark.parametrize("rel, exc", [(0.0, ValueError), (-0.5, ValueError), (math.inf, ValueError),
                                      (None, TypeError)])
def test_bad_rel_target(rel, exc):
    with pytest.raises(exc, match="steps_to_loss: expected .*rel_target"):
        steps_to_loss(np.eye(2), np.ones(2), rel_target=rel)


# --- reliability III -----------------------------------------------------------------------

def _small_problem():
    rng = np.random.default_rng(0)
    Q = orthogonal(6, rng)
    lam = np.array([0.5, 1.0, 2.0, 3.0, 5.0, 8.0])
    return (Q * lam) @ Q.T, rng.standard_normal(6), lam, Q


@pytest.mark.parametrize("lr", [1e-20, 1e-100, 1e-300])
def test_steps_past_two_to_the_53_are_the_right_count(lr):
    """A tiny lr reaches the target after ~1/lr steps: the answer is the first float64 integer
    at or past the crossing of eq. (2) at real t, checked in 40-digit mpmath: the loss there
    is at most the target, and 1e-13 relative earlier it is above it (the count is right to
    float64's resolution of t, not to the integer)."""
    K, y, lam, Q = _small_problem()
    t = steps_to_loss(K, y, lr=lr, rel_target=0.5)
    assert isinstance(t, int) and t > 2**53
    c = (Q.T @ y) ** 2
    with mpmath.workdps(40):
        def rel_loss(tt):
            return sum(mpmath.mpf(ci) * mpmath.exp(2 * tt * mpmath.log1p(-mpmath.mpf(lr) * mpmath.mpf(li)))
                       for ci, li in zip(c, lam)) / sum(mpmath.mpf(ci) for ci in c)
        assert rel_loss(mpmath.mpf(t)) <= 0.5 * (1 + 1e-14)
        assert rel_loss(mpmath.mpf(t) * (1 - mpmath.mpf(1e-13))) > 0.5
    # ~1/lr scaling: t·lr is the same number at every tiny lr (to float64 resolution)
    assert abs(t * lr / (steps_to_loss(K, y, lr=1e-20, rel_target=0.5) * 1e-20) - 1) <= 1e-12


def test_steps_beyond_float64_or_an_underflowing_lr_are_refused():
    K, y, _, _ = _small_problem()
    with pytest.raises(ValueError, match="steps_to_loss: the target is reached only after more than 1.8e"):
        steps_to_loss(K, y, lr=1e-310, rel_target=0.5)
    with pytest.raises(ValueError, match="steps_to_loss: expected lr with lr\\*lambda representable"):
        steps_to_loss(K, y, lr=5e-324, rel_target=0.5)


def test_loss_curve_too_long_for_memory_is_refused_before_allocating():
    from ntkcond import InsufficientMemoryError

    K, y, _, _ = _small_problem()
    with pytest.raises(InsufficientMemoryError, match="ntk_gd_loss: the loss curve of 10000000001 steps"):
        ntk_gd_loss(K, y, lr=0.01, steps=10**10)
    curve = ntk_gd_loss(K, y, lr=0.01, steps=5)  # the blockwise fill gives the same values
    assert curve.shape == (6,) and np.all(np.diff(curve) <= 0)


@pytest.mark.parametrize("fn", [lambda K, y: steps_to_loss(K, y, rel_target=0.1),
                                lambda K, y: ntk_gd_loss(K, y, lr=0.1, steps=2)])
def test_ragged_kernel_or_targets_are_named(fn):
    K, y, _, _ = _small_problem()
    with pytest.raises(ValueError, match=r"K: expected a 2-D array, got a nested sequence that is not rectangular"):
        fn([[1.0, 0.0], [0.0]], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"expected y as an \(n,\) or \(n, k\) array, got a nested sequence"):
        fn(K, [[1.0], [1.0, 2.0]] + [[0.0]] * 4)
