"""The experiment on pairwise orthogonal inputs (Zhang, Saxe & Latham, arXiv 2406.12615):
``orthogonal`` trains ReLU nets on orthogonal points against independent Saxe nets, one per
group of points from ``orthogonal_init`` (``orthogonal_nets``) and, from a generic small init,
one per target sign (``sign_group_nets``). Returns an ``ExperimentResult``.

The theory it measures: ``nets.orthogonal_data``, ``nets.independent_inits``,
``nets.independent_nets`` and ``nets.silent_phase``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .... import datasets
from ..nets.biasfree import gaussian_init, network_apply
from ..nets.independent_inits import orthogonal_init
from ..nets.independent_nets import orthogonal_nets
from ..nets.orthogonal_data import max_abs_cosine, orthogonalize
from ..nets.silent_phase import sign_group_nets
from ..nets.training import train_network_batch, train_two_layer
from ._common import Progress, first_below, progress_callback, seed_list, spread
from .result import ExperimentResult

__all__ = ["orthogonal"]


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
    ``nets.independent_nets``: max |L − L_pred| / L(0) for gradient flow (O(lr): halving lr halves it)
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
        return _loss_error(dataclasses.replace(nets, m0=np.exp(log_m0)), r)

    start = np.log(np.maximum(nets.m0, 1e-300))
    best = minimize(err, start, method="Nelder-Mead",
                    options={"xatol": 1e-4, "fatol": 1e-7, "maxiter": 2000})
    # the prediction itself (not exp(log m₀), which rounds) is a candidate: the fit is never
    # worse than the prediction, exactly
    predicted = _loss_error(nets, r)
    if best.fun < predicted:
        return float(best.fun), np.exp(best.x)
    return predicted, np.asarray(nets.m0, dtype=np.float64)


def _loss_error(nets, r) -> float:
    """max_t |L(t) − L_pred(t)| / L(0) of run r against the sign-group curves ``nets``."""
    return float(np.max(np.abs(r.loss - nets.loss(r.time))) / r.loss[0])


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
            pred_err = _loss_error(nets, r)
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
            **{key: spread([e[key] for e in rows]) for key in (
                "per_point_prediction_error", "sign_group_prediction_error",
                "sign_group_fitted_error", "large_units_active_only_on_matching_sign")}})
    return out, runs
