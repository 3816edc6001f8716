"""The device side: the runtime (:mod:`ldp.client.runtime`: a state file per collection, ``record`` → outbox)
and the uploader (:mod:`ldp.client.uploader`: batches to ``ldp serve``). Standard library, mmh3 and bitarray
only."""

from ldp.client.runtime import STATE_FORMAT, PendingItem, StateError, TelemetryClient
from ldp.client.uploader import UploadError, UploadResult
from ldp.privacy.ledger import BudgetExceeded

__all__ = ["TelemetryClient", "StateError", "PendingItem", "STATE_FORMAT", "BudgetExceeded", "UploadError",
           "UploadResult"]
