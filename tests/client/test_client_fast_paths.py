"""The client's fast paths (issue 16 item 3) against the reference paths they shadow.

* :class:`BufferedRandomSource` (the buffered OS CSPRNG): its inlined ``bernoulli``,
  ``bernoulli_bits`` and ``randbelow`` give exactly the base class's results from the same
  stream, read the stream exactly as the law says, never hand one byte to two draws (threads),
  and a forked child never reuses the parent's buffer (a real ``os.fork``);
* the encoders' per-report paths give the same reports as the straightforward code they replaced
  (same seeded draws); RAPPOR's memoized PRR keeps today's bits for fixed secrets.
"""

from __future__ import annotations

import copy
import os
import pickle
import random
import sys
import threading
import tracemalloc

import pytest
from bitarray import frozenbitarray
from bitarray.util import int2ba
from hypothesis import given, settings, strategies as st

from ldp.encoders import (
    BinaryRREncoder,
    BinaryRRParams,
    CmsEncoder,
    CmsParams,
    GRREncoder,
    GRRParams,
    HcmsEncoder,
    HcmsParams,
    RapporEncoder,
    RapporParams,
)
from ldp.encoders.base import BoundedMemo
from ldp.encoders.hcms import hadamard_entry
from ldp.encoders.rappor import MEMO_ENTRIES, MEMO_MAX_VALUE
from ldp.encoders.sfp import SfpEncoder, SfpParams
from ldp.randomness import BufferedRandomSource, RandomSource, SeededRandomSource, SystemRandomSource, client_source
from ldp.reports import Report, bits_from_int


class Stream:
    """A deterministic byte stream: ``read(n)`` gives its next ``n`` bytes (and logs ``n``)."""

    def __init__(self, seed: int) -> None:
        self._rnd, self._buf, self.log = random.Random(seed), b"", []

    def read(self, n: int) -> bytes:
        self.log.append(n)
        while len(self._buf) < n:
            self._buf += self._rnd.randbytes(4096)
        out, self._buf = self._buf[:n], self._buf[n:]
        return out


class Counter64:
    """A stream of little-endian 64-bit counters 1, 2, 3, ...: every word read is distinct."""

    def __init__(self) -> None:
        self.next, self.lock = 1, threading.Lock()

    def read(self, n: int) -> bytes:
        with self.lock:
            words = range(self.next, self.next + n // 8)
            self.next += n // 8
        return b"".join(w.to_bytes(8, "little") for w in words)


PROBABILITIES = [0.0, 1.0, 0.5, 0.25, 0.75, 0.3, 1 / 3, 0.1192029220221175, 2.0**-64, 2.0**-70, 1e-300,
                 1 - 2.0**-53, 0.999]
OPS = st.one_of(
    st.tuples(st.just("bernoulli"), st.sampled_from(PROBABILITIES)),
    st.tuples(st.just("bernoulli_bits"), st.sampled_from(PROBABILITIES), st.integers(0, 1100)),
    st.tuples(st.just("randbelow"), st.one_of(st.integers(1, 2000), st.integers(1, 2**64 + 5))),
    st.tuples(st.just("randbits"), st.integers(0, 700)),
    st.integers(0, 1100).flatmap(lambda n: st.tuples(st.just("subset_mask"), st.just(n), st.integers(0, n))),
)


def _run(src: RandomSource, ops: list[tuple], reference: bool) -> list[int]:
    out = []
    for op, *args in ops:
        method = getattr(RandomSource, op) if reference and op != "randbits" else getattr(type(src), op)
        out.append(int(method(src, *args)))
    return out


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32), ops=st.lists(OPS, max_size=60), chunk=st.sampled_from([8, 64, 4096]))
def test_buffered_fast_paths_equal_the_reference_algorithms(seed, ops, chunk):
    """Same stream, same results and the same reads: the inlined methods are the base class's."""
    fast_stream, ref_stream = Stream(seed), Stream(seed)
    fast = _run(BufferedRandomSource(fast_stream.read, chunk), ops, reference=False)
    ref = _run(BufferedRandomSource(ref_stream.read, chunk), ops, reference=True)
    assert fast == ref
    assert fast_stream.log == ref_stream.log


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), widths=st.lists(st.integers(1, 64), max_size=80))
def test_buffered_words_are_the_unbuffered_stream(seed, widths):
    """randbits(k <= 64): the next 8 bytes of the stream, little-endian, low k bits."""
    src, raw = BufferedRandomSource(Stream(seed).read, 64), Stream(seed)
    for k in widths:
        assert src.randbits(k) == int.from_bytes(raw.read(8), "little") & ((1 << k) - 1)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), widths=st.lists(st.integers(65, 3000), max_size=30))
