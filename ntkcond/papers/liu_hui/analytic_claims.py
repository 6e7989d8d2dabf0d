"""Claims checked analytically: the exact recursion's expansions and limits (4, 5, 7) and
exact spectra of infinite-width NTKs (8, 9, 10). See ``ntkcond.papers.liu_hui.report``."""
from __future__ import annotations

import numpy as np

from ...infinite import angles as _angles
from ...infinite.kernels import infinite_ntk
from ...spectrum import conditioning
from .claim_kit import (
    Claim,
    Formulas,
    loglog_slope,
    pyplot,
    real_batches,
    save_figure,
    unit_pair,
)

# ------------------------------------------------------------------------------------------
# Claims 4, 5, 7: analysis of the exact recursion
# ------------------------------------------------------------------------------------------

def check_small_angle_law(formulas=Formulas(), fast=True, outdir=None) -> Claim:
    """Claim 4. Independent of the law: Richardson extrapolation of the exact recursion."""
    depths = (1, 2, 5, 10)
    thetas = np.geomspace(1e-1, 1e-6, 11)
    remainders, rates, coef_err = {}, {}, []
    for L in depths:
        phi = _angles.gradient_angle(thetas, L)
        exact_1mc = 2 * np.sin(phi / 2) ** 2  # 1 − cos φ without cancellation
        law_1mc = 1 - np.asarray(formulas.small_angle_gradient_cos(thetas, L))
        r = np.abs(law_1mc - exact_1mc) / thetas
        remainders[L] = r.tolist()
        rates[L] = loglog_slope(thetas[3:], r[3:])
        # first-order coefficient: a₁ = lim (1 − cos φ)/θ, by Richardson from θ and θ/2
        t = 1e-5
        f = lambda s: 2 * np.sin(_angles.gradient_angle(s, L) / 2) ** 2 / s
        a1_exact = 2 * f(t / 2) - f(t)
        g = lambda s: (1 - float(formulas.small_angle_gradient_cos(s, L))) / s
        a1_law = 2 * g(t / 2) - g(t)
        coef_err.append(abs(a1_law - a1_exact) / a1_exact)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for L in depths:
        ax.loglog(thetas, remainders[L], "o-", ms=3, label=f"L={L} (slope {rates[L]:.2f})")
    ax.set(xlabel="input angle θ (rad)", ylabel="|remainder| / θ", title="Small-angle law remainder")
    ax.legend(fontsize=8)
    fig.tight_layout()
    figs = save_figure(fig, outdir, "claim4_small_angle.png")
    err = float(max(coef_err))
    return Claim(
        id="4", title="Small-angle law",
        formula="cos φ = (1 − Lθ/(2π) + o(θ)) cos θ",
        paper="Liu & Hui: the small-angle law, gradient angles of similar inputs widen with depth",
        computed=("the exact recursion's first-order coefficient a₁ = lim (1 − cos φ)/θ by "
                  "Richardson extrapolation at θ = 1e-5 (L = 1, 2, 5, 10), against the law's; and "
                  "the remainder/θ over θ ∈ [1e-6, 0.1]"),
        error=err, tolerance=1e-8,
        why=("Richardson from θ and θ/2 cancels the O(θ) term, leaving O(θ²) ≈ 1e-10 relative; "
             "the angle-native recursion gives 1 − cos φ to ~1e-14 relative at θ = 1e-5. The "
             "remainder/θ must also fall to 0: measured log-log slopes "
             + ", ".join(f"L={L}: {rates[L]:.2f}" for L in depths) + " (remainder O(θ²))"),
        passed=bool(err <= 1e-8 and all(r > 0.8 for r in rates.values())),
        details={"thetas": thetas.tolist(), "remainder_over_theta": remainders, "rates": rates,
                 "coefficient_relative_error": coef_err},
        figures=figs,
    )


