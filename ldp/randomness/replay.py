"""A client's random-bit stream, recorded and replayed: :class:`RecordingSource` and :class:`ReplaySource`.

Every client draw reduces to calls of :meth:`~ldp.randomness.RandomSource.randbits` (docs/randomness.md, "The rule
for encoders"), so the list of ``(k, value)`` pairs those calls returned is the whole of an encoder's randomness.
Recorded once, it makes an encoder's output a pure function of its input, which is what the conformance vectors
(:mod:`ldp.conformance`) give clients in other languages; replayed, it checks that they draw in the same order.
Re-exported by :mod:`ldp.randomness`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ldp.errors import ReplayError
from ldp.randomness.base import RandomSource

__all__ = ["Draw", "RecordingSource", "ReplaySource", "ReplayError"]

Draw = tuple[int, int]
"""One ``randbits(k)`` call: ``(k, value)`` with ``0 <= value < 2**k``."""


class RecordingSource(RandomSource):
    """Draws from ``inner`` (through its ``randbits``, so with the reference algorithms of :class:`RandomSource`
    for the composite draws, whatever fast paths ``inner`` has) and records each call in :attr:`draws`.
    ``randbits(0)`` draws nothing and is not recorded."""

    def __init__(self, inner: RandomSource) -> None:
        self._inner = inner
        self.draws: list[Draw] = []

    def randbits(self, k: int) -> int:
        if k <= 0:
            return 0
        value = self._inner.randbits(k)
        self.draws.append((k, value))
        return value


class ReplaySource(RandomSource):
    """Returns the recorded ``draws`` in order; a call asking for another number of bits than the next record, or
    one past the end, raises :class:`ReplayError` naming the position. :meth:`remaining` says how many records
    were not consumed (a replay that leaves some drew less than the recording did)."""

    def __init__(self, draws: Iterable[Sequence[int]]) -> None:
        self._draws: list[Draw] = []
        for i, item in enumerate(draws):
            k, value = item
            if not (type(k) is int and k > 0 and type(value) is int and 0 <= value < 1 << k):
                raise ValueError(f"draw {i}: expected (k >= 1, value in [0, 2**k)), got {tuple(item)!r}")
            self._draws.append((k, value))
        self._next = 0

    def randbits(self, k: int) -> int:
        if k <= 0:
            return 0
        i = self._next
        if i >= len(self._draws):
            raise ReplayError(f"draw {i}: randbits({k}) asked past the end of the {len(self._draws)} recorded draws")
        want, value = self._draws[i]
        if want != k:
            raise ReplayError(f"draw {i}: randbits({k}) asked where the recording has randbits({want})")
        self._next = i + 1
        return value

    def remaining(self) -> int:
        """Recorded draws not consumed yet."""
        return len(self._draws) - self._next
