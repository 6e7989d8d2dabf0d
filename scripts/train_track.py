#!/usr/bin/env python3
"""An ``ntkcond`` command as a script: ``python scripts/<name>.py`` runs ``ntkcond <name>`` (dashes
for underscores) with the same flags; ``--help`` lists them and their defaults. The command is
found by this file's name in ``ntkcond.command.COMMANDS``; its code lives in the package.
"""
import sys

from ntkcond.command import script

main = script(__file__)

if __name__ == "__main__":
    sys.exit(main())
