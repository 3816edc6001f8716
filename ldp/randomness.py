"""Randomness for clients (OS CSPRNG by default) and for simulations (numpy ``Generator``).

Client side
    Encoders draw every random choice through a :class:`RandomSource`, whose only entropy
    primitive is :meth:`RandomSource.randbits`. The default, :class:`SystemRandomSource`, reads the
    operating system's CSPRNG (``secrets``). A seed, a ``random.Random`` or a numpy ``Generator``
    may be passed instead for reproducible simulation (:func:`client_source`).

    Resolution: :meth:`RandomSource.bernoulli` returns ``True`` with probability exactly
    ``floor(p * 2**64) / 2**64`` (error below ``2**-64``), by comparing 64 uniform bits with that
    threshold; :meth:`RandomSource.bernoulli_bits` gives the same per-bit probability for ``k``
    independent bits at once; :meth:`RandomSource.randbelow` is exactly uniform (rejection sampling).

Batch side
    Vectorized paths use a numpy ``Generator`` (:func:`as_generator`; numpy is imported lazily so
    clients never load it). ``batch_bernoulli`` has resolution ``2**-53`` (``Generator.random``).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
import secrets
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "PRECISION_BITS",
    "RandomSource",
    "SystemRandomSource",
    "SeededRandomSource",
    "GeneratorRandomSource",
    "KeyedRandomSource",
    "client_source",
    "as_generator",
    "batch_bernoulli",
    "bernoulli_threshold",
    "check_probability",
    "check_resolvable",
    "realized_probability",
    "logistic_tail",
    "SeededRandomnessWarning",
    "is_seeded",
]

PRECISION_BITS = 64
"""Bits of uniform randomness behind every client Bernoulli draw."""


def check_probability(p: float, name: str = "p") -> float:
    """Return ``float(p)`` if it is a real number in [0, 1], else raise ``ValueError`` naming ``name``."""
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{name} must be a real number, got {type(p).__name__}")
    p = float(p)
    if not 0.0 <= p <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {p}")
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
        raise ValueError(f"{name}={p!r} is below the client's 2^-64 resolution: it would be drawn with "
                         "probability 0 (use 0 if that is meant, or a value >= 2^-64)")
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
    and :meth:`token_bytes`, so that the exact privacy audit (:mod:`ldp.audit`) can enumerate them.
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

    def token_bytes(self, n: int) -> bytes:
        """``n`` uniform random bytes (client secrets)."""
        return self.randbits(8 * n).to_bytes(n, "little") if n > 0 else b""


class SystemRandomSource(RandomSource):
    """The operating system's CSPRNG (``secrets``): the default for every client."""

    def randbits(self, k: int) -> int:
        return secrets.randbits(k) if k > 0 else 0

    def token_bytes(self, n: int) -> bytes:
        return secrets.token_bytes(n)

    def __repr__(self) -> str:
        return "SystemRandomSource()"


class SeededRandomSource(RandomSource):
    """A ``random.Random`` (seeded, for reproducible simulation; not for deployment)."""

    def __init__(self, rnd: random.Random) -> None:
        self._rnd = rnd

    def randbits(self, k: int) -> int:
        return self._rnd.getrandbits(k) if k > 0 else 0


class GeneratorRandomSource(RandomSource):
    """A numpy ``Generator`` driving a client encoder (simulation)."""

    def __init__(self, generator: Any) -> None:
        self._gen = generator

    def randbits(self, k: int) -> int:
        if k <= 0:
            return 0
        nbytes = (k + 7) // 8
        return int.from_bytes(self._gen.bytes(nbytes), "little") >> (8 * nbytes - k)


