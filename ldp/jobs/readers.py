"""Streaming readers: each input format, read in chunks with bounded memory, as batches (:mod:`ldp.jobs.batches`).

:func:`read_batches` is the one reading face: ``(path, format)`` to an iterator of batches, whatever the format
(JSONL and CSV here, their lines read by :mod:`ldp.jobs.lines`; binary frames in :mod:`ldp.jobs.binary`;
Parquet in :mod:`ldp.jobs.arrow`). The readers know nothing about the fold; :func:`read_input` (and ``read_jsonl``,
``read_csv``, ``read_binary``) fold an input into a :class:`~ldp.jobs.fold.Folder` for the callers that want
that in one call.

Memory per reader: JSONL about two chunks plus one line of up to ``MAX_LINE`` bytes (a longer line
is rejected as ``too_large`` while it is skipped, never held); CSV the same with records found by
their quote parity (a quoted field may hold newlines); Parquet one
record batch; binary one section (at most :data:`~ldp.jobs.formats.MAX_SECTION` bytes). Damaged
binary sections are rejected with the number of reports their frames declare (at least 1).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

import numpy as np

from ldp.errors import InputError
from ldp.jobs.batches import (
    RAW_LIMIT,
    Batch,
    BatchSink,
    Blank,
    ReadOptions,
    Rejected,
    RejectedEach,
)
from ldp.jobs.binary import binary_batches as binary_batches, read_binary as read_binary
from ldp.jobs.formats import (
    CSV_HEADER,
    FORMATS,
    detect_format,
)
from ldp.jobs.lines import line_batch, line_batches
from ldp.reports import MAX_LINE
from ldp.spec import CollectionSpec

__all__ = ["CHUNK_BYTES", "InputError", "iter_line_chunks", "iter_csv_records", "read_batches", "jsonl_batches",
           "csv_batches", "binary_batches", "read_input", "read_jsonl", "read_csv", "read_binary"]

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 23
"""Bytes read at a time (8 MiB)."""
CSV_CHUNK = 1 << 21
"""Bytes of CSV read at a time (2 MiB: the positions of its newlines, quotes and commas are arrays)."""
_INT_RE = re.compile(r"-?(0|[1-9][0-9]*)\Z")
Progress = Callable[[int], None]


class Oversize:
    """A line longer than ``MAX_LINE`` bytes: its first bytes (for the rejects file) and its length."""

    def __init__(self, head: bytes, length: int) -> None:
        self.head, self.length = head, length


def iter_line_chunks(fh: IO[bytes], chunk_bytes: int = CHUNK_BYTES, max_line: int = MAX_LINE,
                     progress: Progress | None = None) -> Iterator[tuple[int, bytes | Oversize]]:
    """``(line number of the first line, bytes of whole lines each ending in \\n)``, and
    ``(line number, Oversize)`` for every line longer than ``max_line``. The last line gets a
    ``\\n`` if it lacks one. Memory: at most ``chunk_bytes + max_line`` bytes held."""
    return _iter_records(fh, chunk_bytes, max_line, progress, _line_cut, _line_first_end, lambda carry: 0)


def _line_cut(data: bytes) -> tuple[int, int]:
    cut = data.rfind(b"\n") + 1
    return cut, data.count(b"\n", 0, cut)


def _line_first_end(block: bytes, state: int) -> tuple[int, int]:
    return block.find(b"\n"), 0


def _iter_records(fh: IO[bytes], chunk_bytes: int, max_line: int, progress: Progress | None,
                  cut_of: Callable[[bytes], tuple[int, int]], first_end: Callable[[bytes, int], tuple[int, int]],
                  state_of: Callable[[bytes], int]) -> Iterator[tuple[int, bytes | Oversize]]:
    """Whole records of a stream, a chunk at a time: ``cut_of(data)`` gives the offset after the
    last record end in ``data`` (which starts a record) and how many records end before it; a
    record longer than ``max_line`` is skipped (:func:`_skip_record`, from ``state_of(its start)``)."""
    number, carry = 1, b""
    while True:
        block = fh.read(chunk_bytes)
        if progress is not None and block:
            progress(len(block))
        if not block:
            if carry:
                yield number, carry + b"\n"
            return
        data = carry + block
        cut, count = cut_of(data)
        if cut:
            yield number, data[:cut]
            number += count
        carry = data[cut:]
        if len(carry) > max_line:  # skip the rest of this record without keeping it
            oversize, carry = _skip_record(fh, carry, chunk_bytes, progress, first_end, state_of(carry))
            yield number, oversize
            number += 1


def _skip_record(fh: IO[bytes], carry: bytes, chunk_bytes: int, progress: Progress | None,
                 first_end: Callable[[bytes, int], tuple[int, int]], state: int = 0) -> tuple[Oversize, bytes]:
    """Read past the end of an over-long record that begins with ``carry``, holding one block at a
    time: ``(the record as an Oversize, the bytes after its end)``. ``first_end(block, state)`` is
    the offset of the record's end in ``block`` (-1: none) and the state carried to the next block."""
    head, length = carry[:4 * RAW_LIMIT], len(carry)
    while True:
        block = fh.read(chunk_bytes)
        if progress is not None and block:
            progress(len(block))
        end, state = first_end(block, state)
        if end >= 0 or not block:
            length += end if end >= 0 else len(block)
            return Oversize(head, length), (block[end + 1:] if end >= 0 else b"")
        length += len(block)


