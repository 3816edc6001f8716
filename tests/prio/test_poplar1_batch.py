"""Poplar1's batch calls (``leader_init_batch``, ``helper_init_batch``, ``leader_continue_batch``,
``leader_finish_batch``, ``helper_finish_batch``: one call per step of a DAP-09 job, the GIL released) against the
per-report path they replace (the loops ``ldp.aggregators.poplar1_leader`` and ``poplar1_helper`` ran: HPKE open,
``verify_init``, ``verifier_shares_to_message``, ``verify_next``, ``aggregate``), written out below.

Differential: a job mixing valid reports and invalid ones (a malformed public share, a ciphertext sealed to another
config id, one that does not decrypt, the other aggregator's input share sealed to each, a report of a shorter bit
length, whose IDPF has no such level, and a flipped IDPF key), with the leader's share opened at the door or not, the
leader's verifier share of another report, and tampered round messages, gives byte-identical states, verifier shares,
messages and aggregate shares and the same refusal codes both ways, on jobs drawn by hypothesis (bits 8, 12 and 16,
any level, the candidates) and at one and two threads. Without tampering the two aggregate shares add up to the valid
reports' prefix counts. Malformed arguments (and a level past the bit length) are refused whole before any state is
used. Each assertion fails if a batch call refuses at another step, or with another code, than the per-report path
(e.g. ``invalid_message`` for ``vdaf_invalid``), finishes or counts a report the path refuses, or uses a state twice."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from prio_support import refused
from test_prio_batch import TASK, TIME, _handmade, _tamper

VERIFY_KEY = bytes(range(7, 39))
BITS = (8, 12, 16)
KINDS = ("valid", "malformed_public", "wrong_config", "undecryptable", "other_aggregator", "short", "flipped_key")
EXPECTED = {"wrong_config": ("hpke_unknown_config_id", "hpke_unknown_config_id"),
            "undecryptable": ("hpke_decrypt_error", "hpke_decrypt_error"),
            "short": ("vdaf_invalid", "invalid_message")}
"""The (leader, helper) codes of a kind whatever the job (the leader's share not opened at its door)."""


@dataclass(frozen=True)
class Report:
    kind: str
    report_id: bytes
    public_share: bytes
    leader_ciphertext: bytes
    helper_ciphertext: bytes
    leader_share: bytes | None
    value: int | None
    """The measurement as an int (``None``: it must not count)."""


def make_report(prio: Any, keys: tuple[Any, Any], vdaf: Any, kind: str, rng: random.Random) -> Report:
    """A report of ``kind`` for ``vdaf``, sealed by hand as DAP-09 says (``test_prio_batch._handmade``)."""
    from ldp.prio.poplar1 import Poplar1, bits_of

    rid, value = rng.randbytes(16), rng.randrange(1 << vdaf.bits)
    sharder = Poplar1(vdaf.bits - 4, ctx=vdaf.ctx) if kind == "short" else vdaf
    _, public, (leader, helper) = sharder.shard(bits_of(value >> (vdaf.bits - sharder.bits), sharder.bits),
                                                nonce=rid, rand=rng.randbytes(vdaf.rand_size))
    if kind == "malformed_public":
        public = public[:-3]
    elif kind == "other_aggregator":
        leader, helper = helper, leader
    elif kind == "flipped_key":
        leader = bytes([leader[0] ^ 0x21]) + leader[1:]
    lc, hc = _handmade(prio, keys, rid, public, leader, helper)
    if kind == "wrong_config":
        lc, hc = bytes([lc[0] ^ 0x80]) + lc[1:], bytes([hc[0] ^ 0x80]) + hc[1:]
    elif kind == "undecryptable":
        lc, hc = _tamper(lc), _tamper(hc)
    opened = leader if kind not in ("wrong_config", "undecryptable") else None
    return Report(kind, rid, public, lc, hc, opened, value if kind == "valid" else None)


Pools = dict[int, tuple[Any, dict[str, list[Report]]]]


@pytest.fixture(scope="module")
def pools(prio: Any, keys: tuple[Any, Any]) -> Pools:
    """Per bit length, its VDAF and three reports of every kind (and 70 valid ones, for two threads' parts)."""
    from ldp.prio.poplar1 import Poplar1

    rng = random.Random(89)
    out: Pools = {}
    for bits in BITS:
        vdaf = Poplar1(bits, ctx=TASK)
        pool = {kind: [make_report(prio, keys, vdaf, kind, rng) for _ in range(3)] for kind in KINDS}
        pool["many"] = [make_report(prio, keys, vdaf, "valid", rng) for _ in range(70)]
        out[bits] = (vdaf, pool)
    return out


# -- the per-report path (the aggregators' loops before the batch calls) ------------------------------------------

def _open(prio: Any, key: Any, role: str, r: Report, ciphertext: bytes) -> bytes | str:
    """This aggregator's input share, or its code (the config id first, as ``prepare_reference.prepare_init``)."""
    from ldp.errors import PrioError

    if not ciphertext or ciphertext[0] != key.config.id:
        return "hpke_unknown_config_id"
    try:
        share: bytes = prio.open_input_share(key, role=role, task_id=TASK, report_id=r.report_id, time=TIME,
                                             public_share=r.public_share, ciphertext=ciphertext)
    except PrioError:
        return "hpke_decrypt_error"
    return share


def call_leader_init(prio: Any, vdaf: Any, key: Any, param: Any, reports: list[Report], door: list[bool]
                     ) -> list[Any]:
    from ldp.errors import PrioError

    out: list[Any] = []
    for r, opened in zip(reports, door, strict=True):
        share = r.leader_share if opened and r.leader_share is not None else _open(prio, key, "leader", r,
                                                                                   r.leader_ciphertext)
        if isinstance(share, str):
            out.append(share)
            continue
        try:
            out.append(vdaf.verify_init(VERIFY_KEY, 0, param, r.report_id, r.public_share, share))
        except PrioError:
            out.append("vdaf_invalid")
    return out


def call_helper_init(prio: Any, vdaf: Any, key: Any, param: Any, reports: list[Report], leader_vs: list[bytes]
                     ) -> list[Any]:
    from ldp.errors import PrioError
    from ldp.prio.poplar1 import verify_continue

    out: list[Any] = []
    for r, theirs in zip(reports, leader_vs, strict=True):
        share = _open(prio, key, "helper", r, r.helper_ciphertext)
        if isinstance(share, str):
            out.append(share)
            continue
        try:
            vdaf.check_input_share(1, share)
        except PrioError:
            out.append("invalid_message")
            continue
        try:
            state0, mine = vdaf.verify_init(VERIFY_KEY, 1, param, r.report_id, r.public_share, share)
            msg0 = vdaf.verifier_shares_to_message(state0, [theirs, mine])
            state1, next_share = verify_continue(vdaf, state0, msg0)
        except PrioError:
            out.append("vdaf_invalid")
            continue
        out.append((state1.to_bytes(), msg0, next_share))
    return out


def call_leader_continue(vdaf: Any, states: list[Any], msgs: list[bytes], shares: list[bytes]) -> list[Any]:
    from ldp.errors import PrioError
    from ldp.prio.poplar1 import verify_continue

    out: list[Any] = []
    for state, msg0, theirs in zip(states, msgs, shares, strict=True):
        try:
            state1, mine = verify_continue(vdaf, state, msg0)
            out.append((state1, vdaf.verifier_shares_to_message(state1, [mine, theirs])))
        except PrioError:
            out.append("vdaf_invalid")
    return out


def call_finish(vdaf: Any, param: Any, states: list[Any], msgs: list[bytes]) -> tuple[list[bool], Any]:
    """Either side's last step; a state as bytes is the helper's (its records)."""
    from ldp.errors import PrioError
    from ldp.prio.poplar1 import verify_finish

    finished, outs = [], []
    for state, msg in zip(states, msgs, strict=True):
        try:
            if isinstance(state, bytes):
                state = vdaf.verify_state_from_bytes(1, param, state)
            outs.append(verify_finish(vdaf, state, msg))
            finished.append(True)
        except PrioError:
            finished.append(False)
    return finished, vdaf.aggregate(param, outs)


# -- both paths on one job --------------------------------------------------------------------------------------

def _same_started(batch: list[Any], call: list[Any]) -> None:
    """The same codes, and the same (state, bytes) pairs byte for byte."""
    assert len(batch) == len(call)
    for b, c in zip(batch, call, strict=True):
        if isinstance(c, str):
            assert b == c
        else:
            assert not isinstance(b, str), (b, c)
            assert (b[0].to_bytes(), b[0].round, b[0].agg_id, b[1]) == (c[0].to_bytes(), c[0].round, c[0].agg_id,
                                                                        c[1])
            assert type(b[1]) is bytes and not b[0].used


def _tampered(data: bytes, tamper: bool) -> bytes:
    return (_tamper(data) if data else b"\x01") if tamper else data


def _leader_vs(batch: list[Any], wrong: list[bool]) -> list[bytes]:
    """The leader's verifier share the helper is sent for each report: the leader's own, or (``wrong``, or a report
    the leader refused) another report's or zeros."""
    shares = [b[1] for b in batch if not isinstance(b, str)]
    out = []
    for i, (b, w) in enumerate(zip(batch, wrong, strict=True)):
        if not isinstance(b, str) and not w:
            out.append(b[1])
        else:
            out.append(shares[(i + 1) % len(shares)] if shares and w else b"\x00" * 8)
    return out


def both_paths(prio: Any, keys: tuple[Any, Any], vdaf: Any, param: Any, reports: list[Report],
               flags: list[tuple[bool, bool, bool]]) -> tuple[list[bool], Any, Any]:
    """One job both ways (module docstring), every step compared; per report: its leader share opened at the door,
    a wrong leader verifier share sent, a tampered message (round 0's at even places, round 1's at odd ones). Whether
    each report the leader finished is a valid one, and both aggregate shares."""
    door, wrong_vs, bad = (list(f) for f in zip(*flags, strict=True)) if reports else ([], [], [])
    batch = vdaf.leader_init_batch(keys[0], VERIFY_KEY, TASK, param, [
        (r.report_id, TIME, r.public_share, r.leader_ciphertext, r.leader_share if d else None)
        for r, d in zip(reports, door, strict=True)])
    call = call_leader_init(prio, vdaf, keys[0], param, reports, door)
    _same_started(batch, call)
    leader_vs = _leader_vs(batch, wrong_vs)
    h_batch = vdaf.helper_init_batch(keys[1], VERIFY_KEY, TASK, param, [
        (r.report_id, TIME, r.public_share, r.helper_ciphertext, v) for r, v in zip(reports, leader_vs, strict=True)])
    assert h_batch == call_helper_init(prio, vdaf, keys[1], param, reports, leader_vs)
    for r, lb, hb in zip(reports, batch, h_batch, strict=True):
        if r.kind in EXPECTED:
            assert (lb, hb) == EXPECTED[r.kind], r.kind

    go = [i for i, (lb, hb) in enumerate(zip(batch, h_batch, strict=True))
          if not isinstance(lb, str) and not isinstance(hb, str)]
    msgs = [_tampered(h_batch[i][1], bad[i] and i % 2 == 0) for i in go]
    theirs = [h_batch[i][2] for i in go]
    c_batch = vdaf.leader_continue_batch([batch[i][0] for i in go], msgs, theirs)
    c_call = call_leader_continue(vdaf, [call[i][0] for i in go], msgs, theirs)
    _same_started(c_batch, c_call)
    assert all(batch[i][0].used for i in go)

    ok = [k for k, c in enumerate(c_batch) if not isinstance(c, str)]
    finals = [_tampered(c_batch[k][1], bad[go[k]] and go[k] % 2 == 1) for k in ok]
    h_states = [h_batch[go[k]][0] for k in ok]
    h_fin, h_agg = vdaf.helper_finish_batch(param, h_states, finals)
    h_call_fin, h_call_agg = call_finish(vdaf, param, h_states, finals)
    assert (h_fin, h_agg.to_bytes()) == (h_call_fin, h_call_agg.to_bytes())
    l_states = [c_batch[k][0] for k in ok]
    l_fin, l_agg = vdaf.leader_finish_batch(param, l_states, finals)
    l_call_fin, l_call_agg = call_finish(vdaf, param, [c_call[k][0] for k in ok], finals)
    assert (l_fin, l_agg.to_bytes()) == (l_call_fin, l_call_agg.to_bytes())
    assert all(s.used for s in l_states) and all(type(x) is bool for x in l_fin + h_fin)
    assert l_fin == h_fin  # both sides finish the same reports
    counted = [reports[go[k]] for k, f in zip(ok, l_fin, strict=True) if f]
    return [r.value is not None for r in counted], l_agg, h_agg


def _param(vdaf: Any, level: int, reports: list[Report], extra: list[int]) -> Any:
    from ldp.prio.poplar1 import agg_param

    shift = vdaf.bits - 1 - level
    prefixes = {r.value >> shift for r in reports if r.value is not None} | set(extra) | {0}
    return agg_param(level, sorted(prefixes))


def _check_counts(vdaf: Any, param: Any, reports: list[Report], l_agg: Any, h_agg: Any) -> None:
    """Both shares add up to the valid reports' count of each candidate prefix, and nothing else counts."""
    from ldp.prio.poplar1 import prefix_of, signed_counts

    shift = vdaf.bits - 1 - param.level
    want = [sum(1 for r in reports if r.value is not None and prefix_of(r.value >> shift, param.level) == p)
            for p in param.prefixes]
    assert signed_counts([l_agg, h_agg]) == want


# -- the tests ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", BITS)
def test_every_kind_the_same_both_ways_at_the_first_middle_and_last_level(prio: Any, keys: tuple[Any, Any],
                                                                         pools: Pools, bits: int) -> None:
    vdaf, pool = pools[bits]
    reports = [r for kind in KINDS for r in pool[kind]]
    for level in (0, bits // 2, bits - 1):
        param = _param(vdaf, level, reports, [])
        for door in (True, False):
            valid, l_agg, h_agg = both_paths(prio, keys, vdaf, param, reports,
                                             [(door, False, False)] * len(reports))
            assert all(valid) and len(valid) == len(pool["valid"])
            _check_counts(vdaf, param, reports, l_agg, h_agg)


def test_the_kinds_are_refused_where_the_per_report_path_refuses_them(prio: Any, keys: tuple[Any, Any],
                                                                      pools: Pools) -> None:
    """The codes themselves, at the leader's round 0, the helper's, and the leader's round 1 (the differential
    tests check the batch calls give the per-report path's). A flipped IDPF key and the other aggregator's share
    pass round 0 on both sides (its combination reveals the sketch, it checks nothing) and fail round 1's: the
    leader's ``verifier_shares_to_message`` of round 1 (the helper refuses what the leader leaves out)."""
    vdaf, pool = pools[8]
    param = _param(vdaf, 3, pool["valid"], [])
    for kind in KINDS:
        reports = pool[kind]
        lead = vdaf.leader_init_batch(keys[0], VERIFY_KEY, TASK, param, [
            (r.report_id, TIME, r.public_share, r.leader_ciphertext, None) for r in reports])
        vs = [b"\x00" * 8 if isinstance(x, str) else x[1] for x in lead]
        helped = vdaf.helper_init_batch(keys[1], VERIFY_KEY, TASK, param, [
            (r.report_id, TIME, r.public_share, r.helper_ciphertext, v) for r, v in zip(reports, vs, strict=True)])
        go = [i for i, (x, y) in enumerate(zip(lead, helped, strict=True))
              if not isinstance(x, str) and not isinstance(y, str)]
        cont = iter(vdaf.leader_continue_batch([lead[i][0] for i in go], [helped[i][1] for i in go],
                                               [helped[i][2] for i in go]))
        codes = {tuple(z if isinstance(z, str) else "ok" for z in (x, y, next(cont) if i in go else "-"))
                 for i, (x, y) in enumerate(zip(lead, helped, strict=True))}
        want = {"valid": ("ok", "ok", "ok"), "malformed_public": ("vdaf_invalid", "vdaf_invalid", "-"),
                "other_aggregator": ("ok", "ok", "vdaf_invalid"), "flipped_key": ("ok", "ok", "vdaf_invalid"),
                **{k: (*v, "-") for k, v in EXPECTED.items()}}[kind]
        assert codes == {want}, kind


@st.composite
def jobs(draw: Any) -> tuple[int, int, list[tuple[str, int]], list[tuple[bool, bool, bool]], list[int]]:
    bits = draw(st.sampled_from(BITS))
    level = draw(st.integers(0, bits - 1))
    picks = draw(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 2)), max_size=12))
    flags = draw(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=len(picks),
                          max_size=len(picks)))
    extra = draw(st.lists(st.integers(0, (1 << (level + 1)) - 1), max_size=4))
    return bits, level, picks, flags, extra


