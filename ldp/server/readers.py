"""Streaming readers: each input format, read in chunks with bounded memory, into a :class:`~ldp.server.fold.Folder`.

Memory per reader: JSONL about two chunks plus one line of up to ``MAX_LINE`` bytes (a longer line
is rejected as ``too_large`` while it is skipped, never held); CSV one chunk of rows; Parquet one
record batch; binary one section (at most :data:`~ldp.server.formats.MAX_SECTION` bytes). Damaged
binary sections are rejected with the number of reports their frames declare (at least 1).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from typing import IO, Any, Callable, Iterator

from ldp.decoders.base import frame_to_batch
from ldp.reports import MAGIC as FRAME_MAGIC, MAX_LINE, ReportError, scan_frames
from ldp.server.fold import RAW_LIMIT, Folder
from ldp.server.formats import (CSV_HEADER, MAX_SECTION, SECTION_MAGIC, SectionHeader, detect_format,
                                read_section_header)
from ldp.spec.envelope import MAX_WINDOW, METRIC_RE

__all__ = ["CHUNK_BYTES", "InputError", "iter_line_chunks", "read_input", "read_jsonl", "read_csv", "read_binary"]

CHUNK_BYTES = 1 << 23
"""Bytes read at a time (8 MiB)."""
CSV_ROWS = 1 << 16
_INT_RE = re.compile(r"-?(0|[1-9][0-9]*)\Z")
_HEADER_MAX = 34 + 255
Progress = Callable[[int], None]


class InputError(ValueError):
    """An input file that cannot be read as its format at all (e.g. a CSV without the header)."""


class Oversize:
    """A line longer than ``MAX_LINE`` bytes: its first bytes (for the rejects file) and its length."""

    def __init__(self, head: bytes, length: int) -> None:
        self.head, self.length = head, length


def iter_line_chunks(fh: IO[bytes], chunk_bytes: int = CHUNK_BYTES, max_line: int = MAX_LINE,
                     progress: Progress | None = None) -> Iterator[tuple[int, bytes | Oversize]]:
    """``(line number of the first line, bytes of whole lines each ending in \\n)``, and
    ``(line number, Oversize)`` for every line longer than ``max_line``. The last line gets a
    ``\\n`` if it lacks one. Memory: at most ``chunk_bytes + max_line`` bytes held."""
    line_no, carry = 1, b""
    while True:
        block = fh.read(chunk_bytes)
        if progress is not None and block:
            progress(len(block))
        if not block:
            if carry:
                yield line_no, carry + b"\n"
            return
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut:
            yield line_no, data[:cut]
            line_no += data.count(b"\n", 0, cut)
        carry = data[cut:]
        if len(carry) > max_line:  # skip the rest of this line without keeping it
            head, length = carry[:4 * RAW_LIMIT], len(carry)
            while True:
                block = fh.read(chunk_bytes)
                if progress is not None and block:
                    progress(len(block))
                end = block.find(b"\n")
                if end >= 0 or not block:
                    length += end if end >= 0 else len(block)
                    carry = block[end + 1:] if end >= 0 else b""
                    break
                length += len(block)
            yield line_no, Oversize(head, length)
            line_no += 1


def read_jsonl(fh: IO[bytes], folder: Folder, chunk_bytes: int = CHUNK_BYTES, progress: Progress | None = None) -> None:
    """Fold every line of a JSONL stream of upload envelopes."""
    for line_no, chunk in iter_line_chunks(fh, chunk_bytes, progress=progress):
        if isinstance(chunk, Oversize):
            folder.log(line_no, "too_large", f"line longer than {MAX_LINE}", chunk.head)
        else:
            folder.fold_lines(chunk, line_no)


def _csv_line(row: list[str]) -> str:
    spec, metric, window, report = row
    window = window if _INT_RE.match(window) else json.dumps(window)
    return f'{{"spec":{json.dumps(spec)},"metric":{json.dumps(metric)},"window":{window},"report":{report}}}'


def read_csv(fh: IO[bytes], folder: Folder, chunk_rows: int = CSV_ROWS, progress: Progress | None = None) -> None:
    """Fold every row of a CSV file of envelopes (header ``spec,metric,window,report``). Row i
    (1-based, after the header) is record i; a row that is not 4 cells is rejected as ``bad_row``."""
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE))
    text = io.TextIOWrapper(io.BufferedReader(_Counted(fh, progress)), encoding="utf-8", errors="replace", newline="")
    reader = csv.reader(text, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise InputError(f"{folder.source}: not a CSV file: {exc}") from None
    if tuple(h.strip().lstrip("\ufeff") for h in header) != CSV_HEADER:
        raise InputError(f"{folder.source}: the CSV header must be {','.join(CSV_HEADER)}, "
                         f"got {','.join(header)[:200]}")
    first, lines, raws = 1, [], []  # first: the record number of lines[0]

    def flush() -> int:
        if lines:
            folder.fold_lines(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"), first, list(raws))
        n = first + len(lines)
        lines.clear()
        raws.clear()
        return n

    while True:
        try:
            row: list[str] | None = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            row, problem = None, f"CSV: {exc}"
        line = _csv_line(row) if row is not None and len(row) == 4 else ""
        if row is not None and len(row) == 4 and "\n" not in line and "\r" not in line:
            lines.append(line)
            raws.append(row)
            if len(lines) >= chunk_rows:
                first = flush()
            continue
        first = flush()  # a row handled alone: keep the numbering in order
        if row is None:
            folder.log(first, "bad_row", problem, "")
        elif not row:
            folder.blank += 1
        elif len(row) != 4:
            folder.log(first, "bad_row", f"a row has 4 cells ({','.join(CSV_HEADER)}), got {len(row)}", row)
        else:  # a newline inside the report's JSON: the full parser, on this row alone
            folder.fold_line(line, first, row)
        first += 1
    flush()


class _Counted(io.RawIOBase):
    """A binary stream that reports the bytes read (for progress bars)."""

    def __init__(self, fh: IO[bytes], progress: Progress | None) -> None:
        self.fh, self.progress = fh, progress

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        n = self.fh.readinto(buf)  # type: ignore[attr-defined]
        if self.progress is not None and n:
            self.progress(n)
        return n


# -- binary ----------------------------------------------------------------------------------------------


def _count_span(fh: IO[bytes], start: int, end: int) -> int:
    """Reports declared by the frames found in ``[start, end)`` from the first frame magic on
    (each unreadable piece counts 1; at least 1 in all), read in pieces of at most ``MAX_SECTION``."""
    total, pos, first = 0, start, True
    while pos < end:
        fh.seek(pos)
        data = fh.read(min(end - pos, MAX_SECTION))
        if not data:
            break
        at = data.find(FRAME_MAGIC) if first else 0
        if at >= 0:
            total += sum(item.records if isinstance(item, ReportError) else item.count
                         for item in scan_frames(data[at:]))
            first = False
        pos += len(data)
    return max(total, 1)


def _next_section(fh: IO[bytes], start: int, size: int) -> int:
    """Offset of the next section with an intact header after ``start`` (or ``size``)."""
    pos = start + 1
    while pos < size:
        fh.seek(pos)
        block = fh.read(1 << 20)
        at = block.find(SECTION_MAGIC)
        while at >= 0:
            fh.seek(pos + at)
            if isinstance(read_section_header(fh.read(_HEADER_MAX)), SectionHeader):
                return pos + at
            at = block.find(SECTION_MAGIC, at + 1)
        if len(block) < 1 << 20:
            break
        pos += len(block) - 3
    return size


def read_binary(fh: IO[bytes], folder: Folder, progress: Progress | None = None) -> None:
    """Fold every section of an ``.ldpe`` stream (seekable). Report numbers count from 1 across
    the file; each rejects line also gives the byte ``offset`` of its section."""
    size = fh.seek(0, os.SEEK_END)
    offset, record = 0, 1
    while offset < size:
        fh.seek(offset)
        head = fh.read(_HEADER_MAX)
        h = read_section_header(head)
        if isinstance(h, str):
            nxt = _next_section(fh, offset, size)
            count = _count_span(fh, offset, nxt)
            folder.log(record, h, f"damaged section header; {nxt - offset} bytes skipped", head[:64].hex(), count,
                       offset)
        else:
            nxt = min(offset + h.header_size + h.length, size)
            body = offset + h.header_size
            if h.length > MAX_SECTION or nxt < offset + h.header_size + h.length:
                reason = "too_large" if h.length > MAX_SECTION else "truncated"
                count = _count_span(fh, body, nxt)
                folder.log(record, reason, f"section of {h.length} bytes at offset {offset}", head[:64].hex(),
                           count, offset)
            else:
                fh.seek(body)
                count = _fold_section(folder, h, fh.read(h.length), record, offset)
        record += count
        if progress is not None:
            progress(nxt - offset)
        offset = nxt


def _fold_section(folder: Folder, h: SectionHeader, frames: bytes, record: int, offset: int) -> int:
    """Route a section and fold its frames; returns the reports it held (declared by its frames)."""
    metric = folder.metric_of(h.spec, h.metric)
    if not METRIC_RE.match(h.metric):
        problem = ("bad_metric", f"metric names match [a-z][a-z0-9_]{{0,31}}, got {h.metric!r}")
    elif h.window > MAX_WINDOW:
        problem = ("bad_window", f"window must be in [0, 2**53], got {h.window}")
    elif h.spec not in folder.specs:
        problem = ("unknown_spec", f"no known spec has fingerprint {h.spec}")
    elif metric is None:
        problem = ("unknown_metric", f"no metric {h.metric!r} in spec {folder.specs[h.spec].name!r}")
    else:
        problem = None
    agg = folder.aggregate(metric, h.window) if metric is not None and problem is None else None
    start = record
    for item in scan_frames(frames):
        if isinstance(item, ReportError):
            folder.reject(record, item.reason, item.detail, "", records=item.records, agg=agg, offset=offset)
            record += item.records
        elif problem is not None:
            folder.log(record, problem[0], problem[1], "", item.count, offset)
            record += item.count
        else:
            batch = frame_to_batch(item)
            folder.fold_batch(metric, h.window, batch, record, _row_raw(batch), offset)  # type: ignore[arg-type]
            record += item.count
    return max(record - start, 0)


def _row_raw(batch: Any) -> Callable[[int], Any]:
    def raw(i: int) -> Any:
        return {k: (int(v[i]) if v.ndim == 1 else bytes(v[i]).hex()) for k, v in batch.columns.items()}
    return raw


# -- any format --------------------------------------------------------------------------------------------


def read_input(path: str | os.PathLike[str], folder: Folder, fmt: str | None = None,
               chunk_bytes: int = CHUNK_BYTES, progress: Progress | None = None) -> None:
    """Fold one input file of format ``fmt`` (default: from its extension) into ``folder``."""
    fmt = fmt or detect_format(path)
    if fmt == "parquet":
        from ldp.server.arrow import read_parquet

        read_parquet(path, folder, progress=progress)
        return
    with open(path, "rb") as fh:
        if fmt == "jsonl":
            read_jsonl(fh, folder, chunk_bytes, progress)
        elif fmt == "csv":
            read_csv(fh, folder, progress=progress)
        elif fmt == "binary":
            read_binary(fh, folder, progress)
        else:
            raise ValueError(f"unknown input format {fmt!r} (known: jsonl, csv, parquet, binary)")
