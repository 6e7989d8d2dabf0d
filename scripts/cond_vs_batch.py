#!/usr/bin/env python3
"""Effective condition number and smallest gradient angle against the batch size n.

The command ``ntkcond cond-vs-batch`` as a script, with the same flags (``--help`` lists them and
their defaults): ``python scripts/cond_vs_batch.py --help``. It lives in the package,
``ntkcond.runs.cond_vs_batch.main``.
"""
import sys

from ntkcond.runs.cond_vs_batch import main

if __name__ == "__main__":
    sys.exit(main())
