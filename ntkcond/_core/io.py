"""Atomic file output: write to a temporary file in the same folder, then rename."""
from __future__ import annotations

import contextlib
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
    file in the same folder, fsynced, renamed over ``path``, then the folder fsynced. A
    symbolic link at ``path`` is replaced by the file (the rename acts on the link itself),
    never written through."""
    folder = os.path.dirname(os.path.abspath(path))
    with _naming(path):
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


@contextlib.contextmanager
def _naming(path: str):
    """An OSError without a file name (a full disk: ``write`` or ``fsync`` failing with ENOSPC,
    a quota) gets ``path``, so the one error line says which file could not be written."""
    try:
        yield
    except OSError as err:
        if err.filename is None and err.errno is not None:
            raise type(err)(err.errno, err.strerror or str(err), path) from err
        raise


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


#: ``os.O_NOFOLLOW`` where the platform has it (0 elsewhere): opening a symbolic link with it
#: fails (ELOOP) instead of writing through the link to wherever it points.
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class SymlinkError(ValueError):
    """A file that ntkcond writes is a symbolic link (refused: it would be written through)."""


def open_nofollow(path: str, flags: int, where: str, mode: int = 0o666) -> int:
    """``os.open(path, flags | O_NOFOLLOW)``; a symbolic link at ``path`` raises
    ``SymlinkError`` naming ``where`` and the link instead of being followed."""
    try:
        return os.open(path, flags | O_NOFOLLOW, mode)
    except OSError as err:
        if os.path.islink(path):
            raise SymlinkError(
                f"{where}: expected {path} to be a regular file, got a symbolic link to "
                f"{os.readlink(path)!r} (not written through); remove the link") from None
        raise


def write_nofollow(path: str, text: str, where: str) -> None:
    """Create or truncate ``path`` and write ``text``, never through a symbolic link."""
    fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, where)
    with _naming(path), os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def append_jsonl(path: str, record: dict, where: str = "append_jsonl") -> None:
    """Append one JSON object as a line and fsync, so a killed run loses at most this line.
    Never through a symbolic link (``SymlinkError``)."""
    fd = open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, where)
    with _naming(path), os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
