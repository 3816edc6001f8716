"""Subset Selection's client draws: the buffered OS source's wide ``subset_mask`` (n >= 64, the path of SS at large
d) against the reference Floyd algorithm, the same results and the same reads, at the edges of its runs."""

from __future__ import annotations

import random

import pytest

from ldp.randomness import BufferedRandomSource, RandomSource


class _Stream:
    """Deterministic bytes; ``log`` records every read's size."""

    def __init__(self, seed: int) -> None:
        self._rnd, self.log = random.Random(seed), []

    def read(self, n: int) -> bytes:
        self.log.append(n)
        return self._rnd.randbytes(n)


@pytest.mark.parametrize("n, k", [(64, 0), (64, 1), (64, 64), (64, 63), (65, 33), (127, 1), (128, 128), (129, 64),
                                  (1023, 275), (1024, 1024), (3000, 900)])
@pytest.mark.parametrize("chunk", [8, 4096])
def test_wide_subset_mask_is_floyds_draw_for_draw(n, k, chunk):
    fast_stream, ref_stream = _Stream(n * k + chunk), _Stream(n * k + chunk)
    fast, ref = BufferedRandomSource(fast_stream.read, chunk), BufferedRandomSource(ref_stream.read, chunk)
    for _ in range(5):
        got, want = fast.subset_mask(n, k), RandomSource.subset_mask(ref, n, k)
        assert got == want and got.bit_count() == k and got >> n == 0
    assert fast_stream.log == ref_stream.log
    assert fast.randbits(64) == ref.randbits(64)  # and the stream continues at the same word
