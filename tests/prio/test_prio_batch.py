"""The aggregators' batch calls of :mod:`ldp.prio` (``helper_prepare_batch``, ``leader_init_batch``,
``leader_finish_batch``: one call per aggregation job, the GIL released) against the per-call path they replace
(:func:`prepare_reference.prepare_init`, :func:`prepare_reference.joint_rand_part_matches`,
``verifier_shares_to_message``, ``verify_next``, ``AggregateShare.accumulate``), for the four Prio3 types in both VDAF
drafts (18 and 08).

Differential: valid reports (``ldp.prio.seal_report``) and invalid ones (another VDAF's shares sealed by hand as a
malicious device would, a forged joint randomness part for either aggregator, garbage in the public share, a tampered,
truncated or empty ciphertext, a wrong config id, a leader verifier share or a message of another report) give the
same verifier messages, refusal codes, verifier shares, states, outcomes and aggregate shares both ways, on lists
drawn by hypothesis (shapes, order, repeats, the leader's share opened at the door or not) and on empty lists. The
collected sums are the valid measurements'. Malformed arguments are refused whole (``TypeError`` or ``PrioError``
naming the item's index) before any state is used; and the GIL is released while a batch runs."""

from __future__ import annotations

import random
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from prepare_reference import Prepared, joint_rand_part_matches, prepare_init
from prio_support import DRAFTS, SEED_SIZES, make, refused

TASK = bytes(range(32))
VERIFY_KEY = bytes(range(100, 132))
TIME = 1_800_000_000
CODES = {"hpke_unknown_config_id", "hpke_decrypt_error", "vdaf_invalid"}


# -- reports, valid and not ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Report:
    """One report as the aggregators see it, with the leader's share as opened at the door (``None``: it does not
    open) and the measurement it counts for (``None``: it must not count)."""

    kind: str
    report_id: bytes
    time: int
    public_share: bytes
    leader_ciphertext: bytes
    helper_ciphertext: bytes
    leader_share: bytes | None
    measurement: Any


def _opaque(n: int, data: bytes) -> bytes:
    return len(data).to_bytes(n, "big") + data


def _handmade(prio: Any, keys: tuple[Any, Any], report_id: bytes, public: bytes, leader: bytes,
              helper: bytes) -> tuple[bytes, bytes]:
    """Both input shares sealed as DAP-09 says (tests/aggregators/two_aggregators.py's ``handmade_report``, written
    from the draft): the ciphertexts."""
    aad = TASK + report_id + struct.pack(">Q", TIME) + _opaque(4, public)
    sealed = []
    for role, key, share in ((2, keys[0], leader), (3, keys[1], helper)):
        info = b"dap-09 input share" + bytes([1, role])
        sealed.append(prio.hpke_seal(key.config, info, aad, _opaque(2, b"") + _opaque(4, share)))
    return sealed[0], sealed[1]


def _open_leader(prio: Any, key: Any, report_id: bytes, public: bytes, ciphertext: bytes) -> bytes | None:
    from ldp.errors import PrioError

    try:
        share: bytes = prio.open_input_share(key, role="leader", task_id=TASK, report_id=report_id, time=TIME,
                                             public_share=public, ciphertext=ciphertext)
    except PrioError:
        return None
    return share


def _tamper(ciphertext: bytes) -> bytes:
    return ciphertext[:-1] + bytes([ciphertext[-1] ^ 1])


TYPES: dict[str, tuple[dict[str, Any], Callable[[random.Random], Any]]] = {  # draft 08: bits of the maximum's length
    "Prio3Count": ({}, lambda r: r.randrange(2)),
    "Prio3Sum": ({"max_measurement": 1000}, lambda r: r.randrange(1001)),
    "Prio3SumVec": ({"length": 3, "max_measurement": 300}, lambda r: [r.randrange(301) for _ in range(3)]),
    "Prio3Histogram": ({"length": 5}, lambda r: r.randrange(5)),
}
JOINT_RAND = {18: {"Prio3SumVec", "Prio3Histogram"}, 8: {"Prio3Sum", "Prio3SumVec", "Prio3Histogram"}}
"""The types with joint randomness in each draft (draft 08's Prio3Sum has it)."""


def _vdaf(prio: Any, name: str, draft: int, **params: Any) -> Any:
    return make(prio, name, draft, ctx=TASK, **params)


