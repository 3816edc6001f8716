"""The fault suite over a Poplar1 task (issue 89, item 2; the Prio3 cases: ``test_faults.py``, whose script's
``Killed`` and killing store are used here): reports of another VDAF, or of this one with a share one byte too
long, refused at the door and counted (and in the jobs, stored past it); both stores read together recover no
device's string; a helper away
during a level's run, then back; a stale leader's late writes after a takeover; kills at each crash point of a
level's run and before and after every write of either aggregator, a restart, and the walk's releases exact (each
report counted once) and answered again the same, the window pruned."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from poplar1_world import BITS, VALUES, bodies, collect, counts, expected, held, param, poplar1_world
from support.scripts import load_script
from two_aggregators import T0, WINDOW, forged, handmade_report

from ldp.aggregators import crashpoints
from ldp.aggregators.messages import xor_checksum
from ldp.errors import AggregatorError

faults = load_script("aggregator_faults")


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stores' fsyncs skipped: a kill here is an exception in the process, not a power loss (the walks' time is
    their fsyncs' otherwise)."""
    import os

    monkeypatch.setattr(os, "fsync", lambda fd: None)
SHARES = ("leader_share", "helper_share", "report_count", "checksum", "refused")
LEVELS = range(BITS)


class Peer:
    """The helper as the leader reaches it: ``away`` calls of ``method`` (from the ``skip``-th on) refused
    ``helper_unavailable`` before the helper sees them, or with its answer lost after (``lost``); a helper killed
    (:class:`Killed` in its process) is one that does not answer."""

    def __init__(self, helper: Any, method: str = "", away: int = 0, skip: int = 0, lost: bool = False) -> None:
        self.helper, self.method, self.away, self.skip, self.lost = helper, method, away, skip, lost
        self.killed = False

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.helper, name)

        def call(*args: Any) -> Any:
            unavailable = AggregatorError("the helper did not answer", "helper_unavailable", 502)
            if name == self.method and self.skip:
                self.skip -= 1
            elif name == self.method and self.away:
                self.away -= 1
                if self.lost:
                    target(*args)
                raise unavailable
            try:
                return target(*args)
            except faults.Killed:
                self.killed = True
                raise unavailable from None

        return call


def _finish(w: Any, docs: dict[int, dict[str, Any]], rids: list[bytes]) -> list[str]:
    """What is wrong with a walk's releases (empty: nothing): exact counts and checksums, every report once on each
    side, the same answers when asked again and after both restart, and the window pruned on both sides."""
    wrong = [f"level {lv}: {counts(w, lv, docs[lv])}" for lv in LEVELS if counts(w, lv, docs[lv]) != expected(lv)]
    wrong += [f"level {lv}: checksum" for lv in LEVELS if docs[lv]["checksum"] != xor_checksum(rids).hex()]
    for side in (w.leader, w.helper):
        levels = side.task_state(w.task.task_id).poplar1
        for lv in LEVELS:
            ids = [r for rec in levels.finished[(T0, lv)].values() for r in rec["accepted"]]
            if sorted(ids) != sorted(r.hex() for r in rids):
                wrong.append(f"{side.role} level {lv}: {len(ids)} reports in its jobs")
    for restart in (False, True):
        if restart:
            w.restart_helper()
            w.restart_leader()
        wrong += [f"level {lv} asked again" for lv in LEVELS
                  if any(collect(w, lv)[k] != docs[lv][k] for k in SHARES)]
    left = {k: v for side in (w.leader, w.helper) for k, v in held(side, w).items() if k in ("chunk", "plan", "init")}
    return wrong + [f"left: {k}" for k, v in left.items() if v]


def test_reports_of_another_vdaf_draft_or_another_poplar1_are_refused_at_the_door_and_counted(tmp_path: Path) -> None:
    """A Prio3 report of VDAF draft 8 and a Poplar1 report of 16 bits (another task's), each sealed to this task's
    aggregators: without the door's checks they are stored, and refused in the level's jobs instead."""
    from ldp import prio
    from ldp.prio.poplar1 import Poplar1, bits_of

    w = poplar1_world(tmp_path)
    others = [forged(w, prio.Prio3Histogram(ctx=b"", draft=8, length=4), 1),
              forged(w, Poplar1(16, ctx=w.task.task_id), bits_of(5, 16)),
              forged(w, Poplar1(BITS, ctx=secrets.token_bytes(32)), bits_of(1, BITS))]
    door = w.leader.upload_many(w.task.task_id, others[:2] + bodies(w))
    assert [e.code if e else None for e in door[:2]] == ["invalid_message"] * 2 and door[2:] == [None] * len(VALUES)
    with pytest.raises(AggregatorError) as one:
        w.leader.upload(w.task.task_id, others[0])
    assert one.value.code == "invalid_message"
    w.leader.upload(w.task.task_id, others[2])  # the right lengths, another context: refused in the jobs
    assert w.leader.status()["tasks"][0]["refused_at_upload"] == {"invalid_message": 3}
    doc = collect(w, 0)
    assert counts(w, 0, doc) == expected(0) and doc["refused"] == {"vdaf_invalid": 1}


