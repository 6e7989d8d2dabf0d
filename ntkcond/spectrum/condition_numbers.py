"""κ and κ_eff of a kernel, eq. (1) of ``ntkcond.spectrum``: ``conditioning`` (the whole
spectrum summary, ``Conditioning``), ``effective_condition_number`` and
``conditioning_from_eigenvalues`` (for eigenvalues computed elsewhere); ``effective_rank`` of a
spectrum (Roy & Vetterli 2007)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ._kernel_checks import (
    NOISE_CAP,
    ScaledKernel,
    as_float_dtype,
    as_square_kernel,
    float_eps,
    ldexp,
    resolve_tolerances,
    scale_checked,
)

__all__ = ["Conditioning", "conditioning", "conditioning_core", "conditioning_from_eigenvalues",
           "effective_condition_number", "effective_rank"]


@dataclasses.dataclass(frozen=True, repr=False)
class Conditioning:
    """Spectrum summary of a PSD kernel (all values float64).

    Eigenvalues, ``lambda_max``, ``lambda_min_nonzero`` and ``cutoff`` are in the units of K.
    Where such a value lies outside float64's range (K near 1e308 or below 1e-300), it is
    reported as ``inf`` (above 1.8e308) or rounded to a subnormal or 0 (below 2.2e-308); the
    other attributes are computed on K scaled by a power of two (exact) and do not depend on
    the scale of K.

    Attributes:
      eigenvalues: (n,) ascending eigenvalues of (K + Kᵀ)/2.
      lambda_max: largest eigenvalue λ_max.
      lambda_min_nonzero: smallest eigenvalue above ``cutoff``.
      rank: number of eigenvalues above ``cutoff``.
      kappa_eff: λ_max / lambda_min_nonzero, eq. (1).
      kappa: plain λ_max / λ_min; ``inf`` when ``rank < n``.
      cutoff: τ = max(atol, rtol·λ_max).
      precision_limited: True when kappa_eff ≥ 0.1 / (n·eps) of the dtype the kernel was
        computed in: the value is then at the resolution limit of that dtype and says little
        beyond "at least this large". A float32 kernel of n = 512 is limited from κ ≈ 1.6e3.
      dtype: name of the dtype the kernel was computed in.

    ``repr`` is one line: κ_eff, λ_max, λ_min⁺, rank/n, the precision flag and dtype first, the
    eigenvalues summarised by their number and range.
    """

    eigenvalues: np.ndarray
    lambda_max: float
    lambda_min_nonzero: float
    rank: int
    kappa_eff: float
    kappa: float
    cutoff: float
    precision_limited: bool
    dtype: str

    def __repr__(self) -> str:
        w = np.asarray(self.eigenvalues)
        spread = f"[{w[0]:.4g}, {w[-1]:.4g}]" if w.size else "[]"
        return (
            f"Conditioning(kappa_eff={self.kappa_eff:.6g}, lambda_max={self.lambda_max:.6g}, "
            f"lambda_min_nonzero={self.lambda_min_nonzero:.6g}, rank={self.rank}/{w.size}, "
            f"precision_limited={self.precision_limited}, dtype={self.dtype!r}, "
            f"kappa={self.kappa:.6g}, cutoff={self.cutoff:.3g}, "
            f"eigenvalues=<{w.size} in {spread}>)"
        )


def conditioning(K, *, rtol: float | None = None, atol: float | None = None, dtype=None) -> Conditioning:
    """Eigenvalues, rank and (effective) condition numbers of a PSD kernel, eq. (1).

    Scale: K is first multiplied by the power of two 2^(−e) that brings max|K| into [0.5, 1)
    (exact, barring entries 2^-1022 below max|K|, which cannot move an eigenvalue by more than
    1e-308·λ_max), so κ, κ_eff, rank and the checks do not depend on the scale of K:
    ``diag([1e308, 1e308])`` and ``2^-1070·K`` (subnormal entries) are handled exactly. The
    eigenvalues are reported in the units of K (times 2^e), as ``inf`` where they exceed
    1.8e308 and rounded where they fall below 2.2e-308 (``Conditioning``).

    Args:
      K: (n, n) symmetric PSD matrix (numpy, jax or nested lists; integer or floating dtype,
        bfloat16 included). It is symmetrised as (K + Kᵀ)/2 and diagonalised with a float64
        ``eigvalsh``. The symmetry test allows |K − Kᵀ| ≤ (1e4·eps₆₄ + 64·eps)·max|K|, eps of
        K's own dtype, as rounding: 2.2e-12·max|K| in float64, 7.6e-6·max|K| in float32 (a
        float32 kernel 0.1% off symmetric is refused), 0.06 in float16 and 0.5 in bfloat16;
        an asymmetry below that enters κ only through (K + Kᵀ)/2.
      rtol: relative cutoff (a real number ≥ 0); default n·eps of float64 (numpy
        ``matrix_rank``'s convention).
      atol: absolute cutoff (a real number ≥ 0, in the units of K); default 0. The cutoff is
        τ = max(atol, rtol·λ_max).
      dtype: the floating dtype K was *computed* in, when it differs from K's dtype (e.g. a
        float32 kernel cast to float64 afterwards). Sets the rounding noise tolerated below zero
        and the ``precision_limited`` threshold.

    PSD rule: with eps that of the dtype K was computed in, an eigenvalue counts as rounding
    noise down to

        −max(τ, eps·‖K‖_F, min(n·eps, 0.01)·λ_max):

    n·eps·λ_max is the accumulated rounding of a computed n × n kernel (Weyl), eps·‖K‖_F bounds
    twice the effect of storing K in the dtype (|δK_ij| ≤ eps/2·|K_ij|, so ‖δK‖₂ ≤ eps/2·‖K‖_F),
    and the cap of 1% of λ_max keeps the test meaningful where n·eps approaches 1 (float16 and
    bfloat16): an eigenvalue of −0.5·λ_max is never rounding. Below −0.01·λ_max, a kernel is
    accepted only if storing it in its dtype can explain it.

    Returns:
      ``Conditioning``.

    Raises:
      TypeError: K is not a real numeric array; rtol or atol is not a real number; dtype is not
        a floating dtype.
      ValueError: K is empty, not square, not finite, asymmetric beyond rounding
        (|K − Kᵀ| > (1e4·eps₆₄ + 64·eps)·max|K|), zero, or has an eigenvalue below the PSD
        rule's bound;
        rtol or atol is negative or not finite.

    Examples:
      >>> import numpy as np, ntkcond
      >>> c = ntkcond.conditioning(np.array([[2.0, 1.0], [1.0, 2.0]]))
      >>> c.lambda_max, c.lambda_min_nonzero, c.kappa_eff, c.rank
      (3.0, 1.0, 3.0, 2)
    """
    return _checked_conditioning(K, rtol, atol, dtype, "conditioning")


def _checked_conditioning(K, rtol, atol, dtype, where: str) -> Conditioning:
    """``conditioning``'s checks, once, then ``conditioning_core``; messages name ``where``."""
    K64, kdtype = as_square_kernel(K, where)  # K64: this call's own float64 copy
    if dtype is not None:
        kdtype = as_float_dtype(dtype, where)
    rtol, atol = resolve_tolerances(rtol, atol, K64.shape[0], where)
    return conditioning_core(scale_checked(K64, kdtype, where), rtol, atol, where)