def check_embedding_collapse(formulas=Formulas(), fast=True, outdir=None) -> Claim:
    """Claim 5. g against the arccos form; monotone, below the diagonal, gˡ ~ 3π/l."""
    t = np.linspace(0, np.pi, 20001)
    g = np.asarray(formulas.angle_map(t))
    independent = np.arccos(np.clip((np.sin(t) + (np.pi - t) * np.cos(t)) / np.pi, -1, 1))
    far = t > 1e-2  # arccos loses half its digits near 0: compare only away from it
    form_err = float(np.max(np.abs(g[far] - independent[far])))
    below = bool(np.all(g[1:] < t[1:]) and g[0] == 0.0)
    monotone = bool(np.all(np.diff(g) > 0))
    ls = np.array([10, 100, 1000] + ([] if fast else [10000]))
    ratio = []
    for l in ls:
        it = t[[2000, 8000, 16000]]
        for _ in range(int(l)):
            it = np.asarray(formulas.angle_map(it))
        ratio.append((it / np.asarray(formulas.embedding_angle_asymptote(l))).tolist())
    ratio = np.array(ratio)
    dev = np.abs(1 - ratio)
    shrinking = bool(np.all(dev[-1] < dev[-2]) and np.all(dev[-2] < dev[-3]))
    err = float(max(form_err, dev[-1].max() if shrinking else np.inf))
    tol = 0.05 if fast else 0.015  # 1.5x the measured O(log l / l) deviation at the last l
    return Claim(
        id="5", title="Embedding angles collapse",
        formula="g(θ) ≤ θ (equality only at 0), g monotone, gˡ(θ) ~ 3π/l",
        paper="Liu & Hui: deep ReLU embeddings of distinct inputs become nearly parallel",
        computed=(f"g on 20001 angles against arccos((sin θ + (π−θ)cos θ)/π) (max diff "
                  f"{form_err:.1e}); iterates gˡ at l = {ls.tolist()} for θ = 0.31, 1.26, 2.51"),
        error=err, tolerance=tol,
        why=("l·gˡ(θ)/(3π) − 1 = O(log l / l), slowest for small θ (measured up to 0.034 at "
             "l = 1e3 and 0.010 at 1e4); it must shrink with l and stay within 1.5x of that; g ≤ θ "
             "and monotonicity are exact statements checked on the grid"),
        passed=bool(below and monotone and shrinking and err <= tol),
        details={"below_diagonal": below, "monotone": monotone, "layers": ls.tolist(),
                 "l_g_over_3pi": ratio.tolist(), "arccos_form_max_diff": form_err},
    )


def _aitken(seq):
    """Aitken Δ² extrapolation from the last three terms of a sequence (elementwise)."""
    a, b, c = (np.asarray(v, dtype=np.float64) for v in seq[-3:])
    return c - (c - b) ** 2 / ((c - b) - (b - a))


