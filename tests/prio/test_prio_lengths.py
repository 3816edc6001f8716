"""What a share's bytes must be (issue 84, item 1; ``bindings/prio/src/lengths.rs``): ``input_share_len`` and
``public_share_len`` are exactly the lengths ``shard`` makes, for each of the four types at several parameters and
numbers of aggregators, in both VDAF drafts (18 and 08: its seeds are 16 bytes, and its Prio3Sum has joint
randomness); ``check_input_share`` and ``check_public_share`` take those shares and refuse a truncated or extended
one, a share of another aggregator, of another VDAF or of the other draft, as :class:`~ldp.errors.PrioError` with
``operation="decode"``."""

from __future__ import annotations

from typing import Any

import pytest
from prio_support import DRAFTS, SEED_SIZES, make

from ldp.errors import PrioError

CTX = b"ldp tests/prio lengths"

CASES = [
    # (class, parameters, a measurement)
    ("Prio3Count", {}, 1),
    ("Prio3Count", {"num_aggregators": 3}, 0),
    ("Prio3Sum", {"max_measurement": 1}, 1),
    ("Prio3Sum", {"max_measurement": 7}, 5),
    ("Prio3Sum", {"max_measurement": 100_000}, 12_345),
    ("Prio3SumVec", {"length": 1, "max_measurement": 1}, [1]),
    ("Prio3SumVec", {"length": 4, "max_measurement": 3}, [0, 3, 1, 2]),
    ("Prio3SumVec", {"length": 20, "max_measurement": 1, "chunk_length": 3}, [1] * 20),
    ("Prio3SumVec", {"length": 3, "max_measurement": 32000, "num_aggregators": 3}, [1, 2, 3]),
    ("Prio3Histogram", {"length": 2}, 1),
    ("Prio3Histogram", {"length": 5}, 4),
    ("Prio3Histogram", {"length": 100, "chunk_length": 7}, 42),
    ("Prio3Histogram", {"length": 16, "num_aggregators": 4}, 3),
]
IDS = [f"{name}-{params}" for name, params, _ in CASES]
JOINT_RAND = {18: ("Prio3SumVec", "Prio3Histogram"), 8: ("Prio3Sum", "Prio3SumVec", "Prio3Histogram")}
"""The types with joint randomness (a public share; a helper's blind) in each draft."""


def _vdaf(prio: Any, name: str, params: dict[str, Any], draft: int = 18) -> Any:
    return make(prio, name, draft, ctx=CTX, **params)


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize(("name", "params", "measurement"), CASES, ids=IDS)
def test_the_lengths_are_those_shard_makes(prio: Any, name: str, params: dict[str, Any], measurement: Any,
                                           draft: int) -> None:
    vdaf = _vdaf(prio, name, params, draft)
    for _ in range(3):  # fresh randomness each time: the lengths are the VDAF's, not a draw's
        _, public, inputs = vdaf.shard(measurement)
        assert vdaf.public_share_len == len(public)
        assert [vdaf.input_share_len(i) for i in range(vdaf.num_aggregators)] == [len(s) for s in inputs]
        vdaf.check_public_share(public)
        for i, share in enumerate(inputs):
            vdaf.check_input_share(i, share)
    joint_rand, seed = name in JOINT_RAND[draft], SEED_SIZES[draft]
    assert vdaf.public_share_len == (seed * vdaf.num_aggregators if joint_rand else 0)
    # a helper's: its seed (draft 08: a measurement share's and a proof share's), and its blind
    seeds = 1 if draft == 18 else 2
    assert vdaf.input_share_len(1) == seed * (seeds + 1 if joint_rand else seeds)


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize(("name", "params", "measurement"), CASES, ids=IDS)
def test_a_truncated_or_extended_share_is_refused(prio: Any, name: str, params: dict[str, Any],
                                                  measurement: Any, draft: int) -> None:
    vdaf = _vdaf(prio, name, params, draft)
    _, public, inputs = vdaf.shard(measurement)
    for i, share in enumerate(inputs):
        for bad in (share[:-1], share[:1], b"", share + b"\x00", share + share):
            with pytest.raises(PrioError, match=f"no input share of aggregator {i}") as exc:
                vdaf.check_input_share(i, bad)
            assert exc.value.operation == "decode" and f"of {len(share)} bytes" in str(exc.value)
    for bad in ([public[:-1], public + b"\x00"] if public else [b"\x00", bytes(32)]):
        with pytest.raises(PrioError, match="no public share") as exc:
            vdaf.check_public_share(bad)
        assert exc.value.operation == "decode"


