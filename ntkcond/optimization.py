"""From κ to steps: gradient descent on the linearised model, exactly, by eigendecomposition.

A wide net trains like its linearisation at initialisation (Liu & Hui, arXiv 2305.08813, §2 and
§5; Jacot et al. 2018): full-batch gradient descent on L = ½‖f − y‖² with learning rate η moves
the outputs on the n training points as

    r_{t+1} = (I − ηK) r_t,        r_t = f_t − y,   r_0 = f_0 − y,                          (1)

K the (n, n) NTK (PSD, units of output² per parameter²; η in the inverse units, so ηK is
dimensionless). With K = U Λ Uᵀ, ρᵢ = 1 − ηλᵢ and cᵢ = ‖uᵢᵀ r_0‖² (summed over the k outputs
when y is (n, k)),

    loss_t = ½‖r_t‖² = ½ Σᵢ ρᵢ^{2t} cᵢ,        t = 0, 1, 2, …                               (2)

Eigenvalues at or below ``conditioning``'s cutoff τ = n·eps·λmax are rounding and are taken as
0: those directions (K's numerical null space) are never moved, ρᵢ = 1.

Monotone decrease. If 0 < η < 2/λmax then 0 ≤ ηλᵢ < 2, so |ρᵢ| ≤ 1 for every i, and each term
satisfies cᵢρᵢ^{2(t+1)} = ρᵢ²·cᵢρᵢ^{2t} ≤ cᵢρᵢ^{2t} (cᵢ ≥ 0): loss_{t+1} ≤ loss_t. For λᵢ > 0,
|ρᵢ| < 1 and the term → 0, so loss_t → ½ Σ_{λᵢ=0} cᵢ = ½‖P_null r_0‖², the part of the initial
residual in K's null space, which gradient descent never removes. (Computed in floating point,
(2) is non-increasing too: every operation in it is monotone in t.)

From κ to steps. At η = 1/λmax the slowest non-null mode has ρ = 1 − λmin⁺/λmax = 1 − 1/κ_eff
(``ntkcond.conditioning``). For a single mode loss_t/loss_0 = (1 − 1/κ_eff)^{2t}, so the first t
with loss_t ≤ ε·loss_0 is, exactly,

    t*(κ_eff, ε) = ⌈ ln(1/ε) / (−2 ln(1 − 1/κ_eff)) ⌉,                                     (3)

and since x ≤ −ln(1 − x) ≤ x/(1 − x) for 0 ≤ x < 1,

    ⌈(κ_eff − 1)·ln(1/ε)/2⌉ ≤ t* ≤ ⌈κ_eff·ln(1/ε)/2⌉:                                      (4)

the number of steps grows linearly in κ_eff. For a residual with no null-space part every mode
contracts at least that fast, so ``steps_to_loss(K, y, rel_target=ε) ≤ t*(κ_eff, ε)``.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ._core.memory import check_memory
from .spectrum import conditioning

__all__ = ["ntk_gd_loss", "steps_to_loss"]

# Entries of one (steps, n) block of factors ρᵢ^{2t} held at a time in ``ntk_gd_loss``.
_BLOCK_ENTRIES = 1 << 22


def _kernel_spectrum(K, where):
    """Validate K as ``conditioning`` does; return (eigenvalues with the null space set to 0,
    eigenvectors, λmax, n)."""
    try:
        cond = conditioning(K)
    except (TypeError, ValueError) as err:
        message = str(err).removeprefix("conditioning: ")
        raise type(err)(f"{where}: K: {message}") from None
    K64 = np.asarray(K, dtype=np.float64)
    lam, U = np.linalg.eigh(0.5 * (K64 + K64.T))
    lam = np.where(lam > cond.cutoff, lam, 0.0)
    return lam, U, float(lam[-1]), K64.shape[0]


def _as_targets(y, n, where, name):
    if not (hasattr(y, "__array__") or isinstance(y, (list, tuple))):
        raise TypeError(f"{where}: expected {name} as an (n,) or (n, k) array, got {type(y).__name__}")
    try:
        arr = np.asarray(y)
    except (ValueError, TypeError):  # e.g. a ragged nested list
        raise ValueError(f"{where}: expected {name} as an (n,) or (n, k) array, got a nested "
                         "sequence that is not rectangular (rows of different lengths)") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating)
                                   or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{where}: expected {name} with a real dtype, got {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[0] != n or (arr.ndim == 2 and arr.shape[1] == 0):
        raise ValueError(f"{where}: expected {name} of shape ({n},) or ({n}, k), k >= 1 (n = K's "
                         f"size), got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where}: expected finite {name}, got NaN or Inf")
    return arr


def _as_lr(lr, where):
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"{where}: expected lr as a real number, got {type(lr).__name__}")
    lr = float(lr)
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"{where}: expected a finite lr > 0, got {lr!r}")
    return lr


def _modes(K, y, f0, where):
    """(λ with null space 0, cᵢ = ‖uᵢᵀ r_0‖² (n,), λmax) of eq. (2)."""
    lam, U, lam_max, n = _kernel_spectrum(K, where)
    y = _as_targets(y, n, where, "y")
    if f0 is None:
        r0 = -y
    else:
        f0 = _as_targets(f0, n, where, "f0")
        if f0.shape != y.shape:
            raise ValueError(f"{where}: expected f0 of y's shape {y.shape}, got {f0.shape}")
        r0 = f0 - y
    proj = U.T @ r0
    c = proj**2 if proj.ndim == 1 else np.sum(proj**2, axis=1)
    return lam, c, lam_max


def _log_factors(lam, lr):
    """ln|ρᵢ| = ln|1 − ηλᵢ|, without the rounding of forming 1 − ηλᵢ: log1p(−ηλᵢ) for
    ηλᵢ ≤ 1 (−inf at ηλᵢ = 1), ln(ηλᵢ − 1) above (ηλᵢ − 1 is exact there, Sterbenz)."""
    a = lr * lam
    with np.errstate(divide="ignore"):
        return np.where(a <= 1.0, np.log1p(-np.minimum(a, 1.0)), np.log(np.maximum(a - 1.0, 0.0)))


def _losses(c, logrho, t):
    """Eq. (2) at the integer steps t (1-D array): ½ Σᵢ cᵢ exp(2t ln|ρᵢ|), ρ⁰ = 1."""
    t = np.asarray(t, dtype=np.float64)[:, None]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        factors = np.exp(t * (2.0 * logrho[None, :]))  # t·(2 ln|ρ|): no overflow of 2t
    factors = np.where(t == 0, 1.0, factors)
    return 0.5 * np.sum(np.where(c > 0, factors * c, 0.0), axis=1)


def _beyond_exact(loss, target, logrho, where):
    """The first step with loss ≤ target when it lies past 2^53 (``steps_to_loss``): bisection
    on float64 t (eq. (2) at real t is non-increasing), geometric until the bracket is within
    a factor 2, then arithmetic down to adjacent float64 numbers. inf if rounding keeps the
    loss a hair above a target equal to the null-space limit (every moving factor has
    underflowed to 0 and the loss still misses it)."""
    lo, hi = float(2**53), float(2**54)
    top = float(np.finfo(np.float64).max)
    while loss(hi) > target:
        if hi >= top:
            with np.errstate(under="ignore"):
                gone = np.all(np.exp(top * (2.0 * logrho[logrho < 0])) == 0.0)
            if gone:
                return math.inf
            raise ValueError(f"{where}: the target is reached only after more than {top:.3g} "
                             "steps, beyond float64's range; pass a larger lr")
        lo, hi = hi, (hi * hi if hi < 2.0**511 else top)
    while hi > 2.0 * lo:
        mid = math.sqrt(lo) * math.sqrt(hi)
        lo, hi = (lo, mid) if loss(mid) <= target else (mid, hi)
    while True:
        mid = lo + (hi - lo) / 2
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if loss(mid) <= target else (mid, hi)
    return int(math.ceil(hi))


def ntk_gd_loss(K, y, *, lr, steps, f0=None) -> np.ndarray:
    """The loss ½‖r_t‖² of gradient descent on the linearised model, t = 0 … steps, eq. (2).

    r_0 = f0 − y and r_{t+1} = (I − lr·K) r_t, eq. (1); computed exactly from one eigendecomposition
    of K (no iteration): loss_t = ½ Σᵢ (1 − lr·λᵢ)^{2t} ‖uᵢᵀ r_0‖², with eigenvalues at or below
    ``conditioning``'s cutoff taken as 0 and |1 − lr·λᵢ|^{2t} evaluated as exp(2t·ln|1 − lr·λᵢ|)
    with ln|1 − lr·λᵢ| from log1p, so contraction factors within eps of 1 (κ up to ~1e16) are not
    rounded away. For 0 < lr < 2/λmax the sequence is non-increasing (module docstring); a larger
    lr is allowed and gives the (exact) divergence, inf once it overflows.

    Args:
      K: (n, n) symmetric PSD kernel on the training inputs (validated as ``conditioning``).
      y: (n,) or (n, k) targets.
      lr: learning rate η > 0, in the inverse units of K.
      steps: number of steps T ≥ 0 (an int).
      f0: outputs at initialisation, y's shape; default 0.

    Returns:
      (steps + 1,) float64 array, loss_0 = ½‖f0 − y‖² (up to rounding) first.

    Raises:
      TypeError, ValueError: bad K (as ``conditioning``), y, f0, lr or steps.

    Examples:
      >>> import numpy as np, ntkcond
      >>> ntkcond.ntk_gd_loss(np.diag([1.0, 0.5]), np.array([1.0, 1.0]), lr=1.0, steps=3)
      array([1.       , 0.125    , 0.03125  , 0.0078125])
    """
    where = "ntk_gd_loss"
    lr = _as_lr(lr, where)
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"{where}: expected steps as an int, got {type(steps).__name__}")
    if steps < 0:
        raise ValueError(f"{where}: expected steps >= 0, got {steps}")
    steps = int(steps)
    # the (steps + 1,) result, and one block of factors at a time: checked before allocating
    check_memory(8 * (steps + 1), f"the loss curve of {steps + 1} steps (float64)", None, where,
                 "ask for fewer steps, or use steps_to_loss for the step at which a target loss "
                 "is reached")
    lam, c, _ = _modes(K, y, f0, where)
    logrho = _log_factors(lam, lr)
    block = max(1, _BLOCK_ENTRIES // len(lam))
    out = np.empty(steps + 1)
    for s in range(0, steps + 1, block):
        e = min(steps + 1, s + block)
        out[s:e] = _losses(c, logrho, np.arange(s, e))
    return out


def steps_to_loss(K, y, *, lr=None, rel_target, f0=None):
    """The first step t with loss_t ≤ rel_target·loss_0 under gradient descent on the
    linearised model, eqs. (1)–(2), found exactly without iterating.

    For 0 < lr < 2/λmax the loss of eq. (2) is non-increasing in t (proof in the module
    docstring; the floating-point evaluation is too), so the first t is found by doubling t
    until the target is met and bisecting: O(n log t) after one eigendecomposition, exact for
    t up to 2^53 whatever κ_eff. It is ``math.inf`` when the target is never reached: the
    limit ½‖P_null r_0‖² (the residual in K's null space, eigenvalues at or below
    ``conditioning``'s cutoff) stays above it. Past 2^53 steps (a tiny lr) consecutive step
    counts are not distinguishable in float64: eq. (2) is then solved for real t by bisection
    on the float64 numbers and the answer is the first float64 integer at or past the
    target, to float64's relative resolution (2.2e-16), up to ~1.8e308 steps; beyond, a
    ValueError says the count is not representable. At lr = 1/λmax with no null-space
    residual the
    answer is at most t*(κ_eff, rel_target) = ⌈ln(1/ε)/(−2 ln(1 − 1/κ_eff))⌉ ≤ ⌈κ_eff·ln(1/ε)/2⌉,
    the single slowest mode's count, eqs. (3)–(4), with equality when r_0 lies along that mode.

    Args:
      K: (n, n) symmetric PSD kernel (validated as ``conditioning``).
      y: (n,) or (n, k) targets.
      lr: learning rate, 0 < lr < 2/λmax; default 1/λmax.
      rel_target: ε > 0, the loss to reach as a fraction of loss_0; ≥ 1 gives 0.
      f0: outputs at initialisation, y's shape; default 0.

    Returns:
      int t ≥ 0, or ``math.inf``. 0 also when loss_0 = 0.

    Raises:
      ValueError: lr ≥ 2/λmax (the loss need not decrease), lr ≤ 0, lr so small that lr·λ
        underflows for a non-null mode, rel_target ≤ 0 or not finite, a step count beyond
        float64's range, and bad K, y or f0; TypeError for non-numeric arguments.

    Examples:
      >>> import numpy as np, ntkcond
      >>> ntkcond.steps_to_loss(np.diag([1.0, 0.5]), np.array([1.0, 1.0]), rel_target=1e-2)
      3
    """
    where = "steps_to_loss"
    if isinstance(rel_target, bool) or not isinstance(rel_target, numbers.Real):
        raise TypeError(f"{where}: expected rel_target as a real number, got {type(rel_target).__name__}")
    rel_target = float(rel_target)
    if not (math.isfinite(rel_target) and rel_target > 0):
        raise ValueError(f"{where}: expected a finite rel_target > 0, got {rel_target!r}")
    lam, c, lam_max = _modes(K, y, f0, where)
    lr = 1.0 / lam_max if lr is None else _as_lr(lr, where)
    if lr * lam_max >= 2.0:
        raise ValueError(f"{where}: expected lr < 2/lambda_max = {2.0 / lam_max:.6g} (else the loss "
                         f"need not decrease), got lr = {lr!r}")
    logrho = _log_factors(lam, lr)
    moving = (lam > 0) & (c > 0)
    if np.any(moving & (logrho == 0.0)):
        small = float(np.min(lam[moving & (logrho == 0.0)]))
        raise ValueError(f"{where}: expected lr with lr*lambda representable for every mode, got "
                         f"lr = {lr!r}: lr*{small:.3g} rounds 1 - lr*lambda to 1 (the mode would "
                         "pass for null space); pass a larger lr")
    loss = lambda t: float(_losses(c, logrho, [t])[0])  # noqa: E731
    target = rel_target * loss(0)
    if loss(0) <= target:
        return 0
    null = 0.5 * float(np.sum(np.where(logrho == 0.0, c, 0.0)))  # the limit t → ∞
    if null > target:
        return math.inf
    hi = 1
    while loss(hi) > target:  # ends: every moving factor underflows to 0 by t ~ 373/|ln ρ|max
        if hi >= 2**53:
            return _beyond_exact(loss, target, logrho, where)
        hi *= 2
    lo = hi // 2  # loss(lo) > target (lo = 0 included)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if loss(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi
