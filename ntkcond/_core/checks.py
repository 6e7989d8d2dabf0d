"""Input validators shared across ntkcond: every one raises ``TypeError``/``ValueError`` whose
message names the calling function (``where``), what was expected and what was got."""
from __future__ import annotations

import math
import numbers

import numpy as np


#: Largest depth (number of hidden layers) accepted. Its rounding grows like L·eps (~1e-10
#: relative at 10⁶ layers), the L → ∞ limits are closed forms
#: (``angles.relu_infinite_depth_angle``, ``angles.infinite_depth_kappa``), and a finite net
#: of 10⁶ layers is beyond any use. The cost of a depth is bounded separately
#: (``depth_budget``): the leaky family's angle recursion runs compiled (~30–60 ns a pair and
#: layer), the other nets' layer maps stop at their fixed point.
MAX_DEPTH = 10**6

#: Depths whose cost is never refused: every route costs at most ~n² × depth of its cheapest
#: operations there (the studies' range), whatever n.
FREE_DEPTH = 1000

#: Distinct pairs × layers the compiled angle recursion of the leaky family may run
#: (``ntkcond.infinite.recursion``; ~30–60 ns each on a loaded 2-core machine: ≲ 30 s),
#: e.g. 5 rows at depth 10⁶ (11 distinct pairs), 256 rows at depth 16 000.
MAX_PAIR_LAYERS = 2**29

#: Pairs × blocks the layer maps of the other nets may run before they reach their fixed point
#: (``ntkcond.network.fixed_point``; ~10 µs a pair and block for closed-form activations on
#: small blocks, where NumPy's overhead dominates; ``QUADRATURE_WEIGHT`` times that for
#: activations without closed forms): ≲ 5–20 s, e.g. 5 rows at 21 000 layers.
MAX_PAIR_BLOCKS = 2**19

#: Cost of a pair and block of an activation without closed forms (Mehler's series, the
#: trapezoid's small gaps), in closed-form pair-blocks.
QUADRATURE_WEIGHT = 8


def depth_budget(pairs: int, budget: int) -> int:
    """The deepest depth whose cost (``pairs`` per layer) fits ``budget``, and never less
    than ``FREE_DEPTH``."""
    return max(FREE_DEPTH, budget // max(1, int(pairs)))


def check_depth_cost(depth: int, pairs: int, budget: int, where: str, what: str) -> None:
    """ValueError naming ``where`` when ``depth`` exceeds ``depth_budget(pairs, budget)``:
    ``what`` says what each layer costs (e.g. "11 distinct pairs")."""
    fits = depth_budget(pairs, budget)
    if depth > fits:
        raise ValueError(
            f"{where}: expected depth <= {fits} for {what} (at most {budget:.3g} "
            f"pair-layers: each layer is a pass over every pair, and this net's layer map "
            f"has no closed form past a fixed point), got depth {depth}")


def as_depth(depth, where: str, name: str = "depth", maximum: int | None = MAX_DEPTH) -> int:
    """A non-negative integer (ints, numpy ints, and floats with an integer value such as 3.0);
    TypeError for bools, strings and fractional numbers; ValueError below 0 or above
    ``maximum`` (None: no maximum)."""
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, numbers.Integral):
        if (isinstance(depth, numbers.Real) and not isinstance(depth, (bool, np.bool_))
                and math.isfinite(depth) and float(depth).is_integer()):
            depth = int(depth)
        else:
            raise TypeError(f"{where}: expected an integer {name}, got {depth!r}")
    depth = int(depth)
    if depth < 0:
        raise ValueError(f"{where}: expected {name} >= 0, got {depth}")
    if maximum is not None and depth > maximum:
        shown = f"{float(depth):.3g}" if depth >= 10**15 else str(depth)
        raise ValueError(
            f"{where}: expected {name} <= {maximum} (the recursion costs {name} passes over every "
            f"pair; beyond, use the closed-form infinite-depth limits), got {shown}"
        )
    return depth


