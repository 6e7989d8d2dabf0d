"""From κ to steps: finite nets trained by gradient descent, against depth, ReLU beside linear,
beside the step counts their initial NTK and the infinite-width NTK predict (Liu & Hui, arXiv
2305.08813, §5: a better-conditioned NTK makes wide nets train faster).

One batch x (n, d) of a data set and targets y (n,) (``make_targets``). For every depth L,
activation and width:

* **finite width m**: the net ``ntkcond.mlp(L, m, activation)`` with weights from
  ``jax.random.PRNGKey(init_seed)`` (NTK parameterisation, bias-free) is trained by full-batch
  gradient descent θ ← θ − η∇L(θ) on the square loss

      L(θ) = ½ ‖f_θ(X) − y‖²        (a sum over the n points: no 1/n),                      (1)

  with η = 1/λmax(Θ₀), Θ₀ the (n, n) empirical NTK at initialisation (``empirical_ntk``, every
  layer trained). Linearised around θ₀ the residual r_t = f_t − y moves as
  r_{t+1} = (I − ηΘ₀) r_t (``ntkcond.optimization``, eq. (1)), so the NTK's prediction is
  ``steps_to_loss(Θ₀, y, lr=η, rel_target=ε, f0=f₀)``, with r₀ = f₀ − y the net's own initial
  residual. The measured count is the first t with L(θ_t) ≤ ε·L(θ₀), or "not reached" when
  that does not happen within ``max_steps`` (``steps`` None, ``reached`` False).
* **width "inf"**: nothing is trained; the infinite-width prediction
  ``steps_to_loss(infinite_ntk(x, L, activation), y, rel_target=ε)`` at η = 1/λmax with f₀ = 0
  (the infinite net's output at initialisation is a centred Gaussian process; no draw of it
  is made).

Training is float64 (scoped ``x64``), one jitted ``jax.lax.scan`` per chunk of ``CHUNK``
steps; the loss is recorded at every step, so the count is exact, and the run stops at the
end of the chunk in which the target is met (at most ``CHUNK`` − 1 extra steps computed). A
linear net's output (Π sₗ)·x W¹W²⋯W^{L+1} is evaluated right to left as matrix–vector
products (O(L m²) per step instead of O(n L m²)): the same function of the same parameters,
hence the same gradient and the same iterates up to rounding (tested against ``MLP.apply``).

Diagnostics per record: κ_eff of the kernel (``conditioning``); κ_target
(``target_condition_number``), the condition number the initial residual actually sees; the
relative drift ‖Θ_end − Θ₀‖_F/‖Θ₀‖_F of the empirical NTK over training (Θ_end after the
``steps_run`` steps computed, at most ``CHUNK`` − 1 past the stop).

Records (``records.jsonl``, one per depth × activation × width; seed None at width "inf"):
dataset, split, n, d, depth, activation, width, seed, target, center, rel_target, max_steps,
lr, lambda_max, lambda_min_nonzero, rank, kappa_eff, kappa_target (None: ∞), loss0, steps,
reached, diverged, steps_run, rel_loss_at_stop, predicted_steps (None: ∞), predicted_finite,
predicted_rel_loss_at_stop, ntk_drift, kappa_eff_end, lambda_max_end, seconds (κ_eff and λmax
of the empirical NTK after training in the ``_end`` fields). Measured fields are None at
width "inf"; "at stop" is step T = steps if reached, else ``max_steps`` (for width "inf":
min(predicted_steps, max_steps)).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import time

import numpy as np

from .. import datasets
from .._core.checks import as_int, positive
from .._core.io import atomic_savefig
from .._core.x64 import x64
from ..activations import parse_activation
from ..optimization import ntk_gd_loss, steps_to_loss
from ..spectrum import conditioning
from .rundir import data_fingerprint, open_run
from .tables import text_table, write_csv

__all__ = ["CHUNK", "GDRun", "TrainSweep", "make_targets", "target_condition_number",
           "train_to_loss", "finite_record", "infinite_record", "train_vs_depth",
           "format_table", "plot_train_vs_depth"]

KEY_FIELDS = ("depth", "activation", "width", "seed")
#: Gradient steps per jitted ``lax.scan`` call; the run stops at the end of the chunk that
#: reaches the target.
CHUNK = 100
CSV_FIELDS = ["depth", "activation", "width", "seed", "n", "kappa_eff", "kappa_target", "lr",
              "steps", "reached", "predicted_steps", "rel_loss_at_stop",
              "predicted_rel_loss_at_stop", "ntk_drift", "kappa_eff_end", "lambda_max_end", "rank",
              "lambda_max", "loss0", "steps_run", "diverged", "seconds"]


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
    lam, U = np.linalg.eigh(0.5 * (K64 + K64.T))
    c = (U.T @ r0)[::-1] ** 2  # descending eigenvalue order
    tails = np.cumsum(c[::-1])[::-1]  # tails[k] = Σ_{i ≥ k} c_i
    need = np.nonzero(tails > rel_target * tails[0])[0]
    if need.size == 0:
        return 1.0
    lam_k = lam[::-1][need[-1]]
    return math.inf if lam_k <= cond.cutoff else float(cond.lambda_max / lam_k)


@dataclasses.dataclass(frozen=True)
class GDRun:
    """Result of ``train_to_loss``.

    Attributes:
      steps: first t with loss_t ≤ rel_target·loss_0, or None (not within ``max_steps``).
      losses: (T + 1,) float64 loss_t, eq. (1), for t = 0 … T (T = steps, or max_steps).
      steps_run: gradient steps computed (T up to the end of its chunk, ≥ T).
      params: float64 weights after ``steps_run`` steps.
      diverged: the loss became NaN or ∞ (training stopped there; steps None).
      seconds: wall time of the training loop, compilation included.
    """

    steps: int | None
    losses: np.ndarray
    steps_run: int
    params: list
    diverged: bool
    seconds: float


def _linear_apply(net, d: int):
    """f(x) of a linear ``net`` as (Π sₗ)·x (W¹(W²(⋯ w^{L+1}))): matrix–vector products only."""
    import jax
    import jax.numpy as jnp

    scale = math.prod(net.scales(d))
    hi = jax.lax.Precision.HIGHEST

    def apply(params, x):
        v = params[-1][:, 0]
        for w in reversed(params[:-1]):
            v = jnp.matmul(w, v, precision=hi)
        return scale * jnp.matmul(x, v, precision=hi)

    return apply


@functools.lru_cache(maxsize=64)
def _runner(net, d: int, length: int, collapsed: bool):
    """Jitted: ``length`` GD steps on eq. (1); returns (params, loss before each step, loss after)."""
    import jax
    import jax.numpy as jnp

    apply = _linear_apply(net, d) if collapsed else net.apply

    def loss(params, x, y):
        r = apply(params, x) - y
        return 0.5 * jnp.sum(r * r)

    grad = jax.value_and_grad(loss)

    def run(params, x, y, lr):
        def step(ps, _):
            value, g = grad(ps, x, y)
            return [w - lr * gw for w, gw in zip(ps, g)], value

        params, values = jax.lax.scan(step, params, None, length=length)
        return params, values, loss(params, x, y)

    return jax.jit(run)


def train_to_loss(net, params, x, y, *, lr: float, rel_target: float, max_steps: int,
                  chunk: int = CHUNK, collapsed_linear: bool = True) -> GDRun:
    """Full-batch gradient descent θ ← θ − lr·∇L on L = ½‖net.apply(θ, x) − y‖², eq. (1), in
    float64, until L ≤ rel_target·L(θ₀) or ``max_steps`` steps.

    Args:
      net: an ``ntkcond.MLP``; params: its weights (``net.init``), cast to float64.
      x: (n, d) inputs; y: (n,) targets.
      lr: η > 0 (in the inverse units of the NTK: η = 1/λmax(Θ₀) is the linearised optimum's
        scale); rel_target: ε > 0; max_steps: cap T_max ≥ 1.
      chunk: steps per jitted ``lax.scan``; the loop stops after the chunk that meets ε.
      collapsed_linear: evaluate a linear net right to left (module docstring); False uses
        ``net.apply`` (the reference the tests compare with).

    Returns:
      ``GDRun``.
    """
    import jax.numpy as jnp

    where = "train_to_loss"
    lr = positive(lr, "lr", where)
    rel_target = positive(rel_target, "rel_target", where)
    max_steps = as_int(max_steps, "max_steps", where, 1)
    chunk = as_int(chunk, "chunk", where, 1)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"{where}: expected x (n, d) and y (n,), got shapes {x.shape} and {y.shape}")
    start = time.perf_counter()
    collapsed = bool(collapsed_linear and net.activation.is_linear)
    losses, steps, end, t0 = [], None, None, 0  # losses: loss_0 … loss_t0
    with x64():
        ps = [jnp.asarray(np.asarray(w, dtype=np.float64)) for w in params]
        xj, yj, lrj = jnp.asarray(x), jnp.asarray(y), jnp.asarray(lr, jnp.float64)
        while t0 < max_steps and end is None:
            length = min(chunk, max_steps - t0)
            ps, values, last = _runner(net, x.shape[1], length, collapsed)(ps, xj, yj, lrj)
            values = np.append(np.asarray(values, np.float64), float(last))  # loss_t0 … loss_t0+length
            losses.extend(values if t0 == 0 else values[1:])  # values[0] is the previous last
            target = rel_target * losses[0]
            hit = np.nonzero((values <= target) | ~np.isfinite(values))[0]
            if hit.size:
                end = t0 + int(hit[0])
                steps = end if np.isfinite(values[hit[0]]) else None
            t0 += length
        final = [np.asarray(w, np.float64) for w in ps]
    diverged = end is not None and steps is None
    end = max_steps if end is None else end
    return GDRun(steps=steps, losses=np.asarray(losses[:end + 1], np.float64), steps_run=t0,
                 params=final, diverged=diverged, seconds=time.perf_counter() - start)


def _none_if_inf(v):
    return None if v is None or math.isinf(v) else v


def _spectrum_fields(K, r0, rel_target) -> dict:
    cond = conditioning(K)
    return {"lr": 1.0 / cond.lambda_max, "lambda_max": cond.lambda_max,
            "lambda_min_nonzero": cond.lambda_min_nonzero, "rank": cond.rank,
            "kappa_eff": cond.kappa_eff,
            "kappa_target": _none_if_inf(target_condition_number(K, r0, rel_target))}


def _predicted_rel_loss(K, y, lr, steps, f0=None) -> float:
    curve = ntk_gd_loss(K, y, lr=lr, steps=int(steps), f0=f0)
    return float(curve[-1] / curve[0])


def infinite_record(x, y, *, depth: int, activation, rel_target: float, max_steps: int,
                    meta=None) -> dict:
    """The width-"inf" record: the prediction of ``infinite_ntk`` (η = 1/λmax, f₀ = 0)."""
    from ..infinite.kernels import infinite_ntk

    start = time.perf_counter()
    act = parse_activation(activation)
    K = infinite_ntk(x, depth=depth, activation=act)
    rec = dict(meta or {}, n=int(x.shape[0]), d=int(x.shape[1]), depth=int(depth),
               activation=act.name, width="inf", seed=None)
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


def finite_record(x, y, *, depth: int, activation, width: int, seed: int, rel_target: float,
                  max_steps: int, meta=None) -> dict:
    """The record of one trained net (module docstring): measured beside predicted steps."""
    import jax
    import jax.numpy as jnp

    from ..finite.empirical import empirical_ntk
    from ..finite.models import mlp

    start = time.perf_counter()
    act = parse_activation(activation)
    net = mlp(depth, width, act)
    with x64():
        params = net.init(jax.random.PRNGKey(seed), x.shape[1], dtype=jnp.float64)
        xj = jnp.asarray(x, jnp.float64)
        K0 = np.asarray(empirical_ntk(net, params, xj), np.float64)
        f0 = np.asarray(net.apply(params, xj), np.float64)
    rec = dict(meta or {}, n=int(x.shape[0]), d=int(x.shape[1]), depth=int(depth),
               activation=act.name, width=int(width), seed=int(seed))
    rec.update(_spectrum_fields(K0, f0 - y, rel_target))
    lr = rec["lr"]
    predicted = steps_to_loss(K0, y, lr=lr, rel_target=rel_target, f0=f0)
    run = train_to_loss(net, params, x, y, lr=lr, rel_target=rel_target, max_steps=max_steps)
    stop = len(run.losses) - 1
    with x64():
        K1 = np.asarray(empirical_ntk(net, [jnp.asarray(w) for w in run.params], xj), np.float64)
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


@dataclasses.dataclass(frozen=True)
class TrainSweep:
    """Result of ``train_vs_depth``: the ``records`` (sorted), ``title``, paths of
    ``table.csv`` and ``figure.png``, records computed now / resumed, and wall seconds."""

    records: tuple
    title: str
    table_csv: str
    figure: str
    computed: int
    resumed: int
    seconds: float

    def __repr__(self) -> str:
        return (f"TrainSweep({len(self.records)} records, {self.computed} computed, "
                f"{self.resumed} resumed, figure={self.figure!r})")


def _width_key(w):
    return math.inf if w == "inf" else int(w)


def _order(r):
    return (_width_key(r["width"]), r["activation"] != "relu", r["activation"], r["depth"])


def train_vs_depth(ds: datasets.Dataset, *, out: str, n: int = 256, depths=(1, 2, 3, 5, 10),
                   activations=("relu", "linear"), widths=("inf", 512), target: str = "lt5",
                   center: bool = True, rel_target: float = 1e-2, max_steps: int = 3000,
                   seed: int = 0, init_seed: int = 0, resume: bool = False,
                   overwrite: bool = False, progress: bool = True) -> TrainSweep:
    """Run (or resume) the sweep of the module docstring on one batch of ``ds`` into ``out``.

    Args:
      ds: the data set (``datasets.load``), with integer labels ``ds.y``.
      n: batch size (the first batch of ``datasets.batches(ds, n, seed=seed)``).
      depths: depths L ≥ 0; activations: spellings of ``parse_activation``.
      widths: "inf" and/or finite widths m ≥ 1.
      target, center: ``make_targets``; rel_target: ε; max_steps: the cap on GD steps.
      seed: shuffling seed of the batch; init_seed: ``PRNGKey`` of every finite net.
      resume, overwrite: the run-directory policy (``runs.rundir``); progress: a tqdm bar.
    """
    where = "train_vs_depth"
    t_start = time.perf_counter()
    depths = sorted({as_int(L, "depth", where, 0) for L in depths})
    acts = [parse_activation(a).name for a in activations]
    widths = sorted({w if w == "inf" else as_int(w, "width", where, 1) for w in widths}, key=_width_key)
    rel_target = positive(rel_target, "rel_target", where)
    max_steps = as_int(max_steps, "max_steps", where, 1)
    init_seed = as_int(init_seed, "init_seed", where, 0)
    index = datasets.batches(ds, as_int(n, "n", where, 2), seed=seed, max_batches=1)[0]
    x, y = ds.x[index], make_targets(ds.y[index], target, center=center)
    config = {"dataset": ds.name, "split": ds.split, "n": len(index), "depths": depths,
              "activations": acts, "widths": widths, "target": target, "center": bool(center),
              "rel_target": rel_target, "max_steps": max_steps, "seed": seed,
              "init_seed": init_seed, "lr": "1/lambda_max(NTK at init)", "chunk": CHUNK,
              "loss": "0.5*sum((f-y)^2)", "preprocessing": ds.preprocessing,
              "data_fingerprint": data_fingerprint(ds.x)}
    meta = {"dataset": ds.name, "split": ds.split, "target": target, "center": bool(center),
            "rel_target": rel_target, "max_steps": max_steps}
    items = [(L, a, w) for w in widths for L in depths for a in acts]
    with open_run(out, config, key_fields=KEY_FIELDS, resume=resume, overwrite=overwrite,
                  where=where) as run:
        resumed = len(run.records)
        from tqdm.auto import tqdm

        with tqdm(total=len(items), initial=resumed, desc=where, unit="net",
                  disable=not progress) as bar:
            for L, a, w in items:
                s = None if w == "inf" else init_seed
                if run.key({"depth": L, "activation": a, "width": w, "seed": s}) in run.done:
                    continue
                if w == "inf":
                    rec = infinite_record(x, y, depth=L, activation=a, rel_target=rel_target,
                                          max_steps=max_steps, meta=meta)
                else:
                    rec = finite_record(x, y, depth=L, activation=a, width=w, seed=s,
                                        rel_target=rel_target, max_steps=max_steps, meta=meta)
                run.append(rec)
                bar.update(1)
        records = sorted(run.records, key=_order)
        table_csv = write_csv(run.file("table.csv"), records, CSV_FIELDS)
        name = os.path.basename(ds.name) if ds.name.endswith(".npz") else ds.name
        title = (f"{name} ({ds.split}), n = {len(index)}, target {target}"
                 f"{' centred' if center else ''}, loss to {rel_target:g}·loss₀, η = 1/λmax, "
                 f"cap {max_steps} steps")
        figure = plot_train_vs_depth(records, run.file("figure.png"), title=title, metadata=config)
        return TrainSweep(records=tuple(records), title=title, table_csv=table_csv, figure=figure,
                          computed=len(run.records) - resumed, resumed=resumed,
                          seconds=time.perf_counter() - t_start)


def _steps_text(v, cap=None):
    """An int step count; None as '>cap' (measured, not reached) or 'inf' (predicted)."""
    if v is None:
        return f">{cap}" if cap is not None else "inf"
    return str(v)


def format_table(records) -> str:
    """One line per record: κ_eff, κ_target, measured steps ('>cap' when not reached),
    predicted steps ('inf' when never), relative loss at the stop, measured and predicted,
    and the NTK's drift over training."""
    header = ["depth", "activation", "width", "kappa_eff", "kappa_target", "steps", "predicted",
              "rel loss", "predicted", "NTK drift"]
    body = []
    for r in sorted(records, key=_order):
        finite = r["width"] != "inf"
        kt = r["kappa_target"]
        measured = (("diverged" if r["diverged"] else _steps_text(r["steps"], cap=r["max_steps"]))
                    if finite else "")
        body.append([str(r["depth"]), r["activation"], str(r["width"]), f"{r['kappa_eff']:.4g}",
                     "inf" if kt is None else f"{kt:.4g}", measured,
                     _steps_text(r["predicted_steps"]),
                     f"{r['rel_loss_at_stop']:.3g}" if finite else "",
                     f"{r['predicted_rel_loss_at_stop']:.3g}",
                     f"{r['ntk_drift']:.3g}" if finite else ""])
    return text_table(header, body)


