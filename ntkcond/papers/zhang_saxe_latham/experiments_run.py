"""The bias-free experiments as a run directory (what ``scripts/biasfree_dynamics.py`` runs):
each experiment writes ``summary_<name>.json`` and ``<name>.png`` to ``out`` and one record
(its name, its own settings and its summary) to ``records.jsonl``. One directory collects
experiments run with the same common settings (``fast``, ``seed``): ``resume`` adds
experiments to it and skips those already done with the same settings, ``overwrite`` starts
over, and an earlier run is never replaced without one of them."""
from __future__ import annotations

import json
import os

from ..._core.io import atomic_savefig, atomic_write
from ...runs.rundir import open_run
from .figures import plot

__all__ = ["run_experiments"]


def run_experiments(experiments: dict, out: str, *, config: dict, write_all: bool = False,
                    resume: bool = False, overwrite: bool = False, progress=None) -> dict:
    """Run ``experiments`` ({name: (function, kwargs)}) into the run directory ``out``.

    Args:
      experiments: each function is called as ``fn(progress=..., **config, **kwargs)`` and
        returns an ``ExperimentResult``.
      config: the settings common to every experiment (e.g. {"fast": True, "seed": 0});
        stored in config.json and in each summary.
      write_all: also write ``summary.json`` with every summary.
      progress: optional callable(iterable, name) wrapping the experiments' inner loops.

    Returns:
      {name: summary dict (with "figure" and "config")}.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    wrap = progress or (lambda it, name: it)
    summary = {}
    with open_run(out, config, key_fields=("name",), resume=resume, overwrite=overwrite,
                  where="biasfree_dynamics") as run:
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
            fig = plot(result)
            entry["figure"] = os.path.join(out, f"{result.name}.png")
            atomic_savefig(fig, entry["figure"], dpi=120)
            plt.close(fig)
            entry["config"] = dict(config)
            entry = json.loads(json.dumps(entry, default=float))
            atomic_write(os.path.join(out, f"summary_{name}.json"), json.dumps(entry, indent=2) + "\n")
            run.append({"name": name, "settings": settings, "summary": entry})
            summary[name] = entry
        if write_all:
            atomic_write(os.path.join(out, "summary.json"), json.dumps(summary, indent=2) + "\n")
    return summary
