"""Many small dense problems on all cores: one problem per worker thread, BLAS single-threaded.

An n ≈ 512 float64 problem (a 512³ GEMM is 0.27 GFLOP, an ``eigvalsh(512)`` some 20 ms) gains
little from a multi-threaded BLAS call and loses much when a core is shared: on the shared
2-core machine of ``benchmarks/bench_fig2_sweep.py`` eleven depth kernels with their
``eigvalsh`` took 3.9 s with BLAS at one thread and 22–25 s at two (each call's threads wait
at barriers for a descheduled partner). Independent problems on ``workers`` threads with BLAS
at one thread keep every core busy, ``eigvalsh`` (mostly BLAS-2, serial) included.

``ordered_map`` runs such tasks and yields their results in order; ``blas_threads`` is the
BLAS thread count, the default number of workers. threadpoolctl (a dependency of
scikit-learn) sets the BLAS threads; without it the tasks run one at a time.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
from typing import Callable, Iterable, Iterator


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _threadpoolctl():
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def blas_threads() -> int:
    """Threads of NumPy's BLAS now (threadpoolctl), else ``cpu_count()``; at least 1."""
    tpc = _threadpoolctl()
    if tpc is not None:
        counts = [p["num_threads"] for p in tpc.threadpool_info() if p.get("user_api") == "blas"]
        if counts:
            return max(1, min(counts))
    return cpu_count()


@contextlib.contextmanager
def single_threaded_blas():
    """Every BLAS library of the process at one thread inside the block (process-wide; the
    previous counts are restored on exit). Libraries loaded inside the block (e.g. a first
    ``import scipy.linalg``) are not limited: import them first. A no-op without
    threadpoolctl."""
    tpc = _threadpoolctl()
    if tpc is None:
        yield False
        return
    with tpc.threadpool_limits(limits=1, user_api="blas"):
        yield True


def ordered_map(tasks: Iterable[Callable[[], Callable[[], object]]], workers: int,
                submit_order: list[int] | None = None) -> Iterator:
    """Results of ``tasks`` in their order, computed on ``workers`` threads.

    Each task is ``prepare() -> work``: ``prepare`` runs in the calling thread when the task is
    submitted (e.g. to draw random weights in JAX under a scoped x64 context), ``work()`` on a
    worker thread, with BLAS at one thread (``single_threaded_blas``) while the generator is
    open: the thread counts are restored when it is exhausted or closed. ``submit_order`` (a
    permutation of the task indices, default in order) lets the longest tasks go first, so no
    worker idles at the end; at most ``workers + 1`` tasks are in flight (prepared, not yet
    finished), which bounds the memory they hold. ``workers`` ≤ 1, or no threadpoolctl: the
    tasks run one after the other in the calling thread, BLAS threads untouched.

    Raises:
      whatever a task raises, when its result is due (pending tasks are cancelled).
    """
    tasks = list(tasks)
    order = list(range(len(tasks))) if submit_order is None else [int(i) for i in submit_order]
    if sorted(order) != list(range(len(tasks))):
        raise ValueError(f"ordered_map: expected submit_order as a permutation of "
                         f"range({len(tasks)}), got {submit_order!r}")
    if workers <= 1 or _threadpoolctl() is None:
        for task in tasks:
            yield task()()
        return
    with single_threaded_blas(), concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures: dict = {}
        pending = iter(order)
        try:
            for i in range(len(tasks)):
                while i not in futures or not futures[i].done():
                    running = [f for f in futures.values() if not f.done()]
                    nxt = next(pending, None) if len(running) <= workers else None
                    if nxt is not None:
                        futures[nxt] = pool.submit(tasks[nxt]())
                        continue
                    if i in futures:
                        futures[i].result()  # wait (or raise) for the result due next
                    else:
                        concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                yield futures.pop(i).result()
        finally:
            for f in futures.values():
                f.cancel()
