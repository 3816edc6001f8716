"""The Poplar1 binding (:mod:`ldp.prio.poplar1`) beyond the vectors: the bit strings and aggregation parameters it
takes (and refuses, by name), malformed shares refused at the right step, the states and shares kept to their
aggregation parameter, noise on aggregate shares read back signed, the crate's rule for successive parameters, a
DAP-09 report of a Poplar1 measurement opened by each aggregator, and a small tree walk that recovers every string
exactly (no noise). Each check fails when its refusal or value is lost (e.g. a prefix order no longer checked, a
level past the last one accepted, a tampered key that verifies, noise added to the wrong count)."""

from __future__ import annotations

from typing import Any

import pytest
from prio_support import refused

VERIFY_KEY = bytes(range(32))
CTX = b"test poplar1"


@pytest.fixture(scope="module")
def p1(prio: Any) -> Any:
    from ldp.prio import poplar1

    return poplar1


def _report(p1: Any, vdaf: Any, value: Any, seed: int = 0) -> tuple[bytes, bytes, list[bytes]]:
    nonce = bytes([seed]) * 16
    shares: tuple[bytes, bytes, list[bytes]] = vdaf.shard(p1.bits_of(value, vdaf.bits), nonce=nonce,
                                                          rand=bytes([seed + 1]) * vdaf.rand_size)
    return shares


def test_bits_of_reads_bytes_text_ints_and_bools(p1: Any) -> None:
    assert p1.bits_of(b"\xc8\x20", 11) == (True, True, False, False, True) + (False,) * 5 + (True,)
    assert p1.bits_of("a", 12) == p1.bits_of(b"a", 12) == p1.bits_of(0x610, 12)
    assert p1.bits_to_bytes(p1.bits_of(b"new-word", 64)) == b"new-word"
    assert p1.bits_to_bytes(p1.bits_of(b"ab", 20)) == b"ab\x00"
    assert p1.prefix_of(0b10, 1) == (True, False)
    refused(lambda: p1.bits_of(b"abc", 20), "shard", "do not fit")
    refused(lambda: p1.bits_of(b"\x00\x01", 15), "shard", "do not fit")  # a spare bit set
    refused(lambda: p1.bits_of(16, 4), "shard", "[0, 2**4)")
    refused(lambda: p1.bits_of([True, False], 3), "shard", "has 3 bits, got 2")
    refused(lambda: p1.bits_of(b"", p1.MAX_BITS + 1), "shard", "bits must be")
    refused(lambda: p1.prefix_of(4, 1), "parameters", "[0, 2**2)")
    with pytest.raises(TypeError):
        p1.bits_of([True, 2], 2)
    with pytest.raises(TypeError):
        p1.bits_of(True, 1)


def test_parameters_are_refused_by_name(p1: Any) -> None:
    assert p1.Poplar1.max_bits == p1.MAX_BITS
    for bits in (0, p1.MAX_BITS + 1):
        refused(lambda b=bits: p1.Poplar1(b, ctx=CTX), "parameters", "bits")
    with pytest.raises(TypeError):
        p1.Poplar1(8)  # ctx is required
    vdaf = p1.Poplar1(8, ctx=CTX)
    assert (vdaf.bits, vdaf.ctx, vdaf.verify_key_size, vdaf.rand_size) == (8, CTX, 32, 128)
    refused(lambda: vdaf.shard([True] * 7), "shard", "8 bits")
    refused(lambda: vdaf.shard([True] * 8, nonce=bytes(16), rand=bytes(127)), "shard", "128 bytes")
    refused(lambda: vdaf.shard([True] * 8, nonce=bytes(15)), "shard", "16 bytes")
    with pytest.raises(TypeError):
        vdaf.shard(b"\x01")  # the binding takes bools; bits_of reads bytes