def _key(vdaf: Any) -> bytes:
    """The aggregators' verify key, of the VDAF's draft's size."""
    return VERIFY_KEY[:vdaf.verify_key_size]


def _forgery(prio: Any, name: str, draft: int) -> tuple[Any, Any] | None:
    """Another VDAF (with the task's context and draft) and a measurement that the task's type must refuse; ``None``
    for Sum and SumVec, whose every bit vector of the right length is a valid measurement of some value (their forgery
    is a leader share changed after sharding, which the proof does not match)."""
    if name == "Prio3Count":
        return _vdaf(prio, "Prio3Sum", draft, max_measurement=7), 5
    if name in ("Prio3Sum", "Prio3SumVec"):
        return None
    return _vdaf(prio, "Prio3SumVec", draft, length=5, max_measurement=1), [1, 1, 0, 0, 0]


KINDS = ("valid", "forged", "forged_other_length", "jr_helper", "jr_leader", "garbage_public", "tampered",
         "truncated", "empty_ciphertext", "wrong_config")


def make_report(prio: Any, keys: tuple[Any, Any], vdaf: Any, name: str, kind: str, rng: random.Random) -> Report:
    """A report of ``kind`` for the task's ``vdaf`` (of type ``name``, and of its draft)."""
    seed = SEED_SIZES[vdaf.draft]
    measurement = TYPES[name][1](rng)
    if kind == "valid":
        body = prio.seal_report(vdaf, measurement, task_id=TASK, time=TIME, leader=keys[0].config,
                                helper=keys[1].config)
        r = prio.DapReport.from_bytes(body)
        rid, public, lc, hc = r.report_id, r.public_share, r.leader_ciphertext, r.helper_ciphertext
        return Report(kind, rid, TIME, public, lc, hc, _open_leader(prio, keys[0], rid, public, lc), measurement)
    rid = rng.randbytes(16)
    forgery = _forgery(prio, name, vdaf.draft) if kind == "forged" else None
    if kind == "forged_other_length":  # shares that do not even decode as the task's
        forgery = _vdaf(prio, "Prio3Histogram", vdaf.draft, length=9), 8
    if forgery is not None:
        _, public, (leader, helper) = forgery[0].shard(forgery[1], nonce=rid)
    elif kind == "forged":
        _, public, (leader, helper) = vdaf.shard(measurement, nonce=rid)
        leader = bytes([leader[0] ^ 1]) + leader[1:]
    else:
        _, public, (leader, helper) = vdaf.shard(measurement, nonce=rid)
        if kind == "jr_helper" and public:
            public = public[:seed] + bytes(seed)
        elif kind == "jr_leader" and public:
            public = bytes(seed) + public[seed:]
        elif kind == "garbage_public" or (kind.startswith("jr_") and not public):
            public = rng.randbytes(64)
    lc, hc = _handmade(prio, keys, rid, public, leader, helper)
    counted = None
    if kind == "tampered":
        lc, hc = _tamper(lc), _tamper(hc)
    elif kind == "truncated":
        lc, hc = lc[:5], hc[:5]
    elif kind == "empty_ciphertext":
        lc = hc = b""
    elif kind == "wrong_config":
        lc, hc = bytes([lc[0] ^ 0x80]) + lc[1:], bytes([hc[0] ^ 0x80]) + hc[1:]
    return Report(kind, rid, TIME, public, lc, hc, _open_leader(prio, keys[0], rid, public, lc), counted)


Pools = dict[tuple[int, str], tuple[Any, dict[str, list[Report]]]]


@pytest.fixture(scope="module")
def pools(prio: Any, keys: tuple[Any, Any]) -> Pools:
    """Per draft and type, its VDAF and three reports of every kind."""
    rng = random.Random(71)
    out = {}
    for draft in DRAFTS:
        for name, (params, _) in TYPES.items():
            vdaf = _vdaf(prio, name, draft, **params)
            out[draft, name] = (vdaf, {kind: [make_report(prio, keys, vdaf, name, kind, rng) for _ in range(3)]
                                       for kind in KINDS})
    return out


# -- the per-call path (what leader.py and helper.py did per report before the batch calls) -------------------------

