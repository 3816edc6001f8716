"""DAP-09's leader–helper messages (ldp/aggregators/messages.py): the bytes DAP-09 gives, round trips, the ping-pong
payloads of Prio3's one round, and any bytes refused with MessageError only (fuzzed). Janus's own encoding of the
same messages is compared in clients/rust/interop."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ldp.aggregators.codec import HpkeCiphertext, Interval
from ldp.aggregators.messages import (
    AggregateShare,
    AggregateShareReq,
    AggregationJobInitReq,
    AggregationJobResp,
    MessageError,
    PrepareInit,
    PrepareResp,
    ReportError,
    ReportShare,
    finish,
    initialize,
    xor_checksum,
)

ids = st.binary(min_size=16, max_size=16)
blobs = st.binary(max_size=64)
ciphertexts = st.builds(lambda c, e, p: HpkeCiphertext(c, e, p).to_bytes(), st.integers(0, 255), blobs, blobs)
shares = st.builds(ReportShare, ids, st.integers(0, 2 ** 64 - 1), blobs, ciphertexts)
inits = st.builds(PrepareInit, shares, blobs)
wire_errors = st.sampled_from([e for e in ReportError if e < 256])
resps = st.one_of(st.builds(lambda r, m: PrepareResp(r, payload=m), ids, blobs),
                  st.builds(lambda r: PrepareResp(r, finished=True), ids),
                  st.builds(lambda r, e: PrepareResp(r, error=e), ids, wire_errors))
intervals = st.builds(lambda s, d: Interval(s, min(d, 2 ** 64 - 1 - s)), st.integers(0, 2 ** 64 - 1),
                      st.integers(0, 2 ** 64 - 1))


def test_known_bytes() -> None:
    """Each message written out by hand from DAP-09 §4.5–4.6: lengths before lists and byte strings (4 bytes, 2 for
    the HPKE encapsulated key), the partial batch selector of a time-interval task (01), result codes."""
    rid = bytes(range(16))
    share = ReportShare(rid, 3600, b"P", HpkeCiphertext(9, b"E", b"CT").to_bytes())
    init = AggregationJobInitReq((PrepareInit(share, initialize(b"S")),))
    report_share = rid.hex() + "0000000000000e10" + "0000000150" + "09" + "000145" + "000000024354"
    payload = "00" + "0000000153"  # initialize(prep_share "S")
    body = report_share + "00000006" + payload
    assert init.to_bytes().hex() == "00000000" + "01" + f"{len(body) // 2:08x}" + body
    resp = AggregationJobResp((PrepareResp(rid, payload=finish(b"M")), PrepareResp(rid, error=ReportError.vdaf_invalid),
                               PrepareResp(rid, finished=True)))
    items = rid.hex() + "00" + "00000006" + "02" + "000000014d" + rid.hex() + "02" + "05" + rid.hex() + "01"
    assert resp.to_bytes().hex() == f"{len(items) // 2:08x}" + items
    req = AggregateShareReq(Interval(3600, 3600), 7, bytes(32))
    assert req.to_bytes().hex() == "01" + "0000000000000e10" * 2 + "00000000" + "0000000000000007" + "00" * 32
    assert AggregateShare(HpkeCiphertext(1, b"", b"x").to_bytes()).to_bytes().hex() == "01" "0000" "0000000178"


def test_the_ping_pong_payloads_of_one_round() -> None:
    init = PrepareInit(ReportShare(bytes(16), 0, b"", HpkeCiphertext(1, b"", b"").to_bytes()), initialize(b"share"))
    assert init.leader_prep_share == b"share"
    assert PrepareResp(bytes(16), payload=finish(b"msg")).prep_msg == b"msg"
    with pytest.raises(MessageError, match="type 2 where Prio3's one round has initialize"):
        _ = PrepareInit(init.report_share, finish(b"x")).leader_prep_share
    with pytest.raises(MessageError, match="type 0 where Prio3's one round has finish"):
        _ = PrepareResp(bytes(16), payload=initialize(b"x")).prep_msg
    with pytest.raises(MessageError, match="no ping-pong message"):
        _ = PrepareResp(bytes(16), finished=True).prep_msg
    with pytest.raises(MessageError, match="bytes after the message"):
        _ = PrepareResp(bytes(16), payload=finish(b"x") + b"!").prep_msg


def test_the_refusal_codes_are_dap_09s_prepare_errors() -> None:
    """DAP-09 §4.5.1.4's PrepareError values; the door's own code goes on the wire as report_dropped."""
    dap = ["batch_collected", "report_replayed", "report_dropped", "hpke_unknown_config_id", "hpke_decrypt_error",
           "vdaf_prep_error", "batch_saturated", "task_expired", "invalid_message", "report_too_early"]
    ours = {e.wire: e.code for e in ReportError if e < 256}
    assert [ours[i].replace("vdaf_invalid", "vdaf_prep_error") for i in range(10)] == dap
    assert ReportError.report_too_late.wire == 2
    late = AggregationJobResp((PrepareResp(bytes(16), error=ReportError.report_too_late),)).to_bytes()
    assert late[-1] == 2
    assert AggregationJobResp.from_bytes(late).prepare_resps[0].error is ReportError.report_dropped


@given(st.lists(inits, max_size=5), blobs)
def test_a_job_round_trips(reports: list[PrepareInit], param: bytes) -> None:
    job = AggregationJobInitReq(tuple(reports), param)
    assert AggregationJobInitReq.from_bytes(job.to_bytes()) == job


@given(st.lists(resps, max_size=5))
def test_an_answer_round_trips(results: list[PrepareResp]) -> None:
    resp = AggregationJobResp(tuple(results))
    assert AggregationJobResp.from_bytes(resp.to_bytes()) == resp


@given(intervals, st.integers(0, 2 ** 64 - 1), st.binary(min_size=32, max_size=32), blobs, ciphertexts)
def test_share_messages_round_trip(interval: Interval, count: int, checksum: bytes, param: bytes, sealed: bytes
                                   ) -> None:
    req = AggregateShareReq(interval, count, checksum, param)
    assert AggregateShareReq.from_bytes(req.to_bytes()) == req
    assert AggregateShare.from_bytes(AggregateShare(sealed).to_bytes()) == AggregateShare(sealed)


KINDS: tuple[Any, ...] = (AggregationJobInitReq, AggregationJobResp, AggregateShareReq, AggregateShare)


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_any_bytes_decode_or_are_refused_with_message_error(data: bytes) -> None:
    for kind in KINDS:
        try:
            msg = kind.from_bytes(data)
        except MessageError:
            continue
        assert msg.to_bytes() == data  # what decodes is canonical: one encoding per message


@settings(max_examples=200)
@given(st.lists(inits, min_size=1, max_size=3), st.data())
def test_a_damaged_job_is_refused_or_is_another_canonical_job(reports: list[PrepareInit], data: st.DataObject
                                                                ) -> None:
    good = bytearray(AggregationJobInitReq(tuple(reports)).to_bytes())
    at = data.draw(st.integers(0, len(good) - 1))
    good[at] ^= data.draw(st.integers(1, 255))
    try:
        job = AggregationJobInitReq.from_bytes(bytes(good))
    except MessageError:
        return
    assert job.to_bytes() == bytes(good)


@given(st.lists(ids, max_size=8))
def test_the_checksum_is_order_free_and_cancels(report_ids: list[bytes]) -> None:
    assert xor_checksum(report_ids) == xor_checksum(list(reversed(report_ids)))
    assert xor_checksum(report_ids + report_ids) == bytes(32)


def test_refusals() -> None:
    with pytest.raises(MessageError, match="after the message"):
        AggregateShareReq.from_bytes(AggregateShareReq(Interval(0, 1), 0, bytes(32)).to_bytes() + b"x")
    with pytest.raises(MessageError, match="truncated"):
        AggregationJobInitReq.from_bytes(bytes(3))
    with pytest.raises(MessageError, match="exactly one"):
        PrepareResp(bytes(16))
    with pytest.raises(MessageError, match="exactly one"):
        PrepareResp(bytes(16), payload=b"", finished=True)
    with pytest.raises(MessageError, match="unknown PrepareError 10"):
        AggregationJobResp.from_bytes(b"\x00\x00\x00\x12" + bytes(16) + b"\x02\x0a")
    with pytest.raises(MessageError, match="unknown PrepareStepResult 3"):
        AggregationJobResp.from_bytes(b"\x00\x00\x00\x11" + bytes(16) + b"\x03")
    with pytest.raises(MessageError, match="fixed-size"):
        AggregationJobInitReq.from_bytes(bytes(4) + b"\x02" + bytes(36))
    with pytest.raises(MessageError, match="checksum must be 32 bytes"):
        AggregateShareReq(Interval(0, 1), 0, bytes(31)).to_bytes()
    with pytest.raises(TypeError):
        AggregationJobInitReq.from_bytes("text")  # type: ignore[arg-type]


# -- the one-loop readers of a job's lists against the reference reader (issue 86, item 2) ------------------------

def _decoded(kind: Any, data: bytes, *, fast: bool) -> Any:
    """``kind.from_bytes(data)`` with the one-loop readers (``fast``) or with the reference reader alone: the
    message, or the ``MessageError``'s text."""
    from ldp.aggregators import messages

    saved = messages._prepare_inits, messages._prepare_resps, messages._ping_pong
    if not fast:
        messages._prepare_inits = messages._prepare_resps = lambda *a: None  # type: ignore[assignment]
    try:
        return kind.from_bytes(data)
    except MessageError as exc:
        return f"MessageError: {exc}"
    finally:
        messages._prepare_inits, messages._prepare_resps, messages._ping_pong = saved


