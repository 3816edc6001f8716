"""Byte-lane Bernoulli bits (``RandomSource.bernoulli_lanes``, used by the CMS client).

* the law: each lane is below the 64-bit threshold with probability exactly ``threshold / 2**64``;
* the buffered fast path draws exactly what the reference algorithm draws, on the same stream;
* bad arguments are refused like ``bernoulli_bits``'s.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
from bitarray import bitarray
from hypothesis import given, settings, strategies as st

from ldp.random_base import LANE_TIE_BITS, PRECISION_BITS, bernoulli_threshold, bytelane_below
from ldp.randomness import BufferedRandomSource, RandomSource, SeededRandomSource

PS = [0.5, 1 / (1 + math.e), 1 / (1 + math.exp(0.25)), 0.01, 0.99, 2.0**-60, 1 - 2.0**-53, 0.2689414213699951]


class _Stream:
    """A byte stream where most bytes are the tie byte or its neighbours, so that ties are common."""

    def __init__(self, seed: int, tie: int) -> None:
        self.rng = random.Random(seed)
        self.near = [b for b in (tie - 1, tie, tie + 1) if 0 <= b < 256]
        self.reads: list[int] = []

    def read(self, n: int) -> bytes:
        self.reads.append(n)
        return bytes(self.rng.choice(self.near) if self.rng.random() < 0.7 else self.rng.randrange(256)
                     for _ in range(n))


def _pair(p: float, seed: int, chunk: int = 64) -> tuple[BufferedRandomSource, BufferedRandomSource]:
    top = bernoulli_threshold(p) >> LANE_TIE_BITS
    return (BufferedRandomSource(_Stream(seed, top).read, chunk), BufferedRandomSource(_Stream(seed, top).read, chunk))


def _as_list(bits: bitarray) -> list[int]:
    return [i for i, b in enumerate(bits) if b]


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("k", [9, 16, 64, 65, 200, 1024, 3000])
def test_fast_path_draws_what_the_reference_draws(p, k):
    fast, ref = _pair(p, seed=k)
    for _ in range(5):
        got = fast.bernoulli_lanes(p, k)
        want = RandomSource.bernoulli_lanes(ref, p, k)  # the reference algorithm over the same pools
        assert len(got) == len(want) == k
        assert got == want and got.tobytes() == want.tobytes()  # bit i = lane i, little-endian in both
        # the pools are left in the same state: every later draw agrees
        assert fast.randbits(64) == ref.randbits(64) and fast.randbits(200) == ref.randbits(200)
        assert fast.bernoulli_bits(p, 100) == ref.bernoulli_bits(p, 100)


@settings(max_examples=60, deadline=None)
@given(p=st.floats(2.0**-64, 1.0, exclude_max=True), k=st.integers(0, 2100), seed=st.integers(0, 2**32),
       chunk=st.sampled_from([8, 64, 4096]), calls=st.lists(st.sampled_from(["lanes", "word", "wide"]), max_size=6))
def test_fast_path_and_reference_agree_on_any_interleaving(p, k, seed, chunk, calls):
    fast, ref = _pair(p, seed, chunk)
    for call in ["lanes", *calls]:
        if call == "lanes":
            assert fast.bernoulli_lanes(p, k) == RandomSource.bernoulli_lanes(ref, p, k)
        elif call == "word":
            assert fast.randbits(37) == ref.randbits(37)
        else:
            assert fast.randbits(300) == ref.randbits(300)


def test_the_law_is_exact():
    """Every byte value once per lane, and a tie settled each way: the lanes below are exactly those
    whose 64-bit value ``byte * 2**56 + rest`` is below the threshold."""
    for p in PS:
        t = bernoulli_threshold(p)
        top, low = t >> LANE_TIE_BITS, t & ((1 << LANE_TIE_BITS) - 1)
        for rest in {0, max(low - 1, 0), low, min(low + 1, (1 << LANE_TIE_BITS) - 1), (1 << LANE_TIE_BITS) - 1}:
            draws = iter([int.from_bytes(bytes(range(256)), "little"), rest])
            below = bytelane_below(t, 256, lambda nbits, draws=draws: next(draws))
            assert below == [b for b in range(256) if (b << LANE_TIE_BITS) + rest < t]
            assert next(draws, None) is None  # one tie, one 56-bit draw
    # the probability of a lane: P(B < T) + P(B = T) P(rest < low) = threshold / 2**64
    for p in PS:
        t = bernoulli_threshold(p)
        top, low = t >> LANE_TIE_BITS, t & ((1 << LANE_TIE_BITS) - 1)
        assert top * (1 << LANE_TIE_BITS) + low == t


def test_edge_probabilities_draw_nothing():
    class NoDraws(RandomSource):
        def randbits(self, k: int) -> int:
            raise AssertionError("drew")

    assert NoDraws().bernoulli_lanes(0.0, 100) == bitarray(100 * "0")
    assert NoDraws().bernoulli_lanes(1.0, 100) == bitarray(100 * "1")
    assert len(NoDraws().bernoulli_lanes(0.3, 0)) == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_a_bad_lane_count_is_refused(bad):
    with pytest.raises(ValueError, match="number of bits"):
        BufferedRandomSource(lambda n: bytes(n)).bernoulli_lanes(0.3, bad)


@pytest.mark.parametrize("bad", [-0.1, 1.1, float("nan")])
def test_a_bad_probability_is_refused(bad):
    with pytest.raises(ValueError):
        BufferedRandomSource(lambda n: bytes(n)).bernoulli_lanes(bad, 100)


@pytest.mark.parametrize("p", [1 / (1 + math.e), 0.01])
def test_lane_frequencies_match_p(p):
    """n = 400 draws of 1,024 lanes from the seeded source: the count of ones is Binomial(409,600, p')
    with p' the realized probability; |count − n p'| < 5 SD (a false alarm once in ~1.7 million runs).
    Lanes are independent: the counts of adjacent pairs (1,1) are Binomial(n (k−1), p'^2) within 5 SD."""
    src = SeededRandomSource(random.Random(7))
    pr = bernoulli_threshold(p) / 2.0**PRECISION_BITS
    n, k = 400, 1024
    ones = pairs = 0
    for _ in range(n):
        bits = src.bernoulli_lanes(p, k)
        ones += bits.count(1)
        pairs += sum(a & b for a, b in itertools.pairwise(bits))
    assert abs(ones - n * k * pr) < 5 * math.sqrt(n * k * pr * (1 - pr))
    m, q = n * (k - 1), pr * pr
    assert abs(pairs - m * q) < 5 * math.sqrt(m * q * (1 - q) * (1 + 2 * pr))  # pairs overlap: a loose bound


def test_bytelane_below_matches_bernoulli_lanes_of_the_base_class():
    a, b = SeededRandomSource(random.Random(3)), SeededRandomSource(random.Random(3))
    p = 0.3
    assert _as_list(a.bernoulli_lanes(p, 777)) == bytelane_below(bernoulli_threshold(p), 777, b.randbits)
