"""The bias-free experiments as library functions (``ntkcond.papers.zhang_saxe_latham.experiments``:
each ``<topic>_runs`` module, and ``figures.plot`` of their results). The script's
subcommands, which call them, are smoke-tested in test_experiments_run.py."""
import dataclasses

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ntkcond.papers.zhang_saxe_latham import experiments as ex  # noqa: E402
from ntkcond.papers.zhang_saxe_latham.experiments import symmetry_runs as sx  # noqa: E402
from ntkcond.papers.zhang_saxe_latham.figures import plot  # noqa: E402


def test_closed_form_result_is_deterministic_frozen_and_reports_progress():
    seen = []

    def progress(items):
        items = list(items)
        seen.extend(items)
        return items

    r = ex.closed_form(lrs=[0.05, 0.025], fast=True, progress=progress)
    assert isinstance(r, ex.ExperimentResult) and r.name == "closed_form"
    assert seen == [0.0, 0.5, 1.0]  # the fast slopes α, each handed to the progress bar
    # GD vs the exact discrete map u ← u(1 + ηc(s − u))²: the same recursion in another order,
    # ≤ 240 steps of round-off on u ≤ s = 3 (measured ≤ 1.2e-15 of s).
    err = {(e["alpha"], e["lr"]): e for e in r.summary["results"]}
    assert len(err) == 6 and max(e["max_rel_err_vs_discrete_map"] for e in err.values()) < 1e-11
    # GD vs the smooth closed form: an O(η) gap (0.03–0.11 of s here), so halving η halves it
    # (measured ratios 1.997–2.000; [1.8, 2.2] leaves room for the O(η²) term).
    for alpha in (0.0, 0.5, 1.0):
        ratio = (err[(alpha, 0.05)]["max_rel_err_vs_closed_form"]
                 / err[(alpha, 0.025)]["max_rel_err_vs_closed_form"])
        assert 1.8 < ratio < 2.2, (alpha, ratio)
    # Deterministic given the seed: equality compares name and summary (curves are arrays).
    assert ex.closed_form(lrs=[0.05, 0.025], fast=True) == r
    assert ex.closed_form(lrs=[0.05, 0.025], fast=True, seed=1) != r
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.name = "other"
    fig = plot(r)
    assert len(fig.axes) == 3
    plt.close(fig)


def test_symmetric_ntk_splits_into_odd_and_even_blocks():
    r = ex.symmetric_ntk(fast=True)
    n = r.summary["n"]
    assert n == 40
    rows = {(e["depth"], e["activation"]): e for e in r.summary["results"]}
    for depth in (1, 2, 3):
        linear, relu = rows[(depth, "linear")], rows[(depth, "relu")]
        # x and −x give opposite linear gradients: rank n/2, the even block A + B is exactly 0.
        assert linear["rank"] == n // 2 and linear["even_block_rank"] == 0
        assert linear["first_layer_pair_abs_cos_max"] == pytest.approx(1.0, abs=1e-12)
        # ReLU: σ'(u)σ'(−u) = 0, the first-layer gradients of x and −x are orthogonal.
        assert relu["rank"] == n and relu["even_block_rank"] == n // 2
        assert relu["first_layer_pair_abs_cos_max"] == 0.0
    # Leaky α at depth 1: E[σ'(u)σ'(−u)] / E[σ'(u)²] = α / ((1 + α²)/2) = 0.8 for α = 0.5.
    assert rows[(1, "leaky:0.5")]["first_layer_pair_abs_cos_max"] == pytest.approx(0.8, rel=1e-12, abs=0)
    # Width 512: exactly −α-scaled pairs, 0 for ReLU and −1 for the linear net.
    finite = r.summary["finite_width_first_layer_pair_cos"]
    assert finite["relu"] == {"min": 0.0, "max": 0.0}
    assert finite["linear"]["min"] == pytest.approx(-1.0, abs=1e-12)
    fig = plot(r)
    assert len(fig.axes) == 1
    plt.close(fig)


