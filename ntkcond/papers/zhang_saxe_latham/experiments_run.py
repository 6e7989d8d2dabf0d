"""The bias-free experiments as a run directory (what ``ntkcond biasfree-dynamics`` and
``scripts/biasfree_dynamics.py`` run, ``main``):
each experiment writes ``summary_<name>.json`` and ``<name>.png`` to ``out`` and one record
(its name, its own settings and its summary) to ``records.jsonl``. One directory collects
experiments run with the same common settings (``fast``, ``seed``): ``resume`` adds
experiments to it and skips those already done with the same settings, ``overwrite`` starts
over, and an earlier run is never replaced without one of them."""
from __future__ import annotations

import dataclasses
import json
import math

from ... import plot as plot_module
from ..._core.io import atomic_write
from ..._core.progress import progress_bar
from ...runs.cli import add_run_arguments, command_parser, int_at_least, positive_int, run_main
from ...runs.frames import RunResult
from ...runs.rundir import open_run
from .figures import plot

__all__ = ["ExperimentsRun", "run_experiments", "main"]


def _check_record(rec: dict) -> None:
    """A stored record: a name, and its settings and summary as JSON objects."""
    if not isinstance(rec.get("name"), str):
        raise ValueError(f"expected name as a string, got {rec.get('name')!r}")
    for field in ("settings", "summary"):
        if not isinstance(rec.get(field), dict):
            raise ValueError(f"expected {field} as a JSON object, got {type(rec.get(field)).__name__}")


@dataclasses.dataclass(frozen=True)
class ExperimentsRun(RunResult):
    """Result of ``run_experiments``: the ``records`` (one per experiment: name, settings,
    summary) and ``config`` (``frame()``: what ``ntkcond.runs.load`` reads from ``out``), and
    ``summary`` ({name: summary dict with "figure" (None in memory) and "config"})."""

    records: tuple
    config: dict
    summary: dict


def run_experiments(experiments: dict, out: str | None, *, config: dict,
                    write_all: bool = False, resume: bool = False, overwrite: bool = False,
                    progress=None) -> ExperimentsRun:
    """Run ``experiments`` ({name: (function, kwargs)}) into the run directory ``out`` (None:
    in memory; no figures or files).

    Args:
      experiments: each function is called as ``fn(progress=..., **config, **kwargs)`` and
        returns an ``ExperimentResult``.
      config: the settings common to every experiment (e.g. {"fast": True, "seed": 0});
        stored in config.json and in each summary.
      write_all: also write ``summary.json`` with every summary.
      progress: optional callable(iterable, name) wrapping the experiments' inner loops.

    Returns:
      an ``ExperimentsRun``.
    """
    wrap = progress or (lambda it, name: it)
    summary = {}
    with open_run(out, config, key_fields=("name",), resume=resume, overwrite=overwrite,
                  where="biasfree_dynamics", outputs=("*.png", "summary_*.json", "summary.json"),
                  validate=_check_record) as run:
        done = {r["name"]: r for r in run.records}
        for name in wrap(list(experiments), None):
            fn, kwargs = experiments[name]
            settings = json.loads(json.dumps(kwargs))
            if name in done:
                if done[name].get("settings") != settings:
                    raise ValueError(
                        f"biasfree_dynamics: {out} already holds '{name}' with settings "
                        f"{done[name].get('settings')}, asked {settings}; use another --out or --overwrite")
                summary[name] = done[name]["summary"]
                continue
            result = fn(progress=lambda it, _n=name: wrap(it, _n), **config, **kwargs)
            entry = dict(result.summary)
            entry["figure"] = None
            if run.path is not None:
                with plot_module.style():  # the one style of ntkcond.plot
                    figure = plot(result)
                entry["figure"] = plot_module.save(figure, run.file(f"{result.name}.png"))
            entry["config"] = dict(config)
            entry = json.loads(json.dumps(entry, default=float))
            if run.path is not None:
                atomic_write(run.file(f"summary_{name}.json"), json.dumps(entry, indent=2) + "\n")
            run.append({"name": name, "settings": settings, "summary": entry})
            summary[name] = entry
        if write_all and run.path is not None:
            atomic_write(run.file("summary.json"), json.dumps(summary, indent=2) + "\n")
        return ExperimentsRun(records=tuple(run.records), config=dict(run.config),
                              summary=summary)


# The command: ``ntkcond biasfree-dynamics`` and ``scripts/biasfree_dynamics.py``.

NAME = "biasfree_dynamics"
COMMAND_DOC = """Bias-free ReLU networks as linear networks (Zhang, Saxe & Latham, arXiv 2406.12615).

    {command} all --fast           # every experiment, small and quick
    {command} equivalence --dataset digits
    {command} closed-form --lrs 0.004,0.05,0.2,0.6

Subcommands: expressivity (item 1), equivalence (2), closed-form (3), symmetry-breaking (4),
deep (5), ntk (6); orthogonal, xor, rank-one, large-init (independent linear nets on
orthogonal and XOR data, the conserved rank-one structure, collapse at large init and
learning rate); bias-breaking (the equivalence of item 2 with a trained hidden bias of scale
s_b: how far it breaks); all. Each writes <name>.png and summary_<name>.json to --out (``all`` also
writes summary.json with every result) and prints the JSON summary. The experiments are
``ntkcond.papers.zhang_saxe_latham.experiments``, the figures ``.figures.plot``; the run
directory ``.experiments_run.run_experiments``: one directory collects
experiments with the same --fast/--seed (--resume adds to it; --overwrite starts over).
"""