def test_buffered_wide_draws_are_the_unbuffered_stream(seed, widths):
    """randbits(k > 64): the next ceil(k/8) bytes, little-endian, low k bits, across chunk boundaries."""
    src, raw = BufferedRandomSource(Stream(seed).read, 64), Stream(seed)
    for k in widths:
        assert src.randbits(k) == int.from_bytes(raw.read((k + 7) // 8), "little") & ((1 << k) - 1)


def test_bad_arguments_fail_as_before():
    src = SystemRandomSource()
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            src.bernoulli(bad)
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            src.bernoulli_bits(bad, 8)
    for bad in ("0.5", None):
        with pytest.raises(TypeError):
            src.bernoulli(bad)
    with pytest.raises(ValueError, match="number of bits"):
        src.bernoulli_bits(0.5, -1)
    with pytest.raises(ValueError, match="randbelow"):
        src.randbelow(0)
    with pytest.raises(ValueError, match="randbelow"):
        src.randbelow(True)
    with pytest.raises(ValueError, match="multiple of 8"):
        BufferedRandomSource(os.urandom, 12)
    for n, k in ((3, 4), (3, -1), (-1, 0), (3.0, 1), (True, 1), (3, None)):
        with pytest.raises(ValueError, match="subset_mask"):
            src.subset_mask(n, k)


def test_threads_never_share_a_word():
    """Shared by 4 threads, no 64-bit word nor wide draw of the stream goes to two draws."""
    src = BufferedRandomSource(Counter64().read, 256)
    results: list[list[int]] = [[] for _ in range(4)]

    def work(out: list[int]) -> None:
        for i in range(3000):
            out.append(src.randbits(64))
            if i % 5 == 0:  # 3 words from the byte pool: refills keep a 16-byte tail
                w = src.randbits(192)
                out.extend((w & (2**64 - 1), (w >> 64) & (2**64 - 1), w >> 128))

    threads = [threading.Thread(target=work, args=(r,)) for r in results]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    words = [w for r in results for w in r]
    assert len(words) == len(set(words)) == 4 * 4800


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("width", [64, 1024])
def test_a_forked_child_never_reuses_the_parents_buffer(width):
    """With a buffer primed in the parent, parent and child draw different noise after a real fork."""
    sources = [SystemRandomSource(), client_source(None)]
    for src in sources:
        src.randbits(width)  # both pools now hold unread bytes
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe and exits at once
        try:
            os.close(read_end)
            words = b"".join(src.randbits(width).to_bytes(width // 8, "little") for src in sources for _ in range(8))
            os.write(write_end, words)
        finally:
            os._exit(0)
    os.close(write_end)
    parent = b"".join(src.randbits(width).to_bytes(width // 8, "little") for src in sources for _ in range(8))
    child = b""
    while chunk := os.read(read_end, 1 << 16):
        child += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    n = width // 8
    assert len(child) == len(parent) == 16 * n
    child_draws = {child[i:i + n] for i in range(0, len(child), n)}
    parent_draws = {parent[i:i + n] for i in range(0, len(parent), n)}
    assert not child_draws & parent_draws


def test_copies_of_the_os_source_never_share_its_buffer():
    """An encoder copied or pickled with its (buffered) default source draws fresh bytes."""
    enc = CmsEncoder(CmsParams(4.0, 4, 1024))
    enc.encode("warm")  # both pools of the shared source now hold unread bytes
    for clone in (copy.deepcopy(enc), pickle.loads(pickle.dumps(enc))):
        assert isinstance(clone._rng, SystemRandomSource) and clone._rng is not enc._rng
        assert clone._rng.randbits(1024) != enc._rng.randbits(1024)
        assert clone._rng.randbits(64) != enc._rng.randbits(64)


def test_the_default_client_source_is_the_buffered_csprng():
    src = client_source(None)
    assert isinstance(src, SystemRandomSource) and isinstance(src, BufferedRandomSource)
    assert client_source(None) is src  # one shared buffer per process


# -- Report and bit strings -------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(length=st.integers(1, 2100), data=st.data())
def test_bits_from_int_equals_int2ba(length, data):
    value = data.draw(st.integers(0, 2**length - 1))
    fast, ref = bits_from_int(value, length), frozenbitarray(int2ba(value, length=length, endian="little"))
    assert fast == ref and type(fast) is frozenbitarray and fast.endian == "little" and len(fast) == length
    assert hash(fast) == hash(ref) and fast.to01() == ref.to01() and fast.tobytes() == ref.tobytes()


def test_trusted_report_is_the_validated_report():
    bits = bits_from_int(5, 16)
    fast, ref = Report.trusted("cms", "0123456789abcdef", {"hash": 3, "bits": bits}), \
        Report("cms", "0123456789abcdef", {"hash": 3, "bits": bits})
    assert fast == ref and vars(fast) == vars(ref) and list(vars(fast)) == list(vars(ref))
    assert fast.to_json() == ref.to_json()
    with pytest.raises(TypeError):
        fast.payload["hash"] = 4  # read-only, as a validated report's


# -- encoders: the same reports as the reference code, from the same seeded draws -------------------

def _seeded(seed: int) -> SeededRandomSource:
    return SeededRandomSource(random.Random(seed))


def ref_rr(params, value, rng):
    return {"bit": int(rng.bernoulli(params.q if value else params.p))}


def ref_grr(params, value, rng):
    if rng.bernoulli(params.p):
        return {"index": value}
    other = rng.randbelow(params.domain_size - 1)
    return {"index": other + (other >= value)}


def ref_cms(params, value, rng):
    j = rng.randbelow(params.num_hashes)
    onehot = 1 << params.bucket_of(value, j)
    flips = rng.bernoulli_bits(params.flip_probability, params.width)
    return {"hash": j, "bits": frozenbitarray(int2ba(onehot ^ flips, length=params.width, endian="little"))}


def ref_hcms(params, value, rng):
    j, col = rng.randbelow(params.num_hashes), rng.randbelow(params.width)
    sign = hadamard_entry(params.bucket_of(value, j), col)
    if rng.bernoulli(params.flip_probability):
        sign = -sign
    return {"hash": j, "row": col, "bit": int(sign > 0)}


def ref_sfp(params, value, rng):
    word = params.prepare_word(value)
    position = rng.randbelow(params.num_positions)
    sketch = {"cms": ref_cms, "hcms": ref_hcms}
    w = sketch[params.word_sketch](params.word_params, word.word, rng)
    record = params.fragment_record(word.hash, params.fragment_at(word.padded, position))
    f = sketch[params.fragment_sketch](params.fragment_params, record, rng)
    return {"position": position, **{f"word_{k}": v for k, v in w.items()},
            **{f"fragment_{k}": v for k, v in f.items()}}


CASES = [
    (BinaryRREncoder, BinaryRRParams.forced_response(), ref_rr, st.sampled_from([0, 1, True, False])),
    (GRREncoder, GRRParams(1.0, 1024), ref_grr, st.integers(0, 1023)),
    (GRREncoder, GRRParams(0.5, 3), ref_grr, st.integers(0, 2)),
    (CmsEncoder, CmsParams(4.0, 256, 1024), ref_cms, st.text(max_size=20)),
    (CmsEncoder, CmsParams(2.0, 3, 37, 5), ref_cms, st.one_of(st.text(max_size=20), st.binary(max_size=20))),
    (HcmsEncoder, HcmsParams(4.0, 256, 1024), ref_hcms, st.text(max_size=20)),
    (HcmsEncoder, HcmsParams(1.0, 5, 16, 9), ref_hcms, st.binary(max_size=20)),
    (SfpEncoder, SfpParams(2.0, 6.0), ref_sfp, st.text("abcdefghij", min_size=1, max_size=10)),
    (SfpEncoder, SfpParams(1.0, 1.0, alphabet="ab", length=4, word_sketch="hcms", fragment_sketch="hcms",
                           word_width=64, fragment_width=32, replacement="a", truncate=True),
     ref_sfp, st.text("abc", min_size=1, max_size=7)),
]


@pytest.mark.parametrize("encoder_type, params, reference, values", CASES)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), data=st.data())
def test_encoders_give_the_reference_reports(encoder_type, params, reference, values, seed, data):
    enc = encoder_type(params, rng=_seeded(seed), simulation=True)
    ref_rng = _seeded(seed)
    for value in data.draw(st.lists(values, min_size=1, max_size=6)):  # repeats go through the memos
        expected = reference(params, value, ref_rng)
        report = enc.encode(value)
        assert dict(report.payload) == expected
        assert report == Report(params.protocol, params.fingerprint, expected)


def test_sketch_values_are_checked_before_any_draw():
    for enc in (CmsEncoder(CmsParams(4.0, 4, 16)), HcmsEncoder(HcmsParams(4.0, 4, 16))):
        with pytest.raises(ValueError, match="UTF-8"):
            enc.prepare("\ud800")
        with pytest.raises(TypeError):
            enc.prepare(3)


# -- RAPPOR: memoized PRR, today's bits -------------------------------------------------------------

PINNED = [  # (params, secret, cohort, value, Bloom filter, PRR) computed by the encoder before the memo
    (RapporParams(16, 2, 64, 0.25, 0.75, 0.5), b"client secret", 7, "https://site1.example/", 49152, 21255),
    (RapporParams(16, 2, 64, 0.25, 0.75, 0.5), b"k" * 32, 3, "alpha", 3, 19586),
    (RapporParams(16, 2, 64, 0.25, 0.75, 0.5), b"k" * 32, 3, b"\x00bytes", 2064, 2928),
    (RapporParams(128, 2, 64, 0.25, 0.75, 0.5), b"bench", 0, "https://site1.example/", 72057731476881408,
     2706251519929104241964454683120771128),
    (RapporParams(100, 3, 8, 0.25, 0.75, 0.3), b"s", 5, "\u00e9t\u00e9", 1208925819616828198486016,
     79230139433965722400895534088),
    (RapporParams(16, 2, 64, 0.25, 0.75, 0.0), b"s", 1, "v", 4128, 4128),
    (RapporParams(32, 2, 64, 0.25, 0.75, 0.5, mode="google"), b"client secret", 7, "https://site1.example/",
     133120, 539625546),
]


@pytest.mark.parametrize("params, secret, cohort, value, bloom, prr", PINNED)
def test_memoized_prr_keeps_todays_bits(params, secret, cohort, value, bloom, prr):
    enc = RapporEncoder(params, secret=secret, cohort=cohort)
    for _ in range(3):  # a miss, then hits
        prepared = enc.prepare(value)
        assert (prepared.bloom, enc.permanent_response(prepared)) == (bloom, prr)
        report = enc.encode(value)
        assert report.payload["cohort"] == cohort and len(report.payload["bits"]) == params.num_bloombits
    fresh = RapporEncoder(params, secret=secret, cohort=cohort)  # an empty memo computes the same
    assert fresh.permanent_response(fresh.prepare(value)) == prr


def test_rappor_reports_with_and_without_the_memo_are_identical():
    params = RapporParams(16, 2, 8, 0.25, 0.75, 0.5)
    words = [f"w{i % 7}" for i in range(60)] + [b"w1", "é" * 600]  # repeats, bytes, a value too long to keep
    memo = RapporEncoder(params, secret=b"s", cohort=2, rng=_seeded(3), simulation=True)
    plain = RapporEncoder(params, secret=b"s", cohort=2, rng=_seeded(3), simulation=True)
    for w in words:
        plain._memo = BoundedMemo(1, 0)  # keeps nothing: every value recomputed
        assert memo.encode(w) == plain.encode(w)
        assert memo.charge_for(memo.prepare(w)).key == plain.charge_for(plain.prepare(w)).key


def test_rappor_memo_is_bounded_and_lru():
    enc = RapporEncoder(RapporParams(16, 2, 8, 0.25, 0.75, 0.5), secret=b"s", cohort=0)
    first = enc.prepare("keep")
    for i in range(3 * MEMO_ENTRIES):
        enc.prepare(f"v{i}")
        enc.prepare("keep")  # recently used: never evicted
    assert len(enc._memo) == MEMO_ENTRIES and enc.prepare("keep") is first
    enc.prepare("x" * (MEMO_MAX_VALUE + 1))
    assert "x" * (MEMO_MAX_VALUE + 1) not in enc._memo._items


def test_rappor_memo_memory_stays_under_the_documented_bound():
    """256 values of the longest memoized size (4-byte characters): under the documented 1.2 MB."""
    enc = RapporEncoder(RapporParams(128, 2, 8, 0.25, 0.75, 0.5), secret=b"s", cohort=0)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2 * MEMO_ENTRIES):  # the values are made here: the memo's keys count too
            enc.encode(chr(0x10000 + i) * MEMO_MAX_VALUE)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(enc._memo) == MEMO_ENTRIES and grown < 1.2e6


def test_prr_rng_is_never_memoized():
    """An audit's PRR source is drawn for every report (the audit enumerates it each time)."""
    params = RapporParams(4, 2, 2, 0.5, 0.75, 0.5)
    prrs = set()
    for seed in range(40):
        enc = RapporEncoder(params, secret=b"s", cohort=1, prr_rng=_seeded(seed))
        prepared = enc.prepare("v")
        prrs |= {enc.permanent_response(prepared), enc.permanent_response(prepared)}
    assert len(prrs) > 2


def test_secret_and_cohort_are_read_only():
    enc = RapporEncoder(RapporParams(16, 2, 8, 0.25, 0.75, 0.5), secret=b"s", cohort=1)
    with pytest.raises(AttributeError):
        enc.secret = b"t"
    with pytest.raises(AttributeError):
        enc.cohort = 2


def test_sfp_memo_memory_stays_under_its_bound():
    """Long words and many positions: the memo keeps fewer words, within MEMO_BYTES."""
    from ldp.encoders.sfp import MEMO_BYTES
    params = SfpParams(2.0, 6.0, length=512, fragment_length=1, word_width=64, fragment_width=64)
    enc = SfpEncoder(params)
    assert 1 <= enc._memo.entries < 256
    words = ["".join(random.Random(i).choices("abcdefghijklmnopqrstuvwxyz", k=256)) for i in range(300)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for w in words:
            enc.encode(w)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < MEMO_BYTES
