"""κ_eff and the smallest gradient angle against the batch size n, at infinite width, as a
resumable run directory (the sweep of ``scripts/cond_vs_batch.py``).

Batches are nested (the first n of one fixed shuffled order), so every larger batch contains
the smaller ones. For each n, activation and depth: the exact κ_eff of the n × n NTK
(``scale.conditioning.exact_conditioning``: blockwise kernel + one float64 eigvalsh), its
numerical rank, and the smallest gradient angle over all pairs
(``scale.streaming.streaming_smallest_angles``). The linear net's kernel is (L+1)·XXᵀ/d at
every depth, of rank ≤ d: past n = d it is singular and κ_eff measures it on its range.
Across processes (``runs.launcher``) every batch's kernels and angles are split over them
(``ntkcond.scale.processes``) and process 0 writes the run directory (``runs.shared_run``).
"""
from __future__ import annotations

import dataclasses
import math
import os
import time

import numpy as np

from .. import datasets, plot
from .._core.checks import as_count, as_int
from .._core.progress import progress_bar
from ..network import MLPFamily, resolve_mlps
from ..scale.conditioning import exact_conditioning
from ..scale.streaming import streaming_smallest_angles
from ..scale.processes import current_share
from .cli import (add_data_arguments, add_network_arguments, add_run_arguments, check_batch,
                  command_parser, int_at_least, load_data, nets_from_args, parse_depths,
                  parse_sizes, run_main)
from .depth import check_nonzero_rows, check_spectrum_fields
from .frames import RunResult
from .launcher import add_process_arguments
from .rundir import check_record_fields, data_fingerprint
from .shared_run import shared_run
from .tables import net_title, text_table, write_csv

__all__ = ["BatchSweep", "cond_vs_batch", "default_sizes", "format_table", "main"]

KEY_FIELDS = ("n", "activation", "depth")
CSV_FIELDS = ["n", "activation", "depth", "rank", "kappa_eff", "kappa", "lambda_max",
              "lambda_min_nonzero", "precision_limited", "min_grad_angle_deg"]


@dataclasses.dataclass(frozen=True)
class BatchSweep(RunResult):
    """Result of ``cond_vs_batch``: the ``records`` (in the order of records.jsonl) and the
    ``config`` (``frame()``: what ``ntkcond.runs.load`` reads), the paths of ``table.csv`` and
    ``figure.png`` (None without a run directory), the title, and how many records were
    computed now / resumed."""

    records: tuple
    config: dict
    title: str
    table_csv: str | None
    figure: str | None
    computed: int
    resumed: int

    def __repr__(self) -> str:
        return f"BatchSweep({len(self.records)} records, {self.computed} computed, {self.resumed} resumed, figure={self.figure!r})"


def default_sizes(n_max: int) -> list[int]:
    """64, 128, 256, … below ``n_max``, then ``n_max``."""
    return [64 * 2**k for k in range(12) if 64 * 2**k < n_max] + [n_max]


