"""The NTK over training: a net trained with optax on real images, its empirical NTK on a probe
batch snapshotted at chosen steps (``ntkcond.NTKTracker``), one record per snapshot.

One training set x (n, d) of a data set, or its NHWC images (n, H, W, C) for a
convolutional net (the first batch of ``datasets.batches(ds, n, seed=seed)``) with targets y (``runs.train_records.make_targets``), and the probe inputs: its
first ``n_probe`` rows (so the kernel is the one that drives the training, and the alignment is
with the training targets). The model (``TrackModel``; from the command's flags by
``build_model``) is trained in float64 (scoped ``x64``; or float32, ``dtype``: the tracked
kernels are float64 either way) by optax SGD or Adam on

    L(θ) = (1/2b) Σ_{i ∈ batch} (f(θ, xᵢ) − yᵢ)²,                                          (1)

full batch (b = n) or minibatches of b rows (epoch e visits the rows in the order
``numpy.random.default_rng([seed, e]).permutation(n)``, the last incomplete minibatch dropped:
the order depends only on the step, so a resumed run trains exactly as an uninterrupted one).
At every step of the schedule (``snapshot_steps``: linear or log spacing, or given; step 0
always, the reference of the kernel distance) the tracker's snapshot of the model and the
full-batch loss (1) over the n training rows are recorded.

Run directory (``runs.rundir``, through ``runs.shared_run``): config.json (everything that
determines the results, with the data's fingerprint), records.jsonl (one record per snapshot:
step, loss, the ``NTKSnapshot`` fields, seconds, time; eigenvalues with ``keep_spectra``),
checkpoint.npz (the step, params and optimizer state of the last snapshot: float arrays only,
read with ``allow_pickle=False``), and from the records snapshots.csv, figure.png (loss, κ_eff,
kernel distance, alignment and effective rank against step; ``ntkcond.plot.curves``) and
spectra.npz (with ``keep_spectra``). config.json's provenance (``runs.provenance``: one entry
per start or resume) records the versions (optax's too), the command line, the time and how
many snapshots the run held when it was (re)started. At each snapshot the checkpoint is
written (atomically) before the record is appended, so a killed run resumes from the last
checkpoint: a snapshot whose record was lost is recomputed from it, and none is computed
twice. ``out=None`` runs in memory (no checkpoint, nothing written; the result holds the
records).
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import numbers
import os
import time
from collections.abc import Callable

import numpy as np

from .. import datasets, plot
from .._core.checks import as_count, positive
from .._core.io import atomic_write
from .._core.progress import progress_bar
from .._core.x64 import x64
from .cli import (add_data_arguments, add_network_arguments, add_run_arguments, check_batch,
                  command_parser, int_at_least, load_data, nets_from_args, parse_depths,
                  positive_float, positive_int, run_main, target_name)
from .depth import cnn_params, finite_net
from .frames import RunResult
from .provenance import utc_now
from .rundir import check_record_fields, data_fingerprint
from .shared_run import shared_run
from .tables import text_table, write_csv
from .train_records import make_targets

__all__ = ["TrackModel", "TrackRun", "OPTIMIZERS", "build_model", "snapshot_steps",
           "train_track", "PANELS", "main"]

KEY_FIELDS = ("step",)
#: What a run derives from its records, or keeps beside them (deleted first by an overwrite).
OUTPUTS = ("snapshots.csv", "figure.png", "spectra.npz", "checkpoint.npz")
SNAPSHOT_FIELDS = ("kappa_eff", "lambda_max", "lambda_min_nonzero", "rank", "precision_limited",
                   "effective_rank", "kernel_distance", "alignment", "ntk_drift")
CSV_FIELDS = ["step", "loss", *SNAPSHOT_FIELDS, "seconds"]
#: The panels of figure.png (``ntkcond.plot.curves`` against the step): field → axis label.
PANELS = {"loss": "training loss ½·mean (f − y)²", "kappa_eff": "κ_eff of the NTK",
          "kernel_distance": "kernel distance to step 0", "alignment": "kernel-target alignment",
          "effective_rank": "effective rank"}
#: The optimizers of the command, and the learning rate each takes by default.
OPTIMIZERS = {"sgd": 0.5, "adam": 1e-3}
#: Training dtypes (the tracked kernels are float64 whatever the training's dtype).
DTYPES = {"float64": np.float64, "float32": np.float32}
_INSTALL = "pip install 'ntkcond[train]' (or pip install optax)"


@dataclasses.dataclass(frozen=True)
class TrackModel:
    """What ``train_track`` trains and tracks.

    Attributes:
      model: what ``ntkcond.NTKTracker`` takes (an ``ntkcond.mlp`` net: the structured route;
        or an ``apply_fn``).
      apply_fn: f(params, x) → (n,) outputs, for the loss (1).
      params: the initial parameters (a pytree of float64 arrays).
      config: JSON description of the model and its initialisation, written into config.json.
      takes_images: the model's inputs are NHWC images (``Dataset.images``), not rows.
    """

    model: object
    apply_fn: Callable
    params: object
    config: dict
    takes_images: bool = False


@dataclasses.dataclass(frozen=True)
class TrackRun(RunResult):
    """Result of ``train_track``: its ``records`` (step order) and ``config`` (``frame()``: the
    DataFrame ``ntkcond.runs.load`` reads from the run directory), the paths of snapshots.csv
    and figure.png (None without a run directory), records computed now / resumed, wall
    seconds, and the tracker's seconds in kernels and in their reduction (eigvalsh and the
    other fields), over the snapshots computed now."""

    records: tuple
    config: dict
    title: str
    table_csv: str | None
    figure: str | None
    computed: int
    resumed: int
    seconds: float
    kernel_seconds: float
    spectrum_seconds: float

    def __repr__(self) -> str:
        return (f"TrackRun({len(self.records)} snapshots, {self.computed} computed, "
                f"{self.resumed} resumed, figure={self.figure!r})")


def build_model(net, input_shape, *, depth: int, width: int, init_seed: int,
                init_scale: float = 1.0) -> TrackModel:
    """The command's model: the finite net of ``net`` at ``depth`` and ``width``
    (``runs.depth.finite_net``), its weights (and biases) drawn from
    ``jax.random.PRNGKey(init_seed)`` and multiplied by ``init_scale`` (α: every parameter of
    NTK parameterisation N(0, α²); α ≪ 1 is the small-initialisation regime of Zhang, Saxe &
    Latham, arXiv 2406.12615), in float64.

    ``net``: an ``ntkcond.network.MLPFamily`` (built once: ``resolve_mlp``, or the command's
    ``nets_from_args``) or an activation spelling of ``parse_activation`` for its default
    net (norm-preserving, bias-free): ``ntkcond.mlp(depth, width, net.act,
    **net.options())``, which validates them, on rows of ``input_shape`` (d,); or a
    ``CNNFamily`` (``resolve_cnn``): its layer stack ``CNNFamily.network(depth, width)``
    (``width`` channels; Flatten or GlobalAvgPool and Dense(1); the net of its
    infinite-width kernel), weights ``runs.depth.cnn_params``, on NHWC images of
    ``input_shape`` (H, W, C). config.json gets arch ("mlp" or "cnn"), depth, width, the
    activation's name and the options the net sets (``NetFamily.options``: w_std, b_std if
    nonzero, residual; readout and filter)."""
    import jax
    import jax.numpy as jnp

    from ..network import resolve_mlp

    where = "build_model"
    family = resolve_mlp(net, where=where)
    init_scale = positive(init_scale, "init_scale", where)
    init_seed = as_count(init_seed, "init_seed", where, minimum=0)
    shape = tuple(input_shape) if isinstance(input_shape, (tuple, list)) else None
    rank = 3 if family.takes_images else 1
    if (shape is None or len(shape) != rank
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1
                           for v in shape)):
        want = "(H, W, C) of NHWC images" if family.takes_images else "(d,) of rows"
        raise ValueError(f"{where}: expected input_shape {want} (positive integers) for "
                         f"{family.name}, got {input_shape!r}")
    model = finite_net(family, depth, width)
    if family.takes_images:
        params = cnn_params(model, init_seed, (1,) + shape)
        with x64():
            params = jax.tree_util.tree_map(lambda w: init_scale * w, params)
        apply_fn = tracked = model.apply  # the tracker's generic route (any apply_fn)
    else:
        with x64():
            params = [init_scale * w for w in model.init(jax.random.PRNGKey(init_seed),
                                                         shape[0], dtype=jnp.float64)]
        apply_fn, tracked = model.apply, model  # the tracker's structured route
    config = {"arch": "mlp", "depth": int(depth), "width": int(width),
              "activation": family.act.name, "init_seed": init_seed, "init_scale": init_scale}
    config.update(family.options())  # a CNN's: arch "cnn", readout, filter
    return TrackModel(model=tracked, apply_fn=apply_fn, params=params, config=config,
                      takes_images=family.takes_images)


def snapshot_steps(steps: int, count: int | None = None, spacing: str = "log", at=None) -> list[int]:
    """The steps at which the NTK is snapshotted: step 0 (the reference of the kernel distance)
    and ``steps`` always, and ``count`` in all spaced linearly (round(k·steps/(count − 1))) or
    logarithmically (0 and round(steps^(k/(count − 2))), k = 0 … count − 2: duplicates from
    rounding at the small steps are dropped, so a log schedule can have fewer); or the steps
    ``at`` (each in [0, steps]; 0 and ``steps`` added)."""
    where = "snapshot_steps"
    steps = as_count(steps, "steps", where)
    if at is not None:
        given = [as_count(s, "step", where, minimum=0) for s in at]
        over = [s for s in given if s > steps]
        if over:
            raise ValueError(f"{where}: expected snapshot steps in [0, steps = {steps}], got {over}")
        return sorted(set(given) | {0, steps})
    count = as_count(count, "count", where, minimum=2)
    if spacing == "linear":
        values = np.rint(np.linspace(0, steps, count))
    elif spacing == "log":
        values = np.concatenate([[0], np.rint(np.geomspace(1, steps, count - 1))]) if count > 2 else [0, steps]
    else:
        raise ValueError(f"{where}: expected spacing 'linear' or 'log', got {spacing!r}")
    return sorted({int(v) for v in values} | {0, steps})


def _optimizer(name: str, lr: float, where: str):
    try:
        import optax
    except ImportError:
        raise ImportError(f"{where}: needs optax: {_INSTALL}") from None
    if name == "sgd":
        return optax.sgd(lr)
    if name == "adam":
        return optax.adam(lr)
    raise ValueError(f"{where}: expected optimizer in {sorted(OPTIMIZERS)}, got {name!r}")


# ------------------------------------------------------------------------------ checkpoints
def _config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def _save_checkpoint(path: str, step: int, state, config_hash: str) -> None:
    """step, the config's hash and every leaf of ``state`` (params, optimizer state), in an
    .npz written atomically."""
    import jax

    leaves = jax.tree_util.tree_leaves(state)
    arrays = {f"leaf_{i:05d}": np.asarray(leaf) for i, leaf in enumerate(leaves)}
    buf = io.BytesIO()
    np.savez(buf, step=np.int64(step), config_sha256=np.array(config_hash), **arrays)
    atomic_write(path, buf.getvalue())


def _load_checkpoint(path: str, template, config_hash: str, where: str):
    """(step, state) from ``_save_checkpoint``'s file, the leaves checked against ``template``
    (count, shapes, dtypes) and the config hash; no pickle is read."""
    import jax
    import jax.numpy as jnp

    leaves, treedef = jax.tree_util.tree_flatten(template)
    damaged = f"{where}: {path} is not this run's checkpoint"
    try:
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError) as err:
        raise ValueError(f"{damaged} ({err}); use --overwrite to start over") from None
    names = [f"leaf_{i:05d}" for i in range(len(leaves))]
    if (set(data) != {"step", "config_sha256", *names}
            or str(data["config_sha256"]) != config_hash or data["step"].shape != ()):
        raise ValueError(f"{damaged} (other arrays or another configuration); use --overwrite")
    restored = []
    for name, leaf in zip(names, leaves):
        a = data[name]
        if a.shape != np.shape(leaf) or a.dtype != np.asarray(leaf).dtype:
            raise ValueError(f"{damaged} ({name}: shape {a.shape} {a.dtype}, expected "
                             f"{np.shape(leaf)} {np.asarray(leaf).dtype}); use --overwrite")
        restored.append(jnp.asarray(a))
    return int(data["step"]), jax.tree_util.tree_unflatten(treedef, restored)


# ------------------------------------------------------------------------------ the run
def train_track(ds: datasets.Dataset, model: TrackModel, *, out: str | None, n: int = 256,
                n_probe: int | None = None, optimizer: str = "sgd", lr: float | None = None,
                steps: int = 1000, batch_size: int | None = None, snapshots=None,
                target: str = "lt5", center: bool = True, seed: int = 0,
                dtype: str = "float64", keep_spectra: bool = False, resume: bool = False,
                overwrite: bool = False, progress: bool = True) -> TrackRun:
    """Train ``model`` on ``ds`` and snapshot its NTK (module docstring) into the run ``out``
    (None: in memory, nothing written; the result holds the records).

    Args:
      ds: the data set (``datasets.load``), with integer labels.
      model: a ``TrackModel`` (``build_model``, or any apply_fn with its params).
      n: training-set size (rows of the first batch of ``datasets.batches(ds, n, seed=seed)``).
      n_probe: probe inputs, the first n_probe training rows (default min(n, 256)).
      optimizer: "sgd" or "adam" (optax); lr: its learning rate (default ``OPTIMIZERS``).
      steps: optimizer steps; batch_size: minibatch rows (None: full batch, b = n).
      snapshots: the steps to snapshot (``snapshot_steps``; default 20 log-spaced).
      target, center: ``make_targets``; seed: which rows, and the minibatch order.
      dtype: "float64" or "float32", the training's (params, optimizer state, data); the
        tracked kernels are float64 either way (of the parameters as they are).
      keep_spectra: store each snapshot's eigenvalues (records and spectra.npz).
      resume, overwrite: the run-directory policy (``runs.rundir``); progress: show progress
        on stderr (``ntkcond._core.progress``).

    Raises:
      ImportError: optax is not installed (the ``train`` extra).
      ValueError: bad sizes, optimizer, lr or schedule; a run in ``out`` that this one cannot
        continue; a loss that is not finite (the step is named: lower the learning rate).
    """
    import jax
    import jax.numpy as jnp

    where = "train_track"
    t_start = time.perf_counter()
    if not isinstance(model, TrackModel):
        raise TypeError(f"{where}: expected model as a TrackModel (build_model), got "
                        f"{type(model).__name__}")
    if dtype not in DTYPES:
        raise ValueError(f"{where}: expected dtype in {list(DTYPES)}, got {dtype!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"{where}: expected optimizer in {sorted(OPTIMIZERS)}, got {optimizer!r}")
    lr = OPTIMIZERS[optimizer] if lr is None else positive(lr, "lr", where)
    steps = as_count(steps, "steps", where)
    schedule = snapshot_steps(steps, 20) if snapshots is None else sorted({int(s) for s in snapshots})
    if schedule[0] != 0 or schedule[-1] > steps:
        raise ValueError(f"{where}: expected snapshots from step 0 to at most steps = {steps}, got "
                         f"{schedule[0]} … {schedule[-1]} (snapshot_steps)")
    index = datasets.batches(ds, as_count(n, "n", where, minimum=2), seed=seed, max_batches=1)[0]
    n = len(index)
    n_probe = min(n, 256) if n_probe is None else as_count(n_probe, "n_probe", where)
    if n_probe > n:
        raise ValueError(f"{where}: expected n_probe <= n = {n} (the probe inputs are training "
                         f"rows), got {n_probe}")
    if batch_size is not None and not 1 <= as_count(batch_size, "batch_size", where) <= n:
        raise ValueError(f"{where}: expected batch_size in [1, n = {n}], got {batch_size}")
    # the rows as the model takes them: rows, or NHWC images (a convolutional net)
    x = (ds.images if model.takes_images else ds.x)[index]
    y = make_targets(ds.y[index], target, center=center)
    tx = _optimizer(optimizer, lr, where)
    from ..finite.tracker import NTKTracker

    tracker = NTKTracker(model.model, x[:n_probe], y=y[:n_probe], keep_spectra=keep_spectra)
    config = {"dataset": ds.name, "split": ds.split, "n": n, "n_probe": n_probe,
              "target": target, "center": bool(center), "seed": seed, "model": model.config,
              "optimizer": optimizer, "lr": lr, "steps": steps,
              "batch_size": batch_size, "snapshots": schedule, "keep_spectra": bool(keep_spectra),
              "loss": "0.5*mean((f-y)^2) over the (mini)batch", "dtype": dtype,
              "preprocessing": ds.preprocessing, "data_fingerprint": data_fingerprint(ds.x[index], y)}
    config_hash = _config_hash(config)  # of what determines the results (no provenance)
    with shared_run(out, config, key_fields=KEY_FIELDS, resume=resume, overwrite=overwrite,
                    where=where, outputs=OUTPUTS, validate=record_validator(config),
                    versions=("optax",)) as run:
        resumed = len(run.records)
        with x64():
            params0 = jax.tree_util.tree_map(lambda w: jnp.asarray(w, DTYPES[dtype]), model.params)
            state = (params0, tx.init(params0))
            todo, start = _resume_point(run, schedule, state, tracker, params0, config_hash, where)
            if todo and start[0] > 0:
                state = start[1]
            step_fn, loss_fn = _compiled(model.apply_fn, tx)
            xj, yj = jnp.asarray(x, DTYPES[dtype]), jnp.asarray(y, DTYPES[dtype])
            t = start[0]
            with progress_bar(total=steps, initial=t, desc=where, unit="step",
                              disable=not progress or not todo) as bar:
                for target_step in todo:
                    while t < target_step:
                        xb, yb = (xj, yj) if batch_size is None else _minibatch(xj, yj, t, batch_size, seed)
                        params, opt_state, loss = step_fn(*state, xb, yb)
                        if not math.isfinite(float(loss)):
                            raise ValueError(f"{where}: the loss is {float(loss)} at step {t} (the "
                                             f"training diverged); lower the learning rate "
                                             f"(lr = {lr:g})")
                        state, t = (params, opt_state), t + 1
                        bar.update(1)
                    before = tracker.seconds
                    snap = tracker.update(state[0], t)
                    after = tracker.seconds
                    if run.path is not None:
                        _save_checkpoint(run.file("checkpoint.npz"), t, state, config_hash)
                    run.append(_record(snap, float(loss_fn(state[0], xj, yj)), keep_spectra,
                                       after["kernel"] + after["spectrum"]
                                       - before["kernel"] - before["spectrum"]))
        records = sorted(run.records, key=lambda r: r["step"])
        title = describe(config)
        table_csv = figure = None
        if run.path is not None:
            table_csv = write_csv(run.file("snapshots.csv"), records, CSV_FIELDS)
            if keep_spectra:
                buf = io.BytesIO()
                np.savez(buf, steps=np.array([r["step"] for r in records]),
                         eigenvalues=np.array([r["eigenvalues"] for r in records]))
                atomic_write(run.file("spectra.npz"), buf.getvalue())
            figure = plot.curves(records, "step", PANELS, logy=("loss", "kappa_eff"),
                                 labels=PANELS, xscale="symlog", path=run.file("figure.png"),
                                 title=title, metadata=config)
        seconds = tracker.seconds
        return TrackRun(records=tuple(records), config=dict(run.config), title=title,
                        table_csv=table_csv, figure=figure,
                        computed=len(run.records) - resumed, resumed=resumed,
                        seconds=time.perf_counter() - t_start, kernel_seconds=seconds["kernel"],
                        spectrum_seconds=seconds["spectrum"])


def _resume_point(run, schedule, state, tracker, params0, config_hash, where):
    """(the snapshot steps still to do, (the step training starts from, its state)).

    A fresh run starts at step 0 with ``state``. A resumed one needs its records to be the
    schedule's first k steps and its checkpoint at the last of them or at the next (written
    just before a kill took the record); the tracker is given the initial kernel again (the
    reference of the kernel distance), checked against the stored step-0 record."""
    done = sorted(r["step"] for r in run.records)
    k = len(done)
    if done != schedule[:k]:
        raise ValueError(f"{where}: {run.path} holds snapshots at steps {done}, not the first "
                         f"{k} of this run's schedule {schedule}; use --overwrite")
    if k == 0:
        return schedule, (0, state)
    if k == len(schedule):
        return [], (schedule[-1], state)
    path = run.file("checkpoint.npz")
    if not os.path.exists(path):
        raise ValueError(f"{where}: cannot resume {run.path}: it holds {k} snapshots but no "
                         "checkpoint.npz; use --overwrite to start over")
    step, restored = _load_checkpoint(path, state, config_hash, where)
    if step not in schedule[k - 1:k + 1]:
        raise ValueError(f"{where}: {path} is at step {step}, expected the last snapshot's "
                         f"step {schedule[k - 1]} or the next, {schedule[k]}; use --overwrite")
    first = tracker.update(params0, 0)
    stored = next(r for r in run.records if r["step"] == 0)
    if abs(first.kappa_eff / stored["kappa_eff"] - 1) > 1e-9:
        raise ValueError(f"{where}: the initial NTK recomputed on resume has kappa_eff "
                         f"{first.kappa_eff!r}, the stored record {stored['kappa_eff']!r}; the "
                         "model or its initialisation changed: use --overwrite")
    return schedule[k:], (step, restored)


def _compiled(apply_fn, tx):
    """(jitted optimizer step, jitted loss (1)) of ``apply_fn`` and the optax ``tx``."""
    import jax
    import jax.numpy as jnp
    import optax

    def loss(params, x, y):
        r = jnp.reshape(apply_fn(params, x), (-1,)) - y
        return 0.5 * jnp.mean(r * r)

    def step(params, opt_state, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return jax.jit(step), jax.jit(loss)


def _minibatch(x, y, t: int, b: int, seed: int):
    """The rows of step t: minibatch t mod (n // b) of epoch t // (n // b) (module docstring)."""
    per_epoch = x.shape[0] // b
    epoch, i = divmod(t, per_epoch)
    rows = np.random.default_rng([seed, epoch]).permutation(x.shape[0])[i * b:(i + 1) * b]
    return x[rows], y[rows]


def _record(snap, loss: float, keep_spectra: bool, seconds: float) -> dict:
    rec = {"step": snap.step, "loss": loss}
    rec.update({f: getattr(snap, f) for f in SNAPSHOT_FIELDS})
    rec.update(seconds=seconds, time=utc_now())
    if keep_spectra:
        rec["eigenvalues"] = [float(v) for v in snap.eigenvalues]
    return rec


def record_validator(config: dict) -> Callable:
    """The check of a stored record against ``config`` (``open_run``'s ``validate``): a step of
    the schedule, the fields' types and ranges, κ_eff = λ_max/λ_min⁺, 1 ≤ effective rank ≤ rank
    ≤ n_probe, and the eigenvalues (n_probe of them) where the run keeps spectra."""

    def validate(rec):
        check_record_fields(rec, {
            "step": tuple(config["snapshots"]), "loss": "float>=0", "kappa_eff": "float>0",
            "lambda_max": "float>0", "lambda_min_nonzero": "float>0", "rank": "int>=1",
            "precision_limited": "bool", "effective_rank": "float>0",
            "kernel_distance": "float>=0", "alignment": "float", "ntk_drift": "float>=0",
            "seconds": "float>=0", "time": "str"})
        if abs(rec["kappa_eff"] * rec["lambda_min_nonzero"] / rec["lambda_max"] - 1) > 1e-12:
            raise ValueError(f"expected kappa_eff = lambda_max/lambda_min_nonzero, got "
                             f"{rec['kappa_eff']!r} with {rec['lambda_max']!r}/{rec['lambda_min_nonzero']!r}")
        if not rec["rank"] <= config["n_probe"] or not 1 - 1e-9 <= rec["effective_rank"] <= rec["rank"] * (1 + 1e-9):
            raise ValueError(f"expected 1 <= effective_rank <= rank <= n_probe = {config['n_probe']}, "
                             f"got {rec['effective_rank']!r}, {rec['rank']!r}")
        if config["keep_spectra"]:
            ev = rec.get("eigenvalues")
            if (not isinstance(ev, list) or len(ev) != config["n_probe"]
                    or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in ev)):
                raise ValueError(f"expected eigenvalues as a list of {config['n_probe']} finite "
                                 "numbers")

    return validate


