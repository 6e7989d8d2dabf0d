"""Claims checked against finite networks: Monte Carlo over random layers and nets (1, 2, 3,
6) and the optimisation-speed check on trained wide nets (11). Claim 12 is ``prop41``; the
report is ``report``."""
from __future__ import annotations

import numpy as np

from ... import plot
from ..._core.quiet import quiet_import
from ..._core.x64 import x64
from ...activations import parse_activation
from ...finite.empirical import empirical_ntk
from ...finite.models import mlp
from ...optimization import ntk_gd_loss
from ...spectrum import effective_condition_number
from . import quadrature as Q
from .quadrature import QUADRATURE_TOL
from .claim_kit import (
    Claim,
    Formulas,
    at_least,
    at_most,
    empirical_kernels,
    loglog_slope,
    pyplot,
    real_batches,
    save_figure,
    unit_pair,
)

_MC_ANGLES = np.array([0.25, 1.0, 2.0])


def _one_layer_mc(widths, seeds, activation, rng):
    """Empirical post-activation angles and derivative factors of random layers σ(Wx).

    Returns dict width → (angle_err (seeds, k), gdot_err (seeds, k)) for the angles
    ``_MC_ANGLES``, errors against the *true* values left to the caller.
    """
    act = parse_activation(activation)
    out = {}
    for m in widths:
        angles_emp, gdot_emp = [], []
        for angle in _MC_ANGLES:
            x, y = unit_pair(angle)
            W = rng.standard_normal((seeds, m, 2))
            zx, zy = W @ x, W @ y
            hx, hy = act(zx), act(zy)
            dot = np.sum(hx * hy, 1)
            cross = np.sqrt(np.maximum(np.sum(hx * hx, 1) * np.sum(hy * hy, 1) - dot**2, 0))
            angles_emp.append(np.arctan2(cross, dot))
            dx, dy = np.where(zx > 0, 1.0, act.slope), np.where(zy > 0, 1.0, act.slope)
            gdot_emp.append(act.scale * np.mean(dx * dy, 1))
        out[m] = (np.array(angles_emp).T, np.array(gdot_emp).T)
    return out


def _bias_in_standard_errors(err) -> float:
    """max over columns of |mean error| / its standard error, for (seeds, k) errors: a biased
    formula shows here while an unbiased one stays O(1)."""
    return float(np.max(np.abs(err.mean(0)) / (err.std(0, ddof=1) / np.sqrt(err.shape[0]))))


