"""The bytes that the processes of a distributed run exchange: data, never code.

``encode(obj)`` turns the values the collectives carry (``ntkcond.scale.processes``) into
bytes, and ``decode(data, where)`` turns bytes from another process back into them, accepting
only this format: nothing in a message can name a class or a function to call, so a process
(or anything else that reaches the coordinator's port) can send wrong numbers at worst, never
run code in the others (``pickle.loads`` would).

Format: ``MAGIC``, the header's length (8 bytes, little-endian), the header — UTF-8 JSON — and
the arrays' raw bytes. The header is a tree of ``[tag, value]`` nodes:

  ``["n", null]`` None · ``["b", true]`` bool · ``["i", 3]`` int · ``["f", "0x1.8p+1"]`` float
  (``float.hex``: exact, NaN and ±inf included) · ``["s", "text"]`` str · ``["l", [...]]`` list ·
  ``["t", [...]]`` tuple · ``["d", [[key, value], ...]]`` dict (any keys of these kinds) ·
  ``["a", {"dtype", "shape", "offset"}]`` a C-order numpy array of a numeric dtype (bool,
  integer, floating, complex; byte order explicit), its bytes at ``offset`` after the header ·
  ``["g", {"dtype", "offset"}]`` a numpy scalar of such a dtype · ``["e", {"type", "args"}]``
  an exception, sent as the nearest built-in class of ``ERRORS`` in its MRO (a
  ``RunLockedError`` arrives as the ``ValueError`` it is) with its arguments.

Anything else is refused by ``encode`` (TypeError: a programming error of the sender) and a
message that breaks any rule — tags, nesting beyond ``MAX_DEPTH``, dtypes, shapes, offsets
outside the message, a header that is not JSON — by ``decode`` (ValueError naming ``where``).
"""
from __future__ import annotations

import json
import math
import struct

import numpy as np

__all__ = ["encode", "decode", "ERRORS", "MAX_DEPTH"]

MAGIC = b"NTKW1\n"

#: Nesting allowed in a message (the values exchanged are a few levels deep).
MAX_DEPTH = 64

#: The exception classes a message may name: built-ins only, looked up in this table.
ERRORS = {cls.__name__: cls for cls in (
    ArithmeticError, AssertionError, ConnectionError, EOFError, FileExistsError,
    FileNotFoundError, IndexError, IsADirectoryError, KeyError, LookupError, MemoryError,
    NotADirectoryError, NotImplementedError, OSError, OverflowError, PermissionError,
    RuntimeError, TimeoutError, TypeError, UnicodeError, ValueError, ZeroDivisionError,
    Exception)}

_KINDS = "biufc"


def _numeric_dtype(dt: np.dtype) -> bool:
    return dt.kind in _KINDS and dt.fields is None and not dt.hasobject and dt.itemsize <= 32


def encode(obj) -> bytes:
    """``obj`` as bytes (module docstring); TypeError for a value of another kind."""
    blobs: list[bytes] = []
    offset = [0]

    def add(raw: bytes) -> int:
        at = offset[0]
        blobs.append(raw)
        offset[0] += len(raw)
        return at

    def node(v, depth):
        if depth > MAX_DEPTH:
            raise TypeError(f"encode: expected values nested at most {MAX_DEPTH} deep")
        if v is None:
            return ["n", None]
        if isinstance(v, bool):
            return ["b", v]
        if isinstance(v, int):
            return ["i", int(v)]
        if isinstance(v, float):
            return ["f", float.hex(v)]
        if isinstance(v, str):
            return ["s", v]
        if isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            if not _numeric_dtype(a.dtype):
                raise TypeError(f"encode: expected arrays of a numeric dtype, got {a.dtype}")
            dt = a.dtype.newbyteorder("=") if a.dtype.byteorder == "|" else a.dtype
            return ["a", {"dtype": dt.str, "shape": list(a.shape), "offset": add(a.tobytes())}]
        if isinstance(v, np.generic):
            dt = np.asarray(v).dtype
            if not _numeric_dtype(dt):
                raise TypeError(f"encode: expected numpy scalars of a numeric dtype, got {dt}")
            return ["g", {"dtype": dt.str, "offset": add(np.asarray(v).tobytes())}]
        if isinstance(v, list):
            return ["l", [node(x, depth + 1) for x in v]]
        if isinstance(v, tuple):
            return ["t", [node(x, depth + 1) for x in v]]
        if isinstance(v, dict):
            return ["d", [[node(k, depth + 1), node(x, depth + 1)] for k, x in v.items()]]
        if isinstance(v, BaseException):
            cls = next((c for c in type(v).__mro__ if ERRORS.get(c.__name__) is c), Exception)
            args = list(v.args)
            if isinstance(v, OSError) and v.filename is not None and len(args) == 2:
                args.append(v.filename)  # OSError(errno, strerror, filename): the path kept
            args = [a if isinstance(a, (str, int, float, type(None))) else str(a) for a in args]
            return ["e", {"type": cls.__name__, "args": [node(a, depth + 1) for a in args]}]
        raise TypeError(f"encode: expected None, bool, int, float, str, list, tuple, dict, a "
                        f"numeric numpy array or scalar, or an exception, got {type(v).__name__}")

    header = json.dumps(node(obj, 0), separators=(",", ":"), allow_nan=False).encode("utf-8")
    return b"".join([MAGIC, struct.pack("<Q", len(header)), header] + blobs)