@settings(max_examples=40, deadline=None)
@given(jobs())
def test_random_jobs_the_same_both_ways(prio: Any, keys: tuple[Any, Any], pools: Pools, job: Any) -> None:
    bits, level, picks, flags, extra = job
    vdaf, pool = pools[bits]
    reports = [pool[kind][i] for kind, i in picks]
    param = _param(vdaf, level, reports, extra)
    valid, l_agg, h_agg = both_paths(prio, keys, vdaf, param, reports, flags)
    assert all(valid)  # a refused report never finishes, whatever was tampered with
    if not any(w or b for _, w, b in flags):
        _check_counts(vdaf, param, reports, l_agg, h_agg)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_job_split_over_threads_is_the_same(prio: Any, keys: tuple[Any, Any], pools: Pools, threads: int) -> None:
    """70 valid reports and every kind: two threads' parts (at least 32 reports each) joined in order."""
    vdaf, pool = pools[8]
    reports = pool["many"] + [r for kind in KINDS for r in pool[kind]]
    param = _param(vdaf, 7, reports, [])
    prio.set_batch_threads(threads)
    try:
        flags = [(i % 2 == 0, False, False) for i in range(len(reports))]
        valid, l_agg, h_agg = both_paths(prio, keys, vdaf, param, reports, flags)
    finally:
        prio.set_batch_threads(None)
    assert len(valid) == 73 and all(valid)
    _check_counts(vdaf, param, reports, l_agg, h_agg)


