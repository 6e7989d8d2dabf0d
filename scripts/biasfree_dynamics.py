#!/usr/bin/env python3
"""Bias-free ReLU networks as linear networks (Zhang, Saxe & Latham, arXiv 2406.12615).

The command ``ntkcond biasfree-dynamics`` as a script, with the same flags (``--help`` lists them and
their defaults): ``python scripts/biasfree_dynamics.py --help``. It lives in the package,
``ntkcond.papers.zhang_saxe_latham.experiments_run.main``.
"""
import sys

from ntkcond.papers.zhang_saxe_latham.experiments_run import main

if __name__ == "__main__":
    sys.exit(main())
