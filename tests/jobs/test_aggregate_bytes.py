"""Aggregate bytes from outside (issue 15, item 6).

``Aggregate.from_bytes``, ``unpack_parts``, ``read_aggregate`` and through them ``ldp merge`` and
``ldp decode`` read bytes anyone can write. Whatever the bytes (a valid CRC proves nothing), they
raise :class:`AggregateFormatError` (a ``ValueError``) or return an aggregate that re-serializes
consistently, and they never allocate more than the payload provides.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import tracemalloc
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ldp.decoders.base import MAX_HEADER, Aggregate, AggregateFormatError
from ldp.decoders.randomized_response import GRRAggregate, RRAggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.sfp import SfpAggregate
from ldp.decoders.sketch import SketchAggregate
from ldp.encoders.cms import CmsParams
from ldp.encoders.hcms import HcmsParams
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.encoders.rappor import RapporParams
from ldp.encoders.sfp import SfpParams
from ldp.jobs.decode import decode_file
from ldp.jobs.store import merge_files, pack_parts, read_aggregate, unpack_parts
from ldp.protocols import get_protocol, protocols
from ldp.reports import fingerprint

MiB = 1 << 20
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- building blobs by hand ---------------------------------------------------------------------------------


def seal(head: bytes, body: bytes = b"", length: int | None = None) -> bytes:
    """Aggregate bytes with a valid CRC-32 around a (possibly hostile) header and payload."""
    blob = b"LDPA\x01" + struct.pack("<I", len(head) if length is None else length) + head + body
    return blob + struct.pack("<I", zlib.crc32(blob))


def split(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and payload of aggregate bytes (CRC removed)."""
    (hlen,) = struct.unpack("<I", blob[5:9])
    return json.loads(blob[9:9 + hlen]), blob[9 + hlen:-4]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def declared(protocol: str, params: dict[str, Any], arrays: list[list[Any]], n: int = 0) -> bytes:
    """A header declaring ``params`` (never constructed here) with the right fingerprint."""
    return dumps({"protocol": protocol, "params": params, "fingerprint": fingerprint(protocol, params), "n": n,
                  "rejected": {}, "arrays": arrays})


def small_aggregates() -> dict[str, Aggregate]:
    """One small aggregate with reports and rejections of every protocol (and labelled GRR)."""
    rng = np.random.default_rng(3)
    sfp = SfpParams(4.0, 4.0, length=4, word_num_hashes=2, word_width=8, fragment_num_hashes=2, fragment_width=8)
    out = {
        "rr": RRAggregate.simulate(BinaryRRParams(0.25, 0.75), [3, 5], rng),
        "grr": GRRAggregate.simulate(GRRParams(1.0, 4), [1, 2, 3, 4], rng),
        "grr-labels": GRRAggregate.simulate(GRRParams.from_labels(1.0, ["a", "b", "ü"]), [1, 0, 2], rng),
        "rappor": RapporAggregate.simulate(RapporParams(8, 2, 2, 0.5, 0.75, 0.5), {"a": 3, "b": 2}, rng),
        "cms": SketchAggregate.simulate(CmsParams(4.0, 2, 8), {"a": 3, "b": 1}, rng),
        "hcms": SketchAggregate.simulate(HcmsParams(4.0, 2, 8), {"a": 3, "b": 1}, rng),
        "sfp": SfpAggregate.simulate(sfp, {"ab": 3, "abcd": 1}, rng),
    }
    for agg in out.values():
        agg.rejected = Counter({"not_json": 2, "out_of_range": 1})
    return out


SMALL = small_aggregates()
BLOBS = {name: agg.to_bytes() for name, agg in SMALL.items()}


def same(a: Aggregate, b: Aggregate) -> None:
    assert type(a) is type(b) and a.params == b.params and (a.n, a.rejected) == (b.n, b.rejected)
    for name, arr in a._state().items():
        assert arr.dtype == b._state()[name].dtype and np.array_equal(arr, b._state()[name])


