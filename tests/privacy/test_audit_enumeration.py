"""The exact audit's enumeration of random paths (:func:`ldp.privacy.audit.output_distribution`) carries each path's
probability as running integer products, reusing the products of the choices a path shares with the one before it:
it gives exactly the distribution a plain recursive enumeration gives (each branch's probability the product of its
weights, recomputed from scratch), on random mechanisms whose later draws depend on earlier outcomes (paths of
unequal depth), zero-probability branches included."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings, strategies as st

from ldp.privacy.audit import output_distribution
from ldp.randomness import RandomSource
from ldp.randomness.base import PRECISION_BITS, bernoulli_threshold

STEP = st.one_of(st.tuples(st.just("bernoulli"), st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0])),
                 st.tuples(st.just("randbelow"), st.integers(1, 4)),
                 st.tuples(st.just("bits"), st.sampled_from([0.25, 0.5]), st.integers(1, 3)))


def _mechanism(steps):
    """Draw the steps in order, skipping the step after an odd outcome (so paths differ in depth); output them."""
    def run(src: RandomSource):
        out, skip = [], False
        for step in steps:
            if skip:
                skip = False
                continue
            kind = step[0]
            v = (int(src.bernoulli(step[1])) if kind == "bernoulli" else src.randbelow(step[1])
                 if kind == "randbelow" else src.bernoulli_bits(step[1], step[2]))
            out.append(v)
            skip = v % 2 == 1
        return tuple(out)
    return run


class _Branch(Exception):
    def __init__(self, weights):
        self.weights = weights


class _Replay(RandomSource):
    """Replays a list of choices; the first draw past them raises its weights (the reference branches on them)."""

    def __init__(self, choices):
        self.choices, self.at = choices, 0

    def _choose(self, weights):
        if self.at == len(self.choices):
            raise _Branch(weights)
        self.at += 1
        return self.choices[self.at - 1]

    def bernoulli(self, p):
        pe = Fraction(bernoulli_threshold(p), 1 << PRECISION_BITS)
        return bool(self._choose([1 - pe, pe]))

    def bernoulli_bits(self, p, k):
        pe = Fraction(bernoulli_threshold(p), 1 << PRECISION_BITS)
        return self._choose([pe ** m.bit_count() * (1 - pe) ** (k - m.bit_count()) for m in range(1 << k)])

    def randbelow(self, n):
        return self._choose([Fraction(1, n)] * n)

    def randbits(self, k):  # the mechanisms here never draw raw bits
        raise AssertionError("randbits")


def _reference(run):
    """The distribution by recursion over every branch, each path's probability its weights' product."""
    dist: dict = {}

    def walk(choices, prob):
        try:
            out = run(_Replay(choices))
        except _Branch as b:
            for c, w in enumerate(b.weights):
                walk(choices + [c], prob * w)
            return
        if prob:
            dist[out] = dist.get(out, Fraction(0)) + prob

    walk([], Fraction(1))
    return dist


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=5))
def test_the_enumeration_equals_a_recursive_one(steps):
    run = _mechanism(steps)
    assert output_distribution(run) == _reference(run)
