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
