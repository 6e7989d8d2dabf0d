#!/usr/bin/env python3
"""Train a net with optax and track its empirical NTK: κ_eff, kernel distance, alignment and
effective rank at chosen steps.

The command ``ntkcond train-track`` as a script, with the same flags (``--help`` lists them and
their defaults): ``python scripts/train_track.py --help``. It lives in the package,
``ntkcond.runs.train_track.main``.
"""
import sys

from ntkcond.runs.train_track import main

if __name__ == "__main__":
    sys.exit(main())
