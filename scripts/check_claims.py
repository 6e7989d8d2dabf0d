#!/usr/bin/env python3
"""Check each claim of Liu & Hui (arXiv 2305.08813) and write a PASS/FAIL/SKIPPED report.

The command ``ntkcond check-claims`` as a script, with the same flags (``--help`` lists them and
their defaults): ``python scripts/check_claims.py --help``. It lives in the package,
``ntkcond.papers.liu_hui.claims_run.main``.
"""
import sys

from ntkcond.papers.liu_hui.claims_run import main

if __name__ == "__main__":
    sys.exit(main())
