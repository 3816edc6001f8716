"""The Prio3 binding's face (:mod:`ldp.prio`): parameters, refusals as :class:`~ldp.errors.PrioError` naming the
VDAF and the operation, states used once and read back, aggregate shares merged, encoded and given as field elements
with noise added modulo the prime, pickling, in both VDAF drafts (18 and 08: ``draft=8``'s parameters, what it
refuses, and a share of one draft refused by the other's VDAF); the install without the binding (a clear error,
client code untouched); and ``LDP_REQUIRE_PRIO=1`` turning a missing binding into a failure."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from typing import Any

import pytest
from prio_support import DRAFTS, REQUIRE, binding, make as _make, missing, refused as _refused

import ldp.errors
from ldp.errors import LdpError, MissingExtraError, PrioError

CTX = b"ldp tests/prio binding"
KEY = bytes(range(32))
FIELD64 = 2**64 - 2**32 + 1
FIELD128 = 2**128 - 28 * 2**64 + 1


@pytest.fixture(scope="module")
def prio() -> Any:
    return binding()


def _make_vdaf(prio: Any, name: str, draft: int = 18, **params: Any) -> Any:
    return _make(prio, name, draft, ctx=CTX, **params)


def _report(vdaf: Any, m: Any) -> tuple[list[Any], list[Any]]:
    """One report verified by both aggregators: ``(states, output shares)``."""
    nonce, public, inputs = vdaf.shard(m)
    key = KEY[:vdaf.verify_key_size]
    pairs = [vdaf.verify_init(key, i, nonce, public, s) for i, s in enumerate(inputs)]
    message = vdaf.verifier_shares_to_message([share for _, share in pairs])
    states = [state for state, _ in pairs]
    return states, [vdaf.verify_next(state, message) for state in states]


def test_parameters_and_properties(prio: Any) -> None:
    count = prio.Prio3Count(ctx=CTX)
    assert repr(count) == "Prio3Count(num_aggregators=2)" and count.num_aggregators == 2 and count.ctx == CTX
    assert count.modulus == FIELD64 and count.output_len == 1 and count.rand_size == 2 * 32
    assert count.verify_key_size == prio.VERIFY_KEY_SIZE == 32 and count.nonce_size == prio.NONCE_SIZE == 16
    total = prio.Prio3Sum(max_measurement=255, ctx=CTX, num_aggregators=3)
    assert (total.max_measurement, total.num_aggregators, total.modulus) == (255, 3, FIELD64)
    vec = prio.Prio3SumVec(length=3, max_measurement=32000, ctx=CTX)
    assert (vec.length, vec.max_measurement, vec.chunk_length, vec.output_len) == (3, 32000, 7, 3)
    assert vec.modulus == FIELD128
    assert vec.rand_size == 4 * 32  # a seed and a joint randomness blind per aggregator
    hist = prio.Prio3Histogram(length=5, chunk_length=2, ctx=CTX)
    assert repr(hist) == "Prio3Histogram(length=5, chunk_length=2, num_aggregators=2)"
    assert prio.Prio3Histogram(length=5, ctx=CTX) == hist and prio.Prio3Histogram(length=5, ctx=b"other") != hist
    assert hash(prio.Prio3Histogram(length=5, ctx=CTX)) == hash(hist)
    assert (prio.PRIO_VERSION, prio.VDAF_DRAFT) == ("0.18.1", 18)


@pytest.mark.parametrize(("make", "words"), [
    (lambda p: p.Prio3Histogram(length=0, ctx=CTX), ["Prio3Histogram(length=0", "length"]),
    (lambda p: p.Prio3Histogram(length=4, chunk_length=0, ctx=CTX), ["chunk_length"]),
    (lambda p: p.Prio3Sum(max_measurement=0, ctx=CTX), ["Prio3Sum(max_measurement=0"]),
    (lambda p: p.Prio3Sum(max_measurement=2**64 - 1, ctx=CTX), ["modulus"]),
    (lambda p: p.Prio3SumVec(length=0, max_measurement=3, ctx=CTX), ["len"]),
    (lambda p: p.Prio3Count(ctx=CTX, num_aggregators=1), ["num_aggregators"]),
    (lambda p: p.Prio3Count(ctx=CTX, num_aggregators=300), ["num_aggregators must be in [2, 255], got 300"]),
], ids=["histogram-0", "chunk-0", "sum-0", "sum-modulus", "sumvec-0", "one-aggregator", "300-aggregators"])
def test_bad_parameters_are_refused(prio: Any, make: Any, words: list[str]) -> None:
    _refused(lambda: make(prio), "parameters", *words)


def test_ctx_is_required_and_types_are_checked(prio: Any) -> None:
    with pytest.raises(TypeError, match="ctx"):
        prio.Prio3Count()
    vdaf = prio.Prio3SumVec(length=2, max_measurement=3, ctx=CTX)
    for bad in ("12", b"12", 3, [1, "2"], [1.0, 2]):
        with pytest.raises(TypeError):
            vdaf.shard(bad)
    with pytest.raises(TypeError):
        prio.Prio3Count(ctx=CTX).shard(0.5)


def test_prio_error_is_an_ldp_value_error_that_pickles() -> None:
    exc = PrioError("Prio3Count(num_aggregators=2).shard: no", "shard")
    assert isinstance(exc, LdpError) and isinstance(exc, ValueError) and ldp.errors.PrioError is PrioError
    again = pickle.loads(pickle.dumps(exc))
    assert (type(again), str(again), again.operation) == (PrioError, str(exc), "shard")


def test_sharding_draws_from_the_os_unless_given(prio: Any) -> None:
    vdaf = prio.Prio3Histogram(length=4, ctx=CTX)
    a, b = vdaf.shard(1), vdaf.shard(1)
    assert a[0] != b[0] and a[2] != b[2] and len(a[0]) == 16
    nonce, rand = bytes(16), bytes(range(vdaf.rand_size))
    assert vdaf.shard(1, nonce=nonce, rand=rand) == vdaf.shard(1, nonce=nonce, rand=rand)
    fixed_nonce = vdaf.shard(1, nonce=nonce)
    assert fixed_nonce[0] == nonce and fixed_nonce[2] != vdaf.shard(1, nonce=nonce)[2]
    _refused(lambda: vdaf.shard(1, nonce=bytes(15)), "shard", "the nonce must be 16 bytes, got 15")
    _refused(lambda: vdaf.shard(1, rand=bytes(5)), "shard", f"rand must be {vdaf.rand_size} bytes, got 5")
    _refused(lambda: vdaf.shard(4), "shard", "Prio3Histogram(length=4", "got 4")


@pytest.mark.parametrize("draft", DRAFTS)
def test_verify_init_refuses_what_it_cannot_read(prio: Any, draft: int) -> None:
    vdaf = _make_vdaf(prio, "Prio3SumVec", draft, length=3, max_measurement=7)
    nonce, public, (leader, helper) = vdaf.shard([1, 2, 3])
    size = vdaf.verify_key_size
    key = KEY[:size]
    _refused(lambda: vdaf.verify_init(key[:-1], 0, nonce, public, leader), "verify_init",
             f"verify key must be {size} bytes, got {size - 1}")
    _refused(lambda: vdaf.verify_init(key + bytes(16), 0, nonce, public, leader), "verify_init",
             f"verify key must be {size} bytes, got {size + 16}")
    _refused(lambda: vdaf.verify_init(key, 0, nonce[:8], public, leader), "verify_init", "nonce must be 16")
    _refused(lambda: vdaf.verify_init(key, 2, nonce, public, leader), "verify_init", "agg_id must be in [0, 2), got 2")
    _refused(lambda: vdaf.verify_init(key, 0, nonce, public[:-1], leader), "verify_init", "public share")
    _refused(lambda: vdaf.verify_init(key, 0, nonce, public, leader + b"x"), "verify_init",
             "input share is no valid encoding for aggregator 0")
    _refused(lambda: vdaf.verify_init(key, 1, nonce, public, leader), "verify_init", "aggregator 1")  # a leader's
    with pytest.raises(TypeError):
        vdaf.verify_init(key, 0, nonce, public, "text")


@pytest.mark.parametrize("draft", DRAFTS)
def test_verifier_shares_to_message_refuses_a_bad_round(prio: Any, draft: int) -> None:
    vdaf = _make_vdaf(prio, "Prio3Histogram", draft, length=3)
    nonce, public, inputs = vdaf.shard(2)
    key = KEY[:vdaf.verify_key_size]
    shares = [vdaf.verify_init(key, i, nonce, public, s)[1] for i, s in enumerate(inputs)]
    _refused(lambda: vdaf.verifier_shares_to_message(shares[:1]), "verifier_shares_to_message", "count")
    _refused(lambda: vdaf.verifier_shares_to_message([shares[0], shares[1][:-1]]), "verifier_shares_to_message",
             "verifier share 1 is no valid encoding")
    other_key = [vdaf.verify_init(bytes(len(key)), 1, nonce, public, inputs[1])[1]]  # the aggregators disagree
    _refused(lambda: vdaf.verifier_shares_to_message([shares[0], *other_key]), "verifier_shares_to_message",
             "proof verifier check failed")
    with pytest.raises(TypeError, match="verifier share 0 must be bytes"):
        vdaf.verifier_shares_to_message(["a", "b"])


@pytest.mark.parametrize(("draft", "described"), [(18, "max_measurement=10, num_aggregators=2"),
                                                   (8, "bits=4, num_aggregators=2, draft 08")])
def test_a_state_is_used_once_read_back_and_kept_to_its_vdaf(prio: Any, draft: int, described: str) -> None:
    vdaf = _make_vdaf(prio, "Prio3Sum", draft, max_measurement=10)
    nonce, public, inputs = vdaf.shard(7)
    key = KEY[:vdaf.verify_key_size]
    pairs = [vdaf.verify_init(key, i, nonce, public, s) for i, s in enumerate(inputs)]
    message = vdaf.verifier_shares_to_message([share for _, share in pairs])
    leader = pairs[0][0]
    kept = vdaf.verify_state_from_bytes(0, leader.to_bytes())  # e.g. stored while the helper answers
    assert repr(kept) == f"VerifyState(Prio3Sum({described}), agg_id=0)" and not kept.used
    first = vdaf.verify_next(leader, message)
    assert leader.used and "used" in repr(leader)
    _refused(lambda: vdaf.verify_next(leader, message), "verify_next", "already used")
    _refused(lambda: leader.to_bytes(), "decode", "already used")
    assert vdaf.verify_next(kept, message).to_bytes() == first.to_bytes()
    other = _make_vdaf(prio, "Prio3Sum", draft, max_measurement=100)
    _refused(lambda: other.verify_next(pairs[1][0], message), "verify_next", described)
    _refused(lambda: vdaf.verify_state_from_bytes(1, b"\x00"), "decode", "aggregator 1")
    _refused(lambda: vdaf.verify_state_from_bytes(5, b""), "decode", "agg_id")


@pytest.mark.parametrize("draft", DRAFTS)
def test_a_wrong_verifier_message_is_refused_at_verify_next(prio: Any, draft: int) -> None:
    vdaf = _make_vdaf(prio, "Prio3Histogram", draft, length=3)
    nonce, public, inputs = vdaf.shard(0)
    key = KEY[:vdaf.verify_key_size]
    state, _ = vdaf.verify_init(key, 0, nonce, public, inputs[0])
    _refused(lambda: vdaf.verify_next(state, bytes(len(key))), "verify_next", "joint randomness")
    state, _ = vdaf.verify_init(key, 0, nonce, public, inputs[0])
    _refused(lambda: vdaf.verify_next(state, bytes(len(key) - 1)), "verify_next",
             "verifier message is no valid encoding")


@pytest.mark.parametrize("draft", DRAFTS)
def test_aggregate_shares_merge_encode_and_stay_with_their_vdaf(prio: Any, draft: int) -> None:
    vdaf = _make_vdaf(prio, "Prio3Histogram", draft, length=4)
    outs = [_report(vdaf, m)[1] for m in (0, 1, 1, 3)]
    leader = vdaf.aggregate(o[0] for o in outs)
    helper = vdaf.aggregate_init()
    for o in outs:
        helper.accumulate(o[1])
    assert len(leader) == len(outs[0][0]) == 4 and repr(leader).startswith("AggregateShare(Prio3Histogram(length=4")
    assert vdaf.unshard([leader, helper], 4) == [1, 2, 0, 1]
    doubled = leader.copy()
    doubled.merge(doubled)  # merging a share with itself doubles it
    both = copy.copy(helper)
    both.merge(helper)
    assert vdaf.unshard([doubled, both], 8) == [2, 4, 0, 2]
    assert vdaf.unshard([leader, helper], 4) == [1, 2, 0, 1]  # the copies did not touch the originals
    count = _make_vdaf(prio, "Prio3Count", draft)
    sums = _make_vdaf(prio, "Prio3Sum", draft, max_measurement=1)
    c, s = count.aggregate_init(), sums.aggregate_init()
    # draft 18: the same field and length, refused; draft 08: Sum's field is Field128
    _refused(lambda: c.merge(s), "aggregate", "Prio3Sum(max_measurement=1" if draft == 18 else "Prio3Sum(bits=1")
    _refused(lambda: c.accumulate(_report(sums, 1)[1][0]), "aggregate", "an output share of Prio3Sum")
    _refused(lambda: count.aggregate([_report(sums, 1)[1][0]]), "aggregate", "not of this VDAF")
    _refused(lambda: count.unshard([c, s], 0), "unshard", "Prio3Sum")
    _refused(lambda: count.unshard([c], 0), "unshard", "takes 2 aggregate shares, got 1")
    _refused(lambda: vdaf.aggregate_share_from_bytes(leader.to_bytes()[:-1]), "decode", "not an aggregate share")
    with pytest.raises(TypeError):
        vdaf.aggregate([b"not a share"])


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize(("make", "m", "noise", "centred", "modulus"), [
    (lambda p, d: _make_vdaf(p, "Prio3Count", d), 1, [-3], [-2], FIELD64),
    (lambda p, d: _make_vdaf(p, "Prio3SumVec", d, length=2, max_measurement=9), [4, 0], [-3, 5 * FIELD128 + 2], [1, 2],
     FIELD128),
], ids=["count", "sumvec"])
def test_noise_on_a_share_wraps_around_the_prime(prio: Any, make: Any, m: Any, noise: list[int], centred: list[int],
                                                 modulus: int, draft: int) -> None:
    vdaf = make(prio, draft)
    outs = _report(vdaf, m)[1]
    leader, helper = vdaf.aggregate([outs[0]]), vdaf.aggregate([outs[1]])
    assert leader.modulus == vdaf.modulus == modulus and all(0 <= x < modulus for x in leader.field_elements())
    leader.add_integers(noise)  # any size, either sign
    total = [(a + b) % modulus for a, b in zip(leader.field_elements(), helper.field_elements(), strict=True)]
    assert [x - modulus if x > modulus // 2 else x for x in total] == centred  # the truth plus the noise
    rebuilt = vdaf.aggregate_share_from_field_elements(leader.field_elements())
    assert rebuilt.to_bytes() == leader.to_bytes()
    n = len(noise)
    _refused(lambda: vdaf.aggregate_share_from_field_elements([modulus] * n), "decode", "field element 0")
    _refused(lambda: vdaf.aggregate_share_from_field_elements([-1] * n), "decode", "field element 0")
    _refused(lambda: vdaf.aggregate_share_from_field_elements([0] * (n + 1)), "decode", "field elements")
    _refused(lambda: leader.add_integers([0] * (n + 1)), "aggregate", f"add_integers takes {n} values")
    with pytest.raises(TypeError):
        leader.add_integers([0.5] * n)


@pytest.mark.parametrize("draft", DRAFTS)
def test_unshard_gives_the_fields_sum(prio: Any, draft: int) -> None:
    count = _make_vdaf(prio, "Prio3Count", draft)
    share = count.aggregate_init()
    share.add_integers([-1])
    assert share.field_elements() == [FIELD64 - 1]
    assert count.unshard([share, count.aggregate_init()], 0) == FIELD64 - 1  # a noisy total is centred by its reader


def test_vdafs_pickle(prio: Any) -> None:
    for vdaf in (prio.Prio3Count(ctx=CTX, num_aggregators=3), prio.Prio3Sum(max_measurement=9, ctx=CTX),
                 prio.Prio3SumVec(length=2, max_measurement=9, chunk_length=3, ctx=CTX),
                 prio.Prio3Histogram(length=7, ctx=CTX), prio.Prio3Count(draft=8, num_aggregators=3),
                 prio.Prio3Sum(bits=9, draft=8), prio.Prio3Sum(max_measurement=255, draft=8),
                 prio.Prio3SumVec(length=2, bits=4, chunk_length=3, draft=8), prio.Prio3Histogram(length=7, draft=8)):
        again = pickle.loads(pickle.dumps(vdaf))
        assert type(again) is type(vdaf) and again == vdaf and repr(again) == repr(vdaf)
        assert again.draft == vdaf.draft and again.ctx == vdaf.ctx


# -- two drafts ---------------------------------------------------------------------------------------------------

TYPES = {"Prio3Count": ({}, 1), "Prio3Sum": ({"max_measurement": 255}, 200),
         "Prio3SumVec": ({"length": 3, "max_measurement": 15}, [1, 15, 3]), "Prio3Histogram": ({"length": 4}, 2)}
"""Each type's parameters (all-ones maxima: the same VDAF bounds in both drafts) and a measurement."""