def _floats(text: str | None, name: str) -> list[float] | None:
    """'0.1,0.05' → [0.1, 0.05]; None (flag not given) → None (the experiment's default)."""
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None
    if not values:
        raise ValueError(f"{name}: expected at least one number, got {text!r}")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{name}: expected finite numbers, got {text!r}")
    return values


def _experiments(args) -> dict:
    """Subcommand → (experiment function, its keyword arguments from the flags)."""
    from . import experiments as ex

    sizes = _floats(args.sizes, "--sizes")
    if sizes is not None and any(v != int(v) for v in sizes):
        raise ValueError(f"--sizes: expected whole numbers, got {args.sizes!r}")
    return {
        "expressivity": (ex.expressivity, {}),
        "equivalence": (ex.equivalence, dict(dataset=args.dataset, lr=args.lr, time=args.time,
                                             strength=args.strength, init_scale=args.init_scale)),
        "closed-form": (ex.closed_form, dict(lrs=_floats(args.lrs, "--lrs"))),
        "symmetry-breaking": (ex.symmetry_breaking, dict(dys=_floats(args.dys, "--dys"),
                                                         perturbation=args.perturbation,
                                                         init=args.init,
                                                         whitened=not args.no_whiten,
                                                         seeds=args.seeds)),
        "deep": (ex.deep, dict(layers=args.layers)),
        "ntk": (ex.symmetric_ntk, {}),
        "orthogonal": (ex.orthogonal, dict(sizes=None if sizes is None else [int(v) for v in sizes],
                                           data=args.ortho_data, seeds=args.seeds)),
        "xor": (ex.xor, dict(seeds=args.seeds)),
        "rank-one": (ex.rank_one, {}),
        "bias-breaking": (ex.bias_breaking, dict(b_stds=_floats(args.b_stds, "--b-stds"))),
        "large-init": (ex.large_init, dict(scales=_floats(args.scales, "--scales"),
                                           lrs=_floats(args.grid_lrs, "--grid-lrs"),
                                           seeds=args.seeds)),
    }


def build_parser(prog: str | None = None):
    """The flags of ``biasfree_dynamics`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    p.add_argument("command", choices=["expressivity", "equivalence", "closed-form",
                                       "symmetry-breaking", "deep", "ntk", "orthogonal", "xor",
                                       "rank-one", "large-init", "bias-breaking", "all"])
    p.add_argument("--fast", action="store_true", help="small, quick configuration")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="the first seed of the experiments' draws")
    p.add_argument("--seeds", type=positive_int, default=None,
                   help="large-init, orthogonal (generic init), xor, symmetry-breaking: number "
                        "of draws seed, seed+1, ... (default: the experiment's; large-init 8, "
                        "the others 5; --fast 3)")
    p.add_argument("--dataset", default="gaussian", choices=["gaussian", "digits"],
                   help="equivalence: whitened Gaussian or whitened digits (+ negatives)")
    p.add_argument("--lr", type=float, default=0.004, help="equivalence: learning rate")
    p.add_argument("--time", type=float, default=10.0, help="equivalence: linear-net time c·t")
    p.add_argument("--strength", type=float, default=2.0, help="equivalence: teacher strength s")
    p.add_argument("--init-scale", type=float, default=1e-3, help="equivalence: init std")
    p.add_argument("--lrs", default=None, help="closed-form: learning rates (default 0.004,0.05,0.2,0.6)")
    p.add_argument("--dys", default=None, help="symmetry-breaking: perturbations Δy")
    p.add_argument("--perturbation", default="shift", choices=["shift", "abs"],
                   help="symmetry-breaking: constant shift of the mirrored targets, or dy|r.x|")
    p.add_argument("--init", default="mirrored", choices=["mirrored", "gaussian"],
                   help="symmetry-breaking: initialisation (both small, std 1e-3)")
    p.add_argument("--no-whiten", action="store_true",
                   help="symmetry-breaking: symmetric Gaussian inputs without whitening")
    p.add_argument("--layers", type=int, default=4, help="deep: number of weight layers")
    p.add_argument("--sizes", default=None, help="orthogonal: data sizes (default 2,4,8,16)")
    p.add_argument("--ortho-data", default="basis", choices=["basis", "digits"],
                   help="orthogonal: scaled basis vectors or orthogonalised digits images")
    p.add_argument("--scales", default=None, help="large-init: init scales of the phase diagram")
    p.add_argument("--grid-lrs", default=None, help="large-init: learning rates of the phase diagram")
    p.add_argument("--b-stds", default=None,
                   help="bias-breaking: bias scales s_b (default 0,0.01,0.03,0.1,0.3,1)")
    add_run_arguments(p, NAME)
    return p


def _run_command(args) -> ExperimentsRun:
    experiments = _experiments(args)  # every flag is parsed before anything runs
    names = list(experiments) if args.command == "all" else [args.command]

    def bar(it, name):
        label = NAME if name is None else f"{NAME} {name}"
        quiet = args.no_progress or (name is None and len(names) == 1)
        return progress_bar(it, desc=label, disable=quiet, leave=name is None)

    config = {"fast": args.fast, "seed": args.seed}
    done = run_experiments({n: experiments[n] for n in names}, args.out, config=config,
                           write_all=args.command == "all", resume=args.resume,
                           overwrite=args.overwrite, progress=bar)
    print(json.dumps(done.summary, indent=2, default=float))
    return done


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, run the experiment(s), print the JSON summary; 0, 2 or 130."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
