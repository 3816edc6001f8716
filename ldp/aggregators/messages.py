"""The messages between the leader and the helper, and the codes a report is refused with (issue 71, item 3).

Encoded as DAP-09 encodes its messages (TLS presentation language, RFC 8446 §3: big-endian integers, byte strings
prefixed by their length), shaped after DAP-09's aggregation and aggregate-share messages (§4.5, §4.6) for
a one-round VDAF, with the batch named by its window:

``AggregationJobInit``: the leader's half of one round of preparation for a list of reports::

    opaque task_id[32]; uint64 window; uint32 count;
    ReportInit reports[count];
    ReportInit = opaque report_id[16]; uint64 time; opaque public_share<0..2^32-1>;
                 opaque helper_ciphertext<0..2^32-1>;   /* DAP's HpkeCiphertext, sealed to the helper */
                 opaque leader_verifier_share<0..2^32-1>;

``AggregationJobResp``: per report, in the request's order, the verifier message (both verify) or a refusal::

    uint32 count; ReportResp results[count];
    ReportResp = opaque report_id[16]; uint8 status;  /* 0: continue, 1: reject */
                 select (status) { case 0: opaque message<0..2^32-1>; case 1: uint8 error; }

``AggregateShareReq`` (the leader asks for the helper's share of one window, and states what it aggregated)::

    opaque task_id[32]; uint64 window; uint64 report_count; opaque checksum[32];

``AggregateShareResp``: ``uint64 report_count; opaque encrypted_aggregate_share<0..2^32-1>;`` (DAP's
HpkeCiphertext sealed to the collector). The checksum is DAP's: the XOR of SHA-256 of every report ID aggregated.

Every decoder refuses trailing bytes, short input and out-of-range values with :class:`MessageError` (a
``ValueError``), never anything else (tested by fuzzing).
"""

from __future__ import annotations

import enum
import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from ldp.errors import AggregatorMessageError as MessageError

__all__ = ["ReportError", "MessageError", "ReportInit", "AggregationJobInit", "ReportResp", "AggregationJobResp",
           "AggregateShareReq", "AggregateShareResp", "checksum", "xor_checksum", "MAX_JOB_REPORTS",
           "REPORT_ID_SIZE"]

REPORT_ID_SIZE = 16
TASK_ID_SIZE = 32
MAX_JOB_REPORTS = 100_000
"""The most reports one aggregation job may hold (the helper keeps a job in memory)."""


class ReportError(enum.IntEnum):
    """Why a report is refused (at the leader's door, or by either aggregator during preparation). The names are
    the codes the HTTP answers, the status and the dashboard use; the numbers are the wire's."""

    batch_collected = 1      # its window was already collected: a late report never enters a released batch
    report_replayed = 2      # its report ID was seen before
    hpke_unknown_config_id = 3
    hpke_decrypt_error = 4   # its share does not open (wrong key, tampered metadata)
    vdaf_invalid = 5         # the proof does not verify: not a valid measurement (two-hot, out of range, garbage)
    batch_mismatch = 6       # its time is not in the job's window
    report_too_early = 7     # its time is in the future beyond the tolerance
    report_too_late = 8      # its time is older than the aggregators keep windows open for
    invalid_message = 9      # it does not decode (a DAP report, or a VDAF share)

    @property
    def code(self) -> str:
        return self.name


class _Reader:
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

    def opaque32(self) -> bytes:
        return self.take(self.uint(4))

    def end(self) -> None:
        if self.pos != len(self.data):
            raise MessageError(f"{self.what}: {len(self.data) - self.pos} bytes after the message")


def _opaque32(data: bytes) -> bytes:
    if len(data) >= 1 << 32:
        raise MessageError("a byte string longer than 2^32 - 1")
    return struct.pack(">I", len(data)) + data


def _check(value: bytes, size: int, what: str) -> None:
    if not isinstance(value, bytes) or len(value) != size:
        raise MessageError(f"{what} must be {size} bytes")


@dataclass(frozen=True)
class ReportInit:
    report_id: bytes
    time: int
    public_share: bytes
    helper_ciphertext: bytes
    leader_verifier_share: bytes