ACTIVATION_COLOURS = {"relu": "C3", "linear": "C0"}


def plot_train_vs_depth(records, path: str, *, title: str = "", metadata: dict | None = None) -> str:
    """Left: steps to the target against depth (log y), colour by activation; measured (solid,
    circles; not reached: a cross at the cap), predicted by Θ₀ (dashed, squares) and by the
    infinite-width NTK (dotted, diamonds; ∞: a triangle at the top); next to a cross, the
    measured loss/loss₀ at the cap. Right: κ_eff of Θ₀
    (dashed) and of the infinite-width NTK (dotted), and κ_target of Θ₀ (thin solid).
    Written atomically; returns ``path``."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 6.4))
    acts = sorted({r["activation"] for r in records}, key=lambda a: (a != "relu", a != "linear", a))
    widths = sorted({r["width"] for r in records}, key=_width_key)
    caps = {r["max_steps"] for r in records}
    top = max([max(caps)] + [r["predicted_steps"] for r in records if r["predicted_steps"]]) * 3
    for i, act in enumerate(acts):
        colour = ACTIVATION_COLOURS.get(act, f"C{i + 4}")
        for w in widths:
            sel = sorted((r for r in records if r["activation"] == act and r["width"] == w),
                         key=lambda r: r["depth"])
            if not sel:
                continue
            L = [r["depth"] for r in sel]
            pred = [r["predicted_steps"] if r["predicted_finite"] else np.nan for r in sel]
            style, mark = (":", "d") if w == "inf" else ("--", "s")
            what = "∞-width NTK" if w == "inf" else f"Θ₀ (width {w})"
            ax.plot(L, pred, style, color=colour, marker=mark, ms=4, mfc="none",
                    label=f"{act}: predicted by {what}")
            inf_L = [r["depth"] for r in sel if not r["predicted_finite"]]
            ax.plot(inf_L, [top] * len(inf_L), "^", color=colour, ms=7, mfc="none",
                    label=f"{act}: predicted ∞ ({what})" if inf_L else None)
            kt = [np.nan if r["kappa_target"] is None else r["kappa_target"] for r in sel]
            bx.plot(L, [r["kappa_eff"] for r in sel], style, color=colour, marker=mark, ms=4,
                    mfc="none", label=f"{act}: κ_eff, {what}")
            if w == "inf":
                continue
            bx.plot(L, kt, "-", color=colour, lw=0.8, marker="+", label=f"{act}: κ_target, {what}")
            meas = [r["steps"] if r["reached"] else np.nan for r in sel]
            ax.plot(L, meas, "-", color=colour, marker="o", ms=5,
                    label=f"{act}: measured, width {w}")
            capped = [r for r in sel if not r["reached"]]
            if capped:
                ax.plot([r["depth"] for r in capped], [r["max_steps"] for r in capped], "x",
                        color=colour, ms=9, mew=2, label=f"{act}: not reached by the cap (width {w})")
                for r in capped:  # how far it got: loss/loss₀ at the cap
                    ax.annotate(f"{r['rel_loss_at_stop']:.2g}", (r["depth"], r["max_steps"]),
                                textcoords="offset points", xytext=(4, -11), fontsize=7,
                                color=colour)
    for cap in caps:
        ax.axhline(cap, color="grey", lw=0.8, ls="-.")
        ax.text(min(r["depth"] for r in records), cap, f" cap {cap}", color="grey",
                va="bottom", fontsize=8)
    ax.set(xlabel="depth L (hidden layers)", ylabel="gradient-descent steps to the target",
           yscale="log")
    bx.set(xlabel="depth L (hidden layers)", ylabel="condition number (NTK)", yscale="log")
    depths = sorted({r["depth"] for r in records})
    for a in (ax, bx):
        a.grid(alpha=0.3)
        a.set_xticks(depths)
        a.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=120, metadata={"Description": str(metadata)} if metadata else None)
    plt.close(fig)
    return path
