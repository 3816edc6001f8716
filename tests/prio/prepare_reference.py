"""The one-report reference of the aggregators' preparation (issue 71, item 3), which ``test_prio_batch.py`` runs
against the binding's batch calls on the same reports.

The aggregators prepare a whole job in one call of the binding (``helper_prepare_batch``, ``leader_init_batch``,
``leader_finish_batch``: the loop in Rust, the GIL released). Before those calls they ran these steps one report at
a time, and the batch calls must reproduce them exactly: open this aggregator's input share (HPKE, DAP-09 §4.4.2),
start the VDAF's preparation (Prio3's one round), name every failure by its
:class:`~ldp.aggregators.messages.ReportError` code (:func:`prepare_init`), and at the helper check its own joint
randomness part (:func:`joint_rand_part_matches`). The operations are :mod:`ldp.prio`'s (the ``prio`` crate)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldp.aggregators.messages import ReportError
from ldp.errors import PrioError

__all__ = ["Prepared", "SEED_SIZE", "joint_rand_part_matches", "prepare_init"]


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
"""Prio3's seed size in VDAF draft 18: a joint randomness part is one seed (16 bytes in draft 08: ``seed_size=16``,
the VDAF's ``verify_key_size`` in either draft)."""


def joint_rand_part_matches(public_share: bytes, verifier_share: bytes, agg_id: int,
                            seed_size: int = SEED_SIZE) -> bool:
    """Whether the public share's joint randomness part for aggregator ``agg_id`` is the one that aggregator
    derived from its input share (the last seed of its verifier share; VDAF draft 18 §7.2.6, and draft 08 §7.2.2
    with 16-byte seeds: a public share is the aggregators' parts in order, a verifier share ends with its own part).
    Prio3 with joint randomness (SumVec, Histogram; and Sum in draft 08) makes each aggregator check only the
    *other's* part: a device that forges the helper's part in the public share fails the leader's ``verify_next``
    and passes the helper's. The helper checks its own part before it counts a report, so that the two never
    disagree on which reports count (a disagreement would make the window's checksums differ, and the window could
    not be released). No joint randomness (Count; Sum in draft 18): ``True``. ``helper_prepare_batch`` makes this
    check in Rust, byte for byte the same."""
    if not public_share:
        return True
    parts = len(public_share) // seed_size
    if len(public_share) % seed_size or not 0 <= agg_id < parts or len(verifier_share) < seed_size:
        return False
    return public_share[agg_id * seed_size:(agg_id + 1) * seed_size] == verifier_share[-seed_size:]