def conditioning_core(kernel: ScaledKernel, rtol: float, atol: float, where: str) -> Conditioning:
    """``conditioning`` of a kernel already checked (``ScaledKernel``; rtol and atol resolved
    floats, ``resolve_tolerances``): one float64 ``eigvalsh`` of ``kernel.matrix`` (read,
    not changed), then ``conditioning_from_eigenvalues``. No argument is checked; the PSD rule
    and the rank-0 test raise ValueError naming ``where``, the public function called."""
    eigenvalues = np.linalg.eigvalsh(kernel.matrix)
    return conditioning_from_eigenvalues(eigenvalues, kernel.dtype, rtol, atol, where,
                                         exponent=kernel.exponent)


def conditioning_from_eigenvalues(eigenvalues: np.ndarray, kdtype, rtol: float, atol: float, where: str,
                                  exponent: int = 0) -> Conditioning:
    """``Conditioning`` from the ascending float64 eigenvalues of a kernel computed in ``kdtype``.

    ``eigenvalues`` are in units of 2^exponent of K's units (``conditioning`` scales K by a
    power of two first); ``atol`` is in K's units. The PSD rule is that of ``conditioning``.
    """
    n = eigenvalues.shape[0]
    eps = float_eps(kdtype)
    lambda_max = float(eigenvalues[-1])
    atol_scaled = float(ldexp(atol, -exponent))
    cutoff = max(atol_scaled, rtol * max(lambda_max, 0.0))
    frobenius = float(np.sqrt(np.sum(eigenvalues * eigenvalues)))
    noise = max(eps * frobenius, min(n * eps, NOISE_CAP) * max(lambda_max, 0.0))
    floor = max(cutoff, noise)
    if eigenvalues[0] < -floor:
        raise ValueError(
            f"{where}: expected a positive semi-definite matrix, got eigenvalue "
            f"{ldexp(eigenvalues[0], exponent):.6g} < {-ldexp(floor, exponent):.3g} "
            f"(lambda_max = {ldexp(lambda_max, exponent):.6g}; rounding noise of {kdtype} "
            f"tolerated down to -max(cutoff, eps*||K||_F, min(n*eps, {NOISE_CAP:g})*lambda_max))"
        )
    above = eigenvalues > cutoff
    rank = int(np.count_nonzero(above))
    if rank == 0:
        raise ValueError(
            f"{where}: expected at least one eigenvalue above the cutoff "
            f"{ldexp(cutoff, exponent):.3g}, got lambda_max = {ldexp(lambda_max, exponent):.3g}"
        )
    lambda_min_nonzero = float(eigenvalues[above][0])
    kappa_eff = lambda_max / lambda_min_nonzero
    kappa = lambda_max / float(eigenvalues[0]) if rank == n else float("inf")
    precision_limited = bool(kappa_eff >= 0.1 / (n * eps))
    return Conditioning(
        eigenvalues=ldexp(eigenvalues, exponent),
        lambda_max=float(ldexp(lambda_max, exponent)),
        lambda_min_nonzero=float(ldexp(lambda_min_nonzero, exponent)),
        rank=rank,
        kappa_eff=float(kappa_eff),
        kappa=float(kappa),
        cutoff=float(ldexp(cutoff, exponent)),
        precision_limited=precision_limited,
        dtype=str(kdtype),
    )