def test_the_drafts_and_their_crates(prio: Any) -> None:
    assert prio.VDAF_DRAFTS == (8, 18) and prio.PRIO_VERSIONS == {8: "0.16.8", 18: "0.18.1"}
    assert prio.PRIO_VERSIONS[prio.VDAF_DRAFT] == prio.PRIO_VERSION
    assert {"VDAF_DRAFTS", "PRIO_VERSIONS"} <= set(prio.__all__)
    for name, (params, _) in TYPES.items():
        default, eighteen = getattr(prio, name)(ctx=CTX, **params), getattr(prio, name)(ctx=CTX, draft=18, **params)
        eight = getattr(prio, name)(draft=8, **params)
        assert default == eighteen and default.draft == 18 and eight.draft == 8 and eight != default
        assert repr(eight) == repr(default)[:-1] + ", draft 08)" or name in ("Prio3Sum", "Prio3SumVec")
        assert (default.verify_key_size, eight.verify_key_size) == (32, 16)
        assert eight.rand_size is None and isinstance(default.rand_size, int)
        assert eight.ctx == b"" and eight.nonce_size == default.nonce_size == 16
        assert eight.output_len == default.output_len
        # the same primes: Count, SumVec, Histogram in the same field in both drafts; Sum in Field128 in draft 08
        assert eight.modulus == (FIELD128 if name == "Prio3Sum" else default.modulus)
        if "max_measurement" in params:
            assert default.bits is None
            assert eight.max_measurement == default.max_measurement == params["max_measurement"]
            assert eight.bits == params["max_measurement"].bit_length()
            assert getattr(prio, name)(draft=8, bits=eight.bits, **{k: v for k, v in params.items()
                                                                   if k != "max_measurement"}) == eight
        if "length" in params:
            assert eight.chunk_length == default.chunk_length  # each crate's optimal_chunk_length: the same here
    assert repr(prio.Prio3Sum(bits=8, draft=8)) == "Prio3Sum(bits=8, num_aggregators=2, draft 08)"
    assert repr(prio.Prio3SumVec(length=3, bits=16, draft=8)) == (
        "Prio3SumVec(length=3, bits=16, chunk_length=7, num_aggregators=2, draft 08)")
    assert prio.Prio3Count(draft=8, ctx=b"").ctx == b""  # an empty context string is draft 08's