def traced_peak(call: Callable[[], Any]) -> tuple[Any, int]:
    """``(call's result or the exception it raised, bytes it allocated at its peak)``."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            result: Any = call()
        except Exception as exc:  # noqa: BLE001 - the caller checks what it is
            result = exc
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()


def assert_refused_cheaply(blob: bytes, read: Callable[[bytes], Any] = Aggregate.from_bytes,
                           limit: int = MiB) -> AggregateFormatError:
    protocols()  # the one-time import of every protocol's modules is not the refusal's cost
    result, peak = traced_peak(lambda: read(blob))
    assert isinstance(result, AggregateFormatError), repr(result)
    assert peak < limit + 2 * len(blob), f"allocated {peak} bytes to refuse {len(blob)}"
    return result


# -- (1) the reproductions of the issue ---------------------------------------------------------------------

HUGE = {  # protocol, params, arrays: each declares terabytes of state in a ~200-byte file
    "grr d=2^32": ("grr", {"epsilon": 1.0, "domain_size": 2**32, "labels": None}, [["counts", "<i8", [2**32]]]),
    "cms 65536x2^24": ("cms", {"epsilon": 1.0, "num_hashes": 65536, "width": 2**24, "hash_seed": 0},
                       [["row_n", "<i8", [65536]], ["sums", "<i8", [65536, 2**24]]]),
    "rappor k=10^9": ("rappor", {"num_bloombits": 10**9, "num_hashes": 2, "num_cohorts": 1024, "p": 0.5,
                                 "q": 0.75, "f": 0.5, "mode": "ldp"},
                      [["cohort_n", "<i8", [1024]], ["ones", "<i8", [1024, 10**9]]]),
}


@pytest.mark.parametrize("case", list(HUGE))
def test_declared_terabytes_are_refused_before_allocating(case):
    protocol, params, arrays = HUGE[case]
    blob = seal(declared(protocol, params, arrays))
    assert 180 <= len(blob) <= 270
    err = assert_refused_cheaply(blob)
    # the params may refuse the size themselves (their own limits), or this layer compares with the payload
    assert "bytes but the aggregate carries 0" in str(err) or "parameters" in str(err)


@pytest.mark.parametrize("params", [GRRParams(1.0, 1 << 20), RapporParams(4096, 2, 256, 0.5, 0.75, 0.5),
                                    CmsParams(1.0, 64, 1 << 14)], ids=["grr", "rappor", "cms"])
def test_params_that_construct_fine_never_get_more_than_the_payload_provides(params):
    """8 MiB of declared state, 8 bytes of payload: refused, and nothing near 8 MiB is allocated."""
    agg_type = {GRRParams: GRRAggregate, RapporParams: RapporAggregate, CmsParams: SketchAggregate}[type(params)]
    arrays = [[k, d.newbyteorder("<").str, list(s)] for k, (d, s) in agg_type.state_layout(params).items()]
    err = assert_refused_cheaply(seal(declared(params.protocol, params.to_dict(), arrays), bytes(8)))
    assert "bytes but the aggregate carries 8" in str(err)


def test_a_deeply_nested_header_is_refused():
    assert_refused_cheaply(seal(b"[" * 100_000))
    assert_refused_cheaply(seal(b'{"protocol":' + b"[" * 100_000))


@pytest.mark.parametrize("dtype", ["(2,i8", "<f8", ">i8", "i8", "|V8", "O", "<i8 ", "int64"])
def test_only_the_exact_dtype_of_the_state_is_accepted(dtype):
    header, body = split(BLOBS["grr"])
    header["arrays"][0][1] = dtype
    err = assert_refused_cheaply(seal(dumps(header), body))
    assert "do not match the protocol's state" in str(err)


@pytest.mark.parametrize("n", [-1, 2**63, 2**64, 1.0, True, None, "5"])
def test_report_counts_are_ints_below_2_63(n):
    header, body = split(BLOBS["rr"])
    for where in ("n", "rejected"):
        bad = {**header, where: n} if where == "n" else {**header, "rejected": {"not_json": n}}
        with pytest.raises(AggregateFormatError, match="count|rejected"):
            Aggregate.from_bytes(seal(dumps(bad), body))
    ok = {**header, "n": 2**63 - 1, "rejected": {"x": 2**63 - 1}}
    assert Aggregate.from_bytes(seal(dumps(ok), body)).n == 2**63 - 1


def test_a_merge_never_counts_past_what_a_file_can_hold():
    header, body = split(BLOBS["rr"])

    def with_counts(**counts: Any) -> Aggregate:
        return Aggregate.from_bytes(seal(dumps({**header, **counts}), body))

    full = with_counts(n=2**63 - 1)
    with pytest.raises(ValueError, match="merging would count more than"):
        full.merge(SMALL["rr"])
    assert full.n == 2**63 - 1
    with pytest.raises(ValueError, match="merging would count more than"):
        SMALL["rr"].copy().merge(with_counts(n=0, rejected={"not_json": 2**63 - 2}))


@pytest.mark.parametrize("mutate", [
    lambda h: {**h, "params": {**h["params"], "domain_size": "4"}},   # TypeError in the params
    lambda h: {**h, "params": {**h["params"], "labels": [[1]] * 4}},  # TypeError (labels must be strings)
    lambda h: {**h, "params": [h["params"]]},                         # not a dict
    lambda h: {**h, "params": {}},                                    # missing parameters (TypeError)
    lambda h: {**h, "protocol": 5},
    lambda h: {**h, "protocol": "x" * 5000},
    lambda h: {**h, "arrays": {"counts": 1}},
    lambda h: {**h, "arrays": [["counts", "<i8", [4.0]]]},              # 4.0 is not 4
    lambda h: {**h, "arrays": [["counts", "<i8", [4], 0]]},
    lambda h: {**h, "extra": 1},
    lambda h: [h],
], ids=["param-type", "labels-type", "params-list", "params-empty", "protocol-int", "protocol-long",
        "arrays-dict", "shape-float", "entry-long", "extra-key", "not-object"])
def test_malformed_headers_raise_aggregate_format_error(mutate):
    header, body = split(BLOBS["grr"])
    with pytest.raises(AggregateFormatError):
        Aggregate.from_bytes(seal(dumps(mutate(header)), body))


def test_header_limits_and_raw_header_damage():
    header, body = split(BLOBS["grr"])
    head = dumps(header)
    assert_refused_cheaply(seal(head, body, length=MAX_HEADER + 1))
    assert_refused_cheaply(seal(head, body, length=2**32 - 1))
    for raw in (head.replace(b'"n":', b'"n":NaN,"x":', 1), head.replace(b"{", b'{"n":1,', 1),  # NaN, duplicate key
                head.replace(b'"grr"', '"grü"'.encode(), 1), head[:-1],
                "{}".encode("utf-16"), b"\xff" + head):
        assert_refused_cheaply(seal(raw, body))
    labels = GRRAggregate(GRRParams.from_labels(1.0, [f"{i:07d}" for i in range(MAX_HEADER // 10)]))
    with pytest.raises(ValueError, match="limit"):  # never write a file that cannot be read back
        labels.to_bytes()


# -- (2) fuzzing every protocol's bytes ---------------------------------------------------------------------

HOSTILE = st.one_of(
    st.sampled_from([2**32, 2**63, 2**64, 10**9, 10**30, -1, 0, 1, 2, 65536, 2**24, 1e308, -0.0, 0.5, True, False,
                     None, "", "(2,i8", "<f8", "<i8", "|V8", "O", "grr", "sfp", "x" * 300, [], {}, [[[]]], [2**32],
                     ["counts", "<i8", [2**40]], {"domain_size": 2**32}]),
    st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    st.lists(st.integers(-2, 2**40), max_size=3),
)


def paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into a JSON value, the root included."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += paths(v, prefix + (i,))
    return out


def replaced(obj: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {**obj, head: replaced(obj[head], rest, value)}
    return [replaced(v, rest, value) if i == head else v for i, v in enumerate(obj)]


def consistent(header: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``header`` with parameter ``key`` set to ``value``, its fingerprint recomputed and, when
    the parameters construct, its arrays declared as their layout: only the payload can disagree."""
    params = {**header["params"], key: value}
    out = {**header, "params": params}
    try:
        out["fingerprint"] = fingerprint(str(header["protocol"]), params)
        proto = get_protocol(header["protocol"])
        layout = proto.aggregate_type.state_layout(proto.params_type.from_dict(params))
    except (TypeError, ValueError, KeyError):
        return out
    out["arrays"] = [[k, d.newbyteorder("<").str, list(s)] for k, (d, s) in layout.items()]
    return out


