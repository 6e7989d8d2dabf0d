"""Claims 13 and 14: the bounds that followed Liu & Hui, checked on their own terms — the NTK's
power series with non-negative coefficients (13; Nguyen, Mondelli & Montúfar 2021, Murray et al.
2023) and the certified κ bracket built from it and from Prop 4.1 (14; ``ntkcond.scale.bounds``).
See ``ntkcond.papers.liu_hui.report``."""
from __future__ import annotations

import numpy as np

from ...spectrum import conditioning
from .claim_kit import Claim, Formulas, at_most, real_batches


def _unit_ntk(infinite_ntk, rho, depth, activation):
    """The normalised NTK of e₁ and the unit vectors at cos θ = ρ (d = 2)."""
    theta = np.arccos(np.clip(rho, -1, 1))
    x = np.vstack([[1.0, 0.0], np.stack([np.cos(theta), np.sin(theta)], axis=1)])
    K = np.asarray(infinite_ntk(x, depth=depth, activation=activation))
    return K[0, 1:] / K[0, 0]


def check_power_series(formulas=Formulas(), fast=True, outdir=None, data_dir=None) -> Claim:
    """Claim 13: Θ̃(ρ) = Σ a_p ρ^p with a_p ≥ 0 and Σ a_p = 1, so the truncation after order P
    is at most tail·|ρ|^{P+1} — checked against the closed-form kernel (``infinite_ntk``)."""
    P = 400
    rho = np.concatenate([np.linspace(-1, 1, 201), [0.999, -0.999]])
    cases = [(1, "relu"), (3, "relu"), (10, "relu"), (3, ("leaky_relu", 0.2))]
    worst, negatives, rows = 0.0, 0, {}
    for depth, act in cases:
        s = formulas.ntk_power_series(depth, act, order=P)
        exact = _unit_ntk(formulas.infinite_ntk, rho, depth, act)
        err = np.abs(exact - s(rho))
        # Σ_{p>P} a_p|ρ|^p ≤ tail·|ρ|^{P+1}; the lower bounds ǎ_p add ≤ spread; 1e-12 rounding
        allowed = s.tail * np.abs(rho) ** (P + 1) + s.spread + 1e-12
        ratio = float(np.max(err / allowed))
        worst = max(worst, ratio)
        negatives += int(np.sum(s.coefficients < 0))
        rows[f"L={depth} {act}"] = {"tail": s.tail, "max_err_over_allowed": ratio,
                                    "err_at_rho_0.5": float(err[np.argmin(np.abs(rho - 0.5))]),
                                    "a_0": float(s.coefficients[0]), "a_1": float(s.coefficients[1])}
    return Claim(
        id="13", title="The NTK is a power series in cos θ with non-negative coefficients",
        formula="Θ̃(ρ) = Σ_p a_p ρ^p, a_p ≥ 0, Σ a_p = Θ̃(1) = 1 ⇒ |Θ̃(ρ) − Σ_{p≤P} a_p ρ^p| ≤ (1 − Σ_{p≤P} a_p)·|ρ|^{P+1}",
        paper="Nguyen, Mondelli & Montúfar (ICML 2021); Murray, Jin, Bowman & Montúfar (ICLR 2023)",
        computed=(f"ntk_power_series(L, order={P}) for {[f'L={d} {a}' for d, a in cases]} against "
                  "the normalised infinite_ntk of unit vectors on 203 values of ρ ∈ [−1, 1]; "
                  f"max error / allowance {worst:.3g}; tails "
                  + ", ".join(f"{k}: {v['tail']:.3g}" for k, v in rows.items())),
        criteria=(at_most("max over ρ and cases of |Θ̃ − Σ ǎ_p ρ^p| / allowance", worst, 1.0),
                  at_most("negative coefficients", negatives, 0)),
        why=("the first statistic is the largest ratio of |Θ̃ − Σ ǎ_p ρ^p| to its allowance "
             "tail·|ρ|^{P+1} + spread + 1e-12 (spread: Σ_p of the certified coefficient "
             "enclosures' widths, 1e-12: the kernel's rounding), "
             "which must be ≤ 1 at every ρ: at |ρ| ≤ 0.9 the allowance is ~1e-12, so 1% wrong "
             "coefficients (an error ~5e-3 at ρ = 0.5) fail by 1e9, and at ρ = 1 the error is the "
             "tail itself, so a tail 1% too small fails too. Coefficients must be ≥ 0"),
        details={"cases": rows, "order": P},
    )


