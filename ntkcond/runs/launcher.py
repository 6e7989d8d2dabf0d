"""Starting and joining the processes of a distributed run: the scripts' process flags.

A script run with ``--processes N`` (N > 1) starts N copies of itself on this machine that
join JAX's multi-controller runtime on a free port of 127.0.0.1 (``ntkcond.scale.processes``)
and waits for them: process 0 writes the run directory and prints, the others compute and stay
silent; each gets ⌊CPUs/N⌋ BLAS threads unless ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``
are set. On several hosts every process is started by the cluster's launcher and joins with
``--coordinator HOST:PORT --num-processes N --process-id I``, or with nothing at all where
its environment says it (``srun`` with more than one task, ``mpirun -n N``: then
``jax.distributed.initialize()`` reads it). ``docs/distributed.md`` has a SLURM script and a
two-host example.

If one process fails, the local launcher stops the others and exits with its status (its
error line on stderr); Ctrl-C stops them all (exit 130; ``--resume`` continues).
"""
from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from .._core.threads import cpu_count

__all__ = ["add_process_arguments", "check_coordinator", "environment_processes", "start_or_join"]

_PARENT = "NTKCOND_LAUNCHER_PID"  # set in the processes _start_local starts
_BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def add_process_arguments(p: argparse.ArgumentParser) -> None:
    """--processes, --coordinator, --num-processes, --process-id (module docstring)."""
    g = p.add_argument_group("processes (JAX multi-controller runtime, docs/distributed.md)")
    g.add_argument("--processes", type=_count, default=1,
                   help="start N processes on this machine that split the work")
    g.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="join a multi-host run: process 0's address (with --num-processes "
                        "and --process-id); not needed under srun/mpirun")
    g.add_argument("--num-processes", type=_count, default=None, help="processes in the run")
    g.add_argument("--process-id", type=int, default=None, help="this process, 0 … N − 1")


def environment_processes(environ=None) -> int:
    """Processes the cluster launcher started for this job step, from its environment:
    ``srun`` (SLURM_STEP_NUM_TASKS or SLURM_NTASKS, inside a step), ``mpirun``
    (OMPI_COMM_WORLD_SIZE, PMI_SIZE); 1 when none says more."""
    env = os.environ if environ is None else environ
    counts = []
    if "SLURM_STEP_ID" in env and "SLURM_PROCID" in env:
        counts.append(env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS") or "1")
    counts += [env.get("OMPI_COMM_WORLD_SIZE", "1"), env.get("PMI_SIZE", "1")]
    try:
        return max(int(c) for c in counts)
    except ValueError:
        return 1


def start_or_join(prog: str, args, argv, entry) -> int | None:
    """Act on the process flags of ``args`` (``add_process_arguments``).

    ``--processes N`` > 1: start N local processes running ``entry``'s script or module with
    ``argv`` (the same flags) and wait; returns the exit status. Otherwise, with
    ``--coordinator …`` or a cluster environment, join the runtime (process ≠ 0: stdout
    silenced, no progress bar) and return None: the caller then computes, as it does alone.

    Raises:
      ValueError: inconsistent flags.
    """
    joined = (args.coordinator, args.num_processes, args.process_id)
    if args.processes > 1:
        if any(v is not None for v in joined):
            raise ValueError("--processes: expected either --processes N (this machine) or "
                             "--coordinator/--num-processes/--process-id, got both")
        if args.processes > cpu_count():
            raise ValueError(f"--processes: expected at most {cpu_count()} (the CPUs of this "
                             "machine: each process is a Python with JAX and at least one BLAS "
                             f"thread, ~0.3 GB), got {args.processes}")
        return _start_local(prog, args.processes, sys.argv[1:] if argv is None else list(argv),
                            entry)
    if any(v is not None for v in joined):
        if any(v is None for v in joined):
            raise ValueError("--coordinator: expected --coordinator HOST:PORT, --num-processes N "
                             "and --process-id I together")
        if not 0 <= args.process_id < args.num_processes:
            raise ValueError(f"--process-id: expected 0 <= I < {args.num_processes}, got "
                             f"{args.process_id}")
        check_coordinator(args.coordinator, args.process_id == 0)
        _join(args, (args.coordinator, args.num_processes, args.process_id))
    elif environment_processes() > 1:
        _join(args, (None, None, None))
    return None


def check_coordinator(address: str, serves: bool) -> None:
    """ValueError unless ``address`` is HOST:PORT with a port in 1…65535 and a host that
    resolves; for process 0 (``serves``: it runs the coordination service, on every interface
    of its machine) also that HOST is an address of this machine and PORT is free, so a busy
    port is one line here instead of a crash inside gRPC (exit 139)."""
    host, _, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1]:P
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--coordinator: expected HOST:PORT with a port in 1..65535, got "
                         f"{address!r}")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:
        raise ValueError(f"--coordinator: cannot resolve the host {host!r} ({err})") from None
    if not serves:
        return
    local = False
    for family, kind, proto, _, sockaddr in infos:  # HOST must be this machine's
        with socket.socket(family, kind, proto) as s:
            try:
                s.bind((sockaddr[0], 0) + tuple(sockaddr[2:]))
                local = True
            except OSError:
                pass
    if not local:
        raise ValueError(f"--coordinator: process 0 runs the coordinator, so {host!r} must be an "
                         "address of this machine; start process 0 on that host")
    wildcard = ([(socket.AF_INET6, ("::", int(port), 0, 0))] if socket.has_ipv6 else []) + [
        (socket.AF_INET, ("0.0.0.0", int(port)))]
    for family, sockaddr in wildcard:  # as gRPC binds it: every interface
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no such family here
            continue
        with s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no obstacle
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            try:
                s.bind(sockaddr)
            except OSError as err:
                if err.errno == errno.EADDRINUSE:
                    raise ValueError(f"--coordinator: port {port} is in use on this machine "
                                     "(process 0 runs the coordinator there); choose a free "
                                     "port") from None
                continue  # e.g. no IPv6 on this host: the other family decides
            return


