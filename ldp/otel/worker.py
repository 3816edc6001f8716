"""The one thread that uses a privatizing reader's :class:`~ldp.client.TelemetryClient` (:mod:`ldp.otel.reader`).
Standard library only."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["ClientThread"]


class ClientThread:
    """The one thread that uses the reader's :class:`~ldp.client.TelemetryClient` (a client is used from one thread
    only). A daemon thread of its own, not an executor: an executor refuses work once the interpreter starts to exit,
    which is when ``MeterProvider`` shuts its readers down (its ``atexit`` hook)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ldp-otel-client", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, args, kwargs, done = job
            try:
                done.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        """Run ``fn(*args, **kwargs)`` on the thread; the future of its result."""
        done: Future[Any] = Future()
        self._jobs.put((fn, args, kwargs, done))
        return done

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=30)
