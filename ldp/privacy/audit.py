"""Exact privacy audit: enumerate every output of an encoder and find its worst likelihood ratio.

The audit runs the encoder's real code with an enumerating :class:`~ldp.randomness.RandomSource`
that explores every branch of every random choice (depth first, replaying a prefix of choices)
and weighs each path by its exact rational probability. Bernoulli draws are weighed with the
probability the client really uses, ``floor(p·2^64)/2^64``, so quantization is audited too.

For inputs ``X`` and the union ``O`` of outputs, the audited ε is
``max_{o ∈ O} ln( max_x Pr[o|x] / min_x Pr[o|x] )``: ``inf`` when an output is possible for
one input and impossible for another. Only small configurations are enumerable.
Standard library only, so client-side code can be audited without numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from ldp.errors import AuditError
from ldp.randomness import PRECISION_BITS, RandomSource, bernoulli_threshold

if TYPE_CHECKING:
    from ldp.encoders.base import Encoder

__all__ = ["AuditError", "AuditResult", "output_distribution", "audit", "audit_encoder"]


@lru_cache(maxsize=64)
def _bits_weights(threshold: int, k: int) -> list[Fraction]:
    """Exact probability of each k-bit mask when every bit is 1 with probability threshold/2^64."""
    pe = Fraction(threshold, 1 << PRECISION_BITS)
    powers = [(pe ** j * (1 - pe) ** (k - j)) for j in range(k + 1)]
    return [powers[m.bit_count()] for m in range(1 << k)]


class _EnumeratingSource(RandomSource):
    """Follows a prefix of choices, then the first branch of each new choice; records arities. ``prods[d]`` is the
    path's probability after its first ``d`` choices, as an unreduced ``(numerator, denominator)`` (exact integer
    products, reduced once per path by :attr:`prob`); the first ``valid`` are the previous path's, whose choices this
    one repeats, so only the choices after them are multiplied."""

    def __init__(self, prefix: list[int], prods: list[tuple[int, int]], valid: int) -> None:
        self.choices = prefix
        self.arities: list[int] = []
        self.prods = prods
        self.valid = valid

    def _choose(self, weights: list[Fraction]) -> int:
        depth = len(self.arities)
        if depth == len(self.choices):
            self.choices.append(0)
        self.arities.append(len(weights))
        c = self.choices[depth]
        if depth >= self.valid:  # the product so far, times this choice's weight
            num, den = self.prods[depth]
            del self.prods[depth + 1:]
            self.prods.append((num * weights[c].numerator, den * weights[c].denominator))
        return c

    @property
    def prob(self) -> Fraction:
        """The path's probability: the product of its choices' weights."""
        num, den = self.prods[len(self.arities)]
        return Fraction(num, den)

    def randbits(self, k: int) -> int:
        raise AuditError("encoders must draw through bernoulli/bernoulli_bits/randbelow, not randbits")

    def token_bytes(self, n: int) -> bytes:
        raise AuditError("token_bytes (secrets) cannot be enumerated; audit with a fixed secret")

    def bernoulli(self, p: float) -> bool:
        pe = Fraction(bernoulli_threshold(p), 1 << PRECISION_BITS)
        return bool(self._choose([1 - pe, pe]))

    def bernoulli_bits(self, p: float, k: int) -> int:
        if k > 20:
            raise AuditError(f"bernoulli_bits with k={k} has too many outcomes to enumerate")
        return self._choose(_bits_weights(bernoulli_threshold(p), k))

    def randbelow(self, n: int) -> int:
        if n > 1 << 20:
            raise AuditError(f"randbelow({n}) has too many outcomes to enumerate")
        return self._choose([Fraction(1, n)] * n)


def output_distribution(run: Callable[[RandomSource], Hashable], max_paths: int = 1 << 20) -> dict[Hashable, Fraction]:
    """Exact distribution of ``run(source)`` over all of its random paths."""
    dist: dict[Hashable, Fraction] = {}
    prefix: list[int] = []
    prods, valid = [(1, 1)], 0  # the running products of the path's weights (see _EnumeratingSource)
    for _ in range(max_paths):
        src = _EnumeratingSource(prefix, prods, valid)
        out = run(src)
        prob = src.prob
        if prob:
            dist[out] = dist.get(out, Fraction(0)) + prob
        prefix = src.choices[: len(src.arities)]
        while prefix and prefix[-1] + 1 >= src.arities[len(prefix) - 1]:
            prefix.pop()
        if not prefix:
            break
        prefix[-1] += 1
        valid = len(prefix) - 1  # the next path repeats the choices before the one just advanced
    else:
        raise AuditError(f"more than {max_paths} random paths")
    if sum(dist.values()) != 1:
        raise AuditError("path probabilities do not sum to 1 (the mechanism's draws are not enumerable)")
    return dist


def _log_ratio(a: Fraction, b: Fraction) -> float:
    r = a / b
    return math.log(r.numerator) - math.log(r.denominator)


@dataclass(frozen=True)
class AuditResult:
    """Worst-case ε found, where it is attained, and every input's exact output distribution."""

    epsilon: float
    worst_output: Hashable
    worst_inputs: tuple[Any, Any]
    distributions: dict[Any, dict[Hashable, Fraction]]

    def matches(self, claimed: float, rel_tol: float = 1e-9) -> bool:
        """``True`` if the audited ε equals the claimed ε (not merely below it)."""
        if math.isinf(self.epsilon) or math.isinf(claimed):
            return self.epsilon == claimed
        return math.isclose(self.epsilon, claimed, rel_tol=rel_tol, abs_tol=1e-12)


def _run_on(run: Callable[[Any, RandomSource], Hashable], x: Any, src: RandomSource) -> Hashable:
    return run(x, src)


def audit(inputs: Iterable[Any], run: Callable[[Any, RandomSource], Hashable],
          max_paths: int = 1 << 20) -> AuditResult:
    """Audit a mechanism given as ``run(input, source) -> hashable output`` over ``inputs``."""
    inputs = list(inputs)
    if len(inputs) < 2:
        raise ValueError("an audit needs at least two inputs")
    dists = {x: output_distribution(partial(_run_on, run, x), max_paths) for x in inputs}
    outputs: set[Hashable] = set().union(*dists.values())
    worst: tuple[float, Hashable, tuple[Any, Any]] = (-1.0, None, (None, None))
    for o in outputs:
        probs = [(dists[x].get(o, Fraction(0)), x) for x in inputs]
        hi, lo = max(probs, key=lambda t: t[0]), min(probs, key=lambda t: t[0])
        eps = math.inf if lo[0] == 0 else _log_ratio(hi[0], lo[0])
        if eps > worst[0]:
            worst = (eps, o, (hi[1], lo[1]))
    return AuditResult(worst[0], worst[1], worst[2], dists)


def audit_encoder(make_encoder: Callable[[RandomSource], Encoder], inputs: Iterable[Any],
                  max_paths: int = 1 << 20) -> AuditResult:
    """Audit an encoder's real ``encode`` path; ``make_encoder(source)`` builds it with that source.

    Outputs are compared by their JSON line, i.e. by everything a report carries.
    """
    return audit(inputs, lambda x, src: make_encoder(src).encode(x).to_json(), max_paths)
