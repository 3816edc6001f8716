"""RAPPOR's hashing: the Bloom filter of a value in a cohort (MurmurHash3 of ``uint32_BE(cohort) || value``, or MD5
in Google mode: :func:`bloom_bits`, :func:`bloom_filter`) and Google's PRR masks (HMAC-SHA256 of the secret and
the filter: :func:`google_prr_masks`). Re-exported by :mod:`ldp.encoders.rappor`."""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from ldp.hashing import buckets, md5_buckets, namespaced

if TYPE_CHECKING:
    from ldp.encoders.rappor import RapporParams

__all__ = ["bloom_bits", "bloom_filter", "google_prr_masks"]


def bloom_bits(params: RapporParams, value: str | bytes, cohort: int) -> tuple[int, ...]:
    """The ``h`` Bloom bit indices of ``value`` in ``cohort`` (repeats when hashes collide)."""
    data = namespaced(cohort, value)
    if params.mode == "google":
        return tuple(md5_buckets(data, params.num_bloombits, params.num_hashes))
    return tuple(buckets(data, params.num_bloombits, range(params.num_hashes)))


def bloom_filter(params: RapporParams, value: str | bytes, cohort: int) -> int:
    """The Bloom filter as an int: bit ``i`` set iff some hash of ``value`` in ``cohort`` is ``i``."""
    bloom = 0
    for i in bloom_bits(params, value, cohort):
        bloom |= 1 << i
    return bloom


def google_prr_masks(secret: bytes, message: bytes, f: float, k: int) -> tuple[int, int]:
    """Google's ``get_prr_masks``: ``D = HMAC-SHA256(secret, message)``; for bit ``i < k``, the fair
    coin is bit 0 of ``D[i]`` and the f-mask is ``(D[i] >> 1) < 128 f`` (so f is effectively
    ``ceil(128 f)/128``). Returns ``(uniform, fmask)`` as ints (bit i = Bloom index i)."""
    if k > 32:
        raise ValueError(f"Google's PRR draws one HMAC-SHA256 byte per bit: k <= 32, got {k}")
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    threshold = f * 128  # an exact float; compared with integers 0..127 as Google does
    uniform = sum((digest[i] & 1) << i for i in range(k))
    fmask = sum(((digest[i] >> 1) < threshold) << i for i in range(k))
    return uniform, fmask
