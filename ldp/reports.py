"""The wire format of reports (specified byte for byte in ``docs/wire-format.md``).

A :class:`Report` carries a format version, its protocol's name, the fingerprint of the
parameters it was made with, and a payload of named fields, each an unsigned integer
(``uint``: a hash index, a cohort, a value index) or a bit string (``bits``). Nothing else:
there is no slot for a user or device identifier, nor a timestamp.

Two encodings:

* **JSON lines**: ``{"v":1,"protocol":"grr","params":"<16 hex>","payload":{"index":3}}``, bit
  strings as ``"0110..."`` (character i is bit i);
* **binary frames** for bulk: a header naming protocol, fingerprint and field layout, then one
  fixed-width column per field and a CRC-32, so a server reads a frame with one ``frombuffer``
  per column.

Parsing validates everything; anything malformed raises :class:`ReportError`, whose ``reason``
is a machine-readable code from :data:`REASONS`.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Literal, Mapping, Sequence

from bitarray import frozenbitarray
from bitarray.util import int2ba

__all__ = [
    "FORMAT_VERSION", "MAX_LINE", "MAX_WINDOW", "max_line_bytes", "REASONS", "ReportError", "Field", "Report", "Frame", "ReportBatch",
    "canonical_json", "fingerprint", "parse_json", "encode_frames", "iter_frames", "scan_frames", "decode_binary",
    "validate_report", "bits_from_int",
]

FORMAT_VERSION = 1
MAGIC = b"LDPB"
MAX_FIELDS = 16
MAX_BITS = 1 << 24
MAX_UINT = (1 << 64) - 1
MAX_LINE = 1 << 22
MAX_FRAME_RECORDS = 1 << 20
MAX_WINDOW = 1 << 53
"""The largest window index an upload envelope may carry (integers above 2^53 are not exact in JSON doubles)."""

REASONS = frozenset({
    "too_large", "not_json", "not_object", "duplicate_key", "missing_key", "unknown_key",
    "bad_version", "bad_protocol", "bad_fingerprint", "bad_payload", "bad_field", "bad_value",
    "bad_magic", "truncated", "bad_checksum",
    "wrong_protocol", "wrong_fingerprint", "payload_mismatch", "out_of_range", "bad_length",
})
"""Every reason a report can be rejected with."""

_PROTOCOL_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}\Z")
_FIELD_RE = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
_FINGERPRINT_RE = re.compile(r"[0-9a-f]{16}\Z")
_BITS_RE = re.compile(r"[01]+\Z")
_KIND_CODES = {"uint": 1, "bits": 2}
_KIND_NAMES = {v: k for k, v in _KIND_CODES.items()}


class ReportError(ValueError):
    """A malformed or mismatched report; ``reason`` is one of :data:`REASONS`.

    For a malformed binary frame, ``records`` is the number of reports it declared (1 when its
    header is unreadable) and ``resume`` the offset where reading may safely go on, if known.
    """

    def __init__(self, reason: str, detail: str = "", records: int = 1, resume: int | None = None) -> None:
        assert reason in REASONS, reason
        self.reason, self.detail, self.records, self.resume = reason, detail, records, resume
        super().__init__(f"{reason}: {detail}" if detail else reason)


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, ASCII only, no NaN/inf; floats in Python's shortest round-trip form."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def fingerprint(protocol: str, params: Mapping[str, Any]) -> str:
    """First 8 bytes (16 hex) of SHA-256 of ``canonical_json({"params": ..., "protocol": ...})``."""
    digest = hashlib.sha256(canonical_json({"protocol": protocol, "params": dict(params)}).encode("ascii"))
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Field:
    """One payload field of a protocol: ``uint`` values lie in ``[0, size)``, ``bits`` are ``size`` long."""

    name: str
    kind: Literal["uint", "bits"]
    size: int


PayloadValue = int | frozenbitarray


def bits_from_int(value: int, length: int) -> frozenbitarray:
    """The ``length``-bit string whose bit ``i`` is bit ``i`` of ``value`` (``0 <= value < 2**length``):
    ``frozenbitarray(int2ba(value, length, endian="little"))``, made from the little-endian bytes
    directly when ``length`` is a multiple of 8."""
    if length & 7:
        return frozenbitarray(int2ba(value, length=length, endian="little"))
    return frozenbitarray(buffer=value.to_bytes(length >> 3, "little"), endian="little")


def max_line_bytes(protocol: str, schema: Sequence[Field]) -> int:
    """Bytes of the longest upload line (envelope JSON and its newline) a report with ``schema`` can
    make: 16-hex fingerprints, a 32-character metric name, window ``MAX_WINDOW``, every ``uint`` at
    ``size - 1`` and every ``bits`` field ``size`` characters long. Servers reject longer lines."""
    payload = {f.name: (f.size - 1 if f.kind == "uint" else "") for f in schema}
    report = {"v": FORMAT_VERSION, "protocol": protocol, "params": "0" * 16, "payload": payload}
    envelope = {"spec": "0" * 16, "metric": "m" * 32, "window": MAX_WINDOW, "report": report}
    return len(json.dumps(envelope, separators=(",", ":"))) + sum(f.size for f in schema if f.kind == "bits") + 1


def _check_value(name: str, value: Any) -> PayloadValue:
    if not (isinstance(name, str) and _FIELD_RE.match(name)):
        raise ReportError("bad_field", f"field names are [a-z][a-z0-9_]{{0,31}}, got {name!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_UINT:
            raise ReportError("bad_value", f"{name}: uint out of [0, 2**64), got {value}")
        return value
    if isinstance(value, str):
        if len(value) > MAX_BITS or not _BITS_RE.match(value):
            raise ReportError("bad_value", f"{name}: bit strings are 1..2**24 characters of 0/1")
        return frozenbitarray(value, endian="little")
    if isinstance(value, frozenbitarray) and 0 < len(value) <= MAX_BITS:
        return value if value.endian == "little" else frozenbitarray(value.to01(), endian="little")
    raise ReportError("bad_value", f"{name}: expected a uint or a bit string, got {type(value).__name__}")


@dataclass(frozen=True)
class Report:
    """One privatized report. Construct through an encoder; fields are validated here too."""

    protocol: str
    fingerprint: str
    payload: Mapping[str, PayloadValue]
    version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if type(self.version) is not int or self.version != FORMAT_VERSION:
            raise ReportError("bad_version", f"supported format version is {FORMAT_VERSION}, got {self.version!r}")
        if not (isinstance(self.protocol, str) and _PROTOCOL_RE.match(self.protocol)):
            raise ReportError("bad_protocol", f"protocol names are [a-z][a-z0-9_-]{{0,31}}, got {self.protocol!r}")
        if not (isinstance(self.fingerprint, str) and _FINGERPRINT_RE.match(self.fingerprint)):
            raise ReportError("bad_fingerprint", f"fingerprints are 16 lowercase hex digits, got {self.fingerprint!r}")
        if not isinstance(self.payload, Mapping) or not 1 <= len(self.payload) <= MAX_FIELDS:
            raise ReportError("bad_payload", f"payload must be a mapping of 1..{MAX_FIELDS} fields")
        clean = {name: _check_value(name, v) for name, v in self.payload.items()}
        object.__setattr__(self, "payload", MappingProxyType(clean))

    @classmethod
    def trusted(cls, protocol: str, fingerprint: str, payload: dict[str, PayloadValue]) -> "Report":
        """Build without re-validating (for encoders whose output is valid by construction): the
        same object as ``Report(...)`` would make, its fields written straight into ``__dict__``."""
        report = object.__new__(cls)
        fields = report.__dict__
        fields["protocol"], fields["fingerprint"] = protocol, fingerprint
        fields["payload"], fields["version"] = MappingProxyType(payload), FORMAT_VERSION
        return report

    def to_dict(self) -> dict[str, Any]:
        payload = {k: (v if isinstance(v, int) else v.to01()) for k, v in self.payload.items()}
        return {"v": self.version, "protocol": self.protocol, "params": self.fingerprint, "payload": payload}

    def to_json(self) -> str:
        """One JSON line (no trailing newline)."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def to_bytes(self) -> bytes:
        """This report alone as one binary frame."""
        return encode_frames([self])


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ReportError("duplicate_key", f"key {k!r} appears twice")
        out[k] = v
    return out


