"""The aggregate file format: ``LDPA`` | version | u32 header length | JSON header | little-endian arrays |
u32 CRC-32 (docs/versioning.md). Writing, and reading bytes that may come from anywhere: every check is
made before anything is allocated, and whatever is wrong raises :class:`AggregateFormatError`."""

from __future__ import annotations

import json
import math
import reprlib
import struct
import zlib
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.errors import AggregateFormatError
from ldp.wire import _no_duplicates

if TYPE_CHECKING:
    from ldp.encoders.base import ProtocolParams

__all__ = ["AggregateFormatError", "StateLayout", "MAX_HEADER", "MAX_COUNT", "write_aggregate", "read_state",
           "unframe"]

StateLayout = dict[str, tuple[np.dtype, tuple[int, ...]]]
"""Name → (dtype, shape) of each array of an aggregate's sufficient statistics."""

_MAGIC = b"LDPA"
_VERSION = 1
_PREFIX = 9  # magic, version, u32 header length
MAX_HEADER = 1 << 20
"""Largest JSON header an aggregate file may have (bytes): parsing it takes at most ~25x this in memory."""
MAX_COUNT = (1 << 63) - 1
"""Largest report count (``n`` and each rejection count) an aggregate file may declare (int64, like its state)."""
_HEADER_KEYS = frozenset({"protocol", "params", "fingerprint", "n", "rejected", "arrays"})


def unframe(data: bytes | bytearray | memoryview) -> memoryview:
    """The bytes without their CRC once the magic, the version and the CRC-32 are checked."""
    view = memoryview(data).cast("B")
    if len(view) < _PREFIX + 4 or view[:4] != _MAGIC or view[4] != _VERSION:
        raise AggregateFormatError("not a serialized ldp fold (bad magic or version)")
    if zlib.crc32(view[:-4]) != int.from_bytes(view[-4:], "little"):
        raise AggregateFormatError("aggregate bytes are damaged (CRC-32 mismatch)")
    return view[:-4]


def write_aggregate(params: ProtocolParams, n: int, rejected: Counter[str], layout: StateLayout,
                    state: Mapping[str, np.ndarray]) -> bytes:
    """The file of an aggregate of ``n`` reports (``rejected`` by reason) with ``state`` (arrays in
    ``layout``'s order and shapes)."""
    header = {
        "protocol": params.protocol, "params": params.to_dict(), "fingerprint": params.fingerprint,
        "n": n, "rejected": dict(rejected), "arrays": _declared_arrays(layout),
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    if len(head) > MAX_HEADER:  # never write what from_bytes would refuse
        raise ValueError(f"the aggregate's header (its parameters) takes {len(head)} bytes, above the "
                         f"{MAX_HEADER}-byte limit of aggregate files")
    body = b"".join(np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<")).tobytes() for v in state.values())
    blob = _MAGIC + bytes([_VERSION]) + struct.pack("<I", len(head)) + head + body
    return blob + struct.pack("<I", zlib.crc32(blob))


def read_state(data: memoryview, header: Mapping[str, Any], layout: StateLayout,
               optional: StateLayout | None = None) -> dict[str, np.ndarray]:
    """The arrays of an aggregate file (``data`` without its CRC) as read-only views, after checking that
    the header declares exactly ``layout`` (or ``layout`` then ``optional`` or its first arrays, arrays a file may
    lack: those written before they existed) and that the payload is exactly its size (nothing allocated before):
    :class:`AggregateFormatError` otherwise."""
    names = list(optional or {})
    for upto in range(len(names), 0, -1):  # the optional arrays, or their first ones (a file of an older layout)
        fuller = {**layout, **{k: (optional or {})[k] for k in names[:upto]}}
        if _same_json(header["arrays"], _declared_arrays(fuller)):
            layout = fuller
            break
    expected = _declared_arrays(layout)
    if not _same_json(header["arrays"], expected):
        raise AggregateFormatError(f"aggregate arrays {_clip(header['arrays'])} do not match the protocol's "
                                   f"state {_clip(expected)}")
    sizes = [math.prod(shape) * dtype.itemsize for dtype, shape in layout.values()]
    pos = _PREFIX + int.from_bytes(data[5:_PREFIX], "little")
    if sum(sizes) != len(data) - pos:
        raise AggregateFormatError(f"the state takes {sum(sizes)} bytes but the aggregate carries {len(data) - pos}")
    state = {}
    for (name, (dtype, shape)), size in zip(layout.items(), sizes, strict=True):
        state[name] = np.frombuffer(data[pos:pos + size], dtype=dtype.newbyteorder("<")).reshape(shape)
        pos += size
    return state


def _declared_arrays(layout: StateLayout) -> list[list[Any]]:
    """The header's ``arrays`` entry for a state layout: ``[name, little-endian dtype string, shape]``."""
    return [[name, dtype.newbyteorder("<").str, list(shape)] for name, (dtype, shape) in layout.items()]


def _read_header(data: memoryview) -> dict[str, Any]:
    """The JSON header of aggregate bytes (CRC removed): at most :data:`MAX_HEADER` bytes of ASCII JSON
    (nesting past the interpreter's recursion limit refused), no duplicate keys, exactly the known keys."""
    hlen = int.from_bytes(data[5:_PREFIX], "little")
    if hlen > MAX_HEADER:
        raise AggregateFormatError(f"aggregate header declares {hlen} bytes, above the {MAX_HEADER}-byte limit")
    if hlen > len(data) - _PREFIX:
        raise AggregateFormatError(f"aggregate header declares {hlen} bytes but only {len(data) - _PREFIX} follow")
    try:
        text = data[_PREFIX:_PREFIX + hlen].tobytes().decode("ascii")
        header = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except RecursionError:
        raise AggregateFormatError("aggregate header is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a duplicate key, NaN
        raise AggregateFormatError(f"aggregate header is not ASCII JSON: {_clip(exc)}") from None
    if not isinstance(header, dict) or header.keys() != _HEADER_KEYS:
        keys = sorted(header) if isinstance(header, dict) else type(header).__name__
        raise AggregateFormatError(f"aggregate header must have exactly the keys {sorted(_HEADER_KEYS)}, got "
                                   f"{_clip(keys)}")
    return header


def _no_constant(name: str) -> Any:
    """``parse_constant`` hook: ``NaN`` and ``Infinity`` are not JSON, and ``to_bytes`` never writes them."""
    raise ValueError(f"{name} is not a number an aggregate holds")


def _typed(header: dict[str, Any], key: str, kind: type) -> Any:
    value = header[key]
    if not isinstance(value, kind):
        raise AggregateFormatError(f"aggregate header {key!r} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _count(value: Any, what: str) -> int:
    """``value`` if it is an int in ``[0, MAX_COUNT]`` (not a bool, not a float)."""
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise AggregateFormatError(f"aggregate header has a bad report count {what} = {_clip(value)} "
                                   f"(an int in [0, 2**63 - 1])")
    return value


def _same_json(got: Any, want: Any) -> bool:
    """``got == want`` type for type (``True`` is not ``1``, ``2.0`` is not ``2``); recurses only as deep as
    ``want``."""
    if type(got) is not type(want):
        return False
    if isinstance(want, list):
        return len(got) == len(want) and all(_same_json(g, w) for g, w in zip(got, want, strict=True))
    return bool(got == want)


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 3, 6, 6, 60, 60, 40


def _clip(value: Any) -> str:
    """A short repr of an untrusted value (bounded in length and depth) for an error message."""
    return str(value)[:200] if isinstance(value, BaseException) else _SHORT.repr(value)
