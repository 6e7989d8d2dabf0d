"""The whole-data-set routes over the processes of JAX's multi-controller runtime.

After ``jax.distributed.initialize(...)`` in every process (one per host, or per GPU), the
same call of ``streaming_smallest_angles``, ``blockwise_ntk``, ``exact_conditioning``,
``matrix_free_conditioning`` or ``streaming_smallest_kernel_angle`` in every process splits
its blocks over the processes and returns the full result in each:

  * the angle sweeps (``scale._pair_sweeps``, ``scale.kernel_angle``): the column blocks of
    each block row are shared out (``Share.span``: a contiguous, block-aligned range per
    process), every process sweeps its range on its own devices or threads, and the
    per-process states (running extremes, running minima: a few numbers each) are gathered
    after every block row and merged in process order. The merge is exact (max/min and the
    lexicographic minimum of (angle, i, j)), so pairs and angles are bit for bit those of one
    process, and every process holds the same state, hence the same checkpoint;
  * the kernel tiles (``scale.tiles.Tiles``): process p of P takes the tiles p, p + P, …; a
    blockwise kernel is gathered block row by block row (``gather_rows``), a matrix-free
    product K·V is the sum of the processes' partial products, gathered and added in process
    order (``sum_in_order``), so every process holds the identical product and runs the
    identical solver (the products of one process of P workers are the same sums).

The collectives are ``jax.experimental.multihost_utils.process_allgather`` of byte strings
(exact for any dtype; no float64 switch needed) — JAX's own runtime, no second distribution
layer. Values cross as data, never as code: ``ntkcond._core.wire`` (arrays as raw bytes with
an explicit dtype and shape, the rest as JSON; nothing is unpickled), so a process that reaches
the coordinator's port can at worst send wrong numbers. A process that is not part of an
initialised runtime (the usual case) sees ``Share(0, 1)`` and every function here is a no-op.

**A peer that dies.** When a collective fails (gloo: "Connection closed by peer"), the
surviving processes call the roll through the coordinator's key-value store (each writes its
name under the collective's sequence number and waits up to ``ROLL_SECONDS`` for the others)
and check the process ids that every process published when it joined (``initialize``) on
their own host; the ``PeerLostError`` names the processes that have exited (same host) or did
not answer (another host). A dead process 0 takes the coordination service with it: JAX
then ends every process itself, and the local launcher names process 0.

This module never touches JAX's global configuration; ``initialize`` (for the processes
started for distribution: ``ntkcond.runs.launcher``) does, as ``jax.distributed.initialize``
itself must.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import sys
import time

import numpy as np

from .._core.wire import decode, encode

__all__ = ["Share", "PeerLostError", "PeerMessageError", "current_share", "exchange_tiles", "initialize",
           "local_process_count"]

#: How long the survivors of a failed collective wait for each other's answer to the roll.
ROLL_SECONDS = 5.0

_PEER_KEY = "ntkcond/peer/{}"
_ROLL_KEY = "ntkcond/roll/{}/{}"
_sequence = [0]  # collectives so far in this process: the same count in every process


class PeerLostError(ConnectionError):
    """A collective failed because another process of the run ended or stopped answering."""


class PeerMessageError(ValueError):
    """Another process sent what this one cannot take (a size beyond memory, a wrong length);
    every process sees the same gathered values, so every process raises it."""


def _check_sizes(sizes: list, count: int) -> None:
    """PeerMessageError unless every announced size is ≥ 0 and the padded buffers of all
    ``count`` processes fit in this machine's memory (checked before they are allocated)."""
    from .._core.memory import available_memory

    for p, size in enumerate(sizes):
        if size < 0 or (1 << size.bit_length()) * count > available_memory():
            raise PeerMessageError(f"allgather: expected a message size that fits in memory from "
                                   f"process {p} (x {count} processes), got {size} bytes")

_MIN_BYTES = 1 << 10  # gathered byte strings are padded to powers of two (few compiled shapes)


