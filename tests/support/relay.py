"""A random source that forwards every draw to another, set per call: an exact audit enumerates a client's random
paths, each path with its own source, and one client built once draws each path's values through it (building a
client with secret and cohort fixed draws nothing)."""

from __future__ import annotations

from ldp.randomness import RandomSource


class Relay(RandomSource):
    """Every draw, forwarded to ``current`` (the source of the path being enumerated); a draw while ``current`` is
    None fails."""

    current: RandomSource | None = None

    def randbits(self, k):
        return self.current.randbits(k)

    def bernoulli(self, p):
        return self.current.bernoulli(p)

    def bernoulli_bits(self, p, k):
        return self.current.bernoulli_bits(p, k)

    def randbelow(self, n):
        return self.current.randbelow(n)

    def subset_mask(self, n, k):
        return self.current.subset_mask(n, k)

    def token_bytes(self, n):
        return self.current.token_bytes(n)