def check_infinite_depth(formulas=Formulas(), fast=True, outdir=None, seed=7) -> list[Claim]:
    """Claim 7. φ → arccos(1/4); κ of the normalised NTK → (n+3)/3, not (n+4)/3.

    Independent of the limits under test: the exact recursion at large finite depth,
    extrapolated to L → ∞ by Aitken's Δ² on a ×3 depth grid.
    """
    depths = np.array([100, 300, 1000, 3000] + ([] if fast else [10000]))
    t = np.array([0.1, 1.0, 2.5])
    phis = np.array([_angles.gradient_angle(t, int(L)) for L in depths])
    limit = float(formulas.relu_infinite_depth_angle())
    phi_extrap = _aitken(phis)
    phi_err = float(np.max(np.abs(phi_extrap - limit)))
    phi_rate = loglog_slope(depths, np.max(np.abs(phis - _angles.relu_infinite_depth_angle()), 1))
    n = 16
    x = np.random.default_rng(seed).standard_normal((n, 32))
    kappas = []
    for L in depths:
        K = infinite_ntk(x, depth=int(L))
        d = np.sqrt(np.diag(K))
        kappas.append(conditioning(K / np.outer(d, d)).kappa)
    kappas = np.array(kappas)
    extrapolated = float(_aitken(kappas))
    predicted = float(formulas.infinite_depth_kappa(n))
    k_err = abs(extrapolated - predicted) / predicted
    rate = loglog_slope(depths, np.abs(kappas - (n + 3) / 3))
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    axes[0].loglog(depths, np.max(np.abs(phis - limit), 1), "o-")
    axes[0].set(xlabel="depth L", ylabel="max |φ − limit| (rad)", title="gradient angle limit")
    axes[1].semilogx(depths, kappas, "o-", label="κ(normalised NTK)")
    axes[1].axhline((n + 3) / 3, color="g", ls="--", label="(n+3)/3")
    axes[1].axhline((n + 4) / 3, color="r", ls=":", label="(n+4)/3 (paper)")
    axes[1].set(xlabel="depth L", title=f"κ limit, n = {n}")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    figs = save_figure(fig, outdir, "claim7_infinite_depth.png")
    grid = f"L = {depths.tolist()}"
    phi_tol = 3e-3 if fast else 1.5e-3
    a = Claim(
        id="7a", title="Infinite depth: φ → arccos(1/4) ≈ 75.52°",
        formula="lim_{L→∞} φ(θ, L) = arccos(1/4) for every θ ∈ (0, π)",
        paper="Liu & Hui: infinite-depth limit of the gradient angle",
        computed=(f"exact recursion at {grid} for θ ∈ {t.tolist()}, Aitken-extrapolated to L = ∞: "
                  f"{np.degrees(phi_extrap).round(4).tolist()}°; the raw error decays like L^{phi_rate:.2f}"),
        error=phi_err, tolerance=phi_tol,
        why=("the raw error decays like (a·ln L + b)/L, not 1/L (L·(cos φ − ¼) = 3.04, 3.92, 4.79 at "
             "L = 10³, 10⁴, 10⁵ for θ = π; 8e-3 rad at L = 3000); Aitken removes most of it, "
             "leaving ≲ 1.6e-3 rad (fast grid) / 7e-4 rad (full grid), so a limit off by more "
             f"than {phi_tol:g} rad (0.17° / 0.09°) is rejected"),
        passed=bool(phi_err <= phi_tol and phi_rate < -0.8),
        details={"depths": depths.tolist(), "phi": phis.tolist(), "phi_extrapolated": phi_extrap.tolist(),
                 "phi_rate": phi_rate},
        figures=figs,
    )
    b = Claim(
        id="7b", title="Infinite depth: κ of the normalised NTK → (n+3)/3, not (n+4)/3",
        formula="lim κ(Θ/(L+1)) = κ(¾I + ¼·11ᵀ) = (n+3)/3 (paper prints (n+4)/3)",
        paper="Liu & Hui: infinite-depth condition number (the printed (n+4)/3 vs the limit matrix ¾I + ¼·11ᵀ in its proof)",
        computed=(f"κ of the normalised NTK of {n} Gaussian inputs at {grid}: "
                  f"{kappas.round(4).tolist()}, Aitken-extrapolated {extrapolated:.5f}; "
                  f"(n+3)/3 = {(n + 3) / 3:.5f}, (n+4)/3 = {(n + 4) / 3:.5f}"),
        error=float(k_err), tolerance=2e-3,
        why=("Aitken removes the leading ~(ln L)/L term; the remaining error is ≲ 1e-3 relative, 50x "
             f"below the 5% gap between (n+3)/3 and (n+4)/3 at n = {n}; κ − (n+3)/3 decays like "
             f"L^{rate:.2f}. Note κ passes (n+4)/3 on its way down (at L ≈ 300 here), so a "
             "moderate-depth check would mislead. Verdict: (n+3)/3 is right"),
        passed=bool(k_err <= 2e-3),
        details={"kappa": kappas.tolist(), "kappa_extrapolated": extrapolated,
                 "n_plus_3_over_3": (n + 3) / 3, "n_plus_4_over_3": (n + 4) / 3, "kappa_rate": rate},
        figures=figs,
    )
    return [a, b]


# ------------------------------------------------------------------------------------------
# Claims 8–10: condition numbers
# ------------------------------------------------------------------------------------------


def check_first_layer_only(formulas=Formulas(), fast=True, outdir=None, data_dir=None, seed=8) -> Claim:
    """Claim 8: only W⁽¹⁾ trained: λmin(ReLU) > λmin(linear), κ(ReLU) < κ(linear), κ ↓ in L."""
    data = real_batches(128 if fast else 512, data_dir)
    rng = np.random.default_rng(seed)
    data["Gaussian n=64, d=256"] = rng.standard_normal((64, 256))
    data["Gaussian n=256, d=64"] = rng.standard_normal((256, 64))
    depths = range(0, 11)
    violations, table = [], {}
    for name, x in data.items():
        lin = conditioning(formulas.infinite_ntk(x, depth=1, activation="linear", trainable="first"))
        n = x.shape[0]
        margin = 100 * n * np.finfo(float).eps * lin.lambda_max  # eigvalsh resolution
        rows, prev = [], None
        for L in depths:
            c = conditioning(formulas.infinite_ntk(x, depth=L, activation="relu", trainable="first"))
            rows.append({"depth": L, "lambda_min": float(c.eigenvalues[0]), "kappa": c.kappa,
                         "kappa_eff": c.kappa_eff})
            if L >= 1:
                if not c.eigenvalues[0] > lin.eigenvalues[0] + margin:
                    violations.append(f"{name} L={L}: λmin(ReLU) ≤ λmin(linear)")
                if not c.kappa < lin.kappa:
                    violations.append(f"{name} L={L}: κ(ReLU) ≥ κ(linear)")
                if prev is not None and not c.kappa < prev:
                    violations.append(f"{name} L={L}: κ did not decrease")
                prev = c.kappa
        table[name] = {"linear": {"lambda_min": float(lin.eigenvalues[0]), "kappa": lin.kappa},
                       "relu": rows}
    return Claim(
        id="8", title="First-layer-only NTK: ReLU better conditioned, improving with depth",
        formula="Θ = ‖x‖‖x'‖/d · cos θ₀ Π_{j<L} ġ(θ_j) (only W⁽¹⁾ trained); λmin(ReLU) > λmin(linear), κ(ReLU) < κ(linear), κ ↓ in L",
        paper="v1 Theorem 5.3 / v2 Theorem 4.2",
        computed=(f"exact eigenvalues of the first-layer NTK at L = 0…10 on {sorted(data)}; "
                  "linear κ is the same at every depth (G/d)"),
        error=float(len(violations)), tolerance=0.0,
        why=("strict inequalities between exact spectra, each required to hold by more than the "
             "eigvalsh resolution 100·n·eps·λmax; any violation is a FAIL"),
        passed=not violations,
        details={"violations": violations, "spectra": table},
    )


