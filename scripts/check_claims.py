#!/usr/bin/env python3
"""Check each formula and theorem claim of Liu & Hui (arXiv 2305.08813) against an
independent computation, and write a PASS/FAIL/SKIPPED report.

examples:
  python scripts/check_claims.py            # fast mode (under a minute)
  python scripts/check_claims.py --full     # more widths, seeds and depths
  python scripts/check_claims.py --only 7 10

Writes claims.md, claims.json and one PNG per figure to --out (an earlier report there is
replaced only with --overwrite). The checks on real images read mnist_test.npz and
cifar10_test.npz from --data-dir when present, and always use scikit-learn's digits.
Each claim prints as PASS, FAIL or SKIPPED (not checkable here, e.g. claim 3b without
neural-tangents; the reason is printed and written to the report).
Exit code 0 whatever the verdicts (a FAIL is a finding, e.g. claim 9b); 2 on bad input.
The library call: ntkcond.papers.liu_hui.claims_run.check_claims.
"""
from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm

from ntkcond.papers.liu_hui.claims_run import check_claims
from ntkcond.runs.cli import add_run_arguments, parser, run_main

PROG = "check_claims"


def build_parser():
    p = parser(PROG, __doc__)
    p.add_argument("--full", action="store_true", help="full mode (slower, tighter)")
    p.add_argument("--only", nargs="+", default=None, help="claim ids to run, e.g. 1 7 9")
    p.add_argument("--data-dir", default=os.path.join("..", "shared", "data"),
                   help="folder with mnist_test.npz and cifar10_test.npz (optional)")
    add_run_arguments(p, "claims", resume=False)
    return p


def run(args):
    with tqdm(desc=PROG, unit="check", disable=args.no_progress) as bar:
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


def main(argv=None) -> int:
    return run_main(PROG, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