def _convergence_figure(widths, rms: dict, slopes: dict, ylabel, title, outdir, filename):
    """Log-log RMS error against width, one line per label, with an m^(-1/2) guide."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for label, values in rms.items():
        ax.plot(widths, values, "o-", label=f"{label} (slope {slopes[label]:.3f})")
    first = next(iter(rms.values()))[0]
    ax.plot(widths, first * np.sqrt(widths[0] / widths), "k:", label="m^(-1/2)")
    ax.set(xlabel="width m", ylabel=ylabel, title=title)
    plot.log_axis(ax, "x", ticks=widths)
    plot.log_axis(ax, "y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, outdir, filename)


def _mc_claim(cid, title, formula, paper, which, formulas, fast, outdir, seed):
    widths = 2 ** np.arange(8, 13 if fast else 15)
    seeds = 120 if fast else 400
    rng = np.random.default_rng(seed)
    rows, slopes, bias_z = {}, {}, {}
    for activation in ("relu", ("leaky_relu", 0.2)):
        name = parse_activation(activation).name
        mc = _one_layer_mc(widths, seeds, activation, rng)
        if which == "angle":
            truth = np.asarray(formulas.angle_map(_MC_ANGLES, activation))
        else:
            truth = np.asarray(formulas.derivative_factor(_MC_ANGLES, activation))
        rms, z = [], []
        for m in widths:
            err = mc[m][0 if which == "angle" else 1] - truth
            rms.append(float(np.sqrt(np.mean(err**2))))
            z.append(_bias_in_standard_errors(err))
        rows[name] = rms
        slopes[name] = loglog_slope(widths, rms)
        bias_z[name] = z[-1]
    worst_slope = max(slopes.values(), key=lambda s: abs(s + 0.5))
    z_max = max(bias_z.values())
    # the closed form against the Gaussian expectation by quadrature (ntkcond-independent): the
    # Monte Carlo alone cannot see a 1% error (its bias resolution is ~1e-3 at m = 4096)
    quad_err = 0.0
    for slope in (0.0, 0.2):
        act = "relu" if slope == 0.0 else ("leaky_relu", slope)
        if which == "angle":
            ours = np.asarray(formulas.angle_map(_MC_ANGLES, act))
            ref = np.array([np.arccos(Q.layer_cos(t, slope)) for t in _MC_ANGLES])
        else:
            ours = np.asarray(formulas.derivative_factor(_MC_ANGLES, act))
            ref = np.array([Q.layer_derivative(t, slope) for t in _MC_ANGLES])
        quad_err = max(quad_err, float(np.max(np.abs(ours - ref) / np.abs(ref))))
    figs = _convergence_figure(widths, rows, slopes, "RMS error vs closed form", title,
                               outdir, f"claim{cid}_convergence.png")
    return Claim(
        id=cid, title=title, formula=formula, paper=paper,
        computed=(f"angles θ ∈ {_MC_ANGLES.tolist()} rad; {seeds} random layers W ~ N(0,1)^(m×2) per "
                  f"width m ∈ 2^{int(np.log2(widths[0]))}…2^{int(np.log2(widths[-1]))}; ReLU and leaky 0.2; "
                  f"the closed form against the Gaussian expectation by quadrature: {quad_err:.1e} relative"),
        criteria=(at_most("|log-log slope of the RMS error + 1/2| (worst of ReLU, leaky 0.2)",
                          abs(worst_slope + 0.5), 0.1),
                  at_most("|mean error| / standard error at the largest width", z_max, 5.0),
                  at_most("closed form vs quadrature, max relative difference", quad_err,
                          QUADRATURE_TOL)),
        why=("the Monte Carlo error of a width-m layer is O(m^-1/2) by the CLT, so the log-log "
             "slope of the RMS error must lie in [-0.6, -0.4]; a wrong formula leaves an O(1) "
             "floor and flattens it. The mean error must stay within 5 standard errors at the "
             "largest width: the formula is unbiased to Monte Carlo resolution (~1e-3, too coarse "
             "for a 1% error), so the closed form must also match the expectation computed by "
             f"quadrature (liu_hui.quadrature) to {QUADRATURE_TOL:g} relative"),
        details={"widths": widths.tolist(), "rms_error": rows, "slopes": slopes,
                 "bias_in_standard_errors": bias_z, "quadrature_rel_diff": quad_err},
        figures=figs,
    )


def check_one_layer_angle(formulas=Formulas(), fast=True, outdir=None, data_dir=None, seed=1) -> Claim:
    return _mc_claim(
        "1", "One ReLU layer: post-activation angle",
        "cos θ' = (sin θ + (π − θ) cos θ)/π; leaky: [2α cos θ + (1−α)²(sin θ + (π−θ) cos θ)/π]/(1+α²)",
        "Liu & Hui: the one-layer angle map of ReLU post-activations",
        "angle", formulas, fast, outdir, seed)


def check_derivative_kernel(formulas=Formulas(), fast=True, outdir=None, data_dir=None, seed=2) -> Claim:
    return _mc_claim(
        "2", "Derivative kernel factor",
        "c·E[σ'(u)σ'(v)] = (π − θ)/π; leaky: [2α + (1−α)²(π−θ)/π]/(1+α²)",
        "Liu & Hui: the derivative-kernel factor in the NTK recursion",
        "gdot", formulas, fast, outdir, seed)


# ------------------------------------------------------------------------------------------
# Claims 3 and 6: finite networks' exact empirical NTKs
# ------------------------------------------------------------------------------------------


def _kernel_angle(K, i, j):
    return float(np.arctan2(np.sqrt(max(K[i, i] * K[j, j] - K[i, j] ** 2, 0.0)), K[i, j]))


_GRADIENT_THETAS = np.array([0.25, 1.0, 2.0])
_GRADIENT_FORMULA = "cos φ = (1/(L+1)) Σᵢ cos θᵢ Π_{j≥i} ġ(θ_j), θᵢ = gⁱ(θ)"
_GRADIENT_PAPER = "Liu & Hui: the gradient angle of a depth-L ReLU net at infinite width"
_NT_CRITERION = "max relative angle error vs neural-tangents' stax"


def _gradient_angle_inputs():
    """x₀ = e₁ and unit vectors at the angles ``_GRADIENT_THETAS`` from it: (4, 2)."""
    return np.stack([np.array([1.0, 0.0])] + [unit_pair(t)[1] for t in _GRADIENT_THETAS])


def check_gradient_angle(formulas=Formulas(), fast=True, outdir=None, data_dir=None) -> Claim:
    """Claim 3a: φ(θ, L) against finite nets (1/√m convergence)."""
    thetas = _GRADIENT_THETAS
    x = _gradient_angle_inputs()
    widths = np.array([64, 256, 1024] + ([] if fast else [4096]))
    seeds = range(48 if fast else 128)
    rms, slopes, z_last = {}, {}, {}
    for L in (1, 3):
        truth = np.asarray(formulas.gradient_angle(thetas, L))
        errs = []
        for m in widths:
            Ks = empirical_kernels(x, L, int(m), "relu", seeds)
            emp = np.array([[_kernel_angle(K, 0, k + 1) for k in range(len(thetas))] for K in Ks])
            errs.append(emp - truth)
        rms[L] = [float(np.sqrt(np.mean(e**2))) for e in errs]
        slopes[L] = loglog_slope(widths, rms[L])
        z_last[L] = _bias_in_standard_errors(errs[-1])
    worst = max(slopes.values(), key=lambda s: abs(s + 0.5))
    z = max(z_last.values())
    quad_err = max(abs(float(np.asarray(formulas.gradient_angle(np.array([t]), L))[0])
                       - Q.pair_gradient_angle(t, L)) / Q.pair_gradient_angle(t, L)
                   for L in (1, 3, 10) for t in thetas)
    figs = _convergence_figure(widths, {f"L={L}": r for L, r in rms.items()},
                               {f"L={L}": s for L, s in slopes.items()}, "RMS error of φ (rad)",
                               "Finite nets vs φ(θ, L)", outdir, "claim3_convergence.png")
    return Claim(
        id="3a", title="Depth-L gradient angle φ(θ, L) vs finite nets",
        formula=_GRADIENT_FORMULA, paper=_GRADIENT_PAPER,
        computed=(f"exact empirical NTKs (ntkcond.empirical_ntk, float64) of {len(seeds)} random "
                  f"ReLU nets per width m ∈ {widths.tolist()}, L = 1, 3, inputs at θ ∈ {thetas.tolist()} rad; "
                  f"RMS error slopes {', '.join(f'L={L}: {s:.3f}' for L, s in slopes.items())}; "
                  f"φ(θ, L) at L = 1, 3, 10 against the layer maps by quadrature: {quad_err:.1e} relative"),
        criteria=(at_most("|log-log slope of the RMS angle error + 1/2| (worst of L = 1, 3)",
                          abs(worst + 0.5), 0.1),
                  at_most("|mean error| / standard error at the largest width", z, 5.0),
                  at_most("φ vs the quadrature recursion, max relative difference", quad_err,
                          QUADRATURE_TOL)),
        why=("the empirical NTK concentrates around the infinite-width one with O(m^-1/2) "
             "fluctuations, so the log-log slope of the RMS angle error must lie in [-0.6, -0.4], "
             "and the mean error at the largest width must stay within 5 standard errors. "
             "That resolves ~1e-2 rad only (a 1% error in the derivative factor moves φ by less), so "
             "φ must also match the recursion of quadrature layer maps (ntkcond-independent) to "
             f"{QUADRATURE_TOL:g} relative"),
        details={"widths": widths.tolist(), "rms_error": rms, "slopes": slopes,
                 "bias_in_standard_errors": z_last, "quadrature_rel_diff": quad_err},
        figures=figs,
    )


def check_gradient_angle_nt(formulas=Formulas(), fast=True, outdir=None, data_dir=None) -> Claim:
    """Claim 3b: φ(θ, L) against neural-tangents' stax kernel; SKIPPED (never dropped) when
    neural-tangents cannot be imported (the nt extra is not installed, e.g. on newest jax)."""
    thetas = _GRADIENT_THETAS
    x = _gradient_angle_inputs()
    title = "Depth-L gradient angle φ(θ, L) vs neural-tangents"
    try:
        stax = quiet_import("neural_tangents").stax  # without TensorFlow's C++ start-up lines
    except ImportError as err:
        return Claim.skipped_claim(
            "3b", title, _GRADIENT_FORMULA, _GRADIENT_PAPER,
            reason=(f"neural-tangents is not importable ({err}); install the nt extra "
                    "(pip install 'ntkcond[nt]', which pins jax < 0.6) to compare with stax"),
            criteria=[(_NT_CRITERION, "<=", 1e-6)])

    errors = []
    with x64():
        for L in (1, 2, 5, 10):
            layers = []
            for _ in range(L):
                layers += [stax.Dense(512, W_std=np.sqrt(2.0), b_std=None), stax.Relu()]
            _, _, kernel_fn = stax.serial(*layers, stax.Dense(1, W_std=1.0, b_std=None))
            K = np.asarray(kernel_fn(x, None, "ntk"))
            nt = np.array([_kernel_angle(K, 0, k + 1) for k in range(len(thetas))])
            errors.append(float(np.max(np.abs(nt - np.asarray(formulas.gradient_angle(thetas, L))) / nt)))
    err = max(errors)
    return Claim(
        id="3b", title=title,
        formula=_GRADIENT_FORMULA, paper=_GRADIENT_PAPER,
        computed=f"neural-tangents stax kernel_fn (float64) at L = 1, 2, 5, 10; max relative angle error {err:.1e}",
        criteria=(at_most(_NT_CRITERION, err, 1e-6),),
        why=("stax's float64 ReLU kernel is off by ~1.5e-8 relative per layer (sqrt(prod − nngp²) "
             "on the diagonal, where the exact value is 0); angles read off it inherit that, so 1e-6 "
             "leaves a 10x margin at L = 10 while any formula error above it is caught"),
        details={"depths": [1, 2, 5, 10], "relative_errors": errors},
    )


def check_linear_nets(formulas=Formulas(), fast=True, outdir=None, data_dir=None, seed=6) -> Claim:
    """Claim 6: linear nets keep angles and κ; their finite-width NTK is exact in expectation."""

    t = np.linspace(0.0, np.pi, 181)
    angle_exact = all(np.array_equal(np.asarray(formulas.gradient_angle(t, L, "linear")), t)
                      for L in (0, 1, 5, 20))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 6))
    G = x @ x.T / x.shape[1]
    inf_err = max(float(np.max(np.abs(formulas.infinite_ntk(x, depth=L, activation="linear") - (L + 1) * G))
                        / np.abs(G).max()) for L in (0, 1, 3, 10))
    kappas = [effective_condition_number(formulas.infinite_ntk(x, depth=L, activation="linear"))
              for L in (0, 1, 3, 10)]
    kappa_spread = float(max(kappas) / min(kappas) - 1)
    S, m = (200, 64) if fast else (800, 256)
    z_max, mean_rel = 0.0, {}
    for L in (1, 3):
        Ks = empirical_kernels(x, L, m, "linear", range(S))
        mean = Ks.mean(0)
        se = Ks.std(0, ddof=1) / np.sqrt(S)
        z_max = max(z_max, float(np.max(np.abs(mean - (L + 1) * G) / se)))
        mean_rel[L] = float(np.max(np.abs(mean - (L + 1) * G)) / np.abs((L + 1) * G).max())
    angle_misses = sum(int(np.sum(np.asarray(formulas.gradient_angle(t, L, "linear")) != t))
                       for L in (0, 1, 5, 20))
    return Claim(
        id="6", title="Linear nets: φ = θ, Θ = (L+1)·G/d, κ independent of depth",
        formula="φ(θ, L) = θ; Θ = (L + 1)·XXᵀ/d at infinite width and in expectation at finite width",
        paper="Liu & Hui: a linear net's NTK is the input Gram matrix up to scale at every depth",
        computed=(f"φ == θ exactly on 181 angles (L = 0, 1, 5, 20): {angle_exact}; infinite NTK vs "
                  f"(L+1)G/d: {inf_err:.1e} of max|G|; κ_eff spread over L = 0, 1, 3, 10: {kappa_spread:.1e}; "
                  f"mean of {S} width-{m} linear nets' exact NTKs vs (L+1)G/d: max |z| = {z_max:.2f} "
                  f"(relative {', '.join(f'L={L}: {v:.1e}' for L, v in mean_rel.items())})"),
        criteria=(at_most("max |z| of the Monte Carlo mean NTK vs (L+1)G/d", z_max, 5.0),
                  at_most("max |infinite NTK − (L+1)G/d| / max|G|", inf_err, 1e-13),
                  at_most("κ_eff spread over L = 0, 1, 3, 10: max/min − 1", kappa_spread, 1e-9),
                  at_most(f"angles with φ ≠ θ (of {4 * t.size})", angle_misses, 0)),
        why=("E[Θ_m] = (L+1)G/d exactly for linear nets, so the Monte Carlo mean may differ only by "
             "noise: every entry within 5 standard errors (36 entries; P(|z| > 5) ≈ 6e-7 each). "
             "The infinite-width identities are exact up to rounding (1e-13) and κ up to 1e-9; "
             "φ = θ is exact (bit for bit)"),
        details={"angle_exact": angle_exact, "infinite_rel_err": inf_err, "kappa": kappas,
                 "monte_carlo_max_z": z_max, "monte_carlo_rel": mean_rel},
    )


# ------------------------------------------------------------------------------------------
# Claim 11: optimisation speed of wide nets, measured against the NTK prediction
# ------------------------------------------------------------------------------------------

def _train_and_predict(x, y, depth, width, activation, steps, seed=0):
    """Full-batch GD on ½‖f − y‖² at η = 1/λmax(Θ₀) and the linearised prediction.

    Returns (measured loss (steps+1,), predicted loss (steps+1,), eigenvalues of Θ₀, η).
    Prediction: ½ Σᵢ (1 − ηλᵢ)^{2t} (uᵢᵀ r₀)², r₀ = f₀(X) − y, Θ₀ = uΛuᵀ (empirical, at init),
    by ``ntkcond.ntk_gd_loss``.
    """
    with x64():
        import jax
        import jax.numpy as jnp

        net = mlp(depth, width, activation)
        params = net.init(jax.random.PRNGKey(seed), x.shape[1], jnp.float64)
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        K0 = np.asarray(empirical_ntk(net, params, xj))
        lam = np.linalg.eigh(0.5 * (K0 + K0.T))[0]  # eigh, not eigvalsh: the same η to the bit
        eta = 1.0 / lam[-1]
        loss_fn = lambda p: 0.5 * jnp.sum((net.apply(p, xj) - yj) ** 2)
        grad = jax.jit(jax.value_and_grad(loss_fn))

        def step(p, _):
            value, g = grad(p)
            return [w - eta * gw for w, gw in zip(p, g)], value

        params, losses = jax.lax.scan(step, params, None, length=steps)
        measured = np.append(np.asarray(losses), float(loss_fn(params)))
        f0 = np.asarray(net.apply(net.init(jax.random.PRNGKey(seed), x.shape[1], jnp.float64), xj))
    predicted = ntk_gd_loss(K0, y, lr=eta, steps=steps, f0=f0)
    return measured, predicted, lam, eta


_EARLY_STEPS = 100  # the drift of the NTK accumulates with training time; compare this long


def check_optimization_speed(formulas=Formulas(), fast=True, outdir=None, data_dir=None) -> Claim:
    """Claim 11: wide nets train as their NTK predicts, faster where κ_eff is smaller.

    The gap between measured and predicted loss comes from the NTK moving during training,
    O(m^-1/2) for a depth-1 net; we measure it at several widths and fit its exponent.
    """

    name, x = next(iter(real_batches(32 if fast else 64, data_dir).items()))
    y = np.where(np.arange(len(x)) % 2 == 0, 1.0, -1.0)  # a fixed ±1 target per image
    widths, steps, depth = ((256, 2048), 60, 1) if fast else ((512, 2048, 8192), 300, 1)
    seeds = range(3 if fast else 5)
    runs, gaps = {}, {"relu": [], "linear": []}
    for width in widths:
        for act in ("relu", "linear"):
            per_seed = []
            for seed in seeds:
                measured, predicted, lam, eta = _train_and_predict(x, y, depth, width, act, steps, seed)
                early = slice(0, _EARLY_STEPS + 1)  # the early phase the NTK prediction is for
                per_seed.append(float(np.max(np.abs(measured[early] - predicted[early]) / predicted[early])))
            gaps[act].append(float(np.mean(per_seed)))
            above = lam > len(lam) * np.finfo(float).eps * lam[-1]
            runs[act] = {"measured": measured, "predicted": predicted, "eta": float(eta),
                         "kappa_eff": float(lam[-1] / lam[above][0]),
                         "loss_ratio": float(measured[-1] / measured[0])}
    exponent = loglog_slope(widths, gaps["relu"])
    tol = 0.2 if fast else 0.1  # single nets measured: 0.12 at m = 2048, 0.068 at m = 8192 (n = 32)
    rate = {a: 1 - 1 / r["kappa_eff"] for a, r in runs.items()}  # slowest non-null mode, per step
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for act, style in (("relu", "-"), ("linear", "--")):
        r = runs[act]
        ax.semilogy(r["measured"], style, label=f"{act}, measured (κ_eff {r['kappa_eff']:.3g})")
        ax.semilogy(r["predicted"], ":", color=ax.lines[-1].get_color(), label=f"{act}, NTK prediction")
    ax.set(xlabel="gradient-descent step (η = 1/λmax)", ylabel="½‖f − y‖²",
           title=f"{name}, n = {len(x)}, width {widths[-1]}, depth {depth}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    figs = save_figure(fig, outdir, "claim11_optimization.png")
    return Claim(
        id="11", title="Optimisation speed: training follows the NTK; smaller κ_eff trains faster",
        formula="½‖r_t‖² = ½ Σᵢ (1 − ηλᵢ)^{2t} (uᵢᵀr₀)², η = 1/λmax < 2/λmax",
        paper="Liu & Hui: ReLU's better-conditioned NTK accelerates optimisation of wide nets",
        computed=(f"full-batch GD of depth-{depth} ReLU and linear nets on {len(x)} {name} images "
                  f"(±1 targets), {steps} steps, widths {list(widths)}: max relative gap to the "
                  f"initial-NTK prediction over the first {min(steps, _EARLY_STEPS)} steps ReLU {[round(g, 4) for g in gaps['relu']]} (∝ m^{exponent:.2f}), "
                  f"linear {[round(g, 4) for g in gaps['linear']]}; at width {widths[-1]}: κ_eff ReLU "
                  f"{runs['relu']['kappa_eff']:.3g} vs linear {runs['linear']['kappa_eff']:.3g}, loss "
                  f"after {steps} steps / initial: ReLU {runs['relu']['loss_ratio']:.3f}, linear "
                  f"{runs['linear']['loss_ratio']:.3f}; slowest-mode factor per step (1 − 1/κ_eff): "
                  f"ReLU {rate['relu']:.5f}, linear {rate['linear']:.5f}"),
        criteria=(at_most(f"ReLU gap to the NTK prediction at width {widths[-1]} (mean over seeds)",
                          gaps["relu"][-1], tol),
                  at_most("|fitted exponent of the gap against width + 1/2|",
                          abs(exponent + 0.5), 0.3)),
        expected="FAIL" if name == "digits" else "PASS",
        expected_why=("on the 64-pixel digits (no MNIST beside the checkout) the early-phase gap "
                      "is about 4% at every width (5 seeds; the same per seed at every width), so "
                      "the m^-1/2 shrinkage is not seen there: a documented finding (README), not "
                      "a tuned check" if name == "digits" else ""),
        why=("the NTK of a width-m net moves by O(m^-1/2) while it trains, so the measured loss "
             "follows the prediction up to a gap (mean over seeds) that must shrink like m^-1/2 "
             f"(fitted exponent in [-0.8, -0.2]: two widths × a few seeds is a noisy estimate of -0.5) and be ≤ {tol:g} at the largest width. Linear "
             "nets follow it more closely (their NTK moves less). With η = 1/λmax the slowest "
             "non-null mode contracts by 1 − 1/κ_eff per step, so the smaller κ_eff of ReLU is the "
             "faster worst case; over a short horizon the loss also depends on how the initial "
             "residual falls on the eigenvectors, so the loss ratios are reported, not ranked"),
        details={"widths": list(widths), "relative_gap": gaps, "gap_exponent": exponent,
                 **{a: {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()}
                    for a, r in runs.items()}},
        figures=figs,
    )


# ------------------------------------------------------------------------------------------
# Claim 12: Prop 4.1, λmin ≤ 1 − cos φmin for the unit-diagonal NTK
# ------------------------------------------------------------------------------------------