def _equiangular_kappa(cos):
    """κ of the n = 2 kernel [[1, c], [c, 1]]: (1 + |c|)/(1 − |c|)."""
    c = np.abs(cos)
    return (1 + c) / (1 - c)


def _relu_helps_range(formulas, L):
    """Input angles (degrees, 0.25° grid) where |cos φ(θ, L)| < |cos θ| (ReLU better for n = 2)."""
    t = np.radians(np.arange(0.25, 180, 0.25))
    better = np.abs(np.cos(formulas.gradient_angle(t, L))) < np.abs(np.cos(t))
    worse = np.nonzero(~better)[0]
    if worse.size == 0:
        return None
    return float(np.degrees(t[worse[0]])), float(np.degrees(t[worse[-1]]))


def check_two_points(formulas=Formulas(), fast=True, outdir=None) -> list[Claim]:
    """Claim 9: two inputs, all layers: κ(ReLU) < κ(linear), and deeper is better.

    Checked against the exact 2 × 2 spectra of ``infinite_ntk`` (independent of the angle
    closed form); split into the similar-input regime (θ ≤ 60°), where it holds, and the
    unconditional statement, which fails for near-orthogonal pairs.
    """
    t = np.radians(np.arange(1.0, 180.0, 1.0))
    kappa = {}
    for L in (0, 1, 2, 5, 10):
        ks = []
        for angle in t:
            x = np.stack(unit_pair(angle))
            ks.append(conditioning(formulas.infinite_ntk(x, depth=L)).kappa)
        kappa[L] = np.array(ks)
    lin = kappa[0]
    similar = np.degrees(t) <= 60
    fails_similar = [(L, float(np.degrees(a))) for L in (1, 2, 5, 10)
                     for a, k, kl in zip(t[similar], kappa[L][similar], lin[similar]) if not k < kl]
    deeper_similar = all(np.all(kappa[b][similar] < kappa[a][similar]) for a, b in ((1, 2), (2, 5), (5, 10)))
    closed = {L: _equiangular_kappa(np.cos(formulas.gradient_angle(t, L))) for L in kappa}
    closed_err = max(float(np.max(np.abs(closed[L] - kappa[L]) / kappa[L])) for L in kappa)
    ranges = {L: _relu_helps_range(formulas, L) for L in (1, 2, 5, 10)}
    worse_anywhere = {L: bool(np.any(kappa[L] >= lin)) for L in (1, 2, 5, 10)}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for L in (1, 2, 5, 10):
        ax.semilogy(np.degrees(t), kappa[L] / lin, label=f"L={L}")
    ax.axhline(1, color="k", lw=0.8)
    ax.set(xlabel="angle between the two inputs (degrees)", ylabel="κ(ReLU) / κ(linear)",
           title="Two inputs, all layers trained")
    ax.legend(fontsize=8)
    fig.tight_layout()
    figs = save_figure(fig, outdir, "claim9_two_points.png")
    common = dict(formula="n = 2, all layers: κ = (1 + |cos φ|)/(1 − |cos φ|) vs (1 + |cos θ|)/(1 − |cos θ|)",
                  paper="v2 Theorem F.1", figures=figs)
    a = Claim(
        id="9a", title="Two inputs at angle ≤ 60°: κ(ReLU) < κ(linear), decreasing with depth",
        computed=("exact 2×2 spectra of the infinite NTK on θ = 1°…60°, L = 1, 2, 5, 10; and the "
                  f"closed form through φ(θ, L) (max relative difference {closed_err:.1e})"),
        error=float(len(fails_similar) + (0 if deeper_similar else 1) + (closed_err > 1e-8)),
        tolerance=0.0,
        why=("exact inequalities between 2×2 spectra; the closed form κ(φ) must match them to 1e-8 "
             "(eigvalsh of a 2×2 matrix is exact to ~eps·κ)"),
        passed=bool(not fails_similar and deeper_similar and closed_err <= 1e-8),
        details={"violations": fails_similar, "closed_form_rel_diff": closed_err}, **common)
    b = Claim(
        id="9b", title="Two inputs, any angle: κ(ReLU) < κ(linear) (unconditional reading)",
        computed=("exact 2×2 spectra on θ = 1°…179°; ReLU is worse where |cos φ(θ, L)| ≥ |cos θ|: "
                  + "; ".join(f"L={L}: {r[0]:.2f}°–{r[1]:.2f}°" for L, r in ranges.items() if r)),
        error=float(sum(worse_anywhere.values())), tolerance=0.0,
        why=("as an unconditional statement a single counterexample refutes it: near-orthogonal "
             "pairs (cos θ ≈ 0) get cos φ > 0 from ReLU (e.g. θ = 90°, L = 1: cos φ = 1/(2π)), "
             "which raises κ. Expected FAIL; the paper's regime is similar inputs (claim 9a)"),
        passed=not any(worse_anywhere.values()),
        details={"relu_worse_range_deg": ranges}, **common)
    return [a, b]


