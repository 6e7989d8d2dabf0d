"""ntkcond.runs.launcher and runs.shared_run: the scripts with --processes 2 (two local
processes joined over gloo) against --processes 1 — the same result.json minima and the same
records (bit for bit: the same tiles and exact rechecks, BLAS at one thread on both sides) —
and --resume, the lock and bad flags across processes. Skipped, with the reason, where JAX's
multi-controller runtime cannot start (``test_processes``'s probe).
"""
from __future__ import annotations

import argparse
import json
import os

import pytest

from conftest import load_script
from ntkcond.runs.launcher import add_process_arguments, environment_processes, start_or_join


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    """Skip unless two processes can join here (the worker's probe, no checks)."""
    import numpy as np

    from test_processes import run_workers  # noqa: E402

    path = tmp_path_factory.mktemp("probe") / "x.npz"
    np.savez(path, x=np.eye(3))
    run_workers(path.parent, path, checks=["none"])


@pytest.fixture
def one_thread(monkeypatch):
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(v, "1")
    from ntkcond._core.threads import single_threaded_blas

    with single_threaded_blas():
        yield


def records(path):
    with open(path, encoding="utf-8") as f:
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in f]


GAUSS = ["--dataset", "gaussian", "--n", "300", "--dim", "12", "--no-progress"]


def test_min_angle_two_processes_same_minima(runtime, one_thread, tmp_path, capfd):
    main = load_script("min_angle").main
    for p in (1, 2):
        assert main(GAUSS + ["--block", "64", "--depths", "0-4", "--processes", str(p),
                             "--out", str(tmp_path / f"p{p}")]) == 0
    out = capfd.readouterr().out
    assert out.count("smallest input angle") == 2  # process 1 of the two is silent
    one, two = (json.loads((tmp_path / f"p{p}" / "result.json").read_text()) for p in (1, 2))
    assert two["results"] == one["results"]
    assert (two["input_angle_rad"], two["input_pair"]) == (one["input_angle_rad"], one["input_pair"])
    assert two["processes"] == 2 and "processes" not in one
    assert records(tmp_path / "p2" / "records.jsonl") == records(tmp_path / "p1" / "records.jsonl")
    assert not os.path.exists(tmp_path / "p2" / "checkpoint.json")


def test_cond_vs_depth_two_processes_same_records_and_resume(runtime, one_thread, tmp_path):
    main = load_script("cond_vs_depth").main
    args = GAUSS + ["--batch", "48", "--max-batches", "3", "--width", "16", "--seeds", "2",
                    "--depths", "0-1", "--activations", "relu"]
    assert main(args + ["--out", str(tmp_path / "p1")]) == 0
    assert main(args + ["--processes", "2", "--out", str(tmp_path / "p2")]) == 0
    want = records(tmp_path / "p1" / "records.jsonl")
    assert records(tmp_path / "p2" / "records.jsonl") == want
    assert (tmp_path / "p2" / "summary.csv").read_text() == (tmp_path / "p1" / "summary.csv").read_text()
    # a killed run: the last batch's records lost; --resume across processes completes it
    lines = (tmp_path / "p2" / "records.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["batch_index"] < 2]
    assert 0 < len(kept) < len(lines)
    (tmp_path / "p2" / "records.jsonl").write_text("".join(kept))
    assert main(args + ["--processes", "2", "--resume", "--out", str(tmp_path / "p2")]) == 0
    assert records(tmp_path / "p2" / "records.jsonl") == want


def test_cond_vs_batch_two_processes_same_records(runtime, one_thread, tmp_path):
    main = load_script("cond_vs_batch").main
    args = GAUSS + ["--sizes", "40,100", "--depths", "2", "--block", "32"]
    assert main(args + ["--out", str(tmp_path / "p1")]) == 0
    assert main(args + ["--processes", "2", "--out", str(tmp_path / "p2")]) == 0
    assert records(tmp_path / "p2" / "records.jsonl") == records(tmp_path / "p1" / "records.jsonl")


def test_locked_run_fails_once_with_one_line(runtime, tmp_path, capfd):
    from ntkcond.runs.rundir import open_run

    main = load_script("min_angle").main
    with open_run(str(tmp_path / "run"), {"x": 1}, key_fields=("depth",)):
        code = main(GAUSS + ["--processes", "2", "--out", str(tmp_path / "run"), "--overwrite"])
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("min_angle: error")]
    assert code == 2 and len(lines) == 1 and "in use by another run" in lines[0]


# -- flags, without processes ---------------------------------------------------------------


def parse(argv):
    p = argparse.ArgumentParser()
    add_process_arguments(p)
    return p.parse_args(argv)


@pytest.mark.parametrize("argv,match", [
    (["--processes", "2", "--coordinator", "h:1", "--num-processes", "2", "--process-id", "0"],
     "either --processes"),
    (["--coordinator", "h:1"], "together"),
    (["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"], "0 <= I < 2"),
    (["--coordinator", "nohost", "--num-processes", "2", "--process-id", "0"], "HOST:PORT"),
    (["--coordinator", "127.0.0.1:99999", "--num-processes", "2", "--process-id", "1"],
     r"^--coordinator: expected HOST:PORT with a port in 1..65535, got '127.0.0.1:99999'"),
    (["--coordinator", "127.0.0.1:0", "--num-processes", "2", "--process-id", "1"], "1..65535"),
    (["--coordinator", "no-such-host.invalid:1234", "--num-processes", "2", "--process-id", "1"],
     r"^--coordinator: cannot resolve the host 'no-such-host.invalid'"),
    (["--coordinator", "192.0.2.1:1234", "--num-processes", "2", "--process-id", "0"],
     r"^--coordinator: process 0 runs the coordinator, so '192.0.2.1' must be an address of "
     r"this machine"),
    (["--processes", "100000"], r"^--processes: expected at most \d+ \(the CPUs of this machine"),
])
def test_bad_process_flags(argv, match):
    with pytest.raises(ValueError, match=match):
        start_or_join("prog", parse(argv), argv, test_bad_process_flags)


def test_alone_nothing_is_started_or_joined(monkeypatch):
    for v in ("SLURM_STEP_ID", "SLURM_PROCID", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        monkeypatch.delenv(v, raising=False)
    assert start_or_join("prog", parse([]), [], test_alone_nothing_is_started_or_joined) is None


def test_environment_processes():
    assert environment_processes({}) == 1
    assert environment_processes({"SLURM_NTASKS": "4"}) == 1  # an allocation, not a step
    assert environment_processes({"SLURM_STEP_ID": "0", "SLURM_PROCID": "1",
                                  "SLURM_STEP_NUM_TASKS": "4"}) == 4
    assert environment_processes({"OMPI_COMM_WORLD_SIZE": "2"}) == 2
    assert environment_processes({"PMI_SIZE": "x"}) == 1


def test_a_busy_coordinator_port_is_one_line_not_a_crash(tmp_path, capfd):
    """Issue 34: with the port already in use process 0 crashed inside gRPC (exit 139); now the
    flags are refused before JAX is started, and nothing is written to --out."""
    import socket

    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        argv = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", "0"]
        with pytest.raises(ValueError, match=rf"^--coordinator: port {port} is in use on this "
                                             r"machine \(process 0 runs the coordinator there\)"):
            start_or_join("prog", parse(argv), argv, test_bad_process_flags)
        main = load_script("cond_vs_depth").main
        out = tmp_path / "run"
        assert main(GAUSS + ["--batch", "4", "--depths", "0", "--out", str(out)] + argv) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and f"port {port} is in use" in err and not out.exists()