def test_empty_jobs(prio: Any, keys: tuple[Any, Any], pools: Pools) -> None:
    vdaf, _ = pools[8]
    param = _param(vdaf, 2, [], [1, 5])
    assert vdaf.leader_init_batch(keys[0], VERIFY_KEY, TASK, param, []) == []
    assert vdaf.helper_init_batch(keys[1], VERIFY_KEY, TASK, param, iter(())) == []
    assert vdaf.leader_continue_batch([], [], []) == []
    for finish in (vdaf.leader_finish_batch, vdaf.helper_finish_batch):
        finished, agg = finish(param, [], [])
        assert finished == [] and agg.field_elements() == [0, 0, 0] and agg.level == 2


def test_a_state_is_used_once_and_only_in_its_round(prio: Any, keys: tuple[Any, Any], pools: Pools) -> None:
    vdaf, pool = pools[8]
    r = pool["valid"][0]
    param = _param(vdaf, 4, [r], [])
    ((state0, vs),) = vdaf.leader_init_batch(keys[0], VERIFY_KEY, TASK, param, [
        (r.report_id, TIME, r.public_share, r.leader_ciphertext, r.leader_share)])
    ((h_state, msg0, theirs),) = vdaf.helper_init_batch(keys[1], VERIFY_KEY, TASK, param, [
        (r.report_id, TIME, r.public_share, r.helper_ciphertext, vs)])
    finished, _ = vdaf.leader_finish_batch(param, [state0], [msg0])  # a round-0 state does not finish: left unused
    assert finished == [False] and not state0.used
    first, second = vdaf.leader_continue_batch([state0, state0], [msg0, msg0], [theirs, theirs])
    assert second == "vdaf_invalid" and state0.used and not isinstance(first, str)
    state1, msg1 = first
    assert vdaf.leader_continue_batch([state1], [msg0], [theirs]) == ["vdaf_invalid"] and not state1.used
    finished, h_agg = vdaf.helper_finish_batch(param, [h_state, h_state, b"junk"], [msg1, msg1, msg1])
    assert finished == [True, True, False]  # bytes are no state to use up: the helper's records keep each once
    finished, l_agg = vdaf.leader_finish_batch(param, [state1, state1], [msg1, msg1])
    assert finished == [True, False] and state1.used


