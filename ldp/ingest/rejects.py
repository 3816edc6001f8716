"""Rejected lines, kept within bounds: what a batch's rejected lines cost on disk.

A rejected line is stored in the segment as it came (``ldp fold`` then rejects it again, with the same reason,
and writes it to the job's ``rejects.jsonl``) when it is at most ``Limits.max_reject_line_bytes`` long and the app's
reject budget for the UTC day (``Limits.reject_bytes_per_day``) has room. A longer line is left out of the segment:
``DATA/apps/<app>/rejects/<yyyymmdd>.jsonl`` gets one entry for it (reason, length, SHA-256, and the first
:data:`PREFIX_BYTES` bytes), charged to the same budget. Once the day's budget is spent, rejected lines are only
counted (the answer and the journal's counts stay exact) and the app's ``rejects_unkept`` counter says how many.
Without this, one 30 KB gzip request could store a 30 MiB junk line.

**Retention.** A rejected line may hold anything a person typed, so the ``rejects/`` files do not stay: a day's file
is deleted once ``Limits.reject_retention_days`` days have passed since that UTC day ended
(:meth:`RejectKeeper.expire`, on start and then every minute: an entry is kept between that many days and one day
more). Today's file is never deleted. Lines kept in a segment (one-process ingest service, short enough and within the
budget) live as long as the segment: ``max_reject_line_bytes = 1`` keeps every rejected line out of the segments.

A **replica** over shared storage (:class:`~ldp.ingest.chunklog.ChunkLog`) keeps no rejected line in its chunks:
the shuffler publishes what the chunks hold to the prefix the analysts read, and a rejected line may hold anything
(an e-mail address typed at the endpoint). Every rejected line gets its ``rejects/`` entry in the replica's data
folder instead (``why``: ``not_shared``), and the shuffler drops any line that is no report, should an older
replica's chunk hold one (:mod:`ldp.shuffler.lines`).

:func:`find_rejects` gives the lines of a body the parser rejects (:class:`~ldp.jobs.fold.Folder`, the parser of
``ldp fold``), and notes the accepted lines that were not in the clients' exact form and the blank lines (for
:mod:`ldp.ingest.canonical`, which stores the accepted lines canonical); :class:`RejectKeeper` decides, per app,
in the writer thread, what is kept.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp.jobs.batches import Batch, Blank, LineRuns, ParsedReports
from ldp.jobs.fold import Folder
from ldp.jobs.jsonl import line_bounds
from ldp.jobs.lines import fold_lines
from ldp.jobs.store import write_all
from ldp.spec import CollectionSpec

__all__ = ["PREFIX_BYTES", "RejectSpan", "SpanFolder", "Kept", "RejectKeeper", "find_rejects", "utc_day"]

logger = logging.getLogger(__name__)
PREFIX_BYTES = 256
"""Bytes of a left-out rejected line kept in its ``rejects/`` entry."""
DAY_SECONDS = 86400
_DAY_FILE = re.compile(r"(\d{8})\.jsonl\Z")


@dataclass(frozen=True)
class RejectSpan:
    """One rejected line of a body: bytes ``start:end`` (its newline included) and the parser's reason."""

    start: int
    end: int
    reason: str


