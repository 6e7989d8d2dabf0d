"""Atomic file output: write to a temporary file in the same folder, then rename."""
from __future__ import annotations

import json
import os
import tempfile


def fsync_dir(folder: str) -> None:
    """fsync a directory, so that renames and new files in it survive a power loss."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. platforms without directory file descriptors
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that a crash never leaves a half-written file: a temporary
    file in the same folder, fsynced, renamed over ``path``, then the folder fsynced."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_savefig(fig, path: str, **kwargs) -> None:
    """``fig.savefig`` through a temporary file and a rename."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=os.path.splitext(path)[1].lstrip(".") or "png", **kwargs)
    atomic_write(path, buf.getvalue())


def append_jsonl(path: str, record: dict) -> None:
    """Append one JSON object as a line and fsync, so a killed run loses at most this line."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
