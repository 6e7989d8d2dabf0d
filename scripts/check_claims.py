#!/usr/bin/env python3
"""Check each formula and theorem claim of Liu & Hui (arXiv 2305.08813) against an
independent computation, and write a PASS/FAIL/SKIPPED report.

    python scripts/check_claims.py            # fast mode (under a minute)
    python scripts/check_claims.py --full     # more widths, seeds and depths
    python scripts/check_claims.py --only 7 10

Writes claims.md, claims.json and one PNG per figure to --out (default runs/claims).
Each claim prints as PASS, FAIL or SKIPPED (not checkable here, e.g. claim 3b without
neural-tangents; the reason is printed and written to the report).
Exit code 0 whatever the verdicts (a FAIL is a finding, e.g. claim 9b); 2 on bad input.
"""
from __future__ import annotations

import argparse
import os
import sys

from tqdm.auto import tqdm

from ntkcond.papers.liu_hui.report import plot_gradient_angle_map, run_claims, write_report

PROG = "check_claims"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--full", action="store_true", help="full mode (slower, tighter)")
    p.add_argument("--only", nargs="+", default=None, help="claim ids to run, e.g. 1 7 9")
    p.add_argument("--out", default=os.path.join("runs", "claims"))
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    mode = "full" if args.full else "fast"
    try:
        bar = tqdm(desc=PROG, unit="check", disable=args.no_progress)
        claims = run_claims(fast=not args.full, outdir=args.out, only=args.only,
                            progress=lambda name: (bar.set_postfix_str(name), bar.update(1)))
        bar.close()
        if not claims:
            raise ValueError(f"--only: no claim matches {args.only}")
        plot_gradient_angle_map(args.out)
        md, js = write_report(claims, args.out, mode=mode)
    except (ValueError, TypeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    for c in claims:
        line = f"{c.id:>4}  {c.status:<7}  error {c.error:9.3g}  tol {c.tolerance:9.3g}  {c.title}"
        print(line + (f"\n        skipped: {c.why}" if c.status == "SKIPPED" else ""))
    counts = {s: sum(c.status == s for c in claims) for s in ("PASS", "FAIL", "SKIPPED")}
    print(", ".join(f"{k} {s}" for s, k in counts.items()))
    print(f"report: {os.path.abspath(md)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
