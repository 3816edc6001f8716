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

This module is where to import all of it from. The definitions sit in three modules below it, each importing
only the ones under it: :mod:`ldp.errors` (``ReportError``, ``REASONS``), :mod:`ldp.wire` (the report, JSON
lines, and the frame writer ``encode_frames``) and :mod:`ldp.frames` (the frame reader and
:class:`ReportBatch`).
"""

from __future__ import annotations

from ldp.errors import REASONS, ReportError
from ldp.frames import (  # the names as ... as ...: exported, not in __all__ (which is as it was)
    Frame as Frame,
    ReportBatch,
    decode_binary as decode_binary,
    encode_batch as encode_batch,
    iter_frames as iter_frames,
    scan_frames as scan_frames,
)
from ldp.wire import (
    FORMAT_VERSION,
    MAGIC as MAGIC,
    MAX_BITS as MAX_BITS,
    MAX_FIELDS as MAX_FIELDS,
    MAX_FRAME_RECORDS as MAX_FRAME_RECORDS,
    MAX_LINE,
    MAX_UINT as MAX_UINT,
    MAX_WINDOW,
    Field,
    PayloadValue as PayloadValue,
    Report,
    bits_from_int,
    canonical_json,
    encode_frames as encode_frames,
    fingerprint,
    loads_utf8 as loads_utf8,
    max_line_bytes,
    parse_json,
    validate_report,
)

__all__ = [  # and, from ldp.frames: Frame, encode_frames, iter_frames, scan_frames, decode_binary (imported above)
    "FORMAT_VERSION", "MAX_LINE", "MAX_WINDOW", "max_line_bytes", "REASONS", "ReportError", "Field", "Report",
    "ReportBatch", "canonical_json", "fingerprint", "parse_json", "validate_report", "bits_from_int",
]