def jsonl_batches(fh: IO[bytes], options: ReadOptions, chunk_bytes: int = CHUNK_BYTES,
                  progress: Progress | None = None) -> Iterator[Batch]:
    """The batches of a JSONL stream of upload envelopes (line i is record i)."""
    for line_no, chunk in iter_line_chunks(fh, chunk_bytes, progress=progress):
        if isinstance(chunk, Oversize):
            yield Rejected(line_no, "too_large", f"line longer than {MAX_LINE}", chunk.head)
        else:
            yield from line_batches(chunk, line_no, options)


def read_jsonl(fh: IO[bytes], folder: BatchSink, chunk_bytes: int = CHUNK_BYTES,
               progress: Progress | None = None) -> None:
    """Fold every line of a JSONL stream of upload envelopes (:func:`jsonl_batches`)."""
    folder.consume(jsonl_batches(fh, folder.options, chunk_bytes, progress))


def _csv_line(row: list[str]) -> str:
    spec, metric, window, report = row
    window = window if _INT_RE.match(window) else json.dumps(window)
    return f'{{"spec":{json.dumps(spec)},"metric":{json.dumps(metric)},"window":{window},"report":{report}}}'


def _csv_ends(data: bytes) -> np.ndarray:
    """Offsets of the ``\\n`` that end CSV records in ``data`` (which starts a record): those after
    an even number of ``"`` (RFC 4180: a quoted field may hold newlines, a ``"`` in it is doubled)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(raw == 10)
    quotes = np.flatnonzero(raw == 34)
    return nl[np.searchsorted(quotes, nl) % 2 == 0] if quotes.size else nl


def iter_csv_records(fh: IO[bytes], chunk_bytes: int = CSV_CHUNK, max_line: int = MAX_LINE,
                     progress: Progress | None = None) -> Iterator[tuple[int, bytes | Oversize]]:
    """As :func:`iter_line_chunks`, for CSV records (:func:`_csv_ends`): ``(number of the first
    record, whole records each ending in \\n)`` and ``(number, Oversize)`` for a record longer than
    ``max_line``, skipped without being held (only its quote parity is kept). Memory:
    ``chunk_bytes + max_line`` bytes, and arrays of the positions of the newlines and quotes of one chunk."""
    return _iter_records(fh, chunk_bytes, max_line, progress, _csv_cut, _csv_first_end,
                         lambda carry: carry.count(b'"') % 2)


def _csv_cut(data: bytes) -> tuple[int, int]:
    ends = _csv_ends(data)
    return (int(ends[-1]) + 1 if ends.size else 0), len(ends)


def _csv_first_end(block: bytes, odd: int) -> tuple[int, int]:
    """The first record end in ``block`` when ``odd`` quotes precede it in its record, and the parity after it."""
    end = _csv_ends(b'"' * odd + block)[:1] - odd
    return (int(end[0]) if end.size else -1), (odd + block.count(b'"')) % 2


def _csv_row(text: str) -> list[str] | str:
    """The cells of one CSV record, or the csv module's complaint."""
    try:
        rows = list(csv.reader((text,), strict=True))
    except csv.Error as exc:
        return f"CSV: {exc}"
    return rows[0] if len(rows) == 1 else f"CSV: {len(rows)} rows in one record"