def _damaged(data: st.DataObject, good: bytes) -> bytes:
    """``good`` cut short, lengthened, or with one byte changed (a length field as often as not)."""
    how = data.draw(st.sampled_from(["cut", "grow", "flip", "flip"]))
    if how == "cut":
        return good[:data.draw(st.integers(0, max(len(good) - 1, 0)))]
    if how == "grow":
        return good + data.draw(st.binary(min_size=1, max_size=8))
    out = bytearray(good)
    if out:
        out[data.draw(st.integers(0, len(out) - 1))] ^= data.draw(st.integers(1, 255))
    return bytes(out)


def _fast(kind: Any, body: bytes) -> Any:
    """The one-loop reader's items of ``body`` (``None``: it leaves the body to the reference reader)."""
    from ldp.aggregators import messages

    if kind is AggregationJobResp:
        return messages._prepare_resps(body)
    param = int.from_bytes(body[:4], "big") if len(body) >= 4 else 0
    return messages._prepare_inits(body, 4 + param + 1)


@settings(max_examples=400)
@given(st.lists(inits, max_size=6), st.lists(resps, max_size=6), st.data())
def test_the_one_loop_readers_read_what_the_reference_reader_reads(reports: list[PrepareInit],
                                                                   answers: list[PrepareResp],
                                                                   data: st.DataObject) -> None:
    """An intact job or answer is read by the one-loop reader itself, to the reference reader's items; a damaged one
    is left to the reference reader (``None``) or read to its items; either way ``from_bytes`` answers the same
    message or the same refusal."""
    for kind, good in ((AggregationJobInitReq, AggregationJobInitReq(tuple(reports)).to_bytes()),
                       (AggregationJobResp, AggregationJobResp(tuple(answers)).to_bytes())):
        for body, intact in ((good, True), (_damaged(data, good), False)):
            reference = _decoded(kind, body, fast=False)
            assert _decoded(kind, body, fast=True) == reference
            fast = _fast(kind, body)
            items = None if isinstance(reference, str) else (
                reference.prepare_resps if kind is AggregationJobResp else reference.prepare_inits)
            if intact:
                assert fast is not None and fast == items
            elif items is not None:  # (a refused body is the from_bytes comparison's: its header may be the fault)
                assert fast is None or fast == items