@pytest.mark.parametrize(("make", "words"), [
    (lambda p: p.Prio3Count(draft=7), ["Prio3Count: draft must be", "8 or 18", "got 7"]),
    (lambda p: p.Prio3Histogram(length=4, draft=9), ["Prio3Histogram: draft", "8 or 18", "got 9"]),
    (lambda p: p.Prio3Count(draft="8"), ["8 or 18", "got '8'"]),
    (lambda p: p.Prio3Count(draft=8.0), ["8 or 18", "got 8.0"]),
    (lambda p: p.Prio3Count(draft=True), ["8 or 18", "got True"]),
    (lambda p: p.Prio3Count(draft=8, ctx=CTX), ["Prio3Count(num_aggregators=2, draft 08)", "no context string",
                                                  "ctx must be empty", f"got {len(CTX)} bytes"]),
    (lambda p: p.Prio3Histogram(length=4, draft=8, ctx=b"x"), ["Prio3Histogram(length=4", "draft 08)", "ctx"]),
    (lambda p: p.Prio3Sum(bits=8, ctx=CTX), ["Prio3Sum(num_aggregators=2)", "bits=8 is draft 08's parameter",
                                             "max_measurement="]),
    (lambda p: p.Prio3SumVec(length=2, bits=8, ctx=CTX, draft=18), ["Prio3SumVec(length=2", "draft 08's parameter"]),
    (lambda p: p.Prio3Sum(max_measurement=200, draft=8), ["Prio3Sum(num_aggregators=2, draft 08)",
                                                          "max_measurement must be 2**bits - 1, got 200",
                                                          "127 (bits=7)", "255 (bits=8)", "bits="]),
    (lambda p: p.Prio3SumVec(length=2, max_measurement=5, draft=8), ["got 5", "3 (bits=2)", "7 (bits=3)"]),
    (lambda p: p.Prio3Sum(max_measurement=255, bits=8, draft=8), ["bits= or max_measurement=, not both"]),
    (lambda p: p.Prio3Sum(bits=65, draft=8), ["Prio3Sum(bits=65", "draft 08)", "65"]),
    (lambda p: p.Prio3Count(draft=8, num_aggregators=1), ["draft 08)", "num_aggregators must be in [2, 255], got 1"]),
], ids=["draft-7", "draft-9", "draft-str", "draft-float", "draft-bool", "ctx-8", "ctx-8-histogram", "bits-18",
        "bits-18-sumvec", "max-200-8", "max-5-8", "bits-and-max", "bits-65", "one-aggregator-8"])
