"""The vectorized fast path for upload envelopes in the exact form :class:`~ldp.client.TelemetryClient` writes.

A client writes every envelope of a metric as the same bytes but for its integers and bit strings::

    {"spec":"<fp>","metric":"<m>","window":<int>,"report":{"v":1,"protocol":"<p>","params":"<pfp>","payload":{...}}}

with the payload fields in the protocol's schema order, no spaces, integers in decimal without
leading zeros and bit strings of exactly the field's length. A :class:`Template` holds the literal
pieces of that shape for one (spec, metric); :func:`match_lines` checks a whole chunk of lines
against every template at once, numpy operations per *piece* (never a Python loop per line), and
parses the window and the payload columns of the lines that match exactly and are in range.

The matching runs in the optional compiled kernel ``ldp/batch/_linekernel.c`` when it is built (one pass over
the lines, the template's steps in C; :data:`LINE_KERNEL`), else in numpy (:func:`_match_one`); the two give the
same result, tested against each other.

Guarantee: a line is accepted here only if :func:`ldp.spec.parse_envelope` would accept it with the
same window and payload (the template fixes every byte but the numbers and bits, and the range
checks are the spec's); every other line is left to that full parser, which gives the reason.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldp.reports import MAX_LINE, Field
from ldp.spec.envelope import MAX_WINDOW

__all__ = ["Template", "templates_for", "match_lines", "line_bounds", "Matched", "repeats", "LINE_KERNEL",
           "kernel_in_use"]

try:  # optional compiled kernel (ldp/batch/_linekernel.c, built on install where a C compiler is found)
    import ldp.batch._linekernel as _linekernel
except ImportError:  # pragma: no cover - depends on the install
    _linekernel = None  # type: ignore[assignment]  # optional: None when the extension is not built
LINE_KERNEL = os.environ.get("LDP_LINE_KERNEL") or ("compiled" if _linekernel is not None else "numpy")
"""Which kernel :func:`match_lines` uses: ``"compiled"`` (the C extension, when built) or ``"numpy"``; the
environment variable ``LDP_LINE_KERNEL`` chooses (e.g. to benchmark the fallback)."""


def kernel_in_use() -> bool:
    """Whether :func:`match_lines` runs the compiled kernel by default: built, and not switched off by
    ``LDP_LINE_KERNEL``."""
    return LINE_KERNEL == "compiled" and _linekernel is not None

_POW10 = np.array([10**k for k in range(20)], dtype=np.uint64)
"""10^0 … 10^19: the weights of a decimal's digits (:meth:`_Buffer.uint` reads at most 19)."""
_WINDOW_DIGITS = len(str(MAX_WINDOW))
_MAX_UINT_DIGITS = 19  # 10**19 - 1 < 2**64: longer numbers (or larger sizes) go to the full parser
_KEY_AT = len('{"spec":"0123456789abcdef","metric":"')  # every prefix has >= 8 bytes from here