def test_malformed_arguments_are_refused_whole(prio: Any, keys: tuple[Any, Any], pools: Pools) -> None:
    from ldp.prio.poplar1 import agg_param

    vdaf, pool = pools[8]
    r = pool["valid"][0]
    param = _param(vdaf, 1, [r], [])
    good = [(r.report_id, TIME, r.public_share, r.leader_ciphertext, r.leader_share)]
    for call, op in ((vdaf.leader_init_batch, "leader_init_batch"), (vdaf.helper_init_batch, "helper_init_batch")):
        refused(lambda c=call: c(keys[0], VERIFY_KEY[:-1], TASK, param, good), op, "verify key must be 32 bytes")
        refused(lambda c=call: c(keys[0], VERIFY_KEY, TASK[:-1], param, good), op, "task ID must be 32 bytes")
        refused(lambda c=call: c(keys[0], VERIFY_KEY, TASK, agg_param(8, [0]), good), op, "level 8 is past")
        refused(lambda c=call: c(keys[0], VERIFY_KEY, TASK, param, [*good, good[0][:4]]), op, "reports[1]",
                "5 items")
        with pytest.raises(TypeError, match=r"reports\[0\]"):
            call(keys[0], VERIFY_KEY, TASK, param, [(r.report_id, "now", *good[0][2:])])
    ((state0, vs),) = vdaf.leader_init_batch(keys[0], VERIFY_KEY, TASK, param, good)
    with pytest.raises(TypeError, match=r"states\[1\]"):
        vdaf.leader_continue_batch([state0, b"x"], [b"", b""], [b"", b""])
    refused(lambda: vdaf.leader_continue_batch([state0], [b""], []), "leader_continue_batch", "1 states")
    other = _param(vdaf, 1, [], [3])
    refused(lambda: vdaf.leader_finish_batch(other, [state0], [b""]), "leader_finish_batch", "states[0]",
            "another aggregation parameter")
    refused(lambda: vdaf.helper_finish_batch(param, [b""], []), "helper_finish_batch", "1 states, 0 messages")
    refused(lambda: vdaf.helper_finish_batch(agg_param(9, [0]), [], []), "helper_finish_batch", "level 9 is past")
    assert not state0.used  # nothing was used by a refused call