def describe(config: dict) -> str:
    """One line saying what ran, from the run's configuration."""
    m = config["model"]
    channels = "C" if m["arch"] == "cnn" else "m"
    net = f"{m['arch']} L={m['depth']} {channels}={m['width']} {m['activation']}"
    net += "".join(f" {k}={m[k]:g}" for k in ("w_std", "b_std", "residual") if k in m)
    net += "".join(f" {k}={m[k]}" for k in ("readout", "filter") if k in m)
    if m.get("init_scale", 1.0) != 1.0:
        net += f" init×{m['init_scale']:g}"
    if config["dtype"] != "float64":
        net += f", trained in {config['dtype']}"
    name = os.path.basename(config["dataset"]) if config["dataset"].endswith(".npz") else config["dataset"]
    batch = "full batch" if config["batch_size"] is None else f"batch {config['batch_size']}"
    return (f"{name} ({config['split']}), n = {config['n']}, probe {config['n_probe']}: {net}; "
            f"{config['optimizer']} lr {config['lr']:g}, {batch}, {config['steps']} steps")


def format_table(records) -> str:
    """One line per snapshot: step, loss, κ_eff, kernel distance, drift, alignment, effective
    rank, rank."""
    header = ["step", "loss", "kappa_eff", "kernel_dist", "drift", "alignment", "eff_rank", "rank"]
    body = [[str(r["step"]), f"{r['loss']:.4g}", f"{r['kappa_eff']:.4g}",
             f"{r['kernel_distance']:.3g}", f"{r['ntk_drift']:.3g}", f"{r['alignment']:.4g}",
             f"{r['effective_rank']:.4g}", str(r["rank"])] for r in records]
    return text_table(header, body)