def test_aggregation_parameters_are_checked(p1: Any) -> None:
    param = p1.agg_param(2, [0b001, 0b100, 0b111])
    assert (param.level, len(param), param.prefixes[1]) == (2, 3, (True, False, False))
    again = p1.Poplar1AggregationParam.from_bytes(param.to_bytes())
    assert again == param and hash(again) == hash(param) and param.to_bytes().hex() == "0002000000032080e0"
    refused(lambda: p1.agg_param(2, [0b100, 0b001]), "parameters", "prefix 1 sorts before prefix 0")
    refused(lambda: p1.agg_param(2, [0b100, 0b100]), "parameters", "prefix 1 repeats prefix 0")
    refused(lambda: p1.agg_param(1, [(True,)]), "parameters", "prefix 0 has 1 bits; a prefix at level 1 has 2")
    refused(lambda: p1.agg_param(0, []), "parameters", "at least one")
    refused(lambda: p1.agg_param(-1, [0]), "parameters", "at least 0")
    refused(lambda: p1.Poplar1AggregationParam(70000, [[True]]), "parameters", "level must be in")
    refused(lambda: p1.Poplar1AggregationParam.from_bytes(b"\x00\x00\x00\x00\x00\x02\x80\x00"), "decode")
    refused(lambda: p1.Poplar1AggregationParam.from_bytes(param.to_bytes() + b"\x00"), "decode")


def test_malformed_shares_are_refused_at_their_step(p1: Any) -> None:
    vdaf = p1.Poplar1(8, ctx=CTX)
    nonce, public, (leader, helper) = _report(p1, vdaf, b"x")
    param = p1.agg_param(0, [0, 1])
    vdaf.check_public_share(public)
    vdaf.check_input_share(1, helper)
    refused(lambda: vdaf.check_public_share(public[:-1]), "decode", "public share")
    refused(lambda: vdaf.check_input_share(0, leader + b"\x00"), "decode", "input share")
    refused(lambda: vdaf.check_input_share(2, leader), "decode", "agg_id")
    refused(lambda: vdaf.verify_init(VERIFY_KEY, 0, param, nonce, public, leader[:-1]), "verify_init", "input share")
    refused(lambda: vdaf.verify_init(VERIFY_KEY[:16], 0, param, nonce, public, leader), "verify_init", "32 bytes")
    refused(lambda: vdaf.verify_init(VERIFY_KEY, 0, p1.agg_param(8, [0]), nonce, public, leader), "verify_init",
            "past the last level (7)")
    # A device's tampered IDPF key (the helper's first byte flipped) is caught by the sketch, not aggregated.
    bad = bytes([helper[0] ^ 1]) + helper[1:]
    with pytest.raises(p1.PrioError) as info:
        p1.verify_report(vdaf, VERIFY_KEY, param, nonce, public, [leader, bad])
    assert info.value.operation == "verifier_shares_to_message", str(info.value)


def test_states_and_shares_keep_to_their_parameter(p1: Any) -> None:
    vdaf = p1.Poplar1(8, ctx=CTX)
    nonce, public, inputs = _report(p1, vdaf, b"x")
    p0, q0 = p1.agg_param(0, [0, 1]), p1.agg_param(1, [0b01, 0b11])
    state, share = vdaf.verify_init(VERIFY_KEY, 0, p0, nonce, public, inputs[0])
    _, other = vdaf.verify_init(VERIFY_KEY, 1, p0, nonce, public, inputs[1])
    message = vdaf.verifier_shares_to_message(state, [share, other])
    refused(lambda: p1.verify_finish(vdaf, state, message), "verify_next", "round 0")
    p1.verify_continue(vdaf, state, message)
    assert state.used
    refused(lambda: vdaf.verify_next(state, message), "verify_next", "already used")
    refused(lambda: state.to_bytes(), "encode", "already used")
    leader_out, _ = p1.verify_report(vdaf, VERIFY_KEY, p0, nonce, public, inputs)
    agg = vdaf.aggregate_init(q0)
    refused(lambda: agg.accumulate(leader_out), "aggregate", "another aggregation parameter")
    refused(lambda: vdaf.aggregate(q0, [leader_out]), "aggregate", "another aggregation parameter")
    refused(lambda: vdaf.aggregate_share_from_bytes(q0, leader_out.to_bytes()[:-1]), "decode")