def check_headline_fails(formulas=Formulas(), fast=True, outdir=None, data_dir=None, seed=10) -> Claim:
    """Claim 10: all layers on near-orthogonal data: ReLU κ can exceed linear κ."""
    rng = np.random.default_rng(seed)
    gauss = rng.standard_normal((64, 256))
    real_name, real = next(iter(real_batches(128 if fast else 512, data_dir).items()))
    rows = {}
    for name, x in (("Gaussian n=64, d=256", gauss), (real_name, real)):
        lin = conditioning(formulas.infinite_ntk(x, depth=0)).kappa_eff
        rows[name] = {"linear": lin, "relu": {L: conditioning(formulas.infinite_ntk(x, depth=L)).kappa_eff
                                              for L in (1, 2, 5, 10)}}
    g = rows["Gaussian n=64, d=256"]
    r = rows[real_name]
    gauss_worse = all(k > g["linear"] for k in g["relu"].values())
    real_better = all(k < r["linear"] for k in r["relu"].values())
    angles_in = np.degrees(np.arccos(np.clip(np.abs(gauss @ gauss.T)[np.triu_indices(64, 1)]
                                             / 256.0, 0, 1)))
    ranges = {L: _relu_helps_range(formulas, L) for L in (1, 2, 5, 10)}
    return Claim(
        id="10", title="Where the headline fails: all layers, near-orthogonal data",
        formula="κ_eff(ReLU NTK) vs κ_eff(linear NTK) = κ_eff(G)",
        paper="the paper's headline 'ReLU soothes the NTK condition number', read unconditionally",
        computed=(f"Gaussian n=64, d=256 (input angles {angles_in.min():.0f}°–{angles_in.max():.0f}° "
                  f"from ±): linear κ_eff {g['linear']:.3g}, ReLU "
                  + ", ".join(f"L={L}: {k:.3g}" for L, k in g["relu"].items())
                  + f"; {real_name}: linear {r['linear']:.3g}, ReLU "
                  + ", ".join(f"L={L}: {k:.3g}" for L, k in r["relu"].items())
                  + ". ReLU helps two inputs only outside "
                  + "; ".join(f"L={L}: {v[0]:.1f}°–{v[1]:.1f}°" for L, v in ranges.items() if v)),
        error=float((not gauss_worse) + (not real_better)), tolerance=0.0,
        why=("both regimes must show as predicted: near-orthogonal data gain a common positive "
             "component from ReLU (cos φ(90°) > 0), which raises λmax relative to λmin; similar "
             "real images have their small angles widened, which lowers κ"),
        passed=bool(gauss_worse and real_better),
        details={"kappa_eff": rows, "relu_worse_range_deg": ranges},
    )


