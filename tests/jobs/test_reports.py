"""Tests of the wire format (ldp.reports) and of report ingestion by aggregates (ldp.decoders.base)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import random
import struct
import zlib
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from ldp.decoders.base import Aggregate
from ldp.decoders.randomized_response import GRRAggregate, RRAggregate
from ldp.encoders.randomized_response import BinaryRRParams, GRREncoder, GRRParams
from ldp.reports import (
    MAX_BITS,
    MAX_LINE,
    REASONS,
    Field,
    Frame,
    Report,
    ReportBatch,
    ReportError,
    canonical_json,
    decode_binary,
    encode_frames,
    fingerprint,
    iter_frames,
    parse_json,
    scan_frames,
    validate_report,
)

GRR4 = GRRParams(1.0, 4)
FP = GRR4.fingerprint  # "c96a633c99281e12" (docs/wire-format.md)
DEMO_FP = "0123456789abcdef"
RR = BinaryRRParams.forced_response()
GRR5 = GRRParams(1.0, 5)  # the aggregate tests' protocol
FP5 = GRR5.fingerprint


def line_of(**overrides) -> str:
    obj = {"v": 1, "protocol": "grr", "params": FP, "payload": {"index": 1}}
    for k, v in overrides.items():
        if v is _DROP:
            obj.pop(k)
        else:
            obj[k] = v
    return json.dumps(obj)


_DROP = object()


def build_frame(
    fields: list[tuple[bytes, int, int]],
    count: int,
    columns: bytes,
    *,
    protocol: bytes = b"grr",
    fp: str = FP,
    version: int = 1,
    magic: bytes = b"LDPB",
    nfields: int | None = None,
) -> bytes:
    """A binary frame built from the byte-level spec in docs/wire-format.md, independently of ldp."""
    body = magic + bytes([version, len(protocol)]) + protocol + bytes.fromhex(fp)
    body += bytes([len(fields) if nfields is None else nfields])
    for name, kind, width in fields:
        body += bytes([len(name)]) + name + struct.pack("<BI", kind, width)
    body += struct.pack("<I", count) + columns
    return body + struct.pack("<I", zlib.crc32(body))


def reason_of(fn: Callable[[], object]) -> str:
    with pytest.raises(ReportError) as info:
        fn()
    assert info.value.reason in REASONS
    return info.value.reason


# --------------------------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------------------------


def demo_report(cohort: int = 5, bits: str = "1011000001", protocol: str = "demo", fp: str = DEMO_FP) -> Report:
    return Report(protocol, fp, {"cohort": cohort, "bits": bits})


class TestRoundTrips:
    def test_json_round_trip(self):
        r = demo_report()
        line = r.to_json()
        assert line == '{"v":1,"protocol":"demo","params":"0123456789abcdef","payload":{"cohort":5,"bits":"1011000001"}}'
        back = parse_json(line)
        assert back == r
        assert back.payload["bits"].to01() == "1011000001"
        assert parse_json(line.encode()) == r
        g = Report("grr", FP, {"index": 3})
        assert parse_json(g.to_json()) == g

    def test_binary_round_trip(self):
        r = demo_report()
        assert r.to_bytes() == encode_frames([r])
        assert decode_binary(r.to_bytes()) == [r]

    def test_bytes_match_the_documented_examples(self):
        grr = [Report("grr", FP, {"index": i}) for i in (0, 2, 1)]
        want = bytes.fromhex(
            "4c 44 50 42 01 03 67 72 72 c9 6a 63 3c 99 28 1e 12 01 05 69 6e 64 65 78 01 01 00 00 00"
            " 03 00 00 00 00 02 01 22 5e 80 c4"
        )
        assert encode_frames(grr) == want
        assert build_frame([(b"index", 1, 1)], 3, b"\x00\x02\x01") == want
        demo = bytes.fromhex(
            "4c 44 50 42 01 04 64 65 6d 6f 01 23 45 67 89 ab cd ef 02 06 63 6f 68 6f 72 74 01 01 00 00"
            " 00 04 62 69 74 73 02 0a 00 00 00 01 00 00 00 05 0d 02 8c 9e d1 28"
        )
        assert demo_report().to_bytes() == demo
        assert decode_binary(demo) == [demo_report()]

    def test_many_mixed_reports_keep_order_and_equality(self):
        rng = random.Random(12345)
        grr_big = GRRParams(2.0, 300)
        lengths = [1, 7, 8, 9, 100]
        makers = [
            lambda: Report("rr", RR.fingerprint, {"bit": rng.randrange(2)}),
            lambda: Report("grr", FP, {"index": rng.randrange(4)}),
            lambda: Report("grr", grr_big.fingerprint, {"index": rng.randrange(300)}),
        ] + [
            (lambda n=n: demo_report(rng.randrange(2**40), "".join(rng.choice("01") for _ in range(n))))
            for n in lengths
        ] + [
            lambda: demo_report(1, "1", fp="fedcba9876543210"),
        ]
        reports = []
        while len(reports) < 400:
            make = rng.choice(makers)
            reports.extend(make() for _ in range(rng.randint(1, 6)))
        data = encode_frames(reports)
        back = decode_binary(data)
        assert back == reports
        assert [r.to_json() for r in back] == [r.to_json() for r in reports]

        def key(r):
            return (r.protocol, r.fingerprint, tuple((k, "uint" if isinstance(v, int) else len(v)) for k, v in r.payload.items()))

        runs = 1 + sum(key(a) != key(b) for a, b in itertools.pairwise(reports))
        frames = list(iter_frames(data))
        assert len(frames) == runs
        assert sum(f.count for f in frames) == len(reports)
        for r in reports[:50]:
            assert parse_json(r.to_json()) == r
            assert decode_binary(r.to_bytes()) == [r]

    @pytest.mark.parametrize(
        "value, width",
        [(0, 1), (255, 1), (256, 2), (65535, 2), (65536, 4), (2**32 - 1, 4), (2**32, 8), (2**64 - 1, 8)],
    )
    def test_uint_width_chosen_by_value(self, value, width):
        reports = [Report("demo", DEMO_FP, {"x": 0}), Report("demo", DEMO_FP, {"x": value})]
        data = encode_frames(reports)
        (frame,) = iter_frames(data)
        assert frame.layout == (("x", "uint", width),)
        assert frame.columns["x"] == (0).to_bytes(width, "little") + value.to_bytes(width, "little")
        assert decode_binary(data) == reports

    @pytest.mark.parametrize("d, width", [(2, 1), (256, 1), (257, 2), (65536, 2), (65537, 4)])
    def test_report_batch_uint_width_from_schema(self, d, width):
        params = GRRParams(1.0, d)
        values = np.array([0, d - 1, d // 2], dtype=np.int64)
        batch = ReportBatch("grr", params.fingerprint, params.schema, {"index": values})
        (frame,) = iter_frames(batch.to_bytes())
        assert frame.layout == (("index", "uint", width),)
        assert list(frame.reports()) == [Report("grr", params.fingerprint, {"index": int(v)}) for v in values]

    def test_report_batch_to_bytes_frames_equal_its_reports(self):
        rng = np.random.default_rng(7)
        n = 500
        cohort = rng.integers(0, 70000, size=n)
        bits = rng.integers(0, 2, size=(n, 10)).astype(np.uint8)
        packed = np.packbits(bits, axis=1, bitorder="little")
        schema = (Field("cohort", "uint", 70000), Field("bits", "bits", 10))
        batch = ReportBatch("demo", DEMO_FP, schema, {"cohort": cohort, "bits": packed})
        assert len(batch) == n
        expected = [
            Report("demo", DEMO_FP, {"cohort": int(c), "bits": "".join(map(str, b))}) for c, b in zip(cohort, bits, strict=True)
        ]
        frames = list(iter_frames(batch.to_bytes()))
        assert len(frames) == 1
        assert frames[0].layout == (("cohort", "uint", 4), ("bits", "bits", 10))
        assert [r for f in frames for r in f.reports()] == expected
        assert list(batch.reports()) == expected

    def test_encoder_batch_round_trip(self):
        params = GRRParams(0.5, 300)
        batch = GRREncoder(params, rng=3, simulation=True).encode_batch(np.arange(300) % 300, rng=4)
        reports = [r for f in iter_frames(batch.to_bytes()) for r in f.reports()]
        assert [r.payload["index"] for r in reports] == [int(v) for v in batch.columns["index"]]
        assert all(r.protocol == "grr" and r.fingerprint == params.fingerprint for r in reports)

    def test_empty_input(self):
        assert decode_binary(b"") == []
        assert encode_frames([]) == b""
        assert list(iter_frames(b"")) == []


def test_report_batch_to_bytes_does_not_wrap_out_of_range_values():
    params = GRRParams(1.0, 300)
    batch = ReportBatch("grr", params.fingerprint, params.schema, {"index": np.array([3, 65539], dtype=np.int64)})
    try:
        data = batch.to_bytes()
    except (ReportError, ValueError, OverflowError):
        return  # refusing is fine
    assert [r.payload["index"] for r in decode_binary(data)] == [3, 65539]


# --------------------------------------------------------------------------------------------
# Fingerprint
# --------------------------------------------------------------------------------------------


def independent_fingerprint(protocol: str, params: dict) -> str:
    text = json.dumps({"protocol": protocol, "params": params}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


class TestFingerprint:
    def test_documented_values(self):
        assert GRR4.fingerprint == "c96a633c99281e12"
        assert RR.fingerprint == "df22d266d29ab978"
        assert canonical_json({"protocol": "grr", "params": GRR4.to_dict()}) == (
            '{"params":{"domain_size":4,"epsilon":1.0,"labels":null},"protocol":"grr"}'
        )

    @pytest.mark.parametrize(
        "protocol, params",
        [
            ("grr", {"epsilon": 1.0, "domain_size": 4, "labels": None}),
            ("grr", {"epsilon": 1.5, "domain_size": 4, "labels": ["a", "b", "é", "日本"]}),
            ("rr", {"p": 0.25, "q": 0.75}),
            ("x", {"nested": {"b": [1, 2.5, None, True], "a": "z"}, "e": 1e-05, "big": 1e16}),
            ("x", {}),
        ],
    )
    def test_equals_independent_sha256_of_canonical_json(self, protocol, params):
        fp = fingerprint(protocol, params)
        assert fp == independent_fingerprint(protocol, params)
        assert len(fp) == 16 and all(c in "0123456789abcdef" for c in fp)
        assert fingerprint(protocol, dict(reversed(list(params.items())))) == fp  # key order irrelevant
        assert fingerprint(protocol, params) == fp  # deterministic

    def test_changes_when_any_parameter_changes(self):
        base = {"epsilon": 1.0, "domain_size": 4, "labels": None}
        variants = [
            ("grr", base),
            ("rr", base),
            ("grr", {**base, "epsilon": 1.0000001}),
            ("grr", {**base, "domain_size": 5}),
            ("grr", {**base, "labels": ["a", "b", "c", "d"]}),
            ("grr", {**base, "labels": ["a", "b", "c", "e"]}),
            ("grr", {**base, "extra": 0}),
            ("grr", {k: v for k, v in base.items() if k != "labels"}),
        ]
        fps = [fingerprint(p, d) for p, d in variants]
        assert len(set(fps)) == len(variants)
        assert fps == [independent_fingerprint(p, d) for p, d in variants]
        params_objs = [GRRParams(1.0, 4), GRRParams(2.0, 4), GRRParams(1.0, 5), GRRParams.from_labels(1.0, "abcd")]
        assert len({p.fingerprint for p in params_objs}) == 4
        assert GRRParams(1, 4).fingerprint == GRRParams(1.0, 4).fingerprint

    def test_nan_is_refused(self):
        with pytest.raises(ValueError):
            fingerprint("x", {"e": float("nan")})


# --------------------------------------------------------------------------------------------
# Every rejection reason
# --------------------------------------------------------------------------------------------

_UINT5 = (Field("index", "uint", 5),)
_BITS8 = (Field("index", "uint", 5), Field("mask", "bits", 8))
_GOOD = Report("grr", FP, {"index": 1}).to_bytes()


def _flip(data: bytes, pos: int, mask: int = 0x01) -> bytes:
    b = bytearray(data)
    b[pos] ^= mask
    return bytes(b)


REJECTIONS: list[tuple[str, str, Callable[[], object]]] = [
    # --- JSON lines ---
    ("not_json", "unterminated", lambda: parse_json('{"v":1,')),
    ("not_json", "empty", lambda: parse_json("")),
    ("not_json", "invalid utf-8", lambda: parse_json(b'{"v":1,"protocol":"\xff"}')),
    ("not_json", "too deep", lambda: parse_json("[" * 200_000)),
    ("not_json", "two objects", lambda: parse_json(line_of() + line_of())),
    ("not_object", "array", lambda: parse_json("[1, 2]")),
    ("not_object", "number", lambda: parse_json("1")),
    ("not_object", "string", lambda: parse_json('"report"')),
    ("not_object", "null", lambda: parse_json("null")),
    ("duplicate_key", "top level", lambda: parse_json(f'{{"v":1,"v":1,"protocol":"grr","params":"{FP}","payload":{{"index":1}}}}')),
    ("duplicate_key", "in payload", lambda: parse_json(f'{{"v":1,"protocol":"grr","params":"{FP}","payload":{{"index":1,"index":2}}}}')),
    ("duplicate_key", "nested", lambda: parse_json(f'{{"v":1,"protocol":"grr","params":"{FP}","payload":{{"index":{{"a":1,"a":1}}}}}}')),
    ("missing_key", "no v", lambda: parse_json(line_of(v=_DROP))),
    ("missing_key", "no protocol", lambda: parse_json(line_of(protocol=_DROP))),
    ("missing_key", "no params", lambda: parse_json(line_of(params=_DROP))),
    ("missing_key", "no payload", lambda: parse_json(line_of(payload=_DROP))),
    ("missing_key", "empty object", lambda: parse_json("{}")),
    ("unknown_key", "user_id", lambda: parse_json(line_of(user_id="42"))),
    ("unknown_key", "timestamp", lambda: parse_json(line_of(ts=1700000000))),
    ("unknown_key", "null extra", lambda: parse_json(line_of(device=None))),
    ("bad_version", "2", lambda: parse_json(line_of(v=2))),
    ("bad_version", "0", lambda: parse_json(line_of(v=0))),
    ("bad_version", "true", lambda: parse_json(line_of(v=True))),
    ("bad_version", "string", lambda: parse_json(line_of(v="1"))),
    ("bad_version", "null", lambda: parse_json(line_of(v=None))),
    ("bad_version", "integral float", lambda: parse_json(line_of(v=1.0))),
    ("bad_version", "float in constructor", lambda: Report("grr", FP, {"index": 1}, 1.0)),
    ("bad_protocol", "upper case", lambda: parse_json(line_of(protocol="GRR"))),
    ("bad_protocol", "empty", lambda: parse_json(line_of(protocol=""))),
    ("bad_protocol", "digit first", lambda: parse_json(line_of(protocol="1grr"))),
    ("bad_protocol", "33 chars", lambda: parse_json(line_of(protocol="g" * 33))),
    ("bad_protocol", "trailing newline", lambda: parse_json(line_of(protocol="grr\n"))),
    ("bad_protocol", "number", lambda: parse_json(line_of(protocol=5))),
    ("bad_fingerprint", "upper case", lambda: parse_json(line_of(params=FP.upper()))),
    ("bad_fingerprint", "15 hex", lambda: parse_json(line_of(params=FP[:15]))),
    ("bad_fingerprint", "17 hex", lambda: parse_json(line_of(params=FP + "0"))),
    ("bad_fingerprint", "not hex", lambda: parse_json(line_of(params="g" * 16))),
    ("bad_fingerprint", "trailing newline", lambda: parse_json(line_of(params=FP + "\n"))),
    ("bad_fingerprint", "object", lambda: parse_json(line_of(params={"epsilon": 1.0}))),
    ("bad_payload", "array", lambda: parse_json(line_of(payload=[1]))),
    ("bad_payload", "string", lambda: parse_json(line_of(payload="1"))),
    ("bad_payload", "empty", lambda: parse_json(line_of(payload={}))),
    ("bad_payload", "17 fields", lambda: parse_json(line_of(payload={f"f{i}": 0 for i in range(17)}))),
    ("bad_field", "upper case", lambda: parse_json(line_of(payload={"Index": 1}))),
    ("bad_field", "digit first", lambda: parse_json(line_of(payload={"1a": 1}))),
    ("bad_field", "hyphen", lambda: parse_json(line_of(payload={"a-b": 1}))),
    ("bad_field", "empty", lambda: parse_json(line_of(payload={"": 1}))),
    ("bad_field", "33 chars", lambda: parse_json(line_of(payload={"a" * 33: 1}))),
    ("bad_value", "true", lambda: parse_json(line_of(payload={"index": True}))),
    ("bad_value", "false", lambda: parse_json(line_of(payload={"index": False}))),
    ("bad_value", "float", lambda: parse_json(line_of(payload={"index": 1.5}))),
    ("bad_value", "integral float", lambda: parse_json(line_of(payload={"index": 1.0}))),
    ("bad_value", "exponent", lambda: parse_json(f'{{"v":1,"protocol":"grr","params":"{FP}","payload":{{"index":1e3}}}}')),
    ("bad_value", "negative", lambda: parse_json(line_of(payload={"index": -1}))),
    ("bad_value", "2**64", lambda: parse_json(line_of(payload={"index": 2**64}))),
    ("bad_value", "bit string with 2", lambda: parse_json(line_of(payload={"mask": "0120"}))),
    ("bad_value", "empty bit string", lambda: parse_json(line_of(payload={"mask": ""}))),
    ("bad_value", "null", lambda: parse_json(line_of(payload={"index": None}))),
    ("bad_value", "list", lambda: parse_json(line_of(payload={"index": [1]}))),
    ("bad_value", "bits too long", lambda: Report("demo", DEMO_FP, {"mask": "1" * (MAX_BITS + 1)})),
    ("too_large", "str", lambda: parse_json(" " * (MAX_LINE - 10) + line_of())),
    ("too_large", "bytes", lambda: parse_json(b"x" * (MAX_LINE + 1))),
    # --- binary frames ---
    ("bad_magic", "magic", lambda: decode_binary(b"LDPX" + _GOOD[4:])),
    ("bad_magic", "junk after frame", lambda: decode_binary(_GOOD + b"junk")),
    ("truncated", "one byte short", lambda: decode_binary(_GOOD[:-1])),
    ("truncated", "partial magic after frame", lambda: decode_binary(_GOOD + b"LD")),
    ("bad_checksum", "column byte flipped", lambda: decode_binary(_flip(_GOOD, len(_GOOD) - 5))),
    ("bad_checksum", "crc byte flipped", lambda: decode_binary(_flip(_GOOD, len(_GOOD) - 1, 0x80))),
    ("bad_version", "frame version 2", lambda: decode_binary(build_frame([(b"index", 1, 1)], 1, b"\x01", version=2))),
    ("bad_protocol", "frame protocol", lambda: decode_binary(build_frame([(b"index", 1, 1)], 1, b"\x01", protocol=b"GRR"))),
    ("bad_protocol", "frame empty protocol", lambda: decode_binary(build_frame([(b"index", 1, 1)], 1, b"\x01", protocol=b""))),
    ("bad_protocol", "frame non-ascii protocol", lambda: decode_binary(build_frame([(b"index", 1, 1)], 1, b"\x01", protocol=b"gr\xe9"))),
    ("bad_payload", "frame 0 fields", lambda: decode_binary(build_frame([], 1, b""))),
    ("bad_payload", "frame 17 fields", lambda: decode_binary(build_frame([(b"a", 1, 1)], 1, b"\x01", nfields=17))),
    ("bad_payload", "frame 0 records", lambda: decode_binary(build_frame([(b"index", 1, 1)], 0, b""))),
    ("bad_field", "frame field name", lambda: decode_binary(build_frame([(b"Index", 1, 1)], 1, b"\x01"))),
    ("bad_field", "frame kind 3", lambda: decode_binary(build_frame([(b"index", 3, 1)], 1, b"\x01"))),
    ("bad_field", "frame uint width 3", lambda: decode_binary(build_frame([(b"index", 1, 3)], 1, b"\x01\x00\x00"))),
    ("bad_field", "frame uint width 0", lambda: decode_binary(build_frame([(b"index", 1, 0)], 1, b""))),
    ("bad_field", "frame bits width 0", lambda: decode_binary(build_frame([(b"mask", 2, 0)], 1, b""))),
    ("bad_field", "frame bits too long", lambda: decode_binary(build_frame([(b"mask", 2, MAX_BITS + 1)], 1, b""))),
    ("duplicate_key", "frame field twice", lambda: decode_binary(build_frame([(b"a", 1, 1), (b"a", 1, 1)], 1, b"\x01\x02"))),
    ("bad_value", "frame padding bits", lambda: decode_binary(build_frame([(b"mask", 2, 3)], 1, b"\x0f"))),
    # --- validation against a protocol ---
    ("wrong_protocol", "rr for grr", lambda: validate_report(Report("rr", FP, {"index": 1}), "grr", FP, _UINT5)),
    ("wrong_fingerprint", "other params", lambda: validate_report(Report("grr", RR.fingerprint, {"index": 1}), "grr", FP, _UINT5)),
    ("payload_mismatch", "extra field", lambda: validate_report(Report("grr", FP, {"index": 1, "x": 0}), "grr", FP, _UINT5)),
    ("payload_mismatch", "renamed field", lambda: validate_report(Report("grr", FP, {"bit": 1}), "grr", FP, _UINT5)),
    ("payload_mismatch", "bits for uint", lambda: validate_report(Report("grr", FP, {"index": "1"}), "grr", FP, _UINT5)),
    ("payload_mismatch", "uint for bits", lambda: validate_report(Report("grr", FP, {"index": 1, "mask": 3}), "grr", FP, _BITS8)),
    ("out_of_range", "index == d", lambda: validate_report(Report("grr", FP, {"index": 5}), "grr", FP, _UINT5)),
    ("out_of_range", "index 2**64-1", lambda: validate_report(Report("grr", FP, {"index": 2**64 - 1}), "grr", FP, _UINT5)),
    ("bad_length", "7 bits for 8", lambda: validate_report(Report("grr", FP, {"index": 1, "mask": "1" * 7}), "grr", FP, _BITS8)),
    ("bad_length", "9 bits for 8", lambda: validate_report(Report("grr", FP, {"index": 1, "mask": "1" * 9}), "grr", FP, _BITS8)),
]


@pytest.mark.parametrize("reason, case, fn", REJECTIONS, ids=[f"{r}-{c}" for r, c, _ in REJECTIONS])
def test_rejection_reason(reason, case, fn):
    assert reason_of(fn) == reason


def test_every_reason_is_reachable():
    covered = {reason for reason, _, _ in REJECTIONS}
    assert covered == REASONS


def test_junk_after_the_last_frame():
    assert reason_of(lambda: decode_binary(_GOOD + b"\x00")) == "truncated"
    assert reason_of(lambda: decode_binary(_GOOD + b"\x00" * 4)) == "bad_magic"
    assert reason_of(lambda: decode_binary(_GOOD + _GOOD[:10])) == "truncated"


def test_boundary_values_are_accepted():
    assert parse_json(line_of(payload={"index": 2**64 - 1})).payload["index"] == 2**64 - 1
    assert parse_json(line_of(payload={"index": 0})).payload["index"] == 0
    assert parse_json(line_of(protocol="a" + "-_9" * 10 + "z")).protocol == "a" + "-_9" * 10 + "z"
    assert len(parse_json(line_of(payload={f"f{i}": 0 for i in range(16)})).payload) == 16
    assert parse_json(line_of(payload={"a" * 32: 1})).payload["a" * 32] == 1
    exact = line_of()
    padded = exact + " " * (MAX_LINE - len(exact))
    assert len(padded) == MAX_LINE
    assert parse_json(padded) == parse_json(exact)
    validate_report(Report("grr", FP, {"index": 4}), "grr", FP, _UINT5)
    validate_report(Report("grr", FP, {"index": 4, "mask": "1" * 8}), "grr", FP, _BITS8)
    assert decode_binary(build_frame([(b"mask", 2, 3)], 1, b"\x07"))[0].payload["mask"].to01() == "111"


def test_every_truncation_of_a_frame_is_reported_as_truncated():
    data = demo_report().to_bytes()
    for i in range(1, len(data)):
        assert reason_of(lambda i=i: decode_binary(data[:i])) == "truncated", i


def test_every_single_byte_change_in_the_columns_or_crc_is_a_checksum_error():
    data = demo_report().to_bytes()
    body_start = len(data) - 4 - 3  # the 1-byte cohort column and the 2-byte bits column, then the CRC
    for pos in range(body_start, len(data)):
        for mask in (0x01, 0x80, 0xFF):
            assert reason_of(lambda pos=pos, mask=mask: decode_binary(_flip(data, pos, mask))) == "bad_checksum"


# --------------------------------------------------------------------------------------------
# No identifier
# --------------------------------------------------------------------------------------------


def test_report_has_no_slot_for_an_identifier():
    assert [f.name for f in dataclasses.fields(Report)] == ["protocol", "fingerprint", "payload", "version"]
    assert set(Report("grr", FP, {"index": 1}).to_dict()) == {"v", "protocol", "params", "payload"}


@pytest.mark.parametrize("key", ["user_id", "uid", "id", "device", "ts", "time", "ip", "session", "V", "Payload", ""])
def test_any_extra_top_level_key_is_rejected(key):
    assert reason_of(lambda: parse_json(line_of(**{key: "x"}))) == "unknown_key"


@settings(max_examples=300, deadline=None)
@given(extra=st.dictionaries(st.text(max_size=10).filter(lambda k: k not in {"v", "protocol", "params", "payload"}),
                             st.none() | st.integers() | st.text(max_size=5), min_size=1, max_size=3))
def test_extra_keys_property(extra):
    obj = {"v": 1, "protocol": "grr", "params": FP, "payload": {"index": 1}, **extra}
    assert reason_of(lambda: parse_json(json.dumps(obj))) == "unknown_key"


# --------------------------------------------------------------------------------------------
# Hypothesis: parsers only ever return reports or raise ReportError
# --------------------------------------------------------------------------------------------

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_or_reason(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except ReportError as err:
        assert err.reason in REASONS
        return err


@FUZZ
@given(st.binary(max_size=400))
def test_parse_json_arbitrary_bytes(data):
    out = _parse_or_reason(lambda: parse_json(data))
    assert isinstance(out, (Report, ReportError))


@FUZZ
@given(st.text(max_size=400))
def test_parse_json_arbitrary_text(text):
    out = _parse_or_reason(lambda: parse_json(text))
    assert isinstance(out, (Report, ReportError))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)

# the languages [a-z][a-z0-9_-]{0,31}, [0-9a-f]{16} and [a-z][a-z0-9_]{0,31}, each string drawn as one choice
# (st.from_regex draws them a character at a time: most of these tests' time went there)
_LOWER = "abcdefghijklmnopqrstuvwxyz"
protocols = st.builds(str.__add__, st.sampled_from(_LOWER), st.text(alphabet=_LOWER + "0123456789_-", max_size=31))
fingerprints = st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)
field_names = st.builds(str.__add__, st.sampled_from(_LOWER), st.text(alphabet=_LOWER + "0123456789_", max_size=31))
uints = st.one_of(st.integers(0, 255), st.integers(0, 2**64 - 1))
bit_strings = st.text(alphabet="01", min_size=1, max_size=130)
payloads = st.dictionaries(field_names, uints | bit_strings, min_size=1, max_size=16)
reports = st.builds(Report, protocols, fingerprints, payloads)

report_like = st.fixed_dictionaries(
    {
        "v": st.just(1) | json_values,
        "protocol": protocols | json_values,
        "params": fingerprints | json_values,
        "payload": st.dictionaries(field_names | st.text(max_size=6), uints | bit_strings | json_values, max_size=17)
        | json_values,
    },
    optional={"user_id": json_values},
)


def _check_parsed(text: str) -> None:
    out = _parse_or_reason(lambda: parse_json(text))
    assert isinstance(out, (Report, ReportError))
    if isinstance(out, Report):  # anything accepted must be a well-formed report that round-trips
        assert parse_json(out.to_json()) == out
        assert decode_binary(out.to_bytes()) == [out]


# fuzzing: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@FUZZ
@given(json_values)
def test_parse_json_recursive_json_values(obj):
    _check_parsed(json.dumps(obj))


# fuzzing: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@FUZZ
@given(report_like)
def test_parse_json_report_shaped_objects(obj):
    _check_parsed(json.dumps(obj))


binary_inputs = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=300).map(lambda b: b"LDPB" + b),
    st.binary(max_size=300).map(lambda b: b"LDPB\x01" + b),
    st.binary(max_size=300).map(lambda b: _GOOD + b),
)


@FUZZ
@given(binary_inputs)
def test_decode_binary_arbitrary_bytes(data):
    out = _parse_or_reason(lambda: decode_binary(data))
    assert isinstance(out, (list, ReportError))
    if isinstance(out, list):
        assert all(isinstance(r, Report) for r in out)


mutations = st.lists(
    st.tuples(st.sampled_from(["xor", "set", "delete", "insert", "truncate"]), st.integers(0, 10**6), st.integers(0, 255)),
    min_size=1,
    max_size=4,
)


def _mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for op, pos, byte in ops:
        if not b:
            b.append(byte)
            continue
        i = pos % len(b)
        if op == "xor":
            b[i] ^= byte or 1
        elif op == "set":
            b[i] = byte
        elif op == "delete":
            del b[i]
        elif op == "insert":
            b.insert(i, byte)
        else:
            del b[i:]
    return bytes(b)


# fuzzing: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@FUZZ
@given(st.lists(reports, min_size=1, max_size=3), mutations)
def test_decode_binary_mutated_frames(rs, ops):
    data = encode_frames(rs)
    assert decode_binary(data) == rs
    mutated = _mutate(data, ops)
    out = _parse_or_reason(lambda: decode_binary(mutated))
    assert isinstance(out, (list, ReportError))
    items = list(scan_frames(mutated))  # never raises: frames and errors only
    assert all(isinstance(i, Frame) or (isinstance(i, ReportError) and i.reason in REASONS) for i in items)
    # An aggregate swallows anything: every intact report is counted once, accepted or rejected.
    agg = GRRAggregate(GRR5)
    agg.add_bytes(data)
    assert agg.n + sum(agg.rejected.values()) == len(rs)
    agg.add_bytes(mutated)
    assert set(agg.rejected) <= REASONS


# hypothesis examples: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@settings(max_examples=300, deadline=None)
@given(st.lists(reports, min_size=1, max_size=4))
def test_valid_reports_round_trip_both_encodings(rs):
    for r in rs:
        assert parse_json(r.to_json()) == r
        assert parse_json(r.to_json().encode()) == r
        assert decode_binary(r.to_bytes()) == [r]
        assert parse_json(r.to_json()).to_json() == r.to_json()
    assert decode_binary(encode_frames(rs)) == rs


# --------------------------------------------------------------------------------------------
# Aggregate ingestion
# --------------------------------------------------------------------------------------------

def grr5_line(index) -> str:
    return json.dumps({"v": 1, "protocol": "grr", "params": FP5, "payload": {"index": index}})


class Rejects:
    def __init__(self) -> None:
        self.calls: list[tuple[object, str]] = []

    def __call__(self, item, err: ReportError) -> None:
        assert isinstance(err, ReportError)
        self.calls.append((item, err.reason))


def test_add_json_lines_counts_valid_and_rejected():
    valid = [grr5_line(i) for i in (0, 1, 1, 4, 2, 4, 4)] + [grr5_line(3).encode()]
    parse_bad = [
        ("{", "not_json"),
        (b"\xff\xfe", "not_json"),
        ("[1]", "not_object"),
        (f'{{"v":1,"v":1,"protocol":"grr","params":"{FP5}","payload":{{"index":1}}}}', "duplicate_key"),
        ('{"v":1,"protocol":"grr","payload":{"index":1}}', "missing_key"),
        (json.dumps({"v": 1, "protocol": "grr", "params": FP5, "payload": {"index": 1}, "user_id": "u-1"}), "unknown_key"),
        (json.dumps({"v": 2, "protocol": "grr", "params": FP5, "payload": {"index": 1}}), "bad_version"),
        (json.dumps({"v": 1, "protocol": "GRR", "params": FP5, "payload": {"index": 1}}), "bad_protocol"),
        (json.dumps({"v": 1, "protocol": "grr", "params": "xyz", "payload": {"index": 1}}), "bad_fingerprint"),
        (json.dumps({"v": 1, "protocol": "grr", "params": FP5, "payload": {}}), "bad_payload"),
        (json.dumps({"v": 1, "protocol": "grr", "params": FP5, "payload": {"Index": 1}}), "bad_field"),
        (grr5_line(True), "bad_value"),
        (grr5_line(1.5), "bad_value"),
        (grr5_line(-1), "bad_value"),
        (grr5_line(2**64), "bad_value"),
        (grr5_line("012"), "bad_value"),
        ("x" * (MAX_LINE + 1), "too_large"),
    ]
    validate_bad = [
        (json.dumps({"v": 1, "protocol": "rr", "params": FP5, "payload": {"index": 1}}), "wrong_protocol"),
        (json.dumps({"v": 1, "protocol": "grr", "params": FP, "payload": {"index": 1}}), "wrong_fingerprint"),
        (json.dumps({"v": 1, "protocol": "grr", "params": FP5, "payload": {"bit": 1}}), "payload_mismatch"),
        (json.dumps({"v": 1, "protocol": "grr", "params": FP5, "payload": {"index": "0101"}}), "payload_mismatch"),
        (json.dumps({"v": 1, "protocol": "grr", "params": FP5, "payload": {"index": 1, "x": 1}}), "payload_mismatch"),
        (grr5_line(5), "out_of_range"),
        (grr5_line(2**64 - 1), "out_of_range"),
    ]
    blanks = ["", "   ", b"\n", "\t"]
    lines = valid + [line for line, _ in parse_bad] + [line for line, _ in validate_bad] + blanks
    random.Random(5).shuffle(lines)
    agg = GRRAggregate(GRR5)
    rejects = Rejects()
    accepted = agg.add_json_lines(lines, on_reject=rejects)
    assert accepted == agg.n == len(valid)
    assert sum(agg.rejected.values()) == len(parse_bad) + len(validate_bad)
    assert agg.rejected == Counter(r for _, r in parse_bad + validate_bad)
    assert agg.counts.tolist() == [1, 2, 1, 1, 3]
    # Parse failures are reported with the raw line, validation failures with the parsed report,
    # each once and in input order.
    parse_reason, validate_reason = dict(parse_bad), dict(validate_bad)
    got_parse = [c for c in rejects.calls if not isinstance(c[0], Report)]
    assert got_parse == [(line, parse_reason[line]) for line in lines if line in parse_reason]
    got_validate = [c for c in rejects.calls if isinstance(c[0], Report)]
    assert got_validate == [(parse_json(line), validate_reason[line]) for line in lines if line in validate_reason]
    assert len(rejects.calls) == len(parse_bad) + len(validate_bad)


def test_add_rejects_non_reports():
    agg = GRRAggregate(GRR5)
    rejects = Rejects()
    good = parse_json(grr5_line(2))
    assert agg.add([good, "not a report", None, good], on_reject=rejects) == 2
    assert agg.rejected == Counter({"not_object": 2})
    assert rejects.calls == [("not a report", "not_object"), (None, "not_object")]
    assert agg.add(good) == 1
    assert agg.counts.tolist() == [0, 0, 3, 0, 0]


def _grr5_frame(indices) -> bytes:
    return encode_frames([Report("grr", FP5, {"index": i}) for i in indices])


def test_add_bytes_all_good():
    agg = GRRAggregate(GRR5)
    assert agg.add_bytes(_grr5_frame([0, 1, 2]) + _grr5_frame([4, 4]) + _grr5_frame([3])) == 6
    assert (agg.n, agg.counts.tolist(), dict(agg.rejected)) == (6, [1, 1, 1, 1, 2], {})


def test_add_bytes_with_a_corrupt_frame():
    first, bad, last = _grr5_frame([0, 1, 1]), _grr5_frame([2, 3]), _grr5_frame([4, 4, 4, 4])
    bad = _flip(bad, len(bad) - 5)  # a column byte: the CRC no longer matches
    data = first + bad + last
    agg = GRRAggregate(GRR5)
    rejects = Rejects()
    accepted = agg.add_bytes(data, on_reject=rejects)
    # The damaged frame is rejected whole (both of its reports) and reading resumes after it.
    assert accepted == agg.n == 7
    assert agg.counts.tolist() == [1, 2, 0, 0, 4]
    assert agg.rejected == Counter({"bad_checksum": 2})
    assert len(rejects.calls) == 1
    item, reason = rejects.calls[0]
    assert reason == "bad_checksum"
    assert isinstance(item, ReportError) and item.records == 2


@pytest.mark.parametrize(
    "junk, reason",
    [(b"garbage!", "bad_magic"), (b"L", "bad_magic"), (b"LDPB\x07", "bad_version"), (b"LDPB\x01\x03GRR", "bad_protocol")],
)
def test_add_bytes_resynchronizes_after_junk(junk, reason):
    data = _grr5_frame([0, 1]) + junk + _grr5_frame([2, 3, 4])
    agg = GRRAggregate(GRR5)
    rejects = Rejects()
    assert agg.add_bytes(data, on_reject=rejects) == 5
    assert agg.counts.tolist() == [1, 1, 1, 1, 1]
    assert agg.rejected == Counter({reason: 1})
    assert [r for _, r in rejects.calls] == [reason]


def test_add_bytes_with_damaged_header_and_truncated_tail():
    middle = bytearray(_grr5_frame([3, 3, 3]))
    middle[24] = 9  # the field kind byte: 9 is no kind, the header is unreadable
    data = _grr5_frame([0]) + bytes(middle) + _grr5_frame([1, 2]) + _grr5_frame([4, 4])[:-2]
    agg = GRRAggregate(GRR5)
    assert agg.add_bytes(data) == 3
    assert agg.counts.tolist() == [1, 1, 1, 0, 0]
    assert agg.rejected == Counter({"bad_field": 1, "truncated": 1})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=8),
    st.binary(min_size=1, max_size=40),
    st.lists(st.integers(0, 4), min_size=1, max_size=8),
)
def test_add_bytes_keeps_the_frame_after_junk(before, junk, after):
    a, b = _grr5_frame(before), _grr5_frame(after)
    # Junk that holds (or completes) a frame magic could legitimately be read as a frame start.
    assume(b"LDPB" not in a[-3:] + junk + b"LDP")
    agg = GRRAggregate(GRR5)
    assert agg.add_bytes(a + junk + b) == len(before) + len(after)
    assert agg.counts.tolist() == np.bincount(before + after, minlength=5).tolist()
    assert sum(agg.rejected.values()) == 1
    assert set(agg.rejected) <= {"bad_magic"}


@pytest.mark.parametrize("offset, value", [(29, 11), (25, 2)], ids=["count-3-to-11", "width-1-to-2"])
def test_add_bytes_does_not_lose_the_frame_after_a_damaged_count(offset, value):
    a, b, c = _grr5_frame([0, 0, 0]), _grr5_frame([1, 1, 1, 1]), _grr5_frame([2, 2])
    assert struct.unpack("<BI", a[24:29]) == (1, 1) and struct.unpack("<I", a[29:33]) == (3,)  # kind, width, count
    damaged = bytearray(a)
    damaged[offset] = value
    agg = GRRAggregate(GRR5)
    agg.add_bytes(bytes(damaged) + b + c)
    assert agg.counts.tolist() == [0, 4, 2, 0, 0]


def test_add_bytes_frame_with_out_of_range_rows():
    frame = build_frame([(b"index", 1, 1)], 6, bytes([0, 7, 4, 5, 255, 2]), fp=FP5)
    agg = GRRAggregate(GRR5)
    rejects = Rejects()
    assert agg.add_bytes(frame, on_reject=rejects) == 3
    assert agg.counts.tolist() == [1, 0, 1, 0, 1]
    assert agg.rejected == Counter({"out_of_range": 3})
    assert rejects.calls == [(1, "out_of_range"), (3, "out_of_range"), (4, "out_of_range")]


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.uint64])
def test_add_batch_with_out_of_range_rows(dtype):
    col = np.array([0, 1, 5, 2, 7, 4, 4, 200], dtype=dtype)
    batch = ReportBatch("grr", FP5, GRR5.schema, {"index": col})
    agg = GRRAggregate(GRR5)
    rejects = Rejects()
    assert agg.add(batch, on_reject=rejects) == 5
    assert agg.n == 5
    assert agg.counts.tolist() == [1, 1, 1, 0, 2]
    assert agg.rejected == Counter({"out_of_range": 3})
    assert rejects.calls == [(2, "out_of_range"), (4, "out_of_range"), (7, "out_of_range")]
    # Without a handler the counts are the same.
    agg2 = GRRAggregate(GRR5)
    assert agg2.add(batch) == 5
    assert (agg2.counts.tolist(), agg2.rejected) == (agg.counts.tolist(), agg.rejected)


def test_add_batch_negative_values_are_rejected():
    batch = ReportBatch("grr", FP5, GRR5.schema, {"index": np.array([1, -1, 2], dtype=np.int64)})
    agg = GRRAggregate(GRR5)
    assert agg.add(batch) == 2
    assert agg.rejected == Counter({"out_of_range": 1})
    assert agg.counts.tolist() == [0, 1, 1, 0, 0]


def test_add_batch_of_other_parameters_is_rejected_whole():
    agg = GRRAggregate(GRR5)
    rejects = Rejects()
    other = GRRParams(2.0, 5)
    batch = ReportBatch("grr", other.fingerprint, other.schema, {"index": np.array([0, 1, 2])})
    assert agg.add(batch, on_reject=rejects) == 0
    assert (agg.n, agg.rejected) == (0, Counter({"wrong_fingerprint": 3}))
    assert [(item is batch, reason) for item, reason in rejects.calls] == [(True, "wrong_fingerprint")]


def test_merge():
    a, b = GRRAggregate(GRR5), GRRAggregate(GRR5)
    a.add_json_lines([grr5_line(0), grr5_line(1), "junk"])
    b.add_json_lines([grr5_line(1), grr5_line(4), grr5_line(9), "[]"])
    assert a.merge(b) is a
    assert (a.n, a.counts.tolist()) == (4, [1, 2, 0, 0, 1])
    assert a.rejected == Counter({"not_json": 1, "out_of_range": 1, "not_object": 1})
    assert (b.n, b.counts.tolist()) == (2, [0, 1, 0, 0, 1])  # the other side is untouched


@pytest.mark.parametrize(
    "other",
    [
        lambda: GRRAggregate(GRRParams(2.0, 5)),
        lambda: GRRAggregate(GRRParams(1.0, 6)),
        lambda: GRRAggregate(GRRParams.from_labels(1.0, "abcde")),
        lambda: RRAggregate(BinaryRRParams.forced_response()),
    ],
)
def test_merge_with_other_parameters_is_a_value_error(other):
    a = GRRAggregate(GRR5)
    a.add_json_lines([grr5_line(1)])
    with pytest.raises(ValueError, match=r"parameters differ"):
        a.merge(other())
    assert (a.n, a.counts.tolist()) == (1, [0, 1, 0, 0, 0])


def _grr5_aggregate() -> GRRAggregate:
    agg = GRRAggregate(GRR5)
    agg.add_json_lines([grr5_line(i) for i in (0, 1, 1, 3, 4, 4, 4)] + ["junk", grr5_line(7)])
    agg.counts[2] = 2**40  # a large count must survive too
    return agg


def _same(a: Aggregate, b: Aggregate) -> None:
    assert type(a) is type(b)
    assert a.params == b.params
    assert a.n == b.n
    assert a.rejected == b.rejected
    for name, arr in a._state().items():
        other = b._state()[name]
        assert arr.dtype == other.dtype
        assert np.array_equal(arr, other)


def test_aggregate_bytes_round_trip():
    agg = _grr5_aggregate()
    back = Aggregate.from_bytes(agg.to_bytes())
    _same(agg, back)
    assert back.counts.tolist() == [1, 2, 2**40, 1, 3]
    assert (back.n, back.rejected) == (7, Counter({"not_json": 1, "out_of_range": 1}))
    back.counts[0] += 1  # the rebuilt aggregate owns writable state
    assert agg.counts[0] == 1
    rr = RRAggregate(BinaryRRParams.forced_response())
    rr.add([Report("rr", rr.params.fingerprint, {"bit": b}) for b in (0, 1, 1)])
    _same(rr, Aggregate.from_bytes(rr.to_bytes()))
    labelled = GRRAggregate(GRRParams.from_labels(0.5, ["x", "y", "ü"]))
    _same(labelled, Aggregate.from_bytes(labelled.to_bytes()))
    _same(agg, agg.copy())


def _split(data: bytes) -> tuple[dict, bytes]:
    """Header and array bytes of a serialized aggregate (its trailing CRC-32 removed)."""
    (hlen,) = struct.unpack("<I", data[5:9])
    return json.loads(data[9:9 + hlen]), data[9 + hlen:-4]


def _join(header: dict, body: bytes) -> bytes:
    """Re-serialize with a valid CRC-32, so that the parser itself must catch what is wrong."""
    head = json.dumps(header).encode()
    blob = b"LDPA\x01" + struct.pack("<I", len(head)) + head + body
    return blob + struct.pack("<I", zlib.crc32(blob))


def test_corrupted_aggregate_bytes_raise_value_error():
    data = _grr5_aggregate().to_bytes()
    header, body = _split(data)
    bad = {
        "magic": b"LDPX" + data[4:],
        "version": data[:4] + b"\x02" + data[5:],
        "empty": b"",
        "short": data[:8],
        "trailing byte": data + b"\x00",
        "missing byte": data[:-1],
        "header not json": data[:9] + b"{" * (len(data) - 9),
        "header length too long": data[:5] + struct.pack("<I", len(data)) + data[9:],
        "fingerprint mismatch": _join({**header, "fingerprint": "0" * 16}, body),
        "unknown protocol": _join({**header, "protocol": "nope"}, body),
        "unknown parameter": _join({**header, "params": {**header["params"], "x": 1}}, body),
        "invalid parameter": _join({**header, "params": {**header["params"], "domain_size": 1}}, body),
        "array name": _join({**header, "arrays": [["count", "<i8", [5]]]}, body),
        "extra array": _join({**header, "arrays": header["arrays"] + [["more", "<i8", [1]]]}, body + bytes(8)),
        "array too long": _join({**header, "arrays": [["counts", "<i8", [6]]]}, body),
    }
    for _what, blob in bad.items():
        with pytest.raises(ValueError):
            Aggregate.from_bytes(blob)
    for i in range(len(data)):  # every truncation
        with pytest.raises(ValueError):
            Aggregate.from_bytes(data[:i])


@pytest.mark.parametrize(
    "mutate",
    [
        lambda h: {k: v for k, v in h.items() if k != "arrays"},
        lambda h: {k: v for k, v in h.items() if k != "n"},
        lambda h: {k: v for k, v in h.items() if k != "fingerprint"},
        lambda h: {**h, "rejected": 5},
        lambda h: {**h, "arrays": [["counts", "zz", [5]]]},
    ],
    ids=["no-arrays", "no-n", "no-fingerprint", "rejected-int", "bad-dtype"],
)
def test_aggregate_header_corruption_raises_value_error(mutate):
    header, body = _split(_grr5_aggregate().to_bytes())
    with pytest.raises(ValueError):
        Aggregate.from_bytes(_join(mutate(header), body))


# (At commit f8e4c03 this was a bug: only the array names were checked, so a 1-element counts array was
# broadcast over all counts and a float64 array silently cast into the int64 counts.)
@pytest.mark.parametrize("arrays, size", [([["counts", "<i8", [1]]], 8), ([["counts", "<f8", [5]]], 40)],
                         ids=["shape", "dtype"])
def test_aggregate_arrays_must_match_the_protocol_state(arrays, size):
    header, body = _split(_grr5_aggregate().to_bytes())
    with pytest.raises(ValueError):
        Aggregate.from_bytes(_join({**header, "arrays": arrays}, body[:size]))