def test_large_init_reports_every_seed_and_their_spread():
    kw = dict(scales=[0.1, 0.5], lrs=[0.004, 0.6], fast=True)
    r = ex.large_init(seeds=3, **kw)
    assert r.summary["seeds"] == [0, 1, 2]
    g = r.summary["grids"]["mirrored"]
    E = np.array([[[np.inf if e is None else e for e in row] for row in s]
                  for s in g["error_per_seed"]])
    assert E.shape == (3, 2, 2)
    # The base seed's grid is the one-seed grid (the batch runs the same arithmetic, vmapped:
    # round-off, observed ~1e-16 relative).
    one = ex.large_init(seeds=1, **kw).summary["grids"]["mirrored"]["error_per_seed"][0]
    np.testing.assert_allclose(np.array(one, dtype=float)[np.isfinite(E[0])], E[0][np.isfinite(E[0])],
                               rtol=1e-9)
    # Median / min / max / fraction are those of the per-seed errors.
    assert np.array(g["collapse_fraction"]).tolist() == (E < ex.COLLAPSE_OK).mean(axis=0).tolist()
    assert g["error_min"][0] == pytest.approx(E[:, 0].min(axis=0).tolist(), rel=1e-15, abs=0)
    assert g["error_median"][0] == pytest.approx(np.median(E[:, 0], axis=0).tolist(), rel=1e-15, abs=0)
    # Small init, small lr: every seed collapses (E ~ 1e-3, an O(lr) gap); scale 0.5 at lr 0.6
    # oscillates or diverges for every seed: no cell there may report a collapse.
    assert [0.1, 0.004] in g["regions"]["collapse"]
    assert g["collapse_fraction"][1][1] == 0 and g["oscillating_fraction"][1][1] == 1
    cells = sum(len(v) for v in g["regions"].values())
    assert cells == 4
    fig = plot(r)
    assert len(fig.axes) == 10  # 4 heat maps + 4 colour bars + 2 curve panels
    plt.close(fig)


def test_orthogonal_generic_init_two_sign_group_curves_over_draws():
    r = ex.orthogonal(sizes=[2], fast=True, seeds=3)
    g = r.summary["generic"]
    assert g["seeds"] == [0, 1, 2] and [e["n"] for e in g["results"]] == [4, 8]
    for e in g["results"]:
        assert len(e["draws"]) == 3
        for d in e["draws"]:
            # Predicted from the init (eq. (4)): measured 0.6–3.5% of L(0) over these draws;
            # 6e-2 bounds it. The fitted curves can only do better (same family, fitted m0).
            assert d["sign_group_prediction_error"] < 6e-2
            assert d["sign_group_fitted_error"] <= d["sign_group_prediction_error"]
            # Large units end active only on points whose target sign matches their a_i.
            assert d["large_units_active_only_on_matching_sign"] == 1.0
            assert d["final_loss_over_initial"] < 1e-3
        spread = e["sign_group_prediction_error"]
        assert spread["min"] <= spread["median"] <= spread["max"] and spread["count"] == 3
    fig = plot(r)
    plt.close(fig)


def test_xor_time_to_fit_against_alpha_over_draws():
    r = ex.xor(fast=True, seeds=3)
    out, lr = r.summary, r.summary["lr"]
    assert out["seeds"] == [0, 1, 2]
    for name in ("d=2", "d=10 embedded"):
        rows = out["pair"][name]
        for a in ("0", "0.25", "0.5", "0.75", "0.9"):
            for d in rows[a]["draws"]:
                # GD vs the flow prediction of pair_nets: an O(lr) shift of the curve (observed
                # <= 3 steps, 0.06 in t at α = 0.9); 1e-3·t + 5·lr bounds it, while a rate off
                # by a factor (1−α) would miss by tens.
                for key in ("time_to_fit", "time_to_learn"):
                    assert abs(d[key] - d[f"{key}_predicted"]) <= 1e-3 * d[key] + 5 * lr
        # Every draw: slower as α grows, and the (1−α) rate leaves only the log correction
        # (measured scaled time 1.00–1.19 for α ≤ 0.9; the exact pair_nets value alike).
        t = np.array([[d["time_to_fit"] for d in rows[a]["draws"]]
                      for a in ("0", "0.25", "0.5", "0.75", "0.9")])
        assert np.all(np.diff(t, axis=0) > 0)
        assert 1.0 <= rows["0.9"]["scaled_time_to_fit"]["min"] <= rows["0.9"]["scaled_time_to_fit"]["max"] < 1.3
        assert rows["1"]["fitted_draws"] == 0 and rows["1"]["final_loss"]["min"] == 0.5
    gen = out["generic"]["d=2"]
    assert gen["0.9"]["fitted_draws"] == 3 and gen["1"]["fitted_draws"] == 0
    assert 1.0 < gen["0.9"]["scaled_time_to_learn"]["median"] < 1.4  # measured 1.23
    fig = plot(r)
    plt.close(fig)