def test_draft_parameters_are_refused(prio: Any, make: Any, words: list[str]) -> None:
    _refused(lambda: make(prio), "parameters", *words)


def test_a_missing_bound_or_context_string_is_a_type_error(prio: Any) -> None:
    for make in (lambda: prio.Prio3Sum(draft=8), lambda: prio.Prio3SumVec(length=2, draft=8),
                 lambda: prio.Prio3Sum(ctx=CTX)):
        with pytest.raises(TypeError, match="max_measurement"):
            make()
    with pytest.raises(TypeError, match="ctx"):
        prio.Prio3Histogram(length=3, draft=18)


@pytest.mark.parametrize("name", list(TYPES))
def test_a_share_or_state_of_one_draft_is_refused_by_the_other(prio: Any, name: str) -> None:
    params, m = TYPES[name]
    vdafs = {18: getattr(prio, name)(ctx=CTX, **params), 8: getattr(prio, name)(draft=8, **params)}
    states, outs = {}, {}
    for draft, vdaf in vdafs.items():
        nonce, public, inputs = vdaf.shard(m)
        states[draft] = [vdaf.verify_init(KEY[:vdaf.verify_key_size], i, nonce, public, share)[0]
                         for i, share in enumerate(inputs)]
        outs[draft] = _report(vdaf, m)[1]
    _refused_across(vdafs[18], vdafs[8], states[8], outs[8], "draft 08")
    _refused_across(vdafs[8], vdafs[18], states[18], outs[18], f"{name}(")
    for agg_id in range(2):  # a draft 08 state's bytes: its draft (8), then the crate's encoding
        mark = states[8][agg_id].to_bytes()
        assert mark[0] == 8 and len(mark) % 8 == 1 and len(states[18][agg_id].to_bytes()) % 8 == 0
        assert vdafs[8].verify_state_from_bytes(agg_id, mark).to_bytes() == mark
        # the crate's encoding without its mark (unless its own first byte happens to be 8: 1 in 256 random states),
        # and with another draft's mark
        for unmarked in ([mark[1:]] if mark[1] != 8 else []) + [bytes([18]) + mark[1:]]:
            _refused(lambda unmarked=unmarked, agg_id=agg_id: vdafs[8].verify_state_from_bytes(agg_id, unmarked),
                     "decode", "start with 8")


