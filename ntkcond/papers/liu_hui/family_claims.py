"""Claim 21 (issue 21): Terjék & González-Sánchez's rate claim on the a·s + b·|s| family.

Terjék & González-Sánchez ("MLPs at the EOC: Spectrum of the NTK", arXiv 2501.13225) find
that for φ(s) = a·s + b·|s| the quantity Δ_φ = b²/(a² + b²) sets how fast the NTK's
condition number converges with depth: the larger Δ_φ, the faster; |s| (Δ = 1) converges
faster than ReLU (Δ = ½). In the slope form σ_α = max(s, αs) (a = (1 + α)/2,
b = (1 − α)/2), Δ = (1 − α)²/(2(1 + α²)) (``ntkcond.activations``).

Why (the normalised recursion of ``ntkcond.infinite.kernels``): the correlation map is
ρ ↦ (1 − Δ)ρ + Δ·k(ρ), k the arc-cosine kernel of |s|, and near ρ = 1 it reads
ε ↦ ε − Δ·(2√2/(3π))·2·ε^{3/2} + … with ε = 1 − ρ; with ε = η/Δ² this is one map for every
Δ, and so is the derivative factor 1 − Δ(2/π)·arccos ρ ≈ 1 − (2/π)√(2η). Every member of the
family therefore follows the same deep-layer trajectory, entered after a transient of
~1/Δ layers: κ converges to the same limit (n + 3)/3 (claim 7b) at a depth scale ∝ 1/Δ.

The check (independent of the claim's Δ formula): κ of the normalised NTK Θ/(L + 1) of
n = 16 Gaussian inputs from ``infinite_ntk`` at depths L = 10 … 1000 (fast; 3000 full) for slopes
α ∈ {0.5, 0.2, 0, −0.5, −1}, and the depth L_τ at which |κ_L − (n + 3)/3| first falls below
τ·(n + 3)/3 (log-linear interpolation on the grid). The claim holds if ordering the
activations by the Δ under test orders their L_τ the opposite way (larger Δ, smaller L_τ:
faster; the error is the largest ratio L_τ(larger Δ)/L_τ(smaller Δ) of neighbours, which
must stay below 1) and |s|'s gap is below ReLU's at every depth of the grid. The transient
picture predicts L_τ ≈ A + B/Δ; the least-squares A, B and the fit's largest relative
residual are reported (measured: L_τ ≈ 110 + 84/Δ within 5%),
not held to a bound. A wrong Δ (e.g. a²/(a² + b²)) reverses the order and fails
(``tests/test_family_claims.py``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...activations import parse_activation
from ...spectrum import conditioning
from .claim_kit import Claim, Formulas, pyplot, save_figure

__all__ = ["terjek_delta", "normalised_kappas", "convergence_depth", "check_activation_rate"]

SLOPES = (0.5, 0.2, 0.0, -0.5, -1.0)


def terjek_delta(activation) -> float:
    """Δ_φ = b²/(a² + b²) of σ = a·s + b·|s| (Terjék & González-Sánchez 2025)."""
    a, b = parse_activation(activation).ab
    return b * b / (a * a + b * b)


def normalised_kappas(x, depths, activation, infinite_ntk) -> np.ndarray:
    """κ of Θ_L/√(diag ⊗ diag) (the normalised NTK) at each depth."""
    out = []
    for L in depths:
        K = infinite_ntk(x, depth=int(L), activation=activation)
        d = np.sqrt(np.diag(K))
        out.append(conditioning(K / np.outer(d, d)).kappa)
    return np.array(out)


def convergence_depth(depths, gaps, tau: float) -> float:
    """First depth where ``gaps`` (relative |κ_L − κ_∞|) falls below ``tau``, interpolated
    linearly in (log L, log gap) between grid points; inf if never, depths[0] if at once."""
    depths, gaps = np.asarray(depths, float), np.asarray(gaps, float)
    below = np.nonzero(gaps < tau)[0]
    if below.size == 0:
        return float("inf")
    k = int(below[0])
    if k == 0:
        return float(depths[0])
    l0, l1, g0, g1 = np.log(depths[k - 1]), np.log(depths[k]), np.log(gaps[k - 1]), np.log(gaps[k])
    return float(np.exp(l0 + (np.log(tau) - g0) * (l1 - l0) / (g1 - g0)))


def check_activation_rate(formulas=Formulas(), fast=True, outdir=None, data_dir=None, seed=21,
                          delta: Callable = terjek_delta) -> Claim:
    """Claim 21 (module docstring); ``delta`` is the Δ_φ formula under test."""
    n = 16
    x = np.random.default_rng(seed).standard_normal((n, 32))
    depths = np.array([10, 30, 100, 300, 1000] if fast else
                      [10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 3000])
    limit = (n + 3) / 3
    tau = 0.05
    names = [parse_activation(a).name for a in SLOPES]
    kappas = {a: normalised_kappas(x, depths, a, formulas.infinite_ntk) for a in names}
    gaps = {a: np.abs(kappas[a] - limit) / limit for a in names}
    reach = {a: convergence_depth(depths, gaps[a], tau) for a in names}
    deltas = {a: float(delta(a)) for a in names}
    by_delta = sorted(names, key=lambda a: deltas[a])  # predicted: slowest first
    order_ok = all(reach[p] > reach[q] for p, q in zip(by_delta, by_delta[1:]))
    abs_beats_relu = bool(np.all(gaps["abs"] < gaps["relu"]))
    ratios = [reach[q] / reach[p] for p, q in zip(by_delta, by_delta[1:])]
    error = float(max(ratios)) if all(np.isfinite(ratios)) else float("inf")
    dl = np.array([deltas[a] for a in names])
    rl = np.array([reach[a] for a in names])
    fit = [float("nan")] * 3
    if np.all(np.isfinite(rl)) and np.all(dl > 0):
        (A, B), *_ = np.linalg.lstsq(np.stack([np.ones_like(dl), 1 / dl], 1), rl, rcond=None)
        fit = [float(A), float(B), float(np.max(np.abs(A + B / dl - rl) / rl))]
    passed = bool(order_ok and abs_beats_relu and error < 1.0)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.8, 3.8))
    for a in names:
        ax.loglog(depths, gaps[a], "o-", ms=3, label=f"{a} (Δ = {deltas[a]:.3g})")
    ax.axhline(tau, color="grey", ls=":", lw=0.8)
    ax.set(xlabel="depth L", ylabel="|κ_L − (n+3)/3| / ((n+3)/3)",
           title=f"a·s + b·|s| family: κ's convergence with depth (n = {n})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    figs = save_figure(fig, outdir, "claim21_activation_rate.png")
    return Claim(
        id="21", title="a·s + b·|s| family: larger Δ_φ = b²/(a²+b²), faster κ convergence; |s| beats ReLU",
        formula=("κ(Θ_L/(L+1)) → (n+3)/3 at a depth scale ∝ 1/Δ_φ, Δ_φ = b²/(a² + b²) "
                 "(|s|: Δ = 1, ReLU: ½)"),
        paper="Terjék & González-Sánchez, arXiv 2501.13225 (2025): Δ_φ governs the NTK spectrum's convergence with depth",
        computed=(f"κ of the normalised NTK of {n} Gaussian inputs (d = 32) at L = {depths.tolist()} "
                  f"for {names}; depth to within {tau:g} of (n+3)/3: "
                  + ", ".join(f"{a} {reach[a]:.3g}" for a in names)
                  + f"; fit L_τ ≈ {fit[0]:.0f} + {fit[1]:.0f}/Δ (largest residual {fit[2]:.0%})"),
        error=error, tolerance=1.0,
        why=("the depth to reach the limit must fall as Δ rises: the largest ratio "
             "L_τ(larger Δ)/L_τ(smaller Δ) of neighbours in the Δ order under test must stay "
             "below 1 (these are κ values of different kernels, apart by far more than rounding: "
             "the closest pair, leaky:-0.5 and |s|, differ by 2% in L_τ), and |s|'s gap must be "
             "below ReLU's at every depth of the grid"),
        passed=passed,
        details={"depths": depths.tolist(), "kappa": {a: kappas[a].tolist() for a in names},
                 "delta": deltas, "depth_to_tau": reach, "tau": tau, "order_ok": order_ok,
                 "abs_beats_relu": abs_beats_relu, "neighbour_ratios": ratios,
                 "fit_A_B_residual": fit},
        figures=figs,
    )