def cond_vs_batch(ds: datasets.Dataset, *, out: str | None, sizes=None, max_n: int = 10000,
                  depths=(1, 3, 10), activations=("relu", "linear"), angles: bool = True,
                  block: int = 1024, seed: int = 0, resume: bool = False, overwrite: bool = False,
                  progress: bool = True, w_std=None, b_std=None, residual=None) -> BatchSweep:
    """Run (or resume) the batch-size sweep on ``ds`` into the run directory ``out`` (None: in
    memory, nothing written).

    Args:
      ds: the data set; sizes: batch sizes n (default ``default_sizes(min(len(ds), max_n))``);
      depths: depths L ≥ 0; activations: spellings accepted by ``parse_activation``;
      angles: also stream the smallest gradient angle over all pairs; block: block size;
      seed: the shuffling seed of the nested order; resume, overwrite: ``runs.rundir``.
      w_std, b_std, residual: the nets' options (``ntkcond.network.resolve_mlp``); those set
        go into config.json and every record. ``activations`` may be the nets themselves
        (``MLPFamily``, or ``CNNFamily``: convolutional nets on the images of ``ds``, NHWC,
        their options — arch, readout, filter — in config.json and every record).
    """
    where = "cond_vs_batch"
    depths = sorted({as_int(L, "depth", where, 0) for L in depths})
    acts = resolve_mlps(activations, w_std, b_std, residual, where=where)
    opts = acts[0].options()
    data = acts[0].inputs(ds)  # rows, or NHWC images (CNNs)
    n_all, d = ds.x.shape
    n_max = min(n_all, as_int(max_n, "max_n", where, 2))
    if sizes is not None:
        given = [as_int(n, "size", where, 2) for n in sizes]
        if len(set(given)) != len(given):
            raise ValueError(f"{where}: expected distinct batch sizes, got {given} (each size "
                             "once)")
    sizes = default_sizes(n_max) if sizes is None else sorted(given)
    if not sizes or sizes[-1] > n_all:
        raise ValueError(f"{where}: expected batch sizes 2 <= n <= {n_all} ({ds.name}), got {sizes}")
    check_nonzero_rows(ds, where)
    seed = as_count(seed, "seed", where, minimum=0)
    order = np.random.default_rng(seed).permutation(n_all)
    config = {"dataset": ds.name, "split": ds.split, "d": d, "sizes": sizes, "depths": depths,
              "activations": [a.act.name for a in acts], "width": "inf", "trainable": "all",
              "seed": seed, "nested": True, "angles": bool(angles), "block": block,
              "preprocessing": ds.preprocessing, "data_fingerprint": data_fingerprint(ds.x)}
    config.update(opts)  # only those set: runs of the default net keep their config.json
    share = current_share()  # several processes: all compute each size, process 0 writes
    with shared_run(out, config, key_fields=KEY_FIELDS, resume=resume, overwrite=overwrite,
                    where=where, outputs=OUTPUTS, validate=record_validator(config, n_all)) as run:
        resumed = len(run.records)
        for n in progress_bar(sizes, desc=where, unit="size",
                              disable=not (progress and share.is_root)):
            todo = [a for a in acts if any(run.key({"n": n, "activation": a.act.name, "depth": L})
                                           not in run.done for L in depths)]
            if not todo:
                continue
            x = data[order[:n]]
            smallest = (streaming_smallest_angles(x, depths=depths, activations=todo, block=block)
                        if angles else None)
            for act in todo:
                t0 = time.perf_counter()
                # Linear bias-free fully-connected net: κ is the same at every depth
                # (K = c_L·XXᵀ/d); one kernel serves all (not with biases: K = a_L·XXᵀ/d +
                # b_L·11ᵀ; not a linear CNN, whose filters mix pixels at every layer).
                same = isinstance(act, MLPFamily) and act.is_linear and act.plain
                conds = exact_conditioning(x, depths=depths[:1] if same else depths,
                                           activation=act, block=block)
                seconds = time.perf_counter() - t0
                for L in depths:
                    c = conds[depths[0]] if same else conds[L]
                    # a linear net's kernel at depth L is c_L/c_L0 times the one computed
                    ratio = (act.linear_factor(L) / act.linear_factor(depths[0])) if same else 1.0
                    rec = {"dataset": ds.name, "n": n, "d": d, "activation": act.act.name, "depth": L,
                           "lambda_max": ratio * c.lambda_max,
                           "lambda_min_nonzero": ratio * c.lambda_min_nonzero,
                           "rank": c.rank, "kappa_eff": c.kappa_eff,
                           "kappa": c.kappa if math.isfinite(c.kappa) else None,
                           "precision_limited": c.precision_limited, "seconds": seconds, **opts}
                    if smallest is not None:
                        r = next(q for q in smallest.results
                                 if q.depth == L and q.activation == act.name)
                        rec.update(min_grad_angle_deg=r.degrees,
                                   min_grad_angle_pair=[int(order[r.pair[0]]), int(order[r.pair[1]])])
                    if run.key(rec) not in run.done:
                        run.append(rec)
        records = sorted(run.records, key=lambda r: (r["n"], config["activations"].index(r["activation"]), r["depth"]))
        name = os.path.basename(ds.name) if ds.name.endswith(".npz") else ds.name
        title = f"{name} ({ds.split}), d = {d}, nested batches, infinite width{net_title(opts)}"
        table_csv, figure = run.file("table.csv"), run.file("figure.png")
        if run.path is not None:
            share.on_root(lambda: (write_csv(table_csv, records, CSV_FIELDS),
                                   plot.batch_curves(records, figure, title=title, d=d,
                                                     metadata=config)))
        return BatchSweep(records=tuple(run.records), config=dict(run.config), title=title,
                          table_csv=table_csv, figure=figure,
                          computed=len(run.records) - resumed, resumed=resumed)


#: What a run derives from its records (deleted first by an overwrite, ``runs.rundir``).
OUTPUTS = ("table.csv", "figure.png")


def record_validator(config: dict, n_all: int) -> callable:
    """The check of a stored record against ``config`` (``open_run``'s ``validate``): n one
    of the sizes, activation and depth of the run, d the data's, the spectrum consistent
    (``runs.depth.check_spectrum_fields``), and with angles an angle in degrees and a pair of
    two distinct data-set rows."""

    def validate(rec):
        check_record_fields(rec, {"n": tuple(config["sizes"]), "d": (config["d"],),
                                  "activation": tuple(config["activations"]),
                                  "depth": tuple(config["depths"]), "seconds": "float>=0"})
        check_spectrum_fields(rec)
        if config["angles"]:
            check_record_fields(rec, {"min_grad_angle_deg": "angle", "min_grad_angle_pair": "pair"})
            i, j = rec["min_grad_angle_pair"]
            if i == j or max(i, j) >= n_all:
                raise ValueError(f"expected min_grad_angle_pair of two distinct rows < {n_all}, "
                                 f"got {[i, j]}")

    return validate


