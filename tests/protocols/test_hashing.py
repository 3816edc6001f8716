"""The hash family: an independent MurmurHash3 reference, published vectors, and the docs' table."""

import re

import pytest
from hypothesis import given, settings, strategies as st
from support import ROOT

from ldp.hashing import bucket, buckets, hash32, namespaced, value_bytes

DOCS = ROOT / "docs" / "hashing.md"


def murmur3_x86_32(data: bytes, seed: int) -> int:
    """Straight transcription of Appleby's MurmurHash3_x86_32, for cross-checking mmh3."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & mask  # noqa: E731
    h = seed & mask
    nblocks = len(data) // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = rotl((k * c1) & mask, 15) * c2 & mask
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & mask
    tail = data[4 * nblocks:]
    k = 0
    for j in reversed(range(len(tail))):
        k = (k << 8) | tail[j]
    if tail:
        h ^= rotl((k * c1) & mask, 15) * c2 & mask
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)


# Published MurmurHash3_x86_32 vectors (SMHasher verification values and widely quoted examples).
PUBLISHED = [
    (b"", 0, 0x00000000),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\xff\xff\xff\xff", 0, 0x76293B50),
    (b"!Ce\x87", 0, 0xF55B516B),
    (b"!Ce\x87", 0x5082EDEE, 0x2362F9DE),
    (b"!Ce", 0, 0x7E4A8634),
    (b"!C", 0, 0xA0F7B07A),
    (b"!", 0, 0x72661CF4),
    (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"hello", 0, 0x248BFA47),
    (b"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723),
]


@pytest.mark.parametrize("data, seed, expected", PUBLISHED)
def test_published_vectors(data, seed, expected):
    assert murmur3_x86_32(data, seed) == expected
    assert hash32(data, seed) == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 2**32 - 1))
def test_matches_reference_implementation(data, seed):
    assert hash32(data, seed) == murmur3_x86_32(data, seed)


def _docs_vectors():
    rows = re.findall(r"^\| (-|[0-9a-f]+) \| (\d+) \| 0x([0-9a-f]{8}) \| (\d+) \|\s*$", DOCS.read_text(), re.M)
    return [(b"" if h == "-" else bytes.fromhex(h), int(s), int(x, 16), int(b)) for h, s, x, b in rows]


def test_docs_vectors_match_code():
    vectors = _docs_vectors()
    assert len(vectors) >= 10, "docs/hashing.md must carry its test-vector table"
    for data, seed, expected, b1024 in vectors:
        assert murmur3_x86_32(data, seed) == expected
        assert hash32(data, seed) == expected
        assert bucket(data, 1024, seed) == b1024 == expected % 1024


def test_value_bytes_rules():
    assert value_bytes("héllo") == "héllo".encode()
    assert value_bytes(b"\x00\xff") == b"\x00\xff"
    assert value_bytes(bytearray(b"ab")) == b"ab"
    assert hash32("hello") == hash32(b"hello") == 0x248BFA47
    for bad in (3, 1.5, None, ["a"], True):
        with pytest.raises(TypeError, match="str or bytes"):
            value_bytes(bad)
    with pytest.raises(ValueError, match="UTF-8"):
        value_bytes("\ud800")


def test_seed_and_width_validation():
    with pytest.raises(ValueError, match="2\\*\\*32"):
        hash32("x", 2**32)
    with pytest.raises(ValueError):
        hash32("x", -1)
    with pytest.raises(TypeError):
        hash32("x", 1.0)
    with pytest.raises(ValueError, match="number of buckets"):
        bucket("x", 0)
    assert bucket("x", 2**32) == hash32("x")


def test_buckets_and_namespaces():
    assert buckets("foo", 37, [0, 1, 2]) == [hash32("foo", s) % 37 for s in range(3)]
    top = 2**32 - 1  # a range of seeds (checked by its ends) gives what its list gives, and refuses what it refuses
    for seeds in (range(3), range(top - 2, top + 1), range(5, 5), range(0, 9, 3), range(-1, 2),
                  range(top - 1, top + 2)):
        try:
            expected: object = buckets(b"foo", 37, list(seeds))
        except ValueError as exc:
            with pytest.raises(ValueError, match=re.escape(str(exc))):
                buckets(b"foo", 37, seeds)
        else:
            assert buckets(b"foo", 37, seeds) == expected
    assert namespaced(3, "foo") == b"\x00\x00\x00\x03foo"
    assert namespaced(0x01020304, b"x") == b"\x01\x02\x03\x04x"
    with pytest.raises(ValueError):
        namespaced(2**32, "x")
