"""``primitives.json``: the laws below every protocol, each as inputs, the stream drawn and the result.

Bernoulli thresholds and draws, the bit-sliced comparison, rejection sampling, secret bytes, the keyed (HMAC)
stream, MurmurHash3 and MD5 buckets, the metric-secret derivation, and the text forms a client must reproduce:
Python's float repr and canonical JSON (the fingerprints) and Python's ``repr`` of a string (error texts)."""

from __future__ import annotations

import math
import random
import struct
from typing import Any

from ldp.client.state import metric_secret
from ldp.hashing import hash32, md5_buckets, namespaced, value_bytes
from ldp.randomness import KeyedRandomSource, RecordingSource, SeededRandomSource, bernoulli_threshold
from ldp.reports import canonical_json

__all__ = ["primitives"]

_PROBABILITIES = [0.0, 1.0, 0.5, 0.25, 0.75, 0.1, 1 / 3, 0.9999999999999999, 2.0**-64, 2.0**-70, 5e-324, 1e-05,
                  0.2689414213699951, 0.7310585928655174, 0.01, 0.999]


def _recorded(label: str, draw: Any) -> tuple[Any, list[list[Any]]]:
    source = RecordingSource(SeededRandomSource(random.Random(f"ldp-conformance/primitives/{label}")))
    result = draw(source)
    return result, [[k, format(v, "x")] for k, v in source.draws]


def _draw_laws() -> dict[str, Any]:
    thresholds = [{"p": p, "threshold": format(bernoulli_threshold(p), "x")} for p in _PROBABILITIES]
    bern, bits, below, tokens = [], [], [], []
    for i, p in enumerate(_PROBABILITIES):
        for j in range(3):
            result, draws = _recorded(f"bernoulli/{i}/{j}", lambda s, p=p: s.bernoulli(p))
            bern.append({"p": p, "draws": draws, "result": result})
        for k in (1, 7, 64, 200):
            result, draws = _recorded(f"bits/{i}/{k}", lambda s, p=p, k=k: s.bernoulli_bits(p, k))
            bits.append({"p": p, "k": k, "draws": draws, "result": format(result, "x")})
    for n in (1, 2, 3, 5, 6, 7, 100, 1000, 2**32, 2**32 + 1, 2**53):
        for j in range(3):
            result, draws = _recorded(f"randbelow/{n}/{j}", lambda s, n=n: s.randbelow(n))
            below.append({"n": n, "draws": draws, "result": result})
    for n in (0, 1, 16, 32):
        result, draws = _recorded(f"token/{n}", lambda s, n=n: s.token_bytes(n))
        tokens.append({"n": n, "draws": draws, "result": result.hex()})
    return {"thresholds": thresholds, "bernoulli": bern, "bernoulli_bits": bits, "randbelow": below,
            "token_bytes": tokens}


def _keyed() -> list[dict[str, Any]]:
    out = []
    for key, message, calls in [(b"k", b"", [1, 8, 64, 3, 256, 300]), (bytes(range(70)), b"msg", [64] * 9),
                                (b"secret", "caf\u00e9".encode(), [13, 0, 5, 100])]:
        src = KeyedRandomSource(key, message)
        out.append({"key": key.hex(), "message": message.hex(),
                    "randbits": [[k, format(src.randbits(k), "x")] for k in calls]})
    src = KeyedRandomSource(b"secret", b"bits")
    out.append({"key": b"secret".hex(), "message": b"bits".hex(),
                "bernoulli_bits": [[0.5, 32, format(src.bernoulli_bits(0.5, 32), "x")],
                                   [0.25, 64, format(src.bernoulli_bits(0.25, 64), "x")]]})
    return out


def _hashes() -> dict[str, Any]:
    inputs = [b"", b"a", b"hello", "h\u00e9llo w\u00f6rld \u2713".encode(), bytes(range(37)), namespaced(3, "foo")]
    murmur = [{"data": d.hex(), "seed": s, "hash32": hash32(d, s)} for d in inputs for s in (0, 1, 100, 2**32 - 1)]
    md5 = [{"data": namespaced(c, v).hex(), "k": k, "h": h, "buckets": md5_buckets(namespaced(c, v), k, h)}
           for c, v, k, h in [(0, "foo", 16, 2), (3, "https://example.com/", 128, 4), (63, "v1", 32, 16)]]
    values = ["", "abc", "caf\u00e9", "\U0001f600"]
    return {"murmur3_x86_32": murmur, "md5_buckets": md5,
            "value_bytes": [{"value": v, "bytes": value_bytes(v).hex()} for v in values],
            "metric_secret": [{"device_secret": d.hex(), "metric": m, "secret": metric_secret(d, m).hex()}
                              for d, m in [(bytes(32), "m0"), (bytes(range(32)), "homepage")]]}


def _floats() -> list[dict[str, str]]:
    rnd = random.Random("ldp-conformance/floats")
    xs = [0.0, -0.0, 1.0, -1.5, 0.1, 1e-05, 0.0001, 1e16, 1e15, 123456789012345.6, 1.2345678901234568e17, 5e-324,
          2.2250738585072014e-308, 1.7976931348623157e308, 1 / 3, 2.0**53, 2.0**64, 100.0, 1e22, 1e21, 1.5e-07]
    xs += [float(10**e) for e in range(-8, 23)] + [10.0**e for e in range(-8, 23)]
    while len(xs) < 400:
        x = struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(x):
            xs.append(x)
    return [{"bits": struct.pack(">d", x).hex(), "repr": repr(x)} for x in xs]


def _texts() -> dict[str, Any]:
    strings = ["", "a", "it's", 'say "hi"', "both ' and \"", "tab\tnew\nline\r", "back\\slash", "caf\u00e9",
               "\x00\x07\x1f\x7f\x80\x9f\xa0\xad", "\u2028\u200b\ufeff", "\U0001f600", "\ud800", "\udfff x"]
    objects = [{"b": 1, "a": [1.0, 2, None, True, False]}, {"s": "\x00\"\\\u2028\U0001f600\x7f"},
               {"\U0001f600": 1, "\uffff": 2, "z": 3, "A": 4}, {"n": [1e-05, 1e16, -0.0, 0.30000000000000004]}]
    return {"py_repr": [{"value": s, "repr": repr(s)} for s in strings],
            "canonical_json": [{"value": o, "canonical": canonical_json(o)} for o in objects]}


def primitives() -> dict[str, Any]:
    """The document of ``primitives.json``."""
    return {"format": 1, "draws": _draw_laws(), "keyed": _keyed(), "hashes": _hashes(), "floats": _floats(),
            "texts": _texts()}