def _join(args, where) -> None:
    from ..scale.processes import initialize

    share = initialize(*where)
    parent = os.environ.get(_PARENT)
    if parent is not None and parent.isdigit():  # started by _start_local: die with it
        threading.Thread(target=_watch_parent, args=(int(parent),), daemon=True).start()
    if not share.is_root:  # the others compute; process 0 reports
        args.no_progress = True
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (for the life of this process)


def _watch_parent(pid: int) -> None:
    while os.getppid() == pid:
        time.sleep(1.0)
    os._exit(1)  # the launcher is gone: nobody waits for this process's results


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(entry) -> list[str]:
    """How a child runs ``entry``'s script again: this module as ``__main__`` with the
    module's dotted name (inside the package) or its file, whose ``main(argv)`` it calls."""
    module = sys.modules.get(entry.__module__)
    name = entry.__module__
    if name == "__main__" and getattr(module, "__spec__", None) is not None:
        name = module.__spec__.name
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.abspath(entry.__code__.co_filename)
    target = name if name.startswith("ntkcond.") and path.startswith(package + os.sep) else path
    return [sys.executable, "-m", __name__, target]


def _child_main(target: str, argv: list) -> int:
    """A child's entry: import ``target`` (a dotted module name or a .py path) and return its
    ``main(argv)``."""
    import importlib
    import importlib.util

    if target.endswith(".py"):
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(target))[0], target)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    main = getattr(module, "main", None)
    if main is None:
        print(f"{__name__}: {target} has no main(argv) to run", file=sys.stderr)
        return 2
    return main(argv)


def _start_local(prog: str, count: int, argv: list, entry) -> int:
    port = free_port()
    env = dict(os.environ)
    env[_PARENT] = str(os.getpid())
    threads = str(max(1, cpu_count() // count))
    if not any(v in env for v in _BLAS_VARIABLES[:2]):
        env.update({v: threads for v in _BLAS_VARIABLES})
    # the children import this ntkcond, wherever it is
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    procs, logs = [], []
    try:
        for i in range(count):
            flags = ["--processes", "1", "--coordinator", f"127.0.0.1:{port}",
                     "--num-processes", str(count), "--process-id", str(i)]
            log = None if i == 0 else tempfile.TemporaryFile()
            logs.append(log)
            procs.append(subprocess.Popen(
                _command(entry) + argv + flags, env=env, stderr=log,
                stdout=None if i == 0 else subprocess.DEVNULL))
        return _wait(prog, procs, logs)
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(0.05)
        print(f"{prog}: interrupted; finished records are kept: rerun with --resume to continue",
              file=sys.stderr)
        return 130
    finally:
        _stop(procs)
        for log in logs:
            if log is not None:
                log.close()


def _wait(prog, procs, logs) -> int:
    """Wait for all; after the first failure give the others 2 s to end by themselves (they
    usually fail together, process 0 with the message), then stop them. Process 0's status
    first; another process's error line only when process 0 did not fail itself."""
    while True:
        codes = [p.poll() for p in procs]
        if any(c not in (None, 0) for c in codes) or all(c == 0 for c in codes):
            break
        time.sleep(0.05)
    if all(c == 0 for c in codes):
        return 0
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.05)
    codes = [p.poll() for p in procs]  # before _stop: None = still running, not failed
    _stop(procs)
    if codes[0] is not None and codes[0] > 0:
        return codes[0]  # process 0 printed its error
    first = next((i for i, c in enumerate(codes) if c not in (None, 0)), 0)
    text = []
    if logs[first] is not None:
        logs[first].seek(0)
        text = logs[first].read().decode("utf-8", "replace").strip().splitlines()
    code = codes[first]
    if code < 0:  # killed: its last stderr line is not its error
        text = [f"{prog}: error: process {first} of {len(procs)} was killed by signal "
                f"{_signal_name(-code)}; finished records are kept: rerun with --resume"]
    print(text[-1] if text else f"{prog}: error: process {first} of {len(procs)} exited with "
          f"status {code}", file=sys.stderr)
    return codes[first] if codes[first] > 0 else 2


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _stop(procs, grace: float = 5.0) -> None:
    """Terminate the processes still running (these processes, by their ids), then kill."""
    alive = [p for p in procs if p.poll() is None]
    for p in alive:
        p.terminate()
    deadline = time.monotonic() + grace
    for p in alive:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


if __name__ == "__main__":  # a child of _start_local: python -m ntkcond.runs.launcher TARGET ARGS
    sys.exit(_child_main(sys.argv[1], sys.argv[2:]))
