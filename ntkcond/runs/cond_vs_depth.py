"""κ_eff and the smallest gradient angle against depth, ReLU beside linear (Liu & Hui, arXiv
2305.08813, Fig. 2–3), over the batches of a data set, as a resumable run directory.

``cond_vs_depth`` runs the sweep the script ``scripts/cond_vs_depth.py`` runs: per batch,
width (∞ or finite), activation and seed it computes the missing depths (``runs.depth``),
appends one record per kernel to ``records.jsonl``, then writes ``summary.csv`` (median, mean,
min and max over batches and seeds) and ``figure.png`` (medians, min–max band).

With ``save_spectra`` the eigenvalues of every kernel are kept too, from the eigendecomposition
``conditioning`` already makes (no second one): each is written as ``spectra/<key>.npy`` before
its record is appended (``spectrum_key``: ``b{batch}_L{depth}_{activation}_w{width}_s{seed}``),
so a killed run resumed with ``resume`` still ends with every spectrum; at the end they are
packed into ``spectra.npz`` (one (n,) ascending float64 array per record, K's units) and drawn
in ``spectra.png`` (``ntkcond.plot.spectra``). ``out=None`` runs the sweep in memory: the
result holds the records (``frame()``) and, with ``save_spectra``, the eigenvalues.

Across processes (``runs.launcher``) the calls (one per batch in a fresh Figure-2 run) go
round-robin to the processes, one round at a time; after each round the records are gathered
and process 0 appends them in the order one process would (``runs.shared_run``), so
``records.jsonl`` is the same and a killed run loses at most the round in flight.
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import math
import os

import numpy as np

from .. import datasets, plot
from .._core.checks import as_depth, as_int
from .._core.io import atomic_write
from .._core.progress import progress_bar
from .._core.memory import InsufficientMemoryError, available_memory
from ..finite.sweep import NetWeights
from ..scale.processes import current_share
from ..network import resolve_mlps
from .cli import (add_data_arguments, add_network_arguments, add_run_arguments, check_batch,
                  command_parser, load_data, nets_from_args, parse_depths, parse_width,
                  positive_int, run_main)
from .depth import check_nonzero_rows, check_spectrum_fields, iter_finite_batch, iter_infinite_batch
from .frames import RunResult
from .launcher import add_process_arguments
from .rundir import check_record_fields, data_fingerprint
from .shared_run import shared_run
from .tables import net_title, text_table, write_csv

__all__ = ["DepthSweep", "cond_vs_depth", "summarize", "format_table", "spectrum_key",
           "pack_spectra", "net_title", "main"]

KEY_FIELDS = ("batch_index", "depth", "activation", "width", "seed")


@dataclasses.dataclass(frozen=True)
class DepthSweep(RunResult):
    """Result of ``cond_vs_depth``: its ``records`` and ``config`` (``frame()``: the DataFrame
    ``ntkcond.runs.load`` reads from the run directory), ``rows`` of ``summarize``, the
    ``title``, the paths of ``summary.csv`` and ``figure.png`` (None without a run directory),
    how many kernels were computed now / resumed; with ``save_spectra`` the eigenvalues
    (``spectra``: {``spectrum_key``: (n,) array}) and the paths of ``spectra.npz`` and
    ``spectra.png``."""

    records: tuple
    config: dict
    rows: tuple
    title: str
    summary_csv: str | None
    figure: str | None
    computed: int
    resumed: int
    spectra: dict | None = None
    spectra_npz: str | None = None
    spectra_figure: str | None = None

    def __repr__(self) -> str:
        return f"DepthSweep({len(self.rows)} rows, {self.computed} computed, {self.resumed} resumed, figure={self.figure!r})"


def _width_key(w):
    return math.inf if w == "inf" else int(w)


def _unique_widths(widths, where: str) -> list:
    """Widths "inf" and integers >= 1, each once, sorted (∞ last)."""
    if isinstance(widths, (str, int)):
        widths = [widths]
    items = [w if w == "inf" else as_int(w, "width", where, 1) for w in widths]
    if not items or len(set(items)) != len(items):
        raise ValueError(f"{where}: expected one or more distinct widths ('inf' or integers "
                         f">= 1), got {list(widths)!r}")
    return sorted(items, key=_width_key)


def cond_vs_depth(ds: datasets.Dataset, *, out: str | None, batch: int = 512, depths=range(11),
                  activations=("relu", "linear"), widths=("inf",), seeds: int = 5,
                  trainable: str = "all", seed: int = 0, in_order: bool = False,
                  drop_last: bool = True, max_batches: int | None = None, resume: bool = False,
                  overwrite: bool = False, progress: bool = True,
                  save_spectra: bool = False, w_std=None, b_std=None,
                  residual=None) -> DepthSweep:
    """Run (or resume) the depth sweep on the batches of ``ds`` into the run directory ``out``
    (None: in memory, nothing written; the result holds the records).

    Args:
      ds: the data set (``datasets.load``); batches of ``batch`` rows (``datasets.batches``
        with ``seed``, ``in_order`` = no shuffling, ``drop_last``, ``max_batches``);
        ``drop_last`` (default) drops a final smaller batch, so every record has n = ``batch``
        (the figure's title states n either way).
      depths: depths L ≥ 0; activations: spellings accepted by ``parse_activation``, or the
        nets themselves (``ntkcond.network.MLPFamily``, as ``resolve_mlps`` builds them, or
        ``CNNFamily``, ``resolve_cnns``: convolutional nets on the images of ``ds``).
      widths: "inf" and/or finite widths m ≥ 1; finite widths use the nets of seeds
        0 … ``seeds`` − 1 (the same nets on every batch).
      trainable: "all", "first" or "last".
      resume, overwrite: the run-directory policy (``runs.rundir``).
      progress: show progress on stderr (``ntkcond._core.progress``); a str is its label
        (default ``cond_vs_depth``).
      save_spectra: keep every kernel's eigenvalues (module docstring); part of the run's
        configuration (``"save_spectra": true`` in config.json), so a run resumes only with
        the same choice.
      w_std, b_std, residual: the nets' options (``ntkcond.network.resolve_mlp``: weight and
        bias stds, residual scale); the defaults are the norm-preserving bias-free net. Those
        set are part of the configuration (config.json) and of every record.
    """
    where = "cond_vs_depth"
    depths = sorted({as_depth(L, where) for L in depths})
    # the nets built once here (one per activation); the batches get the objects
    parsed = {net.act.name: net for net in resolve_mlps(activations, w_std, b_std, residual,
                                                         where=where)}
    acts = list(parsed)
    opts = next(iter(parsed.values())).options()
    data = next(iter(parsed.values())).inputs(ds)  # rows, or NHWC images (CNNs)
    widths = _unique_widths(widths, where)
    seeds = list(range(as_int(seeds, "seeds", where, 1)))
    index_batches = datasets.batches(ds, batch, seed=seed, shuffle=not in_order,
                                     max_batches=max_batches, drop_last=drop_last)
    _check_batch_memory(batch, len(ds.x), where)
    check_nonzero_rows(ds, where)
    config = {"dataset": ds.name, "split": ds.split, "batch": batch, "depths": depths,
              "activations": acts, "width": widths, "trainable": trainable,
              "init_seeds": seeds if widths != ["inf"] else None, "seed": seed,
              "in_order": in_order, "drop_last": drop_last, "max_batches": max_batches,
              "preprocessing": ds.preprocessing, "data_fingerprint": data_fingerprint(ds.x)}
    config.update(opts)  # only those set: runs of the default net keep their config.json
    if save_spectra:  # only when set: runs made before the flag existed still resume
        config["save_spectra"] = True
    share = current_share()  # several processes: the calls split, process 0 writes
    with shared_run(out, config, key_fields=KEY_FIELDS, resume=resume, overwrite=overwrite,
                    where=where, outputs=OUTPUTS,
                    validate=record_validator(config, [len(i) for i in index_batches])) as run:
        resumed = len(run.records)
        todo = []  # (batch, activation, width, seed, depths still missing)
        for b in range(len(index_batches)):
            for width in widths:
                for act in acts:
                    for s in ([None] if width == "inf" else seeds):
                        missing = [L for L in depths if run.key(
                            {"batch_index": b, "depth": L, "activation": act, "width": width, "seed": s}) not in run.done]
                        if missing:
                            todo.append((b, act, width, s, missing))
        total = len(index_batches) * len(acts) * len(depths) * sum(
            1 if w == "inf" else len(seeds) for w in widths)
        spectra_dir = run.file("spectra")
        kept = {}  # the eigenvalues of a run in memory
        latest = []  # the eigenvalues of the kernel whose record comes next
        hook = latest.append if save_spectra else None
        weights = NetWeights()  # each (seed, depth) net drawn once for all batches and activations
        def records_of(call):
            b, width, group_acts, group_seeds, missing = call
            index = index_batches[b]
            meta = {"dataset": ds.name, "split": ds.split, "batch_index": b}
            if width == "inf":
                return iter_infinite_batch(data[index], index, depths=missing,
                                           nets=[parsed[a] for a in group_acts],
                                           trainable=trainable, meta=meta, on_spectrum=hook)
            return iter_finite_batch(data[index], index, depths=missing,
                                     nets=[parsed[a] for a in group_acts], width=width,
                                     seeds=group_seeds, trainable=trainable, meta=meta,
                                     on_spectrum=hook, weights=weights)

        def keep(rec, spectrum, bar):
            if save_spectra and share.is_root:  # the spectrum first: a record never lacks its file
                if spectra_dir is None:
                    kept[spectrum_key(rec)] = np.asarray(spectrum, np.float64)
                else:
                    _save_npy(os.path.join(spectra_dir, spectrum_key(rec) + ".npy"), spectrum)
            run.append(rec)
            bar.update(1)

        calls = grid_calls(todo)
        label = progress if isinstance(progress, str) else where
        with progress_bar(total=total, initial=resumed, desc=label, unit="kernel",
                          disable=not (progress and share.is_root)) as bar:
            if not share.distributed:  # each record kept as it finishes
                for call in calls:
                    for rec in records_of(call):
                        keep(rec, latest.pop() if save_spectra else None, bar)
            else:  # rounds of one call per process; the records kept in call order
                for start in range(0, len(calls), share.count):
                    mine, error = [], None
                    if start + share.index < len(calls):
                        try:
                            for rec in records_of(calls[start + share.index]):
                                mine.append((rec, latest.pop() if save_spectra else None))
                        except Exception as err:  # noqa: BLE001 (raised in every process)
                            error = err
                    parts = share.allgather((mine, error))
                    for _, err in parts:
                        if err is not None:
                            raise err
                    for part, _ in parts:
                        for rec, spectrum in part:
                            keep(rec, spectrum, bar)
        rows = summarize(run.records)
        if not share.is_root:  # the files are process 0's; the others return the same result
            return DepthSweep(**share.broadcast(None))  # its fields, sent as data
        sizes = sorted({len(i) for i in index_batches})
        name = os.path.basename(ds.name) if ds.name.endswith(".npz") else ds.name
        nets = (f"width {', '.join('∞' if w == 'inf' else str(w) for w in sorted(widths, key=lambda w: w != 'inf'))}"
                + (f" ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})"
                   if widths != ["inf"] else "")
                + f", trainable = {trainable}" + net_title(opts))
        title = (f"{name} ({ds.split}), n = {'/'.join(map(str, sizes))}, "
                 f"{len(index_batches)} batch{'es' if len(index_batches) != 1 else ''}, {nets}")
        # the figure states n and the batches itself, from the records
        figure_title = f"{name} ({ds.split}), {nets}"
        summary_csv = figure = spectra_npz = spectra_figure = None
        arrays = kept if save_spectra else None
        if run.path is not None:
            summary_csv = write_csv(run.file("summary.csv"), rows)
            figure = plot.depth_curves(run.records, run.file("figure.png"), title=figure_title,
                                       metadata=config)
            if save_spectra:
                arrays = pack_spectra(spectra_dir, [spectrum_key(r) for r in run.records],
                                      run.file("spectra.npz"), where=where)
                spectra_npz = run.file("spectra.npz")
                spectra_figure = plot.spectra(arrays, run.records, run.file("spectra.png"),
                                              key=spectrum_key, title=title,
                                              metadata=config)
        result = DepthSweep(records=tuple(run.records), config=dict(run.config), rows=tuple(rows),
                            title=title, summary_csv=summary_csv, figure=figure,
                            computed=len(run.records) - resumed, resumed=resumed, spectra=arrays,
                            spectra_npz=spectra_npz, spectra_figure=spectra_figure)
        return DepthSweep(**share.broadcast(
            {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}))


#: What a run derives from its records (deleted first by an overwrite, ``runs.rundir``).
OUTPUTS = ("summary.csv", "figure.png", "spectra", "spectra.npz", "spectra.png")


def record_validator(config: dict, batch_sizes) -> callable:
    """The check of a stored record against ``config`` (``open_run``'s ``validate``): every
    field of ``runs.depth.RECORD_KEYS`` of the right kind and range, the key fields within the
    configuration (a batch index below the number of batches, n its size, a depth, activation,
    width, seed and trainable of the run), the spectrum consistent (``check_spectrum_fields``)
    and the pair's indices distinct."""
    widths, seeds = config["width"], config["init_seeds"] or []

    def validate(rec):
        check_record_fields(rec, {
            "dataset": (config["dataset"],), "split": (config["split"],),
            "batch_index": "int>=0", "depth": tuple(config["depths"]),
            "activation": tuple(config["activations"]), "trainable": (config["trainable"],),
            "min_grad_angle_deg": "angle", "min_grad_angle_pair": "pair",
            "min_input_angle_deg": "angle", "seconds": "float>=0"})
        # fields added later: checked when present, so older runs still resume
        check_record_fields(rec, {k: v for k, v in (("lambda_min_upper_bound", "float"),
                                                     ("lambda_min_bound_ratio", "float|None"))
                                  if k in rec})
        if rec["batch_index"] >= len(batch_sizes):
            raise ValueError(f"expected batch_index < {len(batch_sizes)} (the run's batches), got "
                             f"{rec['batch_index']}")
        if rec.get("width") not in widths:
            raise ValueError(f"expected width in {widths}, got {rec.get('width')!r}")
        if rec["width"] == "inf" and rec.get("seed") is not None:
            raise ValueError(f"expected seed null at width inf, got {rec.get('seed')!r}")
        if rec["width"] != "inf" and (rec.get("seed") not in seeds or isinstance(rec.get("seed"), bool)):
            raise ValueError(f"expected seed in {seeds}, got {rec.get('seed')!r}")
        check_spectrum_fields(rec)
        if rec["n"] != batch_sizes[rec["batch_index"]]:
            raise ValueError(f"expected n = {batch_sizes[rec['batch_index']]} (the size of batch "
                             f"{rec['batch_index']}), got {rec['n']}")
        i, j = rec["min_grad_angle_pair"]
        if i == j:
            raise ValueError(f"expected min_grad_angle_pair of two distinct rows, got {[i, j]}")

    return validate


def grid_calls(todo) -> list[tuple]:
    """The work items ``todo`` of ``cond_vs_depth`` — (batch, activation, width, seed, missing
    depths), in record order — as calls (batch, width, activations, seeds, missing depths).

    At finite width, consecutive items of one batch and width that form a full grid
    activations × seeds with the same missing depths become one call of ``iter_finite_batch``,
    which yields its records in exactly that order (activation, seed, depth): the records and
    ``records.jsonl`` are the same as with one call per item, but the worker threads of
    ``ordered_map`` run on from one (activation, seed) to the next instead of draining at the
    end of each, where one worker idles while the other finishes the last kernel. A fresh
    run's batch is one call (110 kernels for the Figure-2 sweep instead of 10 calls of 11); in
    a resumed run, items whose missing depths differ stay apart. Infinite width keeps one call
    per item (seed None).
    """
    rows: list = []  # first the seeds of one activation: (batch, width, [act], [seeds], missing)
    for b, act, width, seed, missing in todo:
        last = rows[-1] if rows else None
        if (width != "inf" and last is not None and last[:3] == (b, width, [act])
                and last[4] == missing):
            last[3].append(seed)
        else:
            rows.append((b, width, [act], [seed], missing))
    calls: list = []  # then the activations with the same seeds and missing depths
    for b, width, acts, seeds, missing in rows:
        last = calls[-1] if calls else None
        if (width != "inf" and last is not None and last[:2] == (b, width)
                and last[3] == seeds and last[4] == missing):
            last[2].extend(acts)
        else:
            calls.append((b, width, acts, seeds, missing))
    return calls


def spectrum_key(rec: dict) -> str:
    """``b{batch_index}_L{depth}_{activation}_w{width}_s{seed}`` of a record, e.g.
    ``b0_L3_relu_winf_s-`` (seed None at infinite width is ``-``; a ':' in a leaky
    activation's name is dropped: ``leaky0.1``). Unique per record of one run."""
    seed = "-" if rec["seed"] is None else rec["seed"]
    act = str(rec["activation"]).replace(":", "")
    return f"b{rec['batch_index']}_L{rec['depth']}_{act}_w{rec['width']}_s{seed}"


def _save_npy(path: str, array) -> None:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array, dtype=np.float64))
    atomic_write(path, buf.getvalue())


