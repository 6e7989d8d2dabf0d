#!/usr/bin/env python3
"""Gradient-descent steps to a relative loss against depth, ReLU beside linear.

The command ``ntkcond train-vs-depth`` as a script, with the same flags (``--help`` lists them and
their defaults): ``python scripts/train_vs_depth.py --help``. It lives in the package,
``ntkcond.runs.train_vs_depth.main``.
"""
import sys

from ntkcond.runs.train_vs_depth import main

if __name__ == "__main__":
    sys.exit(main())
