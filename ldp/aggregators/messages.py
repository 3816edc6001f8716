"""DAP-09's messages between the leader and the helper (``draft-ietf-ppm-dap-09`` §4.5 aggregation jobs, §4.6
aggregate shares), for Prio3's one round of preparation, in :mod:`~ldp.aggregators.codec`'s encoding; and the
codes a report is refused with.

``AggregationJobInitReq`` (``PUT /tasks/{task}/aggregation_jobs/{job}``,
``application/dap-aggregation-job-init-req``)::

    opaque agg_param<0..2^32-1>;                 /* empty for Prio3 */
    PartialBatchSelector part_batch_selector;    /* query type 1: the helper takes each report's batch by its time */
    PrepareInit prepare_inits<0..2^32-1>;
    PrepareInit = ReportShare report_share; opaque payload<0..2^32-1>;   /* the leader's Initialize message */
    ReportShare = ReportMetadata metadata; opaque public_share<0..2^32-1>; HpkeCiphertext encrypted_input_share;

``AggregationJobResp`` (``application/dap-aggregation-job-resp``), one ``PrepareResp`` per report, in order::

    PrepareResp = ReportID report_id; uint8 result;     /* 0: continue, 1: finished, 2: reject */
                  select (result) { case 0: opaque payload<0..2^32-1>; case 2: PrepareError error; }

``AggregateShareReq`` (``POST /tasks/{task}/aggregate_shares``, ``application/dap-aggregate-share-req``)::

    BatchSelector batch_selector; opaque agg_param<0..2^32-1>; uint64 report_count; opaque checksum[32];

``AggregateShare`` (``application/dap-aggregate-share``): ``HpkeCiphertext encrypted_aggregate_share;``

The payloads are VDAF-08's ping-pong messages (§5.8): ``uint8 type`` then ``opaque`` fields of 4-byte lengths;
Prio3 has one round, so the leader sends ``initialize(prep_share)`` (type 0) and the helper, having combined both
prep shares and finished, answers ``finish(prep_msg)`` (type 2) under result 0. The checksum is DAP's: the XOR of
SHA-256 of every report ID aggregated. Every decoder refuses trailing bytes, short input and out-of-range values
with :class:`MessageError` (a ``ValueError``), never anything else (tested by fuzzing).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from ldp.aggregators.codec import (
    MEDIA_TYPES,
    PARTIAL_TIME_INTERVAL,
    REPORT_ID_SIZE,
    HpkeCiphertext,
    Interval,
    MessageError,
    Reader,
    ReportMetadata,
    batch_selector,
    check_size,
    items32,
    opaque32,
    read_batch_selector,
    read_partial_batch_selector,
    u8,
    u64,
)

__all__ = ["ReportError", "MessageError", "ReportShare", "PrepareInit", "AggregationJobInitReq", "PrepareResp",
           "AggregationJobResp", "AggregateShareReq", "AggregateShare", "initialize", "finish", "checksum",
           "xor_checksum", "MAX_JOB_REPORTS", "REPORT_ID_SIZE", "MEDIA_TYPES", "ABANDONED_HEADER",
           "SHARE_REMOVED"]

MAX_JOB_REPORTS = 100_000
"""The most reports one aggregation job may hold (the helper keeps a job in memory)."""
ABANDONED_HEADER = "Ldp-Abandoned"
"""The header an ``ldp`` helper answers an abandoned job's ``DELETE`` with (this project's request: DAP-09's
``DELETE`` of an aggregation job discards the job's state, and a helper of another implementation may keep its
share counted, as Janus 0.7 does): :data:`SHARE_REMOVED`."""
SHARE_REMOVED = "share-removed"
"""What :data:`ABANDONED_HEADER` says: the job's share and reports were taken out of the helper's window."""


class ReportError(enum.IntEnum):
    """Why a report is refused (at the leader's door, or by either aggregator during preparation). The names are
    the codes the HTTP answers, the status and the dashboard use; a value below 256 is DAP-09's ``PrepareError``
    on the wire (``vdaf_invalid`` is its ``vdaf_prep_error``); the others are the door's alone, sent in a job as
    ``report_dropped`` (:attr:`wire`)."""

    batch_collected = 0      # its window was already collected: a late report never enters a released batch
    report_replayed = 1      # its report ID was seen before
    report_dropped = 2       # dropped for another reason (a peer's; this project's are named)
    hpke_unknown_config_id = 3
    hpke_decrypt_error = 4   # its share does not open (wrong key, tampered metadata)
    vdaf_invalid = 5         # the proof does not verify: not a valid measurement (two-hot, out of range, garbage)
    batch_saturated = 6      # (a peer's: fixed-size batches)
    task_expired = 7         # (a peer's: this project's tasks do not expire)
    invalid_message = 8      # it does not decode (a DAP report, or a VDAF share), or its time is not rounded
    report_too_early = 9     # its time is in the future beyond the tolerance
    report_too_late = 256    # its time is older than the aggregators keep windows open for (the door's)

    @property
    def code(self) -> str:
        return self.name

    @property
    def wire(self) -> int:
        """Its DAP-09 ``PrepareError`` value."""
        return int(self) if self < 256 else int(ReportError.report_dropped)


def initialize(prep_share: bytes) -> bytes:
    """The ping-pong ``initialize`` message: the leader's prep share (type 0)."""
    if type(prep_share) is bytes and len(prep_share) < 1 << 32:  # (anything else: the checks of opaque32)
        return b"\x00" + len(prep_share).to_bytes(4, "big") + prep_share
    return u8(0) + opaque32(prep_share)


def finish(prep_msg: bytes) -> bytes:
    """The ping-pong ``finish`` message: the prep message both aggregators finish with (type 2)."""
    if type(prep_msg) is bytes and len(prep_msg) < 1 << 32:
        return b"\x02" + len(prep_msg).to_bytes(4, "big") + prep_msg
    return u8(2) + opaque32(prep_msg)


def _ping_pong(data: bytes, kind: int, name: str) -> bytes:
    """The one field of a ping-pong message of type ``kind`` (``initialize`` or ``finish``); a
    :class:`MessageError` for any other message."""
    if len(data) >= 5 and data[0] == kind and int.from_bytes(data[1:5], "big") == len(data) - 5:
        return bytes(data[5:])  # the well-formed message at once; anything else read below, which names the fault
    rd = Reader(data, f"a ping-pong {name} message")
    found = rd.uint(1)
    if found != kind:
        raise MessageError(f"a ping-pong message of type {found} where Prio3's one round has {name} ({kind})")
    field = rd.opaque32()
    rd.end()
    return field


@dataclass(frozen=True)
class ReportShare:
    """A report as the helper gets it: its metadata, its public share and the helper's sealed input share
    (``encrypted_input_share``: an ``HpkeCiphertext``'s bytes, as the device sealed them)."""

    report_id: bytes
    time: int
    public_share: bytes
    encrypted_input_share: bytes

    def to_bytes(self) -> bytes:
        return ReportMetadata(self.report_id, self.time).to_bytes() + opaque32(self.public_share) + \
            self.encrypted_input_share

    @classmethod
    def read(cls, rd: Reader) -> ReportShare:
        meta, public = ReportMetadata.read(rd), rd.opaque32()
        start = rd.pos
        HpkeCiphertext.read(rd)
        return cls(meta.report_id, meta.time, public, rd.data[start:rd.pos])


@dataclass(frozen=True)
class PrepareInit:
    """One report of a job: its share, and the leader's ``initialize`` message (its prep share)."""

    report_share: ReportShare
    payload: bytes

    @property
    def leader_prep_share(self) -> bytes:
        """The leader's prep share (:class:`MessageError` unless the payload is an ``initialize`` message)."""
        return _ping_pong(self.payload, 0, "initialize")

    def to_bytes(self) -> bytes:
        return self.report_share.to_bytes() + opaque32(self.payload)

    @classmethod
    def read(cls, rd: Reader) -> PrepareInit:
        return cls(ReportShare.read(rd), rd.opaque32())


@dataclass(frozen=True)
class AggregationJobInitReq:
    prepare_inits: tuple[PrepareInit, ...]
    aggregation_parameter: bytes = b""

    def to_bytes(self) -> bytes:
        if len(self.prepare_inits) > MAX_JOB_REPORTS:
            raise MessageError(f"a job holds at most {MAX_JOB_REPORTS} reports, got {len(self.prepare_inits)}")
        return opaque32(self.aggregation_parameter) + PARTIAL_TIME_INTERVAL + \
            items32([_init_bytes(p) for p in self.prepare_inits])

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregationJobInitReq:
        rd = Reader(data, "AggregationJobInitReq")
        param = rd.opaque32()
        read_partial_batch_selector(rd)
        start = rd.pos
        fast = _prepare_inits(rd.data, start)
        if fast is not None:
            return cls(fast, param)
        inits = rd.items32(PrepareInit.read, MAX_JOB_REPORTS)  # the reference reader names what is wrong
        rd.end()
        return cls(tuple(inits), param)


@dataclass(frozen=True)
class PrepareResp:
    """One report's outcome: ``payload`` (result 0, continue: the helper's ``finish`` message), ``finished``
    (result 1), or ``error`` (result 2, reject)."""

    report_id: bytes
    payload: bytes | None = None
    error: ReportError | None = None
    finished: bool = False

    def __post_init__(self) -> None:
        if (self.payload is not None) + (self.error is not None) + self.finished != 1:
            raise MessageError("a report's outcome is a message, finished or an error, exactly one")

    @property
    def prep_msg(self) -> bytes:
        """The prep message of a ``finish`` answer (:class:`MessageError` for any other outcome)."""
        if self.payload is None:
            raise MessageError("the answer to a report's initialization holds no ping-pong message")
        return _ping_pong(self.payload, 2, "finish")

    def to_bytes(self) -> bytes:
        check_size(self.report_id, REPORT_ID_SIZE, "report_id")
        if self.payload is not None:
            return self.report_id + u8(0) + opaque32(self.payload)
        if self.finished:
            return self.report_id + u8(1)
        assert self.error is not None
        return self.report_id + u8(2) + u8(self.error.wire)

    @classmethod
    def read(cls, rd: Reader) -> PrepareResp:
        rid, result = rd.take(REPORT_ID_SIZE), rd.uint(1)
        if result == 0:
            return cls(rid, payload=rd.opaque32())
        if result == 1:
            return cls(rid, finished=True)
        if result != 2:
            raise MessageError(f"{rd.what}: unknown PrepareStepResult {result}")
        code = rd.uint(1)
        if code > 9:
            raise MessageError(f"{rd.what}: unknown PrepareError {code}")
        return cls(rid, error=ReportError(code))


@dataclass(frozen=True)
class AggregationJobResp:
    prepare_resps: tuple[PrepareResp, ...]

    def to_bytes(self) -> bytes:
        return items32([_resp_bytes(r) for r in self.prepare_resps])

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregationJobResp:
        rd = Reader(data, "AggregationJobResp")
        fast = _prepare_resps(rd.data)
        if fast is not None:
            return cls(fast)
        resps = rd.items32(PrepareResp.read, MAX_JOB_REPORTS)  # the reference reader names what is wrong
        rd.end()
        return cls(tuple(resps))


# -- the jobs' lists read in one loop each: the same items as the reference reader (``Reader.items32`` of
# ``PrepareInit.read``, ``PrepareResp.read``) for every well-formed list, ``None`` for anything else, which the
# reference reader then reads again to name the fault (tests/aggregators/test_messages.py checks both agree on any
# bytes). A job's thousand reports are most of the aggregators' Python work (issue 86, item 2).

def _init_bytes(p: PrepareInit) -> bytes:
    """``p.to_bytes()`` in one step for fields of the usual types and sizes (else the reference encoder, which names
    what is wrong)."""
    r = p.report_share
    rid, time, public, payload = r.report_id, r.time, r.public_share, p.payload
    if (type(rid) is bytes and len(rid) == REPORT_ID_SIZE and type(time) is int and 0 <= time < 1 << 64
            and type(public) is bytes and len(public) < 1 << 32 and type(r.encrypted_input_share) is bytes
            and type(payload) is bytes and len(payload) < 1 << 32):
        return b"".join((rid, time.to_bytes(8, "big"), len(public).to_bytes(4, "big"), public,
                         r.encrypted_input_share, len(payload).to_bytes(4, "big"), payload))
    return p.to_bytes()


def _resp_bytes(r: PrepareResp) -> bytes:
    """``r.to_bytes()`` in one step for a ``continue`` answer of the usual types and sizes (else the reference
    encoder)."""
    rid, payload = r.report_id, r.payload
    if type(rid) is bytes and len(rid) == REPORT_ID_SIZE and type(payload) is bytes and len(payload) < 1 << 32:
        return b"".join((rid, b"\x00", len(payload).to_bytes(4, "big"), payload))
    return r.to_bytes()


def _prepare_inits(data: bytes, pos: int) -> tuple[PrepareInit, ...] | None:
    """``PrepareInit inits<0..2^32-1>`` at ``pos``, the message's last field, or ``None``."""
    get = int.from_bytes
    if len(data) - pos < 4 or get(data[pos:pos + 4], "big") != len(data) - pos - 4:
        return None
    pos, end = pos + 4, len(data)
    out: list[PrepareInit] = []
    while pos < end:
        if len(out) == MAX_JOB_REPORTS:
            return None
        rid, time = data[pos:pos + REPORT_ID_SIZE], get(data[pos + REPORT_ID_SIZE:pos + REPORT_ID_SIZE + 8], "big")
        pos += REPORT_ID_SIZE + 8
        public_end = pos + 4 + get(data[pos:pos + 4], "big")
        public, pos = data[pos + 4:public_end], public_end
        start = pos  # the HpkeCiphertext: config ID, enc (16-bit length), payload (32-bit length)
        pos += 3 + get(data[pos + 1:pos + 3], "big")
        pos += 4 + get(data[pos:pos + 4], "big")
        sealed = data[start:pos]
        payload_end = pos + 4 + get(data[pos:pos + 4], "big")
        payload, pos = data[pos + 4:payload_end], payload_end
        if pos > end:  # a field ran past the list (a short read shows here: each step moved by its full size)
            return None
        out.append(PrepareInit(ReportShare(rid, time, public, sealed), payload))
    return tuple(out)


def _prepare_resps(data: bytes) -> tuple[PrepareResp, ...] | None:
    """``PrepareResp resps<0..2^32-1>``, the whole message, or ``None``."""
    get = int.from_bytes
    if len(data) < 4 or get(data[:4], "big") != len(data) - 4:
        return None
    pos, end = 4, len(data)
    out: list[PrepareResp] = []
    while pos < end:
        if len(out) == MAX_JOB_REPORTS or end - pos < REPORT_ID_SIZE + 1:
            return None
        rid, result = data[pos:pos + REPORT_ID_SIZE], data[pos + REPORT_ID_SIZE]
        pos += REPORT_ID_SIZE + 1
        if result == 0:
            payload_end = pos + 4 + get(data[pos:pos + 4], "big")
            if payload_end > end:
                return None
            out.append(PrepareResp(rid, payload=data[pos + 4:payload_end]))
            pos = payload_end
        elif result == 1:
            out.append(PrepareResp(rid, finished=True))
        elif result == 2 and pos < end and data[pos] <= 9:
            out.append(PrepareResp(rid, error=ReportError(data[pos])))
            pos += 1
        else:
            return None
    return tuple(out)


@dataclass(frozen=True)
class AggregateShareReq:
    """The leader's request for the helper's share of a batch, with what it aggregated (the count and checksum)."""

    interval: Interval
    report_count: int
    checksum: bytes
    aggregation_parameter: bytes = b""

    def to_bytes(self) -> bytes:
        check_size(self.checksum, 32, "checksum")
        return batch_selector(self.interval) + opaque32(self.aggregation_parameter) + u64(self.report_count) + \
            self.checksum

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregateShareReq:
        rd = Reader(data, "AggregateShareReq")
        interval, param = read_batch_selector(rd), rd.opaque32()
        out = cls(interval, rd.uint(8), rd.take(32), param)
        rd.end()
        return out


@dataclass(frozen=True)
class AggregateShare:
    """The helper's aggregate share of a batch, sealed to the collector (an ``HpkeCiphertext``'s bytes)."""

    encrypted_share: bytes

    def to_bytes(self) -> bytes:
        HpkeCiphertext.from_bytes(self.encrypted_share)  # exactly one ciphertext
        return self.encrypted_share

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregateShare:
        HpkeCiphertext.from_bytes(data)
        return cls(bytes(data))


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