def pack_spectra(folder: str, keys, path: str, *, where: str = "pack_spectra") -> dict:
    """Read ``folder/<key>.npy`` for every key and write them, keyed, to the .npz ``path``
    (atomically). Returns {key: (n,) array}. ValueError naming the first missing file."""
    arrays = {}
    for key in keys:
        file = os.path.join(folder, key + ".npy")
        if not os.path.isfile(file):
            raise ValueError(f"{where}: expected the spectrum {file} of record {key}, got "
                             f"{'no such file' if not os.path.exists(file) else 'a folder'}; "
                             "rerun with --overwrite to recompute")
        try:
            spectrum = np.load(file, allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:  # object arrays, damaged or foreign files
            raise ValueError(f"{where}: expected {file} to hold the spectrum of record {key} (a "
                             f".npy of float64 eigenvalues), got a file numpy cannot read as one "
                             f"({' '.join(str(err).split())[:120]}); rerun with --overwrite") from None
        if not (isinstance(spectrum, np.ndarray) and spectrum.dtype == np.float64
                and spectrum.ndim == 1):
            raise ValueError(f"{where}: expected {file} to hold a 1-D float64 spectrum (record "
                             f"{key}), got {getattr(spectrum, 'dtype', type(spectrum).__name__)} "
                             f"of shape {getattr(spectrum, 'shape', '?')}; rerun with --overwrite")
        arrays[key] = spectrum
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(path, buf.getvalue())
    return arrays


#: float64 n × n arrays alive at once in one batch's infinite-width sweep (geometry, recursion
#: terms, kernel, angles, eigvalsh workspace): the tracemalloc peak of ``measure_infinite_batch``
#: (depths 0-10, ReLU and linear) is 26.0 of them at n = 256 and at n = 512; 28 leaves a margin.
BATCH_ARRAYS = 28


def _check_batch_memory(batch: int, n_data: int, where: str) -> None:
    n = min(int(batch), int(n_data))
    needed = BATCH_ARRAYS * 8 * n * n
    if needed > available_memory():
        raise InsufficientMemoryError(
            f"{where}: a batch of n = {n} needs about {needed / 2**30:.1f} GiB "
            f"({BATCH_ARRAYS} float64 n × n arrays) but only {available_memory() / 2**30:.1f} GiB "
            "is available; use a smaller --batch, or for a whole data set "
            "scripts/min_angle.py (angles) and ntkcond.exact_conditioning / "
            "matrix_free_conditioning (κ)")


def summarize(records) -> list[dict]:
    """Median, mean, min and max of κ_eff and of the smallest gradient angle (degrees).

    Groups by (width, activation, depth, trainable), over batches and seeds.

    Returns:
      list of rows sorted by width, activation, depth.
    """
    groups: dict = {}
    for r in records:
        key = (str(r["width"]), r["activation"], int(r["depth"]), r["trainable"])
        groups.setdefault(key, []).append(r)
    rows = []
    for (width, activation, depth, trainable), recs in groups.items():
        row = {"width": width, "activation": activation, "depth": depth, "trainable": trainable,
               "count": len(recs)}
        for field in ("kappa_eff", "min_grad_angle_deg"):
            v = np.array([r[field] for r in recs], dtype=np.float64)
            row.update({f"{field}_mean": float(v.mean()), f"{field}_median": float(np.median(v)),
                        f"{field}_min": float(v.min()), f"{field}_max": float(v.max())})
        row["rank_min"] = int(min(r["rank"] for r in recs))
        row["precision_limited"] = any(r["precision_limited"] for r in recs)
        rows.append(row)
    return sorted(rows, key=lambda row: (_width_key(row["width"]), row["activation"], row["depth"]))


def format_table(rows) -> str:
    """One line per (width, depth), activations side by side: median κ_eff ('*' when at the
    float64 resolution limit) and median smallest gradient angle in degrees."""
    acts = sorted({r["activation"] for r in rows}, key=lambda a: (a != "relu", a != "linear", a))
    index = {(r["width"], r["depth"], r["activation"]): r for r in rows}
    keys = sorted({(r["width"], r["depth"]) for r in rows}, key=lambda k: (_width_key(k[0]), k[1]))
    header = ["width", "depth"] + [h for a in acts for h in (f"kappa_eff {a}", f"angle° {a}")]
    body = []
    for width, depth in keys:
        line = [width, str(depth)]
        for a in acts:
            r = index.get((width, depth, a))
            line += (["", ""] if r is None else
                     [f"{r['kappa_eff_median']:.4g}{'*' if r['precision_limited'] else ' '}",
                      f"{r['min_grad_angle_deg_median']:.4f}"])
        body.append(line)
    return text_table(header, body)


# The command: ``ntkcond cond-vs-depth`` and ``scripts/cond_vs_depth.py``.

NAME = "cond_vs_depth"
COMMAND_DOC = """NTK condition number and smallest gradient angle against depth, ReLU beside linear.

examples:
  {command}                      # digits, batch 512, depths 0-10
  {command} --dataset cifar10 --split test --data-dir ../shared/data
  {command} --dataset path/to/file.npz --preset mnist --depths 0,1,5
  {command} --width inf 512 2048 --seeds 5   # finite beside infinite

Finite widths are exact empirical NTKs of ntkcond.mlp nets (float64), one net per seed
0 … --seeds − 1, the same nets on every batch. Writes to --out: config.json, records.jsonl
(one record per batch × width × activation × seed × depth, appended as each finishes),
summary.csv (median, mean, min, max over batches and seeds) and figure.png; prints the table
(medians) and the figure's path. --save-spectra also keeps every kernel's eigenvalues
(spectra/<key>.npy as each finishes, packed into spectra.npz, keys
b{batch}_L{depth}_{activation}_w{width}_s{seed}) and draws spectra.png (eigenvalue decay per
depth, ReLU vs linear, first batch). --resume continues a killed run; a run directory is never
replaced without --overwrite. The library call: ntkcond.runs.cond_vs_depth.cond_vs_depth.
"""


def build_parser(prog: str | None = None):
    """The flags of ``cond_vs_depth`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    add_data_arguments(p)
    p.add_argument("--batch", type=positive_int, default=512, help="batch size n")
    p.add_argument("--max-batches", type=positive_int, default=None,
                   help="at most this many batches (default: every batch of the data set)")
    add_network_arguments(p, trainable=True)
    p.add_argument("--width", type=parse_width, nargs="+", default=["inf"],
                   help="inf and/or finite widths, e.g. --width inf 512 2048")
    p.add_argument("--seeds", type=positive_int, default=5,
                   help="finite widths: number of random nets, seeds 0..S-1")
    p.add_argument("--in-order", action="store_true", help="keep the file order (no shuffling)")
    p.add_argument("--drop-last", action=argparse.BooleanOptionalAction, default=True,
                   help="drop a final batch smaller than --batch, so every kernel has n = "
                        "--batch (--no-drop-last keeps it; the figure's title states n)")
    p.add_argument("--save-spectra", action="store_true",
                   help="keep every kernel's eigenvalues: spectra.npz and spectra.png")
    add_run_arguments(p, NAME)
    add_process_arguments(p)
    return p


def _run_command(args):
    nets = nets_from_args(args)
    depths = parse_depths(args.depths)
    ds = load_data(args)
    check_batch(args.batch, ds)
    sweep = cond_vs_depth(ds, out=args.out, batch=args.batch, depths=depths,
                          activations=nets, widths=args.width, seeds=args.seeds,
                          trainable=args.trainable, seed=args.seed, in_order=args.in_order,
                          drop_last=args.drop_last, max_batches=args.max_batches,
                          resume=args.resume, overwrite=args.overwrite,
                          progress=not args.no_progress, save_spectra=args.save_spectra)
    print(sweep.title)
    print(format_table(sweep.rows))
    print("(medians over batches and seeds; * = kappa_eff at the float64 resolution limit)")
    print(f"summary: {os.path.abspath(sweep.summary_csv)}")
    print(f"figure: {os.path.abspath(sweep.figure)}")
    if sweep.spectra_npz:
        print(f"spectra: {os.path.abspath(sweep.spectra_npz)}, "
              f"{os.path.abspath(sweep.spectra_figure)}")
    return sweep


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv`` (default sys.argv[1:]), run the sweep, print the table;
    0, or 2 (bad input, one line on stderr), or 130 (Ctrl-C)."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
