"""Tests of ntkcond._core.threads: ordered results from worker threads, BLAS threads restored."""
import threading

import numpy as np
import pytest

from ntkcond._core.threads import blas_threads, cpu_count, ordered_map

threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture(autouse=True)
def two_blas_threads():
    """Every test starts from BLAS at two threads, whatever the environment (`make test` runs
    the suite with OPENBLAS_NUM_THREADS=1, one BLAS thread per pytest-xdist worker): "single-
    threaded in the workers" and "restored" are then checks of a change, not of 1 == 1."""
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != 2:
            pytest.skip("this NumPy's BLAS cannot be set to two threads (threadpoolctl)")
        yield


def tasks(count, log):
    def task(i):
        def prepare():
            log.append(("prepare", i, threading.current_thread().name))

            def work():
                a = np.full((64, 64), float(i))
                return i, float((a @ a)[0, 0]), blas_threads()

            return work
        return prepare
    return [task(i) for i in range(count)]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_results_come_in_task_order_whatever_the_submission_order(workers):
    log = []
    order = list(range(9))[::-1]
    out = list(ordered_map(tasks(9, log), workers, order))
    assert [r[0] for r in out] == list(range(9))
    assert [r[1] for r in out] == [64.0 * i * i for i in range(9)]
    main = threading.current_thread().name
    assert all(name == main for _, _, name in log)  # prepare runs in the calling thread
    if workers > 1:
        assert [i for _, i, _ in log] == order  # submitted as asked
        assert {r[2] for r in out} == {1}  # BLAS single-threaded in the workers


def test_blas_threads_are_restored_when_done_or_closed():
    before = blas_threads()
    assert before == 2  # the fixture's
    list(ordered_map(tasks(4, []), 2))
    assert blas_threads() == before
    gen = ordered_map(tasks(6, []), 2, list(range(6))[::-1])
    next(gen)
    gen.close()
    assert blas_threads() == before


def test_an_error_in_a_task_is_raised_in_order():
    def bad():
        raise ValueError("task 2 failed")

    def good(i):
        return lambda: (lambda: i)

    ts = [good(0), good(1), lambda: bad, good(3)]
    gen = ordered_map(ts, 2)
    assert [next(gen), next(gen)] == [0, 1]
    with pytest.raises(ValueError, match="task 2 failed"):
        next(gen)


def test_bad_submit_order_is_refused():
    expected = r"ordered_map: expected submit_order as a permutation of range\(3\)"
    with pytest.raises(ValueError, match=expected):
        list(ordered_map(tasks(3, []), 2, [0, 0, 1]))
    assert cpu_count() >= 1
