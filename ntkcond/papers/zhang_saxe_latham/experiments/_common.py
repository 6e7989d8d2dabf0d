"""Pieces the Zhang–Saxe–Latham experiments share (the ``<topic>_runs``
modules of ``experiments``): progress hooks, list validation, symmetric whitened data and
random teacher directions. Public names of a private module.

Also the leaky slopes ``ALPHAS`` the experiments sweep and the ``spread`` of a number over draws."""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from ..nets.biasfree import whiten

#: A progress hook: wraps an iterable (e.g. ``tqdm``), or None for none.
Progress = Callable[[Iterable], Iterable]

ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # leaky slopes α; α = 1 is the linear net


def progress_callback(progress: Progress | None) -> Progress:
    return progress if progress is not None else (lambda it: it)


def positive_values(fn: str, name: str, values) -> list[float]:
    values = [float(v) for v in np.atleast_1d(values)]
    if not values or not all(np.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"{fn}: expected positive numbers for {name}, got {values!r}")
    return values


def seed_list(fn: str, seed: int, seeds) -> list[int]:
    """The draws seed, seed + 1, …, seed + seeds − 1 (``seeds`` ≥ 1, a whole number)."""
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise ValueError(f"{fn}: expected seeds as a whole number >= 1, got {seeds!r}")
    return [int(seed) + k for k in range(int(seeds))]


def symmetric_gaussian(n_half: int, d: int, seed: int):
    """Whitened Gaussian inputs x0 (n_half, d) and x0 ∪ −x0: (1/n) Σ x xᵀ = I exactly."""
    x0 = whiten(np.random.default_rng(seed).standard_normal((n_half, d)))
    return x0, np.concatenate([x0, -x0])


def unit_vector(d: int, seed: int) -> np.ndarray:
    """A random unit vector in R^d (the teacher direction v)."""
    v = np.random.default_rng(seed + 1).standard_normal(d)
    return v / np.linalg.norm(v)


def first_below(t, values, level) -> float:
    """The first time at which ``values`` drops below ``level`` (nan if never)."""
    hit = np.nonzero(values < level)[0]
    return float(t[hit[0]]) if hit.size else float("nan")


def spread(values):
    """Median, min, max and count of the finite values (None: missing)."""
    v = np.array([np.nan if e is None else e for e in values], dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return {"median": None, "min": None, "max": None, "count": 0}
    return {"median": float(np.median(v)), "min": float(np.min(v)), "max": float(np.max(v)),
            "count": int(v.size)}
