"""DAP-09's encoding (``draft-ietf-ppm-dap-09`` §4, the TLS presentation language of RFC 8446 §3) and the
structures its messages share: big-endian integers, byte strings and lists prefixed by their length in bytes.

=========================  ==============================================================================
``Interval``               ``Time start; Duration duration;`` (two ``uint64``: seconds since the epoch and a
                           length in seconds; ``start + duration`` below 2^64)
``HpkeCiphertext``         ``uint8 config_id; opaque enc<0..2^16-1>; opaque payload<0..2^32-1>;``
``ReportMetadata``         ``ReportID report_id; Time time;`` (16 bytes, then a ``uint64``)
``BatchSelector``          ``QueryType query_type; select (query_type) { time_interval: Interval
                           batch_interval; }`` (``Query`` is encoded the same way)
``PartialBatchSelector``   ``QueryType query_type;`` (a time-interval task names no batch in a job)
=========================  ==============================================================================

Only the ``time_interval`` query type (1) is this project's: a ``fixed_size`` selector (2) decodes to a
:class:`MessageError` that says so, and any other value is malformed. Every decoder consumes its input exactly:
short input, trailing bytes and out-of-range values are a :class:`MessageError` (a ``ValueError``), never another
exception (tested by fuzzing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ldp.errors import AggregatorMessageError as MessageError

__all__ = ["Reader", "MessageError", "Interval", "HpkeCiphertext", "ReportMetadata", "TIME_INTERVAL", "FIXED_SIZE",
           "u8", "u16", "u32", "u64", "opaque16", "opaque32", "items32", "batch_selector", "read_batch_selector",
           "PARTIAL_TIME_INTERVAL", "MEDIA_TYPES", "REPORT_ID_SIZE", "TASK_ID_SIZE", "check_size",
           "read_partial_batch_selector"]

REPORT_ID_SIZE = 16
TASK_ID_SIZE = 32
TIME_INTERVAL = 1
"""DAP-09's ``QueryType`` of a time-interval task: a batch is every report whose time lies in an interval."""
FIXED_SIZE = 2
"""DAP-09's ``QueryType`` of a fixed-size task (batches named by ID): not this project's."""
PARTIAL_TIME_INTERVAL = bytes([TIME_INTERVAL])
"""A time-interval task's ``PartialBatchSelector``: the query type alone."""

MEDIA_TYPES = {"Report": "application/dap-report", "HpkeConfigList": "application/dap-hpke-config-list",
               "AggregationJobInitReq": "application/dap-aggregation-job-init-req",
               "AggregationJobContinueReq": "application/dap-aggregation-job-continue-req",
               "AggregationJobResp": "application/dap-aggregation-job-resp",
               "AggregateShareReq": "application/dap-aggregate-share-req",
               "AggregateShare": "application/dap-aggregate-share",
               "CollectionReq": "application/dap-collect-req", "Collection": "application/dap-collection"}
"""Each DAP-09 message's media type (§9.5), its HTTP ``Content-Type``."""

T = TypeVar("T")


def u8(value: int) -> bytes:
    return _uint(value, 1)


def u16(value: int) -> bytes:
    return _uint(value, 2)


def u32(value: int) -> bytes:
    return _uint(value, 4)


def u64(value: int) -> bytes:
    return _uint(value, 8)


def _uint(value: int, size: int) -> bytes:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << (8 * size):
        raise MessageError(f"a uint{8 * size} must be an int in [0, 2^{8 * size}), got {value!r}")
    return value.to_bytes(size, "big")


def opaque16(data: bytes) -> bytes:
    """``opaque data<0..2^16-1>``: the length in two bytes, then the bytes."""
    return u16(_length(data, 16)) + bytes(data)


def opaque32(data: bytes) -> bytes:
    """``opaque data<0..2^32-1>``: the length in four bytes, then the bytes."""
    return u32(_length(data, 32)) + bytes(data)


def items32(encoded: list[bytes]) -> bytes:
    """A list ``T items<0..2^32-1>`` of encoded items: their total length in bytes, then the items."""
    body = b"".join(encoded)
    return u32(_length(body, 32)) + body


def _length(data: bytes, bits: int) -> int:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise MessageError(f"a byte string must be bytes, got {type(data).__name__}")
    if len(data) >= 1 << bits:
        raise MessageError(f"a byte string longer than 2^{bits} - 1")
    return len(data)


