"""Randomness for clients (OS CSPRNG by default) and for simulations (numpy ``Generator``).

Client side
    Encoders draw every random choice through a :class:`RandomSource`, whose only entropy
    primitive is :meth:`RandomSource.randbits`. The default, :class:`SystemRandomSource`, reads the
    operating system's CSPRNG (``os.urandom``) 4 KiB at a time (:class:`BufferedRandomSource`;
    fork- and thread-safe). A seed, a ``random.Random`` or a numpy ``Generator`` may be passed
    instead for reproducible simulation (:func:`client_source`).

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
import random
import sys
from typing import TYPE_CHECKING, Any

from ldp.errors import SeededRandomnessWarning
from ldp.randomness.base import (
    PRECISION_BITS,
    RandomSource,
    bernoulli_threshold,
    bitsliced_below,
    check_probability,
    check_resolvable,
    logistic_tail,
    realized_probability,
)

# re-exported: the primitives (random_base) and the buffered OS source (buffered_random)
from ldp.randomness.buffered import BufferedRandomSource, SystemRandomSource, UnbufferedSystemRandomSource
from ldp.randomness.replay import Draw, RecordingSource, ReplayError, ReplaySource

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "PRECISION_BITS",
    "bitsliced_below",
    "RandomSource",
    "SystemRandomSource",
    "UnbufferedSystemRandomSource",
    "BufferedRandomSource",
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
    "Draw",
    "RecordingSource",
    "ReplaySource",
    "ReplayError",
]

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


_GIL = getattr(sys, "_is_gil_enabled", lambda: True)()
_SYSTEM: RandomSource = SystemRandomSource() if _GIL else UnbufferedSystemRandomSource()


def is_seeded(rng: Any) -> bool:
    """Whether ``rng`` makes a client reproducible from a seed: an int, a ``random.Random``, a numpy
    ``Generator`` (or the sources wrapping them). ``None`` and the OS CSPRNG are not; a custom
    :class:`RandomSource` (an audit's enumerator, a test double) is the caller's explicit choice."""
    if rng is None or isinstance(rng, (SystemRandomSource, UnbufferedSystemRandomSource)):
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


def as_generator(rng: Any = None) -> np.random.Generator:
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


def batch_bernoulli(gen: np.random.Generator, p: Any, size: Any) -> np.ndarray:
    """Boolean array of Bernoulli(p) draws (p scalar or broadcastable array), resolution 2**-53."""
    return gen.random(size) < p