class SpanFolder(Folder):
    """A :class:`Folder` that notes the record number and reason of every rejection instead of writing it (no
    rejects stream: no detail is asked for). Its aggregates are thrown away with it (made anew per upload: ~5 µs
    each, and some, e.g. PEM's, keep every report, so a kept one would grow without bound).

    It also notes, from the batches it consumes, the records the full parser accepted (:meth:`parsed_rows`: lines
    not in the clients' exact form, which the template path takes) and the blank ones (:meth:`blank_rows`), and
    :func:`find_rejects` leaves the lines' offsets in :attr:`bounds`: what :mod:`ldp.ingest.canonical` needs to
    store the accepted lines canonical without a second pass over the lines."""

    def __init__(self, specs: Mapping[str, CollectionSpec]) -> None:
        super().__init__(specs, rejects=None)
        self.noted: list[tuple[int, int, str]] = []
        self.bulk: list[tuple[np.ndarray, str]] = []
        self.full: list[np.ndarray] = []
        self.blanks: list[np.ndarray] = []
        self.bounds: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def consume(self, batches: Iterable[Batch]) -> None:
        super().consume(self._noting(batches))

    def _noting(self, batches: Iterable[Batch]) -> Iterator[Batch]:
        """The batches, as they come, noting the records of the full parser's reports and of blank lines (a look
        at the steps of a :class:`LineRuns`: the lines the template path did not take; none per template line)."""
        for item in batches:
            if isinstance(item, LineRuns):
                for record, step in item.steps:
                    if isinstance(step, ParsedReports):
                        self.full.append(np.asarray(step.records, dtype=np.int64))
                    elif isinstance(step, Blank):
                        self.blanks.append(np.arange(record, record + step.lines, dtype=np.int64))
            elif isinstance(item, ParsedReports):
                self.full.append(np.asarray(item.records, dtype=np.int64))
            yield item
            del item  # let the batch go before the next is read, as Folder.consume does

    def parsed_rows(self) -> np.ndarray:
        """The records (line numbers) the full parser accepted, ascending."""
        return np.sort(np.concatenate(self.full)) if self.full else np.zeros(0, np.int64)

    def blank_rows(self) -> np.ndarray:
        """The blank lines' numbers, ascending."""
        return np.sort(np.concatenate(self.blanks)) if self.blanks else np.zeros(0, np.int64)

    def log(self, record: int, reason: str, detail: str, raw: Any, records: int = 1,
            offset: int | None = None) -> None:
        self.records += records
        self.rejected[reason] += records
        self.noted.append((record, records, reason))

    def log_bulk(self, reason: str, records: np.ndarray, describe: Callable[[int], tuple[str, Any]]) -> None:
        self.records += len(records)
        self.rejected[reason] += len(records)
        self.bulk.append((records, reason))

    def reasons(self) -> dict[int, str]:
        """``{record: reason}`` of every rejected record."""
        out: dict[int, str] = {}
        for record, records, reason in self.noted:
            for r in range(record, record + records):
                out[r] = reason
        for rows, reason in self.bulk:
            out.update(dict.fromkeys(rows.tolist(), reason))
        return out



def find_rejects(body: bytes, specs: Mapping[str, CollectionSpec]) -> tuple[SpanFolder, list[RejectSpan]]:
    """Fold ``body`` (whole lines, each ending in ``\\n``) as ``ldp fold`` does; the folder (its counts, the
    lines' offsets, the lines the full parser accepted, the blank ones) and the byte span and reason of every
    rejected line, in order."""
    folder = SpanFolder(specs)
    bounds = folder.bounds = line_bounds(body)
    fold_lines(folder, body, 0, bounds=bounds)
    if not folder.noted and not folder.bulk:
        return folder, []
    starts = bounds[0].tolist()
    ends = [*starts[1:], len(body)]  # line i is body[starts[i]:ends[i]], its newline included
    spans = [RejectSpan(starts[i], ends[i], reason) for i, reason in sorted(folder.reasons().items())
             if i < len(ends)]
    return folder, spans


def utc_day(t: float) -> str:
    """``yyyymmdd`` of a Unix time, UTC."""
    return time.strftime("%Y%m%d", time.gmtime(t))


@dataclass(frozen=True)
class Kept:
    """What is stored of one batch: the ``body`` for the segment, the reject bytes charged to the budget
    (``charged``: lines kept in the segment and ``rejects/`` entries), the ``rejects/`` entries (``side``,
    written by :meth:`RejectKeeper.append` once the batch is stored) of the rejected lines left out of the segment
    (``left_out``) and the number not kept at all (``unkept``, the budget was spent)."""

    body: bytes
    charged: int = 0
    side: bytes = b""
    left_out: int = 0
    unkept: int = 0


