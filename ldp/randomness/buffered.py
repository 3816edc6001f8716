"""The client's default randomness: the OS CSPRNG, buffered (:class:`SystemRandomSource`).

:class:`BufferedRandomSource` reads a byte stream (``os.urandom``) 4 KiB at a time and implements
the draws of :class:`ldp.randomness.RandomSource` inline, with cached thresholds and bit-plane
schedules, under exactly the same laws (tested against the reference algorithms on the same
stream). Fork- and copy-safe: a forked child and a copied or unpickled source start with empty
buffers. Everything here is re-exported by :mod:`ldp.randomness`; import it from there.
"""

from __future__ import annotations

import os
import secrets
import struct
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ldp.randomness.base import PRECISION_BITS, RandomSource, bernoulli_threshold

_CACHE_LIMIT = 1024
_THRESHOLDS: dict[float, int] = {}
_SCHEDULES: dict[float, tuple[int, ...]] = {}


def _fast_threshold(p: Any) -> int:
    """``bernoulli_threshold(p)`` for a float ``p`` in ``(0, 1)`` (cached: 1,024 values at most), else
    0, also when it rounds to 0: the caller then takes the reference path, which validates ``p``."""
    if type(p) is not float:
        return 0
    t = _THRESHOLDS.get(p)
    if t is None:
        t = bernoulli_threshold(p) if 0.0 < p < 1.0 else 0  # floor(p 2^64) < 2^64 for p < 1
        if t and len(_THRESHOLDS) < _CACHE_LIMIT:
            _THRESHOLDS[p] = t
    return t


def _schedule(p: Any) -> tuple[int, ...]:
    """The bits of ``bernoulli_threshold(p)`` from plane 63 down to its lowest set bit, the planes
    :func:`bitsliced_below` visits at most; empty where :func:`_fast_threshold` gives 0."""
    sched = _SCHEDULES.get(p) if type(p) is float else None
    if sched is None:
        t = _fast_threshold(p)
        low = (t & -t).bit_length() - 1
        sched = tuple((t >> plane) & 1 for plane in range(PRECISION_BITS - 1, low - 1, -1)) if t else ()
        if t and len(_SCHEDULES) < _CACHE_LIMIT:
            _SCHEDULES[p] = sched
    return sched