def per_call_leader_init(prio: Any, vdaf: Any, key: Any, reports: list[Report], door: list[bool]) -> list[Any]:
    out: list[Any] = []
    for r, opened in zip(reports, door, strict=True):
        prep = prepare_init(vdaf, key, _key(vdaf), "leader", TASK, r.report_id, r.time, r.public_share,
                            r.leader_ciphertext, input_share=r.leader_share if opened else None)
        out.append((prep.state, prep.verifier_share) if isinstance(prep, Prepared) else prep.code)
    return out


def per_call_helper(prio: Any, vdaf: Any, key: Any, reports: list[Report], leader_shares: list[bytes]
                    ) -> tuple[list[bytes | str], Any]:
    from ldp.aggregators.messages import ReportError
    from ldp.errors import PrioError

    results: list[bytes | str] = []
    agg = vdaf.aggregate_init()
    for r, leader_vs in zip(reports, leader_shares, strict=True):
        prep = prepare_init(vdaf, key, _key(vdaf), "helper", TASK, r.report_id, r.time, r.public_share,
                            r.helper_ciphertext)
        if not isinstance(prep, Prepared):
            results.append(prep.code)
            continue
        if not joint_rand_part_matches(r.public_share, prep.verifier_share, 1, SEED_SIZES[vdaf.draft]):
            results.append(ReportError.vdaf_invalid.code)
            continue
        try:
            message = vdaf.verifier_shares_to_message([leader_vs, prep.verifier_share])
            out = vdaf.verify_next(prep.state, message)
        except PrioError:
            results.append(ReportError.vdaf_invalid.code)
            continue
        agg.accumulate(out)
        results.append(message)
    return results, agg


def per_call_leader_finish(vdaf: Any, states: list[Any], messages: list[bytes]) -> tuple[list[bool], Any]:
    from ldp.errors import PrioError

    finished: list[bool] = []
    agg = vdaf.aggregate_init()
    for state, message in zip(states, messages, strict=True):
        try:
            agg.accumulate(vdaf.verify_next(state, message))
        except PrioError:
            finished.append(False)
        else:
            finished.append(True)
    return finished, agg


# -- both paths on one list -------------------------------------------------------------------------------------

def _leader_vs_for(i: int, r: Report, inits: list[Any], wrong: bool) -> bytes:
    """The leader's verifier share the helper is sent for report ``i``: the leader's own, or (``wrong``, or a report
    the leader refused) another report's or garbage."""
    mine = inits[i]
    if not isinstance(mine, str) and not wrong:
        return bytes(mine[1])
    others = [x[1] for x in inits if not isinstance(x, str)]
    return bytes(others[(i + 1) % len(others)]) if others and wrong else b"\x00" * 8


