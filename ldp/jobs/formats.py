"""The input formats of the server jobs, and writers for each (``docs/jobs.md`` has them byte for byte).

* **JSONL**: one upload envelope per line (``docs/client.md``), as the client writes them.
* **CSV**: a header ``spec,metric,window,report``, then one envelope per row; ``report`` is the
  report's JSON text (RFC 4180 quoting).
* **Parquet**: one envelope per row; columns ``spec``, ``metric``, ``protocol``, ``params``
  (strings), ``window``, ``v`` (integers) and one column per payload field, ``payload.<field>``:
  an integer column for a ``uint`` field, a binary column of the packed bits for a ``bits`` field
  (ceil(size/8) bytes, bit i in byte i//8 at position i%8). Rows of other metrics hold nulls there.
* **binary** (``.ldpe``): sections, each a 34 + L byte header naming the spec fingerprint, the
  metric and the window, then binary report frames (``docs/wire-format.md``).

The Parquet writer and verified reader live in :mod:`ldp.jobs.formats_parquet` (``write_parquet``,
``parquet_row_groups``, ``PARQUET_KEYS``: importable from here too); this module holds the others.
"""

from __future__ import annotations

import csv
import json
import os
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ldp.jobs.formats_parquet import (
    PARQUET_KEYS as PARQUET_KEYS,
    PARQUET_VERIFY_IN_MEMORY as PARQUET_VERIFY_IN_MEMORY,
    parquet_row_groups as parquet_row_groups,
    write_parquet as write_parquet,
)
from ldp.reports import MAX_FRAME_RECORDS, Report, ReportBatch, encode_frames
from ldp.spec import Envelope
from ldp.spec.envelope import MAX_WINDOW, METRIC_RE

__all__ = [
    "FORMATS", "SECTION_MAGIC", "SECTION_VERSION", "MAX_SECTION", "CSV_HEADER", "SectionHeader", "detect_format",
    "pack_section_header",
    "read_section_header", "Section", "sections_from_envelopes", "write_jsonl", "write_csv", "write_binary",
    "write_parquet", "PARQUET_KEYS", "EXTENSIONS", "parquet_row_groups",
]

FORMATS = ("jsonl", "csv", "parquet", "binary")
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet",
               ".pq": "parquet", ".ldpe": "binary", ".bin": "binary"}
SECTION_MAGIC = b"LDPE"
SECTION_VERSION = 1
MAX_SECTION = 1 << 28
"""Sections above 256 MiB of frames are refused (``too_large``); the writer keeps them under 64 MiB."""
_WRITE_SECTION = 1 << 26
CSV_HEADER = ("spec", "metric", "window", "report")


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format named by a file's extension (``ValueError`` listing the known ones otherwise)."""
    ext = Path(path).suffix.lower()
    if ext not in EXTENSIONS:
        known = ", ".join(f"{e} ({f})" for e, f in EXTENSIONS.items())
        raise ValueError(f"cannot tell the format of {os.fspath(path)!r} from its extension; known: {known} "
                         "(or pass the format)")
    return EXTENSIONS[ext]


# -- binary sections --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SectionHeader:
    """A binary section's header: the envelope fields shared by its frames, and the frames' length."""

    spec: str
    metric: str
    window: int
    length: int
    header_size: int


def pack_section_header(spec: str, metric: str, window: int, length: int) -> bytes:
    """``LDPE`` | version u8 | spec fingerprint (8 bytes) | metric length u8 | metric (ASCII) |
    window u64 | frames length u64 | CRC-32 u32 of everything before (integers little-endian)."""
    if not METRIC_RE.match(metric):
        raise ValueError(f"metric names match [a-z][a-z0-9_]{{0,31}}, got {metric!r}")
    if not 0 <= window <= MAX_WINDOW:
        raise ValueError(f"window must be in [0, 2**53], got {window}")
    name = metric.encode("ascii")
    head = SECTION_MAGIC + bytes([SECTION_VERSION]) + bytes.fromhex(spec) + bytes([len(name)]) + name
    head += struct.pack("<QQ", window, length)
    return head + struct.pack("<I", zlib.crc32(head))