def test_plateau_fit_recovers_a_planted_exponent_with_seed_prefactors():
    dys = np.array([0.2, 0.1, 0.05, 0.025, 0.0125])
    prefactor = np.array([10.0, 3.0, 25.0, 7.0, 14.0])[:, None]  # one per seed, like the runs
    for p_true in (1.0, 1.4):
        P = prefactor * (1 / dys)[None] ** p_true
        fit = sx._plateau_fit(dys, P, list(range(5)))
        # Exact power laws: the within-seed fit returns p to round-off, with zero spread.
        assert fit["p"] == pytest.approx(p_true, rel=1e-12, abs=0)
        assert fit["p_stderr"] < 1e-10
        assert fit["p_ci95_bootstrap_over_seeds"] == pytest.approx([p_true, p_true], rel=1e-10, abs=0)
        assert fit["local_p_median_between_neighbours"] == pytest.approx([p_true] * 4, rel=1e-12, abs=0)
    # The pooled fit (one intercept) is thrown off by the prefactors when seeds miss cells.
    P = prefactor * (1 / dys)[None]
    P[2, :2] = np.nan  # the seed with the largest prefactor lacks its two shortest plateaus
    fit = sx._plateau_fit(dys, P, list(range(5)))
    assert fit["p"] == pytest.approx(1.0, rel=1e-12, abs=0) and fit["points"] == 23
    assert abs(fit["pooled_one_intercept"]["p"] - 1.0) > 0.05
    # A log-corrected law T·Δy = prefactor_b·(5 + 2 log(1/Δy)): the fitted power is above 1,
    # and within seed b the slope of T·Δy on log(1/Δy) is 2·prefactor_b; with the same Δy in
    # every seed the common slope b is their mean.
    P = prefactor * (5 + 2 * np.log(1 / dys))[None] / dys[None]
    fit = sx._plateau_fit(dys, P, list(range(5)))
    assert fit["p"] > 1.05
    assert fit["log_corrected"]["b"] == pytest.approx(2 * prefactor.mean(), rel=1e-12, abs=0)


def test_symmetry_breaking_over_seeds_reports_every_plateau_and_the_fit():
    r = ex.symmetry_breaking(dys=[0.2, 0.1], seeds=2, fast=True)
    out = r.summary
    assert out["seeds"] == [0, 1] and out["data"].startswith("whitened")
    assert [len(e["per_seed"]) for e in out["results"]] == [2, 2]
    P = r.curves["plateaus"]
    assert P.shape == (2, 2) and np.all(P > 0)
    # Smaller Δy, longer plateau, in every seed (measured 74 → 212 and 107 → 315).
    assert np.all(P[:, 1] > 1.5 * P[:, 0])
    fit = out["fit"]["plateau ~ A * (1/dy)^p"]
    assert fit["points"] == 4 and fit["p_ci95_regression"][0] <= fit["p"] <= fit["p_ci95_regression"][1]
    fig = plot(r)
    plt.close(fig)


def test_deep_reports_the_minimum_stable_rank_along_training():
    r = ex.deep(layers=3)
    for name, net in r.summary["nets"].items():
        t, ranks = r.curves[name]
        for layer, per_snapshot in enumerate(ranks):
            assert net["stable_rank_min"][layer] == min(per_snapshot)
            assert net["stable_rank_min"][layer] <= min(net["stable_rank_init"][layer],
                                                        net["stable_rank_final"][layer])
            assert net["stable_rank_min_time"][layer] in t.tolist()
            assert net["stable_rank_min"][layer] >= 1.0 - 1e-12  # ‖W‖_F ≥ ‖W‖₂ (round-off)