def both_paths(prio: Any, keys: tuple[Any, Any], vdaf: Any, reports: list[Report], door: list[bool],
               wrong_leader_vs: list[bool], wrong_message: list[bool]) -> None:
    """Run the job both ways and compare every result; the collected sums are the valid measurements'."""
    leader_key, helper_key = keys
    batch_items = [(r.report_id, r.time, r.public_share, r.leader_ciphertext, r.leader_share if d else None)
                   for r, d in zip(reports, door, strict=True)]
    batch_inits = vdaf.leader_init_batch(leader_key, _key(vdaf), TASK, batch_items)
    call_inits = per_call_leader_init(prio, vdaf, leader_key, reports, door)
    assert len(batch_inits) == len(call_inits) == len(reports)
    for b, c, r in zip(batch_inits, call_inits, reports, strict=True):
        if isinstance(c, str):
            assert b == c, r.kind
            continue
        assert isinstance(b, tuple) and not isinstance(b[0], str), (r.kind, b)
        assert (b[0].to_bytes(), b[1]) == (c[0].to_bytes(), c[1]), r.kind
        assert type(b[1]) is bytes and b[0].agg_id == 0 and not b[0].used
    for b, r in zip(batch_inits, reports, strict=True):
        if r.kind in ("tampered", "truncated", "wrong_config", "empty_ciphertext") and r.leader_share is None:
            assert isinstance(b, str), r.kind

    leader_vs = [_leader_vs_for(i, r, batch_inits, w) for i, (r, w) in enumerate(zip(reports, wrong_leader_vs,
                                                                                      strict=True))]
    helper_items = [(r.report_id, r.time, r.public_share, r.helper_ciphertext, vs)
                    for r, vs in zip(reports, leader_vs, strict=True)]
    batch_msgs, batch_agg = vdaf.helper_prepare_batch(helper_key, _key(vdaf), TASK, helper_items)
    call_msgs, call_agg = per_call_helper(prio, vdaf, helper_key, reports, leader_vs)
    assert batch_msgs == call_msgs
    assert all(type(m) is bytes or m in CODES for m in batch_msgs)
    assert batch_agg.to_bytes() == call_agg.to_bytes() and batch_agg.field_elements() == call_agg.field_elements()
    expected_codes = {"tampered": "hpke_decrypt_error", "truncated": "hpke_decrypt_error",
                      "wrong_config": "hpke_unknown_config_id", "empty_ciphertext": "hpke_unknown_config_id"}
    for m, r in zip(batch_msgs, reports, strict=True):
        if r.kind in expected_codes:
            assert m == expected_codes[r.kind], r.kind
        elif r.measurement is None:
            assert m == "vdaf_invalid", r.kind

    # the leader finishes the reports the helper answered with a message (and, with wrong_message, gets another
    # report's message or garbage): with the batch's states and, independently, the per-call path's
    picked = [i for i, m in enumerate(batch_msgs) if isinstance(m, bytes) and not isinstance(batch_inits[i], str)]
    messages = []
    for i in picked:
        m = batch_msgs[i]
        assert isinstance(m, bytes)
        if wrong_message[i]:
            m = _tamper(m) if m else b"\x01"
        messages.append(m)
    batch_fin, batch_leader_agg = vdaf.leader_finish_batch([batch_inits[i][0] for i in picked], messages)
    call_fin, call_leader_agg = per_call_leader_finish(vdaf, [call_inits[i][0] for i in picked], messages)
    assert batch_fin == call_fin and all(type(x) is bool for x in batch_fin)
    assert batch_leader_agg.to_bytes() == call_leader_agg.to_bytes()
    assert all(batch_inits[i][0].used for i in picked)

    # with the right shares and messages, the two aggregate shares add up to the valid measurements
    if not any(wrong_leader_vs) and not any(wrong_message):
        counted = [reports[i] for i, ok in zip(picked, batch_fin, strict=True) if ok]
        assert all(r.measurement is not None for r in counted)
        assert len(counted) == sum(1 for r in reports if r.measurement is not None) == len(picked)
        result = vdaf.unshard([batch_leader_agg, batch_agg], max(len(counted), 1))
        total = _total(vdaf, [r.measurement for r in counted])
        assert result == total


def _total(vdaf: Any, measurements: list[Any]) -> Any:
    name = type(vdaf).__name__
    if name in ("Prio3Count", "Prio3Sum"):
        return sum(int(m) for m in measurements)
    if name == "Prio3SumVec":
        return [sum(col) for col in zip(*measurements, strict=True)] if measurements else [0] * vdaf.length
    return [sum(1 for m in measurements if m == b) for b in range(vdaf.length)]


# -- the tests ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize("name", list(TYPES))
def test_every_kind_of_report_the_same_both_ways(prio: Any, keys: tuple[Any, Any], pools: Pools, name: str,
                                                 draft: int) -> None:
    vdaf, pool = pools[draft, name]
    reports = [r for kind in KINDS for r in pool[kind]]
    n = len(reports)
    both_paths(prio, keys, vdaf, reports, [True] * n, [False] * n, [False] * n)
    both_paths(prio, keys, vdaf, reports, [False] * n, [False] * n, [False] * n)
    both_paths(prio, keys, vdaf, reports, [i % 2 == 0 for i in range(n)], [i % 3 == 0 for i in range(n)],
               [i % 2 == 1 for i in range(n)])


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize("name", list(TYPES))
def test_each_kind_is_refused_where_it_should_be(prio: Any, keys: tuple[Any, Any], pools: Pools, name: str,
                                                 draft: int) -> None:
    """The refusals of the pools' kinds, by the helper's batch (both aggregators' shares given as they come)."""
    vdaf, pool = pools[draft, name]
    for kind in KINDS:
        reports = pool[kind]
        inits = vdaf.leader_init_batch(keys[0], _key(vdaf), TASK, [(r.report_id, r.time, r.public_share,
                                                                    r.leader_ciphertext, None) for r in reports])
        vs = [b"" if isinstance(i, str) else i[1] for i in inits]
        msgs, _ = vdaf.helper_prepare_batch(keys[1], _key(vdaf), TASK, [
            (r.report_id, r.time, r.public_share, r.helper_ciphertext, v) for r, v in zip(reports, vs, strict=True)])
        if kind == "valid":
            assert all(isinstance(m, bytes) for m in msgs)
        elif kind in ("tampered", "truncated"):
            assert msgs == ["hpke_decrypt_error"] * 3
        elif kind in ("wrong_config", "empty_ciphertext"):
            assert msgs == ["hpke_unknown_config_id"] * 3
        else:
            assert msgs == ["vdaf_invalid"] * 3, kind
        if kind == "jr_helper" and name in JOINT_RAND[draft]:
            # the leader's verify_init takes it (only the helper's own check sees the forged part)
            assert not any(isinstance(i, str) for i in inits)