def loads_utf8(line: str | bytes) -> Any:
    """``json.loads`` of one line, whose bytes must be UTF-8 (RFC 8259 §8.1): ``json.loads`` alone
    would also accept UTF-16 and UTF-32 and a byte order mark. Repeated keys raise ``duplicate_key``."""
    if isinstance(line, (bytes, bytearray, memoryview)):
        line = bytes(line).decode("utf-8")
    return json.loads(line, object_pairs_hook=_no_duplicates)


def parse_json(line: str | bytes) -> Report:
    """Parse and validate one JSON line; raise :class:`ReportError` if it is not a valid report."""
    if len(line) > MAX_LINE:
        unit = "characters" if isinstance(line, str) else "bytes"
        raise ReportError("too_large", f"line longer than {MAX_LINE} {unit}")
    try:
        obj = loads_utf8(line)
    except ReportError:
        raise
    except (ValueError, UnicodeDecodeError, RecursionError, TypeError) as exc:
        raise ReportError("not_json", str(exc)[:200]) from None
    if not isinstance(obj, dict):
        raise ReportError("not_object", f"a report is a JSON object, got {type(obj).__name__}")
    expected = {"v", "protocol", "params", "payload"}
    if missing := expected - obj.keys():
        raise ReportError("missing_key", f"missing {sorted(missing)}")
    if extra := obj.keys() - expected:
        raise ReportError("unknown_key", f"unexpected {sorted(extra)[:5]} (reports carry no other data)")
    if not isinstance(obj["payload"], dict):
        raise ReportError("bad_payload", "payload must be an object")
    return Report(obj["protocol"], obj["params"], obj["payload"], obj["v"])


