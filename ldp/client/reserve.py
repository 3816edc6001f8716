"""Room kept for a full disk: the state file's reserve, so that an app can still open it, upload and acknowledge.

SQLite in WAL mode needs a little room to do anything, even to open a file (its ``-shm`` index, a WAL frame per
page a transaction changes). On a disk filled by something else, the client could then not upload what waits, nor
acknowledge it. So a write transaction that succeeds (a record) leaves ``<state>.reserve``, :data:`RESERVE_BYTES`
of zeros beside the state file, when it is not there and the disk has room; opening the file, acknowledging or
pinning a batch that fails because the disk is full deletes the reserve and tries once more. Opening and queries
never create it (reads write nothing). The reserve holds no data: it is not a trace of the state
(:func:`ldp.client.state.refuse_orphan_traces`). Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from typing import TypeVar

from ldp.errors import LedgerError

__all__ = ["Reserve", "RESERVE_BYTES", "disk_full"]

RESERVE_BYTES = 256 * 1024
"""The reserve's size: SQLite's ``-shm`` (32 KiB) and the WAL frames of an acknowledgement, with room to spare."""
_FULL = (13, 10)  # SQLITE_FULL, SQLITE_IOERR (an extended code's low byte): what a full disk gives
T = TypeVar("T")


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite failing for lack of room (or the ledger wrapping such a failure)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _FULL
    text = str(exc)
    return isinstance(exc, LedgerError | sqlite3.OperationalError) and (
        "disk I/O error" in text or "disk is full" in text)


class Reserve:
    """The reserve of the state file ``state_path`` (module docstring)."""

    def __init__(self, state_path: str) -> None:
        self.path = state_path + ".reserve"

    def ensure(self) -> None:
        """Make the reserve when it is missing and the disk has room (after a write: never on a read)."""
        if os.path.exists(self.path):
            return
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as fh:
                fh.write(bytes(RESERVE_BYTES))
            os.replace(tmp, self.path)
        except OSError:  # no room now: made after a later write
            with contextlib.suppress(OSError):
                os.remove(tmp)

    def release(self) -> bool:
        """Delete the reserve, giving its room to SQLite; whether there was one."""
        try:
            os.remove(self.path)
        except FileNotFoundError:
            return False
        return True

    def retrying(self, fn: Callable[[], T]) -> T:
        """``fn()``; when it fails for lack of room and there is a reserve, release it and run ``fn`` once more."""
        try:
            return fn()
        except (LedgerError, sqlite3.OperationalError) as exc:
            if not (disk_full(exc) and self.release()):
                raise
        return fn()
