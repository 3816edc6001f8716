"""A file that JSON lines are appended to, each append fsynced, and never after a torn one (the journals of
:mod:`ldp.ingest.journal`).

A write may stop midway: a full disk takes the bytes up to its last free block, then says ``ENOSPC``; an fsync may
fail after them. The bytes it left are cut off again at once, with ``ftruncate`` on the raw descriptor (it needs no
free space, and no buffer has to be flushed first, which a full disk would refuse again), back to the size the file
had before the write. When even that cut fails, the size is kept and every later append makes the cut first,
refusing while it cannot. So appends only ever follow whole lines, and a damaged line can only be a file's last.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from ldp.jobs.store import write_synced

__all__ = ["LineFile"]

logger = logging.getLogger("ldp.ingest.journal")


class LineFile:
    """One journal file that JSON lines are appended to, each append fsynced, and never after a torn one.

    Appends go through ``os.write`` on a raw descriptor (:func:`~ldp.jobs.store.write_synced`): a buffered file's
    ``truncate`` flushes first, and on a full disk that flush fails again, so the cut back of a short write never
    happened and the next append followed half a line (the full-disk test's damaged journal)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cut_to: int | None = None
        """The size to cut the file back to before anything more is appended: where a failed append started, while
        part of it may still be in the file."""

    def append(self, data: bytes, fd: int | None = None, *, undo: bool = True,
               after: tuple[int, bytes] | None = None, size: int | None = None) -> None:
        """Append ``data`` (whole lines) and fsync it, through ``fd`` (open for appending to this file) or a
        descriptor of its own. A pending cut is made first, and its ``OSError`` raised: nothing is written after
        a torn line. On an ``OSError`` the size before is kept in :attr:`cut_to` and, when ``undo``, cut back to
        at once; else the caller does it (:meth:`cut`).

        ``after``: an ``(fd, bytes)`` pair written and fsynced first, in the same call
        (:func:`~ldp.jobs.store.write_synced`: a group commit's segment, then its journal line); ``size``: this
        file's size when the caller knows it (saves a system call)."""
        own = fd is None
        if fd is None:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self._cut(fd)
            before = os.fstat(fd).st_size if size is None else size  # a short write's bytes are past it
            try:
                write_synced(*((after,) if after is not None else ()), (fd, data))
            except OSError:
                self.cut_to = before
                if undo:
                    with contextlib.suppress(OSError):  # logged; the next append makes the cut first
                        self._cut(fd)
                raise
        finally:
            if own:
                os.close(fd)

    def cut(self, size: int | None = None, fd: int | None = None) -> None:
        """Cut the file back to ``size`` bytes (default: the pending cut, if any), through ``fd`` or a descriptor
        of its own; an ``OSError`` keeps the cut pending."""
        if size is not None:
            self.cut_to = size
        if self.cut_to is None:
            return
        if fd is not None:
            self._cut(fd)
            return
        try:
            own = os.open(self.path, os.O_WRONLY)
        except FileNotFoundError:  # removed (a closed segment's journal): nothing left to cut
            self.cut_to = None
            return
        try:
            self._cut(own)
        finally:
            os.close(own)

    def _cut(self, fd: int) -> None:
        if self.cut_to is None:
            return
        try:
            os.ftruncate(fd, self.cut_to)
        except OSError as exc:
            logger.error("journal %s: cannot cut a failed write back to %d bytes (%s); nothing is appended until "
                         "it is", self.path, self.cut_to, exc.strerror)
            raise
        self.cut_to = None
