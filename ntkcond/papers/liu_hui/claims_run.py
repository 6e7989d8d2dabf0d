"""The claims report as a run directory (what ``ntkcond check-claims`` and
``scripts/check_claims.py`` run, ``main``): the checks, one record per claim in
``records.jsonl`` (so ``ntkcond.runs.load`` gives one row per claim), ``claims.md``,
``claims.json`` and the figures in ``out``, locked while written and never replacing an earlier
report without ``overwrite``. ``config.json`` names the data the checks actually read (each
set's file and fingerprint) and the provenance (versions, command line, time)."""
from __future__ import annotations

import dataclasses
import os

from ..._core.progress import progress_bar
from ...runs.cli import add_run_arguments, command_parser, run_main
from ...runs.frames import RunResult
from ...runs.provenance import provenance
from ...runs.rundir import check_record_fields, open_run
from .claim_kit import DEFAULT_DATA_DIR, VERDICTS, data_used
from .report import (format_table, plot_gradient_angle_map, run_claims, selected_checks,
                     summary_line, write_report)

__all__ = ["ClaimsReport", "check_claims", "main"]


@dataclasses.dataclass(frozen=True)
class ClaimsReport(RunResult):
    """Result of ``check_claims``: the ``claims`` (``Claim``), their ``records`` (one per
    claim, ``Claim.record``), the ``config``, and the paths of claims.md and claims.json (None
    without a run directory). ``frame()`` is one row per claim."""

    claims: tuple
    records: tuple
    config: dict
    markdown: str | None
    json: str | None

    @property
    def unexpected(self) -> list:
        """The claims whose verdict differs from the expected one."""
        return [c for c in self.claims if c.unexpected]

    def __repr__(self) -> str:
        return f"ClaimsReport({summary_line(self.claims)})"


def _check_record(rec: dict) -> None:
    """A stored claim record: its id and verdict fields of the right kinds."""
    check_record_fields(rec, {"id": "str", "verdict": VERDICTS, "expected": ("PASS", "FAIL"),
                              "direction": ("<=", ">="), "criterion": "str"})


def check_claims(out: str | None, *, fast: bool = True, only=None, data_dir: str | None = None,
                 overwrite: bool = False, progress=None) -> ClaimsReport:
    """Run the checks (all, or those of ``only``) and write the report to ``out``.

    Args:
      out: the report's folder (None: nothing written, no figures; the result holds it all);
        an existing report there is replaced only with ``overwrite``.
      fast: the quick configuration; only: claim ids, e.g. ["1", "7"]; data_dir: folder of
        ``mnist_test.npz``/``cifar10_test.npz``, used for the files it holds (default
        ``../shared/data`` from the current directory when that folder exists, else none:
        scikit-learn's digits only); progress: optional callable(check name).

    Returns:
      a ``ClaimsReport``.
    """
    if data_dir is None:
        data_dir = DEFAULT_DATA_DIR if os.path.isdir(DEFAULT_DATA_DIR) else None
    elif not os.path.isdir(data_dir):
        raise ValueError(f"check_claims: expected data_dir (--data-dir) to be a folder, got "
                         f"{data_dir!r}: no such folder")
    data_dir = None if data_dir is None else os.path.abspath(data_dir)
    config = {"mode": "fast" if fast else "full", "only": None if only is None else list(only),
              "data_dir": data_dir, "data": data_used(data_dir)}
    if out is None:
        claims = run_claims(fast=fast, outdir=None, only=only, progress=progress,
                            data_dir=data_dir)
        _nonempty(claims, only)
        config["provenance"] = [provenance("check_claims")]
        return ClaimsReport(tuple(claims), tuple(c.record() for c in claims), config, None, None)
    with open_run(out, config, key_fields=("id",), overwrite=overwrite, where="check_claims",
                  outputs=("claims.md", "claims.json", "*.png"), validate=_check_record) as run:
        claims = run_claims(fast=fast, outdir=out, only=only, progress=progress, data_dir=data_dir,
                            on_claim=lambda claim: run.append(claim.record()))
        _nonempty(claims, only)
        plot_gradient_angle_map(out)
        md, js = write_report(claims, out, mode=config["mode"],
                              provenance=run.config["provenance"][-1])
        return ClaimsReport(tuple(claims), tuple(run.records), dict(run.config), md, js)


