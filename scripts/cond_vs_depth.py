#!/usr/bin/env python3
"""NTK condition number and smallest gradient angle against depth, ReLU beside linear.

The command ``ntkcond cond-vs-depth`` as a script, with the same flags (``--help`` lists them and
their defaults): ``python scripts/cond_vs_depth.py --help``. It lives in the package,
``ntkcond.runs.cond_vs_depth.main``.
"""
import sys

from ntkcond.runs.cond_vs_depth import main

if __name__ == "__main__":
    sys.exit(main())
