"""The claims report as a run directory (what ``scripts/check_claims.py`` runs): the checks,
``claims.md``, ``claims.json`` and the figures in ``out``, locked while written and never
replacing an earlier report without ``overwrite``."""
from __future__ import annotations

import os

from ...runs.rundir import open_run
from .claim_kit import DEFAULT_DATA_DIR
from .report import plot_gradient_angle_map, run_claims, write_report

__all__ = ["check_claims"]


def check_claims(out: str, *, fast: bool = True, only=None, data_dir: str | None = None,
                 overwrite: bool = False, progress=None) -> tuple:
    """Run the checks (all, or those of ``only``) and write the report to ``out``.

    Args:
      out: the report's folder; an existing report there is replaced only with ``overwrite``.
      fast: the quick configuration; only: claim ids, e.g. ["1", "7"]; data_dir: folder of
        ``mnist_test.npz``/``cifar10_test.npz`` (default ``../shared/data``); progress:
        optional callable(check name).

    Returns:
      (claims, path of claims.md, path of claims.json).
    """
    data_dir = os.path.abspath(DEFAULT_DATA_DIR if data_dir is None else data_dir)
    config = {"mode": "fast" if fast else "full", "only": None if only is None else list(only),
              "data_dir": data_dir}
    with open_run(out, config, key_fields=(), overwrite=overwrite, where="check_claims"):
        claims = run_claims(fast=fast, outdir=out, only=only, progress=progress, data_dir=data_dir)
        if not claims:
            raise ValueError(f"check_claims: no claim matches {only}")
        plot_gradient_angle_map(out)
        md, js = write_report(claims, out, mode=config["mode"])
    return claims, md, js