# The command: ``ntkcond train-track`` and ``scripts/train_track.py``.

NAME = "train_track"
COMMAND_DOC = """Train a net with optax on real images and track its empirical NTK on a probe batch: kappa_eff,
kernel distance to step 0, kernel-target alignment and effective rank at chosen steps.

examples:
  {command}                                   # digits, MLP L=1 m=512 relu, SGD, full batch
  {command} --dataset mnist --split test --data-dir ../shared/data --width 1024 --steps 2000
  {command} --depths 3 --activations gelu --w-std 1.5 --b-std 0.1   # one net: one depth, one activation
  {command} --dataset cifar10 --split test --data-dir ../shared/data --optimizer adam --lr 1e-3 \\
      --batch-size 64 --snapshots 30 --spacing linear
  {command} --init-scale 0.1 --b-std 0.1       # small initialisation, with biases
  {command} --downsample 2 --arch cnn --readout gap --width 32 --depths 2   # a CNN

The training set is the first --train images (shuffled with --seed, which also orders the
minibatches), targets from the labels (--target lt5: +1 for label < 5, -1 otherwise; even;
class:K), centred unless --no-center; the probe inputs are its first --probe images. The net
(--arch mlp: ntkcond.mlp of --width and the network flags: one depth --depths, one activation
--activations, --w-std, --b-std, --residual; --arch cnn: --depths convolutions of --width
channels, --filter x --filter, SAME, then --readout flatten or gap and Dense(1), on the
images; NTK parameterisation, weights from
PRNGKey(--init-seed) times --init-scale) is trained in --dtype (float64) by optax (--optimizer sgd or adam,
--lr) on 1/2 mean (f - y)^2, full batch or --batch-size rows per step, for --steps steps. At
step 0, --steps and --snapshots steps in all (--spacing log or linear; or the steps --at) the
exact float64 NTK of the probe inputs is computed (ntkcond.NTKTracker) and one record written.
Writes config.json (with the provenance of each start and resume), records.jsonl,
checkpoint.npz, snapshots.csv and figure.png (and spectra.npz with --save-spectra) to --out; --resume continues a killed run from
its last snapshot, --overwrite starts over. Needs optax: pip install 'ntkcond[train]'. The
library call: ntkcond.runs.train_track.train_track.
"""


