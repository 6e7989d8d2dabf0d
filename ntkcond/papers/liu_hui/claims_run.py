"""The claims report as a run directory (what ``ntkcond check-claims`` and
``scripts/check_claims.py`` run, ``main``): the checks, ``claims.md``, ``claims.json`` and the
figures in ``out``, locked while written and never replacing an earlier report without
``overwrite``."""
from __future__ import annotations

import os

from ...runs.cli import add_run_arguments, command_parser, run_main
from ...runs.rundir import open_run
from .claim_kit import DEFAULT_DATA_DIR
from .report import plot_gradient_angle_map, run_claims, write_report

__all__ = ["check_claims", "main"]


def check_claims(out: str, *, fast: bool = True, only=None, data_dir: str | None = None,
                 overwrite: bool = False, progress=None) -> tuple:
    """Run the checks (all, or those of ``only``) and write the report to ``out``.

    Args:
      out: the report's folder; an existing report there is replaced only with ``overwrite``.
      fast: the quick configuration; only: claim ids, e.g. ["1", "7"]; data_dir: folder of
        ``mnist_test.npz``/``cifar10_test.npz``, used for the files it holds (default
        ``../shared/data`` from the current directory when that folder exists, else none:
        scikit-learn's digits only); progress: optional callable(check name).

    Returns:
      (claims, path of claims.md, path of claims.json).
    """
    if data_dir is None:
        data_dir = DEFAULT_DATA_DIR if os.path.isdir(DEFAULT_DATA_DIR) else None
    elif not os.path.isdir(data_dir):
        raise ValueError(f"check_claims: expected data_dir (--data-dir) to be a folder, got "
                         f"{data_dir!r}: no such folder")
    data_dir = None if data_dir is None else os.path.abspath(data_dir)
    config = {"mode": "fast" if fast else "full", "only": None if only is None else list(only),
              "data_dir": data_dir}
    with open_run(out, config, key_fields=(), overwrite=overwrite, where="check_claims"):
        claims = run_claims(fast=fast, outdir=out, only=only, progress=progress, data_dir=data_dir)
        if not claims:
            raise ValueError(f"check_claims: no claim matches {only}")
        plot_gradient_angle_map(out)
        md, js = write_report(claims, out, mode=config["mode"])
    return claims, md, js


# The command: ``ntkcond check-claims`` and ``scripts/check_claims.py``.

NAME = "check_claims"
COMMAND_DOC = """Check each formula and theorem claim of Liu & Hui (arXiv 2305.08813) against an
independent computation, and write a PASS/FAIL/SKIPPED report.

examples:
  {command}            # fast mode (under a minute)
  {command} --full     # more widths, seeds and depths
  {command} --only 7 10

Writes claims.md, claims.json and one PNG per figure to --out (an earlier report there is
replaced only with --overwrite). The checks on real images read mnist_test.npz and
cifar10_test.npz from --data-dir when present, and always use scikit-learn's digits.
Each claim prints as PASS, FAIL or SKIPPED (not checkable here, e.g. claim 3b without
neural-tangents; the reason is printed and written to the report).
Exit code 0 whatever the verdicts (a FAIL is a finding, e.g. claim 9b); 2 on bad input.
The library call: ntkcond.papers.liu_hui.claims_run.check_claims.
"""


def build_parser(prog: str | None = None):
    """The flags of ``check_claims`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    p.add_argument("--full", action="store_true", help="full mode (slower, tighter)")
    p.add_argument("--only", nargs="+", default=None, help="claim ids to run, e.g. 1 7 9")
    p.add_argument("--data-dir", default=None,
                   help="folder with mnist_test.npz and cifar10_test.npz, used for the files it "
                        f"holds (default: {DEFAULT_DATA_DIR} when that folder exists, else "
                        "scikit-learn's digits only)")
    add_run_arguments(p, "claims", resume=False)
    return p


def _run_command(args):
    from tqdm.auto import tqdm

    with tqdm(desc=NAME, unit="check", disable=args.no_progress, delay=0.5) as bar:
        claims, md, _ = check_claims(args.out, fast=not args.full, only=args.only,
                                     data_dir=args.data_dir, overwrite=args.overwrite,
                                     progress=lambda name: (bar.set_postfix_str(name), bar.update(1)))
    for c in claims:
        line = f"{c.id:>4}  {c.status:<7}  error {c.error:9.3g}  tol {c.tolerance:9.3g}  {c.title}"
        print(line + (f"\n        skipped: {c.why}" if c.status == "SKIPPED" else ""))
    counts = {s: sum(c.status == s for c in claims) for s in ("PASS", "FAIL", "SKIPPED")}
    print(", ".join(f"{k} {s}" for s, k in counts.items()))
    print(f"report: {os.path.abspath(md)}")
    return claims


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, run the checks, print the verdicts; 0 whatever the
    verdicts, 2 on bad input, 130 on Ctrl-C."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
