#!/usr/bin/env python3
"""The activation study (issue 21): κ_eff and the smallest gradient angle against depth for
seven activations with and without biases.

The command ``ntkcond activation-study`` as a script, with the same flags (``--help`` lists
them and their defaults): ``python scripts/activation_study.py --help``. It lives in the
package, ``ntkcond.runs.activation_study.main``.
"""
import sys

from ntkcond.runs.activation_study import main

if __name__ == "__main__":
    sys.exit(main())
