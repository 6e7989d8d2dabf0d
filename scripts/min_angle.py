#!/usr/bin/env python3
"""Smallest infinite-width gradient angle over all pairs of a data set, per depth and activation.

The command ``ntkcond min-angle`` as a script, with the same flags (``--help`` lists them and
their defaults): ``python scripts/min_angle.py --help``. It lives in the package,
``ntkcond.runs.min_angle.main``.
"""
import sys

from ntkcond.runs.min_angle import main

if __name__ == "__main__":
    sys.exit(main())
