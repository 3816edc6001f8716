"""The tables the simulations remember between collections (a sketch's buckets, RAPPOR's Bloom tables, a mean
mechanism's distinct values): each equals what is computed afresh, by every path (the client's scalar hashing of a
small sketch table, the vectorized MurmurHash3, a table too large to remember), and each call returns an array of
its own, so that a caller writing into it changes no later answer."""

import numpy as np
import pytest

from ldp.batch import rappor as batch_rappor, sketch as batch_sketch
from ldp.batch.murmur import bucket_table
from ldp.decoders import numeric as numeric_decoders
from ldp.encoders.cms import CmsParams
from ldp.encoders.numeric import PiecewiseParams
from ldp.encoders.rappor import RapporParams, bloom_bits
from ldp.hashing import buckets

WORDS = ["item0", "item1", "\u00e9t\u00e9", b"\x00\xffraw", ""]


@pytest.mark.parametrize("num_hashes", [1, 4, 13, 64])  # scalar (d·k <= 64), vectorized, remembered or not
@pytest.mark.parametrize("d", [0, 1, 5, 40])
def test_sketch_buckets_equal_the_vectorized_and_scalar_hashes(monkeypatch, num_hashes, d):
    params = CmsParams(2.0, num_hashes, 1000, 77)
    cands = [f"w{i}" if i % 2 else f"\u00e9{i}".encode() for i in range(d)]
    seeds = np.arange(77, 77 + num_hashes, dtype=np.uint64)
    expected = bucket_table(cands, 1000, seeds)
    assert np.array_equal(expected.reshape(d, num_hashes),
                          np.array([buckets(c, 1000, range(77, 77 + num_hashes)) for c in cands],
                                   dtype=np.uint32).reshape(d, num_hashes))
    for cells in (batch_sketch._MEMO_CELLS, 0):  # remembered, and computed every time
        monkeypatch.setattr(batch_sketch, "_MEMO_CELLS", cells)
        first = batch_sketch.sketch_buckets(params, cands)
        assert first.dtype == expected.dtype and np.array_equal(first, expected)
        first += 1  # the caller's own array
        again = batch_sketch.sketch_buckets(params, tuple(cands))
        assert np.array_equal(again, expected) and again.flags.writeable


def test_sketch_buckets_refuse_what_the_hashing_refuses():
    params = CmsParams(2.0, 2, 8, 0)
    with pytest.raises(TypeError, match="str or bytes"):
        batch_sketch.sketch_buckets(params, ["a", 3])
    with pytest.raises(TypeError, match="str or bytes"):
        batch_sketch.sketch_buckets(params, [["unhashable"]])
    assert np.array_equal(batch_sketch.sketch_buckets(params, [bytearray(b"a")]),
                          batch_sketch.sketch_buckets(params, [b"a"]))


@pytest.mark.parametrize("mode", ["ldp", "google"])
def test_bloom_tables_equal_the_client_bits_and_are_the_callers(monkeypatch, mode):
    params = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.5, q=0.75, f=0.5, mode=mode)
    expected = np.array([[bloom_bits(params, w, c) for c in range(4)] for w in WORDS], dtype=np.int64)
    for cells in (batch_rappor._MEMO_CELLS, 0):
        monkeypatch.setattr(batch_rappor, "_MEMO_CELLS", cells)
        idx = batch_rappor.bloom_index_table(params, WORDS)
        assert idx.dtype == np.int64 and np.array_equal(idx, expected)
        idx += 100  # as ldp.decoders.rappor_map does with its own table
        assert np.array_equal(batch_rappor.bloom_index_table(params, WORDS), expected)
        packed = batch_rappor.bloom_table(params, WORDS)
        bits = np.unpackbits(packed, axis=2, bitorder="little")[:, :, :16]
        assert all(set(np.flatnonzero(bits[v, c])) == set(expected[v, c].tolist())
                   for v in range(len(WORDS)) for c in range(4))
        packed[:] = 0
        assert np.array_equal(batch_rappor.bloom_table(params, WORDS), np.packbits(bits, axis=2, bitorder="little"))


def test_distinct_values_are_remembered_only_for_the_same_values_and_bounds():
    x = np.array([0.5, 0.25, 0.5, 2.0, -1.0])
    clipping = PiecewiseParams(epsilon=1.0, low=0.0, high=1.0, clip=True)
    wider = PiecewiseParams(epsilon=1.0, low=-1.0, high=2.0)
    uniq, cnt = numeric_decoders._distinct(clipping, x)
    assert uniq.tolist() == [0.0, 0.25, 0.5, 1.0] and cnt.tolist() == [1, 1, 2, 1] and cnt.dtype == np.int64
    uniq[:], cnt[:] = 9, 9  # the caller's own arrays
    assert numeric_decoders._distinct(clipping, x.copy())[1].tolist() == [1, 1, 2, 1]
    assert numeric_decoders._distinct(wider, x)[0].tolist() == [-1.0, 0.25, 0.5, 2.0]
    with pytest.raises(ValueError, match="must be in"):  # the same values under bounds that refuse them
        numeric_decoders._distinct(PiecewiseParams(epsilon=1.0, low=-1.0, high=1.0), x)
    y = x.copy()
    y[0] = 0.75
    assert numeric_decoders._distinct(wider, y)[0].tolist() == [-1.0, 0.25, 0.5, 0.75, 2.0]
