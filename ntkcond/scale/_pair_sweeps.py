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
import os
import time

import numpy as np

from .._core.io import atomic_write
from ..infinite.extremes import ExtremeSearch, numpy_extreme_row
from .blocks import INPUT, AnglePlan, merge_candidates, numpy_angle_block
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
        "activations": [a.name for a in plan.activations],
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
    """The checkpoint's JSON state, or None if ``path`` is None or does not exist."""
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
    if state["fingerprint"] != fingerprint:
        diff = sorted(k for k in fingerprint if state["fingerprint"].get(k) != fingerprint[k])
        raise ValueError(
            f"{where}: checkpoint {path} belongs to another run (differs in {', '.join(diff)}); "
            "delete it or pass another checkpoint path"
        )
    return state


def _load_state(path, fingerprint, kind, where):
    """(next block row, saved search state or None, seconds so far) of a pairs checkpoint."""
    state = _read_state(path, kind, fingerprint, where)
    if state is None:
        return 0, None, 0.0
    return int(state["next_row_block"]), state["search"], float(state.get("seconds", 0.0))


def _save_state(path, fingerprint, kind, next_row_block, search_state, seconds):
    state = {"kind": kind, "version": _CHECKPOINT_VERSION, "fingerprint": fingerprint,
             "next_row_block": next_row_block, "search": search_state, "seconds": seconds}
    atomic_write(path, json.dumps(state, indent=1) + "\n")


def _load_checkpoint(path, fingerprint, where):
    state = _read_state(path, _CHECKPOINT_KIND, fingerprint, where)
    if state is None:
        return 0, {}, 0.0
    best = {_key_parse(k): (float(v[0]), int(v[1]), int(v[2])) for k, v in state["best"].items()}
    return int(state["next_row_block"]), best, float(state.get("seconds", 0.0))


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
    acts = [a for a in plan.activations if a.name in names]
    sub = AnglePlan(sorted({L for _, L in targets}), acts, trainable, options["where"])
    sub.norms, sub.d = plan.norms, plan.d
    path = None if checkpoint is None else checkpoint + ".recursion"
    best, _, _, _ = recursion_route(xh, sub, trainable, workers=workers, checkpoint=path, x=x,
                                     **options)
    if path is not None and current_share().is_root and os.path.exists(path):
        os.unlink(path)
    return {key: best[key] for key in targets}


def _bar(n, done, progress, where):
    from tqdm.auto import tqdm

    return tqdm(total=n * (n - 1) // 2, initial=done, unit="pair", unit_scale=True,
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
        lambda: _load_state(checkpoint, fingerprint, _PAIRS_KIND, where))
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
        lambda: _load_checkpoint(checkpoint, fingerprint, where))
    n_rows = -(-n // block)

    if backend == "numpy":
        workers = workers or min(8, os.cpu_count() or 1)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers) if workers > 1 else None

        def row(I):
            r0, r1 = I * block, min(n, (I + 1) * block)
            J0, J1 = share.span(I, n_rows, 1)  # this process's column blocks of the row
            spans = [(J * block, min(n, (J + 1) * block)) for J in range(J0, J1)]
            args = [(xh, r0, r1, c0, c1, plan, x) for c0, c1 in spans]
            if pool is None:
                return [numpy_angle_block(*a) for a in args]
            return list(pool.map(lambda a: numpy_angle_block(*a), args))

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
