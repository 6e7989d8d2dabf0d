"""ntkcond.scale.processes: the whole-data-set routes across two processes of JAX's
multi-controller runtime (gloo CPU collectives on 127.0.0.1) against one process.

Two worker processes (this file run as a script: ``python tests/test_processes.py
COORDINATOR NUM_PROCESSES PROCESS_ID DATA.npz OUT.pkl [checks]``) run every route once on 300
random rows; the results must equal this process's: pairs, angles and kernels bit for bit (the same
tiles, the same exact rechecks), κ of the exact route bit for bit (the same kernels and
eigvalsh, BLAS at one thread on both sides), matrix-free κ_eff within 1e-12 relative (the
products are the same sums; the dense algebra between passes runs at one worker there and
here). Skipped, with the reason, where the runtime cannot start (no gloo collectives).
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest

from ntkcond.runs.launcher import free_port
from ntkcond.scale._pair_sweeps import _merge_extreme_states
from ntkcond.scale.processes import Share, current_share

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WORKER = os.path.abspath(__file__)


def child_env():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def run_workers(tmp_path, data, checks=None, count=2, timeout=240):
    """Start ``count`` workers on ``data``; their pickled results, or pytest.skip with the
    reason when the runtime does not start."""
    port = free_port()
    procs, outs = [], []
    for i in range(count):
        out = tmp_path / f"result{i}.pkl"
        outs.append(out)
        cmd = [sys.executable, WORKER, f"127.0.0.1:{port}", str(count), str(i), str(data), str(out)]
        if checks:
            cmd.append(",".join(checks))
        with open(tmp_path / f"log{i}.txt", "wb") as log:  # files: a full pipe never blocks
            procs.append(subprocess.Popen(cmd, env=child_env(), stdout=log,
                                          stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    try:  # until all end, one fails (then the others would wait for it) or the time is up
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            if any(p.poll() not in (None, 0) for p in procs):
                break
            time.sleep(0.1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        logs = [(tmp_path / f"log{i}.txt").read_text("utf-8", "replace") for i in range(count)]
    if any(p.returncode for p in procs):
        text = "\n".join(logs)
        if any(p.returncode == 3 for p in procs):  # the worker's "runtime unavailable"
            reason = [line for line in text.splitlines() if "RUNTIME UNAVAILABLE" in line]
            pytest.skip(f"JAX's multi-controller runtime did not start here ({reason[0]})")
        raise AssertionError(f"workers failed:\n{text[-4000:]}")
    return [pickle.loads(o.read_bytes()) for o in outs]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 20))
    x[5] = 2.0 * x[3]  # a duplicate direction: a known null vector, angle 0 exactly
    path = tmp_path_factory.mktemp("distributed") / "x.npz"
    np.savez(path, x=x)
    return x, path


@pytest.fixture(scope="module")
def two(data, tmp_path_factory):
    return run_workers(tmp_path_factory.mktemp("workers"), data[1])


@pytest.fixture(scope="module")
def one(data, tmp_path_factory):
    from ntkcond._core.threads import single_threaded_blas

    with single_threaded_blas():
        return run_checks(data[0], ALL, str(tmp_path_factory.mktemp("one")))


def test_each_process_sees_both_devices(two):
    for p, r in enumerate(two):
        assert r["share"] == (p, 2)
        assert r["device_count"] == 2 and r["local_device_count"] == 1


@pytest.mark.parametrize("key", ["pairs_numpy", "pairs_jax", "recursion_numpy", "recursion_jax"])
def test_angles_and_pairs_bit_for_bit(two, one, key):
    for r in two:
        got, want = r["results"][key], one[key]
        assert got.results == want.results  # every (activation, depth): angle and pair
        assert (got.input_angle, got.input_pair) == (want.input_angle, want.input_pair)
        assert got.devices == 2 and got.fallback == want.fallback


@pytest.mark.parametrize("key", ["kernel_numpy", "kernel_jax"])
def test_blockwise_kernel_bit_for_bit(two, one, key):
    for r in two:
        got, want = r["results"][key], one[key]
        assert sorted(got) == sorted(want)
        for L in want:
            np.testing.assert_array_equal(got[L], want[L])


def test_exact_conditioning(two, one):
    for r in two:
        got, want = r["results"]["exact"], one["exact"]
        assert sorted(got) == sorted(want)
        for L in want:  # the same kernel and one-thread eigvalsh: the same κ
            assert got[L].kappa_eff == pytest.approx(want[L].kappa_eff, rel=1e-13, abs=0)
            assert got[L].rank == want[L].rank


def test_matrix_free_conditioning(two, one):
    want = one["matrix_free"]
    got = [r["results"]["matrix_free"] for r in two]
    assert got[0].kappa_eff == got[1].kappa_eff  # every process: the same result
    for g in got:
        assert g.converged and want.converged
        assert g.kappa_eff == pytest.approx(want.kappa_eff, rel=1e-12, abs=0)
        assert g.null_dimension == want.null_dimension >= 1
        assert g.cache_bytes == want.cache_bytes  # the processes' caches together


@pytest.mark.parametrize("method", ["pairs", "recursion"])
def test_checkpoint_resumes_across_processes(two, one, method):
    want = one[f"resume_{method}"]
    assert want[:2] == (0, 2)
    for r in two:  # both processes resumed from process 0's checkpoint at block row 2
        assert r["results"][f"resume_{method}"] == want


def test_finite_width_kernel_angle(two, one):
    for r in two:
        assert r["results"]["kernel_angle"] == one["kernel_angle"]


def test_a_dead_peer_is_named_in_the_survivors_message(tmp_path, data):
    """Issue 34: process 1 is killed (SIGKILL) between two collectives; process 0 fails in
    bounded time with a PeerLostError that names process 1 (its pid, host, that it exited),
    not gloo's bare "Connection closed by peer"."""
    port = free_port()
    procs = []
    for i in range(2):
        cmd = [sys.executable, WORKER, f"127.0.0.1:{port}", "2", str(i), str(data[1]),
               str(tmp_path / f"result{i}.pkl"), "peer_dies"]
        with open(tmp_path / f"log{i}.txt", "wb") as log:
            procs.append(subprocess.Popen(cmd, env=child_env(), stdout=log, stderr=subprocess.STDOUT))
    try:
        procs[0].wait(timeout=180)
        procs[1].wait(timeout=10)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if procs[0].returncode == 3:
        pytest.skip("JAX's multi-controller runtime did not start here")
    log = (tmp_path / "log0.txt").read_text("utf-8", "replace")
    assert procs[1].returncode == -9 and procs[0].returncode == 0, log[-3000:]
    message, seconds = pickle.loads((tmp_path / "result0.pkl").read_bytes())["results"]["peer_dies"]
    pid = procs[1].pid
    assert message.startswith(f"process 1 (pid {pid} on ") and "has exited" in message, message
    assert "process 0 of 2 could not finish the collective" in message
    assert seconds < 30  # gloo notices at once; the roll call waits at most ROLL_SECONDS