def decode(data: bytes, where: str = "decode"):
    """The value ``encode`` made of ``data``; ValueError for bytes that are not such a message."""
    def bad(why: str) -> ValueError:
        return ValueError(f"{where}: expected a message of ntkcond's wire format, got {why}")

    data = bytes(data)
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 8:
        raise bad(f"{len(data)} bytes without its header")
    (size,) = struct.unpack("<Q", data[len(MAGIC):len(MAGIC) + 8])
    start = len(MAGIC) + 8
    if size > len(data) - start:
        raise bad(f"a header of {size} bytes in a message of {len(data)}")
    try:
        tree = json.loads(data[start:start + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad("a header that is not JSON") from None
    blob = memoryview(data)[start + size:]

    def raw(offset, nbytes):
        if (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0
                or offset + nbytes > len(blob)):
            raise bad(f"an array at offset {offset!r} beyond the message's {len(blob)} bytes")
        return blob[offset:offset + nbytes]

    def dtype_of(text):
        try:
            dt = np.dtype(text) if isinstance(text, str) else None
        except (TypeError, ValueError):
            dt = None
        if dt is None or not _numeric_dtype(dt):
            raise bad(f"the dtype {text!r} (numeric dtypes only)")
        return dt

    def value(n, depth):
        if depth > MAX_DEPTH:
            raise bad(f"values nested deeper than {MAX_DEPTH}")
        if not (isinstance(n, list) and len(n) == 2 and isinstance(n[0], str)):
            raise bad(f"a node {str(n)[:40]!r}")
        tag, v = n
        if tag == "n" and v is None:
            return None
        if tag == "b" and isinstance(v, bool):
            return v
        if tag == "i" and isinstance(v, int) and not isinstance(v, bool):
            return v
        if tag == "f" and isinstance(v, str):
            try:
                return float.fromhex(v)
            except (ValueError, OverflowError):
                raise bad(f"the float {v[:40]!r}") from None
        if tag == "s" and isinstance(v, str):
            return v
        if tag in ("l", "t") and isinstance(v, list):
            items = [value(x, depth + 1) for x in v]
            return items if tag == "l" else tuple(items)
        if tag == "d" and isinstance(v, list):
            out = {}
            for pair in v:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise bad("a dict entry that is not a [key, value] pair")
                key = value(pair[0], depth + 1)
                try:
                    out[key] = value(pair[1], depth + 1)
                except TypeError:  # an unhashable key (a list)
                    raise bad("a dict key that is not hashable") from None
            return out
        if tag == "a" and isinstance(v, dict) and set(v) == {"dtype", "shape", "offset"}:
            dt, shape = dtype_of(v["dtype"]), v["shape"]
            if not (isinstance(shape, list) and len(shape) <= 32 and all(
                    isinstance(s, int) and not isinstance(s, bool) and 0 <= s for s in shape)):
                raise bad(f"the array shape {str(shape)[:40]}")
            count = math.prod(shape)
            return np.frombuffer(raw(v["offset"], count * dt.itemsize), dtype=dt).reshape(shape).copy()
        if tag == "g" and isinstance(v, dict) and set(v) == {"dtype", "offset"}:
            dt = dtype_of(v["dtype"])
            return np.frombuffer(raw(v["offset"], dt.itemsize), dtype=dt)[0]
        if tag == "e" and isinstance(v, dict) and set(v) == {"type", "args"}:
            cls = ERRORS.get(v["type"]) if isinstance(v["type"], str) else None
            if cls is None or not isinstance(v["args"], list):
                raise bad(f"the exception type {str(v['type'])[:40]!r} (built-in errors only)")
            args = [value(a, depth + 1) for a in v["args"]]
            if not all(isinstance(a, (str, int, float, type(None))) for a in args):
                raise bad("exception arguments that are not str, int, float or None")
            return cls(*args)
        raise bad(f"the node tag {tag!r} with a {type(v).__name__}")

    return value(tree, 0)

