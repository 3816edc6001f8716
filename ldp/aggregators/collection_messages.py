"""DAP-09's collection messages (``draft-ietf-ppm-dap-09`` §4.7), between the collector and the leader, and the
associated data an aggregate share is sealed to the collector with (§4.7.5), in :mod:`~ldp.aggregators.codec`'s
encoding:

``CollectionReq`` (``PUT /tasks/{task}/collection_jobs/{job}``, ``application/dap-collect-req``)::

    Query query;                                /* query type 1 (time interval), then the batch interval */
    opaque agg_param<0..2^32-1>;                /* empty for Prio3 */

``Collection`` (the answer to ``POST`` on the same URL once the batch is collected, ``application/dap-collection``)::

    PartialBatchSelector part_batch_selector;   /* query type 1 */
    uint64 report_count;
    Interval interval;                          /* the smallest interval of time_precision holding the reports */
    HpkeCiphertext leader_encrypted_agg_share;
    HpkeCiphertext helper_encrypted_agg_share;

``AggregateShareAad``::

    TaskID task_id; opaque agg_param<0..2^32-1>; BatchSelector batch_selector;

A collection job's ID is 16 bytes, chosen by the collector, in the URL in base64url without padding.
"""

from __future__ import annotations

from dataclasses import dataclass

from ldp.aggregators.codec import (
    PARTIAL_TIME_INTERVAL,
    TASK_ID_SIZE,
    HpkeCiphertext,
    Interval,
    MessageError,
    Reader,
    batch_selector,
    check_size,
    opaque32,
    read_batch_selector,
    read_partial_batch_selector,
    u64,
)

__all__ = ["CollectionReq", "Collection", "aggregate_share_aad", "COLLECTION_JOB_ID_SIZE", "MessageError"]

COLLECTION_JOB_ID_SIZE = 16


@dataclass(frozen=True)
class CollectionReq:
    """The collector's query: a time-interval batch, and the aggregation parameter (empty for Prio3)."""

    interval: Interval
    aggregation_parameter: bytes = b""

    def to_bytes(self) -> bytes:
        return batch_selector(self.interval) + opaque32(self.aggregation_parameter)

    @classmethod
    def from_bytes(cls, data: bytes) -> CollectionReq:
        rd = Reader(data, "CollectionReq")
        out = cls(read_batch_selector(rd), rd.opaque32())
        rd.end()
        return out


@dataclass(frozen=True)
class Collection:
    """A collected batch: its report count, the interval its reports span, and each aggregator's aggregate share
    sealed to the collector."""

    report_count: int
    interval: Interval
    leader_share: HpkeCiphertext
    helper_share: HpkeCiphertext

    def to_bytes(self) -> bytes:
        return b"".join([PARTIAL_TIME_INTERVAL, u64(self.report_count), self.interval.to_bytes(),
                         self.leader_share.to_bytes(), self.helper_share.to_bytes()])

    @classmethod
    def from_bytes(cls, data: bytes) -> Collection:
        rd = Reader(data, "Collection")
        read_partial_batch_selector(rd)
        out = cls(rd.uint(8), Interval.read(rd), HpkeCiphertext.read(rd), HpkeCiphertext.read(rd))
        rd.end()
        return out


def aggregate_share_aad(task_id: bytes, interval: Interval, aggregation_parameter: bytes = b"") -> bytes:
    """DAP-09's ``AggregateShareAad``: what an aggregate share is sealed to the collector with, so that it opens
    only for the task, the aggregation parameter and the batch it was made for."""
    check_size(task_id, TASK_ID_SIZE, "task_id")
    return task_id + opaque32(aggregation_parameter) + batch_selector(interval)
