"""Exclusive locks that the operating system holds on a file: one place for the package's ``flock`` locks.

A :class:`FileLock` is taken without waiting (:meth:`FileLock.acquire` says whether it got it) and held while its
file stays open: the kernel drops it when the holder releases it or ends, however it ends (``kill -9`` included),
so a lock never outlives its process and never needs cleaning up. The lock file itself stays: removing it while
another process has it open would let two processes each lock a different file of the same name.

``flock(2)``, not ``fcntl(2)`` record locks: a record lock belongs to the process and goes away when *any*
descriptor of the file in that process closes (reading the file would drop it), and it does not stop a second
lock of the same process. An ``flock`` belongs to the open file: two :class:`FileLock` objects on one path
exclude each other, in one process as across processes. The descriptor is not inherited by programs the holder
starts (``O_CLOEXEC``), so a child process never keeps a lock alive after its parent died.

Optionally the holder writes a small JSON document beside the lock (:attr:`FileLock.holder_file`: who holds it,
written atomically once the lock is taken, removed before it is released), which a process refused the lock reads
to name the holder (:meth:`FileLock.holder`). The lock, not this file, decides who holds it.

Where there is no ``fcntl`` (not POSIX) :meth:`FileLock.acquire` always succeeds: nothing is locked there.
Used by the aggregate job's folder (:mod:`ldp.jobs.manifest`), the fold of an app (:mod:`ldp.ingest.watch`)
and ``ldp serve``'s data folder (:mod:`ldp.ingest.datafolder`)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ldp.storage.local import write_atomic

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: nothing is locked
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileLock"]

_BUSY = frozenset({errno.EWOULDBLOCK, errno.EAGAIN})
"""What ``flock(LOCK_EX | LOCK_NB)`` fails with when another open file holds the lock."""


class FileLock:
    """An exclusive, non-blocking ``flock`` on ``path`` (module docstring); ``holder_file``: where the holder
    describes itself (``None``: nowhere). ``path``'s folder must exist."""

    def __init__(self, path: str | os.PathLike[str], holder_file: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path)
        self.holder_file = Path(holder_file) if holder_file is not None else None
        self._fd: int | None = None
        self._locked = False  # held, also where nothing is locked (no fcntl)
        self._wrote_holder = False

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._locked

    def acquire(self, holder: Mapping[str, Any] | None = None) -> bool:
        """Take the lock if no other open file holds it: ``True`` once held (and ``holder`` written to
        :attr:`holder_file`, when both are given), ``False`` when another holds it. ``OSError`` when the file cannot
        be opened or the file system cannot lock (``ENOLCK``, ``EOPNOTSUPP``); ``RuntimeError`` if already held."""
        if self._locked:
            raise RuntimeError(f"{self.path} is already held by this FileLock")
        if fcntl is None:  # pragma: no cover - not POSIX
            self._locked = True
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in _BUSY:
                return False
            raise
        self._fd, self._locked = fd, True
        if holder is not None and self.holder_file is not None:
            try:
                write_atomic(self.holder_file, (json.dumps(dict(holder), sort_keys=True) + "\n").encode())
                self._wrote_holder = True
            except BaseException:
                self.release()
                raise
        return True

    def release(self) -> None:
        """Remove the holder file this lock wrote (while still holding the lock, so that it is never another
        holder's), then release the lock. A no-op when not held."""
        if not self._locked:
            return
        try:
            if self._wrote_holder and self.holder_file is not None:
                try:
                    self.holder_file.unlink(missing_ok=True)
                except OSError:
                    pass  # a stale holder file is harmless: the lock decides, and the next holder replaces it
        finally:
            self._wrote_holder = False
            fd, self._fd, self._locked = self._fd, None, False
            if fd is not None:
                os.close(fd)  # closing the only descriptor of the open file releases its flock

    def holder(self) -> dict[str, Any] | None:
        """The document in :attr:`holder_file` (``None`` when there is none, or it is not a JSON object). It may
        be stale: written by a holder that died since, and not replaced yet by the next."""
        if self.holder_file is None:
            return None
        try:
            doc = json.loads(self.holder_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def __del__(self) -> None:  # dropped without release(): its descriptor closed, so the lock goes with it
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(Exception):
                os.close(fd)

    def __repr__(self) -> str:
        return f"FileLock({str(self.path)!r}, held={self._locked})"