def test_noise_is_added_modulo_the_prime_and_read_signed(p1: Any) -> None:
    vdaf = p1.Poplar1(4, ctx=CTX)
    for level, values in ((0, [0, 1]), (3, [0b1010, 0b1011])):  # Field64, then Field255 at the leaves
        param = p1.agg_param(level, values)
        nonce, public, inputs = _report(p1, vdaf, 0b1011)
        outs = p1.verify_report(vdaf, VERIFY_KEY, param, nonce, public, inputs)
        aggs = [vdaf.aggregate(param, [out]) for out in outs]
        assert vdaf.unshard(param, aggs, 1) == [0, 1]
        aggs[0].add_integers([-3, 2**70])
        aggs[1].add_integers([1, -(2**70) + 5])
        assert p1.signed_counts(aggs) == [-2, 6]
        assert aggs[0].modulus in (2**64 - 2**32 + 1, 2**255 - 19)
        assert all(0 <= x < aggs[0].modulus for x in aggs[0].field_elements())
        refused(lambda a=aggs[0]: a.add_integers([1]), "aggregate", "one int per prefix (2), got 1")


def test_successive_parameters_follow_the_crates_rule(p1: Any) -> None:
    p0, p1_, p2 = p1.agg_param(0, [1]), p1.agg_param(1, [0b10, 0b11]), p1.agg_param(2, [0b011])
    valid = p1.Poplar1.is_agg_param_valid
    assert valid(p0, []) and valid(p1_, [p0])
    assert not valid(p0, [p0]), "the same level twice"
    assert not valid(p0, [p1_]), "a level out of order"
    assert not valid(p2, [p0, p1_]), "a prefix extending none of the last level's"


def test_a_dap_report_opens_and_verifies(prio: Any, p1: Any, keys: tuple[Any, Any]) -> None:
    vdaf = p1.Poplar1(16, ctx=CTX)
    task_id = bytes(range(32))
    body = prio.seal_report(vdaf, p1.bits_of(b"hi", 16), task_id=task_id, time=1_700_000_123, time_precision=60,
                            leader=keys[0].config, helper=keys[1].config)
    report = prio.DapReport.from_bytes(body)
    inputs = [prio.open_input_share(key, role=role, task_id=task_id, report_id=report.report_id, time=report.time,
                                    public_share=report.public_share, ciphertext=ct)
              for key, role, ct in zip(keys, ("leader", "helper"),
                                       (report.leader_ciphertext, report.helper_ciphertext), strict=True)]
    param = p1.agg_param(15, [p1.bits_of(b"hh", 16), p1.bits_of(b"hi", 16)])
    outs = p1.verify_report(vdaf, VERIFY_KEY, param, report.report_id, report.public_share, inputs)
    aggs = [vdaf.aggregate(param, [out]) for out in outs]
    assert vdaf.unshard(param, aggs, 1) == [0, 1]


def test_a_tree_walk_recovers_every_string_exactly(p1: Any) -> None:
    """20 reports of 6 strings (8 bits, seeded counts), walked level by level with threshold 2 and no noise: every
    string held by at least 2 reports, with its exact count, and nothing else."""
    vdaf = p1.Poplar1(8, ctx=CTX)
    counts = {b"a": 7, b"b": 5, b"z": 3, b"\x00": 2, b"q": 1, b"\xff": 2}
    reports = [_report(p1, vdaf, s, seed=i) for i, s in enumerate(s for s, n in counts.items() for _ in range(n))]
    prefixes: list[tuple[bool, ...]] = [()]
    previous: list[Any] = []
    for level in range(8):
        param = p1.Poplar1AggregationParam(level, sorted(p + (b,) for p in prefixes for b in (False, True)))
        assert p1.Poplar1.is_agg_param_valid(param, previous)
        aggs = [vdaf.aggregate_init(param), vdaf.aggregate_init(param)]
        for nonce, public, inputs in reports:
            for agg, out in zip(aggs, p1.verify_report(vdaf, VERIFY_KEY, param, nonce, public, inputs), strict=True):
                agg.accumulate(out)
        found = dict(zip(param.prefixes, vdaf.unshard(param, aggs, len(reports)), strict=True))
        prefixes = [p for p, n in found.items() if n >= 2]
        previous.append(param)
    assert {p1.bits_to_bytes(p): found[p] for p in prefixes} == {s: n for s, n in counts.items() if n >= 2}