Job = tuple[int, str, list[tuple[str, int]], list[bool], list[bool], list[bool]]


@st.composite
def jobs(draw: Any) -> Job:
    draft, name = draw(st.sampled_from(DRAFTS)), draw(st.sampled_from(list(TYPES)))
    picks = draw(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 2)), max_size=12))
    flags = st.lists(st.booleans(), min_size=len(picks), max_size=len(picks))
    return draft, name, picks, draw(flags), draw(flags), draw(flags)


@settings(max_examples=60, deadline=None)
@given(jobs())
def test_random_jobs_the_same_both_ways(prio: Any, keys: tuple[Any, Any], pools: Pools, job: Job) -> None:
    draft, name, picks, door, wrong_vs, wrong_message = job
    vdaf, pool = pools[draft, name]
    reports = [pool[kind][i] for kind, i in picks]
    both_paths(prio, keys, vdaf, reports, door, wrong_vs, wrong_message)


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize("name", list(TYPES))
def test_empty_lists(prio: Any, keys: tuple[Any, Any], pools: Pools, name: str, draft: int) -> None:
    vdaf, _ = pools[draft, name]
    msgs, agg = vdaf.helper_prepare_batch(keys[1], _key(vdaf), TASK, [])
    assert msgs == [] and agg.to_bytes() == vdaf.aggregate_init().to_bytes()
    assert agg.field_elements() == [0] * vdaf.output_len
    assert vdaf.leader_init_batch(keys[0], _key(vdaf), TASK, []) == []
    assert vdaf.leader_init_batch(keys[0], _key(vdaf), TASK, iter(())) == []
    finished, agg = vdaf.leader_finish_batch([], [])
    assert finished == [] and agg.field_elements() == [0] * vdaf.output_len


@pytest.mark.parametrize("draft", DRAFTS)
def test_a_state_used_is_refused_as_verify_next_refuses_it(prio: Any, keys: tuple[Any, Any], pools: Pools,
                                                           draft: int) -> None:
    vdaf, pool = pools[draft, "Prio3Histogram"]
    r = pool["valid"][0]
    ((state, vs),) = vdaf.leader_init_batch(keys[0], _key(vdaf), TASK, [(r.report_id, r.time, r.public_share,
                                                                        r.leader_ciphertext, r.leader_share)])
    (message,), helper_agg = vdaf.helper_prepare_batch(keys[1], _key(vdaf), TASK, [(r.report_id, r.time,
                                                                                     r.public_share,
                                                                                     r.helper_ciphertext, vs)])
    finished, agg = vdaf.leader_finish_batch([state, state], [message, message])  # the second use is refused
    assert finished == [True, False] and vdaf.unshard([agg, helper_agg], 1) == _total(vdaf, [r.measurement])
    finished, agg = vdaf.leader_finish_batch([state], [message])
    assert finished == [False] and agg.field_elements() == [0] * 5


def _items(pool: dict[str, list[Report]]) -> list[tuple[Any, ...]]:
    return [(r.report_id, r.time, r.public_share, r.helper_ciphertext, b"\x00" * 8) for r in pool["valid"]]