def validate_report(report: Report, protocol: str, fp: str, schema: tuple[Field, ...]) -> None:
    """Check that ``report`` was made by ``protocol`` with parameters ``fp`` and fits ``schema``."""
    if report.protocol != protocol:
        raise ReportError("wrong_protocol", f"expected {protocol!r}, got {report.protocol!r}")
    if report.fingerprint != fp:
        raise ReportError("wrong_fingerprint", f"expected parameters {fp}, got {report.fingerprint}")
    payload = report.payload
    if len(payload) != len(schema):
        raise ReportError("payload_mismatch", f"expected fields {[f.name for f in schema]}, got {list(payload)}")
    for f in schema:
        v = payload.get(f.name)
        if v is None or (f.kind == "uint") != isinstance(v, int):
            raise ReportError("payload_mismatch", f"field {f.name!r} must be {f.kind}")
        if f.kind == "uint" and v >= f.size:
            raise ReportError("out_of_range", f"{f.name} must be < {f.size}, got {v}")
        if f.kind == "bits" and len(v) != f.size:
            raise ReportError("bad_length", f"{f.name} must have {f.size} bits, got {len(v)}")


# --------------------------------------------------------------------------------------------
# Binary frames
# --------------------------------------------------------------------------------------------


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
        readers = []
        for name, kind, width in self.layout:
            col = self.columns[name]
            if kind == "uint":
                readers.append((name, lambda i, c=col, w=width: int.from_bytes(c[i * w:(i + 1) * w], "little")))
            else:
                nbytes = (width + 7) // 8
                readers.append((name, lambda i, c=col, w=width, nb=nbytes: _unpack_bits(c[i * nb:(i + 1) * nb], w)))
        for i in range(self.count):
            yield Report(self.protocol, self.fingerprint, {name: read(i) for name, read in readers})


