"""The compiled line matcher (``ldp/batch/_linekernel.c``) against the numpy one (``ldp.jobs.jsonl._match_one``):
the same lines accepted, for the same templates, with the same windows and payload columns, on canonical lines and
on lines mutated at random (hypothesis); the same line bounds; and its refusals of malformed arguments."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.jobs import jsonl
from ldp.jobs.jsonl import _KEY_AT, MAX_WINDOW, _template, line_bounds, match_lines
from ldp.jobs.junk import junk_lines
from ldp.reports import Field

pytestmark = pytest.mark.skipif(jsonl._linekernel is None, reason="ldp/batch/_linekernel.c not built")

SPEC_FP = "0123456789abcdef"


def template(metric: str, schema: tuple[Field, ...], protocol: str = "p") -> jsonl.Template:
    params = SimpleNamespace(protocol=protocol, fingerprint="fedcba9876543210", schema=schema)
    t = _template(SPEC_FP, metric, params)
    assert t is not None
    return t


def canonical(t: jsonl.Template, window: int, values: list[int]) -> bytes:
    out = [t.prefix, str(window).encode()]
    for piece, f, v in zip(t.pieces, (*t.fields, None), (*values, None), strict=True):
        out.append(piece)
        if f is not None and v is not None:
            out.append(str(v).encode() if f.kind == "uint" else format(v, f"0{f.size}b")[::-1].encode())
    return b"".join(out)


def run(kernel: str, chunk: bytes, templates: list[jsonl.Template]):
    before, jsonl.LINE_KERNEL = jsonl.LINE_KERNEL, kernel
    try:
        matched, starts, ends, accepted = match_lines(chunk, templates)
    finally:
        jsonl.LINE_KERNEL = before
    return {m.template.metric: m for m in matched}, starts, ends, accepted


def assert_same(chunk: bytes, templates: list[jsonl.Template]) -> np.ndarray:
    fast, s1, e1, a1 = run("compiled", chunk, templates)
    slow, s2, e2, a2 = run("numpy", chunk, templates)
    assert np.array_equal(s1, s2) and np.array_equal(e1, e2) and np.array_equal(a1, a2)
    assert fast.keys() == slow.keys()
    for name, m in fast.items():
        r = slow[name]
        assert np.array_equal(m.rows, r.rows)
        assert m.windows.dtype == r.windows.dtype and np.array_equal(m.windows, r.windows)
        assert m.columns.keys() == r.columns.keys()
        for k, v in m.columns.items():
            assert v.dtype == r.columns[k].dtype and v.shape == r.columns[k].shape, k
            assert np.array_equal(v, r.columns[k]), k
    return a1


SCHEMAS = [
    (Field("index", "uint", 8),),
    (Field("bit", "uint", 2),),
    (Field("cohort", "uint", 64), Field("bits", "bits", 16)),
    (Field("bits", "bits", 13),),
    (Field("row", "uint", 1000), Field("hash", "uint", 10**19), Field("bits", "bits", 70)),
    (Field("a", "bits", 3), Field("b", "uint", 11), Field("c", "bits", 8)),
]
# two metrics whose names share their first 8 bytes (the kernel's routing key), and a short name
METRICS = ["latency_a", "latency_b", "m", "flag", "color_of_the_app", "x2"]


# the strategies a chunk draws from, built once (not at each of its thousands of draws): the same draws
_WINDOWS = st.one_of(st.integers(0, 99999), st.sampled_from([0, 9, 10, MAX_WINDOW, MAX_WINDOW + 1, 10**16, 10**17]))
_VALUES = {f: st.one_of(st.integers(0, f.size - 1), st.just(f.size)) if f.kind == "uint" else
           st.integers(0, 2**f.size - 1) for schema in SCHEMAS for f in schema}
_OPS, _TIMES = st.integers(0, 5), st.integers(0, 2)
_BYTE = st.sampled_from(b'0129:{}",\r \x00\xffab/')
_INSERT = st.sampled_from([b"0", b"1", b"9", b"00", b'"', b"}"])
_TAIL = st.sampled_from([b"}", b"0", b" "])


@st.composite
def chunks(draw: st.DrawFn) -> tuple[bytes, list[jsonl.Template]]:
    picked = draw(st.lists(st.integers(0, len(SCHEMAS) - 1), min_size=1, max_size=4))
    templates = [template(METRICS[i], SCHEMAS[s]) for i, s in enumerate(picked)]
    which = st.sampled_from(templates)
    lines = []
    for _ in range(draw(st.integers(1, 60))):
        t = draw(which)
        window = draw(_WINDOWS)
        values = [draw(_VALUES[f]) for f in t.fields]
        line = canonical(t, window, values)
        for _ in range(draw(_TIMES)):
            op = draw(_OPS)
            i = draw(st.integers(0, len(line)))
            if op == 0:
                line = line[:i] + bytes([draw(_BYTE)]) + line[i + 1:]
            elif op == 1:
                line = line[:i] + line[i + 1:]
            elif op == 2:
                line = line[:i] + draw(_INSERT) + line[i:]
            elif op == 3:
                line = line[:i]
            elif op == 4:
                line = line + b"\r"
            else:
                line = line + draw(_TAIL)
        lines.append(line)
    return b"\n".join(lines) + b"\n", templates


@settings(max_examples=200, deadline=None)
@given(case=chunks())
def test_compiled_and_numpy_matchers_agree(case):
    chunk, templates = case
    assert_same(chunk, templates)


def test_canonical_lines_are_all_accepted_by_both():
    rng = np.random.default_rng(3)
    templates = [template(METRICS[i], s) for i, s in enumerate(SCHEMAS)]
    lines = []
    for k in range(600):
        t = templates[k % len(templates)]
        values = [int(rng.integers(0, min(f.size, 2**62))) if f.kind == "uint" else int(rng.integers(0, 2**min(
            f.size, 62))) for f in t.fields]
        lines.append(canonical(t, int(rng.integers(0, 10**6)), values))
    lines[7] = lines[7].replace(b'"window":', b'"window":0')  # a leading zero: the full parser's
    accepted = assert_same(b"\r\n".join(lines) + b"\n", templates)
    assert accepted.sum() == 599 and not accepted[7]


def test_routing_needs_the_whole_prefix():
    """latency_a and latency_b share the 8 bytes the kernel routes by: each line lands in its own template."""
    a, b = template("latency_a", SCHEMAS[0]), template("latency_b", SCHEMAS[1])
    assert a.prefix[_KEY_AT:_KEY_AT + 8] == b.prefix[_KEY_AT:_KEY_AT + 8]
    chunk = canonical(b, 5, [1]) + b"\n" + canonical(a, 5, [7]) + b"\n"
    fast, *_ = run("compiled", chunk, [a, b])
    assert fast["latency_a"].rows.tolist() == [1] and fast["latency_b"].rows.tolist() == [0]
    assert fast["latency_a"].columns["index"].tolist() == [7]


def test_bad_arguments_are_refused():
    t = template("m", SCHEMAS[0])
    chunk = canonical(t, 1, [2]) + b"\n"
    starts, ends = np.array([0], np.int64), np.array([len(chunk) - 1], np.int64)
    which, nums, bits = np.empty(1, np.int32), np.empty((1, 2), np.uint64), np.empty((1, 0), np.uint8)
    good = struct.pack("<I", 1) + struct.pack("<I", len(t.program)) + t.program
    jsonl._linekernel.match(chunk, starts, ends, 1, good, _KEY_AT, which, nums, 2, bits, 0)
    assert which.tolist() == [0] and nums.tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="outside the chunk"):
        jsonl._linekernel.match(chunk, starts, ends + 5, 1, good, _KEY_AT, which, nums, 2, bits, 0)
    with pytest.raises(ValueError, match="bad sizes"):
        jsonl._linekernel.match(chunk, starts, ends, 2, good, _KEY_AT, which, nums, 2, bits, 0)
    with pytest.raises(ValueError, match="malformed"):  # more numbers than the row holds
        jsonl._linekernel.match(chunk, starts, ends, 1, good, _KEY_AT, which, nums[:, :1].copy(), 1, bits, 0)
    for bad in (t.program[:-1], b"X" + t.program, t.program[:3] + b"N"):
        programs = struct.pack("<I", 1) + struct.pack("<I", len(bad)) + bad
        with pytest.raises(ValueError, match="malformed|truncated"):
            jsonl._linekernel.match(chunk, starts, ends, 1, programs, _KEY_AT, which, nums, 2, bits, 0)
    with pytest.raises(ValueError, match="truncated"):
        jsonl._linekernel.match(chunk, starts, ends, 1, struct.pack("<I", 2) + good[4:], _KEY_AT, which, nums, 2,
                                bits, 0)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from([b"a", b"\r", b"\n", b"\r\n", b"{}", b"\x00"]), max_size=40))
def test_compiled_and_numpy_line_bounds_agree(parts):
    chunk = b"".join(parts)
    chunk += b"" if chunk.endswith(b"\n") else b"\n"
    fast, slow = line_bounds(chunk, compiled=True), line_bounds(chunk, compiled=False)
    assert all(a.dtype == b.dtype == np.int64 and np.array_equal(a, b) for a, b in zip(fast, slow, strict=True))
    assert [chunk[a:b] for a, b in zip(*fast, strict=True)] == [x[:-1] if x.endswith(b"\r") else x
                                                                 for x in chunk.split(b"\n")[:-1]]
    with pytest.raises(ValueError, match="more lines"):
        jsonl._linekernel.split(chunk + b"\n", *(np.empty(len(fast[0]), np.int64) for _ in range(2)))


JUNKY = [b"{", b"}", b"[", b"]", b'"', b" ", b"\t", b"\r", b"\x0b", b"\x00", b"\xef\xbb\xbf", b"\xff", b"0", b"7", b"-",
         b"+", b".", b"e", b"E", b"I", b"Infinity", b"NaN", b"true", b"false", b"null", b"t", b"x", b"junk", b"{}",
         b'{"a":1}', b"1e5"]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from(JUNKY), max_size=6).map(b"".join), min_size=1, max_size=30),
       crlf=st.booleans())
def test_compiled_and_numpy_junk_tests_agree(lines, crlf):
    chunk = b"".join(x + (b"\r\n" if crlf else b"\n") for x in lines)
    starts, ends = line_bounds(chunk, compiled=False)
    fast, slow = junk_lines(chunk, starts, ends, compiled=True), junk_lines(chunk, starts, ends, compiled=False)
    assert fast.dtype == slow.dtype == bool and np.array_equal(fast, slow), [
        (x, a, b) for x, a, b in zip(lines, fast, slow, strict=True) if a != b]
    keep = np.arange(len(starts))[::2]  # any subset of the lines, as the folder passes the rest
    assert np.array_equal(junk_lines(chunk, starts[keep], ends[keep], compiled=True),
                          junk_lines(chunk, starts[keep], ends[keep], compiled=False))


def test_junk_tests_agree_on_blank_and_oversized_lines():
    chunk = b"\n" + b"x" * (jsonl.MAX_LINE + 1) + b"\n" + b"x" * jsonl.MAX_LINE + b"\n" + b" \n"
    starts, ends = line_bounds(chunk)
    fast, slow = junk_lines(chunk, starts, ends, compiled=True), junk_lines(chunk, starts, ends, compiled=False)
    assert fast.tolist() == slow.tolist() == [False, False, True, False]
