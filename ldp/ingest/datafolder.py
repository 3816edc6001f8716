"""One ``ldp serve`` per data folder (issue 70, item 8): a lock the operating system holds for the process's life.

Two ingest services on one data folder each recover, append to and journal the same segments: a batch one of them
stored is unknown to the other, which stores it again (4 lines kept for 2 sent, the batch id twice in the journal,
counted twice after a restart). So before anything in the data folder is written or recovered — journals,
segments, a replica's claim file, the rejects and ``ingest.json`` a replica keeps there — ``ldp serve`` takes an
exclusive ``flock`` on ``DATA/serve.lock`` (:class:`~ldp.jobs.filelock.FileLock`) and holds it until it exits.
The kernel releases it when the process ends in any way (``kill -9``, a crash, a power cut), so the next start
succeeds at once and there is nothing to clean up. The lock applies in every mode: a replica over shared storage
keeps its rejects, counters and claim file in its own data folder.

Once it holds the lock the process writes ``DATA/serve.holder.json`` beside it: its pid, host and when it started.
A second process refused the lock reads it and names the first (:class:`~ldp.errors.DataFolderBusyError`).

Within one process the folder is held once, however many apps use it (:func:`hold_data_folder` counts them):
``ldp serve`` takes it before it builds the app, and the app's start (:func:`ldp.ingest.app.create_app`'s
lifespan) takes it too, so an embedding server that runs the app by itself is covered as well.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ldp.errors import DataFolderBusyError
from ldp.jobs.filelock import FileLock

__all__ = ["LOCK_FILE", "HOLDER_FILE", "DataFolderHold", "hold_data_folder", "DataFolderBusyError"]

LOCK_FILE = "serve.lock"
"""The lock's file in the data folder (kept: only the lock on it says whether the folder is in use)."""
HOLDER_FILE = "serve.holder.json"
"""Who holds the lock: ``{"pid", "host", "started", "command"}``, written by the holder beside the lock."""
HOLDER_WAIT_SECONDS = 2.0
"""How long a refused process waits for the holder's description to appear (the holder writes it just after it
takes the lock, so a start at that moment may find none yet, or its dead predecessor's)."""

_held: dict[Path, DataFolderHold] = {}
_held_lock = threading.Lock()


class DataFolderHold:
    """This process's hold on a data folder: :meth:`release` once for each :func:`hold_data_folder`; the lock is
    released with the last."""

    def __init__(self, folder: Path, lock: FileLock) -> None:
        self.folder, self.lock, self.count = folder, lock, 1

    def release(self) -> None:
        """Give back one hold (a no-op past the last)."""
        with _held_lock:
            if self.count <= 0:
                return
            self.count -= 1
            if self.count == 0:
                _held.pop(self.folder, None)
                self.lock.release()

    def __enter__(self) -> DataFolderHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _me(command: str) -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
            "started": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def hold_data_folder(data_dir: str | os.PathLike[str], command: str = "ldp serve") -> DataFolderHold:
    """Hold ``data_dir`` (made if missing) for this process: :class:`~ldp.errors.DataFolderBusyError` naming the
    process that holds it, when another does. Held again by this process, it is the same hold, counted once more."""
    folder = Path(data_dir).resolve()
    with _held_lock:
        hold = _held.get(folder)
        if hold is not None:
            hold.count += 1
            return hold
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(folder / LOCK_FILE, folder / HOLDER_FILE)
        if lock.acquire(_me(command)):
            hold = _held[folder] = DataFolderHold(folder, lock)
            return hold
    raise _busy(folder, lock)  # outside the lock: naming the holder may wait for its description


def _alive_here(doc: dict[str, Any]) -> bool:
    """Whether the holder described by ``doc`` may be alive: on another host we cannot tell (yes); here, its pid
    must still run."""
    pid = doc.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if doc.get("host") != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True


def _holder(lock: FileLock, wait: float = HOLDER_WAIT_SECONDS) -> dict[str, Any] | None:
    """The holder's description, waiting up to ``wait`` s for one that is not missing nor a dead process's."""
    deadline = time.monotonic() + wait
    while True:
        doc = lock.holder()
        if doc is not None and _alive_here(doc):
            return doc
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def _busy(folder: Path, lock: FileLock) -> DataFolderBusyError:
    doc = _holder(lock)
    where = f"the data folder {folder} is in use by another process"
    hint = (f"stop it first, or give this ingest service another data_dir (two processes on one folder would store "
            f"batches twice); the lock is {lock.path}, held by the operating system until that process ends")
    if doc is None:
        return DataFolderBusyError(f"{where} (it has not said which: {lock.holder_file} is missing or "
                                   f"unreadable); {hint}")
    pid, host, started = doc["pid"], str(doc.get("host", "")), str(doc.get("started", ""))
    command = str(doc.get("command", "ldp serve"))
    return DataFolderBusyError(f"{where}: {command}, pid {pid} on host {host}, started {started}; {hint}",
                               pid=pid, host=host, started=started)
