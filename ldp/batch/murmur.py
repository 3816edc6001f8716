"""MurmurHash3_x86_32 vectorized over many keys and many seeds (numpy), equal to ``mmh3.hash``.

Servers hash every candidate under every hash function of a sketch (e.g. 100,000 candidates ×
256 functions), and RAPPOR hashes every candidate in every cohort; one ``mmh3`` call each would
take seconds. The algorithm is the one in ``docs/hashing.md``: keys are zero-padded into a
``(d, L)`` matrix of little-endian 32-bit blocks, each block is mixed once per key, and only the
state ``h`` (one per key and stream) is updated per block. Keys are processed longest first, so
the keys still in their body at block ``b`` are a prefix of the rows (no masks, no copies).

Namespaced keys ``uint32_BE(ns) || value`` (:func:`ldp.hashing.namespaced`) start with exactly one
block, so the state after it depends only on ``(ns, seed)``: :func:`namespaced_murmur3_32` mixes
it once per namespace and seed, then hashes each value's bytes once for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ldp.hashing import MAX_SEED, value_bytes

__all__ = ["murmur3_32", "namespaced_murmur3_32", "bucket_table", "namespaced_bucket_table"]

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_N1 = np.uint32(0xE6546B64)
_CHUNK = 1 << 18  # hash states per chunk (~1 MiB): bounded temporaries that stay in cache


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


def _as_uint32(values: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
    """1-D ``uint32`` array of ``values``, each checked to be in ``[0, 2**32)``."""
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise TypeError(f"{what} must be a 1-D sequence of integers")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > MAX_SEED):
        raise ValueError(f"{what} must be in [0, 2**32)")
    return arr.astype(np.uint32)


def _blocks(keys: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``(words, lengths)``: ``words[b, i]`` is block ``b`` of key ``i`` (little-endian, zero-padded,
    one all-padding block past the longest key), ``lengths`` the byte lengths (``int64``)."""
    d = len(keys)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=d)
    ncols = int(lengths.max(initial=0)) // 4 + 1
    padded = np.zeros((d, 4 * ncols), dtype=np.uint8)
    flat = np.frombuffer(b"".join(keys), dtype=np.uint8)
    rows = np.repeat(np.arange(d), lengths)
    cols = np.arange(flat.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    padded[rows, cols] = flat
    return np.ascontiguousarray(padded.view("<u4").astype(np.uint32).T), lengths


def _finish_keys(h: np.ndarray, keys: Sequence[bytes], extra_length: int) -> np.ndarray:
    """Run the body, tail and finalization of ``keys`` over the states ``h`` ``(len(keys), S)``.

    ``h`` holds each key's state after ``extra_length`` bytes already mixed (a whole number of
    blocks); the hashed input is those bytes followed by the key. Updated in place and returned."""
    words, lengths = _blocks(keys)
    nblocks = lengths // 4
    order = np.argsort(-nblocks, kind="stable")
    permuted = bool((np.diff(order) < 0).any())
    if permuted:  # longest first, so the keys still in their body are a prefix of the rows
        words, lengths, nblocks, h = words[:, order], lengths[order], nblocks[order], h[order]
    with np.errstate(over="ignore"):
        for b in range(int(nblocks.max(initial=0))):
            active = int(np.count_nonzero(nblocks > b))
            hb = h[:active]
            hb ^= _mix_k(words[b, :active])[:, None]
            rot = hb >> np.uint32(19)
            hb <<= np.uint32(13)
            hb |= rot
            hb *= np.uint32(5)
            hb += _N1
        # tail: the bytes past the last whole block, zero-padded (an all-zero block mixes to 0,
        # so keys without a tail are left unchanged, as the reference skips the step)
        h ^= _mix_k(words[nblocks, np.arange(lengths.size)])[:, None]
        h ^= (lengths + extra_length).astype(np.uint32)[:, None]
        _fmix(h)
    if permuted:
        out = np.empty_like(h)
        out[order] = h
        return out
    return h


def murmur3_32(keys: Sequence[bytes], seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """``uint32 (len(keys), len(seeds))``: ``mmh3.hash(key, seed, signed=False)`` for every pair."""
    seeds = _as_uint32(seeds, "seeds")
    h = np.broadcast_to(seeds, (len(keys), seeds.size)).copy()
    return _finish_keys(h, keys, 0)


def namespaced_murmur3_32(keys: Sequence[bytes], namespaces: Sequence[int] | np.ndarray,
                          seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """``uint32 (len(keys), len(namespaces), len(seeds))``: ``mmh3.hash(uint32_BE(ns) + key, seed,
    signed=False)`` for every key, namespace and seed (module docstring)."""
    ns, seeds = _as_uint32(namespaces, "namespaces"), _as_uint32(seeds, "seeds")
    with np.errstate(over="ignore"):
        block = _mix_k(ns.byteswap())  # uint32_BE(ns) read as a little-endian block
        h0 = seeds[None, :] ^ block[:, None]  # (namespaces, seeds)
        h0 = _rotl(h0, 13) * np.uint32(5) + _N1
    h = np.broadcast_to(h0.reshape(-1), (len(keys), h0.size)).copy()
    return _finish_keys(h, keys, 4).reshape(len(keys), ns.size, seeds.size)


def _reduce(hashes: np.ndarray, width: int) -> np.ndarray:
    """``hashes mod width`` in place (:func:`ldp.hashing.bucket`; ``1 <= width <= 2**32``)."""
    if not 1 <= width <= 2**32:
        raise ValueError(f"number of buckets must be in [1, 2**32], got {width}")
    if width & (width - 1) == 0:
        hashes &= np.uint32(width - 1)
    else:
        hashes %= np.uint32(width)
    return hashes


def _step(streams: int) -> int:
    """Keys per chunk so that a chunk holds about ``_CHUNK`` hash states."""
    return max(1, _CHUNK // max(streams, 1))


def bucket_table(values: Sequence[str | bytes], width: int, seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """``(len(values), len(seeds))`` buckets ``hash32(value, seed) mod width`` (:func:`ldp.hashing.bucket`)."""
    keys = [value_bytes(v) for v in values]
    out = np.empty((len(keys), len(seeds)), dtype=np.uint32)
    step = _step(len(seeds))
    for start in range(0, len(keys), step):
        out[start:start + step] = _reduce(murmur3_32(keys[start:start + step], seeds), width)
    return out


def namespaced_bucket_table(values: Sequence[str | bytes], width: int, namespaces: Sequence[int] | np.ndarray,
                            seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """``uint32 (len(values), len(namespaces), len(seeds))``: ``bucket(namespaced(ns, value), width, seed)``
    (:func:`ldp.hashing.namespaced`, :func:`ldp.hashing.bucket`) for every value, namespace and seed."""
    keys = [value_bytes(v) for v in values]
    ns, seeds = np.asarray(namespaces), np.asarray(seeds)
    out = np.empty((len(keys), ns.size, seeds.size), dtype=np.uint32)
    step = _step(ns.size * seeds.size)
    for start in range(0, len(keys), step):
        out[start:start + step] = _reduce(namespaced_murmur3_32(keys[start:start + step], ns, seeds), width)
    return out