def read_section_header(data: bytes) -> SectionHeader | str:
    """Parse a header at the start of ``data`` (at least 66 bytes, or up to the end of the file).

    Returns the header, or the reason it cannot be read: ``truncated``, ``bad_magic``,
    ``bad_version``, ``bad_checksum`` (a damaged header; its length cannot be trusted)."""
    if len(data) < 14:
        return "truncated" if SECTION_MAGIC.startswith(data[:4]) or data[:4] == SECTION_MAGIC else "bad_magic"
    if data[:4] != SECTION_MAGIC:
        return "bad_magic"
    size = 34 + data[13]
    if len(data) < size:
        return "truncated"
    if zlib.crc32(data[:size - 4]) != struct.unpack_from("<I", data, size - 4)[0]:
        return "bad_checksum"
    if data[4] != SECTION_VERSION:
        return "bad_version"
    window, length = struct.unpack_from("<QQ", data, 14 + data[13])
    metric = data[14:14 + data[13]].decode("ascii", "replace")
    return SectionHeader(data[5:13].hex(), metric, window, length, size)


@dataclass(frozen=True)
class Section:
    """Reports of one (spec, metric, window): a columnar batch or a list of reports."""

    spec: str
    metric: str
    window: int
    reports: ReportBatch | Sequence[Report]


def sections_from_envelopes(envelopes: Iterable[Envelope]) -> list[Section]:
    """Group envelopes by (spec, metric, window), in order of first appearance."""
    groups: dict[tuple[str, str, int], list[Report]] = {}
    for env in envelopes:
        groups.setdefault((env.spec, env.metric, env.window), []).append(env.report)
    return [Section(s, m, w, reports) for (s, m, w), reports in groups.items()]


def _frames(reports: ReportBatch | Sequence[Report]) -> Iterator[bytes]:
    """The reports as binary frames, in pieces of at most ~64 MiB (one section each)."""
    if isinstance(reports, ReportBatch):
        row = sum(8 if f.kind == "uint" else (f.size + 7) // 8 for f in reports.schema)
        step = max(1, min(MAX_FRAME_RECORDS, _WRITE_SECTION // row))
        for start in range(0, reports.n, step):
            cols = {k: v[start:start + step] for k, v in reports.columns.items()}
            yield ReportBatch(reports.protocol, reports.fingerprint, reports.schema, cols).to_bytes()
    else:
        reports = list(reports)
        for start in range(0, len(reports), MAX_FRAME_RECORDS):
            yield encode_frames(reports[start:start + MAX_FRAME_RECORDS])


def _open(target: str | os.PathLike[str] | IO[Any], mode: str) -> tuple[IO[Any], bool]:
    if isinstance(target, (str, os.PathLike)):
        return (open(target, mode) if "b" in mode else open(target, mode, newline="")), True
    return target, False


def write_binary(target: str | os.PathLike[str] | IO[bytes], sections: Iterable[Section]) -> int:
    """Write sections as an ``.ldpe`` file (or to a binary stream); returns the reports written."""
    fh, close = _open(target, "wb")
    total = 0
    try:
        for s in sections:
            for frames in _frames(s.reports):
                fh.write(pack_section_header(s.spec, s.metric, s.window, len(frames)))
                fh.write(frames)
            total += len(s.reports)
    finally:
        if close:
            fh.close()
    return total


def _lines(items: Iterable[Envelope | str]) -> Iterator[str]:
    for it in items:
        yield it.to_json() if isinstance(it, Envelope) else it.rstrip("\n")


def write_jsonl(target: str | os.PathLike[str] | IO[str], items: Iterable[Envelope | str]) -> int:
    """Write envelopes (or upload lines as given) one per line; returns the lines written."""
    fh, close = _open(target, "w")
    n = 0
    try:
        for line in _lines(items):
            fh.write(line + "\n")
            n += 1
    finally:
        if close:
            fh.close()
    return n


def write_csv(target: str | os.PathLike[str] | IO[str], items: Iterable[Envelope | str]) -> int:
    """Write envelopes (or upload lines, parsed as JSON) in the CSV layout; returns the rows written."""
    fh, close = _open(target, "w")
    n = 0
    try:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(CSV_HEADER)
        for it in items:
            obj = json.loads(it) if isinstance(it, str) else json.loads(it.to_json())
            w.writerow((obj["spec"], obj["metric"], obj["window"], json.dumps(obj["report"], separators=(",", ":"))))
            n += 1
    finally:
        if close:
            fh.close()
    return n