def _one_byte_longer(w: Any, role: int, value: int = 1) -> bytes:
    """A report of this very task whose input share of ``role`` (0 the leader's, 1 the helper's) is one byte longer
    than its own length, sealed to the task's aggregators as DAP-09 says."""
    from ldp.prio.poplar1 import Poplar1, bits_of

    rid = secrets.token_bytes(16)
    _, public, (leader, helper) = Poplar1(BITS, ctx=w.task.task_id).shard(bits_of(value, BITS), nonce=rid)
    return handmade_report(w, public, leader + bytes(role == 0), helper + bytes(role == 1), rid)


def test_a_share_one_byte_longer_than_its_own_is_refused_at_the_door_and_in_the_jobs(tmp_path: Path) -> None:
    """A Poplar1 report of this task whose leader's or helper's input share is one byte longer than the task's
    length: refused ``invalid_message`` at the door and counted. Stored past the door (an older leader's store),
    each is refused in the level's jobs (the leader's own at once, the helper's by the helper) and counted there;
    the level's honest counts are exact either way."""
    from ldp import prio
    from ldp.aggregators.state import StoredReport

    w = poplar1_world(tmp_path)
    door = w.leader.upload_many(w.task.task_id, [_one_byte_longer(w, 0), _one_byte_longer(w, 1)] + bodies(w))
    assert [e.code if e else None for e in door] == ["invalid_message"] * 2 + [None] * len(VALUES)
    assert w.leader.status()["tasks"][0]["refused_at_upload"] == {"invalid_message": 2}
    past = [_one_byte_longer(w, 0), _one_byte_longer(w, 1)]
    state = w.leader.task_state(w.task.task_id)
    items = [StoredReport(b[:16], b, prio.DapReport.from_bytes(b), None) for b in past]
    assert w.leader._store_reports(state, items) == [None, None]
    doc = collect(w, 0)
    assert counts(w, 0, doc) == expected(0) and doc["report_count"] == len(VALUES)
    assert sum(doc["refused"].values()) == 2 and set(doc["refused"]) <= {"invalid_message", "vdaf_invalid"}


def test_both_stores_read_together_recover_no_devices_string(tmp_path: Path) -> None:
    """One-report jobs at both levels: no two byte strings of the two stores' records of a job decode as the level's
    aggregate shares that add up to a report's one-hot prefix counts (the shares are stored sealed); opened with each
    side's records key, every job's two shares do, so the search would find them if they were stored in the
    clear."""
    import json

    from ldp.aggregators.poplar1_records import decode_param
    from ldp.errors import PrioError
    from ldp.prio.poplar1 import signed_counts

    w = poplar1_world(tmp_path, job_size=1)
    w.leader.upload_many(w.task.task_id, bodies(w))
    for level in LEVELS:
        collect(w, level)
    vdaf = w.task.prio3()

    def jobs(side: Any) -> dict[str, dict[str, Any]]:
        records = side.task_state(w.task.task_id).records
        store = records.store
        recs = {key.rsplit("/", 1)[1]: json.loads(store.get(key)) for key in store.list(records.prefix)
                if "/poplar1/jobs/" in key and key.endswith(".json")}
        return {name: rec for name, rec in recs.items() if isinstance(rec, dict) and rec.get("accepted")}

    def one_hot(level: int, x: bytes, y: bytes) -> bool:
        param = decode_param(param_of[level])
        try:
            counts_ = signed_counts([vdaf.aggregate_share_from_bytes(param, z) for z in (x, y)])
        except (PrioError, ValueError):
            return False
        return sorted(counts_) == [0] * (len(counts_) - 1) + [1]

    def strings(rec: dict[str, Any]) -> list[bytes]:
        out = []
        for v in rec.values():
            try:
                out.append(bytes.fromhex(v) if isinstance(v, str) else b"")
            except ValueError:
                pass
        return [x for x in out if x]

    param_of = {level: param(level) for level in LEVELS}
    lead, helper = jobs(w.leader), jobs(w.helper)
    shared = sorted(lead.keys() & helper.keys())
    assert len(shared) == len(VALUES) * len(LEVELS)
    found = sum(one_hot(int(lead[n]["level"]), x, y) for n in shared for x in strings(lead[n])
                for y in strings(helper[n]))
    opened = sum(one_hot(int(lead[n]["level"]), *(side.task_state(w.task.task_id).poplar1.job_share(rec)
                                                  for side, rec in ((w.leader, lead[n]), (w.helper, helper[n]))))
                 for n in shared)
    assert found == 0 and opened == len(shared)


