"""Validators shared by the modules of ``nets`` (Zhang, Saxe & Latham): arrays, data (x, y) and
weight lists of bias-free nets. Public names of a private module."""
from __future__ import annotations

import numpy as np


def as_array(x, where: str, name: str, ndim=(2,)) -> np.ndarray:
    if not (hasattr(x, "__array__") or isinstance(x, (list, tuple))):
        raise TypeError(f"{where}: expected {name} as an array, got {type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating)
                                   or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{where}: expected {name} with a real dtype, got {arr.dtype}")
    if arr.ndim not in ndim:
        raise ValueError(f"{where}: expected {name} with {' or '.join(map(str, ndim))} "
                         f"dimensions, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{where}: expected a non-empty {name}, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where}: expected finite {name}, got NaN or Inf")
    return arr


def as_xy(x, y, where: str):
    x = as_array(x, where, "x")
    if y is None:
        return x, None
    y = as_array(y, where, "y", ndim=(1, 2))
    y = y[:, None] if y.ndim == 1 else y
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"{where}: expected x and y with the same number of rows, "
                         f"got x {x.shape} and y {y.shape}")
    return x, y


def as_weights(weights, where: str, d: int | None = None, k: int | None = None):
    if isinstance(weights, np.ndarray) or not isinstance(weights, (list, tuple)):
        raise TypeError(f"{where}: expected weights as a list of 2-D arrays [W1, ..., WL], "
                        f"got {type(weights).__name__}")
    if len(weights) < 1:
        raise ValueError(f"{where}: expected at least one weight matrix, got none")
    ws = [as_array(w, where, f"W{i + 1}") for i, w in enumerate(weights)]
    for i in range(1, len(ws)):
        if ws[i].shape[1] != ws[i - 1].shape[0]:
            raise ValueError(f"{where}: W{i + 1} of shape {ws[i].shape} does not follow "
                             f"W{i} of shape {ws[i - 1].shape} (expected {ws[i].shape[0]} x "
                             f"{ws[i - 1].shape[0]})")
    if d is not None and ws[0].shape[1] != d:
        raise ValueError(f"{where}: expected W1 with {d} columns (input dimension), "
                         f"got shape {ws[0].shape}")
    if k is not None and ws[-1].shape[0] != k:
        raise ValueError(f"{where}: expected W{len(ws)} with {k} rows (output dimension), "
                         f"got shape {ws[-1].shape}")
    return ws


