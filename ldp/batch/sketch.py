"""Batch kernels for CMS and HCMS: exactly the client mechanisms, vectorized (no loop per report).

* CMS: ``j`` uniform in ``[k]``; the one-hot at ``h_j(value)`` XOR independent Bernoulli flips of
  probability ``1/(1+e^{ε/2})`` (:func:`~ldp.batch.bits.packed_uniform`, the client's 2^-64 resolution);
* HCMS: ``j``, ``l`` uniform; the bit ``H[h_j(value), l] > 0`` flipped with probability ``1/(1+e^ε)``.

Candidates are hashed once per batch with the vectorized MurmurHash3 (:mod:`ldp.batch.murmur`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.batch import values_and_candidates
from ldp.batch.bits import packed_uniform
from ldp.batch.murmur import bucket_table
from ldp.hashing import buckets
from ldp.randomness import as_generator, bernoulli_threshold

if TYPE_CHECKING:
    from ldp.encoders.cms import CmsParams, SketchParams
    from ldp.encoders.hcms import HcmsParams

__all__ = ["sketch_buckets", "cms_encode_batch", "hcms_encode_batch", "hadamard_sign"]


_MEMO_CELLS = 1 << 14
"""The largest table (``d·k`` buckets) :func:`sketch_buckets` remembers: small candidate lists hashed again and
again (a simulation hashes its few candidates when it draws a collection and again when it estimates them)."""


def sketch_buckets(params: SketchParams, candidates: Sequence[str | bytes]) -> np.ndarray:
    """``(d, k)`` buckets ``h_j(candidate)`` of every candidate under every hash function (a small table is
    remembered, :data:`_MEMO_CELLS`, for the next call with the same hash functions and candidates: a copy of it
    is returned)."""
    if len(candidates) * params.num_hashes <= _MEMO_CELLS:
        try:
            key = tuple(candidates)
            hash(key)
        except TypeError:  # not strings or bytes: bucket_table says what is wrong
            pass
        else:
            return _remembered_buckets(params.hash_seed, params.num_hashes, params.width, key).copy()
    return _buckets(params.hash_seed, params.num_hashes, params.width, candidates)


_SCALAR_CELLS = 64
"""Tables of at most this many buckets are hashed one bucket at a time by the client's own hashing
(:func:`ldp.hashing.buckets`): below it the vectorized MurmurHash3's set-up costs more than the hashes."""


def _buckets(hash_seed: int, num_hashes: int, width: int, candidates: Sequence[str | bytes]) -> np.ndarray:
    if len(candidates) * num_hashes <= _SCALAR_CELLS:
        seeds = range(hash_seed, hash_seed + num_hashes)
        rows = [buckets(c, width, seeds) for c in candidates]
        return np.array(rows, dtype=np.uint32).reshape(len(candidates), num_hashes)
    return bucket_table(candidates, width, np.arange(hash_seed, hash_seed + num_hashes, dtype=np.uint64))


@functools.lru_cache(maxsize=64)
def _remembered_buckets(hash_seed: int, num_hashes: int, width: int, candidates: tuple[str | bytes, ...]) -> np.ndarray:
    table = _buckets(hash_seed, num_hashes, width, candidates)
    table.flags.writeable = False
    return table


def hadamard_sign(a: np.ndarray, row: np.ndarray) -> np.ndarray:
    """``H[a, row] > 0`` elementwise: the parity of ``popcount(a & row)`` is even."""
    x = (np.asarray(a, np.uint64) & np.asarray(row, np.uint64))
    x ^= x >> np.uint64(32)
    x ^= x >> np.uint64(16)
    x ^= x >> np.uint64(8)
    x ^= x >> np.uint64(4)
    x ^= x >> np.uint64(2)
    x ^= x >> np.uint64(1)
    return (x & np.uint64(1)) == 0


def _rows_and_buckets(params: SketchParams, values: Any, gen: np.random.Generator,
                      candidates: Sequence[str | bytes] | None) -> tuple[np.ndarray, np.ndarray]:
    idx, cands = values_and_candidates(values, candidates)
    k = params.num_hashes
    j = gen.integers(0, k, size=idx.size, dtype=np.int64)
    table = sketch_buckets(params, cands)
    return j.astype(np.min_scalar_type(k - 1)), table[idx, j]


def cms_encode_batch(params: CmsParams, values: Any, rng: Any = None, *,
                     candidates: Sequence[str | bytes] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(hash index column, packed bits (n, ceil(m/8)))`` of CMS reports."""
    gen = as_generator(rng)
    j, b = _rows_and_buckets(params, values, gen, candidates)
    m = params.width
    nbytes = (m + 7) // 8
    bits = packed_uniform(gen, (j.size, nbytes), params.flip_probability)
    if m % 8:
        bits[:, -1] &= np.uint8((1 << (m % 8)) - 1)
    rows = np.arange(j.size)
    bits[rows, (b >> 3).astype(np.int64)] ^= (np.uint8(1) << (b & 7).astype(np.uint8))
    return j, bits


def hcms_encode_batch(params: HcmsParams, values: Any, rng: Any = None, *,
                      candidates: Sequence[str | bytes] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hash index, Hadamard row, bit)`` columns of HCMS reports."""
    gen = as_generator(rng)
    j, b = _rows_and_buckets(params, values, gen, candidates)
    m = params.width
    row = gen.integers(0, m, size=j.size, dtype=np.int64).astype(np.min_scalar_type(m - 1))
    sign = hadamard_sign(b, row)
    threshold = bernoulli_threshold(params.flip_probability)  # flip iff a uniform 64-bit word is below it
    flip = gen.integers(0, (1 << 64) - 1, j.size, dtype=np.uint64, endpoint=True) < np.uint64(threshold)
    return j, row, (sign ^ flip).astype(np.uint8)