def test_the_wire_format_refuses_what_is_not_data():
    """No pickle between processes: what a peer sends is decoded as data or refused."""
    import pickle as _pickle

    from ntkcond._core.wire import decode, encode

    value = {"a": [1, 2.5, float("nan"), None, True, "x"], (1, "b"): np.arange(6.0).reshape(2, 3),
             3: np.int32(7), "err": ValueError("bad", 3), "os": OSError(28, "No space", "/p")}
    back = decode(encode(value))
    assert back["a"][:2] == [1, 2.5] and np.isnan(back["a"][2]) and back["a"][3:] == [None, True, "x"]
    assert np.array_equal(back[(1, "b")], value[(1, "b")]) and back[3] == 7 and back[3].dtype == np.int32
    assert type(back["err"]) is ValueError and back["err"].args == ("bad", 3)
    assert back["os"].errno == 28 and back["os"].filename == "/p"
    for bad in (_pickle.dumps({"a": 1}), b"", encode([1, 2])[:-3], b"NTKW1\n" + b"\xff" * 8):
        with pytest.raises(ValueError, match=r"^peer: expected a message of ntkcond's wire format"):
            decode(bad, "peer")
    with pytest.raises(TypeError, match=r"^encode: expected None, bool"):
        encode(object())
    with pytest.raises(TypeError, match=r"^encode: expected arrays of a numeric dtype"):
        encode(np.array([object()]))