@pytest.mark.parametrize("draft", DRAFTS)
def test_malformed_arguments_are_refused_naming_the_item(prio: Any, keys: tuple[Any, Any], pools: Pools,
                                                         draft: int) -> None:
    vdaf, pool = pools[draft, "Prio3SumVec"]
    good = _items(pool)
    key, size = _key(vdaf), vdaf.verify_key_size
    helper = vdaf.helper_prepare_batch
    leader = vdaf.leader_init_batch
    for call, op in ((helper, "helper_prepare_batch"), (leader, "leader_init_batch")):
        refused(lambda call=call: call(keys[1], key[:-1], TASK, good), op, f"verify key must be {size} bytes")
        refused(lambda call=call: call(keys[1], bytes(48 - size), TASK, good), op,  # the other draft's
                f"verify key must be {size} bytes, got {48 - size}")
        refused(lambda call=call: call(keys[1], key, TASK + b"x", good), op, "task ID must be 32 bytes")
        refused(lambda call=call: call(keys[1], key, TASK, [*good, good[0][:4]]), op, "reports[3]",
                "5 items")
        bad_id = (b"short", *good[0][1:])
        refused(lambda call=call, bad_id=bad_id: call(keys[1], key, TASK, [*good, bad_id]), op, "reports[3]",
                "report ID must be 16 bytes, got 5", "SumVec")
        for t in (-1, 2 ** 64):
            bad_time = (good[0][0], t, *good[0][2:])
            refused(lambda call=call, bad_time=bad_time: call(keys[1], key, TASK, [bad_time]), op,
                    "reports[0]", "the time must be an int in")
        for k, value, words in ((1, "1", "the time must be an int"), (0, bytearray(16), "the report ID must be bytes"),
                                (2, None, "the public share must be bytes"), (3, "ct", "the ciphertext must be bytes"),
                                (4, 5, "must be bytes")):
            bad = list(good[1])
            bad[k] = value
            with pytest.raises(TypeError, match=words) as exc:
                call(keys[1], key, TASK, [good[0], tuple(bad)])
            assert "reports[1]" in str(exc.value)
        with pytest.raises(TypeError, match=r"reports\[0\] must be a tuple"):
            call(keys[1], key, TASK, [list(good[0])])
        with pytest.raises(TypeError):
            call(keys[1], key, TASK, 5)
        with pytest.raises(TypeError):
            call(keys[1].config, key, TASK, good)
    # the helper needs the leader's verifier share; the leader takes None for a share not opened at the door
    with pytest.raises(TypeError, match=r"reports\[0\]: the leader's verifier share must be bytes"):
        helper(keys[1], key, TASK, [(*good[0][:4], None)])
    r = pool["valid"][0]
    assert isinstance(leader(keys[0], key, TASK, [(r.report_id, r.time, r.public_share, r.leader_ciphertext,
                                                         None)])[0], tuple)
    three = _vdaf(prio, "Prio3SumVec", draft, length=3, max_measurement=300, num_aggregators=3)
    refused(lambda: three.helper_prepare_batch(keys[1], key, TASK, []), "helper_prepare_batch",
            "two aggregators", "has 3")
    refused(lambda: three.leader_init_batch(keys[0], key, TASK, []), "leader_init_batch", "two aggregators")


@pytest.mark.parametrize("draft", DRAFTS)
def test_leader_finish_refuses_bad_arguments_before_using_any_state(prio: Any, keys: tuple[Any, Any],
                                                                     pools: Pools, draft: int) -> None:
    vdaf, pool = pools[draft, "Prio3Histogram"]
    reports = pool["valid"]
    inits = vdaf.leader_init_batch(keys[0], _key(vdaf), TASK, [(r.report_id, r.time, r.public_share,
                                                                r.leader_ciphertext, None) for r in reports])
    states = [i[0] for i in inits]
    messages = [b"\x00" * 32] * 3
    other_states = []
    for other_vdaf, other_pool in (pools[draft, "Prio3SumVec"], pools[26 - draft, "Prio3Histogram"]):
        r = other_pool["valid"][0]
        ((other_state, _),) = other_vdaf.leader_init_batch(keys[0], _key(other_vdaf), TASK, [
            (r.report_id, r.time, r.public_share, r.leader_ciphertext, None)])
        other_states.append(other_state)
    refused(lambda: vdaf.leader_finish_batch([*states, other_states[0]], [*messages, b""]), "leader_finish_batch",
            "states[3]", "Prio3SumVec", "not of this VDAF")
    other_draft = "Prio3Histogram(length=5, chunk_length=2, num_aggregators=2" + (")" if draft == 8 else ", draft 08)")
    refused(lambda: vdaf.leader_finish_batch([other_states[1], *states], [b"", *messages]), "leader_finish_batch",
            "states[0]", f"a verify state of {other_draft}, not of this VDAF")
    refused(lambda: vdaf.leader_finish_batch(states, messages[:2]), "leader_finish_batch", "3 states, 2 messages")
    with pytest.raises(TypeError, match=r"states\[1\] must be a VerifyState"):
        vdaf.leader_finish_batch([states[0], b"x"], messages[:2])
    with pytest.raises(TypeError, match=r"messages\[2\] must be bytes"):
        vdaf.leader_finish_batch(states, [*messages[:2], "x"])
    assert not any(s.used for s in [*states, *other_states])
    finished, _ = vdaf.leader_finish_batch(states, messages)  # garbage messages: refused, the states used
    assert finished == [False] * 3 and all(s.used for s in states)