class Reader:
    """Reads one message from ``data``; every short read, and :meth:`end` with bytes left, is a
    :class:`MessageError` naming the message (``what``) and the offset."""

    def __init__(self, data: bytes, what: str) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"{what} must be bytes, got {type(data).__name__}")
        self.data, self.pos, self.what = bytes(data), 0, what

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise MessageError(f"{self.what}: truncated (needs {n} more bytes at offset {self.pos})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")

    def opaque16(self) -> bytes:
        return self.take(self.uint(2))

    def opaque32(self) -> bytes:
        return self.take(self.uint(4))

    def items32(self, item: Callable[[Reader], T], most: int) -> list[T]:
        """A list ``T items<0..2^32-1>`` (its length in bytes first), each item read by ``item`` from a reader of
        the list's bytes alone; at most ``most`` items (a :class:`MessageError` past them)."""
        inner = Reader(self.opaque32(), self.what)
        out: list[T] = []
        while inner.pos < len(inner.data):
            if len(out) == most:
                raise MessageError(f"{self.what}: more than {most} items in a list")
            out.append(item(inner))
        return out

    def end(self) -> None:
        if self.pos != len(self.data):
            raise MessageError(f"{self.what}: {len(self.data) - self.pos} bytes after the message")


def check_size(value: bytes, size: int, what: str) -> None:
    """A fixed-size field (a task ID, a report ID, a checksum) of exactly ``size`` bytes, else a
    :class:`MessageError`."""
    if not isinstance(value, bytes) or len(value) != size:
        raise MessageError(f"{what} must be {size} bytes")


@dataclass(frozen=True)
class Interval:
    """A batch interval: ``[start, start + duration)`` in seconds since the epoch."""

    start: int
    duration: int

    def __post_init__(self) -> None:
        u64(self.start), u64(self.duration)
        if self.start + self.duration >= 1 << 64:
            raise MessageError(f"an interval past 2^64 - 1 s (start {self.start}, duration {self.duration})")

    def to_bytes(self) -> bytes:
        return u64(self.start) + u64(self.duration)

    @classmethod
    def read(cls, rd: Reader) -> Interval:
        return cls(rd.uint(8), rd.uint(8))


@dataclass(frozen=True)
class HpkeCiphertext:
    """A ciphertext sealed with HPKE (RFC 9180) to the config ``config_id``: the encapsulated key and the payload."""

    config_id: int
    encapsulated_key: bytes
    payload: bytes

    def to_bytes(self) -> bytes:
        return u8(self.config_id) + opaque16(self.encapsulated_key) + opaque32(self.payload)

    @classmethod
    def read(cls, rd: Reader) -> HpkeCiphertext:
        return cls(rd.uint(1), rd.opaque16(), rd.opaque32())

    @classmethod
    def from_bytes(cls, data: bytes) -> HpkeCiphertext:
        rd = Reader(data, "HpkeCiphertext")
        out = cls.read(rd)
        rd.end()
        return out


@dataclass(frozen=True)
class ReportMetadata:
    """A report's ID (16 bytes, also the VDAF nonce) and its time (seconds, rounded down to the task's precision)."""

    report_id: bytes
    time: int

    def to_bytes(self) -> bytes:
        check_size(self.report_id, REPORT_ID_SIZE, "report_id")
        return self.report_id + u64(self.time)

    @classmethod
    def read(cls, rd: Reader) -> ReportMetadata:
        return cls(rd.take(REPORT_ID_SIZE), rd.uint(8))


def batch_selector(interval: Interval) -> bytes:
    """A time-interval ``BatchSelector`` (or ``Query``): the query type, then the interval."""
    return u8(TIME_INTERVAL) + interval.to_bytes()


def read_batch_selector(rd: Reader) -> Interval:
    """The interval of a time-interval ``BatchSelector`` or ``Query``; a fixed-size one is refused by name."""
    read_partial_batch_selector(rd)
    return Interval.read(rd)


def read_partial_batch_selector(rd: Reader) -> None:
    """A time-interval task's ``PartialBatchSelector`` (the query type alone); the first byte of a
    ``BatchSelector`` or ``Query`` too."""
    kind = rd.uint(1)
    if kind == FIXED_SIZE:
        raise MessageError(f"{rd.what}: a fixed-size query; this aggregator's tasks are time-interval")
    if kind != TIME_INTERVAL:
        raise MessageError(f"{rd.what}: unknown query type {kind}")
