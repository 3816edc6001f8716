"""Binary inputs (``.ldpe``, ``docs/jobs.md``) read into batches (:mod:`ldp.jobs.batches`), one section at a time.

Each section's header names the spec, metric and window its frames share: the section is routed once, and each
of its frames becomes one :class:`~ldp.jobs.batches.ColumnBatch` whose columns are views of the section's bytes
(:func:`~ldp.decoders.base.frame_to_batch`). A damaged section (header, frames) is rejected with the number of
reports its frames declare (at least 1), and reading resumes at the next intact section header.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from typing import IO, Any

from ldp.decoders.base import frame_to_batch
from ldp.jobs.batches import Batch, BatchSink, ColumnBatch, ParsedReports, ReadOptions, Rejected
from ldp.jobs.formats import MAX_SECTION, SECTION_MAGIC, SECTION_VERSION, SectionHeader, read_section_header
from ldp.reports import MAGIC as FRAME_MAGIC, ReportError, scan_frames
from ldp.spec.envelope import MAX_WINDOW, METRIC_RE

__all__ = ["binary_batches", "read_binary"]

Progress = Callable[[int], None]
PIECE = 1 << 23
"""Bytes of a damaged span read at a time while its frames are counted."""
_HEADER_MAX = 34 + 255



def _count_span(fh: IO[bytes], start: int, end: int, piece: int = PIECE) -> int:
    """Reports declared by the frames found in ``[start, end)`` from the first frame magic on
    (each unreadable piece counts 1; at least 1 in all), read in pieces of ``piece`` bytes; a
    piece without a frame magic costs one ``bytes.find``."""
    total, pos, first = 0, start, True
    while pos < end:
        fh.seek(pos)
        data = fh.read(min(end - pos, piece))
        if not data:
            break
        at = data.find(FRAME_MAGIC) if first else (0 if FRAME_MAGIC in data else -1)
        if at >= 0:
            total += sum(item.records if isinstance(item, ReportError) else item.count
                         for item in scan_frames(data[at:]))
            first = False
        pos += len(data)
    return max(total, 1)


def _next_section(fh: IO[bytes], start: int, size: int) -> int:
    """Offset of the next section with an intact header after ``start`` (or ``size``).

    Only ``LDPE`` followed by the current version byte can start an intact header, so that is what
    is searched for; a candidate's header is checked in the block already read (a new read only when
    it straddles the block's end): the scan stays linear, with a few operations per candidate."""
    lead = SECTION_MAGIC + bytes([SECTION_VERSION])
    pos = start + 1
    while pos < size:
        fh.seek(pos)
        block = fh.read(1 << 20)
        at = block.find(lead)
        while at >= 0:
            head = block[at:at + _HEADER_MAX]
            if len(head) < _HEADER_MAX and pos + at + len(head) < size:
                fh.seek(pos + at)
                head = fh.read(_HEADER_MAX)
            if isinstance(read_section_header(head), SectionHeader):
                return pos + at
            at = block.find(lead, at + 1)
        if len(block) < 1 << 20:
            break
        pos += len(block) - len(lead) + 1
    return size


def binary_batches(fh: IO[bytes], options: ReadOptions, progress: Progress | None = None) -> Iterator[Batch]:
    """The batches of an ``.ldpe`` stream (seekable), one per frame of each section, holding one section at a time.
    Report numbers count from 1 across the file; each rejects line also gives the byte ``offset`` of its section.
    A damaged section (header, or a length past the end or over :data:`MAX_SECTION`) is rejected with the
    number of reports its frames declare (at least 1)."""
    size = fh.seek(0, os.SEEK_END)
    offset, record = 0, 1
    while offset < size:
        fh.seek(offset)
        head = fh.read(_HEADER_MAX)
        h = read_section_header(head)
        if isinstance(h, str):
            nxt = _next_section(fh, offset, size)
            count = _count_span(fh, offset, nxt)
            yield Rejected(record, h, f"damaged section header; {nxt - offset} bytes skipped", head[:64].hex(), count,
                           offset)
        else:
            nxt = min(offset + h.header_size + h.length, size)
            body = offset + h.header_size
            if h.length > MAX_SECTION or nxt < offset + h.header_size + h.length:
                reason = "too_large" if h.length > MAX_SECTION else "truncated"
                count = _count_span(fh, body, nxt)
                yield Rejected(record, reason, f"section of {h.length} bytes at offset {offset}", head[:64].hex(),
                               count, offset)
            else:
                fh.seek(body)
                count = yield from _section_batches(options, h, fh.read(h.length), record, offset)
        record += count
        if progress is not None:
            progress(nxt - offset)
        offset = nxt


def read_binary(fh: IO[bytes], folder: BatchSink, progress: Progress | None = None) -> None:
    """Fold every section of an ``.ldpe`` stream (:func:`binary_batches`)."""
    folder.consume(binary_batches(fh, folder.options, progress))


def _section_batches(options: ReadOptions, h: SectionHeader, frames: bytes, record: int,
                     offset: int) -> Generator[Batch, None, int]:
    """Route a section and yield its frames as batches (zero-copy columns over ``frames``); returns the reports
    it held (declared by its frames)."""
    spec = options.specs.get(h.spec)
    metric = None if spec is None else spec.envelope_metric(h.metric)
    if not METRIC_RE.match(h.metric):
        problem = ("bad_metric", f"metric names match [a-z][a-z0-9_]{{0,31}}, got {h.metric!r}")
    elif h.window > MAX_WINDOW:
        problem = ("bad_window", f"window must be in [0, 2**53], got {h.window}")
    elif spec is None:
        problem = ("unknown_spec", f"no known spec has fingerprint {h.spec}")
    elif metric is None:
        problem = ("unknown_metric", f"no metric {h.metric!r} in spec {spec.name!r}")
    else:
        problem = None
    routed = metric if problem is None else None
    start = record
    if routed is not None:
        yield ParsedReports(routed, h.window, ())  # the section names its aggregate, even without frames
    for item in scan_frames(frames):
        if isinstance(item, ReportError):
            yield Rejected(record, item.reason, item.detail, "", item.records, offset, routed, h.window)
            record += item.records
        elif problem is not None:
            yield Rejected(record, problem[0], problem[1], "", item.count, offset)
            record += item.count
        else:
            batch = frame_to_batch(item)
            yield ColumnBatch(routed, h.window, batch, record, _row_raw(batch), offset)  # type: ignore[arg-type]
            record += item.count
    return max(record - start, 0)


def _row_raw(batch: Any) -> Callable[[int], Any]:
    def raw(i: int) -> Any:
        return {k: (int(v[i]) if v.ndim == 1 else bytes(v[i]).hex()) for k, v in batch.columns.items()}
    return raw