def test_the_gil_is_released_while_a_batch_runs(prio: Any, keys: tuple[Any, Any], pools: Pools) -> None:
    """Another Python thread runs while the helper's batch does (with the GIL held it could not, from the batch's
    start to its end). (Draft 18's: the loop is the same code for both drafts, batch.rs generic over the draft.)"""
    vdaf, pool = pools[18, "Prio3Histogram"]
    r = pool["valid"][0]
    ((_, vs),) = vdaf.leader_init_batch(keys[0], VERIFY_KEY, TASK, [(r.report_id, r.time, r.public_share,
                                                                     r.leader_ciphertext, r.leader_share)])
    items = [(r.report_id, r.time, r.public_share, r.helper_ciphertext, vs)] * 400
    best = 0
    for _ in range(3):
        started, done = threading.Event(), threading.Event()

        def work(started: threading.Event, done: threading.Event) -> None:
            started.set()
            vdaf.helper_prepare_batch(keys[1], VERIFY_KEY, TASK, items)
            done.set()

        worker = threading.Thread(target=work, args=(started, done))
        worker.start()
        started.wait()
        counted = 0
        deadline = time.monotonic() + 30
        while not done.is_set() and time.monotonic() < deadline:
            counted += 1
        worker.join()
        best = max(best, counted)
        if best > 1000:
            break
    assert best > 1000, f"the main thread ran {best} loops while the batch ran"


@pytest.fixture
def batch_threads(prio: Any) -> Any:
    """``prio.set_batch_threads``, put back to its default after the test."""
    yield prio.set_batch_threads
    prio.set_batch_threads(None)


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize(("draft", "name"), [(18, "Prio3Histogram"), (8, "Prio3SumVec"), (18, "Prio3Count")])
def test_a_job_spread_over_threads_is_the_per_call_paths_job(prio: Any, keys: tuple[Any, Any], pools: Pools,
                                                             batch_threads: Any, threads: int, draft: int,
                                                             name: str) -> None:
    """A job of 32 reports or more a thread is cut into parts, one per thread (issue 86, item 2): the messages,
    refusals, states, outcomes and both aggregate shares are still the per-call path's, report by report, with
    every kind of report spread over the parts (and the parts' boundaries between them)."""
    vdaf, pool = pools[draft, name]
    every = [r for kind in KINDS for r in pool[kind]]
    reports = [every[(i * 7) % len(every)] for i in range(170)]  # 170: five parts of 34, or uneven ones
    n = len(reports)
    batch_threads(threads)
    assert prio.batch_threads() == threads
    both_paths(prio, keys, vdaf, reports, [i % 3 != 0 for i in range(n)], [False] * n, [False] * n)
    both_paths(prio, keys, vdaf, reports, [True] * n, [i % 11 == 0 for i in range(n)], [i % 13 == 0 for i in range(n)])


def test_the_batch_threads_setting(prio: Any, batch_threads: Any) -> None:
    import os

    batch_threads(None)
    assert prio.batch_threads() == len(os.sched_getaffinity(0))  # the CPUs this process may run on
    batch_threads(3)
    assert prio.batch_threads() == 3
    with pytest.raises(ValueError, match="positive number of threads"):
        batch_threads(0)
    with pytest.raises((TypeError, OverflowError)):
        batch_threads(-1)
    assert prio.batch_threads() == 3
