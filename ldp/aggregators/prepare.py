"""One aggregator's steps on one report, shared by the leader and the helper (issue 71, item 3): open its input
share (HPKE, DAP-09 §4.4.2), start the VDAF's preparation (Prio3's one round), and name every failure by its
:class:`~ldp.aggregators.messages.ReportError` code. The operations are :mod:`ldp.prio`'s (the ``prio`` crate).

The aggregators run these steps for a whole job in one call of the binding (``helper_prepare_batch``,
``leader_init_batch``, ``leader_finish_batch``: the loop in Rust, the GIL released); :func:`prepare_init` and
:func:`joint_rand_part_matches` are the same steps one report at a time, which the batch calls reproduce exactly
(``tests/prio/test_prio_batch.py`` runs both on the same reports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldp.aggregators.messages import ReportError
from ldp.errors import PrioError

__all__ = ["Prepared", "ROLE_BYTES", "SEED_SIZE", "joint_rand_part_matches", "aggregate_share_info",
           "aggregate_share_aad", "prepare_init"]

ROLE_BYTES = {"collector": 0, "client": 1, "leader": 2, "helper": 3}
"""DAP-09's ``Role`` values (§4.1), in HPKE's ``info`` strings."""


def aggregate_share_info(role: str) -> bytes:
    """DAP-09's HPKE ``info`` for an aggregate share from ``role`` to the collector (§4.6)."""
    return b"dap-09 aggregate share" + bytes([ROLE_BYTES[role], ROLE_BYTES["collector"]])


def aggregate_share_aad(task_id: bytes, window: int, count: int, checksum: bytes) -> bytes:
    """The associated data an aggregate share is sealed with: the task, the window, the report count and the
    checksum (what DAP's ``AggregateShareAad`` binds: a share opens only for the batch it was made for)."""
    return task_id + window.to_bytes(8, "big") + count.to_bytes(8, "big") + checksum


@dataclass
class Prepared:
    """A report whose share opened and whose preparation started: the VDAF state and this aggregator's verifier
    share."""

    report_id: bytes
    state: Any
    verifier_share: bytes


def prepare_init(vdaf: Any, keypair: Any, verify_key: bytes, role: str, task_id: bytes, report_id: bytes, time: int,
                 public_share: bytes, ciphertext: bytes, input_share: bytes | None = None) -> Prepared | ReportError:
    """Open this aggregator's input share of one report (unless ``input_share`` is the share already opened) and
    start its preparation; or why not."""
    from ldp import prio

    if input_share is None:
        if not ciphertext or ciphertext[0] != keypair.config.id:  # DAP's HpkeCiphertext starts with its config ID
            return ReportError.hpke_unknown_config_id
        try:
            input_share = prio.open_input_share(keypair, role=role, task_id=task_id, report_id=report_id, time=time,
                                                public_share=public_share, ciphertext=ciphertext)
        except PrioError:
            return ReportError.hpke_decrypt_error
    try:
        state, verifier_share = vdaf.verify_init(verify_key, 0 if role == "leader" else 1, report_id, public_share,
                                                 input_share)
    except PrioError:
        return ReportError.vdaf_invalid
    return Prepared(report_id, state, verifier_share)


SEED_SIZE = 32
"""Prio3's seed size (VDAF draft 18): a joint randomness part is one seed."""


def joint_rand_part_matches(public_share: bytes, verifier_share: bytes, agg_id: int) -> bool:
    """Whether the public share's joint randomness part for aggregator ``agg_id`` is the one that aggregator
    derived from its input share (the last seed of its verifier share; VDAF draft 18 §7.2.6: a public share is the
    aggregators' parts in order, a verifier share ends with its own part). Prio3 with joint randomness (SumVec,
    Histogram) makes each aggregator check only the *other's* part: a device that forges the helper's part in the
    public share fails the leader's ``verify_next`` and passes the helper's. The helper checks its own part with
    this before it counts a report, so that the two never disagree on which reports count (a disagreement would
    make the window's checksums differ, and the window could not be released). No joint randomness (Count, Sum):
    ``True``. ``helper_prepare_batch`` makes this check in Rust, byte for byte the same."""
    if not public_share:
        return True
    parts = len(public_share) // SEED_SIZE
    if len(public_share) % SEED_SIZE or not 0 <= agg_id < parts or len(verifier_share) < SEED_SIZE:
        return False
    return public_share[agg_id * SEED_SIZE:(agg_id + 1) * SEED_SIZE] == verifier_share[-SEED_SIZE:]