def _nonempty(claims, only) -> None:
    if not claims:
        raise ValueError(f"check_claims: no claim matches {only}")


# The command: ``ntkcond check-claims`` and ``scripts/check_claims.py``.

NAME = "check_claims"
COMMAND_DOC = """Check each formula and theorem claim of Liu & Hui (arXiv 2305.08813) and the claims on the
wider family of nets (15, 16, 21) against independent computations, and write a report.

examples:
  {command}            # fast mode (under a minute)
  {command} --full     # more widths, seeds and depths (about 15 minutes)
  {command} --only 7 10
  {command} --strict   # exit 1 when a verdict differs from the expected one

Every claim is decided by criteria "statistic <= threshold" or "statistic >= threshold"; the
table prints the deciding one (the first that fails, else the first) with its margin (>= 0
exactly when it holds), the expected verdict (PASS, or FAIL where a claim refutes a reading,
as 9b does) and the verdict: PASS, FAIL or SKIPPED (not checkable here, e.g. claim 3b without
neural-tangents; the reason is printed and written to the report). Writes config.json (the
data read, versions, command line, time), records.jsonl (one record per claim:
ntkcond.runs.load reads it), claims.md, claims.json and one PNG per figure to --out (an earlier
report there is replaced only with --overwrite). The checks on real images read
mnist_test.npz and cifar10_test.npz from --data-dir when present, and always use
scikit-learn's digits. Exit code 0, or with --strict 1 when any verdict differs from its
expected one (a SKIPPED claim does); 2 on bad input. The library call:
ntkcond.papers.liu_hui.claims_run.check_claims.
"""


def build_parser(prog: str | None = None):
    """The flags of ``check_claims`` (``command_parser``: as the script when prog is None)."""
    p = command_parser(NAME, COMMAND_DOC, prog)
    p.add_argument("--full", action="store_true", help="full mode (slower, tighter)")
    p.add_argument("--only", nargs="+", metavar="ID",
                   help="claim ids to run, e.g. 1 7 9 (default: every claim)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any verdict differs from its expected one")
    p.add_argument("--data-dir", metavar="DIR",
                   help="folder with mnist_test.npz and cifar10_test.npz, used for the files it "
                        f"holds (default: {DEFAULT_DATA_DIR} when that folder exists, else "
                        "scikit-learn's digits only)")
    add_run_arguments(p, "claims", resume=False)
    return p


def _run_command(args):
    with progress_bar(total=len(selected_checks(args.only)), desc=NAME, unit="check",
                      disable=args.no_progress) as bar:
        started = []

        def step(name):  # called before each check: the one before it is done
            if started:
                bar.update(1)
            started.append(name)
            bar.set_postfix_str(name)

        report = check_claims(args.out, fast=not args.full, only=args.only,
                              data_dir=args.data_dir, overwrite=args.overwrite, progress=step)
        bar.update(1)
    print(format_table(report.claims))
    for c in report.claims:
        if c.skipped:
            print(f"{c.id} skipped: {c.skipped}")
    print(f"report: {os.path.abspath(report.markdown)}")
    if args.strict and report.unexpected:
        print(f"{NAME}: --strict: unexpected verdicts: "
              + ", ".join(f"{c.id} {c.verdict} (expected {c.expected})" for c in report.unexpected))
        return 1
    return 0


def main(argv=None, prog: str | None = None) -> int:
    """The command: parse ``argv``, run the checks, print the verdicts; 0, or 1 with
    ``--strict`` when a verdict is unexpected; 2 on bad input, 130 on Ctrl-C."""
    p = build_parser(prog)
    return run_main(p.prog, p, _run_command, argv)
