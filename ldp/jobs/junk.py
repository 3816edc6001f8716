"""Junk lines, rejected in bulk: the lines of a chunk that :func:`ldp.spec.parse_envelope` surely rejects as
``not_json``, found from a few of their bytes without parsing them (vectorized, or line by line in the compiled
kernel ``ldp/batch/_linekernel.c`` when it is in use; the two are tested against each other)."""

from __future__ import annotations

import numpy as np

from ldp.jobs import jsonl
from ldp.reports import MAX_LINE

__all__ = ["junk_lines"]


def _maybe_json() -> np.ndarray:
    """``table[first, last]``: a line whose first and last bytes are these may parse as JSON (or be
    blank, or be decoded as UTF-16/32 by ``json.loads``): it goes to the full parser."""
    table = np.zeros((256, 256), dtype=bool)
    table[list(b" \t\r\x0b\x0c\x00\xef\xfe\xff"), :] = True  # whitespace, or json's encoding detection
    table[:, list(b" \t\r\x0b\x0c")] = True
    for first, lasts in ((b"{", b"}"), (b"[", b"]"), (b'"', b'"'), (b"-0123456789", b"0123456789y"), (b"t", b"e"),
                         (b"f", b"e"), (b"n", b"l"), (b"N", b"N"), (b"I", b"y")):
        table[np.ix_(list(first), list(lasts))] = True
    return table


_MAYBE_JSON = _maybe_json()
_JSON_SPACE = np.zeros(256, dtype=bool)
_JSON_SPACE[list(b" \t\r")] = True
_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\r\x0b\x0c")] = True
_NUMBER = np.zeros(256, dtype=bool)
_NUMBER[list(b"0123456789+-.eE")] = True
_WORD_LENGTH = np.zeros(256, dtype=np.int64)
_WORD_LENGTH[list(b"tfnNI")] = [4, 5, 4, 3, 8]


def junk_lines(chunk: bytes, starts: np.ndarray, ends: np.ndarray, compiled: bool | None = None) -> np.ndarray:
    """Mask of the lines ``chunk[starts[i]:ends[i]]`` that :func:`ldp.spec.parse_envelope` surely
    rejects as ``not_json``, found from their first and last bytes (vectorized).

    A JSON text is optional whitespace, one value, optional whitespace: a line that starts with a
    byte no value starts with, or whose last byte cannot end the value its first byte starts (an
    object ends in ``}``, a number in a digit, ``true`` in ``e``...), or a number with a byte
    numbers do not hold, or a literal (``true``...) of another length, is not JSON. Lines starting
    with ``{`` or ``[`` qualify only without any ``}`` (no object is completed, so the parser's
    duplicate-key check cannot fire first). Blank lines, lines over ``MAX_LINE`` (``too_large``),
    and lines that ``json.loads`` would decode as UTF-16/32 (a NUL in the first two bytes, a BOM)
    are never junk here. ``compiled``: the kernel's line-by-line test or numpy's (default: the kernel when in
    use; an upload has few rejected lines, where numpy's ~25 operations cost more than the lines)."""
    out = np.zeros(len(starts), dtype=bool)
    if not len(starts):
        return out
    if jsonl.kernel_in_use() if compiled is None else compiled:  # the same rule, line by line in C
        jsonl._linekernel.junk(chunk, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64),
                         len(starts), _MAYBE_JSON.view(np.uint8), _JSON_SPACE.view(np.uint8), _SPACE.view(np.uint8),
                         _NUMBER.view(np.uint8), _WORD_LENGTH, MAX_LINE, out.view(np.uint8))
        return out
    raw = np.frombuffer(chunk, dtype=np.uint8)
    lengths = ends - starts
    rows = np.flatnonzero((lengths > 0) & (lengths <= MAX_LINE))
    s, e = starts[rows], ends[rows]
    encoded = raw[s + 1] == 0  # s + 1 exists: every line ends in \n
    s = s + (_JSON_SPACE[raw[s]] & (s + 1 < e))  # one space or tab around the value is looked through
    e = e - (_JSON_SPACE[raw[e - 1]] & (e - 1 > s))
    first = raw[s]
    junk = ~_MAYBE_JSON[first, raw[e - 1]] & ~encoded
    opening = np.flatnonzero(junk & ((first == 123) | (first == 91)))  # { or [
    if opening.size:
        closes = np.flatnonzero(raw == 125)
        inside = np.searchsorted(closes, e[opening]) - np.searchsorted(closes, s[opening])
        junk[opening[inside > 0]] = False
    maybe = np.flatnonzero(~junk & ~_SPACE[raw[e - 1]])  # a literal or number without trailing whitespace
    word = _WORD_LENGTH[first[maybe]]  # true, false, null, NaN, Infinity: exactly these bytes
    junk[maybe[(word > 0) & (e[maybe] - s[maybe] != word)]] = True
    number = maybe[_NUMBER[first[maybe]] & (raw[s[maybe] + 1] != 73)]  # a number (not -Infinity): its bytes only
    if number.size:
        other = np.logical_or.reduceat(~_NUMBER[raw], np.column_stack((s[number], e[number])).ravel())[::2]
        junk[number[other]] = True
    out[rows] = junk
    return out
