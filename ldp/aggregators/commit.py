"""Group commit: items submitted by concurrent threads written together, each submitter answered once its item is
durable (issue 71: the leader's door).

One durable write (a store object: a folder's fsyncs, an object store's PUT) costs milliseconds whatever it holds.
The first submitter that finds no write in progress becomes the writer: it takes everything queued (at most
``max_items``), writes it, wakes those submitters with the outcome, and goes on while more is queued. While it
writes, later submitters queue up, and the next write takes them all: the batch grows with the load, with no timer
and no wait when the door is quiet. A failed write fails exactly the submitters of that batch; a write that returns
each item's outcome (``None``, or the exception to raise to its submitter) fails those items alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["GroupCommit"]

T = TypeVar("T")


class _Slot(Generic[T]):
    __slots__ = ("item", "done", "error")

    def __init__(self, item: T) -> None:
        self.item, self.done = item, threading.Event()
        self.error: BaseException | None = None


class GroupCommit(Generic[T]):
    """Batches of ``write(items)`` calls (module docstring)."""

    def __init__(self, write: Callable[[list[T]], Sequence[BaseException | None] | None], *,
                 max_items: int = 2000) -> None:
        if max_items < 1:
            raise ValueError(f"max_items must be at least 1, got {max_items}")
        self.write, self.max_items = write, max_items
        self._lock = threading.Lock()
        self._queue: list[_Slot[T]] = []
        self._writing = False

    def submit(self, item: T) -> None:
        """Return once ``item`` is written (with others, maybe); raise what its batch's write raised."""
        slot = _Slot(item)
        with self._lock:
            self._queue.append(slot)
            writer = not self._writing
            self._writing = True
        if writer:
            self._drain()
        slot.done.wait()
        if slot.error is not None:
            raise slot.error

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch = self._queue[:self.max_items]
                del self._queue[:len(batch)]
                if not batch:
                    self._writing = False
                    return
            errors: Sequence[BaseException | None]
            try:
                outcomes = self.write([s.item for s in batch])
                errors = [None] * len(batch) if outcomes is None else outcomes
                if len(errors) != len(batch):
                    raise RuntimeError(f"the write gave {len(errors)} outcomes for {len(batch)} items")
            except BaseException as exc:  # noqa: BLE001 (handed to each submitter of the batch, re-raised there)
                errors = [exc] * len(batch)
            for s, error in zip(batch, errors, strict=True):
                s.error = error
                s.done.set()
