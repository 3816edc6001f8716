"""Properties of the Prio3 binding in each VDAF draft (18 and 08), drawn by hypothesis: random measurements of each
type, sharded, verified and aggregated by two simulated aggregators (their shares sent as bytes, aggregate shares
merged from parts), give the exact sum; an out-of-range measurement (a count other than 0 or 1, a sum above its
maximum, a vector element above its maximum or a vector of another length, a histogram index at or past the length;
draft 08's maximum is ``2**bits - 1``) is refused at sharding; an input share with one byte flipped is refused during
verification (``verify_init``, ``verifier_shares_to_message`` or ``verify_next``), by one aggregator or the
other."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from prio_support import DRAFTS, binding, make

CTX = b"ldp tests/prio properties"
VERIFICATION = {"verify_init", "verifier_shares_to_message", "verify_next"}


@st.composite
def collections(draw: st.DrawFn) -> tuple[str, dict[str, Any], list[Any], Any]:
    """A type, its parameters, 1 to 8 measurements in range and their true aggregate."""
    kind = draw(st.sampled_from(["count", "sum", "sumvec", "histogram"]))
    n = draw(st.integers(1, 8))
    if kind == "count":
        ms: list[Any] = draw(st.lists(st.sampled_from([0, 1, False, True]), min_size=n, max_size=n))
        return "Prio3Count", {}, ms, sum(ms)
    if kind == "sum":
        top = draw(st.sampled_from([1, 255, 2**32 - 1]) | st.integers(1, 2**63))
        ms = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
        return "Prio3Sum", {"max_measurement": top}, ms, sum(ms)
    if kind == "sumvec":
        length = draw(st.integers(1, 6))
        top = draw(st.sampled_from([1, 3, 32000]) | st.integers(1, 2**40))
        chunk = draw(st.none() | st.integers(1, 8))
        ms = draw(st.lists(st.lists(st.integers(0, top), min_size=length, max_size=length), min_size=n, max_size=n))
        params = {"length": length, "max_measurement": top, "chunk_length": chunk}
        return "Prio3SumVec", params, ms, [sum(column) for column in zip(*ms, strict=True)]
    length = draw(st.integers(1, 40))
    chunk = draw(st.none() | st.integers(1, 10))
    ms = draw(st.lists(st.integers(0, length - 1), min_size=n, max_size=n))
    return "Prio3Histogram", {"length": length, "chunk_length": chunk}, ms, [ms.count(b) for b in range(length)]


def _vdaf(prio: Any, name: str, params: dict[str, Any], draft: int) -> Any:
    """The VDAF of ``params`` in ``draft`` (draft 08: ``bits`` of the maximum's length, and no context string)."""
    vdaf = make(prio, name, draft, ctx=CTX, **params)
    assert vdaf.draft == draft
    return vdaf


def _verify(vdaf: Any, key: bytes, nonce: bytes, public: bytes, inputs: list[bytes]) -> list[Any]:
    """Both aggregators' verification of one report: their output shares (a PrioError when refused)."""
    states, shares = [], []
    for agg_id, input_share in enumerate(inputs):
        state, share = vdaf.verify_init(key, agg_id, nonce, public, input_share)
        states.append(state)
        shares.append(share)
    message = vdaf.verifier_shares_to_message(shares)
    return [vdaf.verify_next(state, message) for state in states]


@pytest.mark.parametrize("draft", DRAFTS)
@settings(max_examples=60, deadline=None)
@given(collections(), st.data())
def test_two_aggregators_give_the_exact_sum(draft: int, collection: tuple[str, dict[str, Any], list[Any], Any],
                                            data: st.DataObject) -> None:
    prio = binding()
    name, params, ms, truth = collection
    vdaf = _vdaf(prio, name, params, draft)
    key = os.urandom(vdaf.verify_key_size)
    split = data.draw(st.integers(0, len(ms)), label="reports in the first part")
    parts = [[vdaf.aggregate_init(), vdaf.aggregate_init()], [vdaf.aggregate_init(), vdaf.aggregate_init()]]
    for i, m in enumerate(ms):
        nonce, public, inputs = vdaf.shard(m)
        assert len(nonce) == vdaf.nonce_size and len(inputs) == 2
        for part, out in zip(parts[i >= split], _verify(vdaf, key, nonce, public, inputs), strict=True):
            part.accumulate(out)
    finals = []
    for agg_id in range(2):  # each aggregator merges its two parts, and sends its share to the collector as bytes
        share = parts[0][agg_id]
        share.merge(parts[1][agg_id])
        finals.append(vdaf.aggregate_share_from_bytes(share.to_bytes()))
    # the sum in the type's field: draft 18's Prio3Sum (Field64) wraps past its prime, 2**64 - 2**32 + 1, which eight
    # summands up to 2**63 can reach (the others stay below their prime here)
    modulus = vdaf.modulus
    truth = [t % modulus for t in truth] if isinstance(truth, list) else truth % modulus
    assert vdaf.unshard(finals, len(ms)) == truth
    elements = [(a + b) % modulus for a, b in zip(*(f.field_elements() for f in finals), strict=True)]
    assert elements == (truth if isinstance(truth, list) else [truth])


def _top(draw: st.DrawFn, draft: int, most: int) -> int:
    """A maximum up to ``most``; in draft 08 one of ``2**bits - 1`` (what its bit length takes)."""
    top = draw(st.integers(1, most))
    return top if draft == 18 else 2 ** top.bit_length() - 1


@st.composite
def out_of_range(draw: st.DrawFn, draft: int) -> tuple[str, dict[str, Any], Any]:
    """A type, its parameters and a measurement it must refuse, in ``draft``."""
    kind = draw(st.sampled_from(["count", "sum", "sumvec", "sumvec_length", "histogram"]))
    if kind == "count":
        return "Prio3Count", {}, draw(st.integers(2, 2**70) | st.integers(-(2**70), -1))
    if kind == "sum":
        top = _top(draw, draft, 2**40)
        return "Prio3Sum", {"max_measurement": top}, draw(st.integers(top + 1, 2**70) | st.integers(-(2**70), -1))
    length, top = draw(st.integers(1, 6)), _top(draw, draft, 2**20)
    params = {"length": length, "max_measurement": top}
    if kind == "sumvec":
        m = draw(st.lists(st.integers(0, top), min_size=length, max_size=length))
        m[draw(st.integers(0, length - 1))] = draw(st.integers(top + 1, 2**130) | st.integers(-(2**70), -1))
        return "Prio3SumVec", params, m
    if kind == "sumvec_length":
        wrong = draw(st.integers(0, 12).filter(lambda k: k != length))
        return "Prio3SumVec", params, [0] * wrong
    length = draw(st.integers(1, 40))
    return "Prio3Histogram", {"length": length}, draw(st.integers(length, 2**70) | st.integers(-(2**70), -1))


@pytest.mark.parametrize("draft", DRAFTS)
@settings(max_examples=80, deadline=None)
@given(st.data())
def test_an_out_of_range_measurement_is_refused_at_sharding(draft: int, data: st.DataObject) -> None:
    prio = binding()
    name, params, m = data.draw(out_of_range(draft), label="case")
    vdaf = _vdaf(prio, name, params, draft)
    assert params.get("max_measurement", 0) == getattr(vdaf, "max_measurement", 0)
    with pytest.raises(prio.PrioError) as refused:
        vdaf.shard(m)
    assert refused.value.operation == "shard"
    assert f"{name}(" in str(refused.value) and ".shard: " in str(refused.value)
    assert str(refused.value).split(".shard: ")[0].endswith(", draft 08)" if draft == 8 else ")")


@pytest.mark.parametrize("draft", DRAFTS)
@settings(max_examples=80, deadline=None)
@given(collections(), st.data())
def test_a_flipped_byte_of_an_input_share_is_refused_in_verification(
        draft: int, collection: tuple[str, dict[str, Any], list[Any], Any], data: st.DataObject) -> None:
    prio = binding()
    name, params, ms, _ = collection
    vdaf = _vdaf(prio, name, params, draft)
    key = os.urandom(vdaf.verify_key_size)
    nonce, public, inputs = vdaf.shard(ms[0])
    _verify(vdaf, key, nonce, public, inputs)  # the honest report verifies
    agg_id = data.draw(st.integers(0, 1), label="tampered aggregator")
    share = bytearray(inputs[agg_id])
    position = data.draw(st.integers(0, len(share) - 1), label="byte")
    share[position] ^= data.draw(st.integers(1, 255), label="xor")
    inputs[agg_id] = bytes(share)
    with pytest.raises(prio.PrioError) as refused:
        _verify(vdaf, key, nonce, public, inputs)
    assert refused.value.operation in VERIFICATION, str(refused.value)
