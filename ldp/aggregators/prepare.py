"""What the aggregators and the collector agree on around preparation (issue 71, item 3): DAP-09's role values in
HPKE's ``info`` strings, and the ``info`` an aggregate share is sealed to the collector with (DAP-09 §4.7.5; its
associated data is :func:`ldp.aggregators.collection_messages.aggregate_share_aad`).

Preparation itself (open each input share, HPKE, DAP-09 §4.4.2; start and finish Prio3's one round; name every
failure by its :class:`~ldp.aggregators.messages.ReportError` code) runs for a whole job in one call of the binding
(:mod:`ldp.prio`'s ``helper_prepare_batch``, ``leader_init_batch``, ``leader_finish_batch``: the loop in Rust, the
GIL released); the same steps one report at a time are the tests' reference (``tests/prio/prepare_reference.py``,
which ``tests/prio/test_prio_batch.py`` runs against the batch calls on the same reports)."""

from __future__ import annotations

__all__ = ["ROLE_BYTES", "aggregate_share_info"]

ROLE_BYTES = {"collector": 0, "client": 1, "leader": 2, "helper": 3}
"""DAP-09's ``Role`` values (§4.1), in HPKE's ``info`` strings."""


def aggregate_share_info(role: str) -> bytes:
    """DAP-09's HPKE ``info`` for an aggregate share from ``role`` to the collector (§4.6)."""
    return b"dap-09 aggregate share" + bytes([ROLE_BYTES[role], ROLE_BYTES["collector"]])

