"""Job shares sealed at rest (issue 84, item 3): what an aggregator's store holds of a job reveals nothing without
the aggregator's records key, alone or added to the other aggregator's store.

**Why.** A job's aggregate share is the sum of its reports' output shares, un-noised. The leader's and the helper's
shares of one job add up, in the field, to the job's sum; a quiet task makes jobs of one report, whose two shares
add up to that device's measurement. Kept in the clear on both sides, the two stores together (a backup of each, a
bucket policy mistake at each) would give single devices' values without any key.

**What.** Each job record holds its share sealed with HPKE (RFC 9180, the ``prio`` crate's, as everything sealed
here) to the aggregator's **records key**, a key pair held in its config's secret files and never in its store
(``records_key``; by default its HPKE key of ``/hpke_config``): ``info`` names the purpose and the role, and the
associated data binds the task, the role, the window and the job ID, so a sealed share opens only as the share of
the job whose record holds it (a record copied under another job's name does not open). Three options were weighed:

* *aggregate into the window before writing* (one record per window, rewritten per job) breaks the exactly-once
  argument, which rests on each job's record being created once and never changed (:mod:`~ldp.aggregators.records`);
* *delete the job records once the window is released* (done too: ``job_retention``,
  :meth:`~ldp.aggregators.records.TaskRecords.prune`) leaves every share of every open window in the clear;
* *seal them* (chosen) keeps the records create-once and makes both stores together worth nothing without a key
  neither store holds. Deleting them after the release then bounds what a breach of stores *and* keys gives.

The sealing costs one HPKE seal per job (tens of microseconds), not per report.
"""

from __future__ import annotations

from typing import Any

from ldp.aggregators.prepare import ROLE_BYTES

__all__ = ["ShareSealer", "JOB_SHARE_INFO"]

JOB_SHARE_INFO = b"ldp job share at rest"
"""HPKE ``info`` of a job share sealed at rest (followed by the role's DAP ``Role`` byte)."""


class ShareSealer:
    """Seals and opens one task's job shares at one aggregator (module docstring): ``keypair`` the records key
    (an :class:`ldp.prio.HpkeKeypair`), ``vdaf`` the task's Prio3 instance (its aggregate-share encoding)."""

    def __init__(self, keypair: Any, vdaf: Any, role: str, task_id: bytes) -> None:
        self.keypair, self.vdaf, self.role, self.task_id = keypair, vdaf, role, task_id
        self.info = JOB_SHARE_INFO + bytes([ROLE_BYTES[role]])

    def _aad(self, job_id: str, window: int) -> bytes:
        """The task, the role, the window and the job ID: a sealed share opens only under the job it is of."""
        return self.task_id + bytes([ROLE_BYTES[self.role]]) + window.to_bytes(8, "big") + job_id.encode()

    def seal(self, job_id: str, window: int, share: list[int]) -> str:
        """The job's share (field elements), sealed, in hex."""
        return self.seal_bytes(job_id, window, self.vdaf.aggregate_share_from_field_elements(share).to_bytes())

    def seal_bytes(self, job_id: str, window: int, payload: bytes) -> str:
        """Any bytes of a job sealed as its share is (a Poplar1 job's aggregate share, the helper's verification
        states between its two rounds: :mod:`ldp.aggregators.poplar1_helper`), in hex."""
        from ldp import prio

        return bytes(prio.hpke_seal(self.keypair.config, self.info, self._aad(job_id, window), payload)).hex()

    def open_bytes(self, job_id: str, window: int, sealed: str) -> bytes:
        """What :meth:`seal_bytes` sealed (the errors of :meth:`open`)."""
        from ldp import prio

        return bytes(prio.hpke_open(self.keypair, self.info, self._aad(job_id, window), bytes.fromhex(sealed)))

    def open(self, job_id: str, window: int, sealed: str) -> list[int]:
        """The field elements of a share :meth:`seal` made; :class:`~ldp.errors.PrioError` for one that does not
        open (another key, another job, altered) and ``ValueError`` for one that is not hex."""
        data = self.open_bytes(job_id, window, sealed)
        return list(self.vdaf.aggregate_share_from_bytes(data).field_elements())