@pytest.mark.parametrize("code", [10, 11, 255])
def test_an_answer_with_an_unknown_prepare_error_is_refused_both_ways(code: int) -> None:
    body = bytearray(AggregationJobResp((PrepareResp(bytes(16), error=ReportError(3)),)).to_bytes())
    body[-1] = code
    assert _fast(AggregationJobResp, bytes(body)) is None
    assert _decoded(AggregationJobResp, bytes(body), fast=True) == _decoded(AggregationJobResp, bytes(body),
                                                                              fast=False)
    assert "unknown PrepareError" in _decoded(AggregationJobResp, bytes(body), fast=True)


@settings(max_examples=300)
@given(st.binary(max_size=40), st.integers(0, 3))
def test_a_ping_pong_message_is_read_as_the_reference_reads_it(data: bytes, kind: int) -> None:
    from ldp.aggregators import messages
    from ldp.aggregators.codec import Reader

    def reference() -> Any:
        rd = Reader(data, "m")
        try:
            found = rd.uint(1)
            field = rd.opaque32()
            rd.end()
        except MessageError:
            return None
        return field if found == kind else None

    try:
        got: Any = messages._ping_pong(data, kind, "m")
    except MessageError:
        got = None
    assert got == reference()


odd = st.one_of(st.binary(max_size=20), st.integers(-2, 2 ** 64 + 1), st.none(),
                st.builds(bytearray, st.binary(max_size=20)), st.text(max_size=4))


@settings(max_examples=300)
@given(st.lists(inits, max_size=4), st.lists(resps, max_size=4), odd, odd, st.data())
def test_the_one_step_encoders_write_what_the_reference_encoders_write(reports: list[PrepareInit],
                                                                       answers: list[PrepareResp], a: Any, b: Any,
                                                                       data: st.DataObject) -> None:
    """Any job and answer, a field replaced by a value of another type or size as often as not: the same bytes as
    the items' own ``to_bytes``, or the same refusal."""
    from dataclasses import replace

    from ldp.aggregators import messages

    def both(encode: Any, item: Any) -> tuple[Any, Any]:
        out = []
        for f in (encode, type(item).to_bytes):
            try:
                out.append(f(item))
            except (MessageError, TypeError, AttributeError) as exc:
                out.append(f"{type(exc).__name__}: {exc}")
        return out[0], out[1]

    for p in reports:
        if data.draw(st.booleans()):
            field = data.draw(st.sampled_from(["report_id", "time", "public_share", "encrypted_input_share"]))
            p = PrepareInit(replace(p.report_share, **{field: a}), p.payload)
        elif data.draw(st.booleans()):
            p = PrepareInit(p.report_share, b)
        fast, reference = both(messages._init_bytes, p)
        assert fast == reference
    for r in answers:
        if r.payload is not None and data.draw(st.booleans()):
            r = PrepareResp(a if data.draw(st.booleans()) else r.report_id, payload=b if isinstance(b, bytes) else
                            r.payload)
        fast, reference = both(messages._resp_bytes, r)
        assert fast == reference
