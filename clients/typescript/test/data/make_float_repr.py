"""Writes the tables the TypeScript client's canonical tests compare with (standard library only).

Run from this folder with the Python the server uses (the tables record its output):

    python make_float_repr.py

* ``float_repr.json``: 20,000 doubles (random bit patterns, small integers, powers of ten and of two, the
  boundaries 1e-5, 1e16, 5e-324, the largest double, ties of ``.Ng`` rounding, negatives), each as its 16 hex
  digits (big-endian IEEE 754) with ``repr(x)`` and ``format(x, ".6g")``, ``".3g"``, ``".1g"``.
* ``canonical.json``: random nested objects (strings with control characters, non-ASCII, astral characters and
  lone surrogates, keys whose code point order differs from UTF-16 order) in a typed form the test rebuilds
  (``{"int": "digits"}``, ``{"float": "hex bits"}``, ``{"dict": [[key, value], ...]}``), each with
  ``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`` and the
  fingerprint ``sha256(...)[:16]``.
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
import sys
import unicodedata

HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."


def bits(x: float) -> str:
    return struct.pack(">d", x).hex()


def from_bits(h: str) -> float:
    return struct.unpack(">d", bytes.fromhex(h))[0]


def floats(rnd: random.Random) -> list[float]:
    xs = [0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 1e-05, 1e-4, 0.0001, 9.999999999999999e-05, 1e16,
          9999999999999998.0, 1e15, 123456789012345.6, 1.2345678901234568e17, 5e-324, 1e-323, 2.2250738585072014e-308,
          2.225073858507201e-308, 1.7976931348623157e308, 2.0**53, 2.0**53 + 2, 2.0**64, 1e22, 1e21, 1e23, 1.5e-07,
          0.30000000000000004, 100.0, 1234565.0, 2.5, 0.5, 1.5, 0.125, 0.375, 12345.5, 123455.0, 999999.5, 9999995.0,
          0.00001234565, 1e100, 1e-100, 4.35, 0.045, 5e-05, 1.5e-05, 99999.95, 999.9995]
    xs += [float(i) for i in range(-1000, 1001)]
    xs += [10.0**e for e in range(-325, 309)] + [float(f"1e{e}") for e in range(-325, 309)]
    xs += [float(f"{d}e{e}") for d in (2, 3, 5, 7, 9, 15, 25, 125) for e in range(-30, 30)]
    xs += [2.0**e for e in range(-1074, 1024, 7)]
    xs += [rnd.randrange(1, 10**rnd.randrange(1, 17)) * 10.0**rnd.randrange(-20, 20) for _ in range(1500)]
    xs += [round(rnd.uniform(-1000, 1000), rnd.randrange(0, 8)) for _ in range(1500)]
    xs += [rnd.random() for _ in range(500)]
    xs += [-x for x in xs[:300]] + [-x for x in xs[-1000:]]
    while len(xs) < 8000:
        x = struct.unpack(">d", rnd.getrandbits(64).to_bytes(8, "big"))[0]
        if x == x and abs(x) != float("inf"):
            xs.append(x)
    return [x for x in xs if x == x and abs(x) != float("inf")][:8000]


def float_table(rnd: random.Random) -> list[list[str]]:
    return [[bits(x), repr(x), format(x, ".6g"), format(x, ".3g"), format(x, ".1g")] for x in floats(rnd)]


# -- strings -----------------------------------------------------------------------------------------------------
NONCHARACTERS = [0xFDD0, 0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFE, 0x10FFFF]
SPECIAL = (["'", '"', "\\", "\t", "\n", "\r", "\x00", "\x07", "\x08", "\x0c", "\x1b", "\x1f", "\x7f", "\x80", "\x9f",
            "\xa0", "\xad", "\xff", "\u0100", "\u2028", "\u2029", "\u200b", "\u200e", "\ufeff", "\u3000", "\ue000",
            "\uf8ff", "\ufffd", "\U0001f600", "\U0001f468\u200d\U0001f469", "\U000e0001", "\U000f0000", "\U00010000",
            "é", "ß", "日本", "\u0301", "\u00e9"] + [chr(c) for c in NONCHARACTERS])


def assigned(c: int) -> bool:
    return unicodedata.category(chr(c)) != "Cn" or c in NONCHARACTERS or (c & 0xFFFE) == 0xFFFE


def random_char(rnd: random.Random) -> str:
    kind = rnd.random()
    if kind < 0.3:
        return chr(rnd.randrange(0x20, 0x7F))
    if kind < 0.45:
        return rnd.choice(SPECIAL)
    if kind < 0.55:
        return chr(rnd.randrange(0, 0x100))
    if kind < 0.6:
        return chr(rnd.randrange(0xD800, 0xE000))  # a lone surrogate (never put next to another: see below)
    while True:
        c = rnd.randrange(0x100, 0x30000) if rnd.random() < 0.9 else rnd.randrange(0xE0000, 0x110000)
        if not 0xD800 <= c < 0xE000 and assigned(c):
            return chr(c)


def random_string(rnd: random.Random, n: int) -> str:
    out: list[str] = []
    for _ in range(n):
        ch = random_char(rnd)
        if out and len(ch) == 1 and 0xD800 <= ord(ch) < 0xE000 and 0xD800 <= ord(out[-1][-1]) < 0xE000:
            ch = "x"  # two adjacent surrogates would read as one astral character in JS
        out.append(ch)
    return "".join(out)


def random_value(rnd: random.Random, depth: int) -> tuple[object, object]:
    """A Python value and its typed form."""
    kind = rnd.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None, None
    if kind == 1:
        b = rnd.random() < 0.5
        return b, b
    if kind == 2:
        n = rnd.choice([0, 1, -1, 2**53, -(2**53), 2**64 + 1, rnd.randrange(-10**6, 10**6), rnd.getrandbits(80)])
        return n, {"int": str(n)}
    if kind == 3:
        x = rnd.choice(floats_sample)
        return x, {"float": bits(x)}
    if kind in (4, 5):
        s = random_string(rnd, rnd.randrange(0, 10))
        return s, s
    if kind == 6:
        items = [random_value(rnd, depth + 1) for _ in range(rnd.randrange(0, 5))]
        return [a for a, _ in items], [b for _, b in items]
    d: dict[str, object] = {}
    typed: list[list[object]] = []
    for _ in range(rnd.randrange(0, 6)):
        key = rnd.choice(["a", "b", "A", "", "\U0001f600", "\uffff", "\ue000", "z", "\x00", "\u00e9"]) \
            if rnd.random() < 0.5 else random_string(rnd, rnd.randrange(0, 5))
        if key in d:
            continue
        a, b = random_value(rnd, depth + 1)
        d[key] = a
        typed.append([key, b])
    return d, {"dict": typed}


def canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def canonical_table(rnd: random.Random) -> list[dict[str, object]]:
    out = []
    for i in range(500):
        a, b = random_value(rnd, 0)
        while i % 5 and not (isinstance(a, (dict, list)) and a):  # four cases in five: a non-empty dict or list
            a, b = random_value(rnd, 0)
        text = canonical(a)
        out.append({"typed": b, "canonical": text, "sha256_16": hashlib.sha256(text.encode("ascii")).hexdigest()[:16]})
    return out


floats_sample: list[float] = []


def main() -> None:
    rnd = random.Random("ldp-ts-client/canonical-tables/v1")
    table = float_table(rnd)
    floats_sample.extend(from_bits(row[0]) for row in table[::37])
    meta = {"python": sys.version.split()[0], "unicode": unicodedata.unidata_version}
    write("float_repr.json", {**meta, "columns": ["bits", "repr", ".6g", ".3g", ".1g"], "rows": table})
    write("canonical.json", {**meta, "cases": canonical_table(rnd)})


def write(name: str, doc: object) -> None:
    with open(f"{HERE}/{name}", "w", encoding="ascii") as f:
        json.dump(doc, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