# -- without a runtime ----------------------------------------------------------------------


def test_alone_the_share_is_one_process():
    share = current_share()
    assert share == Share(0, 1) and not share.distributed and share.is_root
    assert share.allgather({"a": 1}) == [{"a": 1}]
    assert share.broadcast(3) == 3
    part = np.arange(4.0)
    assert share.sum_in_order(part) is part


@pytest.mark.parametrize("lo,hi,step,count", [(0, 10, 3, 2), (5, 5, 2, 3), (0, 7, 1, 4),
                                              (1024, 2000, 64, 2)])
def test_span_covers_the_range_once_in_order(lo, hi, step, count):
    spans = [Share(p, count).span(lo, hi, step) for p in range(count)]
    assert spans[0][0] == lo and spans[-1][1] == hi
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert a1 == b0 and a0 <= a1
    for a, b in spans:
        assert (a - lo) % step == 0 or a == hi


def test_merge_extreme_states_takes_extremes_and_lexicographic_minima():
    a = {"hi": 0.9, "lo": -0.2, "close": [0.1, 3, 7], "far": [-2.0, 1, 2], "margin": 1e-12}
    b = {"hi": 0.8, "lo": -0.5, "close": [0.1, 2, 9], "far": [-2.5, 4, 5], "margin": 1e-12}
    m = _merge_extreme_states([a, b])
    assert m == {"hi": 0.9, "lo": -0.5, "close": [0.1, 2, 9], "far": [-2.5, 4, 5],
                 "margin": 1e-12}
    assert _merge_extreme_states([b, a]) == m  # order-free: every process gets the same


# -- the worker: one process of the two ------------------------------------------------------


def run_checks(x, checks, workdir=None):
    import numpy as np

    import ntkcond
    from ntkcond.scale.kernel_angle import streaming_smallest_kernel_angle

    out = {}
    if "pairs_numpy" in checks:
        out["pairs_numpy"] = ntkcond.streaming_smallest_angles(x, depths=range(11), backend="numpy", block=64)
    if "pairs_jax" in checks:
        out["pairs_jax"] = ntkcond.streaming_smallest_angles(x, depths=range(11), backend="jax", block=64)
    if "recursion_numpy" in checks:
        out["recursion_numpy"] = ntkcond.streaming_smallest_angles(
            x, depths=[0, 3], backend="numpy", block=64, method="recursion", workers=1)
    if "recursion_jax" in checks:
        out["recursion_jax"] = ntkcond.streaming_smallest_angles(
            x, depths=[0, 3], backend="jax", block=64, method="recursion")
    if "kernel_numpy" in checks:
        out["kernel_numpy"] = ntkcond.blockwise_ntk(x, depths=[1, 3], block=48, workers=1)
    if "kernel_jax" in checks:
        out["kernel_jax"] = ntkcond.blockwise_ntk(x, depths=[1, 3], block=48, backend="jax")
    if "exact" in checks:
        out["exact"] = ntkcond.exact_conditioning(x, depths=[1, 2, 3], block=48, workers=1)
    if "matrix_free" in checks:
        out["matrix_free"] = ntkcond.matrix_free_conditioning(x, depth=3, block=48, workers=1)
    if "kernel_angle" in checks:
        rng = np.random.default_rng(1)
        H = rng.standard_normal((len(x), 7))
        D = rng.standard_normal((len(x), 3))
        out["kernel_angle"] = streaming_smallest_kernel_angle([(x, None), (H, D)], block=40)
    if "resume" in checks:  # a sweep stopped after 2 block rows, then resumed (process 0's file)
        path = os.path.join(workdir, "checkpoint.json")
        for method in ("pairs", "recursion"):
            part = ntkcond.streaming_smallest_angles(x, depths=[2], block=64, method=method,
                                                     checkpoint=path, max_row_blocks=2)
            rest = ntkcond.streaming_smallest_angles(x, depths=[2], block=64, method=method,
                                                     checkpoint=path)
            out[f"resume_{method}"] = (part.resumed_from_row_block, rest.resumed_from_row_block,
                                       rest.results)
            if os.path.exists(path):
                os.unlink(path)
    if "angles_default" in checks:  # the issue's own calls, default arguments
        out["angles_default"] = ntkcond.streaming_smallest_angles(x, depths=range(11), backend="jax")
    if "kappa_default" in checks:
        out["kappa_default"] = ntkcond.matrix_free_conditioning(x, depth=3)
    if "peer_dies" in checks:  # process 1 is killed between two collectives
        import signal

        from ntkcond.scale.processes import PeerLostError

        share = current_share()
        assert share.allgather(share.index) == [0, 1]
        if share.index == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        t0 = time.monotonic()
        try:
            share.allgather("after")
        except PeerLostError as err:
            out["peer_dies"] = (str(err), time.monotonic() - t0)
    return out