def resolve_trainable(trainable, depth: int, where: str = "resolve_trainable") -> tuple[int, ...]:
    """Trainable layers as sorted 0-based indices into the weight list [W⁽¹⁾, …, W⁽ᴸ⁺¹⁾].

    Args:
      trainable: "all", "first" (W⁽¹⁾, index 0), "last" (the read-out, index ``depth``),
        an int, or an iterable of ints in [0, depth].
      depth: number of hidden layers L.
    """
    if isinstance(trainable, str):
        key = trainable.lower()
        if key == "all":
            return tuple(range(depth + 1))
        if key == "first":
            return (0,)
        if key == "last":
            return (depth,)
        raise ValueError(
            f"{where}: expected trainable 'all', 'first', 'last' or layer indices, got {trainable!r}"
        )
    if isinstance(trainable, numbers.Integral) and not isinstance(trainable, (bool, np.bool_)):
        trainable = (trainable,)
    try:
        items = list(trainable)
    except TypeError:
        raise TypeError(
            f"{where}: expected trainable 'all', 'first', 'last' or integer layer indices, "
            f"got {trainable!r}"
        ) from None
    for i in items:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, numbers.Integral):
            raise TypeError(
                f"{where}: expected trainable 'all', 'first', 'last' or integer layer indices, "
                f"got {i!r} ({type(i).__name__}) in {trainable!r}"
            )
    layers = sorted({int(i) for i in items})
    if not layers or layers[0] < 0 or layers[-1] > depth:
        raise ValueError(
            f"{where}: expected a nonempty set of layer indices in [0, {depth}] "
            f"(0 = first layer, {depth} = read-out), got {trainable!r}"
        )
    return tuple(layers)


def as_data(x, where: str, name: str) -> np.ndarray:
    if not (hasattr(x, "__array__") or isinstance(x, (list, tuple))):
        raise TypeError(f"{where}: expected {name} as an (n, d) array, got {type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{where}: expected {name} with a real dtype, got {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"{where}: expected {name} of shape (n, d), got shape {arr.shape} "
            "(flatten images with x.reshape(len(x), -1))"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{where}: expected {name} with n >= 1 rows and d >= 1 columns, got {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        row = int(np.argmax(~np.all(np.isfinite(arr), axis=1)))
        raise ValueError(f"{where}: expected finite {name}, got NaN or Inf in row {row}")
    return arr


def as_images(x, where: str, name: str) -> np.ndarray:
    """A float64 batch of NHWC images (n, H, W, C), n, H, W, C ≥ 1, real and finite;
    TypeError/ValueError naming ``where`` and ``name`` otherwise."""
    if not (hasattr(x, "__array__") or isinstance(x, (list, tuple))):
        raise TypeError(f"{where}: expected {name} as an (n, H, W, C) array, got "
                        f"{type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating)
                                   or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{where}: expected {name} with a real dtype, got {arr.dtype}")
    if arr.ndim != 4 or 0 in arr.shape:
        raise ValueError(f"{where}: expected {name} of shape (n, H, W, C) (NHWC images), got "
                         f"shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        i = int(np.argmax(~np.all(np.isfinite(arr.reshape(len(arr), -1)), axis=1)))
        raise ValueError(f"{where}: expected finite {name}, got NaN or Inf in image {i}")
    return arr


def as_pair(x1, x2, where: str):
    x1 = as_data(x1, where, "x1")
    x2 = x1 if x2 is None else as_data(x2, where, "x2")
    if x1.shape[1] != x2.shape[1]:
        raise ValueError(
            f"{where}: expected x1 and x2 of the same dimension d, got {x1.shape} and {x2.shape}"
        )
    return x1, x2


def sweep_layers(depths, trainable, where: str):
    """(sorted depths, ``layers`` argument of ``gradient_recursion``) for a depth sweep."""
    try:
        if isinstance(depths, (str, bytes)):
            raise TypeError
        items = list(depths)
    except TypeError:
        raise TypeError(
            f"{where}: expected depths as an iterable of integers (e.g. [0, 1, 5] or range(11)), "
            f"got {depths!r}"
        ) from None
    depths = sorted({as_depth(L, where) for L in items})
    if not depths:
        raise ValueError(f"{where}: expected at least one depth, got none")
    if isinstance(trainable, str) and trainable.lower() == "last":
        layers = "last"
    elif isinstance(trainable, str) and trainable.lower() in ("all", "first"):
        layers = None if trainable.lower() == "all" else {0}
    else:
        layers = set(resolve_trainable(trainable, depths[0], where))
    return depths, layers


def as_block(block, where: str, minimum: int) -> int:
    """A block (tile) size: an integer ≥ ``minimum`` (1 for kernel tiles, 2 for pair sweeps)."""
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < minimum:
        raise ValueError(f"{where}: expected an integer block size >= {minimum}, got {block!r}")
    return int(block)


def as_int(value, name: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{where}: expected {name} as an integer >= {minimum}, got {value!r}")
    return int(value)


def positive(value, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: expected {name} as a real number, got {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{where}: expected {name} > 0 (finite), got {value!r}")
    return float(value)


def as_count(value, name: str, where: str, minimum: int = 1) -> int:
    """An integer >= ``minimum``: TypeError for anything but an integer (a bool is not a
    count; 2.0 and '3' are refused too), ValueError below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: expected {name} as an integer >= {minimum}, "
                        f"got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{where}: expected {name} as an integer >= {minimum}, got {value!r}")
    return int(value)
