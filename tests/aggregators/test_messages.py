"""The leader–helper messages: round trips, and any bytes refused with MessageError only (fuzzed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ldp.aggregators.messages import (
    AggregateShareReq,
    AggregateShareResp,
    AggregationJobInit,
    AggregationJobResp,
    MessageError,
    ReportError,
    ReportInit,
    ReportResp,
    xor_checksum,
)

ids = st.binary(min_size=16, max_size=16)
blobs = st.binary(max_size=64)
inits = st.builds(ReportInit, ids, st.integers(0, 2 ** 64 - 1), blobs, blobs, blobs)
resps = st.one_of(st.builds(lambda r, m: ReportResp(r, message=m), ids, blobs),
                  st.builds(lambda r, e: ReportResp(r, error=e), ids, st.sampled_from(list(ReportError))))


@given(st.binary(min_size=32, max_size=32), st.integers(0, 2 ** 64 - 1), st.lists(inits, max_size=5))
def test_a_job_round_trips(task_id: bytes, window: int, reports: list[ReportInit]) -> None:
    job = AggregationJobInit(task_id, window, tuple(reports))
    assert AggregationJobInit.from_bytes(job.to_bytes()) == job


@given(st.lists(resps, max_size=5))
def test_an_answer_round_trips(results: list[ReportResp]) -> None:
    resp = AggregationJobResp(tuple(results))
    assert AggregationJobResp.from_bytes(resp.to_bytes()) == resp


@given(st.binary(min_size=32, max_size=32), st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1),
       st.binary(min_size=32, max_size=32), blobs)
def test_share_messages_round_trip(task_id: bytes, window: int, count: int, checksum: bytes, share: bytes) -> None:
    req = AggregateShareReq(task_id, window, count, checksum)
    assert AggregateShareReq.from_bytes(req.to_bytes()) == req
    resp = AggregateShareResp(count, share)
    assert AggregateShareResp.from_bytes(resp.to_bytes()) == resp


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_any_bytes_decode_or_are_refused_with_message_error(data: bytes) -> None:
    for kind in (AggregationJobInit, AggregationJobResp, AggregateShareReq, AggregateShareResp):
        try:
            msg = kind.from_bytes(data)  # type: ignore[attr-defined]
        except MessageError:
            continue
        assert msg.to_bytes() == data  # what decodes is canonical: one encoding per message


@given(st.lists(ids, max_size=8))
def test_the_checksum_is_order_free_and_cancels(report_ids: list[bytes]) -> None:
    assert xor_checksum(report_ids) == xor_checksum(list(reversed(report_ids)))
    assert xor_checksum(report_ids + report_ids) == bytes(32)


def test_refusals() -> None:
    with pytest.raises(MessageError, match="trailing|after the message"):
        AggregateShareReq.from_bytes(bytes(80) + b"x")
    with pytest.raises(MessageError, match="truncated"):
        AggregationJobInit.from_bytes(bytes(40))
    with pytest.raises(MessageError, match="exactly one"):
        ReportResp(bytes(16))
    with pytest.raises(MessageError, match="unknown report error"):
        AggregationJobResp.from_bytes(b"\x00\x00\x00\x01" + bytes(16) + b"\x01\xff")
    with pytest.raises(TypeError):
        AggregationJobInit.from_bytes("text")  # type: ignore[arg-type]