ALL = ("pairs_numpy", "pairs_jax", "recursion_numpy", "recursion_jax", "kernel_numpy",
       "kernel_jax", "exact", "matrix_free", "kernel_angle", "resume")


def worker_main(argv):
    coordinator, count, index, data, out_path = argv[:5]
    checks = argv[5].split(",") if len(argv) > 5 else ALL  # "none": the runtime only
    import numpy as np

    from ntkcond.scale.processes import initialize

    try:
        share = initialize(coordinator, int(count), int(index))
    except Exception as err:  # noqa: BLE001 (the runtime cannot start here: say why, exit 3)
        print(f"RUNTIME UNAVAILABLE: {type(err).__name__}: {err}", file=sys.stderr)
        return 3
    import jax

    if data.endswith(":mnist2000"):  # the first 2,000 MNIST test images, mnist preset
        import ntkcond

        x = ntkcond.datasets.load(data[: -len(":mnist2000")], preset="mnist").x[:2000]
    else:
        x = np.load(data)["x"]
    result = {"share": (share.index, share.count), "device_count": jax.device_count(),
              "local_device_count": jax.local_device_count(),
              "results": run_checks(x, checks, os.path.dirname(os.path.abspath(out_path)))}
    with open(out_path, "wb") as f:
        pickle.dump(result, f)
    if "peer_dies" in checks:  # a normal exit would wait at JAX's shutdown barrier for the dead
        sys.stdout.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))


def test_what_a_peer_sends_is_checked_before_it_is_used(monkeypatch):
    """Without a runtime: the gathered bytes of a planted peer (process 1 of 2) — pickle, a part
    of the wrong length, a size beyond memory — are refused with a ValueError naming it."""
    import pickle as _pickle

    from ntkcond._core.wire import encode
    from ntkcond.scale import processes
    from ntkcond.scale.processes import PeerMessageError

    share = Share(0, 2)
    monkeypatch.setattr(Share, "allgather_bytes",
                        lambda self, payload: [payload, _pickle.dumps({"x": os.system})])
    with pytest.raises(ValueError, match=r"^allgather \(from process 1\): expected a message of "
                                         r"ntkcond's wire format"):
        share.allgather({"x": 1})
    monkeypatch.setattr(Share, "allgather_bytes", lambda self, payload: [payload, payload[:-8]])
    with pytest.raises(PeerMessageError, match=r"^matrix_free_conditioning: expected 64 bytes "
                                               r"from process 1 .* got 56"):
        share.sum_in_order(np.zeros(8), where="matrix_free_conditioning")
    monkeypatch.setattr(Share, "allgather_bytes", lambda self, payload: [payload, encode(None)])
    assert share.allgather(np.arange(3.0))[1] is None
    with pytest.raises(PeerMessageError, match=r"^allgather: expected a message size that fits in "
                                               r"memory from process 1 \(x 2 processes\), got "):
        processes._check_sizes([10, 1 << 62], 2)
    with pytest.raises(PeerMessageError, match=r"from process 0 .* got -5 bytes"):
        processes._check_sizes([-5, 3], 2)
