"""Experiments on bias-free ReLU nets as independent linear nets, the conserved rank-one
structure, and collapse at large init and learning rate (Zhang, Saxe & Latham, arXiv
2406.12615), each returning an ``ExperimentResult`` (``biasfree_experiments``):

  ``orthogonal``   ReLU net on orthogonal inputs = independent Saxe nets, one per group of
                   points (``independent.orthogonal_nets``): loss vs Σ of their curves; from
                   a generic init, two nets, one per target sign (``sign_group_nets``).
  ``xor``          XOR from an even-mirrored pair init = independent linear nets of the even
                   part (``independent.pair_nets``); time to fit against α over seeds (rate
                   ∝ 1−α); from a generic init, the same times and feature alignment.
  ``rank_one``     W₁ = W₂ᵀrᵀ is conserved by gradient flow on whitened symmetric data with an
                   odd teacher (``conservation.track_rank_one``), broken ∝ lr by GD and by
                   planted asymmetries.
  ``large_init``   phase diagram (init scale × learning rate) of the collapse of the leaky-slope
                   curves after t → c·t (``collapse.slope_collapse``), over several seeds.

``biasfree_figures.plot`` draws any of them; ``scripts/biasfree_dynamics.py`` is the command
line. Deterministic given ``seed`` (experiments over several draws use seed, seed + 1, …,
``seeds`` of them); ``fast=True`` is the small configuration.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ... import datasets
from ._kit import (
    Progress,
    first_below,
    positive_values,
    progress_callback,
    seed_list,
    symmetric_gaussian,
    unit_vector,
)
from .biasfree import (
    gaussian_init,
    mirrored_init,
    network_apply,
    rank_one_init,
    symmetrize,
)
from .collapse import slope_collapse_batch
from .conservation import rank_one_breaking, rank_one_direction, track_rank_one
from .experiments import ALPHAS, ExperimentResult
from .independent import (
    feature_alignment,
    max_abs_cosine,
    orthogonal_init,
    orthogonal_nets,
    orthogonalize,
    pair_init,
    pair_nets,
    sign_group_nets,
    xor_data,
)
from .training import train_network_batch, train_two_layer

__all__ = ["COLLAPSE_OK", "XOR_FIT", "XOR_LEARN", "orthogonal", "xor", "rank_one", "large_init"]

COLLAPSE_OK = 0.05  # collapse error below 5% of the target energy: "the curves collapse"


# ----------------------------------------------------------------------------- orthogonal


def _orthogonal_set(n: int, data: str, rng, groups=None):
    """n pairwise orthogonal inputs with norms ∝ n (so r = ρ/n = O(1)) and targets ±U(0.5, 2).

    basis: scaled standard basis vectors in R^{n+2}; digits: the first n digits images,
    orthogonalised (Löwdin) and rescaled. Points of one group share a norm and a target sign.
    """
    groups = groups or [[i] for i in range(n)]
    norm, sign = np.empty(n), np.empty(n)
    for g in groups:
        norm[g] = n * rng.uniform(0.5, 1.5) / 2
        sign[g] = rng.choice([-1.0, 1.0])
    if data == "digits":
        x = orthogonalize(datasets.load("digits").x[:n])
    else:
        x = np.eye(n, n + 2)
    x = x / np.linalg.norm(x, axis=1, keepdims=True) * norm[:, None]
    return x, sign * rng.uniform(0.5, 2.0, n)


def _group_outputs(result, x, y, groups, alpha):
    """(G, S+1) output strengths m_G = <f_G, y_G>/||y_G|| at the snapshots."""
    y = y.reshape(len(x), -1)
    out = []
    for i in range(len(result.snapshot_steps)):
        f = network_apply([s[i] for s in result.snapshots], x, alpha)
        out.append([np.sum(f[list(g)] * y[list(g)]) / np.linalg.norm(y[list(g)]) for g in groups])
    return np.array(out).T


def orthogonal(*, sizes=None, data: str = "basis", seeds=None, fast: bool = False,
               seed: int = 0, progress: Progress | None = None) -> ExperimentResult:
    """A ReLU net trained on n orthogonal points (``sizes``, default 2, 4, 8, 16; fast: 2, 4,
    8; plus 4 points in 2 groups) against Σ_G of independent Saxe curves, eq. (2) of
    ``independent``: max |L − L_pred| / L(0) for gradient flow (O(lr): halving lr halves it)
    and for the exact discrete map (round-off), and the predicted vs measured plateau ends.
    ``data``: "basis" (scaled basis vectors) or "digits" (orthogonalised images, n ≤ 64).

    Then a *generic* init (``gaussian_init`` width 8n, std 1e-3) on n scaled basis vectors
    (n = 4, 8, 16; fast: 4, 8) with one norm per target sign, over ``seeds`` draws (default 5,
    fast 3): the error of the per-point prediction (``orthogonal_nets``, undefined when some
    m₀ ≤ 0), of the two sign-group Saxe curves predicted from the init (``sign_group_nets``,
    eq. (4)) and of the best two Saxe curves (strengths fitted to the run, minimax), and the
    fraction of large units that end active only on points whose target sign matches their
    output weight.
    """
    if sizes is None:
        sizes = (2, 4, 8) if fast else (2, 4, 8, 16)
    sizes = [int(v) for v in np.atleast_1d(sizes)]
    if data not in ("basis", "digits"):
        raise ValueError(f"orthogonal: expected data 'basis' or 'digits', got {data!r}")
    if not sizes or min(sizes) < 1 or (data == "digits" and max(sizes) > 64):
        raise ValueError(f"orthogonal: expected data sizes in 1..64, got {sizes!r}")
    draws = seed_list("orthogonal", seed, (3 if fast else 5) if seeds is None else seeds)
    bar = progress_callback(progress)
    rng = np.random.default_rng(seed)
    lr = 0.01
    configs = [(n, None) for n in sizes] + [(4, [[0, 1], [2, 3]])]
    out = {"data": data, "lr": lr, "init": "orthogonal_init, 2 units/group, scale 1e-3",
           "tolerance_note": "flow error is O(lr): halving lr halves it; discrete-map error is round-off",
           "results": []}
    runs = []
    for n, groups in bar(configs):
        x, y = _orthogonal_set(n, data, rng, groups)
        W1, W2 = orthogonal_init(x, y, groups=groups, units=2, scale=1e-3, seed=seed)
        nets = orthogonal_nets(x, y, W1, W2, groups=groups)
        T = 1.3 * float(np.max(nets.learning_times(0.99)))
        entry = {"n": n, "groups": [list(g) for g in nets.groups],
                 "max_abs_cos": max_abs_cosine(x), "time": T}
        for eta in (lr, lr / 2):
            steps = int(np.ceil(T / eta / 200)) * 200
            r = train_two_layer(x, y, W1, W2, activation=0.0, lr=eta, steps=steps,
                                snapshot_every=steps // 200)
            pred, disc = nets.loss(r.time), nets.discrete_loss(steps, eta)
            key = "lr" if eta == lr else "lr/2"
            entry[f"max_rel_err_vs_flow_prediction[{key}]"] = float(np.max(np.abs(r.loss - pred)) / r.loss[0])
            entry[f"max_rel_err_vs_discrete_map[{key}]"] = float(np.max(np.abs(r.loss - disc)) / r.loss[0])
            if eta == lr:
                m = _group_outputs(r, x, y, nets.groups, 0.0)
                ts = r.time[r.snapshot_steps]
                measured = [first_below(ts, -m_g, -0.5 * Y) for m_g, Y in zip(m, nets.target)]
                entry["plateau_end_predicted"] = nets.learning_times(0.5).tolist()
                entry["plateau_end_measured"] = measured
                entry["plateau_end_max_abs_diff"] = float(np.max(np.abs(
                    np.array(measured) - nets.learning_times(0.5))))
                entry["snapshot_resolution"] = float(ts[1] - ts[0])
                runs.append((entry, r, nets))
        out["results"].append(entry)
    generic, generic_runs = _orthogonal_generic((4, 8) if fast else (4, 8, 16), draws, bar)
    out["generic"] = generic
    return ExperimentResult("orthogonal", out, {"runs": runs, "generic": generic_runs})


def _sign_group_set(n: int, rng):
    """n scaled basis vectors of R^{n+2}, targets ±U(0.5, 2) with both signs, one norm per sign
    (n·U(0.5, 1.5)/2, so r = ρ/n = O(1))."""
    sign = rng.choice([-1.0, 1.0], n)
    if abs(sign.sum()) == n:
        sign[0] = -sign[0]
    rho = {1.0: n * rng.uniform(0.5, 1.5) / 2, -1.0: n * rng.uniform(0.5, 1.5) / 2}
    x = np.eye(n, n + 2) * np.array([rho[v] for v in sign])[:, None]
    return x, sign * rng.uniform(0.5, 2.0, n)


def _fitted_sign_groups(nets, r):
    """The best two Saxe curves for run r: m₀ per group fitted (minimax over the run, Nelder–Mead
    in log m₀ from the predicted values); returns (max |L − L_fit| / L(0), fitted m₀)."""
    from scipy.optimize import minimize

    def err(log_m0):
        fit = dataclasses.replace(nets, m0=np.exp(log_m0))
        return float(np.max(np.abs(r.loss - fit.loss(r.time))) / r.loss[0])

    start = np.log(np.maximum(nets.m0, 1e-300))
    best = minimize(err, start, method="Nelder-Mead",
                    options={"xatol": 1e-4, "fatol": 1e-7, "maxiter": 2000})
    return float(min(best.fun, err(start))), np.exp(best.x if best.fun <= err(start) else start)


def _spread(values):
    v = np.array([np.nan if e is None else e for e in values], dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return {"median": None, "min": None, "max": None, "count": 0}
    return {"median": float(np.median(v)), "min": float(np.min(v)), "max": float(np.max(v)),
            "count": int(v.size)}


def _orthogonal_generic(sizes, draws, bar):
    """The generic-init part of ``orthogonal``: per n, every draw simulated in one batch."""
    lr, scale = 0.01, 1e-3
    out = {"init": f"gaussian_init width 8n, std {scale:g}", "lr": lr, "seeds": draws,
           "data": "n scaled basis vectors of R^(n+2), one norm per target sign, "
                   "targets +-U(0.5, 2) with both signs",
           "prediction": "sign_group_nets: two Saxe curves (y > 0, y < 0), m0 from the silent "
                         "phase, eq. (4) of independent",
           "errors": "max_t |L - L_pred| / L(0)", "results": []}
    runs = []
    for n in bar(list(sizes)):
        problems = []
        for sd in draws:
            x, y = _sign_group_set(n, np.random.default_rng(1000 + sd))
            W1, W2 = gaussian_init([n + 2, 8 * n, 1], scale=scale, seed=sd)
            problems.append((x, y, W1, W2, sign_group_nets(x, y, W1, W2)))
        ends = [t for *_, nets in problems for t in nets.learning_times(0.99) if np.isfinite(t)]
        steps = int(np.ceil(1.3 * max(ends) / lr / 100)) * 100
        results = train_network_batch(np.stack([p[0] for p in problems]),
                                      np.stack([p[1] for p in problems]),
                                      [np.stack([p[2] for p in problems]),
                                       np.stack([p[3] for p in problems])],
                                      activation=0.0, lr=lr, steps=steps)
        rows = []
        for sd, (x, y, W1, W2, nets), r in zip(draws, problems, results):
            try:
                per_point = orthogonal_nets(x, y, W1, W2)
                per_point_err = float(np.max(np.abs(r.loss - per_point.loss(r.time))) / r.loss[0])
            except ValueError:  # some m0 <= 0: the per-point prediction is undefined
                per_point_err = None
            pred_err = float(np.max(np.abs(r.loss - nets.loss(r.time))) / r.loss[0])
            fit_err, fit_m0 = _fitted_sign_groups(nets, r)
            V1, V2 = r.weights
            size = np.linalg.norm(V1, axis=1) * np.abs(V2[0])
            big = size >= 0.1 * size.max()
            on = (V1 @ x.T) > 0  # (h, n) points each unit is active on at the end
            matched = [bool(np.any(on[i]) and np.all(y[on[i]] * V2[0, i] > 0))
                       for i in np.flatnonzero(big)]
            rows.append({"seed": sd, "sizes_of_sign_groups": [len(g) for g in nets.groups],
                         "per_point_prediction_error": per_point_err,
                         "sign_group_prediction_error": pred_err,
                         "sign_group_fitted_error": fit_err,
                         "m0_predicted": nets.m0.tolist(), "m0_fitted": fit_m0.tolist(),
                         "final_loss_over_initial": float(r.loss[-1] / r.loss[0]),
                         "large_units": int(np.sum(big)),
                         "large_units_active_only_on_matching_sign": float(np.mean(matched))})
            runs.append((n, sd, r, nets))
        out["results"].append({
            "n": n, "time": float(steps * lr), "draws": rows,
            "per_point_prediction_undefined": sum(e["per_point_prediction_error"] is None for e in rows),
            **{key: _spread([e[key] for e in rows]) for key in (
                "per_point_prediction_error", "sign_group_prediction_error",
                "sign_group_fitted_error", "large_units_active_only_on_matching_sign")}})
    return out, runs


# ----------------------------------------------------------------------------- XOR


XOR_FIT = 1e-3  # time to fit: first t at which the loss is below XOR_FIT·L(0)
XOR_LEARN = 0.1  # time to learn: first t at which the loss is below XOR_LEARN·L(0)


def xor(*, seeds=None, fast: bool = False, seed: int = 0,
        progress: Progress | None = None) -> ExperimentResult:
    """XOR learned only through the even part ((1−α)/2)·W₂|W₁x|: the time to fit (first t with
    L < ``XOR_FIT``·L(0)) and to learn (L < ``XOR_LEARN``·L(0)) against α ∈ {0, .25, .5, .75,
    .9, 1}, over ``seeds`` draws (default 5, fast 3), trained to t = 1000 at lr 0.01 (fast:
    t = 400 at lr 0.02).

    From ``pair_init`` (d = 2, and embedded in d = 10; each draw its own unit scales and
    embedding) the run is compared with Σ of independent linear nets of the even part, eq. (3)
    of ``independent`` (``pair_nets``: rate ∝ 1−α; flow and exact discrete map) and its
    predicted time to fit. From a generic small init (``gaussian_init`` width 20, std 1e-2;
    also noisy d = 10 with 5 copies) there is no closed form: the time to fit is reported with
    (1−α)·t_fit(α)/t_fit(0), which the (1−α) rate makes ≈ 1 (plus a log correction: the even
    part's starting strength is also ∝ 1−α; the pair init's ratio is its exact value), and the
    alignment of the learned rows of W₁ with ±(e₁ ± e₂) (``feature_alignment``). At α = 1 the
    even part vanishes and the loss stays at L(0) = ½.
    """
    bar = progress_callback(progress)
    alphas = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
    draws = seed_list("xor", seed, (3 if fast else 5) if seeds is None else seeds)
    lr, T = (0.02, 400.0) if fast else (0.01, 1000.0)
    steps = int(round(T / lr))
    out = {"lr": lr, "time": T, "seeds": draws, "alphas": list(alphas),
           "time_to_fit": f"first t with L(t) < {XOR_FIT:g} L(0) (null: never within the run)",
           "time_to_learn": f"first t with L(t) < {XOR_LEARN:g} L(0) (the noisy set fits its "
                            "last 1e-3 slowly)",
           "init_pair": "pair_init, 2 pairs/direction, scale 1e-2",
           "init_generic": "gaussian_init width 20, scale 1e-2", "pair": {}, "generic": {}}
    curves = {"alphas": alphas, "exact": {}}

    def fit_time(t, loss, level=XOR_FIT):
        v = first_below(t, loss, level * loss[0])
        return None if not np.isfinite(v) else v

    def batch(problems, alpha):
        return train_network_batch(np.stack([p[0] for p in problems]),
                                   np.stack([p[1] for p in problems]),
                                   [np.stack([p[2][i] for p in problems]) for i in range(2)],
                                   activation=alpha, lr=lr, steps=steps)

    for name, d in (("d=2", 2), ("d=10 embedded", 10)):
        problems = []
        for sd in draws:
            x, y = xor_data(d=d, seed=sd)
            problems.append((x, y, pair_init(x, y, pairs=2, scale=1e-2, seed=sd)))
        rows = {}
        for alpha in bar(alphas):
            runs = batch(problems, alpha)
            per = []
            for (x, y, W), r in zip(problems, runs):
                nets = pair_nets(x, y, *W, activation=alpha)
                pred = nets.loss(r.time)
                per.append({
                    "time_to_fit": fit_time(r.time, r.loss),
                    "time_to_fit_predicted": fit_time(r.time, pred),
                    "time_to_learn": fit_time(r.time, r.loss, XOR_LEARN),
                    "time_to_learn_predicted": fit_time(r.time, pred, XOR_LEARN),
                    "max_rel_err_vs_flow_prediction": float(np.max(np.abs(r.loss - pred)) / r.loss[0]),
                    "max_rel_err_vs_discrete_map": float(np.max(np.abs(
                        r.loss - nets.discrete_loss(steps, lr))) / r.loss[0]),
                    "final_loss": float(r.loss[-1])})
            if name == "d=2":
                x, y, W = problems[0]
                curves["exact"][alpha] = (runs[0], pair_nets(x, y, *W, activation=alpha))
            rows[f"{alpha:g}"] = _xor_row(per, alpha)
        _scaled(rows, alphas)
        out["pair"][name] = rows
    feats = {}
    for name, kw in (("d=2", dict(d=2)), ("d=10 noisy x5", dict(d=10, noise=0.1, copies=5))):
        problems = []
        for sd in draws:
            x, y = xor_data(seed=sd, **kw)
            problems.append((x, y, gaussian_init([x.shape[1], 20, 1], scale=1e-2, seed=sd)))
        rows = {}
        for alpha in bar(alphas):
            runs = batch(problems, alpha)
            per = []
            for sd, (x, y, W), r in zip(draws, problems, runs):
                dirs = xor_data(d=kw["d"], seed=sd)[0][:2]
                W1, W2 = r.weights
                al = feature_alignment(W1, dirs)
                norm = np.linalg.norm(W1, axis=1)
                per.append({"time_to_fit": fit_time(r.time, r.loss),
                            "time_to_learn": fit_time(r.time, r.loss, XOR_LEARN),
                            "final_loss": float(r.loss[-1]),
                            "alignment_norm_weighted": float(np.sum(al * norm) / np.sum(norm))})
                if alpha == 0.0 and sd == draws[0]:
                    feats[name] = (W, W1, x, dirs)
            rows[f"{alpha:g}"] = _xor_row(per, alpha)
        _scaled(rows, alphas)
        out["generic"][name] = rows
    curves["features"] = feats
    return ExperimentResult("xor", out, curves)


def _xor_row(per, alpha):
    """Median / min / max over draws of the per-draw XOR numbers, and the draws themselves."""
    row = {"alpha": alpha, "draws": per}
    for key in per[0]:
        row[key] = _spread([p[key] for p in per])
    row["fitted_draws"] = sum(p["time_to_fit"] is not None for p in per)
    return row


def _scaled(rows, alphas):
    """(1−α)·t(α)/t(0) per draw for every time key (the (1−α) rate makes it ≈ 1 up to a log)."""
    keys = [k for k in rows["0"]["draws"][0] if k.startswith("time_to")]
    for alpha in alphas:
        if alpha == 1.0:
            continue
        row = rows[f"{alpha:g}"]
        for key in keys:
            row[f"scaled_{key}"] = _spread([
                None if p[key] is None or p0[key] is None else (1 - alpha) * p[key] / p0[key]
                for p, p0 in zip(row["draws"], rows["0"]["draws"])])


# ----------------------------------------------------------------------------- rank one


def rank_one(*, fast: bool = False, seed: int = 0,
             progress: Progress | None = None) -> ExperimentResult:
    """Deviation ‖W₁ − W₂ᵀrᵀ‖/‖W₁‖ (best r) along training from ``rank_one_init`` (h = 8,
    std 0.1, mixed signs of W₂) on whitened symmetric Gaussian data (n = 40, d = 5) with odd
    teacher y = 2v·x: RK4 gradient flow (α = 0, 0.5) keeps it at round-off, GD breaks it ∝ lr
    (log-log slope reported), and four planted breaks (init, asymmetric data, even target,
    non-whitened inputs) move it. Time t ≤ 6.
    """
    bar = progress_callback(progress)
    d, h, T = 5, 8, 6.0
    x0, x = symmetric_gaussian(20, d, seed)
    v = unit_vector(d, seed)
    y = 2.0 * x @ v
    W1, W2 = rank_one_init(d, h, scale=0.1, seed=1)
    if np.all(W2 > 0) or np.all(W2 < 0):
        raise ValueError("rank_one: expected mixed signs in W2 for this seed, got one sign")
    out = {"setting": "whitened symmetric Gaussian (n=40, d=5), odd teacher y = 2 v.x, "
                      "rank_one_init h=8 scale 0.1 (mixed signs)", "time": T, "cases": {}}
    traces = {}

    def case(name, xx, yy, A, B, alpha, lr, method):
        steps = int(round(T / lr))
        every = max(1, steps // 100)
        steps = every * (steps // every)
        tr = track_rank_one(xx, yy, A, B, activation=alpha, lr=lr, steps=steps,
                            snapshot_every=every, method=method)
        out["cases"][name] = {"alpha": alpha, "lr": lr, "method": method,
                              "initial_deviation": float(tr.deviation[0]),
                              "max_deviation": tr.max_deviation,
                              "final_deviation": float(tr.deviation[-1]),
                              "max_balance_deviation": float(np.max(tr.balance)),
                              "r_rotation_deg": tr.rotation_deg,
                              "breaking_term_at_init": rank_one_breaking(xx, yy, A, B, activation=alpha),
                              "final_loss_over_initial": float(tr.result.loss[-1] / tr.result.loss[0])}
        traces[name] = tr

    jobs = []
    dts = (0.02, 0.01) if fast else (0.02, 0.01, 0.005)
    for alpha in (0.0, 0.5):
        for dt in dts:
            jobs.append((f"flow rk4 dt={dt:g} α={alpha:g}", x, y, W1, W2, alpha, dt, "rk4"))
    lrs = (0.1, 0.03, 0.01) if fast else (0.1, 0.03, 0.01, 0.003)
    for lr in lrs:
        jobs.append((f"GD lr={lr:g} α=0", x, y, W1, W2, 0.0, lr, "gd"))
    P1, P2 = rank_one_init(d, h, scale=0.1, seed=1)
    P2 = np.abs(P2)
    jobs.append(("GD lr=0.1 α=0, all a_i > 0", x, y, P2.T @ rank_one_direction(P1, P2)[None], P2,
                 0.0, 0.1, "gd"))
    rng = np.random.default_rng(seed)
    xa = x.copy()
    xa[-1] += 0.1
    Wb = W1 + 1e-6 * rng.standard_normal(W1.shape)
    xs, _ = symmetrize(x0 * np.linspace(0.5, 1.5, d))
    jobs += [("planted: init broken by 1e-6", x, y, Wb, W2, 0.0, 0.01, "rk4"),
             ("planted: asymmetric data (one x shifted 0.1)", xa, y, W1, W2, 0.0, 0.01, "rk4"),
             ("planted: even target part (y + 0.5)", x, y + 0.5, W1, W2, 0.0, 0.01, "rk4"),
             ("planted: non-whitened inputs", xs, 2.0 * xs @ v, W1, W2, 0.0, 0.01, "rk4")]
    for job in bar(jobs):
        case(*job)
    gd = [out["cases"][f"GD lr={lr:g} α=0"]["max_deviation"] for lr in lrs]
    out["gd_deviation_vs_lr_loglog_slope"] = float(np.polyfit(np.log(lrs), np.log(gd), 1)[0])
    return ExperimentResult("rank_one", out, {"traces": traces, "dts": dts, "lrs": lrs, "gd": gd})


# ----------------------------------------------------------------------------- large init


def _finite_or_none(a):
    return [[None if not np.isfinite(e) else float(e) for e in row] for row in np.asarray(a)]


def large_init(*, scales=None, lrs=None, seeds=None, fast: bool = False, seed: int = 0,
               progress: Progress | None = None) -> ExperimentResult:
    """Phase diagram of the collapse error E (``collapse.slope_collapse``, eq. (1)) over init
    ``scales`` (default 0.001, 0.01, 0.1, 0.3, 0.5, 1; fast: 0.001, 0.1, 0.5) × learning rates
    ``lrs`` (default 0.004, 0.02, 0.1, 0.2, 0.4, 0.6, 1; fast: 0.004, 0.1, 0.6), for a mirrored
    and a Gaussian init (width 8) on whitened symmetric Gaussian data (n = 128, fast 64; d = 8,
    teacher s = 1, rescaled time T = 10), over ``seeds`` draws (default 8, fast 3: seeds
    seed, seed + 1, …; each draws its own data, teacher direction and init).

    Per cell: E of every draw, its median, min and max, and the fractions of draws that
    collapse (E < ``COLLAPSE_OK``), oscillate and diverge. Cells are "collapse" (every draw),
    "collapse_some_seeds", "no_collapse_oscillating" (no draw collapses, some oscillate or
    diverge), "no_collapse_smooth" or "diverged" (every draw).
    """
    if scales is None:
        scales = (0.001, 0.1, 0.5) if fast else (0.001, 0.01, 0.1, 0.3, 0.5, 1)
    if lrs is None:
        lrs = (0.004, 0.1, 0.6) if fast else (0.004, 0.02, 0.1, 0.2, 0.4, 0.6, 1)
    scales, lrs = positive_values("large_init", "scales", scales), positive_values("large_init", "lrs", lrs)
    draws = seed_list("large_init", seed, (3 if fast else 8) if seeds is None else seeds)
    bar = progress_callback(progress)
    d, s, T = 8, 1.0, 10.0
    data = []
    for sd in draws:
        x0, _ = symmetric_gaussian(32 if fast else 64, d, sd)
        data.append(symmetrize(x0, s * x0 @ unit_vector(d, sd)))
    xs, ys = np.stack([a for a, _ in data]), np.stack([b for _, b in data])
    out = {"setting": f"whitened symmetric Gaussian n={xs.shape[1]}, d={d}, teacher s={s}, "
                      f"width 8, alphas {list(ALPHAS)}, time T={T} (rescaled); each seed draws "
                      "its own data, teacher direction and init",
           "error_definition": "max over alpha and t<=T of |L_alpha(t/c) - L_linear(t)| / L_linear(0) "
                               "(error_vs_target: the same / (1/2n) sum y^2)",
           "collapse_threshold": COLLAPSE_OK, "scales": scales, "lrs": lrs, "seeds": draws,
           "grids": {}}
    examples = {}
    for init in ("mirrored", "gaussian"):
        shape = (len(draws), len(scales), len(lrs))
        err, err_y = np.full(shape, np.nan), np.full(shape, np.nan)
        osc, div = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        for i, scale in enumerate(bar(scales)):
            if init == "mirrored":
                inits = [mirrored_init(d, 4, scale=scale, seed=sd) for sd in draws]
            else:
                inits = [gaussian_init([d, 8, 1], scale=scale, seed=sd) for sd in draws]
            W1s, W2s = np.stack([w[0] for w in inits]), np.stack([w[1] for w in inits])
            for j, lr in enumerate(lrs):
                cols = slope_collapse_batch(xs, ys, W1s, W2s, alphas=ALPHAS, lr=lr, time=T)
                for b, col in enumerate(cols):
                    err[b, i, j], osc[b, i, j], div[b, i, j] = (col.max_error, any(col.oscillating),
                                                                any(col.diverged))
                    err_y[b, i, j] = float(np.max(col.errors_vs_target))
                if init == "mirrored":
                    examples[(scale, lr)] = cols[0]
        collapsed = err < COLLAPSE_OK
        frac = collapsed.mean(axis=0)
        regions = {"collapse": [], "collapse_some_seeds": [], "no_collapse_oscillating": [],
                   "no_collapse_smooth": [], "diverged": []}
        for i, scale in enumerate(scales):
            for j, lr in enumerate(lrs):
                cell = [scale, lr]
                if frac[i, j] == 1:
                    regions["collapse"].append(cell)
                elif frac[i, j] > 0:
                    regions["collapse_some_seeds"].append(cell)
                elif np.all(div[:, i, j]):
                    regions["diverged"].append(cell)
                elif np.any(osc[:, i, j]):
                    regions["no_collapse_oscillating"].append(cell)
                else:
                    regions["no_collapse_smooth"].append(cell)
        out["grids"][init] = {
            "error_median": _finite_or_none(np.median(err, axis=0)),
            "error_min": _finite_or_none(np.min(err, axis=0)),
            "error_max": _finite_or_none(np.max(err, axis=0)),
            "error_vs_target_median": _finite_or_none(np.median(err_y, axis=0)),
            "collapse_fraction": frac.tolist(),
            "oscillating_fraction": osc.mean(axis=0).tolist(),
            "diverged_fraction": div.mean(axis=0).tolist(),
            "error_per_seed": [_finite_or_none(e) for e in err],
            "regions": regions}
    return ExperimentResult("large_init", out, {"examples": examples})
