"""The ``ntkcond`` command: one subcommand per script, each the ``main`` of the module beside
its library call, imported only when that subcommand runs (``ntkcond --help`` loads no jax).

    ntkcond cond-vs-depth --dataset cifar10 --split test --batch 512
    python -m ntkcond min-angle --help

``ntkcond <subcommand> …`` takes the same flags as ``python scripts/<sub_command>.py …`` and
writes the same run directories (``--out`` is relative to the current directory). Exit codes:
0, 2 for bad input (one line on stderr, no traceback), 130 for Ctrl-C.
"""
from __future__ import annotations

import importlib
import os
import sys

__all__ = ["COMMANDS", "main"]

#: subcommand → (module whose ``main(argv, prog)`` runs it, one-line summary for ``--help``)
COMMANDS = {
    "cond-vs-depth": ("ntkcond.runs.cond_vs_depth",
                      "κ_eff and the smallest gradient angle against depth, ReLU beside linear"),
    "cond-vs-batch": ("ntkcond.runs.cond_vs_batch",
                      "κ_eff and the smallest gradient angle against the batch size n"),
    "min-angle": ("ntkcond.runs.min_angle",
                  "smallest infinite-width gradient angle over all pairs of a data set"),
    "train-vs-depth": ("ntkcond.runs.train_vs_depth",
                       "gradient-descent steps against depth beside the NTK's prediction"),
    "check-claims": ("ntkcond.papers.liu_hui.claims_run",
                     "check the claims of Liu & Hui (arXiv 2305.08813): PASS/FAIL/SKIPPED report"),
    "activation-study": ("ntkcond.runs.activation_study",
                         "κ_eff and gradient angles against depth for seven activations, with and without biases"),
    "train-track": ("ntkcond.runs.train_track",
                    "train a net with optax and track its NTK: kappa_eff, kernel distance, alignment, effective rank"),
    "biasfree-dynamics": ("ntkcond.papers.zhang_saxe_latham.experiments_run",
                          "bias-free ReLU nets as linear nets (Zhang, Saxe & Latham, arXiv 2406.12615)"),
}


def _usage() -> str:
    import ntkcond

    width = max(map(len, COMMANDS))
    lines = [f"usage: ntkcond [-h] [--version] <command> [flags]  (ntkcond {ntkcond.__version__})", "",
             "Conditioning of neural tangent kernels: the sweeps and checks of ntkcond.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
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
    name = argv[0].replace("_", "-")
    if name not in COMMANDS:
        print(f"ntkcond: error: unknown command {argv[0]!r}; expected one of "
              f"{', '.join(COMMANDS)} (see ntkcond --help)", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(argv[1:], prog=f"ntkcond {name}")