class KeyedRandomSource(RandomSource):
    """Deterministic randomness derived from a secret key and a message (memoized responses).

    The stream is ``HMAC-SHA256(key, message || uint32_BE(0)) || HMAC-SHA256(key, message ||
    uint32_BE(1)) || ...``; :meth:`randbits` ``(n)`` takes the next ``ceil(n/8)`` bytes of it, reads
    them as a little-endian integer and keeps the low ``n`` bits. The same key and message always
    give the same draws, so a client can recompute a memoized response (RAPPOR's permanent
    randomized response) instead of storing it. Modelling HMAC as a random function, the draws
    are uniform and independent for distinct messages.
    """

    def __init__(self, key: bytes, message: bytes) -> None:
        if not isinstance(key, (bytes, bytearray)) or not key:
            raise ValueError("the key must be non-empty bytes")
        self._key, self._message = bytes(key), bytes(message)
        self._block, self._buffer = 0, b""

    def _take(self, nbytes: int) -> bytes:
        while len(self._buffer) < nbytes:
            counter = self._block.to_bytes(4, "big")
            self._buffer += hmac.new(self._key, self._message + counter, hashlib.sha256).digest()
            self._block += 1
        out, self._buffer = self._buffer[:nbytes], self._buffer[nbytes:]
        return out

    def randbits(self, k: int) -> int:
        if k <= 0:
            return 0
        return int.from_bytes(self._take((k + 7) // 8), "little") & ((1 << k) - 1)

    def __repr__(self) -> str:
        return "KeyedRandomSource(<secret>)"


_SYSTEM = SystemRandomSource()


class SeededRandomnessWarning(UserWarning):
    """A client encoder draws from a seed: every device given that seed reports the same noise."""


def is_seeded(rng: Any) -> bool:
    """Whether ``rng`` makes a client reproducible from a seed: an int, a ``random.Random``, a numpy
    ``Generator`` (or the sources wrapping them). ``None`` and the OS CSPRNG are not; a custom
    :class:`RandomSource` (an audit's enumerator, a test double) is the caller's explicit choice."""
    if rng is None or isinstance(rng, SystemRandomSource):
        return False
    if isinstance(rng, (SeededRandomSource, GeneratorRandomSource, random.Random)):
        return True
    return (isinstance(rng, int) and not isinstance(rng, bool)) or _is_numpy_generator(rng)


def _is_numpy_generator(obj: Any) -> bool:
    return hasattr(obj, "bit_generator") and hasattr(obj, "bytes")


def client_source(rng: Any = None) -> RandomSource:
    """Resolve a client's randomness: ``None`` -> OS CSPRNG; int seed, ``random.Random``,
    numpy ``Generator`` or a :class:`RandomSource` -> that (reproducible simulation)."""
    if rng is None:
        return _SYSTEM
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, bool):
        raise TypeError("rng must be None, an int seed, random.Random, numpy Generator or RandomSource; got bool")
    if isinstance(rng, int):
        return SeededRandomSource(random.Random(rng))
    if isinstance(rng, random.Random):
        return SeededRandomSource(rng)
    if _is_numpy_generator(rng):
        return GeneratorRandomSource(rng)
    raise TypeError(
        "rng must be None, an int seed, random.Random, numpy Generator or RandomSource; "
        f"got {type(rng).__name__}"
    )


def as_generator(rng: Any = None) -> "np.random.Generator":
    """Resolve a simulation's randomness to a numpy ``Generator`` (imports numpy lazily).

    ``None`` -> fresh OS entropy; int or ``SeedSequence`` -> seeded; ``Generator`` -> itself;
    ``random.Random`` or :class:`RandomSource` -> seeded from 128 of its bits.
    """
    import numpy as np

    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, bool):
        raise TypeError("rng must be None, an int seed, a numpy Generator or SeedSequence; got bool")
    if isinstance(rng, (int, np.integer)):
        if rng < 0:
            raise ValueError(f"seed must be >= 0, got {rng}")
        return np.random.default_rng(int(rng))
    if isinstance(rng, random.Random):
        return np.random.default_rng(rng.getrandbits(128))
    if isinstance(rng, RandomSource):
        return np.random.default_rng(rng.randbits(128))
    raise TypeError(f"rng must be None, an int seed, a numpy Generator or SeedSequence; got {type(rng).__name__}")


def batch_bernoulli(gen: "np.random.Generator", p: Any, size: Any) -> "np.ndarray":
    """Boolean array of Bernoulli(p) draws (p scalar or broadcastable array), resolution 2**-53."""
    return gen.random(size) < p