def effective_condition_number(K, *, rtol: float | None = None, atol: float | None = None) -> float:
    """κ_eff = λ_max / (smallest eigenvalue above τ = max(atol, rtol·λ_max)), eq. (1).

    Args:
      K: (n, n) symmetric PSD kernel.
      rtol: default n·eps of float64.
      atol: default 0.

    Returns:
      κ_eff as a Python float; 1.0 for a 1 × 1 kernel.

    See ``conditioning`` for the checks and the full spectrum summary.

    Examples:
      >>> import numpy as np, ntkcond
      >>> ntkcond.effective_condition_number(np.diag([1.0, 1e-3, 0.0]))  # the null direction left out
      1000.0
    """
    return _checked_conditioning(K, rtol, atol, None, "effective_condition_number").kappa_eff


def effective_rank(values) -> float:
    """exp(−Σᵢ pᵢ log pᵢ), pᵢ = vᵢ / Σⱼ vⱼ over the positive values vᵢ (eigenvalues or singular
    values; zeros and negatives are left out): the number of equal values of the same entropy,
    1 for one positive value (Roy & Vetterli 2007, "The effective rank: a measure of effective
    dimensionality", EUSIPCO). ValueError if no value is positive."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    v = v[v > 0]
    if v.size == 0:
        raise ValueError("effective_rank: expected at least one positive value, got none")
    p = v / np.sum(v)
    return float(np.exp(-np.sum(p * np.log(p))))