def _refused_across(vdaf: Any, theirs: Any, states: list[Any], outs: list[Any], described: str) -> None:
    """``vdaf`` refuses the states and output shares of ``theirs`` (the other draft, ``described`` so in the
    messages), the aggregate shares made of them, and the bytes of their states."""
    _refused(lambda: vdaf.verify_next(states[0], b""), "verify_next", "a verify state of", described,
             "not of this VDAF")
    _refused(lambda: vdaf.leader_finish_batch([states[0]], [b""]), "leader_finish_batch", "states[0]", described)
    assert not states[0].used  # refused before use
    _refused(lambda: vdaf.aggregate([outs[0]]), "aggregate", "an output share of", described)
    share, their_share = vdaf.aggregate_init(), theirs.aggregate([outs[0]])
    _refused(lambda: share.accumulate(outs[0]), "aggregate", described)
    _refused(lambda: share.merge(their_share), "aggregate", described)
    _refused(lambda: vdaf.unshard([share, their_share], 1), "unshard", described)
    for agg_id, data in enumerate(state.to_bytes() for state in states):  # nor the bytes of the other's states
        _refused(lambda agg_id=agg_id, data=data: vdaf.verify_state_from_bytes(agg_id, data), "decode",
                 f"not a verify state of aggregator {agg_id}")