class RejectKeeper:
    """One app's reject budget for the current UTC day and its ``rejects/`` folder, whose day files are deleted
    ``retention_days`` after their day ended (:meth:`expire`). Only the writer thread keeps and appends; any thread
    may expire (it touches past days' files only)."""

    def __init__(self, folder: Path, max_line: int, per_day: int, retention_days: int = 30) -> None:
        if isinstance(retention_days, bool) or not isinstance(retention_days, int) or retention_days < 1:
            raise ValueError(f"retention_days must be an int >= 1, got {retention_days!r}")
        self.folder, self.max_line, self.per_day = folder, max_line, per_day
        self.retention_days = retention_days
        self.day = ""
        self.used = 0

    def charge_restored(self, t: float, charged: int) -> None:
        """Count a journaled batch's charge (on recovery) when it is of today's budget."""
        day = utc_day(t)
        if day != self.day and day > self.day:
            self.day, self.used = day, 0
        if day == self.day:
            self.used += charged

    def _room(self, n: int, now: float) -> bool:
        day = utc_day(now)
        if day != self.day:
            self.day, self.used = day, 0
        if self.used + n > self.per_day:
            return False
        self.used += n
        return True

    def keep(self, body: bytes, spans: list[RejectSpan], now: float, in_body: bool = True) -> Kept:
        """The part of ``body`` stored in the segment and the ``rejects/`` entries of the lines left out.
        ``in_body=False`` (a replica's chunks, which the shuffler publishes to the analysts' store): every rejected
        line is left out, kept only in this folder's ``rejects/`` (within the day's budget)."""
        if not spans:
            return Kept(body)
        parts: list[bytes] = []
        entries: list[bytes] = []
        at = charged = left_out = unkept = 0
        for s in spans:
            n = s.end - s.start
            if in_body and n <= self.max_line and self._room(n, now):
                charged += n
                continue  # stays in the segment
            parts.append(body[at:s.start])
            at = s.end
            line = body[s.start:s.end]
            entry = (json.dumps({"reason": s.reason, "bytes": n, "sha256": hashlib.sha256(line).hexdigest(),
                                 "prefix": line[:PREFIX_BYTES].decode("utf-8", "replace"),
                                 "why": "too_long" if n > self.max_line else "over_budget" if in_body
                                 else "not_shared",
                                 "day": utc_day(now)}, separators=(",", ":")) + "\n").encode()
            if self._room(len(entry), now):
                entries.append(entry)
                charged += len(entry)
                left_out += 1
            else:
                unkept += 1
        parts.append(body[at:])
        return Kept(b"".join(parts), charged, b"".join(entries), left_out, unkept)

    def append(self, data: bytes, now: float) -> None:
        """Append entries to today's ``rejects/`` file (not fsynced: diagnostics, not acknowledged data)."""
        if not data:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / f"{utc_day(now)}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                write_all(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            logger.warning("cannot write to %s: %s (the rejects are still counted)", self.folder, exc.strerror)

    def expire(self, now: float) -> list[str]:
        """Delete the day files (``<yyyymmdd>.jsonl``) whose UTC day ended ``retention_days`` days or more before
        ``now``; their names. Other files are left alone; a file that cannot be deleted is logged and tried again at
        the next call."""
        try:
            names = sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return []
        except OSError as exc:
            logger.warning("cannot list %s: %s (its old rejects are not deleted yet)", self.folder, exc.strerror)
            return []
        gone: list[str] = []
        for name in names:
            m = _DAY_FILE.match(name)
            try:
                start = calendar.timegm(time.strptime(m.group(1), "%Y%m%d")) if m else None
            except ValueError:  # eight digits that are no date
                start = None
            if start is None or start + (self.retention_days + 1) * DAY_SECONDS > now:
                continue
            try:
                (self.folder / name).unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                logger.warning("cannot delete %s past its retention: %s", self.folder / name, exc.strerror)
                continue
            gone.append(name)
        if gone:
            logger.info("deleted %d day(s) of rejects in %s past their %d-day retention", len(gone), self.folder,
                        self.retention_days)
        return gone
