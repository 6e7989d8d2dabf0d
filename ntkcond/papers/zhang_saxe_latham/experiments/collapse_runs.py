"""The phase diagram of the collapse at large init and learning rate (Zhang, Saxe & Latham,
arXiv 2406.12615): ``large_init`` measures the collapse error of the leaky-slope curves after
t → c·t (``collapse.slope_collapse``) over init scales × learning rates and seeds;
``COLLAPSE_OK`` is the error below which they count as collapsed. Returns an
``ExperimentResult``.

The theory it measures: ``nets.collapse``.
"""
from __future__ import annotations

import numpy as np

from ..nets.biasfree import gaussian_init, mirrored_init, symmetrize
from ..nets.collapse import slope_collapse_batch
from ._common import (
    ALPHAS,
    Progress,
    positive_values,
    progress_callback,
    seed_list,
    symmetric_gaussian,
    unit_vector,
)
from .result import ExperimentResult

__all__ = ["COLLAPSE_OK", "large_init"]

COLLAPSE_OK = 0.05  # collapse error below 5% of the target energy: "the curves collapse"


# ----------------------------------------------------------------------------- large init


def _finite_or_none(a):
    return [[None if not np.isfinite(e) else float(e) for e in row] for row in np.asarray(a)]


def large_init(*, scales=None, lrs=None, seeds=None, fast: bool = False, seed: int = 0,
               progress: Progress | None = None) -> ExperimentResult:
    """Phase diagram of the collapse error E (``collapse.slope_collapse``, eq. (1)) over init
    ``scales`` (default 0.001, 0.01, 0.1, 0.3, 0.5, 1; fast: 0.001, 0.1, 0.5) × learning rates
    ``lrs`` (default 0.004, 0.02, 0.1, 0.2, 0.4, 0.6, 1; fast: 0.004, 0.1, 0.6), for a mirrored
    and a Gaussian init (width 8) on whitened symmetric Gaussian data (n = 128, fast 64; d = 8,
    teacher s = 1, rescaled time T = 10), over ``seeds`` draws (default 8, fast 3: seeds
    seed, seed + 1, …; each draws its own data, teacher direction and init).

    Per cell: E of every draw, its median, min and max, and the fractions of draws that
    collapse (E < ``COLLAPSE_OK``), oscillate and diverge. Cells are "collapse" (every draw),
    "collapse_some_seeds", "no_collapse_oscillating" (no draw collapses, some oscillate or
    diverge), "no_collapse_smooth" or "diverged" (every draw).
    """
    if scales is None:
        scales = (0.001, 0.1, 0.5) if fast else (0.001, 0.01, 0.1, 0.3, 0.5, 1)
    if lrs is None:
        lrs = (0.004, 0.1, 0.6) if fast else (0.004, 0.02, 0.1, 0.2, 0.4, 0.6, 1)
    scales, lrs = positive_values("large_init", "scales", scales), positive_values("large_init", "lrs", lrs)
    draws = seed_list("large_init", seed, (3 if fast else 8) if seeds is None else seeds)
    bar = progress_callback(progress)
    d, s, T = 8, 1.0, 10.0
    data = []
    for sd in draws:
        x0, _ = symmetric_gaussian(32 if fast else 64, d, sd)
        data.append(symmetrize(x0, s * x0 @ unit_vector(d, sd)))
    xs, ys = np.stack([a for a, _ in data]), np.stack([b for _, b in data])
    out = {"setting": f"whitened symmetric Gaussian n={xs.shape[1]}, d={d}, teacher s={s}, "
                      f"width 8, alphas {list(ALPHAS)}, time T={T} (rescaled); each seed draws "
                      "its own data, teacher direction and init",
           "error_definition": "max over alpha and t<=T of |L_alpha(t/c) - L_linear(t)| / L_linear(0) "
                               "(error_vs_target: the same / (1/2n) sum y^2)",
           "collapse_threshold": COLLAPSE_OK, "scales": scales, "lrs": lrs, "seeds": draws,
           "grids": {}}
    examples = {}
    for init in ("mirrored", "gaussian"):
        shape = (len(draws), len(scales), len(lrs))
        err, err_y = np.full(shape, np.nan), np.full(shape, np.nan)
        osc, div = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        for i, scale in enumerate(bar(scales)):
            if init == "mirrored":
                inits = [mirrored_init(d, 4, scale=scale, seed=sd) for sd in draws]
            else:
                inits = [gaussian_init([d, 8, 1], scale=scale, seed=sd) for sd in draws]
            W1s, W2s = np.stack([w[0] for w in inits]), np.stack([w[1] for w in inits])
            for j, lr in enumerate(lrs):
                cols = slope_collapse_batch(xs, ys, W1s, W2s, alphas=ALPHAS, lr=lr, time=T)
                for b, col in enumerate(cols):
                    err[b, i, j], osc[b, i, j], div[b, i, j] = (col.max_error, any(col.oscillating),
                                                                any(col.diverged))
                    err_y[b, i, j] = float(np.max(col.errors_vs_target))
                if init == "mirrored":
                    examples[(scale, lr)] = cols[0]
        collapsed = err < COLLAPSE_OK
        frac = collapsed.mean(axis=0)
        regions = {"collapse": [], "collapse_some_seeds": [], "no_collapse_oscillating": [],
                   "no_collapse_smooth": [], "diverged": []}
        for i, scale in enumerate(scales):
            for j, lr in enumerate(lrs):
                cell = [scale, lr]
                if frac[i, j] == 1:
                    regions["collapse"].append(cell)
                elif frac[i, j] > 0:
                    regions["collapse_some_seeds"].append(cell)
                elif np.all(div[:, i, j]):
                    regions["diverged"].append(cell)
                elif np.any(osc[:, i, j]):
                    regions["no_collapse_oscillating"].append(cell)
                else:
                    regions["no_collapse_smooth"].append(cell)
        out["grids"][init] = {
            "error_median": _finite_or_none(np.median(err, axis=0)),
            "error_min": _finite_or_none(np.min(err, axis=0)),
            "error_max": _finite_or_none(np.max(err, axis=0)),
            "error_vs_target_median": _finite_or_none(np.median(err_y, axis=0)),
            "collapse_fraction": frac.tolist(),
            "oscillating_fraction": osc.mean(axis=0).tolist(),
            "diverged_fraction": div.mean(axis=0).tolist(),
            "error_per_seed": [_finite_or_none(e) for e in err],
            "regions": regions}
    return ExperimentResult("large_init", out, {"examples": examples})
