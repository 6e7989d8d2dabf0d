"""The smallest infinite-width gradient angle over all pairs of a data set, per depth and
activation, as a resumable run directory (the sweep of ``scripts/min_angle.py``).

The pairs are streamed block by block (``scale.streaming.streaming_smallest_angles``): memory
O(block² + n·d). The stream checkpoints after each block row to ``checkpoint.json`` in the run
directory, so ``resume`` continues a killed run from its last finished block row. When it
completes, one record per (activation, depth) goes to ``records.jsonl``, and ``result.json``
(configuration, input angle, every minimum with its pair) and ``table.csv`` are written.
Across processes (``runs.launcher``) every process sweeps its share of the pairs and process 0
writes the run directory (``runs.shared_run``); ``result.json`` then says ``"processes"``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os

from .. import datasets
from .._core.io import atomic_write
from ..network import NET_KEYS, resolve_mlps
from ..scale.streaming import streaming_smallest_angles
from ..scale.processes import current_share
from .cli import (add_data_arguments, add_network_arguments, add_run_arguments, command_parser,
                  int_at_least, load_data, nets_from_args, parse_depths, positive_int,
                  run_main)
from .frames import RunResult
from .launcher import add_process_arguments
from .rundir import check_record_fields, data_fingerprint
from .shared_run import shared_run
from .tables import net_title, text_table, write_csv

__all__ = ["MinAngleRun", "min_angle", "format_table", "main"]

KEY_FIELDS = ("activation", "depth")
CHECKPOINT = "checkpoint.json"


@dataclasses.dataclass(frozen=True)
class MinAngleRun(RunResult):
    """Result of ``min_angle``: the ``records`` (one per activation and depth) and ``config``
    (``frame()``: what ``ntkcond.runs.load`` reads), ``result`` (the content of result.json),
    and the paths of result.json and table.csv (None without a run directory)."""

    records: tuple
    config: dict
    result: dict
    result_json: str | None
    table_csv: str | None

    def __repr__(self) -> str:
        return f"MinAngleRun({len(self.result['results'])} minima, result={self.result_json!r})"


def min_angle(ds: datasets.Dataset, *, out: str | None, depths=range(11), activations=("relu", "linear"),
              trainable: str = "all", limit: int | None = None, block: int = 1024,
              backend: str = "auto", devices: int | None = None, dtype: str = "float64",
              workers: int | None = None, resume: bool = False, overwrite: bool = False,
              progress: bool = True, w_std=None, b_std=None, residual=None) -> MinAngleRun:
    """Run (or resume) the whole-set smallest-angle search on ``ds`` into ``out`` (None: in
    memory, no checkpoints, nothing written).

    Args:
      ds: the data set; limit: use only its first ``limit`` rows (2 ≤ limit ≤ n).
      depths, activations, trainable: what to compute (``streaming_smallest_angles``).
      block, backend ("auto", "numpy", "jax"), devices, dtype, workers: how.
      resume, overwrite: the run-directory policy (``runs.rundir``).
      w_std, b_std, residual: the nets' options (``ntkcond.network.resolve_mlp``); those set
        go into config.json and every record. ``activations`` may be the nets themselves
        (``MLPFamily``, or ``CNNFamily``: convolutional nets on the images of ``ds``, NHWC, by
        the recursion over all pairs of images, numpy and float64 only; their options —
        arch, readout, filter — in config.json and every record).
    """
    where = "min_angle"
    depths = sorted(set(depths))
    nets = resolve_mlps(activations, w_std, b_std, residual, where=where)
    acts = [net.act.name for net in nets]
    opts = nets[0].options()
    x = ds.x
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 2 <= limit <= len(x):
            raise ValueError(f"{where}: expected --limit 2 <= N <= {len(x)} ({ds.name}), got {limit!r}")
        x = x[:limit]
    data = nets[0].inputs(ds)[:len(x)]  # rows, or NHWC images (CNNs)
    config = {"dataset": ds.name, "split": ds.split, "n": int(x.shape[0]), "d": int(x.shape[1]),
              "depths": depths, "activations": acts, "width": "inf", "trainable": trainable,
              "block": block, "backend": backend, "devices": devices, "dtype": dtype,
              "preprocessing": ds.preprocessing, "data_fingerprint": data_fingerprint(x)}
    config.update(opts)  # only those set: runs of the default net keep their config.json
    share = current_share()  # several processes: process 0 writes, all compute (runs.launcher)
    with shared_run(out, config, key_fields=KEY_FIELDS, resume=resume, overwrite=overwrite,
                    where=where, outputs=OUTPUTS, validate=record_validator(config)) as run:
        checkpoint, result_json = run.file(CHECKPOINT), run.file("result.json")  # None in memory

        def complete():  # process 0: a finished run to return as it is, else None
            if run.path is None:
                return None
            if not resume:  # a fresh run never picks up a stray checkpoint
                for path in (checkpoint, result_json):
                    if os.path.exists(path):
                        os.unlink(path)
            if resume and len(run.done) == len(acts) * len(depths) and os.path.exists(result_json):
                with open(result_json, encoding="utf-8") as f:  # already complete: nothing to do
                    return MinAngleRun(records=tuple(run.records), config=dict(run.config),
                                       result=json.load(f), result_json=result_json,
                                       table_csv=run.file("table.csv"))
            return None

        finished = share.on_root(lambda: _fields(complete()))  # data across processes
        if finished is not None:
            return MinAngleRun(**finished)
        res = streaming_smallest_angles(
            data, depths=depths, activations=nets, trainable=trainable, block=block, backend=backend,
            devices=devices, dtype=dtype, workers=workers, checkpoint=checkpoint,
            progress=progress and share.is_root)

        def write():  # process 0: the records and results
            # the stream names a net with options 'relu,w_std=1.5,b_std=0.1': the record keeps
            # the activation and the options apart
            act_of = {net.name: net.act.name for net in nets}
            rows = [{"activation": act_of[r.activation], "depth": r.depth, "angle_rad": r.angle,
                     "angle_deg": r.degrees, "i": r.pair[0], "j": r.pair[1], **opts}
                     for r in res.results]
            for row in rows:
                if run.key(row) not in run.done:
                    run.append(row)
            result = {"config": {**config, "block": res.block, "backend": res.backend,
                                 "devices": res.devices, "dtype": res.dtype},
                      "pairs": res.pairs, "seconds": res.seconds,
                      "resumed_from_row_block": res.resumed_from_row_block,
                      "input_angle_rad": res.input_angle,
                      "input_angle_deg": math.degrees(res.input_angle),
                      "input_pair": list(res.input_pair), "results": rows}
            if share.distributed:
                result["processes"] = share.count
            table_csv = None
            if run.path is not None:
                atomic_write(result_json, json.dumps(result, indent=2) + "\n")
                table_csv = write_csv(run.file("table.csv"), rows)
                if os.path.exists(checkpoint):
                    os.unlink(checkpoint)  # complete: records.jsonl and result.json hold everything
            return MinAngleRun(records=tuple(run.records), config=dict(run.config), result=result,
                               result_json=result_json, table_csv=table_csv)

        return MinAngleRun(**share.on_root(lambda: _fields(write())))


def _fields(run: MinAngleRun | None) -> dict | None:
    """A ``MinAngleRun`` as the dict of its fields (what ``Share.on_root`` carries)."""
    return None if run is None else {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}


#: What a run derives (deleted first by an overwrite, ``runs.rundir``); the checkpoints too.
OUTPUTS = ("result.json", "table.csv", CHECKPOINT, CHECKPOINT + ".recursion")


def record_validator(config: dict) -> callable:
    """The check of a stored record against ``config`` (``open_run``'s ``validate``): an
    activation and depth of the run, angle_rad in [0, π] with angle_deg its value in degrees
    (to 1e-12 relative), and a pair 0 ≤ i < j < n."""
    n = config["n"]

    def validate(rec):
        check_record_fields(rec, {"activation": tuple(config["activations"]),
                                  "depth": tuple(config["depths"]), "angle_rad": "float>=0",
                                  "angle_deg": "angle", "i": "int>=0", "j": "int>=0"})
        if rec["angle_rad"] > math.pi or abs(math.degrees(rec["angle_rad"]) - rec["angle_deg"]) > 1e-12 * 180:
            raise ValueError(f"expected angle_rad in [0, pi] with angle_deg = degrees(angle_rad), "
                             f"got {rec['angle_rad']!r} and {rec['angle_deg']!r}")
        if not rec["i"] < rec["j"] < n:
            raise ValueError(f"expected a pair 0 <= i < j < n = {n}, got ({rec['i']}, {rec['j']})")

    return validate


def format_table(result: dict) -> str:
    """One line per depth: per activation the smallest angle in degrees and its pair."""
    rows = result["results"]
    acts = list(dict.fromkeys(r["activation"] for r in rows))
    index = {(r["activation"], r["depth"]): r for r in rows}
    header = ["depth"] + [h for a in acts for h in (f"{a} (deg)", "pair")]
    body = [[str(L)] + [c for a in acts for c in (f"{index[(a, L)]['angle_deg']:.10g}",
                                                   f"({index[(a, L)]['i']}, {index[(a, L)]['j']})")]
            for L in sorted({r["depth"] for r in rows})]
    return text_table(header, body, rule=False)


# The command: ``ntkcond min-angle`` and ``scripts/min_angle.py``.

NAME = "min_angle"
COMMAND_DOC = """Smallest infinite-width gradient angle over all pairs of a data set, per depth and activation.

examples:
  {command}                                  # digits (1797 images), depths 0-10
  {command} --dataset mnist --split test --data-dir ../shared/data
  {command} --dataset ../shared/data/mnist_test.npz --preset mnist
  {command} --dataset ../shared/data/mnist_test.npz --preset mnist --downsample 4 --arch cnn \\
      --readout gap --limit 1000   # a CNN: blocks of image pairs (numpy, float64)

Streams the n(n−1)/2 pairs block by block: memory O(block² + n·d). Writes config.json,
records.jsonl (one record per activation × depth), result.json (also the input angle and the
run's timing) and table.csv to --out, and checkpoint.json while running: --resume continues
a killed run from its last finished block row; --overwrite starts over. Prints the table.
The library call: ntkcond.runs.min_angle.min_angle.
"""


def build_parser(prog: str | None = None):
    """The flags of ``min_angle`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    add_data_arguments(p)
    p.add_argument("--limit", type=int_at_least(2), default=None,
                   help="use only the first N examples (default: all)")
    add_network_arguments(p, trainable=True)
    p.add_argument("--block", type=int_at_least(2), default=1024, help="block size")
    p.add_argument("--backend", default="auto", choices=["auto", "numpy", "jax"])
    p.add_argument("--devices", type=positive_int, default=None,
                   help="jax: use the first N devices (default: all)")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                   help="jax backend only: float32 blocks with highest-precision matmuls")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="numpy: threads (default: CPUs)")
    add_run_arguments(p, NAME)
    add_process_arguments(p)
    return p


def _run_command(args):
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers: expected an integer >= 1, got {args.workers}")
    nets = nets_from_args(args)
    if nets[0].takes_images and args.backend == "jax":
        raise ValueError("--backend: convolutional nets (--arch cnn) run on backend numpy only, "
                         "got --backend jax")
    if nets[0].takes_images and args.workers is not None:
        raise ValueError(f"--workers: convolutional nets (--arch cnn) run one block at a time on "
                         f"numba's threads (set NUMBA_NUM_THREADS), got --workers {args.workers}")
    if nets[0].takes_images and args.dtype != "float64":
        raise ValueError(f"--dtype: convolutional nets (--arch cnn) are computed in float64 "
                         f"only, got --dtype {args.dtype}")
    depths = parse_depths(args.depths)
    ds = load_data(args)
    res = min_angle(ds, out=args.out, depths=depths, activations=nets,
                    trainable=args.trainable, limit=args.limit, block=args.block,
                    backend=args.backend, devices=args.devices, dtype=args.dtype,
                    workers=args.workers, resume=args.resume, overwrite=args.overwrite,
                    progress=not args.no_progress)
    r, c = res.result, res.result["config"]
    opts = {k: c[k] for k in NET_KEYS if k in c}
    print(f"{os.path.basename(c['dataset'])} ({c['split']}), n = {c['n']}, {r['pairs']} pairs, "
          f"infinite width, trainable = {c['trainable']}{net_title(opts)}, {c['backend']} "
          f"x{c['devices']}, {r['seconds']:.1f} s")
    print(f"smallest input angle: {math.degrees(r['input_angle_rad']):.6g} deg, pair {tuple(r['input_pair'])}")
    print(format_table(r))
    print(f"result: {os.path.abspath(res.result_json)}")
    return res


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, stream the pairs, print the table; 0, 2 or 130."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
