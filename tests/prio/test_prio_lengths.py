"""What a share's bytes must be (issue 84, item 1; ``bindings/prio/src/lengths.rs``): ``input_share_len`` and
``public_share_len`` are exactly the lengths ``shard`` makes, for each of the four types at several parameters and
numbers of aggregators; ``check_input_share`` and ``check_public_share`` take those shares and refuse a truncated or
extended one, a share of another aggregator or of another VDAF, as :class:`~ldp.errors.PrioError` with
``operation="decode"``."""

from __future__ import annotations

from typing import Any

import pytest

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


def _vdaf(prio: Any, name: str, params: dict[str, Any]) -> Any:
    return getattr(prio, name)(ctx=CTX, **params)


@pytest.mark.parametrize(("name", "params", "measurement"), CASES, ids=IDS)
def test_the_lengths_are_those_shard_makes(prio: Any, name: str, params: dict[str, Any], measurement: Any) -> None:
    vdaf = _vdaf(prio, name, params)
    for _ in range(3):  # fresh randomness each time: the lengths are the VDAF's, not a draw's
        _, public, inputs = vdaf.shard(measurement)
        assert vdaf.public_share_len == len(public)
        assert [vdaf.input_share_len(i) for i in range(vdaf.num_aggregators)] == [len(s) for s in inputs]
        vdaf.check_public_share(public)
        for i, share in enumerate(inputs):
            vdaf.check_input_share(i, share)
    joint_rand = name in ("Prio3SumVec", "Prio3Histogram")
    assert vdaf.public_share_len == (32 * vdaf.num_aggregators if joint_rand else 0)
    assert vdaf.input_share_len(1) == (64 if joint_rand else 32)  # a helper's: its seed, and its blind


@pytest.mark.parametrize(("name", "params", "measurement"), CASES, ids=IDS)
def test_a_truncated_or_extended_share_is_refused(prio: Any, name: str, params: dict[str, Any],
                                                  measurement: Any) -> None:
    vdaf = _vdaf(prio, name, params)
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
