"""The block-row sweeps behind ``streaming_smallest_angles`` (``scale.streaming``), with their
checkpoints.

A sweep visits the pairs i < j of n rows in b × b blocks of the upper triangle, one block row
at a time, on the numpy engine (``scale.blocks``) or on every JAX device (``scale.sharded``):
``pairs_route`` keeps the running extreme cosines (``ntkcond.infinite.extremes``),
``recursion_route`` the running minimum per (activation, depth), and ``recursion_fallback``
runs the recursion for the targets the pairs route leaves uncertified. With a checkpoint path
the state after every block row is written atomically as JSON (the run's fingerprint, the next
block row, the running state, the seconds so far) and read back to resume; each route has its
own format, and a checkpoint of another run or route is refused.

Across the processes of JAX's multi-controller runtime (``scale.processes``) each block row's
column blocks are split over the processes (``Share.span``), the states are gathered and
merged after every block row (exactly: max/min and lexicographic minima), so every process
holds the state one process would; process 0 reads and writes the checkpoint.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import json
import math
import numbers
import os
import time

import numpy as np

from .._core.io import atomic_write
from .._core.progress import progress_bar
from ..infinite.extremes import ExtremeSearch, numpy_extreme_row
from ..infinite.geometry import kahan_angles
from .blocks import INPUT, AnglePlan, merge_candidates
from .processes import current_share

__all__ = ["pairs_route", "recursion_fallback", "recursion_route"]

_CHECKPOINT_KIND = "ntkcond.streaming_smallest_angles"
_CHECKPOINT_VERSION = 1
_PAIRS_KIND = _CHECKPOINT_KIND + ".pairs"  # the same value as before: checkpoints still resume


def _row_pairs(n: int, r0: int, r1: int) -> int:
    """Pairs (i, j), i < j < n, with r0 ≤ i < r1."""
    return sum(n - 1 - i for i in range(r0, r1))


def _fingerprint(xh, block, plan: AnglePlan, trainable, dtype) -> dict:
    return {
        "n": int(xh.shape[0]),
        "d": int(xh.shape[1]),
        "block": block,
        "depths": plan.depths,
        "activations": [net.name for net in plan.nets],
        "trainable": trainable if isinstance(trainable, str) else sorted(int(i) for i in trainable),
        "dtype": dtype,
        "data_sha256": hashlib.sha256(np.ascontiguousarray(xh).tobytes()).hexdigest(),
    }


def _key_str(key) -> str:
    return INPUT if key == INPUT else f"{key[0]}/{key[1]}"


def _key_parse(text: str):
    if text == INPUT:
        return INPUT
    name, depth = text.rsplit("/", 1)
    return (name, int(depth))


def _read_state(path, kind, fingerprint, where):
    """The checkpoint's JSON state, or None if ``path`` is None or does not exist. Its kind,
    version and fingerprint must be this run's; every field is checked before it is used:
    ``next_row_block`` an integer in [0, block rows], ``seconds`` a finite number ≥ 0 (the
    route's own state is checked by its loader)."""
    if path is None or not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"{where}: cannot read checkpoint {path} ({err})") from None
    if not isinstance(state, dict):
        raise ValueError(f"{where}: expected checkpoint {path} to hold a JSON object, got "
                         f"{type(state).__name__}; delete it or use --overwrite")
    ok = state.get("kind") == kind and state.get("version") == _CHECKPOINT_VERSION
    if not ok:
        raise ValueError(f"{where}: {path} is not a {kind} checkpoint (version {_CHECKPOINT_VERSION}); "
                         "a checkpoint of the other method? delete it or pass another path")
    stored = state.get("fingerprint")
    if not isinstance(stored, dict):
        _bad(where, path, "fingerprint", "a JSON object", stored)
    if stored != fingerprint:
        diff = sorted(k for k in fingerprint if stored.get(k) != fingerprint[k])
        raise ValueError(
            f"{where}: checkpoint {path} belongs to another run (differs in "
            f"{', '.join(diff) or 'extra fields'}); delete it or pass another checkpoint path"
        )
    n_rows = -(-fingerprint["n"] // fingerprint["block"])
    nrb = state.get("next_row_block")
    if not _is_int(nrb) or not 0 <= nrb <= n_rows:
        _bad(where, path, "next_row_block", f"an integer in [0, {n_rows}] (the block rows of "
             f"n = {fingerprint['n']} at block {fingerprint['block']})", nrb)
    secs = state.get("seconds", 0.0)
    if not _is_real(secs) or secs < 0:
        _bad(where, path, "seconds", "a finite number >= 0", secs)
    return state


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _bad(where, path, field, expected, got):
    shown = repr(got) if len(repr(got)) < 80 else repr(got)[:77] + "..."
    raise ValueError(f"{where}: checkpoint {path} is damaged or edited: expected {field} as "
                     f"{expected}, got {shown}; delete it (the run restarts) or use --overwrite")


def _check_pair(where, path, field, item, n, done_rows, sign=1.0):
    """A stored (value, i, j): a finite value (sign·value ≥ 0), 0 ≤ i < j < n, i < done_rows."""
    if not (isinstance(item, (list, tuple)) and len(item) == 3 and _is_real(item[0])
            and _is_int(item[1]) and _is_int(item[2])):
        _bad(where, path, field, "[value, i, j] with a finite value and integer rows", item)
    value, i, j = item
    if not (0 <= i < j < n and i < done_rows):
        _bad(where, path, field, f"a pair 0 <= i < j < n = {n} with i < {done_rows} (the rows "
             "the checkpoint has finished)", item)
    if sign * value < 0 or abs(value) > math.pi:
        _bad(where, path, field, "an angle in [0, pi] radians", item)
    return float(value), int(i), int(j)


def _check_value(where, path, field, stored, actual, tol):
    if not abs(stored - actual) <= tol * max(1.0, abs(actual)):
        _bad(where, path, field, f"the value {actual!r} its pair has in these data", stored)


def _load_state(path, fingerprint, kind, where, search=None, block=None):
    """(next block row, saved search state or None, seconds so far) of a pairs checkpoint.

    The search state is checked against the data (``search``, an ``ExtremeSearch`` of them):
    its closest and farthest pairs lie in the rows done, their angles are the angles those
    pairs have (recomputed, 1e-12 relative), the screened extreme cosines are within the
    screening margin of them, and the margin is this run's."""
    state = _read_state(path, kind, fingerprint, where)
    if state is None:
        return 0, None, 0.0
    nrb, ss = state["next_row_block"], state.get("search")
    if not isinstance(ss, dict) or any(k not in ss for k in ("hi", "lo", "close", "far", "margin")):
        _bad(where, path, "search", "a JSON object with hi, lo, close, far and margin", ss)
    if search is not None:
        _check_search(where, path, ss, nrb, search, block)
    return int(nrb), ss, float(state.get("seconds", 0.0))


def _check_search(where, path, ss, nrb, search, block):
    n = search.n
    if not _is_real(ss["margin"]) or ss["margin"] != search.margin:
        _bad(where, path, "search.margin", f"this run's screening margin {search.margin!r}", ss["margin"])
    if nrb == 0:  # nothing done: the initial state
        if not (isinstance(ss["close"], list) and isinstance(ss["far"], list)
                and ss["close"][1:] == [-1, -1] and ss["far"][1:] == [-1, -1]):
            _bad(where, path, "search", "no pairs at next_row_block 0", ss)
        return
    done = min(n, nrb * block)
    close = _check_pair(where, path, "search.close", ss["close"], n, done)
    far = _check_pair(where, path, "search.far", ss["far"], n, done, sign=-1.0)
    theta = kahan_angles(search.xh, search.xh, np.array([close[1], far[1]]),
                         np.array([close[2], far[2]]), x1=search.x)
    _check_value(where, path, "search.close", close[0], float(theta[0]), 1e-12)
    _check_value(where, path, "search.far", -far[0], float(theta[1]), 1e-12)
    for name, value, pair_theta in (("hi", ss["hi"], theta[0]), ("lo", ss["lo"], theta[1])):
        if not _is_real(value) or abs(value - math.cos(pair_theta)) > 2 * search.margin + 1e-12:
            _bad(where, path, f"search.{name}", f"a screened cosine within the margin of "
                 f"cos {float(pair_theta)!r}", value)


def _save_state(path, fingerprint, kind, next_row_block, search_state, seconds):
    state = {"kind": kind, "version": _CHECKPOINT_VERSION, "fingerprint": fingerprint,
             "next_row_block": next_row_block, "search": search_state, "seconds": seconds}
    atomic_write(path, json.dumps(state, indent=1) + "\n")


def _load_checkpoint(path, fingerprint, where, xh=None, x=None, plan=None, block=None):
    """(next block row, running minima, seconds so far) of a recursion checkpoint.

    The minima are checked against the run: one per target of ``plan`` and the input angle
    (none at next_row_block 0), each at a pair in the rows done, with the value that pair has
    (recomputed by the plan's ``block``: 1e-9 relative, as the Gram-route angles of a 1 × 1
    block may differ from a diagonal block's in the last bits)."""
    state = _read_state(path, _CHECKPOINT_KIND, fingerprint, where)
    if state is None:
        return 0, {}, 0.0
    nrb, raw = state["next_row_block"], state.get("best")
    if not isinstance(raw, dict):
        _bad(where, path, "best", "a JSON object of running minima", raw)
    if plan is None:
        keys = None
    else:
        keys = ({_key_str(INPUT)} | {_key_str((net.name, L)) for net in plan.nonlinear
                                     for L in plan.depths}) if nrb > 0 else set()
    if keys is not None and set(raw) != keys:
        _bad(where, path, "best", f"minima for exactly {sorted(keys)}", sorted(raw))
    n = fingerprint["n"] if fingerprint else (xh.shape[0] if xh is not None else 0)
    done = min(n, nrb * (block or fingerprint["block"]))
    best = {}
    for k, v in raw.items():
        best[_key_parse(k)] = _check_pair(where, path, f"best[{k!r}]", v, n, done)
    if xh is not None and plan is not None:
        for key, (value, i, j) in best.items():
            actual = plan.block(xh, i, i + 1, j, j + 1, x)[key][0]
            _check_value(where, path, f"best[{_key_str(key)!r}]", value, float(actual), 1e-9)
    return int(nrb), best, float(state.get("seconds", 0.0))


def _save_checkpoint(path, fingerprint, next_row_block, best, seconds):
    state = {
        "kind": _CHECKPOINT_KIND,
        "version": _CHECKPOINT_VERSION,
        "fingerprint": fingerprint,
        "next_row_block": next_row_block,
        "best": {_key_str(k): list(v) for k, v in best.items()},
        "seconds": seconds,
    }
    atomic_write(path, json.dumps(state, indent=1) + "\n")


def _merge_extreme_states(states: list) -> dict:
    """One ``ExtremeSearch`` state from the processes' states (each over its own blocks): the
    extreme screened cosines and the lexicographic minima of (θ̃, i, j) and (−θ̃, i, j)."""
    def best(key):
        return list(min(tuple(s[key]) for s in states))

    return {"hi": max(s["hi"] for s in states), "lo": min(s["lo"] for s in states),
            "close": best("close"), "far": best("far"), "margin": states[0]["margin"]}


def recursion_fallback(xh, x, plan, targets, trainable, workers, checkpoint, options):
    """The recursion over all pairs for the (activation, depth) targets not certified."""
    names = list(dict.fromkeys(name for name, _ in targets))
    nets = [net for net in plan.nets if net.name in names]
    sub = AnglePlan(sorted({L for _, L in targets}), nets, trainable, options["where"])
    sub.norms, sub.d = plan.norms, plan.d
    path = None if checkpoint is None else checkpoint + ".recursion"
    best, _, _, _ = recursion_route(xh, sub, trainable, workers=workers, checkpoint=path, x=x,
                                     **options)
    if path is not None and current_share().is_root and os.path.exists(path):
        os.unlink(path)
    return {key: best[key] for key in targets}


def _bar(n, done, progress, where):
    return progress_bar(total=n * (n - 1) // 2, initial=done, unit="pair", unit_scale=True,
                        desc=where, disable=not progress)


def pairs_route(xh, *, block, backend, devices, dtype, checkpoint, progress, max_row_blocks, where,
                 x=None):
    """One sweep of screened-cosine blocks: (ExtremePairs, devices, seconds, start row)."""
    n = xh.shape[0]
    share = current_share()
    search = ExtremeSearch(xh, dtype=dtype, x=x)
    fingerprint = None if checkpoint is None else {
        "method": "pairs", "n": int(n), "d": int(xh.shape[1]), "block": block, "dtype": dtype,
        "data_sha256": hashlib.sha256(np.ascontiguousarray(xh).tobytes()).hexdigest()}
    start_row, state, seconds_before = share.on_root(
        lambda: _load_state(checkpoint, fingerprint, _PAIRS_KIND, where, search, block))
    if state is not None:
        search.restore(state)
    if backend == "numpy":
        def row(I):
            numpy_extreme_row(search, I, block, columns=share.span(I * block, n, block))

        n_devices = 1
    else:
        from .sharded import ShardedExtremeBlocks

        engine = ShardedExtremeBlocks(xh, block, search, devices=devices, dtype=dtype, where=where)
        row, n_devices = engine.row, engine.n_devices
    n_devices = sum(share.allgather(n_devices))
    n_rows = -(-n // block)
    bar = _bar(n, _row_pairs(n, 0, min(n, start_row * block)), progress and share.is_root, where)
    t0 = time.perf_counter()
    stop = n_rows if max_row_blocks is None else min(n_rows, start_row + max_row_blocks)
    try:
        for I in range(start_row, stop):
            row(I)
            search.flush()
            if share.distributed:  # every process: the state of all processes' blocks
                search.restore(_merge_extreme_states(share.allgather(search.state())))
            if checkpoint is not None and share.is_root:
                _save_state(checkpoint, fingerprint, _PAIRS_KIND, I + 1, search.state(),
                            seconds_before + time.perf_counter() - t0)
            bar.update(_row_pairs(n, I * block, min(n, (I + 1) * block)))
    finally:
        bar.close()
    if search.close[1] < 0:  # only possible when max_row_blocks stopped before any pair
        raise ValueError(f"{where}: max_row_blocks = {max_row_blocks} covered no pair")
    ext = search.result()
    return ext, n_devices, seconds_before + time.perf_counter() - t0, start_row


def recursion_route(xh, plan, trainable, *, block, backend, devices, dtype, workers, checkpoint,
                     progress, max_row_blocks, where, x=None):
    """The recursion over all pairs: ({target: (value, i, j)}, devices, seconds, start row)."""
    n = xh.shape[0]
    share = current_share()
    fingerprint = None if checkpoint is None else _fingerprint(xh, block, plan, trainable, dtype)
    start_row, best, seconds_before = share.on_root(
        lambda: _load_checkpoint(checkpoint, fingerprint, where, xh, x, plan, block))
    n_rows = -(-n // block)

    if backend == "numpy":
        workers = workers or min(8, os.cpu_count() or 1)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers) if workers > 1 else None

        def row(I):
            r0, r1 = I * block, min(n, (I + 1) * block)
            J0, J1 = share.span(I, n_rows, 1)  # this process's column blocks of the row
            spans = [(J * block, min(n, (J + 1) * block)) for J in range(J0, J1)]
            args = [(xh, r0, r1, c0, c1, x) for c0, c1 in spans]
            if pool is None:
                return [plan.block(*a) for a in args]
            return list(pool.map(lambda a: plan.block(*a), args))

        n_devices = 1
    else:
        from .sharded import ShardedAngleBlocks

        engine = ShardedAngleBlocks(xh, block, plan, devices=devices, dtype=dtype, where=where, x=x)
        row, n_devices, pool = engine.row, engine.n_devices, None

    n_devices = sum(share.allgather(n_devices))
    bar = _bar(n, _row_pairs(n, 0, min(n, start_row * block)), progress and share.is_root, where)
    t0 = time.perf_counter()
    stop = n_rows if max_row_blocks is None else min(n_rows, start_row + max_row_blocks)
    try:
        for I in range(start_row, stop):
            for cand in row(I):
                merge_candidates(best, cand)
            if share.distributed:  # every process: the minima over all processes' blocks
                for other in share.allgather(best):
                    merge_candidates(best, other)
            if checkpoint is not None and share.is_root:
                _save_checkpoint(checkpoint, fingerprint, I + 1, best,
                                 seconds_before + time.perf_counter() - t0)
            bar.update(_row_pairs(n, I * block, min(n, (I + 1) * block)))
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown()
    if INPUT not in best:  # only possible when max_row_blocks stopped before any pair
        raise ValueError(f"{where}: max_row_blocks = {max_row_blocks} covered no pair")
    return best, n_devices, seconds_before + time.perf_counter() - t0, start_row