class BufferedRandomSource(RandomSource):
    """Draws from a byte stream ``read(n)`` (e.g. ``os.urandom``), read ``chunk`` bytes at a time.

    The law: :meth:`randbits` ``(k)`` for ``1 <= k <= 64`` is the next 64-bit word of the *word
    pool* (8 bytes, little-endian) reduced to its low ``k`` bits; for ``k > 64``, the next
    ``ceil(k/8)`` bytes of the *byte pool*, little-endian, low ``k`` bits. A pool that runs short
    is refilled with ``read(chunk)`` (the byte pool keeps its unread tail in front); every byte read
    goes to one draw at most. :meth:`bernoulli`, :meth:`bernoulli_bits` and :meth:`randbelow` are
    the base class's algorithms over these draws, inlined, with thresholds and plane schedules
    cached per ``p``: the same stream gives the same results and reads (a differential test).

    Threads: a word is taken by one C-level ``next()`` on a tuple iterator, atomic under the GIL,
    so no word goes to two draws; the byte pool is read under a lock.
    """

    def __init__(self, read: Callable[[int], bytes], chunk: int = 4096) -> None:
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0 or chunk % 8:
            raise ValueError(f"chunk must be a positive multiple of 8 bytes, got {chunk!r}")
        self._read, self._chunk = read, chunk
        self._unpack = struct.Struct(f"<{chunk // 8}Q").unpack
        self._drop_buffers()

    def _drop_buffers(self) -> None:
        self._words: Iterator[int] = iter(())
        self._bytes, self._offset, self._lock = b"", 0, threading.Lock()

    def _refill_word(self) -> int:
        """The first word of a fresh word pool (called when the pool is empty)."""
        words = iter(self._unpack(self._read(self._chunk)))
        self._words = words
        return next(words)

    def _refilled(self, buf: bytes, off: int, nbytes: int) -> bytes:
        """The byte pool's unread tail ``buf[off:]`` then a fresh read: at least ``nbytes`` (lock held)."""
        return buf[off:] + self._read(max(self._chunk, nbytes))

    def randbits(self, k: int) -> int:
        if k <= 0:
            return 0
        if k <= 64:
            w = next(self._words, None)
            return (self._refill_word() if w is None else w) & ((1 << k) - 1)
        nbytes = (k + 7) >> 3
        with self._lock:
            buf, off = self._bytes, self._offset
            if off + nbytes > len(buf):
                buf, off = self._refilled(buf, off, nbytes), 0
            self._bytes, self._offset = buf, off + nbytes
        return int.from_bytes(buf[off:off + nbytes], "little") & ((1 << k) - 1)

    def bernoulli(self, p: float) -> bool:
        t = _THRESHOLDS.get(p) if type(p) is float else None
        if t is None:
            t = _fast_threshold(p)
        if not t:
            return super().bernoulli(p)  # validates; p in {0, 1} (or below 2^-64) draws nothing
        w = next(self._words, None)
        return (self._refill_word() if w is None else w) < t

    def bernoulli_bits(self, p: float, k: int) -> int:
        """:func:`bitsliced_below` with the planes read straight from a pool (the same draws).

        The plane loop is written out twice, for words and for wide planes: a call per plane
        would cost more than the plane itself."""
        sched = _schedule(p)
        if not sched or type(k) is not int or k <= 0:
            return super().bernoulli_bits(p, k)  # validates; draws nothing at p in {0, 1} or k = 0
        below, tied = 0, (1 << k) - 1  # ``tied & r`` drops a plane's bits above k: no mask needed
        if k <= 64:
            words = self._words
            for bit in sched:
                r = next(words, None)
                if r is None:
                    r, words = self._refill_word(), self._words
                kept = tied & r  # the lanes whose bit equals the threshold's 1 stay tied
                if bit:
                    below |= tied ^ kept
                    tied = kept
                else:
                    tied ^= kept
                if not tied:
                    break
            return below
        nbytes, from_bytes = (k + 7) >> 3, int.from_bytes
        with self._lock:
            buf, off = self._bytes, self._offset
            try:
                for bit in sched:
                    if off + nbytes > len(buf):
                        buf, off = self._refilled(buf, off, nbytes), 0
                    r = from_bytes(buf[off:off + nbytes], "little")
                    off += nbytes
                    kept = tied & r
                    if bit:
                        below |= tied ^ kept
                        tied = kept
                    else:
                        tied ^= kept
                    if not tied:
                        break
            finally:  # what was read stays consumed, even if a read fails
                self._bytes, self._offset = buf, off
        return below

    def randbelow(self, n: int) -> int:
        if type(n) is not int or n <= 1 or n > 1 << 64:
            return super().randbelow(n)  # validates; n = 1 draws nothing; wide n from the byte pool
        mask = (1 << (n - 1).bit_length()) - 1
        while True:
            w = next(self._words, None)
            r = (self._refill_word() if w is None else w) & mask
            if r < n:
                return r

    def subset_mask(self, n: int, k: int) -> int:
        """Floyd's algorithm with :meth:`randbelow` inlined (the same words, in the same order, as the base
        class's) and membership kept in a byte array: a third less time per element than the reference."""
        if type(n) is not int or type(k) is not int or not 0 <= k <= n or n > 1 << 64:
            return super().subset_mask(n, k)  # validates
        if n >= 64:
            return self._wide_subset_mask(n, k)
        words, refill = self._words, self._refill_word
        seen, mask = bytearray(n), 0
        for j in range(n - k, n):
            t = 0
            if j:  # randbelow(j + 1); randbelow(1) draws nothing
                below = (1 << j.bit_length()) - 1
                while True:
                    w = next(words, None)
                    if w is None:
                        w, words = refill(), self._words
                    t = w & below
                    if t <= j:
                        break
            if seen[t]:
                t = j
            seen[t] = 1
            mask |= 1 << t
        return mask

    def _wide_subset_mask(self, n: int, k: int) -> int:
        """:meth:`subset_mask` for ``n >= 64``, the same words in the same order: membership as ASCII digits in a
        bytearray read once at the end as a base-2 int (no ``n``-bit int made per element), and the rejection mask
        fixed over each run of ``j`` of one bit length (a third less time at n = 1023, k = 275)."""
        words, refill = self._words, self._refill_word
        seen, j = bytearray(b"0") * n, n - k
        if j == 0 and k:  # randbelow(1) draws nothing: the first element is 0
            seen[0], j = 49, 1
        while j < n:
            below = (1 << j.bit_length()) - 1
            stop = min(n, below + 1)
            for j in range(j, stop):  # noqa: B020 - the run continues from j; j is reset to stop below
                while True:
                    w = next(words, None)
                    if w is None:
                        w, words = refill(), self._words
                    if w & below <= j:
                        break
                t = w & below
                seen[j if seen[t] == 49 else t] = 49  # 49: b"1"
            j = stop
        seen.reverse()
        return int(seen, 2)


class UnbufferedSystemRandomSource(RandomSource):
    """The OS CSPRNG read afresh for every draw (``secrets``): the reference that
    :class:`SystemRandomSource` buffers, and the default on free-threaded interpreters."""

    def randbits(self, k: int) -> int:
        return secrets.randbits(k) if k > 0 else 0

    def token_bytes(self, n: int) -> bytes:
        return secrets.token_bytes(n)

    def __repr__(self) -> str:
        return "UnbufferedSystemRandomSource()"


class SystemRandomSource(BufferedRandomSource):
    """The operating system's CSPRNG (``os.urandom``), read 4 KiB at a time: the default for every client.

    Fork-safe: in a child made by ``os.fork`` (or ``multiprocessing``'s fork) every live instance
    drops its buffers before any draw (``os.register_at_fork``), so parent and child never share
    noise; a copy or a pickled source starts empty too. Thread-safe: see :class:`BufferedRandomSource` (on an
    interpreter without the GIL the default client source is :class:`UnbufferedSystemRandomSource` instead).
    """

    def __init__(self) -> None:
        super().__init__(os.urandom)
        _OS_SOURCES.add(self)

    def token_bytes(self, n: int) -> bytes:
        return secrets.token_bytes(n)  # client secrets straight from the OS, never from a buffer

    def __reduce__(self) -> tuple[type, tuple[()]]:
        """A copy or an unpickled source starts empty: two sources never hold the same bytes."""
        return SystemRandomSource, ()

    def __repr__(self) -> str:
        return "SystemRandomSource()"


_OS_SOURCES: weakref.WeakSet[BufferedRandomSource] = weakref.WeakSet()


def _forget_buffers_after_fork() -> None:
    """In a forked child: drop every OS-backed buffer (the parent may draw the same bytes)."""
    for src in list(_OS_SOURCES):
        src._drop_buffers()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_buffers_after_fork)