@dataclasses.dataclass(frozen=True)
class Share:
    """This process's part of a split: process ``index`` of ``count``."""

    index: int = 0
    count: int = 1

    def __repr__(self) -> str:
        return f"Share({self.index} of {self.count})"

    @property
    def distributed(self) -> bool:
        return self.count > 1

    @property
    def is_root(self) -> bool:
        """Process 0: the one that reads and writes files (checkpoints, run directories)."""
        return self.index == 0

    def span(self, lo: int, hi: int, step: int) -> tuple[int, int]:
        """This process's contiguous part of [lo, hi) cut at multiples of ``step`` from ``lo``:
        the m = ⌈(hi − lo)/step⌉ steps split as evenly as whole steps allow (process p takes
        steps ⌊pm/P⌋ … ⌊(p + 1)m/P⌋ − 1), possibly empty."""
        m = -(-(hi - lo) // step)
        a = lo + (self.index * m // self.count) * step
        b = lo + ((self.index + 1) * m // self.count) * step
        return min(a, hi), min(b, hi)

    def allgather_bytes(self, payload: bytes) -> list[bytes]:
        """Every process's ``payload``, in process order (two collectives: the sizes, then the
        padded bytes; none alone)."""
        if not self.distributed:
            return [bytes(payload)]
        from jax.experimental import multihost_utils

        _sequence[0] += 1
        try:
            size = np.array([len(payload)], dtype=np.int64).view(np.uint8)
            sizes = np.asarray(multihost_utils.process_allgather(size)).reshape(self.count, 8)
            sizes = [int(s) for s in sizes.copy().view(np.int64).ravel()]
            _check_sizes(sizes, self.count)
            width = max(_MIN_BYTES, 1 << max(sizes).bit_length())
            buf = np.zeros(width, dtype=np.uint8)
            buf[: len(payload)] = np.frombuffer(payload, dtype=np.uint8)
            rows = np.asarray(multihost_utils.process_allgather(buf)).reshape(self.count, width)
        except PeerMessageError:
            raise
        except Exception as err:  # noqa: BLE001 (a failed collective: name the peer it lost)
            raise _peer_lost(self, err) from None
        return [rows[p, : sizes[p]].tobytes() for p in range(self.count)]

    def allgather(self, obj) -> list:
        """Every process's ``obj``, in process order: values of the kinds of
        ``ntkcond._core.wire`` (None, bool, int, float, str, lists, tuples, dicts, numeric numpy
        arrays and scalars, built-in exceptions), sent as data and decoded without running
        anything (a malformed message: ValueError naming its process)."""
        if not self.distributed:
            return [obj]
        return [decode(b, f"allgather (from process {p})")
                for p, b in enumerate(self.allgather_bytes(encode(obj)))]

    def broadcast(self, obj):
        """Process 0's ``obj`` in every process (the others' are ignored)."""
        if not self.distributed:
            return obj
        return self.allgather(obj if self.is_root else None)[0]

    def sum_in_order(self, part: np.ndarray, check=None, where: str = "sum_in_order") -> np.ndarray:
        """Σ_p part_p, added in process order (the same bits in every process).

        ``check``: an array that must be identical in every process (the block being
        multiplied); a mismatch — processes whose computations diverged — raises ValueError
        in every process instead of pairing unrelated collectives later.
        """
        if not self.distributed:
            return part
        part = np.ascontiguousarray(part, dtype=np.float64)
        digest = b"" if check is None else hashlib.sha256(
            np.ascontiguousarray(check).tobytes()).digest()
        got = self.allgather_bytes(digest + part.tobytes())
        for p, g in enumerate(got):
            if len(g) != len(digest) + part.nbytes:
                raise PeerMessageError(f"{where}: expected {len(digest) + part.nbytes} bytes from "
                                       f"process {p} (its part of the product), got {len(g)}")
        if len({g[: len(digest)] for g in got}) != 1:
            raise ValueError(f"{where}: the processes multiply different blocks (their "
                             "computations diverged: hosts with different BLAS builds?)")
        out = np.frombuffer(got[0][len(digest):], dtype=np.float64).reshape(part.shape).copy()
        for g in got[1:]:
            out += np.frombuffer(g[len(digest):], dtype=np.float64).reshape(part.shape)
        return out

    def on_root(self, fn):
        """``fn()`` on process 0 (file reads and writes), its value (of ``allgather``'s kinds)
        in every process; an error it raises is raised in every process (as its built-in
        class, ``ntkcond._core.wire``), so none waits for a collective the others never reach."""
        if not self.distributed:
            return fn()
        value = error = None
        if self.is_root:
            try:
                value = fn()
            except Exception as err:  # noqa: BLE001 (re-raised in every process below)
                error = err
        own = error
        value, error = self.broadcast((value, error))
        if error is not None:
            raise own if own is not None else error  # process 0 keeps its error's own class
        return value

    def gather_rows(self, pieces: list) -> list:
        """All processes' ``pieces`` (lists of ``allgather``'s kinds), concatenated in process
        order."""
        if not self.distributed:
            return list(pieces)
        return [item for part in self.allgather(list(pieces)) for item in part]


def exchange_tiles(share: Share, tiles: list, place, round_bytes: int = 1 << 26) -> None:
    """``place(r0, r1, c0, c1, blocks)`` in every process for every other process's
    ``tiles`` (lists of (r0, r1, c0, c1, {L: array}) this process computed and placed
    itself), gathered in rounds of about ``round_bytes`` per process, so the buffers stay
    bounded whatever n."""
    if not share.distributed:
        return
    per = max(1, max(share.allgather(max((_tile_bytes(t) for t in tiles), default=1))))
    step = max(1, round_bytes // per)
    rounds = max(share.allgather(-(-len(tiles) // step)))
    for k in range(rounds):
        for p, part in enumerate(share.allgather(tiles[k * step:(k + 1) * step])):
            if p != share.index:
                for tile in part:
                    place(*tile)


def _tile_bytes(tile) -> int:
    return sum(a.nbytes for a in tile[4].values())


def current_share() -> Share:
    """This process's ``Share`` of JAX's multi-controller runtime: (process index, process
    count) after ``jax.distributed.initialize``, else ``Share(0, 1)``. JAX is not imported
    (nor its backends started) when it has not been imported yet: no runtime then."""
    jax = sys.modules.get("jax")
    if jax is None:
        return Share()
    is_initialized = getattr(getattr(jax, "distributed", None), "is_initialized", None)
    if is_initialized is None or not is_initialized():
        return Share()
    return Share(int(jax.process_index()), int(jax.process_count()))


def local_process_count(share: Share) -> int:
    """Processes of ``share``'s runtime on this host (by host name; 1 alone): they share its
    memory, so per-process memory budgets divide by it."""
    if not share.distributed:
        return 1
    host = socket.gethostname()
    return sum(1 for h in share.allgather(host) if h == host)


def _cpu_collectives_to_gloo() -> None:
    """Switch JAX's CPU collectives to gloo where the option exists (jax 0.4.3x–0.5: needed
    for CPU devices across processes; jax versions without it need nothing)."""
    import jax

    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except (AttributeError, KeyError, ValueError):  # option renamed or removed: its default
        pass


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> Share:
    """Join JAX's multi-controller runtime: CPU collectives over gloo, then
    ``jax.distributed.initialize(coordinator, num_processes, process_id)`` (all None: from the
    environment, e.g. SLURM's ``srun`` or Open MPI's ``mpirun``). Changes JAX's global
    configuration, as joining the runtime must: call it only in a process started to take
    part (``ntkcond.runs.launcher`` does, in the processes it starts); idempotent.

    Returns:
      this process's ``Share``.
    """
    import jax

    if not jax.distributed.is_initialized():
        _cpu_collectives_to_gloo()
        if coordinator is None and num_processes is None and process_id is None:
            jax.distributed.initialize()
        else:
            jax.distributed.initialize(coordinator, num_processes, process_id)
        share = current_share()
        _store_set(_PEER_KEY.format(share.index),
                   json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
    return current_share()


# ------------------------------------------------------------------ a peer that died (module doc)
def _client():
    """The coordination service's key-value client of JAX's runtime, or None (jax internals:
    another jax version without it gets the plain message)."""
    try:
        from jax._src import distributed
    except ImportError:
        return None
    return getattr(getattr(distributed, "global_state", None), "client", None)


def _store_set(key: str, value: str) -> None:
    client = _client()
    try:
        client.key_value_set(key, value)
    except Exception:  # noqa: BLE001 (no store: the roll below then names nobody)
        pass


def _store_get(key: str):
    """The value at ``key`` now, or None (absent, or no store)."""
    client = _client()
    try:
        return client.key_value_try_get(key)
    except Exception:  # noqa: BLE001 (absent or no store)
        return None


def _exited(pid: int) -> bool:
    """Whether the process ``pid`` of this host has ended (gone, or a zombie not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: it exists
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def _peer_lost(share: Share, err: Exception) -> PeerLostError:
    """The error for a failed collective, naming the processes that ended or did not answer."""
    seq = _sequence[0]
    host = socket.gethostname()
    _store_set(_ROLL_KEY.format(seq, share.index), host)
    peers = {}
    for p in range(share.count):
        raw = _store_get(_PEER_KEY.format(p))
        try:
            peers[p] = json.loads(raw) if raw else {}
        except ValueError:
            peers[p] = {}
    # until each peer has answered the roll or (on this host) has exited, or the time is up: a
    # killed process closes its sockets (gloo's error) a moment before it is a zombie
    pending, exited = set(range(share.count)) - {share.index}, set()
    deadline = time.monotonic() + ROLL_SECONDS
    while pending:
        for p in sorted(pending):
            info = peers[p]
            if (info.get("host") == host and isinstance(info.get("pid"), int)
                    and _exited(info["pid"])):
                exited.add(p)
                pending.discard(p)
            elif _store_get(_ROLL_KEY.format(seq, p)) is not None:
                pending.discard(p)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    lost = []
    for p in sorted(exited | pending):
        info = peers[p]
        where = f"pid {info.get('pid', '?')} on {info.get('host', '?')}"
        lost.append(f"process {p} ({where}) has exited" if p in exited else
                    f"process {p} ({where}) did not answer within {ROLL_SECONDS:g} s")
    cause = " ".join(str(err).split())[:200]
    if not lost:
        return PeerLostError(f"a collective of the {share.count} processes failed although every "
                             f"process answered ({cause})")
    return PeerLostError(f"{'; '.join(lost)}: process {share.index} of {share.count} could not "
                         f"finish the collective with it ({cause})")
