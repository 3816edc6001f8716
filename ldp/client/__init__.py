"""The device side: the runtime (:mod:`ldp.client.runtime`: :class:`TelemetryClient`, ``record`` → outbox), its
state file (:mod:`ldp.client.state`: one per collection, checked on opening), the outbox and its pinned upload
batches (:mod:`ldp.client.outbox`) and the uploader (:mod:`ldp.client.uploader`: batches to ``ldp serve``, over
:mod:`ldp.client.transport`, which keeps a deadline per request).
Standard library, mmh3 and bitarray only."""

from ldp.client.runtime import STATE_FORMAT, PendingItem, StateError, TelemetryClient
from ldp.client.uploader import UploadError, UploadResult
from ldp.errors import ThreadMisuseError, UploadProtocolError
from ldp.privacy.ledger import BudgetExceeded

__all__ = ["TelemetryClient", "StateError", "PendingItem", "STATE_FORMAT", "BudgetExceeded", "UploadError",
           "UploadProtocolError", "UploadResult", "ThreadMisuseError"]