@st.composite
def hostile_blobs(draw: Any, blob: bytes) -> bytes:
    """``blob`` with its header JSON and/or payload mutated, re-sealed with a valid CRC-32."""
    header, body = split(blob)
    head, length = dumps(header), None
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "params", "params", "delete", "raw", "nest", "body", "length"]))
        if kind == "length":
            length = draw(st.integers(0, 2**32 - 1))
        if kind == "value":
            header = replaced(header, draw(st.sampled_from(paths(header)[1:] or [()])), draw(HOSTILE))
            head = dumps(header)
        elif kind == "params" and isinstance(header, dict) and isinstance(header.get("params"), dict):
            header = consistent(header, draw(st.sampled_from(sorted(header["params"]))), draw(HOSTILE))
            head = dumps(header)
        elif kind == "delete":
            key = draw(st.sampled_from(sorted(header))) if isinstance(header, dict) and header else None
            header = {k: v for k, v in header.items() if k != key} if key else header
            head = dumps(header)
        elif kind == "raw":
            i = draw(st.integers(0, len(head)))
            j = draw(st.integers(i, min(len(head), i + 8)))
            junk = draw(st.binary(max_size=8) | st.sampled_from([b"[", b"]", b"{", b"}", b",", b'"', b"\\", b"1e9"]))
            head = head[:i] + junk + head[j:]
        elif kind == "nest":
            i = draw(st.integers(0, len(head)))
            head = head[:i] + b"[" * draw(st.sampled_from([1, 10, 900, 3000, 100_000])) + head[i:]
        elif kind == "body":
            cut = draw(st.integers(0, len(body)))
            body = body[:cut] + draw(st.binary(max_size=24)) + body[cut + draw(st.integers(0, 16)):]
    return seal(head, body, length)


