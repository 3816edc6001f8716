"""Batch kernels for RAPPOR: Bloom tables of candidate strings, and vectorized reports.

A report of a client's *first* report of a value has independent bits with
``Pr[S_i = 1] = q*`` where the Bloom bit is 1 and ``p*`` where it is 0 (the PRR and IRR coins
of a bit combine into one Bernoulli), so a batch of reports from distinct fresh clients is a
gather of Bloom filters and one :func:`~ldp.batch.bits.packed_bernoulli` call: no Python loop
per report. (Repeated reports by one client share its PRR; simulate those per client with
:class:`~ldp.encoders.rappor.RapporEncoder`.)
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.batch import values_and_candidates
from ldp.batch.bits import packed_bernoulli, row_padding_mask
from ldp.batch.murmur import namespaced_bucket_table
from ldp.hashing import value_bytes
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.rappor import RapporParams

__all__ = ["bloom_index_table", "bloom_table", "rappor_encode_batch"]


_MEMO_CELLS = 1 << 15
"""The largest table (``d·m·h`` indices) :func:`bloom_index_table` and :func:`bloom_table` remember: a few candidates
hashed again and again (a simulation hashes them in every collection it draws)."""


def _memo_key(params: RapporParams, candidates: Sequence[str | bytes]) -> tuple[Any, ...] | None:
    """What a table of ``candidates`` depends on, or ``None`` when it is too large to remember (or they are
    not hashable: the hashing then says what is wrong)."""
    if len(candidates) * params.num_cohorts * params.num_hashes > _MEMO_CELLS:
        return None
    key = (*_memo_key_of(params), tuple(candidates))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def bloom_index_table(params: RapporParams, candidates: Sequence[str | bytes]) -> np.ndarray:
    """``int64`` array ``(d, m, h)``: hash ``j`` of candidate ``v`` in cohort ``c`` is bit ``[v, c, j]``,
    equal to :func:`~ldp.encoders.rappor.bloom_bits` ``(params, v, c)[j]``.

    ``ldp`` mode: ``bucket(namespaced(c, v), k, seed=j)``, vectorized over every candidate, cohort
    and hash function (:func:`~ldp.batch.murmur.namespaced_bucket_table`). Google mode: byte ``j``
    of ``MD5(namespaced(c, v))`` mod ``k`` (one ``hashlib`` call per candidate and cohort). A small table is
    remembered (:data:`_MEMO_CELLS`; a copy returned)."""
    key = _memo_key(params, candidates)
    return _bloom_index(*_memo_key_of(params), candidates) if key is None else _remembered_index(key).copy()


def _memo_key_of(params: RapporParams) -> tuple[str, int, int, int]:
    """What a table depends on besides the candidates: the hashing mode, ``m``, ``h``, ``k``."""
    return params.mode, params.num_cohorts, params.num_hashes, params.num_bloombits


def _bloom_index(mode: str, m: int, h: int, k: int, candidates: Sequence[str | bytes]) -> np.ndarray:
    if mode == "google":
        prefixes = [c.to_bytes(4, "big") for c in range(m)]
        digests = b"".join(hashlib.md5(p + vb).digest() for vb in map(value_bytes, candidates) for p in prefixes)
        table = np.frombuffer(digests, dtype=np.uint8).reshape(len(candidates), m, 16)[:, :, :h]
        return table.astype(np.int64) % k
    return namespaced_bucket_table(candidates, k, np.arange(m), np.arange(h)).astype(np.int64)


def _bloom(k: int, idx: np.ndarray) -> np.ndarray:
    d, m, h = idx.shape
    bits = np.zeros((d, m, k), dtype=bool)
    np.put_along_axis(bits, idx, True, axis=2)
    return np.packbits(bits, axis=2, bitorder="little")


@functools.lru_cache(maxsize=32)
def _remembered_index(key: tuple[Any, ...]) -> np.ndarray:
    """The memo of :func:`bloom_index_table` (``key``: :func:`_memo_key`)."""
    table = _bloom_index(*key)
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=32)
def _remembered_bloom(key: tuple[Any, ...]) -> np.ndarray:
    """The memo of :func:`bloom_table`."""
    table = _bloom(key[3], _remembered_index(key))
    table.flags.writeable = False
    return table


def bloom_table(params: RapporParams, candidates: Sequence[str | bytes]) -> np.ndarray:
    """Packed Bloom filters ``uint8 (d, m, ceil(k/8))``, bit ``i`` little-endian within bytes (a small table
    remembered, as :func:`bloom_index_table`'s)."""
    key = _memo_key(params, candidates)
    if key is None:
        return _bloom(params.num_bloombits, _bloom_index(*_memo_key_of(params), candidates))
    return _remembered_bloom(key).copy()


def rappor_encode_batch(params: RapporParams, values: Any, rng: Any = None, *,
                        candidates: Sequence[str | bytes] | None = None, cohorts: Any = None,
                        table: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(cohort column, packed bits (n, ceil(k/8)))`` for one report per row from fresh clients.

    ``values``: indices into ``candidates`` or the strings; ``cohorts``: per-row cohorts, or
    ``None`` for uniform draws; ``table``: a precomputed :func:`bloom_table` of ``candidates``."""
    gen = as_generator(rng)
    idx, cands = values_and_candidates(values, candidates)
    m = params.num_cohorts
    ctype = np.min_scalar_type(m - 1)
    if cohorts is None:
        coh = gen.integers(0, m, size=idx.size, dtype=np.int64).astype(ctype)
    else:
        coh = np.broadcast_to(np.asarray(cohorts), idx.shape)
        if coh.size and (coh.dtype.kind not in "iu" or coh.min() < 0 or coh.max() >= m):
            raise ValueError(f"cohorts must be integers in [0, {m})")
        coh = coh.astype(ctype)
    if table is None:
        table = bloom_table(params, cands)
    blooms = table[idx, coh]
    bits = packed_bernoulli(gen, blooms, params.p_star, params.q_star)
    bits &= row_padding_mask(params.num_bloombits)
    return coh, bits
