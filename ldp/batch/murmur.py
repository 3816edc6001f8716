"""MurmurHash3_x86_32 vectorized over many keys and many seeds (numpy), equal to ``mmh3.hash``.

Servers hash every candidate under every hash function of a sketch (e.g. 100,000 candidates ×
256 functions); one ``mmh3`` call each would take tens of seconds. The algorithm is the one in
``docs/hashing.md``: keys are zero-padded into a ``(d, L)`` byte matrix, their 4-byte blocks are
mixed once per key, and only the state ``h`` (one per key and seed) is updated per block.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ldp.hashing import value_bytes

__all__ = ["murmur3_32", "bucket_table"]

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k(k1: np.ndarray) -> np.ndarray:
    k1 = k1 * _C1
    return _rotl(k1, 15) * _C2


def _fmix(h: np.ndarray) -> np.ndarray:
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def murmur3_32(keys: Sequence[bytes], seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """``uint32 (len(keys), len(seeds))``: ``mmh3.hash(key, seed, signed=False)`` for every pair."""
    seeds = np.asarray(seeds, dtype=np.uint32)
    d = len(keys)
    lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=d)
    width = int(lengths.max(initial=0))
    padded = np.zeros((d, (width + 3) // 4 * 4 + 4), dtype=np.uint8)
    flat = np.frombuffer(b"".join(keys), dtype=np.uint8)
    rows = np.repeat(np.arange(d), lengths)
    cols = np.arange(flat.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    padded[rows, cols] = flat
    words = padded.view("<u4")  # (d, blocks+1) little-endian 32-bit blocks
    nblocks = lengths // 4
    h = np.broadcast_to(seeds, (d, seeds.size)).copy()
    with np.errstate(over="ignore"):
        for b in range(int(nblocks.max(initial=0))):
            active = nblocks > b
            k1 = _mix_k(words[:, b].astype(np.uint32))
            if active.all():  # the common case: update in place, no masked copies
                h ^= k1[:, None]
                rot = h >> np.uint32(19)
                h <<= np.uint32(13)
                h |= rot
                h *= np.uint32(5)
                h += np.uint32(0xE6546B64)
            else:
                hb = h[active] ^ k1[active, None]
                h[active] = _rotl(hb, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        tail = lengths % 4
        has_tail = tail > 0
        if has_tail.any():
            last = words[np.arange(d), nblocks].astype(np.uint32)  # tail bytes, zero-padded
            mask = (np.uint32(1) << (8 * tail).astype(np.uint32)) - np.uint32(1)
            k1 = _mix_k(last & mask)
            h[has_tail] ^= k1[has_tail, None]
        h ^= lengths.astype(np.uint32)[:, None]
        return _fmix(h)


def bucket_table(values: Sequence[str | bytes], width: int, seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """``(len(values), len(seeds))`` buckets ``hash32(value, seed) mod width`` (:func:`ldp.hashing.bucket`)."""
    keys = [value_bytes(v) for v in values]
    out = np.empty((len(keys), len(seeds)), dtype=np.uint32)
    step = max(1, (1 << 18) // max(len(seeds), 1))  # bounded temporaries: ~4M hashes per chunk
    for start in range(0, len(keys), step):
        hashes = murmur3_32(keys[start:start + step], seeds)
        if width & (width - 1) == 0:
            hashes &= np.uint32(width - 1)
        else:
            hashes %= np.uint32(width)
        out[start:start + step] = hashes
    return out
