"""From κ to steps: finite nets trained by gradient descent, against depth, ReLU beside linear,
beside the step counts their initial NTK and the infinite-width NTK predict (Liu & Hui, arXiv
2305.08813, §5: a better-conditioned NTK makes wide nets train faster).

One batch x (n, d) of a data set and targets y (n,) (``make_targets``). For every depth L,
activation and width:

* **finite width m**: the net ``ntkcond.mlp(L, m, activation)`` (or, for a convolutional
  family, its layer stack ``CNNFamily.network(L, m)``: m channels, on NHWC images) with
  weights from ``jax.random.PRNGKey(init_seed)`` (NTK parameterisation) is trained by full-batch
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

A net dead at initialisation (its empirical NTK the zero matrix: at width 1 or 2 a bias-free
ReLU net often has a layer whose every unit is inactive on every input) cannot train: it is
recorded with ``dead`` true (no κ, nothing reached; ``train_records.dead_net_fields``) and the
sweep goes on; the table says "dead".

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
import math
import os
import time

from .. import datasets, plot
from .._core.checks import as_int, positive
from .._core.progress import progress_bar
from ..network import resolve_mlps
from .gradient_descent import CHUNK, GDRun, train_to_loss
from .cli import (add_data_arguments, add_network_arguments, add_run_arguments, check_batch,
                  command_parser, int_at_least, load_data, nets_from_args, parse_depths,
                  parse_width, positive_float, positive_int, run_main, target_name)
from .depth import check_spectrum_fields
from .frames import RunResult
from .rundir import check_record_fields, data_fingerprint, open_run
from .tables import net_title, text_table, write_csv
from .train_records import finite_record, infinite_record, make_targets, target_condition_number

__all__ = ["CHUNK", "GDRun", "TrainSweep", "make_targets", "target_condition_number",
           "train_to_loss", "finite_record", "infinite_record", "train_vs_depth",
           "format_table", "main"]

KEY_FIELDS = ("depth", "activation", "width", "seed")
CSV_FIELDS = ["depth", "activation", "width", "seed", "n", "kappa_eff", "kappa_target", "lr",
              "steps", "reached", "predicted_steps", "rel_loss_at_stop",
              "predicted_rel_loss_at_stop", "ntk_drift", "kappa_eff_end", "lambda_max_end", "rank",
              "lambda_max", "loss0", "steps_run", "diverged", "seconds", "dead"]


@dataclasses.dataclass(frozen=True)
class TrainSweep(RunResult):
    """Result of ``train_vs_depth``: the ``records`` (in the order of records.jsonl) and
    ``config`` (``frame()``: what ``ntkcond.runs.load`` reads), ``rows`` (the records sorted
    by width, activation and depth: the table's order), ``title``, paths of ``table.csv`` and
    ``figure.png`` (None without a run directory), records computed now / resumed, and wall
    seconds."""

    records: tuple
    config: dict
    rows: tuple
    title: str
    table_csv: str | None
    figure: str | None
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


def train_vs_depth(ds: datasets.Dataset, *, out: str | None, n: int = 256, depths=(1, 2, 3, 5, 10),
                   activations=("relu", "linear"), widths=("inf", 512), target: str = "lt5",
                   center: bool = True, rel_target: float = 1e-2, max_steps: int = 3000,
                   seed: int = 0, init_seed: int = 0, resume: bool = False,
                   overwrite: bool = False, progress: bool = True, w_std=None, b_std=None,
                   residual=None) -> TrainSweep:
    """Run (or resume) the sweep of the module docstring on one batch of ``ds`` into ``out``
    (None: in memory, nothing written).

    Args:
      ds: the data set (``datasets.load``), with integer labels ``ds.y``.
      n: batch size (the first batch of ``datasets.batches(ds, n, seed=seed)``).
      depths: depths L ≥ 0; activations: spellings of ``parse_activation``.
      widths: "inf" and/or finite widths m ≥ 1.
      target, center: ``make_targets``; rel_target: ε; max_steps: the cap on GD steps.
      seed: shuffling seed of the batch; init_seed: ``PRNGKey`` of every finite net.
      resume, overwrite: the run-directory policy (``runs.rundir``); progress: show progress
        on stderr (``ntkcond._core.progress``).
      w_std, b_std, residual: the nets' options (``ntkcond.network.resolve_mlp``); those set
        go into config.json and every record. ``activations`` may be the nets themselves
        (``MLPFamily``, or ``CNNFamily``: convolutional nets on the images of ``ds``, NHWC;
        width m is their channels, as in ``CNNFamily.network(depth, m)``, so the trained
        net and the width-"inf" kernel are the same net; their options — arch, readout,
        filter — in config.json and every record).
    """
    where = "train_vs_depth"
    t_start = time.perf_counter()
    depths = sorted({as_int(L, "depth", where, 0) for L in depths})
    nets = {net.act.name: net for net in resolve_mlps(activations, w_std, b_std, residual,
                                                       where=where)}
    acts = list(nets)
    opts = next(iter(nets.values())).options()
    widths = [w if w == "inf" else as_int(w, "width", where, 1) for w in widths]
    if not widths or len(set(widths)) != len(widths):
        raise ValueError(f"{where}: expected one or more distinct widths ('inf' or integers "
                         f">= 1), got {widths}")
    widths = sorted(widths, key=_width_key)
    rel_target = positive(rel_target, "rel_target", where)
    max_steps = as_int(max_steps, "max_steps", where, 1)
    init_seed = as_int(init_seed, "init_seed", where, 0)
    index = datasets.batches(ds, as_int(n, "n", where, 2), seed=seed, max_batches=1)[0]
    data = next(iter(nets.values())).inputs(ds)  # rows, or NHWC images (CNNs)
    x, y = data[index], make_targets(ds.y[index], target, center=center)
    config = {"dataset": ds.name, "split": ds.split, "n": len(index), "depths": depths,
              "activations": acts, "widths": widths, "target": target, "center": bool(center),
              "rel_target": rel_target, "max_steps": max_steps, "seed": seed,
              "init_seed": init_seed, "lr": "1/lambda_max(NTK at init)", "chunk": CHUNK,
              "loss": "0.5*sum((f-y)^2)", "preprocessing": ds.preprocessing,
              "data_fingerprint": data_fingerprint(ds.x)}
    config.update(opts)  # only those set: runs of the default net keep their config.json
    meta = {"dataset": ds.name, "split": ds.split, "target": target, "center": bool(center),
            "rel_target": rel_target, "max_steps": max_steps}
    items = [(L, a, w) for w in widths for L in depths for a in acts]
    with open_run(out, config, key_fields=KEY_FIELDS, resume=resume, overwrite=overwrite,
                  where=where, outputs=OUTPUTS, validate=record_validator(config)) as run:
        resumed = len(run.records)
        with progress_bar(total=len(items), initial=resumed, desc=where, unit="net",
                          disable=not progress) as bar:
            for L, a, w in items:
                s = None if w == "inf" else init_seed
                if run.key({"depth": L, "activation": a, "width": w, "seed": s}) in run.done:
                    continue
                if w == "inf":
                    rec = infinite_record(x, y, depth=L, net=nets[a], rel_target=rel_target,
                                          max_steps=max_steps, meta=meta)
                else:
                    rec = finite_record(x, y, depth=L, net=nets[a], width=w, seed=s,
                                        rel_target=rel_target, max_steps=max_steps, meta=meta)
                run.append(rec)
                bar.update(1)
        records = sorted(run.records, key=_order)
        name = os.path.basename(ds.name) if ds.name.endswith(".npz") else ds.name
        title = (f"{name} ({ds.split}), n = {len(index)}, target {target}"
                 f"{' centred' if center else ''}, loss to {rel_target:g}·loss₀, η = 1/λmax, "
                 f"cap {max_steps} steps{net_title(opts)}")
        table_csv = figure = None
        if run.path is not None:
            table_csv = write_csv(run.file("table.csv"), records, CSV_FIELDS)
            figure = plot.train_steps(records, run.file("figure.png"), title=title,
                                      metadata=config)
        return TrainSweep(records=tuple(run.records), config=dict(run.config),
                          rows=tuple(records), title=title, table_csv=table_csv, figure=figure,
                          computed=len(run.records) - resumed, resumed=resumed,
                          seconds=time.perf_counter() - t_start)


#: What a run derives from its records (deleted first by an overwrite, ``runs.rundir``).
OUTPUTS = ("table.csv", "figure.png")


def record_validator(config: dict) -> callable:
    """The check of a stored record against ``config`` (``open_run``'s ``validate``): depth,
    activation, width and seed of the run (seed null at width inf, ``init_seed`` otherwise),
    n, rel_target and max_steps of the run, counts within the cap, losses ≥ 0, the spectrum
    consistent (``runs.depth.check_spectrum_fields``) and lr = 1/lambda_max; a dead net
    (``ntkcond.runs.train_records.dead_net_fields``) has no spectrum to check."""

    def validate(rec):
        check_record_fields(rec, {
            "depth": tuple(config["depths"]), "activation": tuple(config["activations"]),
            "n": (config["n"],), "rel_target": (config["rel_target"],),
            "max_steps": (config["max_steps"],), "steps": "int>=0|None",
            "predicted_steps": "int>=0|None", "predicted_finite": "bool",
            "loss0": "float>=0", "predicted_rel_loss_at_stop": "float>=0",
            "kappa_target": "float>0|None", "seconds": "float>=0"})
        w = rec.get("width")
        if w not in config["widths"] or isinstance(w, bool):
            raise ValueError(f"expected width in {config['widths']}, got {w!r}")
        want_seed = None if w == "inf" else config["init_seed"]
        if rec.get("seed") != want_seed or isinstance(rec.get("seed"), bool):
            raise ValueError(f"expected seed {want_seed!r} at width {w}, got {rec.get('seed')!r}")
        if rec["steps"] is not None and rec["steps"] > config["max_steps"]:
            raise ValueError(f"expected steps <= max_steps = {config['max_steps']}, got {rec['steps']}")
        if rec.get("dead"):
            return
        check_spectrum_fields(rec)
        check_record_fields(rec, {"lr": "float>0"})
        if abs(rec["lr"] * rec["lambda_max"] - 1.0) > 1e-12:
            raise ValueError(f"expected lr = 1/lambda_max = {1.0 / rec['lambda_max']!r}, got {rec['lr']!r}")
        if w != "inf":
            check_record_fields(rec, {"reached": "bool", "diverged": "bool",
                                      "steps_run": "int>=0", "rel_loss_at_stop": "float>=0",
                                      "ntk_drift": "float>=0"})
            if rec["reached"] != (rec["steps"] is not None):
                raise ValueError(f"expected reached = (steps is not null), got reached "
                                 f"{rec['reached']} with steps {rec['steps']}")

    return validate


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
        measured = (("dead" if r.get("dead") else "diverged" if r["diverged"]
                     else _steps_text(r["steps"], cap=r["max_steps"])) if finite else "")
        kappa = "dead" if r.get("dead") else f"{r['kappa_eff']:.4g}"
        body.append([str(r["depth"]), r["activation"], str(r["width"]), kappa,
                     "inf" if kt is None else f"{kt:.4g}", measured,
                     _steps_text(r["predicted_steps"]),
                     f"{r['rel_loss_at_stop']:.3g}" if finite else "",
                     f"{r['predicted_rel_loss_at_stop']:.3g}",
                     f"{r['ntk_drift']:.3g}" if finite and not r.get("dead") else ""])
    return text_table(header, body)


# The command: ``ntkcond train-vs-depth`` and ``scripts/train_vs_depth.py``.

NAME = "train_vs_depth"
COMMAND_DOC = """Gradient-descent steps to a relative loss against depth, ReLU beside linear: finite nets
trained, beside the steps their initial NTK and the infinite-width NTK predict.

examples:
  {command}                      # digits, n = 256, depths 1,2,3,5,10
  {command} --dataset ../shared/data/mnist_test.npz --preset mnist
  {command} --dataset ../shared/data/cifar10_test.npz --preset cifar10
  {command} --target class:0 --no-center --rel-target 0.1
  {command} --dataset digits --downsample 2 --arch cnn --readout gap --width inf 64 --depths 1,2

One batch of --batch images (shuffled with --seed), targets from the labels (--target lt5:
+1 for label < 5, -1 otherwise; even; class:K one against the rest), centred unless
--no-center (an uncentred target puts its mean on the NTK's top, near-constant eigenvector,
which one step removes). Each finite-width net (ntkcond.mlp; with --arch cnn the CNN of
--width channels, --filter and --readout; NTK parameterisation, weights from
PRNGKey(--init-seed)) is trained in float64 by full-batch
gradient descent on L = 1/2 ||f(X) - y||^2 with lr = 1/lambda_max of its NTK at init, until
L <= --rel-target * L(0) or --max-steps (then "not reached", printed >cap). Beside it: the
steps the linearised model predicts from that NTK and the net's own f(X) at init
(ntkcond.steps_to_loss), and from the infinite-width NTK with f = 0 at init (width inf);
kappa_eff and kappa_target (the condition number the initial residual sees), and the NTK's
relative drift over training. Writes config.json, records.jsonl, table.csv and figure.png to
--out (--resume continues a killed run, --overwrite starts over). The library call:
ntkcond.runs.train_vs_depth.train_vs_depth. The defaults take about 2 minutes on digits and 6
on MNIST on two busy CPU cores (docs/results/train_vs_depth_mnist.md), mostly the ReLU nets.
"""


def build_parser(prog: str | None = None):
    """The flags of ``train_vs_depth`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    add_data_arguments(p, split="test")
    p.add_argument("--batch", type=int_at_least(2), default=256, help="batch size n (one batch)")
    add_network_arguments(p, depths="1,2,3,5,10")
    p.add_argument("--width", type=parse_width, nargs="+", default=["inf", 512],
                   help="inf (prediction only) and/or finite widths of the trained nets "
                        "(--arch cnn: channels)")
    p.add_argument("--target", type=target_name, default="lt5",
                   help="lt5, even or class:K (K = 0..9)")
    p.add_argument("--no-center", action="store_true", help="do not subtract the targets' mean")
    p.add_argument("--rel-target", type=positive_float, default=1e-2,
                   help="stop at loss <= this fraction of the initial loss")
    p.add_argument("--max-steps", type=positive_int, default=3000,
                   help="cap on gradient-descent steps per net (then 'not reached')")
    p.add_argument("--init-seed", type=int_at_least(0), default=0,
                   help="PRNGKey of the nets' weights")
    add_run_arguments(p, NAME)
    return p


def _run_command(args):
    nets = nets_from_args(args)
    depths = parse_depths(args.depths)
    ds = load_data(args)
    check_batch(args.batch, ds)
    sweep = train_vs_depth(ds, out=args.out, n=args.batch, depths=depths,
                           activations=nets, widths=args.width, target=args.target,
                           center=not args.no_center, rel_target=args.rel_target,
                           max_steps=args.max_steps, seed=args.seed, init_seed=args.init_seed,
                           resume=args.resume, overwrite=args.overwrite,
                           progress=not args.no_progress)
    print(sweep.title)
    print(format_table(sweep.rows))
    print("(steps: measured, >cap = not reached; predicted: by the kernel of that row, inf = "
          "never; rel loss: loss/loss0 where the run stopped, measured and predicted)")
    print(f"table: {os.path.abspath(sweep.table_csv)}")
    print(f"figure: {os.path.abspath(sweep.figure)}")
    print(f"{sweep.computed} computed, {sweep.resumed} resumed in {sweep.seconds:.0f} s")
    return sweep


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, train and predict, print the table; 0, 2 or 130."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
