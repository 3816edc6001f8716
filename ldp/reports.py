"""The wire format of reports (specified byte for byte in ``docs/wire-format.md``).

A :class:`Report` carries a format version, its protocol's name, the fingerprint of the
parameters it was made with, and a payload of named fields, each an unsigned integer
(``uint``: a hash index, a cohort, a value index) or a bit string (``bits``). Nothing else:
there is no slot for a user or device identifier, nor a timestamp.

Two encodings:

* **JSON lines**: ``{"v":1,"protocol":"grr","params":"<16 hex>","payload":{"index":3}}``, bit
  strings as ``"0110..."`` (character i is bit i);
* **binary frames** for bulk (:mod:`ldp.frames`): a header naming protocol, fingerprint and field
  layout, then one fixed-width column per field and a CRC-32, so a server reads a frame with one
  ``frombuffer`` per column.

Parsing validates everything; anything malformed raises :class:`ReportError`, whose ``reason``
is a machine-readable code from :data:`REASONS`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from bitarray import frozenbitarray
from bitarray.util import int2ba

__all__ = [  # and, from ldp.frames: Frame, encode_frames, iter_frames, scan_frames, decode_binary (see __getattr__)
    "FORMAT_VERSION", "MAX_LINE", "MAX_WINDOW", "max_line_bytes", "REASONS", "ReportError", "Field", "Report",
    "ReportBatch", "canonical_json", "fingerprint", "parse_json", "validate_report", "bits_from_int",
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


_SMALL_BITS: dict[tuple[int, int], frozenbitarray] = {}
_SMALL_BITS_LENGTH, _SMALL_BITS_ENTRIES = 32, 8192  # at most ~1 MB of shared immutable bit strings


def bits_from_int(value: int, length: int) -> frozenbitarray:
    """The ``length``-bit string whose bit ``i`` is bit ``i`` of ``value`` (``0 <= value < 2**length``):
    ``frozenbitarray(int2ba(value, length, endian="little"))``, made from the little-endian bytes
    directly when ``length`` is a multiple of 8. Strings of at most 32 bits are kept (the first 8,192
    made; they are immutable, so sharing one is safe): making a frozenbitarray costs ~0.9 µs, a hit ~0.1."""
    if length <= _SMALL_BITS_LENGTH:
        bits = _SMALL_BITS.get((value, length))
        if bits is not None:
            return bits
    if length & 7:
        bits = frozenbitarray(int2ba(value, length=length, endian="little"))
    else:
        bits = frozenbitarray(buffer=value.to_bytes(length >> 3, "little"), endian="little")
    if length <= _SMALL_BITS_LENGTH and len(_SMALL_BITS) < _SMALL_BITS_ENTRIES:
        _SMALL_BITS[value, length] = bits
    return bits


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
    def trusted(cls, protocol: str, fingerprint: str, payload: dict[str, PayloadValue]) -> Report:
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
        from ldp.frames import encode_frames

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
        if isinstance(v, int):  # then f.kind == "uint" (checked above)
            if v >= f.size:
                raise ReportError("out_of_range", f"{f.name} must be < {f.size}, got {v}")
        elif f.kind == "bits" and len(v) != f.size:
            raise ReportError("bad_length", f"{f.name} must have {f.size} bits, got {len(v)}")


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
        """The batch as binary frames (:func:`ldp.frames.encode_batch`)."""
        from ldp.frames import encode_batch

        return encode_batch(self)

    def reports(self) -> Iterator[Report]:
        """The batch as individual reports (a Python loop: for export, not for bulk paths)."""
        from ldp.frames import iter_frames

        return (r for frame in iter_frames(self.to_bytes()) for r in frame.reports())


_FRAME_NAMES = frozenset({"Frame", "encode_frames", "iter_frames", "scan_frames", "decode_binary"})


def __getattr__(name: str) -> Any:
    """The binary-frame names, defined in :mod:`ldp.frames`, exported here too (on first use: the two
    modules import each other)."""
    if name in _FRAME_NAMES:
        from ldp import frames

        return getattr(frames, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
