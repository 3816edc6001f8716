"""The primitives of client randomness: probabilities at the client's resolution, bit-sliced
Bernoulli bits, and :class:`RandomSource`, the interface every encoder draws through.

Resolution: :meth:`RandomSource.bernoulli` returns ``True`` with probability exactly
``floor(p * 2**64) / 2**64``; :meth:`RandomSource.bernoulli_bits` gives that per-bit probability
for ``k`` independent bits; :meth:`RandomSource.randbelow` is exactly uniform. Everything here is
re-exported by :mod:`ldp.randomness`; import it from there.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

from ldp.errors import RefusalTypeError, RefusalValueError, kind_of

PRECISION_BITS = 64
"""Bits of uniform randomness behind every client Bernoulli draw."""


def check_probability(p: float, name: str = "p") -> float:
    """Return ``float(p)`` if it is a real number in [0, 1], else raise ``ValueError`` naming ``name`` (a
    :class:`~ldp.errors.Refusal`: ``param_type``, or ``param_range`` with ``min: 0, max: 1``)."""
    if type(p) is float and 0.0 <= p <= 1.0:  # the common case, decided at once (NaN fails the comparison)
        return p
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise RefusalTypeError(f"{name} must be a real number, got {type(p).__name__}", "param_type", param=name,
                               expected="float", got=kind_of(p))
    given, p = p, float(p)
    if not 0.0 <= p <= 1.0:  # also rejects NaN
        raise RefusalValueError(f"{name} must be in [0, 1], got {p}", "param_range", param=name, got=given, min=0,
                                max=1)
    return p


def bernoulli_threshold(p: float, precision: int = PRECISION_BITS) -> int:
    """``floor(p * 2**precision)``: a uniform ``precision``-bit integer below it has probability ~ p.

    ``math.ldexp`` scales by a power of two exactly, so the threshold is exact for every double p.
    """
    return int(math.ldexp(check_probability(p), precision))


def realized_probability(p: float) -> float:
    """The probability a client's ``bernoulli(p)`` really has: ``floor(p·2^64)/2^64``.

    Exact as a double: for ``p >= 2^-11`` it is ``p`` itself (a double's grid is at least as fine
    as 2^-64 there), below that the floor has fewer than 53 significant bits. Privacy claims and
    estimators use this, not ``p``, so what is claimed is what the client does.
    """
    return math.ldexp(bernoulli_threshold(p), -PRECISION_BITS)


def check_resolvable(p: float, name: str = "p") -> float:
    """``float(p)`` in [0, 1], refusing a positive ``p`` that the client would round to 0.

    A ``p`` in ``(0, 2^-64)`` has realized probability 0 (:func:`realized_probability`): the
    client would never draw it, and a privacy claim computed from ``p`` would be false.
    """
    p = check_probability(p, name)
    if p > 0.0 and bernoulli_threshold(p) == 0:
        raise RefusalValueError(f"{name}={p!r} is below the client's 2^-64 resolution: it would be drawn with "
                                "probability 0 (use 0 if that is meant, or a value >= 2^-64)", "param_relation",
                                params=[name], rule="below_resolution")
    return p


def logistic_tail(x: float) -> float:
    """``1/(1+e^x)`` without overflow (``e^-x`` once ``e^x`` would overflow; the two agree there)."""
    return 1.0 / (1.0 + math.exp(x)) if x < 700.0 else math.exp(-x)


def bitsliced_below(threshold: int, precision: int, k: int, randbits: Any) -> int:
    """``k`` independent bits, bit i = [U_i < threshold] for uniform ``precision``-bit U_i.

    Bit-sliced comparison: ``randbits(k)`` supplies one bit plane of all k lanes' U_i, most
    significant plane first; a lane is decided at its first plane that differs from the threshold,
    so the loop stops once no lane is still tied (about log2(k) + 2 planes on average), or once
    the threshold's remaining low bits are all zero (a lane still tied then cannot be below it:
    p = 1/2 takes one plane, p = 3/4 two).
    """
    full = (1 << k) - 1
    if threshold <= 0 or k == 0:
        return 0
    if threshold >= 1 << precision:
        return full
    below, tied = 0, full
    for plane in range(precision - 1, -1, -1):
        r = randbits(k)
        if (threshold >> plane) & 1:
            below |= tied & ~r
            tied &= r
        else:
            tied &= ~r
        if not tied or not threshold & ((1 << plane) - 1):
            break
    return below & full


class RandomSource(ABC):
    """The random choices a client encoder may make. Subclasses provide :meth:`randbits`.

    Encoders must draw only through :meth:`bernoulli`, :meth:`bernoulli_bits`, :meth:`randbelow`
    and :meth:`token_bytes`, so that the exact privacy audit (:mod:`ldp.privacy.audit`) can enumerate them.
    """

    @abstractmethod
    def randbits(self, k: int) -> int:
        """A uniform integer in ``[0, 2**k)``."""

    def bernoulli(self, p: float) -> bool:
        """``True`` with probability ``floor(p * 2**64) / 2**64``."""
        threshold = bernoulli_threshold(p)
        if threshold >= 1 << PRECISION_BITS:
            return True
        return threshold > 0 and self.randbits(PRECISION_BITS) < threshold

    def bernoulli_bits(self, p: float, k: int) -> int:
        """An int whose bits 0..k-1 are independent Bernoulli(p), each at 2**-64 resolution."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"number of bits must be a non-negative int, got {k!r}")
        return bitsliced_below(bernoulli_threshold(p), PRECISION_BITS, k, self.randbits)

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``, exactly (rejection sampling)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"randbelow needs an int n >= 1, got {n!r}")
        if n == 1:
            return 0
        bits = (n - 1).bit_length()
        while True:
            r = self.randbits(bits)
            if r < n:
                return r

    def subset_mask(self, n: int, k: int) -> int:
        """A uniform ``k``-subset of ``range(n)`` as a bit mask, exactly: Floyd's algorithm (Bentley & Floyd 1987),
        for ``j = n − k, …, n − 1``: ``t = randbelow(j + 1)``, add ``j`` if ``t`` is already in, else ``t``."""
        if isinstance(n, bool) or not isinstance(n, int) or isinstance(k, bool) or not isinstance(k, int) \
                or not 0 <= k <= n:
            raise ValueError(f"subset_mask needs ints 0 <= k <= n, got n={n!r}, k={k!r}")
        mask = 0
        for j in range(n - k, n):
            t = self.randbelow(j + 1)
            mask |= 1 << (j if mask >> t & 1 else t)
        return mask

    def token_bytes(self, n: int) -> bytes:
        """``n`` uniform random bytes (client secrets)."""
        return self.randbits(8 * n).to_bytes(n, "little") if n > 0 else b""