def _steps_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--at: expected comma-separated steps, got {text!r}") from None
    if not values or min(values) < 0:
        raise ValueError(f"--at: expected steps >= 0, got {text!r}")
    return values


def build_parser(prog: str | None = None):
    """The flags of ``train_track`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    add_data_arguments(p, split="test")
    p.add_argument("--train", type=positive_int, default=256, help="training-set size n")
    p.add_argument("--probe", type=positive_int, default=None,
                   help="probe inputs: the first PROBE training images (default min(n, 256))")
    p.add_argument("--width", type=positive_int, default=512,
                   help="hidden width m (--arch cnn: channels)")
    add_network_arguments(p, depths="1", activations=("relu",))  # one of each: one net per run
    p.add_argument("--init-scale", type=positive_float, default=1.0,
                   help="multiply every initial parameter by this (small: the rich regime)")
    p.add_argument("--init-seed", type=int_at_least(0), default=0,
                   help="PRNGKey of the initial parameters")
    p.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd", help="optax optimizer")
    p.add_argument("--lr", type=positive_float, default=None,
                   help=f"learning rate (default: sgd {OPTIMIZERS['sgd']:g}, adam {OPTIMIZERS['adam']:g})")
    p.add_argument("--steps", type=positive_int, default=1000, help="optimizer steps")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="minibatch rows per step (default: full batch)")
    p.add_argument("--snapshots", type=int_at_least(2), default=20,
                   help="NTK snapshots in all, step 0 and --steps included")
    p.add_argument("--spacing", choices=["log", "linear"], default="log", help="of the snapshots")
    p.add_argument("--at", type=str, default=None,
                   help="snapshot exactly these steps instead, e.g. 0,10,100 (0 and --steps added)")
    p.add_argument("--dtype", choices=list(DTYPES), default="float64",
                   help="the training's dtype (the tracked NTK is float64 either way)")
    p.add_argument("--save-spectra", action="store_true",
                   help="keep every snapshot's eigenvalues (records, spectra.npz)")
    p.add_argument("--target", type=target_name, default="lt5",
                   help="lt5, even or class:K (K = 0..9)")
    p.add_argument("--no-center", action="store_true", help="do not subtract the targets' mean")
    add_run_arguments(p, NAME)
    return p


def net_from_flags(args) -> tuple:
    """(the ``MLPFamily`` or ``CNNFamily``, its depth L) of the command's network flags, built once: the one
    net of ``nets_from_args`` (one activation) at the one depth of ``--depths``."""
    nets = nets_from_args(args)
    if len(nets) != 1:
        raise ValueError(f"--activations: expected one activation (train-track trains one net), "
                         f"got {[n.act.name for n in nets]}")
    depths = parse_depths(args.depths)
    if len(depths) != 1:
        raise ValueError(f"--depths: expected one depth (train-track trains one net), got "
                         f"{args.depths!r}")
    return nets[0], depths[0]


def _run_command(args):
    net, depth = net_from_flags(args)
    at = None if args.at is None else _steps_list(args.at)
    schedule = snapshot_steps(args.steps, args.snapshots, args.spacing, at)
    ds = load_data(args)
    check_batch(args.train, ds, "--train")
    model = build_model(net, net.inputs(ds).shape[1:], depth=depth, width=args.width,
                        init_seed=args.init_seed, init_scale=args.init_scale)
    try:
        run = train_track(ds, model, out=args.out, n=args.train,
                          n_probe=args.probe, optimizer=args.optimizer, lr=args.lr,
                          steps=args.steps, batch_size=args.batch_size, snapshots=schedule,
                          target=args.target, center=not args.no_center, seed=args.seed,
                          dtype=args.dtype, keep_spectra=args.save_spectra, resume=args.resume,
                          overwrite=args.overwrite, progress=not args.no_progress)
    except ImportError as err:  # optax missing: one line, exit 2
        raise ValueError(str(err)) from None
    print(run.title)
    print(format_table(run.records))
    print(f"table: {os.path.abspath(run.table_csv)}")
    print(f"figure: {os.path.abspath(run.figure)}")
    print(f"{run.computed} snapshots computed, {run.resumed} resumed in {run.seconds:.1f} s "
          f"(NTK kernels {run.kernel_seconds:.1f} s, spectra {run.spectrum_seconds:.1f} s)")
    return run


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, train and track, print the table; 0, 2 or 130."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
