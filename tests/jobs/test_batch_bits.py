"""The packed-bit kernels against plain numpy on the same data."""

import numpy as np
import pytest

from ldp.batch.bits import ones_by_group


@pytest.mark.parametrize(
    "nbits, groups, n",
    [
        (13, 5, 3000),      # narrow rows: byte tables, padding bits in the last byte
        (256, 300, 2000),   # 32-byte rows, groups > 256 (int64 table keys)
        (1024, 7, 5000),    # wide rows: sorted runs, runs longer than 255 rows
        (100, 5000, 4000),  # more groups than the byte tables allow
        (64, 1, 600),       # a single group
    ],
)
def test_ones_by_group_matches_unpacked_sums(nbits: int, groups: int, n: int) -> None:
    rng = np.random.default_rng(nbits * 7919 + groups)
    dense = rng.random((n, nbits)) < 0.3
    dense[: min(n, 600), 0] = True  # a full column: a byte lane summing > 255 rows would overflow
    packed = np.packbits(dense, axis=1, bitorder="little")
    g = rng.integers(0, groups, n)
    g[: min(n, 600)] = 0  # one group far above 255 rows in the first chunk
    counts, ones = ones_by_group(g.astype(np.uint16 if groups < 65536 else np.int64), packed, groups, nbits)
    expected = np.zeros((groups, nbits), dtype=np.int64)
    np.add.at(expected, g, dense.astype(np.int64))
    assert counts.tolist() == np.bincount(g, minlength=groups).tolist()
    assert ones.shape == (groups, nbits) and ones.dtype == np.int64
    np.testing.assert_array_equal(ones, expected)


def test_ones_by_group_empty_batch() -> None:
    counts, ones = ones_by_group(np.zeros(0, np.uint16), np.zeros((0, 128), np.uint8), 4, 1024)
    assert counts.tolist() == [0, 0, 0, 0] and ones.shape == (4, 1024) and not ones.any()


# -- packed_bernoulli: exact rates at the client's resolution -----------------------------------------

N_BYTES = 1 << 19  # 4.2M bits: the standard error of a rate near 1/4 is 2.1e-4


def _rate_z(bits: np.ndarray, p: float) -> float:
    ones = np.unpackbits(bits).mean()
    return float((ones - p) / np.sqrt(p * (1 - p) / (8 * bits.size)))


@pytest.mark.parametrize(
    "p",
    [
        0.25,                # threshold's low 56 bits are 0: a tied top byte is never below
        (64 + 0.5) / 256,    # half of every tied top byte is below: 1/512 above 0.25 (9 standard errors)
        1 / (1 + np.exp(1.0)),
        3e-4,                # top byte 0: only tied bytes can be below
    ],
)
def test_packed_bernoulli_one_probability_rate(p: float) -> None:
    from ldp.batch.bits import packed_bernoulli

    bits = packed_bernoulli(np.random.default_rng(11), np.zeros(N_BYTES, np.uint8), p, p)
    assert abs(_rate_z(bits, p)) < 5


def test_packed_bernoulli_bits_are_independent() -> None:
    from ldp.batch.bits import packed_bernoulli

    p = 0.3
    bits = np.unpackbits(packed_bernoulli(np.random.default_rng(5), np.zeros(N_BYTES, np.uint8), p, p))
    for lag in (1, 7, 8, 64):  # within a byte, across bytes, across 64-bit words
        both = float(np.mean(bits[:-lag] & bits[lag:]))
        assert abs(both - p * p) < 5 * np.sqrt(p * p * (1 - p * p) / bits.size)


def test_packed_bernoulli_two_probabilities_follow_the_mask() -> None:
    from ldp.batch.bits import packed_bernoulli

    rng = np.random.default_rng(3)
    mask = rng.integers(0, 256, N_BYTES, dtype=np.uint8)
    bits = np.unpackbits(packed_bernoulli(rng, mask, 0.1, 0.8))
    on = np.unpackbits(mask).astype(bool)
    for sel, p in ((on, 0.8), (~on, 0.1)):
        z = (bits[sel].mean() - p) / np.sqrt(p * (1 - p) / sel.sum())
        assert abs(z) < 5
    assert packed_bernoulli(rng, mask, 0.0, 1.0).tolist() == mask.tolist()