def _series(records):
    """(activation, depth) pairs to show: every depth, and a bias-free fully-connected linear
    net once (any depth: its κ does not depend on depth; a linear CNN's, or a net's with
    biases, does)."""
    first = min(r["depth"] for r in records)
    collapse = not any(r.get("b_std") or r.get("arch") == "cnn" for r in records)
    return [k for k in dict.fromkeys((r["activation"], r["depth"]) for r in records)
            if not (collapse and k[0] == "linear" and k[1] != first)]


def format_table(records) -> str:
    """One line per n: κ_eff ('*' at the precision limit), rank and smallest angle (degrees)
    per (activation, depth); a bias-free fully-connected linear net once, as its κ does not
    depend on depth."""
    keys = _series(records)
    once = {a for a, _ in keys if sum(b == a for b, _ in keys) == 1 and a == "linear"}
    header = ["n"] + [f"{a if a in once else f'{a} L={L}'}: {h}" for a, L in keys
                      for h in ("kappa_eff", "rank", "angle°")]
    index = {(r["n"], r["activation"], r["depth"]): r for r in records}
    body = []
    for n in sorted({r["n"] for r in records}):
        line = [str(n)]
        for a, L in keys:
            r = index[(n, a, L)]
            angle = r.get("min_grad_angle_deg")
            line += [f"{r['kappa_eff']:.4g}{'*' if r['precision_limited'] else ' '}", str(r["rank"]),
                     "" if angle is None else f"{angle:.2f}"]
        body.append(line)
    return text_table(header, body)


# The command: ``ntkcond cond-vs-batch`` and ``scripts/cond_vs_batch.py``.

NAME = "cond_vs_batch"
COMMAND_DOC = """Effective condition number and smallest gradient angle against the batch size n.

examples:
  {command}                                   # digits (d = 64), up to 1797
  {command} --dataset ../shared/data/mnist_test.npz --preset mnist
  {command} --dataset ../shared/data/cifar10_test_jpeg_lossy.npz --preset cifar10
  {command} --dataset ../shared/data/cifar10_test.npz --preset cifar10 --downsample 4 \\
      --arch cnn --readout flatten --sizes 64,128,512   # a CNN on 8 x 8 x 3 images

Batches are nested (the first n of one fixed shuffled order). For each n, activation and
depth: the exact κ_eff of the n × n infinite-width NTK, its numerical rank, and the smallest
gradient angle over all pairs. Writes config.json, records.jsonl, table.csv and figure.png to
--out (--resume continues a killed run, --overwrite starts over); prints the table. The
library call: ntkcond.runs.cond_vs_batch.cond_vs_batch.
"""


def build_parser(prog: str | None = None):
    """The flags of ``cond_vs_batch`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    add_data_arguments(p, split="test")
    p.add_argument("--sizes", default=None,
                   help="batch sizes, e.g. 64,128,1000 (default: 64, 128, ... and the data-set size)")
    p.add_argument("--max-n", type=int_at_least(2), default=10000,
                   help="cap on the default batch sizes")
    add_network_arguments(p, depths="1,3,10")
    p.add_argument("--no-angles", action="store_true", help="skip the smallest-angle streaming")
    p.add_argument("--block", type=int_at_least(2), default=1024, help="block size")
    add_run_arguments(p, NAME)
    add_process_arguments(p)
    return p


def _run_command(args):
    nets = nets_from_args(args)
    depths = parse_depths(args.depths)
    ds = load_data(args)
    sizes = None if args.sizes is None else parse_sizes(args.sizes)
    if sizes is not None:
        check_batch(sizes[-1], ds, "--sizes")
    sweep = cond_vs_batch(ds, out=args.out, sizes=sizes,
                          max_n=args.max_n, depths=depths, activations=nets, angles=not args.no_angles, block=args.block,
                          seed=args.seed, resume=args.resume, overwrite=args.overwrite,
                          progress=not args.no_progress)
    print(sweep.title)
    print(format_table(sweep.records))
    print("(rank < n: the kernel is singular; kappa_eff is measured on its range)")
    print(f"table: {os.path.abspath(sweep.table_csv)}")
    print(f"figure: {os.path.abspath(sweep.figure)}")
    return sweep


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, run the sweep, print the table; 0, 2 or 130."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
