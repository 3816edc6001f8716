"""The one hash family shared by every encoder and decoder.

Family (documented byte for byte in ``docs/hashing.md``):

* a value becomes bytes by :func:`value_bytes`: ``str`` -> its UTF-8 encoding (strict: a lone
  surrogate is a ``ValueError``), ``bytes``/``bytearray`` -> the bytes themselves; any other
  type is a ``TypeError``;
* hash function ``j`` of the family is MurmurHash3 x86 32-bit of those bytes with
  ``seed = j`` (an unsigned 32-bit integer), read as an unsigned integer in ``[0, 2**32)``;
* a bucket in ``[0, m)`` is ``hash mod m`` (:func:`bucket`). For ``m`` not a power of two the
  modulo bias is below ``m / 2**32`` (e.g. < 2.4e-7 for m = 1000; none for powers of two);
* protocols that namespace their hashes (RAPPOR's cohorts) prepend ``uint32_BE(namespace)``
  to the value bytes (:func:`namespaced`), as Google's RAPPOR prepends the cohort;
* RAPPOR's Google-compatible mode uses Google's own family instead (:func:`md5_buckets`):
  bucket ``j`` is byte ``j`` of ``MD5(bytes)`` mod ``m`` (``j < 16``).

Never use Python's built-in ``hash()``: it is salted per process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import mmh3

from ldp.errors import RefusalTypeError, RefusalValueError, kind_of

__all__ = ["value_bytes", "hash32", "bucket", "buckets", "bucket_of_bytes", "namespaced", "md5_buckets", "MAX_SEED"]

MAX_SEED = 2**32 - 1
"""Largest hash-function index (MurmurHash3's seed is an unsigned 32-bit integer)."""

Value = str | bytes | bytearray


def value_bytes(value: Value) -> bytes:
    """Bytes that are hashed for ``value``: UTF-8 for ``str``, raw for ``bytes``/``bytearray``."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates have no UTF-8 form
            raise RefusalValueError(f"value is not encodable as UTF-8: {exc}", "not_encodable",
                                    encoding="utf-8") from None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise RefusalTypeError(f"values to hash must be str or bytes (or bytearray), got {type(value).__name__}",
                           "value_type", expected="string_or_bytes", got=kind_of(value))


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RefusalTypeError(f"hash index must be an int, got {type(seed).__name__}", "param_type", param="seed",
                               expected="int", got=kind_of(seed))
    if not 0 <= seed <= MAX_SEED:
        raise RefusalValueError(f"hash index must be in [0, 2**32), got {seed}", "param_range", param="seed",
                                got=seed, min=0, max=MAX_SEED)
    return seed


def hash32(value: Value, seed: int = 0) -> int:
    """MurmurHash3_x86_32 of :func:`value_bytes` ``(value)`` with ``seed``, unsigned: ``[0, 2**32)``."""
    return mmh3.hash(value_bytes(value), _check_seed(seed), signed=False)


def _check_width(m: int) -> int:
    if isinstance(m, bool) or not isinstance(m, int):
        raise RefusalTypeError(f"number of buckets must be an int, got {type(m).__name__}", "param_type", param="m",
                               expected="int", got=kind_of(m))
    if not 1 <= m <= 2**32:
        raise RefusalValueError(f"number of buckets must be in [1, 2**32], got {m}", "param_range", param="m",
                                got=m, min=1, max=2**32)
    return m


def bucket(value: Value, m: int, seed: int = 0) -> int:
    """Bucket of ``value`` under hash function ``seed``: ``hash32(value, seed) mod m``."""
    return hash32(value, seed) % _check_width(m)


def buckets(value: Value, m: int, seeds: Iterable[int]) -> list[int]:
    """Buckets of one value under several hash functions (the bytes are made once; a ``range`` of seeds within
    ``[0, MAX_SEED]`` is checked by its ends)."""
    data = value_bytes(value)
    m = _check_width(m)
    if isinstance(seeds, range) and seeds.step == 1 and seeds and 0 <= seeds[0] and seeds[-1] <= MAX_SEED:
        return [mmh3.hash(data, s, signed=False) % m for s in seeds]
    return [mmh3.hash(data, _check_seed(s), signed=False) % m for s in seeds]


def bucket_of_bytes(data: bytes, m: int, seed: int) -> int:
    """:func:`bucket` of bytes already made by :func:`value_bytes`, for a width ``m`` and ``seed``
    already validated (the encoders' hot path: parameters are checked once, when they are made)."""
    return mmh3.hash(data, seed, signed=False) % m


def namespaced(namespace: int, value: Value) -> bytes:
    """``uint32_BE(namespace) || value_bytes(value)``: the bytes hashed within a namespace (cohort)."""
    if isinstance(namespace, bool) or not isinstance(namespace, int):
        raise RefusalTypeError(f"namespace must be an int, got {type(namespace).__name__}", "param_type",
                               param="namespace", expected="int", got=kind_of(namespace))
    if not 0 <= namespace <= MAX_SEED:
        raise RefusalValueError(f"namespace must be in [0, 2**32), got {namespace}", "param_range",
                                param="namespace", got=namespace, min=0, max=MAX_SEED)
    return namespace.to_bytes(4, "big") + value_bytes(value)


def md5_buckets(data: bytes, m: int, count: int) -> list[int]:
    """Google RAPPOR's Bloom hashing: bucket ``j`` = byte ``j`` of ``MD5(data)`` mod ``m``, ``j < count <= 16``.

    One byte per hash, so ``m <= 256`` is needed for every bucket to be reachable, and there is
    modulo bias unless ``m`` divides 256 (as in google/rappor's ``get_bloom_bits``)."""
    if not 1 <= count <= 16:
        raise RefusalValueError(f"MD5 gives at most 16 one-byte hashes, asked for {count}", "param_range",
                                param="count", got=count, min=1, max=16)
    digest = hashlib.md5(bytes(data)).digest()
    m = _check_width(m)
    return [digest[j] % m for j in range(count)]