def _unpack_bits(raw: bytes, nbits: int) -> frozenbitarray:
    bits = frozenbitarray(buffer=raw, endian="little") if raw else frozenbitarray(endian="little")
    if bits[nbits:].any():
        raise ReportError("bad_value", "padding bits after the last bit must be zero")
    return bits[:nbits]


def _uint_width(max_value: int) -> int:
    return next(w for w in (1, 2, 4, 8) if max_value < 1 << (8 * w))


def _frame_header(protocol: str, fp: str, layout: Iterable[tuple[str, str, int]], count: int) -> bytes:
    layout = list(layout)
    out = [MAGIC, bytes([FORMAT_VERSION, len(protocol)]), protocol.encode("ascii"), bytes.fromhex(fp), bytes([len(layout)])]
    for name, kind, width in layout:
        out += [bytes([len(name)]), name.encode("ascii"), struct.pack("<BI", _KIND_CODES[kind], width)]
    out.append(struct.pack("<I", count))
    return b"".join(out)


def _seal(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def _layout_of(report: Report) -> tuple[tuple[str, str, int], ...]:
    return tuple((k, "uint", 0) if isinstance(v, int) else (k, "bits", len(v)) for k, v in report.payload.items())


def encode_frames(reports: Iterable[Report]) -> bytes:
    """Encode reports as binary frames, one frame per run of reports with the same layout."""
    out: list[bytes] = []
    run: list[Report] = []
    key: tuple[Any, ...] | None = None
    for r in reports:
        k = (r.protocol, r.fingerprint, _layout_of(r))
        if k != key or len(run) >= MAX_FRAME_RECORDS:
            if run:
                out.append(_encode_run(run))
            run, key = [], k
        run.append(r)
    if run:
        out.append(_encode_run(run))
    return b"".join(out)


def _encode_run(run: list[Report]) -> bytes:
    first = run[0]
    layout, columns = [], []
    for name, kind, width in _layout_of(first):
        values = [r.payload[name] for r in run]
        if kind == "uint":
            width = _uint_width(max(values))
            columns.append(b"".join(v.to_bytes(width, "little") for v in values))
        else:
            columns.append(b"".join(v.tobytes() for v in values))
        layout.append((name, kind, width))
    return _seal(_frame_header(first.protocol, first.fingerprint, layout, len(run)) + b"".join(columns))


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
    layout, sizes = [], []
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
    columns = {name: rd.take(count * size) for (name, _, _), size in zip(layout, sizes)}
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


# --------------------------------------------------------------------------------------------
# Columnar batches (simulation and vectorized server paths; columns are numpy arrays)
# --------------------------------------------------------------------------------------------


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
        """The batch as binary frames (vectorized: one ``tobytes`` per column and frame)."""
        out = []
        for start in range(0, self.n, MAX_FRAME_RECORDS):
            stop = min(self.n, start + MAX_FRAME_RECORDS)
            layout, cols = [], []
            for f in self.schema:
                col = self.columns[f.name][start:stop]
                if f.kind == "uint":
                    width = _uint_width(max(f.size - 1, 0))
                    if col.size and (col.min() < 0 or col.max() >= f.size):
                        raise ValueError(f"field {f.name!r} has values outside [0, {f.size}); refusing to encode them")
                    cols.append(col.astype(f"<u{width}").tobytes())
                    layout.append((f.name, "uint", width))
                else:
                    cols.append(col.tobytes())
                    layout.append((f.name, "bits", f.size))
            out.append(_seal(_frame_header(self.protocol, self.fingerprint, layout, stop - start) + b"".join(cols)))
        return b"".join(out)

    def reports(self) -> Iterator[Report]:
        """The batch as individual reports (a Python loop: for export, not for bulk paths)."""
        return (r for frame in iter_frames(self.to_bytes()) for r in frame.reports())