@dataclass(frozen=True)
class Template:
    """The literal pieces of one (spec, metric)'s canonical envelope; ``fields`` follow ``pieces[i]``."""

    spec: str
    metric: str
    params: Any
    prefix: bytes
    pieces: tuple[bytes, ...]
    fields: tuple[Field, ...]
    program: bytes = field(init=False, repr=False, compare=False)
    """The steps of the compiled kernel (``ldp/batch/_linekernel.c``): the prefix, the window, then each piece
    and field."""

    def __post_init__(self) -> None:
        steps = [_literal(self.prefix), _number(_WINDOW_DIGITS, MAX_WINDOW + 1)]
        for piece, f in zip(self.pieces, (*self.fields, None), strict=True):
            steps.append(_literal(piece))
            if f is not None:
                steps.append(_number(len(str(f.size - 1)), f.size) if f.kind == "uint" else
                             b"B" + struct.pack("<I", f.size))
        object.__setattr__(self, "program", b"".join(steps))

    @property
    def numbers(self) -> int:
        """The window and the uint fields: the kernel's numbers per line."""
        return 1 + sum(f.kind == "uint" for f in self.fields)

    @property
    def bit_bytes(self) -> int:
        """Packed bytes of the bits fields per line."""
        return sum((f.size + 7) // 8 for f in self.fields if f.kind == "bits")

    @property
    def max_length(self) -> int:
        """The longest canonical line (no newline)."""
        digits = sum(f.size if f.kind == "bits" else len(str(f.size - 1)) for f in self.fields)
        return len(self.prefix) + _WINDOW_DIGITS + sum(map(len, self.pieces)) + digits


def _literal(lit: bytes) -> bytes:
    return b"L" + struct.pack("<H", len(lit)) + lit


def _number(digits: int, bound: int) -> bytes:
    return b"N" + struct.pack("<BQ", digits, bound)


def _template(spec_fp: str, metric: str, params: Any) -> Template | None:
    """The template of one metric, or ``None`` when a field cannot use the fast path (uints with
    more than 19 digits)."""
    if not params.schema or any(f.kind == "uint" and len(str(f.size - 1)) > _MAX_UINT_DIGITS for f in params.schema):
        return None  # no payload: no fast path (a kind without a local randomizer, poplar1, takes no envelope)
    head = (f',"report":{{"v":1,"protocol":"{params.protocol}","params":"{params.fingerprint}","payload":{{')
    pieces: list[str] = []
    sep = quote = ""
    for f in params.schema:
        opening = '"' if f.kind == "bits" else ""
        pieces.append(f'{head if not pieces else ""}{quote}{sep}"{f.name}":{opening}')
        sep, quote = ",", opening
    pieces.append(quote + "}}}")
    prefix = f'{{"spec":"{spec_fp}","metric":"{metric}","window":'
    return Template(spec_fp, metric, params, prefix.encode("ascii"), tuple(p.encode("ascii") for p in pieces),
                    tuple(params.schema))


_TEMPLATES: dict[tuple[tuple[str, str], ...], list[Template]] = {}
_TEMPLATES_KEPT = 64


def templates_for(specs: Mapping[str, Any]) -> list[Template]:
    """One template per (spec, metric) of the given ``{fingerprint: CollectionSpec}`` (kept for the next call
    with the same specs: an ingest service asks once per upload)."""
    key = tuple((fp, spec.fingerprint) for fp, spec in specs.items())
    kept = _TEMPLATES.get(key)
    if kept is None:
        if len(_TEMPLATES) >= _TEMPLATES_KEPT:
            _TEMPLATES.clear()
        kept = _TEMPLATES[key] = _templates_for(specs)
    return list(kept)


def _templates_for(specs: Mapping[str, Any]) -> list[Template]:
    out = []
    for fp, spec in specs.items():
        for name, m in spec.metrics.items():
            if (t := _template(fp, name, m.params)) is not None:
                out.append(t)
    return out


@dataclass
class Matched:
    """The lines of one template accepted by the fast path: their indices in the chunk, windows and
    payload columns (``uint``: uint64 arrays; ``bits``: (n, ceil(size/8)) uint8, little-endian packed)."""

    template: Template
    rows: np.ndarray
    windows: np.ndarray
    columns: dict[str, np.ndarray]


_ONES = np.uint64(0x0101010101010101)
_GATHER = np.uint64(0x0102040810204080)  # moves byte i's low bit to bit 56 + i
_BINARY = np.uint64(0x3030303030303030)
_NOT_LOW = np.uint64(0xFEFEFEFEFEFEFEFE)


class _Buffer:
    """A chunk padded with zeros (gathers past the end never match), readable as bytes and as
    unaligned little-endian 64-bit words starting at every byte (8 bytes per gather)."""

    def __init__(self, raw: np.ndarray, pad: int) -> None:
        self.bytes = np.zeros(len(raw) + pad + 8, dtype=np.uint8)
        self.bytes[:len(raw)] = raw
        self.words = np.ndarray((len(self.bytes) - 7,), "<u8", self.bytes, 0, (1,))

    def gather(self, pos: np.ndarray, width: int) -> np.ndarray:
        """The ``width`` bytes at each ``pos``, one row per position (gathered as words when wide)."""
        if width < 8:
            return self.bytes[pos[:, None] + np.arange(width)]
        words = self.words[pos[:, None] + np.arange(0, width, 8)]
        return words.view(np.uint8)[:, :width]

    def literal(self, pos: np.ndarray, lit: bytes) -> np.ndarray:
        """Rows whose bytes at ``pos`` are ``lit``: 8 bytes per compare, the last word overlapping."""
        if len(lit) < 8:
            return (self.gather(pos, len(lit)) == np.frombuffer(lit, np.uint8)).all(axis=1)
        offsets = np.array(sorted({*range(0, len(lit) - 7, 8), len(lit) - 8}))
        want = np.array([int.from_bytes(lit[o:o + 8], "little") for o in offsets], dtype=np.uint64)
        return (self.words[pos[:, None] + offsets] == want).all(axis=1)

    def uint(self, pos: np.ndarray, digits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Parse a decimal of 1..``digits`` digits at ``pos``: (value, ok, new pos). A leading zero
        of a longer number, or more digits, is not ok (JSON has no leading zeros; larger values go to
        the full parser)."""
        g = self.gather(pos, digits + 1)
        d = g - np.uint8(48)
        run = np.argmin(d < 10, axis=1)  # the first non-digit (0 when all are digits: rejected below)
        ok = (run >= 1) & ~((g[:, 0] == 48) & (run > 1))
        # digit j of a number of `run` digits weighs 10^(run-1-j); the digits past the number weigh nothing
        exponent = run[:, None] - 1 - np.arange(digits)
        weight = np.where(exponent >= 0, _POW10[np.maximum(exponent, 0)], np.uint64(0))
        value = (d[:, :digits].astype(np.uint64) * weight).sum(axis=1, dtype=np.uint64)
        return value, ok, pos + run

    def bits(self, pos: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``size`` characters 0/1 at ``pos`` packed little-endian (char i = bit i), and ok."""
        full = size // 8
        packed = np.empty((len(pos), (size + 7) // 8), dtype=np.uint8)
        ok = np.ones(len(pos), dtype=bool)
        if full:
            w = self.words[pos[:, None] + np.arange(0, 8 * full, 8)]
            ok &= ((w & _NOT_LOW) == _BINARY).all(axis=1)
            packed[:, :full] = ((w & _ONES) * _GATHER) >> np.uint64(56)
        if size % 8:
            chars = self.gather(pos + 8 * full, size % 8)
            ok &= ((chars == 48) | (chars == 49)).all(axis=1)
            packed[:, full:] = np.packbits(chars == 49, axis=1, bitorder="little")
        return packed, ok


def _match_one(t: Template, buf: _Buffer, starts: np.ndarray,
               ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    pos = starts + len(t.prefix)
    window, ok, pos = buf.uint(pos, _WINDOW_DIGITS)
    ok &= window <= MAX_WINDOW
    columns: dict[str, np.ndarray] = {}
    for piece, f in zip(t.pieces, (*t.fields, None), strict=True):
        ok &= buf.literal(pos, piece)
        pos = pos + len(piece)
        if f is None:
            break
        if f.kind == "uint":
            value, good, pos = buf.uint(pos, len(str(f.size - 1)))
            ok &= good & (value < np.uint64(f.size))
            columns[f.name] = value.astype(np.min_scalar_type(f.size - 1))
        else:
            columns[f.name], good = buf.bits(pos, f.size)
            ok &= good
            pos = pos + f.size
    ok &= pos == ends
    return ok, window, columns


def line_bounds(chunk: bytes, compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of the lines of ``chunk`` (complete lines, each ending in ``\\n``; int64): the end
    excludes the ``\\n`` and a ``\\r`` before it. ``compiled``: the kernel's scan or numpy's (default: the kernel
    when in use; one ``memchr`` pass, the GIL held)."""
    if kernel_in_use() if compiled is None else compiled:
        n = chunk.count(b"\n")
        starts, ends = np.empty(n, np.int64), np.empty(n, np.int64)
        _linekernel.split(chunk, starts, ends)
        return starts, ends
    raw = np.frombuffer(chunk, dtype=np.uint8)
    nl = np.flatnonzero(raw == 10)
    starts = np.concatenate(([0], nl[:-1] + 1)).astype(np.int64) if nl.size else np.zeros(0, np.int64)
    ends = nl.astype(np.int64)
    if nl.size:
        cr = (ends > starts) & (raw[np.maximum(ends - 1, 0)] == 13)
        ends = ends - cr
    return starts, ends


def match_lines(chunk: bytes, templates: Iterable[Template],
                bounds: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[list[Matched], np.ndarray, np.ndarray,
                                                                              np.ndarray]:
    """Match every line of ``chunk`` (complete lines, each ending in ``\\n``) against the templates.

    Returns ``(matched, starts, ends, accepted)``: per template the accepted lines' data, each
    line's start and end offsets (the end excludes ``\\n`` and a ``\\r`` before it; ``bounds``: these, when the
    caller has them from :func:`line_bounds`) and a mask of the lines accepted here. The other lines are for the
    full parser."""
    templates = list(templates)
    starts, ends = bounds if bounds is not None else line_bounds(chunk)
    accepted = np.zeros(len(starts), dtype=bool)
    if not templates or not len(starts):
        return [], starts, ends, accepted
    if kernel_in_use():
        return _match_compiled(chunk, templates, starts, ends, accepted), starts, ends, accepted
    raw = np.frombuffer(chunk, dtype=np.uint8)
    longest = max(t.max_length for t in templates)
    buf = _Buffer(raw, longest + _WINDOW_DIGITS + 64)
    lengths = ends - starts
    candidates = np.flatnonzero((lengths <= min(longest, MAX_LINE)) & (lengths > 0))
    cand_starts = starts[candidates]
    key = buf.words[cand_starts + _KEY_AT]  # the metric's first bytes: picks the template to try
    out = []
    for t in templates:
        maybe = np.flatnonzero(key == int.from_bytes(t.prefix[_KEY_AT:_KEY_AT + 8], "little"))
        rows = candidates[maybe[buf.literal(cand_starts[maybe], t.prefix)]]
        if not rows.size:
            continue
        ok, window, columns = _match_one(t, buf, starts[rows], ends[rows])
        if not ok.any():  # no empty batch: it would make an aggregate the full parser may not
            continue
        if not ok.all():
            rows, window = rows[ok], window[ok]
            columns = {k: v[ok] for k, v in columns.items()}
        accepted[rows] = True
        out.append(Matched(t, rows, window, columns))
    return out, starts, ends, accepted


def _match_compiled(chunk: bytes, templates: list[Template], starts: np.ndarray, ends: np.ndarray,
                    accepted: np.ndarray) -> list[Matched]:
    """:func:`match_lines`'s matching in the compiled kernel: one pass over the lines, ``accepted`` set."""
    n = len(starts)
    width_nums = max(t.numbers for t in templates)
    width_bits = max(t.bit_bytes for t in templates)
    which = np.empty(n, dtype=np.int32)
    nums = np.empty((n, width_nums), dtype=np.uint64)
    bits = np.empty((n, width_bits), dtype=np.uint8)
    programs = struct.pack("<I", len(templates)) + b"".join(struct.pack("<I", len(t.program)) + t.program
                                                              for t in templates)
    _linekernel.match(chunk, starts, ends, n, programs, _KEY_AT, which, nums, width_nums, bits, width_bits)
    out = []
    found = which >= 0
    accepted |= found
    present: list[int] = np.flatnonzero(np.bincount(which[found], minlength=len(templates))).tolist() \
        if found.any() else []
    for ti in present:
        t = templates[ti]
        rows = np.flatnonzero(which == ti)
        columns: dict[str, np.ndarray] = {}
        column, at = 1, 0
        for f in t.fields:
            if f.kind == "uint":
                columns[f.name] = nums[rows, column].astype(np.min_scalar_type(f.size - 1))
                column += 1
            else:
                width = (f.size + 7) // 8
                columns[f.name] = bits[rows, at:at + width]
                at += width
        out.append(Matched(t, rows, nums[rows, 0], columns))
    return out


# -- runs of identical lines ----------------------------------------------------------------------------------


def repeats(chunk: bytes, starts: np.ndarray, ends: np.ndarray, width: int = 16, block: int = 1 << 18,
            adjacent: np.ndarray | None = None) -> np.ndarray:
    """``same[k]``: line k equals line k - 1, both at most ``width`` bytes (compared exactly, as
    masked 8-byte words; vectorized, ``block`` lines at a time). With ``adjacent`` (the lines'
    indices), only lines next to each other (index k - 1 + 1 == k) count as repeats."""
    n = len(starts)
    same = np.zeros(n, dtype=bool)
    if n < 2:
        return same
    buf = _Buffer(np.frombuffer(chunk, dtype=np.uint8), width)
    offsets = np.arange(0, width, 8)
    for a in range(1, n, block):
        lo, hi = a - 1, min(n, a + block)
        s, length = starts[lo:hi], ends[lo:hi] - starts[lo:hi]
        words = buf.words[s[:, None] + offsets]
        kept = np.clip(length[:, None] - offsets, 0, 8).astype(np.uint64)
        words &= np.where(kept >= 8, ~np.uint64(0), (np.uint64(1) << (np.minimum(kept, 7) * np.uint64(8))) - 1)
        short = length <= width
        same[a:hi] = (short[1:] & short[:-1] & (length[1:] == length[:-1]) & (words[1:] == words[:-1]).all(axis=1))
    if adjacent is not None:
        same[1:] &= np.diff(adjacent) == 1
    return same