def csv_batches(fh: IO[bytes], options: ReadOptions, progress: Progress | None = None, chunk_bytes: int = CSV_CHUNK,
                max_line: int | None = None) -> Iterator[Batch]:
    """The batches of a CSV file of envelopes (header ``spec,metric,window,report``). Record i
    (1-based, after the header) is row i; a row that is not 4 cells (or not CSV) is rejected as
    ``bad_row``, one longer than ``max_line`` bytes as ``too_large`` (skipped, never held). Rows
    that cannot be 4 cells are found and counted in bulk, from their unquoted commas. ``max_line``
    defaults to ``MAX_LINE``. A file whose first row is not that header is an :class:`InputError`."""
    max_line = MAX_LINE if max_line is None else max_line
    limit = csv.field_size_limit(max(csv.field_size_limit(), max_line))  # process-wide: restored below
    try:
        chunks = iter_csv_records(fh, chunk_bytes, max_line, progress)
        header = True
        for number, data in chunks:
            if isinstance(data, Oversize):
                if header:
                    raise InputError(f"{options.source}: not a CSV file: a first row of {data.length} bytes")
                yield Rejected(number - 1, "too_large", f"row longer than {max_line} bytes", data.head)
                continue
            raw = np.frombuffer(data, dtype=np.uint8)
            ends = _csv_ends(data)
            if not ends.size:  # the last record, with a quote left open
                ends = np.array([len(data) - 1])
            starts = np.concatenate(([0], ends[:-1] + 1))
            ends = ends - ((ends > starts) & (raw[np.maximum(ends - 1, 0)] == 13))  # a CRLF ends a record too
            if header:
                _check_header(data[:int(ends[0])].decode("utf-8", "replace"), options.source)
                header, starts, ends, number = False, starts[1:], ends[1:], number + 1
            yield from _csv_chunk_batches(options, data, starts, ends, number - 1, max_line)
    finally:
        csv.field_size_limit(limit)


def read_csv(fh: IO[bytes], folder: BatchSink, progress: Progress | None = None, chunk_bytes: int = CSV_CHUNK,
             max_line: int | None = None) -> None:
    """Fold every row of a CSV file of envelopes (:func:`csv_batches`)."""
    folder.consume(csv_batches(fh, folder.options, progress, chunk_bytes, max_line))


def _check_header(text: str, source: str) -> None:
    row = _csv_row(text)
    if isinstance(row, str):
        raise InputError(f"{source}: not a CSV file: {row[5:]}")
    if tuple(h.strip().lstrip("\ufeff") for h in row) != CSV_HEADER:
        raise InputError(f"{source}: the CSV header must be {','.join(CSV_HEADER)}, got {','.join(row)[:200]}")


