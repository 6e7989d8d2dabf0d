"""The ``ntkcond`` command: one subcommand per run module, read from one registry
(``COMMANDS``), which the script shims (``scripts/<name>.py``) and the tests read too. A
module is imported only when its subcommand runs (``ntkcond --help`` loads no jax).

    ntkcond cond-vs-depth --dataset cifar10 --split test --batch 512
    python -m ntkcond min-angle --help

``ntkcond <subcommand> …`` takes the same flags as ``python scripts/<sub_command>.py …`` and
writes the same run directories (``--out`` is relative to the current directory). Exit codes:
0, 2 for bad input (one line on stderr, no traceback), 130 for Ctrl-C.

Adding a run type: its module (the library call, ``NAME``, ``build_parser(prog)`` and
``main(argv, prog)``, as ``ntkcond.runs.cond_vs_depth``), one ``Command`` here, the script
shim (a copy of any other: it finds its command by its file name) and its tests.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import sys

__all__ = ["Command", "COMMANDS", "command", "script", "main"]


@dataclasses.dataclass(frozen=True)
class Command:
    """One subcommand: its name (``cond-vs-depth``), the module holding its library call and
    its ``NAME``, ``build_parser(prog)`` and ``main(argv, prog)``, and the one-line summary of
    ``ntkcond --help``."""

    name: str
    module_name: str
    summary: str

    @property
    def script(self) -> str:
        """The script's and the run module's ``NAME``: ``cond_vs_depth``."""
        return self.name.replace("-", "_")

    def module(self):
        return importlib.import_module(self.module_name)

    @property
    def main(self):
        """The module's ``main(argv=None, prog=None)``."""
        return self.module().main

    @property
    def build_parser(self):
        """The module's ``build_parser(prog=None)``."""
        return self.module().build_parser


#: Every subcommand, in the order ``ntkcond --help`` lists them.
COMMANDS = (
    Command("cond-vs-depth", "ntkcond.runs.cond_vs_depth",
            "κ_eff and the smallest gradient angle against depth, ReLU beside linear"),
    Command("cond-vs-batch", "ntkcond.runs.cond_vs_batch",
            "κ_eff and the smallest gradient angle against the batch size n"),
    Command("min-angle", "ntkcond.runs.min_angle",
            "smallest infinite-width gradient angle over all pairs of a data set"),
    Command("train-vs-depth", "ntkcond.runs.train_vs_depth",
            "gradient-descent steps against depth beside the NTK's prediction"),
    Command("check-claims", "ntkcond.papers.liu_hui.claims_run",
            "check the claims of Liu & Hui (arXiv 2305.08813): PASS/FAIL/SKIPPED report"),
    Command("activation-study", "ntkcond.runs.activation_study",
            "κ_eff and gradient angles against depth for several activations, with and without "
            "biases"),
    Command("train-track", "ntkcond.runs.train_track",
            "train a net with optax and track its NTK: κ_eff, kernel distance, alignment, "
            "effective rank"),
    Command("biasfree-dynamics", "ntkcond.papers.zhang_saxe_latham.experiments_run",
            "bias-free ReLU nets as linear nets (Zhang, Saxe & Latham, arXiv 2406.12615)"),
)


def command(name: str) -> Command | None:
    """The ``Command`` of ``name`` (dashes or underscores), None if there is none."""
    key = name.replace("_", "-")
    return next((c for c in COMMANDS if c.name == key), None)


def script(path: str):
    """The ``main(argv=None, prog=None)`` of the command a script shim stands for (its file
    name: ``scripts/cond_vs_depth.py`` is ``cond-vs-depth``): the command module's ``main``,
    imported when called (exit 130 for Ctrl-C while it loads)."""
    name = os.path.splitext(os.path.basename(path))[0]
    found = command(name)
    if found is None:
        raise SystemExit(f"{name}: no ntkcond command of this name (see ntkcond --help)")

    def main(argv=None, prog=None) -> int:
        try:  # the command's module (jax, numpy) loads here: Ctrl-C while it does is exit 130 too
            run = found.main
        except KeyboardInterrupt:
            print(f"{found.script}: interrupted", file=sys.stderr)
            return 130
        return run(argv, prog=prog)

    main.__doc__ = f"``{found.module_name}.main``: ntkcond {found.name} as the script {name}.py."
    return main


def _usage() -> str:
    import ntkcond

    width = max(len(c.name) for c in COMMANDS)
    lines = [f"usage: ntkcond [-h] [--version] <command> [flags]  (ntkcond {ntkcond.__version__})", "",
             "Conditioning of neural tangent kernels: the sweeps and checks of ntkcond.", "",
             "commands:"]
    lines += [f"  {c.name:<{width}}  {c.summary}" for c in COMMANDS]
    lines += ["", "`ntkcond <command> --help` lists a command's flags and their defaults. From a",
              "clone the same commands run as scripts: `python scripts/cond_vs_depth.py` for",
              "`ntkcond cond-vs-depth`, and so on (dashes become underscores)."]
    return "\n".join(lines)


def main(argv=None) -> int:
    """Run ``ntkcond <command> [flags]`` (``argv`` without the program name; default
    ``sys.argv[1:]``); the command's exit code (130 for Ctrl-C, also while it loads)."""
    try:
        return _dispatch(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:
        print("ntkcond: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `ntkcond … | head`: the reader left early; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _dispatch(argv: list) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        import ntkcond

        print(f"ntkcond {ntkcond.__version__}")
        return 0
    found = command(argv[0])
    if found is None:
        print(f"ntkcond: error: unknown command {argv[0]!r}; expected one of "
              f"{', '.join(c.name for c in COMMANDS)} (see ntkcond --help)", file=sys.stderr)
        return 2
    return found.main(argv[1:], prog=f"ntkcond {found.name}")
