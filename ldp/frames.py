"""Binary frames: the bulk encoding of reports (specified byte for byte in ``docs/wire-format.md``).

A frame is a header naming the protocol, the parameter fingerprint and the field layout, then one
fixed-width column per field and a CRC-32, so a server reads a frame with one ``frombuffer`` per
column (:class:`Frame` holds memoryviews of the input: no copy). :func:`scan_frames` reads a stream
of frames and goes on past damaged ones; junk full of frame magics is skipped in bulk. A
:class:`ReportBatch` holds many reports column by column. The writer of single reports' frames is in
:mod:`ldp.wire`, below this module; :mod:`ldp.reports`, above it, exports the names of both.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any

from bitarray import frozenbitarray

from ldp.errors import ReportError
from ldp.wire import (
    _FIELD_RE,
    _KIND_NAMES,
    _PROTOCOL_RE,
    FORMAT_VERSION,
    MAGIC,
    MAX_BITS,
    MAX_FIELDS,
    MAX_FRAME_RECORDS,
    Field,
    PayloadValue,
    Report,
    encode_frames,
    frame_header,
    seal_frame,
    uint_width,
)

__all__ = ["Frame", "ReportBatch", "encode_frames", "encode_batch", "iter_frames", "scan_frames", "decode_binary"]

_uint_width = uint_width  # its name here before it moved to ldp.wire (ldp.plan.oracles imports it)


@dataclass(frozen=True)
class ReportBatch:
    """Many reports of one protocol and parameter set, column by column.

    ``columns[name]`` is a 1-D integer array for a ``uint`` field and an ``(n, ceil(size/8))``
    ``uint8`` array of little-endian packed bits for a ``bits`` field.
    """

    protocol: str
    fingerprint: str
    schema: tuple[Field, ...]
    columns: Mapping[str, Any]

    @property
    def n(self) -> int:
        return len(self.columns[self.schema[0].name])

    def __len__(self) -> int:
        return self.n

    def to_bytes(self) -> bytes:
        """The batch as binary frames (:func:`ldp.frames.encode_batch`)."""
        return encode_batch(self)

    def reports(self) -> Iterator[Report]:
        """The batch as individual reports (a Python loop: for export, not for bulk paths)."""
        return (r for frame in iter_frames(self.to_bytes()) for r in frame.reports())


@dataclass(frozen=True)
class Frame:
    """A parsed binary frame: ``count`` records of ``fields``, stored column by column.

    ``layout`` gives, per field, ``(name, kind, width)``: ``width`` is the byte width (1, 2, 4, 8,
    little-endian) of a ``uint`` column, or the bit length of a ``bits`` column (each record packed
    in ceil(width/8) bytes, bit i in byte i//8 at position i%8). Parsed frames' ``columns`` are
    read-only memoryviews of the input bytes (no copy).
    """

    protocol: str
    fingerprint: str
    layout: tuple[tuple[str, str, int], ...]
    count: int
    columns: Mapping[str, bytes | memoryview]

    def reports(self) -> Iterator[Report]:
        """The frame's records as :class:`Report` objects (validated)."""
        readers: list[tuple[str, Callable[[int], PayloadValue]]] = []
        for name, kind, width in self.layout:
            col = self.columns[name]
            if kind == "uint":
                readers.append((name, partial(_read_uint, col, width)))
            else:
                readers.append((name, partial(_read_bits, col, width, (width + 7) // 8)))
        for i in range(self.count):
            yield Report(self.protocol, self.fingerprint, {name: read(i) for name, read in readers})


def _read_uint(col: bytes | memoryview, width: int, i: int) -> int:
    """Record ``i`` of a ``uint`` column of ``width`` bytes."""
    return int.from_bytes(col[i * width:(i + 1) * width], "little")


def _read_bits(col: bytes | memoryview, nbits: int, nbytes: int, i: int) -> frozenbitarray:
    """Record ``i`` of a ``bits`` column of ``nbits`` bits (``nbytes`` bytes a record)."""
    return _unpack_bits(col[i * nbytes:(i + 1) * nbytes], nbits)


def _unpack_bits(raw: bytes | memoryview, nbits: int) -> frozenbitarray:
    bits = frozenbitarray(buffer=raw, endian="little") if raw else frozenbitarray(endian="little")
    if bits[nbits:].any():
        raise ReportError("bad_value", "padding bits after the last bit must be zero")
    return bits[:nbits]


def encode_batch(batch: ReportBatch) -> bytes:
    """A batch as binary frames (vectorized: one ``tobytes`` per column and frame)."""
    out = []
    for start in range(0, batch.n, MAX_FRAME_RECORDS):
        stop = min(batch.n, start + MAX_FRAME_RECORDS)
        layout, cols = [], []
        for f in batch.schema:
            col = batch.columns[f.name][start:stop]
            if f.kind == "uint":
                width = uint_width(max(f.size - 1, 0))
                if col.size and (col.min() < 0 or col.max() >= f.size):
                    raise ValueError(f"field {f.name!r} has values outside [0, {f.size}); refusing to encode them")
                cols.append(col.astype(f"<u{width}").tobytes())
                layout.append((f.name, "uint", width))
            else:
                cols.append(col.tobytes())
                layout.append((f.name, "bits", f.size))
        out.append(seal_frame(frame_header(batch.protocol, batch.fingerprint, layout, stop - start) + b"".join(cols)))
    return b"".join(out)


class _Reader:
    """Reads a frame from a memoryview: every field and column is a view of the input, never a copy."""

    def __init__(self, data: memoryview, pos: int) -> None:
        self.data, self.pos = data, pos

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.data):
            raise ReportError("truncated", f"needed {n} bytes at offset {self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def ascii(self, n: int, pattern: re.Pattern[str], reason: str) -> str:
        raw = self.take(n)
        text = str(raw, "ascii", errors="replace")
        if not pattern.match(text):
            raise ReportError(reason, f"invalid name {bytes(raw)!r}")
        return text


def _read_frame(data: memoryview, pos: int) -> tuple[Frame, int]:
    """The frame at ``pos`` of ``data`` (a byte memoryview) and the offset after it. Its columns are
    views of ``data`` and its CRC-32 is computed over a view: parsing copies no record."""
    rd = _Reader(data, pos)
    if rd.take(4) != MAGIC:
        raise ReportError("bad_magic", f"no frame magic at offset {pos}")
    if (version := rd.byte()) != FORMAT_VERSION:
        raise ReportError("bad_version", f"frame format version {version}")
    protocol = rd.ascii(rd.byte(), _PROTOCOL_RE, "bad_protocol")
    fp = rd.take(8).hex()
    nfields = rd.byte()
    if not 1 <= nfields <= MAX_FIELDS:
        raise ReportError("bad_payload", f"frames have 1..{MAX_FIELDS} fields, got {nfields}")
    layout: list[tuple[str, str, int]] = []
    sizes: list[int] = []
    for _ in range(nfields):
        name = rd.ascii(rd.byte(), _FIELD_RE, "bad_field")
        code, width = struct.unpack("<BI", rd.take(5))
        kind = _KIND_NAMES.get(code)
        if kind == "uint" and width in (1, 2, 4, 8):
            sizes.append(width)
        elif kind == "bits" and 1 <= width <= MAX_BITS:
            sizes.append((width + 7) // 8)
        else:
            raise ReportError("bad_field", f"field {name!r}: kind {code} with width {width}")
        if any(name == n for n, _, _ in layout):
            raise ReportError("duplicate_key", f"field {name!r} appears twice")
        layout.append((name, kind, width))
    (count,) = struct.unpack("<I", rd.take(4))
    if count == 0:
        raise ReportError("bad_payload", "frame holds no record")
    columns = {name: rd.take(count * size) for (name, _, _), size in zip(layout, sizes, strict=True)}
    body_end = rd.pos
    (crc,) = struct.unpack("<I", rd.take(4))
    if zlib.crc32(data[pos:body_end]) != crc:
        raise ReportError("bad_checksum", f"frame at offset {pos} fails its CRC-32", records=count, resume=rd.pos)
    return Frame(protocol, fp, tuple(layout), count, MappingProxyType(columns)), rd.pos


def iter_frames(data: bytes) -> Iterator[Frame]:
    """Parse concatenated binary frames; the first malformed frame raises :class:`ReportError`."""
    for item in scan_frames(data):
        if isinstance(item, ReportError):
            raise item
        yield item


_PLAUSIBLE_FRAME = re.compile(MAGIC + bytes([FORMAT_VERSION]) + rb"[\x01-\x20][a-z]")
"""A frame magic followed by the format version and a protocol name's plausible first two bytes."""
_FALSE_START_MARGIN = 4 + 1 + 1 + 255 + 1
"""Bytes a false start's failed checks (magic, version, protocol name) can read at most."""


def _false_starts(data: bytes, start: int) -> tuple[int, list[ReportError]]:
    """Skip, in bulk, the frame magics from ``start`` on that fail before their protocol name: the
    next plausible frame start (or the tail, where a false start may be ``truncated``) and one
    error per reason with ``records`` = how many, exactly what one-by-one parsing would count."""
    m = _PLAUSIBLE_FRAME.search(data, start)
    stop = min(m.start() if m else len(data), len(data) - _FALSE_START_MARGIN)
    if stop <= start:
        return start, []
    magics = data.count(MAGIC, start, stop + len(MAGIC) - 1)
    versioned = data.count(MAGIC + bytes([FORMAT_VERSION]), start, stop + len(MAGIC))
    errors = [ReportError(reason, f"{n} false frame starts from offset {start}: {what}", records=n)
              for reason, n, what in (("bad_version", magics - versioned, "frame magic without the format version"),
                                      ("bad_protocol", versioned, "no valid protocol name after the magic")) if n]
    nxt = data.find(MAGIC, stop)
    return (len(data) if nxt < 0 else nxt), errors


def scan_frames(data: bytes | bytearray | memoryview, *, bulk: bool = True) -> Iterator[Frame | ReportError]:
    """Parse concatenated frames, yielding a :class:`ReportError` for each malformed one and
    going on after it: past its end when its header was readable (a failed CRC) and another
    frame (or the end of the data) follows there, otherwise at the next frame magic. Every
    intact frame is read; the CRC-32 rejects a false start found inside damaged bytes. Runs of
    false starts that fail before their protocol name are counted in bulk (one error per reason,
    its ``records`` the number of them), so junk full of magics is skipped at ``bytes.find`` speed;
    ``bulk=False`` parses each false start on its own (the reference the bulk path is tested against).
    Intact frames' columns are views of ``data`` (``bytes`` are not copied; other buffers once)."""
    if type(data) is not bytes:
        data = bytes(data)  # immutable (frames are views of it) and searched with bytes.find/count
    view = memoryview(data)
    pos = 0
    while pos < len(data):
        try:
            frame, pos = _read_frame(view, pos)
        except ReportError as err:
            nxt = err.resume
            if nxt is not None and nxt < len(data) and data[nxt:nxt + 4] != MAGIC:
                # the damaged header mis-states the frame's size: do not trust its end or count
                err.resume, err.records, nxt = None, 1, None
            yield err
            if nxt is None:
                nxt, skipped = _false_starts(data, pos + 1) if bulk else (-1, [])
                yield from skipped
                if not skipped:
                    nxt = data.find(MAGIC, pos + 1)
            pos = len(data) if nxt < 0 else nxt
            continue
        yield frame


def decode_binary(data: bytes) -> list[Report]:
    """All reports in ``data`` (concatenated frames); raise :class:`ReportError` if any is malformed."""
    return [r for frame in iter_frames(data) for r in frame.reports()]