def test_a_share_of_another_vdaf_or_aggregator_is_refused(prio: Any) -> None:
    """The cases of the door: a Prio3Histogram(length=4) share to a length-5 task, a Prio3Sum share to a Count task,
    a helper's share where the leader's is expected; a field element at or above the modulus."""
    five, four = prio.Prio3Histogram(length=5, ctx=CTX), prio.Prio3Histogram(length=4, ctx=CTX)
    _, _, (leader, helper) = four.shard(3)
    with pytest.raises(PrioError, match="no input share of aggregator 0"):
        five.check_input_share(0, leader)
    five.check_input_share(1, helper)  # a helper's share is seeds: the same for every length
    with pytest.raises(PrioError, match="no input share of aggregator 0"):
        four.check_input_share(0, helper)
    count = prio.Prio3Count(ctx=CTX)
    _, public, (sum_leader, _) = prio.Prio3Sum(max_measurement=7, ctx=CTX).shard(5)
    with pytest.raises(PrioError, match="no input share of aggregator 0"):
        count.check_input_share(0, sum_leader)
    count.check_public_share(public)  # both have none
    _, _, (leader, _) = count.shard(1)
    over = (2**64 - 2**32 + 1).to_bytes(8, "little")  # Field64's modulus: no element
    with pytest.raises(PrioError, match="no input share of aggregator 0"):
        count.check_input_share(0, over + leader[8:])


def test_an_aggregator_id_out_of_range_is_refused(prio: Any) -> None:
    vdaf = prio.Prio3Histogram(length=5, ctx=CTX)
    for call in (lambda: vdaf.input_share_len(2), lambda: vdaf.check_input_share(2, b"")):
        with pytest.raises(PrioError, match=r"agg_id must be in \[0, 2\), got 2") as exc:
            call()
        assert exc.value.operation == "decode"


@pytest.mark.parametrize(("name", "params", "measurement"), CASES, ids=IDS)
def test_a_share_of_the_other_draft_is_refused(prio: Any, name: str, params: dict[str, Any], measurement: Any) -> None:
    """Every share of one draft, given to the same type and parameters of the other, is refused at the door (their
    seeds differ, 16 bytes against 32, and so do their field elements' counts); a public share too, unless both have
    none. Prio3Count's shares have the same bytes in both drafts (the leader's six Field64 elements, a helper's one
    32-byte seed or two 16-byte ones): the door takes them, and verification refuses the report."""
    vdafs = {draft: _vdaf(prio, name, params, draft) for draft in DRAFTS}
    for draft, vdaf in vdafs.items():
        other = vdafs[26 - draft]
        nonce, public, inputs = vdaf.shard(measurement)
        if name == "Prio3Count":
            assert [len(s) for s in inputs] == [other.input_share_len(i) for i in range(len(inputs))]
            key = bytes(other.verify_key_size)
            with pytest.raises(PrioError) as exc:
                pairs = [other.verify_init(key, i, nonce, public, share) for i, share in enumerate(inputs)]
                other.verifier_shares_to_message([share for _, share in pairs])
            assert exc.value.operation == "verifier_shares_to_message"
            continue
        for i, share in enumerate(inputs):
            with pytest.raises(PrioError, match=f"no input share of aggregator {i}") as exc:
                other.check_input_share(i, share)
            assert exc.value.operation == "decode" and ("draft 08" in str(exc.value)) == (draft == 18)
        if public or other.public_share_len:
            with pytest.raises(PrioError, match="no public share"):
                other.check_public_share(public)
