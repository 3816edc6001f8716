"""DAP-09's shared structures and collection messages (ldp/aggregators/codec.py, collection_messages.py): the bytes
DAP-09 gives for known values, round trips, and any bytes refused with MessageError only (fuzzed)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from ldp.aggregators.codec import HpkeCiphertext, Interval, MessageError, Reader, ReportMetadata, items32
from ldp.aggregators.collection_messages import Collection, CollectionReq, aggregate_share_aad

u64s = st.integers(0, 2 ** 64 - 1)
intervals = st.builds(lambda s, d: Interval(s, min(d, 2 ** 64 - 1 - s)), u64s, u64s)
ciphertexts = st.builds(HpkeCiphertext, st.integers(0, 255), st.binary(max_size=40), st.binary(max_size=80))


def test_known_bytes() -> None:
    """The encodings DAP-09 gives (big-endian, lengths before byte strings: 2 bytes for the HPKE encapsulated key,
    4 for the rest), written out by hand."""
    interval = Interval(1_700_000_000, 3600)
    assert interval.to_bytes() == bytes.fromhex("000000006553f100" "0000000000000e10")
    req = CollectionReq(interval)
    assert req.to_bytes() == bytes.fromhex("01" "000000006553f100" "0000000000000e10" "00000000")
    ct = HpkeCiphertext(7, b"\xaa" * 3, b"\xbb" * 2)
    assert ct.to_bytes() == bytes.fromhex("07" "0003aaaaaa" "00000002bbbb")
    coll = Collection(5, interval, ct, HpkeCiphertext(8, b"", b""))
    assert coll.to_bytes() == bytes.fromhex("01" "0000000000000005" "000000006553f100" "0000000000000e10"
                                            "070003aaaaaa00000002bbbb" "08000000000000")
    aad = aggregate_share_aad(bytes(range(32)), interval)
    assert aad == bytes(range(32)) + bytes.fromhex("00000000" "01" "000000006553f100" "0000000000000e10")
    assert ReportMetadata(b"\x01" * 16, 60).to_bytes() == b"\x01" * 16 + bytes.fromhex("000000000000003c")


@given(intervals, st.binary(max_size=20))
def test_a_collection_request_round_trips(interval: Interval, param: bytes) -> None:
    req = CollectionReq(interval, param)
    assert CollectionReq.from_bytes(req.to_bytes()) == req


@given(u64s, intervals, ciphertexts, ciphertexts)
def test_a_collection_round_trips(count: int, interval: Interval, leader: HpkeCiphertext,
                                  helper: HpkeCiphertext) -> None:
    coll = Collection(count, interval, leader, helper)
    assert Collection.from_bytes(coll.to_bytes()) == coll


@pytest.mark.parametrize("kind", [CollectionReq, Collection, HpkeCiphertext])
@given(data=st.binary(max_size=120))
def test_any_bytes_decode_or_are_refused_as_malformed(kind: Any, data: bytes) -> None:
    try:
        out = kind.from_bytes(data)
    except MessageError:
        return
    assert out.to_bytes() == data  # what decodes is canonical: nothing skipped, nothing after it


@given(st.data())
def test_a_truncated_or_extended_message_is_refused(data: st.DataObject) -> None:
    good = Collection(1, Interval(0, 60), HpkeCiphertext(1, b"k", b"p"), HpkeCiphertext(2, b"", b"q")).to_bytes()
    cut = data.draw(st.integers(0, len(good) - 1))
    with pytest.raises(MessageError):
        Collection.from_bytes(good[:cut])
    with pytest.raises(MessageError, match="bytes after the message"):
        Collection.from_bytes(good + data.draw(st.binary(min_size=1, max_size=4)))


def test_refusals_name_the_problem() -> None:
    fixed = bytes([2]) + bytes(32) + bytes(4)
    with pytest.raises(MessageError, match="fixed-size query"):
        CollectionReq.from_bytes(fixed)
    with pytest.raises(MessageError, match="unknown query type 0"):
        CollectionReq.from_bytes(bytes(21))
    with pytest.raises(MessageError, match="past 2\\^64"):
        CollectionReq.from_bytes(bytes([1]) + b"\xff" * 16 + bytes(4))
    with pytest.raises(MessageError, match="uint64"):
        Interval(-1, 0)
    with pytest.raises(MessageError, match="task_id must be 32 bytes"):
        aggregate_share_aad(b"short", Interval(0, 1))
    with pytest.raises(TypeError, match="must be bytes"):
        CollectionReq.from_bytes("text")  # type: ignore[arg-type]


def test_lists_are_bounded_and_exact() -> None:
    body = items32([b"\x01", b"\x02", b"\x03"])
    assert Reader(body, "list").items32(lambda rd: rd.uint(1), most=3) == [1, 2, 3]
    with pytest.raises(MessageError, match="more than 2 items"):
        Reader(body, "list").items32(lambda rd: rd.uint(1), most=2)
    with pytest.raises(MessageError, match="truncated"):
        Reader(items32([b"\x01\x02\x03"]), "list").items32(lambda rd: rd.uint(2), most=9)