def test_a_verify_key_of_the_other_draft_is_refused(prio: Any, keys: tuple[Any, Any]) -> None:
    eight, eighteen = prio.Prio3Histogram(length=4, draft=8), prio.Prio3Histogram(length=4, ctx=CTX)
    nonce, public, inputs = eight.shard(1)
    _refused(lambda: eight.verify_init(KEY, 0, nonce, public, inputs[0]), "verify_init",
             "Prio3Histogram(length=4, chunk_length=2, num_aggregators=2, draft 08).verify_init",
             "the verify key must be 16 bytes, got 32")
    nonce, public, inputs = eighteen.shard(1)
    _refused(lambda: eighteen.verify_init(KEY[:16], 0, nonce, public, inputs[0]), "verify_init",
             "the verify key must be 32 bytes, got 16")
    for call, op in ((eight.helper_prepare_batch, "helper_prepare_batch"), (eight.leader_init_batch,
                                                                           "leader_init_batch")):
        _refused(lambda call=call: call(keys[1], KEY, bytes(32), []), op, "draft 08", "must be 16 bytes, got 32")


def test_draft_08_shards_with_a_nonce_but_not_given_randomness(prio: Any, keys: tuple[Any, Any]) -> None:
    vdaf = prio.Prio3SumVec(length=2, bits=3, draft=8)
    nonce = bytes(range(16))
    assert vdaf.shard([1, 7], nonce=nonce)[0] == nonce
    _refused(lambda: vdaf.shard([1, 7], nonce=nonce, rand=bytes(64)), "shard", "Prio3SumVec(length=2, bits=3",
             "draft 08).shard", "rand= cannot be given", "0.16.8", "no public sharding with given randomness")
    _refused(lambda: prio.seal_report(vdaf, [1, 7], task_id=bytes(32), time=0, leader=keys[0].config,
                                      helper=keys[1].config, rand=bytes(64)), "shard", "no public sharding")
    report = prio.DapReport.from_bytes(prio.seal_report(vdaf, [1, 7], task_id=bytes(32), time=0,
                                                        leader=keys[0].config, helper=keys[1].config,
                                                        report_id=nonce))
    assert report.report_id == nonce and len(report.public_share) == vdaf.public_share_len == 32


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "error"})