@dataclass(frozen=True)
class AggregationJobInit:
    task_id: bytes
    window: int
    reports: tuple[ReportInit, ...]

    def to_bytes(self) -> bytes:
        _check(self.task_id, TASK_ID_SIZE, "task_id")
        if len(self.reports) > MAX_JOB_REPORTS:
            raise MessageError(f"a job holds at most {MAX_JOB_REPORTS} reports, got {len(self.reports)}")
        parts = [self.task_id, struct.pack(">QI", self.window, len(self.reports))]
        for r in self.reports:
            _check(r.report_id, REPORT_ID_SIZE, "report_id")
            parts += [r.report_id, struct.pack(">Q", r.time), _opaque32(r.public_share),
                      _opaque32(r.helper_ciphertext), _opaque32(r.leader_verifier_share)]
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregationJobInit:
        rd = _Reader(data, "AggregationJobInit")
        task_id, window, count = rd.take(TASK_ID_SIZE), rd.uint(8), rd.uint(4)
        if count > MAX_JOB_REPORTS:
            raise MessageError(f"AggregationJobInit: {count} reports (at most {MAX_JOB_REPORTS})")
        reports = tuple(ReportInit(rd.take(REPORT_ID_SIZE), rd.uint(8), rd.opaque32(), rd.opaque32(), rd.opaque32())
                        for _ in range(count))
        rd.end()
        return cls(task_id, window, reports)


@dataclass(frozen=True)
class ReportResp:
    """One report's outcome: ``message`` (the verifier message: both aggregators go on) or ``error``."""

    report_id: bytes
    message: bytes | None = None
    error: ReportError | None = None

    def __post_init__(self) -> None:
        if (self.message is None) == (self.error is None):
            raise MessageError("a report's outcome is a message or an error, exactly one")


@dataclass(frozen=True)
class AggregationJobResp:
    results: tuple[ReportResp, ...]

    def to_bytes(self) -> bytes:
        parts = [struct.pack(">I", len(self.results))]
        for r in self.results:
            _check(r.report_id, REPORT_ID_SIZE, "report_id")
            if r.message is not None:
                parts += [r.report_id, b"\x00", _opaque32(r.message)]
            else:
                assert r.error is not None
                parts += [r.report_id, b"\x01", bytes([int(r.error)])]
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregationJobResp:
        rd = _Reader(data, "AggregationJobResp")
        count = rd.uint(4)
        if count > MAX_JOB_REPORTS:
            raise MessageError(f"AggregationJobResp: {count} results (at most {MAX_JOB_REPORTS})")
        results = []
        for _ in range(count):
            rid, status = rd.take(REPORT_ID_SIZE), rd.uint(1)
            if status == 0:
                results.append(ReportResp(rid, message=rd.opaque32()))
            elif status == 1:
                code = rd.uint(1)
                try:
                    results.append(ReportResp(rid, error=ReportError(code)))
                except ValueError:
                    raise MessageError(f"AggregationJobResp: unknown report error {code}") from None
            else:
                raise MessageError(f"AggregationJobResp: unknown status {status}")
        rd.end()
        return cls(tuple(results))


@dataclass(frozen=True)
class AggregateShareReq:
    task_id: bytes
    window: int
    report_count: int
    checksum: bytes

    def to_bytes(self) -> bytes:
        _check(self.task_id, TASK_ID_SIZE, "task_id")
        _check(self.checksum, 32, "checksum")
        return self.task_id + struct.pack(">QQ", self.window, self.report_count) + self.checksum

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregateShareReq:
        rd = _Reader(data, "AggregateShareReq")
        out = cls(rd.take(TASK_ID_SIZE), rd.uint(8), rd.uint(8), rd.take(32))
        rd.end()
        return out


@dataclass(frozen=True)
class AggregateShareResp:
    report_count: int
    encrypted_share: bytes

    def to_bytes(self) -> bytes:
        return struct.pack(">Q", self.report_count) + _opaque32(self.encrypted_share)

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregateShareResp:
        rd = _Reader(data, "AggregateShareResp")
        out = cls(rd.uint(8), rd.opaque32())
        rd.end()
        return out


def checksum(report_id: bytes) -> bytes:
    """One report's part of the batch checksum: SHA-256 of its ID."""
    return hashlib.sha256(report_id).digest()


def xor_checksum(report_ids: Iterable[bytes], start: bytes = bytes(32)) -> bytes:
    """DAP's batch checksum: the XOR of :func:`checksum` of each report ID (order-free, so each aggregator computes
    it from its own records)."""
    acc = int.from_bytes(start, "big")
    for rid in report_ids:
        acc ^= int.from_bytes(checksum(rid), "big")
    return acc.to_bytes(32, "big")