@pytest.mark.parametrize("lost", [False, True], ids=["refused", "answer-lost"])
@pytest.mark.parametrize("method, skip", [("aggregation_job", 1), ("aggregation_job_continue", 1),
                                          ("aggregate_share", 0)])
def test_a_helper_away_fails_the_level_cleanly_and_a_retry_completes_it(tmp_path: Path, method: str, skip: int,
                                                                        lost: bool) -> None:
    """The second job's first or second round, or the helper's share, refused or its answer lost: the level fails
    with the helper's code; once the helper is back, the retry redoes the job under its ID (the helper answers from
    its records) and releases each report once (a job run anew, or a report counted twice, changes a count)."""
    w = poplar1_world(tmp_path)
    reports = bodies(w)
    w.leader.upload_many(w.task.task_id, reports)
    w.leader.helper = Peer(w.helper, method, away=1, skip=skip, lost=lost)
    with pytest.raises(AggregatorError) as away:
        collect(w, 0)
    assert away.value.code == "helper_unavailable" and (T0, 0) not in w.leader.task_state(w.task.task_id
                                                                                          ).poplar1.releases
    assert _finish(w, {lv: collect(w, lv) for lv in LEVELS}, [r[:16] for r in reports]) == []


def test_a_stale_leaders_late_writes_after_a_takeover_change_nothing(tmp_path: Path) -> None:
    """A leader stalls between a job's two rounds; another takes over its store, redoes the job under its ID and
    releases the level. The stale one's late job record and release are refused by the store (created once): its
    answer is the taker's release, the same sealed shares (with a put over the record, the stale leader's share,
    sealed to the collector anew, would be released: with noise, a second draw)."""
    w = poplar1_world(tmp_path)
    reports = bodies(w)
    stale = w.leader
    stale.upload_many(w.task.task_id, reports)
    taken: dict[str, Any] = {}

    class Stalls(Peer):
        def aggregation_job_continue(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
            if not taken:  # the stale leader wakes after the takeover
                taker = w.restart_leader()
                taken["doc"] = collect(w, 0)
                taken["record"] = taker.store.get(taker.task_state(task_id).poplar1.job_key(job_id))
                taken["job"] = job_id
            return bytes(self.helper.aggregation_job_continue(task_id, job_id, body))

    stale.helper = Stalls(w.helper)
    w.now = T0 + WINDOW + 1
    late = dict(stale.collect(w.task.task_id, T0, param(0)))
    assert all(late[k] == taken["doc"][k] for k in SHARES)
    levels = w.leader.task_state(w.task.task_id).poplar1
    assert w.leader.store.get(levels.job_key(taken["job"])) == taken["record"]
    assert counts(w, 0, late) == expected(0)
    w.leader.helper = w.helper
    assert _finish(w, {0: taken["doc"], 1: collect(w, 1)}, [r[:16] for r in reports]) == []


def test_a_job_continued_after_its_level_was_released_is_refused(tmp_path: Path) -> None:
    """A first round the leader never continued (a leader that broke the rules): once the level is released its
    second round is refused ``batch_collected`` (else the helper would count it into a released level)."""
    from ldp.aggregators.messages import AggregationJobInitReq, AggregationJobResp
    from ldp.aggregators.poplar1_jobs import _open
    from ldp.aggregators.poplar1_messages import AggregationJobContinueReq
    from ldp.aggregators.poplar1_records import decode_param

    w = poplar1_world(tmp_path)
    reports = bodies(w)
    w.leader.upload_many(w.task.task_id, reports)
    state = w.leader.task_state(w.task.task_id)
    _, _, inits = _open(w.leader, state, decode_param(param(0)), [reports[0][:16]])
    body = AggregationJobInitReq(tuple(inits), param(0)).to_bytes()
    first = AggregationJobResp.from_bytes(w.helper.aggregation_job(w.task.task_id, "X" * 22, body))
    assert first.prepare_resps[0].error is None
    doc = collect(w, 0)
    assert doc["report_count"] == len(VALUES) - 1 and doc["refused"] == {"report_replayed": 1}
    with pytest.raises(AggregatorError) as late:
        w.helper.aggregation_job_continue(w.task.task_id, "X" * 22, AggregationJobContinueReq(1, ()).to_bytes())
    assert late.value.code == "batch_collected"


def _killed_walk(root: Path, *, side: str = "", at: int | None = None, when: str = "before", point: str = "",
                 nth: int = 0) -> tuple[list[str], dict[str, int]]:
    """A walk of both levels killed once: at the ``nth`` call of crash point ``point``, or before or after write
    ``at`` of ``side``'s store. The killed side restarts from its store (a helper killed is one the leader finds
    away), devices retry what was not answered, and the collector asks again. What is wrong (:func:`_finish`),
    and each side's writes and each point's calls."""
    w = poplar1_world(root)
    reports = bodies(w)
    seen: dict[str, int] = {}

    def fault(name: str) -> None:
        seen[name] = seen.get(name, 0) + 1
        if name == point and seen[name] == nth + 1:
            raise faults.Killed

    store = None
    if side:
        store = faults._KillingStore(getattr(w, f"{side}_store")(), at, when)
        setattr(w, f"{side}_store", lambda: store)
        (w.restart_helper if side == "helper" else w.restart_leader)()
    peer = w.leader.helper = Peer(w.helper)
    answered: set[int] = set()
    crashpoints._fault = fault
    try:
        for _ in range(3):
            try:
                for i, err in enumerate(w.leader.upload_many(w.task.task_id, reports)):
                    if err is None or err.code == "report_replayed":
                        answered.add(i)
                docs = {lv: collect(w, lv) for lv in LEVELS}
                break
            except (faults.Killed, AggregatorError) as exc:
                assert isinstance(exc, faults.Killed) or peer.killed, exc
                if store is not None:
                    store.at = None
                (w.restart_helper if peer.killed else w.restart_leader)()
                peer = w.leader.helper = Peer(w.helper)
        else:
            return ["never finished"], seen
    finally:
        crashpoints._fault = None
    wrong = _finish(w, docs, [r[:16] for r in reports])
    if len(answered) != len(reports):
        wrong.append(f"{len(reports) - len(answered)} uploads never answered")
    return wrong, {**seen, "writes": store.writes if store is not None else 0}


POINTS = ("leader_job_planned", "leader_job_answered", "helper_job_recorded")


def test_a_kill_at_each_crash_point_of_a_level_run_counts_every_report_once(tmp_path: Path) -> None:
    """Each call of each point (each job's plan and answers at the leader, each round's record at the helper, at
    both levels): the level's release after a restart is the one without a kill. Without the crash points in the
    Poplar1 path (none called) this fails; a job lost or counted twice at a restart changes a count or checksum."""
    wrong, calls = _killed_walk(tmp_path / "clean")
    assert wrong == [] and {p: calls.get(p, 0) for p in POINTS} == {
        "leader_job_planned": 4, "leader_job_answered": 4, "helper_job_recorded": 8}, calls
    broken = [f"{p}#{n}: {why}" for p in POINTS for n in range(calls[p])
              for why in _killed_walk(tmp_path / f"{p}-{n}", point=p, nth=n)[0]]
    assert broken == []


@pytest.mark.parametrize("side", ["leader", "helper"])
def test_a_kill_before_or_after_any_write_of_a_poplar1_walk_loses_and_double_counts_nothing(
        tmp_path: Path, side: str) -> None:
    """Every write of ``side`` in a walk (chunk, parameters, plans or first rounds, finished jobs, releases, and the
    prune's deletions), killed before and after it: the releases are exact, answered again the same, and the window
    ends pruned (a prune that a restart does not finish leaves a record)."""
    _, calls = _killed_walk(tmp_path / "clean", side=side)
    assert calls["writes"] >= 15, calls
    broken = [f"{when} write {at}: {why}" for at in range(calls["writes"]) for when in ("before", "after")
              for why in _killed_walk(tmp_path / f"{at}-{when}", side=side, at=at, when=when)[0]]
    assert broken == []