def _orthonormal_rows(n, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return q


def check_condition_bounds(formulas=Formulas(), fast=True, outdir=None, data_dir=None,
                           seed=14) -> Claim:
    """Claim 14: lower ≤ κ ≤ upper from ``condition_number_bounds`` on real batches, and the
    bracket exact (to rounding) on orthonormal inputs, where Θ̃ = a₀·11ᵀ + (1 − a₀)I."""
    n = 64 if fast else 512
    depths = (1, 10) if fast else (1, 3, 10)
    order = 512 if fast else None  # the series' cost is O(L·order²); None: the default 1024
    batches = real_batches(n, data_dir)
    failures, ratios, outside = [], {}, []
    for name, x in batches.items():
        for depth in depths:
            b = formulas.condition_number_bounds(x, depth=depth, order=order)
            kappa = conditioning(formulas.infinite_ntk(x, depth=depth)).kappa
            ratios[f"{name} L={depth}"] = {"lower": b.lower, "kappa": kappa, "upper": b.upper,
                                           "upper_over_lower": b.upper / b.lower}
            outside.append(max(b.lower / kappa, kappa / b.upper))
            if not b.lower <= kappa <= b.upper:
                failures.append(f"{name} L={depth}: {b.lower:.6g} ≤ {kappa:.6g} ≤ {b.upper:.6g} fails")
    # orthonormal rows: every Hadamard power of G̃ = I is I, so λmin(Θ̃) = 1 − a₀ exactly, λmax =
    # 1 − a₀ + n·a₀; the bracket must close on κ = 1 + n·a₀/(1 − a₀) to rounding
    q = _orthonormal_rows(64, seed)
    tight = 0.0
    for depth in depths:
        b = formulas.condition_number_bounds(q, depth=depth, order=order)
        kappa = conditioning(formulas.infinite_ntk(q, depth=depth)).kappa
        tight = max(tight, abs(b.upper / kappa - 1), abs(b.lower / kappa - 1))
        outside.append(max(b.lower / kappa, kappa / b.upper))
        if not b.lower <= kappa <= b.upper:
            failures.append(f"orthonormal L={depth}: {b.lower:.9g} ≤ {kappa:.9g} ≤ {b.upper:.9g} fails")
    tight_tol = 1e-6
    spread = [v["upper_over_lower"] for v in ratios.values()]
    return Claim(
        id="14", title="Certified κ bracket of the NTK of a data set in GEMM time",
        formula=("Θ̃ ⪰ Σ_{p≥P} a_p G̃^{∘p} (Schur), λmin(G̃^{∘p}) ≥ 1 − max_i Σ_{j≠i}|G̃_ij|^p "
                 "(Gershgorin), λmin ≤ λ₋ of the closest pair's 2×2 block (Prop 4.1), λmax between "
                 "the Rayleigh quotient of 1 and the Gershgorin row sums"),
        paper="Liu & Hui Prop 4.1; Nguyen, Mondelli & Montúfar (2021); Murray et al. (2023)",
        computed=(f"condition_number_bounds on {sorted(batches)} (n = {n}) at L = {list(depths)} against κ "
                  f"from eigvalsh of infinite_ntk: upper/lower {min(spread):.3g}–{max(spread):.3g}; "
                  f"on 64 orthonormal rows the bracket is within {tight:.1e} of κ"),
        criteria=(at_most("max over brackets of max(lower/κ, κ/upper)", max(outside), 1.0),
                  at_most("max |bound/κ − 1| on orthonormal rows", tight, tight_tol)),
        why=("lower ≤ κ ≤ upper must hold on every batch (the bounds are certified, rounding "
             "included); real batches alone would not see a bound 1% too optimistic (the bracket "
             "is a factor 2.5–150 wide), so on orthonormal inputs — where every bound of the "
             f"bracket is attained — both ends must be within {tight_tol:g} of κ (measured "
             f"{tight:.1e}): a 1% error in either end fails"),
        details={"brackets": ratios, "orthonormal_tightness": tight, "failures": failures},
    )
