"""Subset Selection's server check counts each row's ones with :func:`~ldp.decoders.subset_selection.row_ones`
(issue 61 item 5): equal to the byte-table :func:`~ldp.batch.histogram.row_popcount` of the masked rows for every
row length (one word, whole 64-bit words, zero-padded words) and any padding bits; the fold rejects the same rows."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from ldp.batch.bits import row_padding_mask
from ldp.batch.histogram import row_popcount
from ldp.decoders.subset_selection import SSAggregate, row_ones
from ldp.encoders.subset_selection import SSEncoder, SSParams


@settings(max_examples=150, deadline=None)
@given(nbits=st.integers(1, 700), n=st.integers(0, 300), seed=st.integers(0, 2**32 - 1),
       density=st.sampled_from([0.0, 0.1, 0.5, 1.0]))
def test_row_ones_is_the_masked_popcount(nbits: int, n: int, seed: int, density: float) -> None:
    gen = np.random.default_rng(seed)
    nbytes = (nbits + 7) // 8
    bits = (gen.random((n, nbytes * 8)) < density).astype(np.uint8)  # padding bits set too
    rows = np.packbits(bits, axis=1, bitorder="little")
    got = row_ones(rows, nbits)
    assert got.dtype == np.int64 and got.shape == (n,)
    np.testing.assert_array_equal(got, row_popcount(rows & row_padding_mask(nbits)))


def test_row_ones_on_views_and_all_ones() -> None:
    rows = np.full((5, 40), 0xFF, np.uint8)
    np.testing.assert_array_equal(row_ones(rows[:, :13], 100), [100] * 5)  # a non-contiguous view
    np.testing.assert_array_equal(row_ones(rows[::2, :16], 128), [128] * 3)
    np.testing.assert_array_equal(row_ones(np.zeros((0, 3), np.uint8), 20), np.zeros(0, np.int64))


def test_fold_rejects_rows_without_omega_ones() -> None:
    params = SSParams(1.0, 16)
    batch = SSEncoder(params).encode_batch(np.arange(1000) % 16, np.random.default_rng(1))
    bits = batch.columns["bits"].copy()
    bits[[3, 500]] = 0  # no ones
    bits[7, 1] |= 0x80  # one more than ω (if that bit was clear) or one fewer (if it was set)
    bits[7, 0] ^= 0x01
    bits[7, 0] |= 0x02
    bad = row_popcount(bits) != params.omega
    agg = SSAggregate(params)
    agg.add(type(batch)(batch.protocol, batch.fingerprint, batch.schema, {"bits": bits}))
    assert agg.n == 1000 - int(bad.sum()) and agg.rejected.get("bad_value", 0) == int(bad.sum())
