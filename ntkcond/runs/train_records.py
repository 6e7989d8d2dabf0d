"""The records of ``runs.train_vs_depth``, one per depth × activation × width: the regression
targets (``make_targets``), the condition number the initial residual sees
(``target_condition_number``), a trained finite net measured beside its initial NTK's
prediction (``finite_record``), and the infinite-width NTK's prediction (``infinite_record``).
The fields are listed in ``runs.train_vs_depth``'s docstring.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._core.x64 import x64
from ..optimization import ntk_gd_loss, steps_to_loss
from ..spectrum import conditioning
from .gradient_descent import train_to_loss

__all__ = ["make_targets", "target_condition_number", "finite_record", "infinite_record"]


def make_targets(labels, target: str = "lt5", *, center: bool = True) -> np.ndarray:
    """Regression targets (n,) float64 from integer class labels (n,).

    ``target``: "lt5" yᵢ = +1 if labelᵢ < 5 else −1 (MNIST digits 0–4 vs 5–9; CIFAR-10 classes
    0–4 vs 5–9); "even" +1 for even labels; "class:K" +1 for label K, −1 for the rest.
    ``center``: subtract the mean, so Σᵢ yᵢ = 0. Which eigendirections of the NTK the residual
    excites depends on this: the NTK of real images has a top eigenvector close to the
    constant vector (MNIST, n = 256: |cos| = 0.998 for ReLU and linear nets alike), and an
    uncentred target puts its mean, n·ȳ² of ‖y‖², there, where one step at η = 1/λmax removes
    it (MNIST "class:0": 70% of ‖y‖²; centred "lt5": 0% on the top eigenvector, 31% on the
    top ten).
    """
    where = "make_targets"
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.size < 2 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(f"{where}: expected labels as a 1-D integer array of n >= 2 entries, got "
                         f"dtype {lab.dtype} and shape {lab.shape}")
    if target == "lt5":
        pos = lab < 5
    elif target == "even":
        pos = lab % 2 == 0
    elif isinstance(target, str) and target.startswith("class:") and target[6:].strip().isdigit():
        pos = lab == int(target[6:])
    else:
        raise ValueError(f"{where}: expected target 'lt5', 'even' or 'class:K' (K an integer), "
                         f"got {target!r}")
    if pos.all() or not pos.any():
        raise ValueError(f"{where}: target {target!r} gives the same sign to all {lab.size} "
                         f"labels of the batch (labels {sorted(set(lab.tolist()))[:10]}); "
                         "gaussian data have no labels")
    y = np.where(pos, 1.0, -1.0)
    return y - y.mean() if center else y


def target_condition_number(K, r0, rel_target: float) -> float:
    """κ_target = λ₁/λ_k: the condition number the residual r₀ (n,) sees at relative loss ε.

    With K's eigenvalues in descending order λ₁ ≥ … ≥ λₙ, cᵢ = (uᵢᵀr₀)² and tails
    S_k = Σ_{i ≥ k} cᵢ, k is the largest index with S_k > ε·S₁: the directions below λ_k carry
    less than ε of the loss together and may be left unfitted, the direction of λ_k may not.
    The slowest mode gradient descent has to contract is therefore λ_k's, with factor
    1 − λ_k/λ₁ per step at η = 1/λ₁, and ``steps_to_loss`` ≥ ⌈ln(S_k/(ε S₁)) / (−2 ln(1 − 1/κ_target))⌉.
    κ_target ≤ κ_eff; it is ∞ when λ_k is at or below ``conditioning``'s cutoff (then
    ``steps_to_loss`` is ∞ too), and 1 when ε ≥ 1 or r₀ = 0.
    """
    cond = conditioning(K)
    r0 = np.asarray(r0, dtype=np.float64)
    K64 = np.asarray(K, dtype=np.float64)
    # eigh only for the eigenvectors; λ_k is read off ``conditioning``'s own eigenvalues (the
    # same ascending order), so κ_target ≤ κ_eff holds exactly, not only up to the rounding by
    # which two eigensolvers differ
    _, U = np.linalg.eigh(0.5 * (K64 + K64.T))
    c = (U.T @ r0)[::-1] ** 2  # descending eigenvalue order
    tails = np.cumsum(c[::-1])[::-1]  # tails[k] = Σ_{i ≥ k} c_i
    need = np.nonzero(tails > rel_target * tails[0])[0]
    if need.size == 0:
        return 1.0
    lam_k = float(np.asarray(cond.eigenvalues)[::-1][need[-1]])
    return math.inf if lam_k <= cond.cutoff else float(cond.lambda_max / lam_k)


def _none_if_inf(v):
    return None if v is None or math.isinf(v) else v


def _spectrum_fields(K, r0, rel_target) -> dict:
    cond = conditioning(K)
    return {"lr": 1.0 / cond.lambda_max, "lambda_max": cond.lambda_max,
            "lambda_min_nonzero": cond.lambda_min_nonzero, "rank": cond.rank,
            "kappa_eff": cond.kappa_eff,
            "kappa_target": _none_if_inf(target_condition_number(K, r0, rel_target))}


def dead_net_fields(f0, y) -> dict:
    """The fields of a net that is dead at initialisation: its empirical NTK is the zero
    matrix (for a bias-free ReLU net of small width, every unit of some hidden layer is
    inactive on every input), so its gradient is zero and gradient descent never moves it
    (``dead`` True, nothing reached, no κ; loss stays loss₀ = ½‖f₀ − y‖²)."""
    r0 = np.asarray(f0, np.float64).reshape(-1) - np.asarray(y, np.float64)
    return {"dead": True, "lr": None, "lambda_max": 0.0, "lambda_min_nonzero": None, "rank": 0,
            "kappa_eff": None, "kappa_target": None, "loss0": 0.5 * float(r0 @ r0),
            "steps": None, "reached": False, "diverged": False, "steps_run": 0,
            "rel_loss_at_stop": 1.0, "predicted_steps": None, "predicted_finite": False,
            "predicted_rel_loss_at_stop": 1.0, "ntk_drift": None, "kappa_eff_end": None,
            "lambda_max_end": 0.0}


def _predicted_rel_loss(K, y, lr, steps, f0=None) -> float:
    curve = ntk_gd_loss(K, y, lr=lr, steps=int(steps), f0=f0)
    return float(curve[-1] / curve[0])


def infinite_record(x, y, *, depth: int, net, rel_target: float, max_steps: int,
                    meta=None) -> dict:
    """The width-"inf" record: the prediction of the infinite-width NTK (η = 1/λmax, f₀ = 0)
    of the net ``net`` (``ntkcond.network.MLPFamily``: ``infinite_ntk`` on rows x (n, d); or
    ``CNNFamily``: its kernel on NHWC images x, ``sweep_images_of``); its options are in the
    record, d is the number of inputs per example (H·W·C for images)."""
    from ..infinite.kernels import infinite_ntk, sweep_images_of

    start = time.perf_counter()
    if net.takes_images:
        K = next(iter(sweep_images_of(x, net, [depth], where="infinite_record",
                                      angles=False))).ntk
    else:
        K = infinite_ntk(x, depth=depth, activation=net)
    rec = dict(meta or {}, n=int(x.shape[0]), d=_inputs(x), depth=int(depth),
               activation=net.act.name, width="inf", seed=None, **net.options())
    rec.update(_spectrum_fields(K, -y, rel_target))
    predicted = steps_to_loss(K, y, rel_target=rel_target)
    stop = max_steps if math.isinf(predicted) else min(predicted, max_steps)
    rec.update(loss0=0.5 * float(y @ y), steps=None, reached=None, diverged=None, steps_run=None,
               rel_loss_at_stop=None, predicted_steps=_none_if_inf(predicted),
               predicted_finite=not math.isinf(predicted),
               predicted_rel_loss_at_stop=_predicted_rel_loss(K, y, rec["lr"], stop),
               ntk_drift=None, kappa_eff_end=None, lambda_max_end=None,
               seconds=time.perf_counter() - start)
    return rec


def _inputs(x) -> int:
    """The inputs per example of a batch x (n, …): d for rows, H·W·C for images."""
    return int(np.prod(np.shape(x)[1:]))


def finite_record(x, y, *, depth: int, net, width: int, seed: int, rel_target: float,
                  max_steps: int, meta=None) -> dict:
    """The record of one trained net (``runs.train_vs_depth``'s docstring): measured beside
    predicted steps; ``net`` as in ``infinite_record`` (a ``CNNFamily``: the finite CNN of
    ``runs.depth.finite_net`` with ``width`` channels, weights ``runs.depth.cnn_params``)."""
    import jax
    import jax.numpy as jnp

    from .depth import cnn_params, finite_net, finite_ntk

    start = time.perf_counter()
    family, opts = net, net.options()
    net = finite_net(family, depth, width)
    params = cnn_params(net, seed, x.shape) if family.takes_images else None
    with x64():
        if params is None:
            params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=jnp.float64)
        xj = jnp.asarray(x, jnp.float64)
        K0 = finite_ntk(family, net, params, xj)
        f0 = np.asarray(net.apply(params, xj), np.float64).reshape(-1)
    rec = dict(meta or {}, n=int(x.shape[0]), d=_inputs(x), depth=int(depth),
               activation=family.act.name, width=int(width), seed=int(seed), **opts)
    if not np.any(K0):  # dead at init: every unit of some layer inactive on every input
        return dict(rec, **dead_net_fields(f0, y), seconds=time.perf_counter() - start)
    rec.update(_spectrum_fields(K0, f0 - y, rel_target))
    lr = rec["lr"]
    predicted = steps_to_loss(K0, y, lr=lr, rel_target=rel_target, f0=f0)
    run = train_to_loss(net, params, x, y, lr=lr, rel_target=rel_target, max_steps=max_steps)
    stop = len(run.losses) - 1
    with x64():
        K1 = finite_ntk(family, net, jax.tree_util.tree_map(jnp.asarray, run.params), xj)
    end = conditioning(K1)
    rec.update(loss0=float(run.losses[0]), steps=run.steps, reached=run.steps is not None,
               diverged=run.diverged, steps_run=run.steps_run,
               rel_loss_at_stop=float(run.losses[-1] / run.losses[0]),
               predicted_steps=_none_if_inf(predicted), predicted_finite=not math.isinf(predicted),
               predicted_rel_loss_at_stop=_predicted_rel_loss(K0, y, lr, stop, f0),
               ntk_drift=float(np.linalg.norm(K1 - K0) / np.linalg.norm(K0)),
               kappa_eff_end=end.kappa_eff, lambda_max_end=end.lambda_max,
               seconds=time.perf_counter() - start)
    return rec