def _csv_chunk_batches(options: ReadOptions, data: bytes, starts: np.ndarray, ends: np.ndarray, first: int,
                       max_line: int) -> Iterator[Batch]:
    """The batches of the records ``data[starts[i]:ends[i]]``, record i being number ``first + i``."""
    raw = np.frombuffer(data, dtype=np.uint8)
    commas = np.flatnonzero(raw == 44)
    quotes = np.flatnonzero(raw == 34)
    if quotes.size:
        commas = commas[np.searchsorted(quotes, commas) % 2 == 0]
    cells = np.searchsorted(commas, ends) - np.searchsorted(commas, starts) + 1
    blank = ends == starts
    if blank.any():
        yield Blank(int(blank.sum()))
    text = lambda i: data[starts[i]:ends[i]].decode("utf-8", "replace")  # noqa: E731

    def describe(j: int) -> tuple[str, Any]:
        row = _csv_row(text(bad[j]))
        if isinstance(row, str):
            return row, text(bad[j])
        return f"a row has 4 cells ({','.join(CSV_HEADER)}), got {len(row)}", row

    large = ends - starts > max_line
    for i in np.flatnonzero(large).tolist():
        yield Rejected(first + i, "too_large", f"row longer than {max_line} bytes",
                       data[starts[i]:starts[i] + 4 * RAW_LIMIT])
    bad = np.flatnonzero(~blank & ~large & (cells != 4))
    if bad.size:
        yield RejectedEach("bad_row", bad + first, describe)
    lines, raws, numbers = [], [], []
    for i in np.flatnonzero(~blank & ~large & (cells == 4)).tolist():
        row = _csv_row(text(i))
        if isinstance(row, str) or len(row) != 4:
            yield Rejected(first + i, "bad_row", row if isinstance(row, str) else
                           f"a row has 4 cells ({','.join(CSV_HEADER)}), got {len(row)}",
                           text(i) if isinstance(row, str) else row)
            continue
        line = _csv_line(row)
        if "\n" in line or "\r" in line:  # a newline inside the report's JSON: the full parser, on this row alone
            yield line_batch(line, first + i, row, options.specs)
            continue
        lines.append(line)
        raws.append(row)
        numbers.append(first + i)
    if lines:
        yield from line_batches(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"), 0, options, raws,
                                numbers=np.array(numbers, dtype=np.int64))


# -- any format --------------------------------------------------------------------------------------------


def read_batches(path: str | os.PathLike[str], fmt: str | None, options: ReadOptions | Mapping[str, CollectionSpec],
                 *, chunk_bytes: int = CHUNK_BYTES, progress: Progress | None = None,
                 parquet_unverified: bool = False) -> Iterator[Batch]:
    """The one reading face: the batches of one input file of format ``fmt`` (``None``: from its extension; one
    of :data:`~ldp.jobs.formats.FORMATS`), read against ``options`` (or a ``{fingerprint: spec}`` mapping, the
    input named by its path). ``parquet_unverified``: read Parquet files without page checksums (refused by
    default). The format is checked now; the file is opened when the iterator is first advanced and closed when
    it ends. Bad input that cannot be read record by record is an :class:`InputError`."""
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown input format {fmt!r} (known: {', '.join(FORMATS)})")
    if not isinstance(options, ReadOptions):
        options = ReadOptions(options, source=os.fspath(path))
    logger.debug("reading %s as %s", os.fspath(path), fmt)
    if fmt == "parquet":
        from ldp.jobs.arrow import parquet_batches

        return parquet_batches(path, options, progress=progress, unverified=parquet_unverified)
    return _file_batches(path, fmt, options, chunk_bytes, progress)


def _file_batches(path: str | os.PathLike[str], fmt: str, options: ReadOptions, chunk_bytes: int,
                  progress: Progress | None) -> Iterator[Batch]:
    with open(path, "rb") as fh:
        if fmt == "jsonl":
            yield from jsonl_batches(fh, options, chunk_bytes, progress)
        elif fmt == "csv":
            yield from csv_batches(fh, options, progress=progress)
        else:
            yield from binary_batches(fh, options, progress)


def read_input(path: str | os.PathLike[str], folder: BatchSink, fmt: str | None = None,
               chunk_bytes: int = CHUNK_BYTES, progress: Progress | None = None, *,
               parquet_unverified: bool = False) -> None:
    """Fold one input file of format ``fmt`` (default: from its extension) into ``folder``: the batches of
    :func:`read_batches`, read with the folder's options, consumed by the folder.
    ``parquet_unverified``: fold Parquet files without page checksums (refused by default)."""
    folder.consume(read_batches(path, fmt, folder.options, chunk_bytes=chunk_bytes, progress=progress,
                                parquet_unverified=parquet_unverified))
