"""Client randomness: exact Bernoulli thresholds, exhaustive check of the bit-sliced sampler."""

import itertools
import math
import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from ldp.randomness import (
    GeneratorRandomSource,
    RandomSource,
    SeededRandomSource,
    SystemRandomSource,
    as_generator,
    bernoulli_threshold,
    bitsliced_below,
    client_source,
)


class Scripted(RandomSource):
    """Returns prepared values from randbits (asserting the requested widths)."""

    def __init__(self, values, width=None):
        self.values, self.width = list(values), width

    def randbits(self, k):
        if self.width is not None:
            assert k == self.width
        return self.values.pop(0)


@pytest.mark.parametrize("p", [0.0, 1e-300, 2**-64, 0.1, 0.25, 1 / 3, 0.5, 0.75, 1 - 2**-53, 1.0])
def test_threshold_is_floor_of_p_times_2_64(p):
    assert bernoulli_threshold(p) == math.floor(Fraction(p) * 2**64)


def test_bernoulli_compares_64_bits_with_the_threshold():
    t = bernoulli_threshold(0.3)
    assert Scripted([t - 1], 64).bernoulli(0.3) is True
    assert Scripted([t], 64).bernoulli(0.3) is False
    assert Scripted([]).bernoulli(0.0) is False  # no draw needed at the extremes
    assert Scripted([]).bernoulli(1.0) is True
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            SystemRandomSource().bernoulli(bad)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_bitsliced_sampler_is_exact(k):
    """Enumerate every plane sequence at 3-bit precision: each lane is Bernoulli(t/8), lanes independent."""
    precision = 3
    for t in range(0, 9):
        dist = Counter()
        for planes in itertools.product(range(1 << k), repeat=precision):
            it = iter(planes)
            dist[bitsliced_below(t, precision, k, lambda width, it=it: next(it))] += 1
        total = (1 << k) ** precision
        for mask in range(1 << k):
            ones = bin(mask).count("1")
            expected = Fraction(t, 8) ** ones * (1 - Fraction(t, 8)) ** (k - ones)
            assert Fraction(dist[mask], total) == expected, (t, mask)


def test_randbelow_is_uniform_by_rejection():
    # n = 5 needs 3 bits; draws 5, 6, 7 are rejected
    assert Scripted([7, 6, 5, 4], 3).randbelow(5) == 4
    assert Scripted([], None).randbelow(1) == 0
    with pytest.raises(ValueError):
        SystemRandomSource().randbelow(0)


def test_csprng_source_is_statistically_sane():
    src = SystemRandomSource()
    n = 20000
    hits = sum(src.bernoulli(0.3) for _ in range(n))
    assert abs(hits - 0.3 * n) < 5 * math.sqrt(n * 0.21)
    bits = sum(bin(src.bernoulli_bits(0.2, 1000)).count("1") for _ in range(20))
    assert abs(bits - 0.2 * 20000) < 5 * math.sqrt(20000 * 0.16)
    counts = Counter(src.randbelow(6) for _ in range(6000))
    assert set(counts) == set(range(6))
    assert len(src.token_bytes(16)) == 16 and src.token_bytes(16) != src.token_bytes(16)


def test_client_source_resolution_and_reproducibility():
    assert isinstance(client_source(None), SystemRandomSource)
    a, b = client_source(42), client_source(42)
    assert [a.randbelow(1000) for _ in range(20)] == [b.randbelow(1000) for _ in range(20)]
    assert isinstance(client_source(random.Random(1)), SeededRandomSource)
    g = client_source(np.random.default_rng(5))
    assert isinstance(g, GeneratorRandomSource)
    assert 0 <= g.randbits(13) < 2**13
    src = SystemRandomSource()
    assert client_source(src) is src
    for bad in ("seed", 1.5, True, object()):
        with pytest.raises(TypeError):
            client_source(bad)


def test_as_generator():
    assert as_generator(7).random() == as_generator(7).random()
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    assert isinstance(as_generator(None), np.random.Generator)
    assert as_generator(random.Random(3)).random() == as_generator(random.Random(3)).random()
    with pytest.raises(ValueError):
        as_generator(-1)
    with pytest.raises(TypeError):
        as_generator("x")


def test_keyed_source_draws_are_pinned():
    """RAPPOR's PRR derives from this stream: its draws for a fixed key and message never change."""
    from ldp.randomness import KeyedRandomSource

    src = KeyedRandomSource(b"key", b"msg")
    assert [src.randbits(k) for k in (1, 7, 8, 9, 16, 64, 65, 200, 3)] == [
        0, 75, 110, 401, 43546, 3227180923478416259, 20148052323735033955,
        1211627795522079137036938173728756092222789369156411574633332, 5]
    assert src.bernoulli(0.3) is True
    assert src.bernoulli_bits(0.1, 100) == 20551748159073133933887488
    assert src.randbelow(1000) == 99