def check_read(blob: bytes, read: Callable[[bytes], Any]) -> Any:
    """``read(blob)`` raises AggregateFormatError or returns; either way within the memory bound."""
    result, peak = traced_peak(lambda: read(blob))
    assert peak < 64 * MiB + 2 * len(blob), f"allocated {peak} bytes reading {len(blob)}"
    if isinstance(result, Exception):
        assert isinstance(result, AggregateFormatError), f"{type(result).__name__}: {result}"
    return result


@pytest.mark.parametrize("name", list(BLOBS))
@FUZZ
@given(data=st.data())
def test_fuzzed_aggregate_bytes_are_read_consistently_or_refused(name, data):
    blob = data.draw(hostile_blobs(BLOBS[name]))
    agg = check_read(blob, Aggregate.from_bytes)
    if isinstance(agg, Aggregate):
        for arr, (dtype, shape) in zip(agg._state().values(), agg._full_layout().values(), strict=True):
            assert (arr.dtype, arr.shape, arr.flags.writeable) == (dtype, shape, True)
        again = agg.to_bytes()
        same(agg, Aggregate.from_bytes(again))
        assert again == Aggregate.from_bytes(again).to_bytes()


def test_every_protocol_round_trips():
    for name, blob in BLOBS.items():
        same(SMALL[name], Aggregate.from_bytes(blob))
        same(SMALL[name], Aggregate.from_bytes(memoryview(bytearray(blob))))


# -- (3) the parts container, aggregate files, ldp merge and ldp decode --------------------------------------

PARTS = pack_parts({(name.replace("-", "_"), agg.params.fingerprint, 7): agg for name, agg in SMALL.items()})
REPRO = [seal(declared(p, q, a)) for p, q, a in HUGE.values()] + [seal(b"[" * 100_000)]


def reseal_parts(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def test_parts_round_trip_and_hostile_lengths():
    parts = unpack_parts(PARTS)
    assert len(parts) == len(SMALL)
    for key, agg in parts.items():
        same(SMALL[key[0].replace("_", "-")], agg)
    body = PARTS[:-4]
    first_len = 9 + 2 + struct.unpack_from("<H", body, 9)[0]
    hostile = {
        "huge part length": body[:first_len] + struct.pack("<Q", 2**64 - 1) + body[first_len + 8:],
        "huge count": body[:5] + struct.pack("<I", 2**32 - 1) + body[9:],
        "fewer parts declared": body[:5] + struct.pack("<I", 1) + body[9:],
        "huge name length": body[:9] + struct.pack("<H", 65535) + body[11:],
        "name not ascii": body[:11] + b"\xff" + body[12:],
        "name not a key": body[:11] + b"." + body[12:],
        "duplicate part": body[:5] + struct.pack("<I", 2) + body[9:] + body[9:],
    }
    for _what, blob in hostile.items():
        with pytest.raises(AggregateFormatError, match="^src: "):
            unpack_parts(reseal_parts(blob), "src")
    for inner in REPRO:
        name = b"m." + SMALL["grr"].params.fingerprint.encode()
        blob = b"LDPS\x01" + struct.pack("<IH", 1, len(name)) + name + struct.pack("<Q", len(inner)) + inner
        assert_refused_cheaply(reseal_parts(blob), lambda b: unpack_parts(b, "src"))


@FUZZ
@given(data=st.data())
def test_fuzzed_parts_are_read_or_refused(data):
    body = bytearray(PARTS[:-4])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(body) - 1))
        body[at:at + data.draw(st.integers(0, 8))] = data.draw(st.binary(max_size=8))
    check_read(reseal_parts(bytes(body)), unpack_parts)


@pytest.mark.parametrize("blob", REPRO + [seal(b"{}"), b"junk"], ids=list(HUGE) + ["nested", "empty", "junk"])
def test_merge_and_decode_refuse_hostile_files(blob, tmp_path):
    path = tmp_path / f"m.{SMALL['grr'].params.fingerprint}.agg"
    path.write_bytes(blob)
    assert_refused_cheaply(blob, lambda _: merge_files([path], tmp_path / "out"))
    assert_refused_cheaply(blob, lambda _: decode_file(path, {}))
    err = assert_refused_cheaply(blob, lambda _: read_aggregate(path))
    assert str(err).startswith(os.fspath(path))
    assert not (tmp_path / "out").exists()


def test_reading_a_pipe_or_a_folder_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "p.agg"
    os.mkfifo(fifo)

    def hung(*_: Any) -> None:
        raise TimeoutError("read_aggregate blocked on a pipe")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        for path in (fifo, tmp_path):
            with pytest.raises(AggregateFormatError, match="not a regular file"):
                read_aggregate(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
