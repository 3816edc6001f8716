"""DAP-09's second round of an aggregation job, for Poplar1's two rounds of verification (``draft-ietf-ppm-dap-09``
§4.5.2; VDAF-08 §5.8's ping-pong topology), in :mod:`~ldp.aggregators.codec`'s encoding (issue 89, item 2).

A Poplar1 job is two requests to the helper on one job URL:

1. ``PUT /tasks/{task}/aggregation_jobs/{job}``: an :class:`~ldp.aggregators.messages.AggregationJobInitReq`
   whose ``agg_param`` is the level's :class:`~ldp.prio.poplar1.Poplar1AggregationParam` and whose reports carry
   the leader's ``initialize(verifier share of round 0)``. The helper answers each report ``continue`` with the
   ping-pong message :func:`continue_message` (round 0's verifier message, its own verifier share of round 1).
2. ``POST /tasks/{task}/aggregation_jobs/{job}``: an :class:`AggregationJobContinueReq` (step 1) whose reports
   carry the leader's ``finish(verifier message of round 1)``; the helper finishes each (result 1, finished) or
   refuses it, and aggregates. Reports the leader leaves out are refused by both.

Wire formats (DAP-09 §4.5.2, VDAF-08 §5.8)::

    AggregationJobContinueReq = uint16 step; PrepareContinue prepare_continues<0..2^32-1>;
    PrepareContinue = ReportID report_id; opaque payload<0..2^32-1>;
    continue (ping-pong type 1) = uint8 1; opaque prep_msg<0..2^32-1>; opaque prep_share<0..2^32-1>;
"""

from __future__ import annotations

from dataclasses import dataclass

from ldp.aggregators.codec import REPORT_ID_SIZE, MessageError, Reader, check_size, items32, opaque32, u8, u16
from ldp.aggregators.messages import MAX_JOB_REPORTS

__all__ = ["PrepareContinue", "AggregationJobContinueReq", "continue_message", "read_continue"]


def continue_message(prep_msg: bytes, prep_share: bytes) -> bytes:
    """The ping-pong ``continue`` message (type 1): a round's verifier message and the sender's next share."""
    return u8(1) + opaque32(prep_msg) + opaque32(prep_share)


def read_continue(data: bytes) -> tuple[bytes, bytes]:
    """``(prep_msg, prep_share)`` of a ``continue`` message; :class:`MessageError` for anything else."""
    rd = Reader(data, "a ping-pong continue message")
    if (kind := rd.uint(1)) != 1:
        raise MessageError(f"a ping-pong message of type {kind} where Poplar1's first answer is continue (1)")
    msg, share = rd.opaque32(), rd.opaque32()
    rd.end()
    return msg, share


@dataclass(frozen=True)
class PrepareContinue:
    report_id: bytes
    payload: bytes

    def to_bytes(self) -> bytes:
        check_size(self.report_id, REPORT_ID_SIZE, "report_id")
        return self.report_id + opaque32(self.payload)

    @classmethod
    def read(cls, rd: Reader) -> PrepareContinue:
        return cls(rd.take(REPORT_ID_SIZE), rd.opaque32())


@dataclass(frozen=True)
class AggregationJobContinueReq:
    """The leader's next step of a job (module docstring): ``step`` 1 for Poplar1's second round."""

    step: int
    prepare_continues: tuple[PrepareContinue, ...]

    def to_bytes(self) -> bytes:
        if len(self.prepare_continues) > MAX_JOB_REPORTS:
            raise MessageError(f"a job holds at most {MAX_JOB_REPORTS} reports")
        return u16(self.step) + items32([p.to_bytes() for p in self.prepare_continues])

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregationJobContinueReq:
        rd = Reader(data, "AggregationJobContinueReq")
        step = rd.uint(2)
        items = rd.items32(PrepareContinue.read, MAX_JOB_REPORTS)
        rd.end()
        return cls(step, tuple(items))