def test_without_the_binding_the_names_say_how_to_build_it() -> None:
    """Runs whether or not the binding is built: its import is made to fail in a fresh interpreter."""
    done = _python(
        "import sys; sys.modules['ldp.prio._native'] = None\n"
        "import ldp.prio\n"
        "assert not ldp.prio.available()\n"
        "from ldp.errors import MissingExtraError\n"
        "for get in (lambda: ldp.prio.Prio3Count, ldp.prio.require):\n"
        "    try:\n"
        "        get()\n"
        "    except MissingExtraError as exc:\n"
        "        print(exc)\n"
        "    else:\n"
        "        raise SystemExit('no error')\n"
        "try:\n"
        "    ldp.prio.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert not isinstance(exc, MissingExtraError)\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    assert "bindings/prio" in lines[0] and "cargo" in lines[0] and "pip install" in lines[0]
    assert issubclass(MissingExtraError, ImportError)


def test_client_code_never_imports_the_binding() -> None:
    done = _python("import sys, ldp.client, ldp.encoders, ldp.spec, ldp.privacy\n"
                   "print(sorted(m for m in sys.modules if m.startswith('ldp.prio')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_require_prio_turns_a_skip_into_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="not built"):
        missing("the binding is not built")
    monkeypatch.setenv(REQUIRE, "1")  # CI: .ci/run sets it
    with pytest.raises(pytest.fail.Exception, match="LDP_REQUIRE_PRIO=1 but the binding is not built"):
        missing("the binding is not built")


def test_the_module_example_runs(prio: Any) -> None:
    """``ldp.prio``'s docstring shows one report from the client's shares to the result: it runs as shown."""
    doc = prio.__doc__ or ""
    block = doc.split("the verify key being a 32-byte secret the aggregators share::\n\n", 1)[1].split("\n\n", 1)[0]
    lines = [line[4:] for line in block.splitlines()]
    assert lines[0].startswith("vdaf = Prio3Histogram(") and lines[-1].startswith("vdaf.unshard(")
    lines[-1] = "result = " + lines[-1]
    namespace: dict[str, Any] = {"Prio3Histogram": prio.Prio3Histogram, "verify_key": os.urandom(32)}
    exec("\n".join(lines), namespace)
    assert namespace["result"] == [0, 0, 0, 1, 0]