@pytest.mark.parametrize("call, message", [
    (lambda: ex.equivalence(lr=-1.0), r"equivalence: expected positive numbers for lr"),
    (lambda: ex.equivalence(time=float("nan")), r"equivalence: expected positive numbers for time"),
    (lambda: ex.equivalence(dataset="mnist"), r"equivalence: expected dataset 'gaussian' or 'digits'"),
    (lambda: ex.closed_form(lrs=[]), r"closed_form: expected positive numbers for lrs"),
    (lambda: ex.symmetry_breaking(dys=[0.1, -0.1]), r"symmetry_breaking: expected positive numbers for dys"),
    (lambda: ex.symmetry_breaking(perturbation="odd"), r"symmetry_breaking: expected perturbation"),
    (lambda: ex.symmetry_breaking(seeds=0), r"symmetry_breaking: expected seeds as a whole number >= 1"),
    (lambda: ex.deep(layers=1), r"deep: expected layers >= 2"),
    (lambda: ex.orthogonal(sizes=[0]), r"orthogonal: expected data sizes in 1..64"),
    (lambda: ex.orthogonal(sizes=[65], data="digits"), r"orthogonal: expected data sizes in 1..64"),
    (lambda: ex.orthogonal(data="mnist"), r"orthogonal: expected data 'basis' or 'digits'"),
    (lambda: ex.orthogonal(sizes=[2], seeds=-1), r"orthogonal: expected seeds as a whole number"),
    (lambda: ex.xor(seeds=True), r"xor: expected seeds as a whole number >= 1, got True"),
    (lambda: ex.equivalence(lr=100.0), r"equivalence: expected lr with 1 <= time/lr .* got lr = 100.0"),
    (lambda: ex.equivalence(lr=1e-9), r"equivalence: expected lr with 1 <= time/lr and 2\*time/lr <= 1000000"),
    (lambda: ex.orthogonal(sizes=[100000]), r"orthogonal: expected data sizes <= 2048 .* 74.5 GiB"),
    (lambda: ex.orthogonal(sizes=[4, 4]), r"orthogonal: expected distinct data sizes, got \[4, 4\]"),
    (lambda: ex.large_init(scales=[0.1], lrs=[0.0]), r"large_init: expected positive numbers for lrs"),
    (lambda: ex.large_init(seeds=0), r"large_init: expected seeds as a whole number >= 1, got 0"),
    (lambda: ex.large_init(seeds=2.0), r"large_init: expected seeds as a whole number >= 1"),
    (lambda: plot(ex.ExperimentResult("nope", {}, {})), r"plot: expected one of"),
])
def test_bad_input_names_the_function(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_plot_rejects_what_is_not_a_result():
    with pytest.raises(TypeError, match="plot: expected an ExperimentResult, got dict"):
        plot({"name": "xor"})


def test_bias_breaking_exact_without_biases_and_broken_with_them():
    """``bias_runs.bias_breaking``: s_b = 0 is the bias-free equivalence (exact to round-off,
    ~1e-15 measured); a trained hidden bias breaks it by far more than round-off, more as s_b
    grows and more for ReLU than for slopes near linear."""
    res = ex.bias_breaking(b_stds=[0.0, 0.03, 0.1], time=4.0, fast=True)
    per = res.summary["per_alpha"]
    assert res.name == "bias_breaking" and res.summary["alphas"] == [0.0, 0.2, 0.4, 0.6, 0.8]
    assert res.summary["bias_free_max_loss_dev"] < 1e-12
    for a, v in per.items():
        rows = v["by_b_std"]
        assert rows["0"]["weight_dev"] < 1e-12
        assert rows["0.1"]["loss_dev"] > 1e-6 and rows["0.1"]["weight_dev"] > 1e-3, (a, rows)
        assert rows["0.1"]["weight_dev"] > rows["0.03"]["weight_dev"] > rows["0"]["weight_dev"]
    assert per["0"]["by_b_std"]["0.1"]["weight_dev"] > per["0.8"]["by_b_std"]["0.1"]["weight_dev"]
    with pytest.raises(ValueError, match="bias_breaking: expected b_stds >= 0"):
        ex.bias_breaking(b_stds=[-0.1])
    fig = plot(res)
    assert len(fig.axes) == 3
    plt.close(fig)
