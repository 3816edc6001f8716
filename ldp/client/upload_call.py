"""One :meth:`TelemetryClient.upload <ldp.client.TelemetryClient.upload>` call: under the state file's upload lock,
the two-aggregator lane (:mod:`ldp.client.dap_upload`: each report to its task's leader), then the ingest lane
(:mod:`ldp.client.uploader`: batches to the ingest service), their counts in one
:class:`~ldp.client.uploader.UploadResult`.

One upload at a time per state file, enforced: the clients of one state file in this process (one per thread) take
turns under a lock kept per file (by its real path). A call that finds another one uploading the file waits for it,
at most ``call_timeout`` seconds in all (forever with ``None``), and then uploads what is still pending; if its
deadline passes while it waits it returns ``stopped="deadline"`` having sent nothing. A call from inside an upload of
the same file in the same thread (an ``opener`` or ``sleep`` calling ``upload``) raises ``RuntimeError``. Standard
library only.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ldp.client.dap_upload import DapLane, upload_dap
from ldp.client.state import upload_lock
from ldp.client.transport import Opener, default_opener
from ldp.client.uploader import UploadResult, _check, _check_call, _endpoints, _Tally, upload
from ldp.errors import UploadError

__all__ = ["upload_call"]

logger = logging.getLogger("ldp.client.runtime")


class _IngestLane:
    """The client as :func:`~ldp.client.uploader.upload` sees it: its batches, and only its ingest lane pending."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.next_batch, self.split_batch = client.next_batch, client.split_batch
        self.acknowledge_batch, self.next_upload_at = client.acknowledge_batch, client.next_upload_at

    def has_pending(self) -> bool:
        return bool(self._client._outbox.has_pending("ingest"))


def upload_call(client: Any, url: str | Sequence[str] | None, token: str | None, *, timeout: float,
                call_timeout: float | None, max_attempts: int, gzip: bool, max_delay: float, opener: Opener | None,
                sleep: Callable[[float], None], clock: Callable[[], float]) -> UploadResult:
    """The call (module docstring); ``url`` and ``token`` may be ``None`` only while no report waits for the ingest
    service (``ValueError`` otherwise, before anything is sent)."""
    lock = upload_lock(client.path)
    if lock.owner == threading.get_ident():
        raise RuntimeError(f"upload of {client.path!r} called while this thread is already uploading it (from the "
                           "opener or sleep of that upload): one upload at a time per state file")
    if url is None and token is None:
        _check_call(timeout, call_timeout, max_attempts, max_delay)
    else:
        _endpoints(url)  # type: ignore[arg-type]  # refuse bad arguments before waiting for the lock
        _check(token, timeout, call_timeout, max_attempts, max_delay)  # type: ignore[arg-type]
    call_end = math.inf if call_timeout is None else time.monotonic() + call_timeout
    outbox = client._outbox
    if not lock.acquire(timeout=-1 if call_timeout is None else call_timeout):
        logger.info("upload: another upload of this state file ran past this call's deadline; nothing sent")
        return UploadResult(stopped="deadline", next_upload_at=outbox.next_upload_at())
    lock.owner = threading.get_ident()
    try:
        if url is None and outbox.has_pending("ingest"):
            raise ValueError("the outbox holds reports for the ingest service: upload(url, token) sends them")
        tally = _Tally()
        lane = DapLane(outbox.dap_pending,
                       lambda ids: client._reserve.retrying(lambda: outbox.acknowledge(ids, interval=False)),
                       {metric: task.leader_url for metric, task in client._tasks.items()}, outbox.next_upload_at)
        stopped = upload_dap(lane, tally, timeout=timeout, call_end=call_end, max_attempts=max_attempts,
                             max_delay=max_delay, opener=opener or default_opener(), sleep=sleep, clock=clock)
        if stopped is None and url is not None and (left := call_end - time.monotonic()) > 0:
            try:
                ingest = upload(_IngestLane(client), url, token, timeout=timeout,  # type: ignore[arg-type]
                                call_timeout=None if left == math.inf else left, max_attempts=max_attempts,
                                gzip=gzip, max_delay=max_delay, opener=opener, sleep=sleep, clock=clock)
            except UploadError as exc:  # its result: what both lanes did
                exc.result = _merged(exc.result, tally, False)
                raise
            return _merged(ingest, tally, outbox.has_pending("dap"))
        if stopped is None:
            stopped = "interval" if outbox.has_pending() else "empty"
        return tally.result(stopped or "deadline", outbox.next_upload_at())  # type: ignore[arg-type]
    finally:
        lock.owner = None
        lock.release()


def _merged(ingest: UploadResult, dap: _Tally, dap_kept: bool) -> UploadResult:
    """The ingest lane's result with the two-aggregator lane's counts added (its reports kept for a later call make
    an ``"empty"`` ingest lane's call ``"interval"``)."""
    rejected = dict(ingest.rejected)
    for code, n in dap.rejected.items():
        rejected[code] = rejected.get(code, 0) + n
    stopped = "interval" if ingest.stopped == "empty" and dap_kept else ingest.stopped
    return UploadResult(ingest.batches + dap.batches, ingest.acknowledged + dap.acknowledged,
                        ingest.accepted + dap.accepted, dict(sorted(rejected.items())),
                        ingest.duplicates + dap.duplicates, stopped, ingest.next_upload_at)
