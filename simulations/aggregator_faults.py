"""The two-aggregator mode under faults (issue 84, item 7): each case prints one JSON line, and the script exits 1
when one of the mode's promises breaks.

* ``padded_share``: devices' reports whose helper share is padded, at the leader's door (refused there, counted) and
  past it (reports an older leader stored): the window's honest reports are released exactly.
* ``helper_refuses_all``: a helper that counts every report but answers each one refused: the two sides' counts
  differ, both say so (``disagreements`` on each ``/status``), and nothing is released.
* ``helper_answers_another_job``: a helper answering a job with another job's answer: the job is abandoned on both
  sides and split; every report is counted once, on both sides alike.
* ``kill_at_every_write``: a run of uploads, jobs (one of them split) and a collection, killed before and after each
  write either aggregator makes to its store (each write of a fault-free run, in turn); the killed side restarts
  from its store, devices retry what was not answered, and the window is collected: its sums are exact, each
  report counted once, and a second collection gives the same release.
* ``late_write_after_takeover``: a leader taken over wakes after the release, runs its jobs and stores a late
  report: the release and both sides' counts are unchanged.
* ``store_recombination``: one-report jobs; every field of both stores' records added, job by job: no device's value
  comes out (with the two records keys, every one does: the check can succeed).

    python simulations/aggregator_faults.py                  # every case
    python simulations/aggregator_faults.py --case padded_share

``tests/aggregators/test_faults.py`` runs every case in the suite.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ldp.aggregators.helper import Helper
from ldp.aggregators.leader import Leader
from ldp.aggregators.messages import AggregationJobResp, PrepareResp, ReportError
from ldp.aggregators.task import Noise, Task
from ldp.errors import AggregatorError
from ldp.storage import open_store

WINDOW = 3600
T0 = 1_800_000_000 - 1_800_000_000 % WINDOW
LENGTH = 4


class Killed(BaseException):
    """A process killed (raised where a kill happens; never caught by the aggregators)."""


class World:
    """A task, the three parties' keys, and a leader and a helper over folder stores (``peer`` wraps the helper as
    the leader sees it: a faulty helper)."""

    def __init__(self, root: Path, *, job_size: int = 8, min_batch_size: int = 1) -> None:
        from ldp import prio

        self.root, self.now, self.job_size = root, T0 + 10, job_size
        self.collector, self.leader_key, self.helper_key = (prio.HpkeKeypair.generate(i) for i in (7, 1, 2))
        self.task = Task(task_id=secrets.token_bytes(32), app="app", metric="m", vdaf="Prio3Histogram",
                         vdaf_params={"length": LENGTH}, window_seconds=WINDOW, min_batch_size=min_batch_size,
                         noise=Noise(), leader_url="http://127.0.0.1:1", helper_url="http://127.0.0.1:2",
                         collector_hpke_config=self.collector.config.to_bytes())
        self.verify_key = secrets.token_bytes(32)
        self.stores: dict[str, Any] = {role: open_store(root / role) for role in ("leader", "helper")}
        self.peer: Callable[[Any], Any] = lambda helper: helper
        self.helper = self.start_helper()
        self.leader = self.start_leader()

    def start_helper(self) -> Helper:
        self.helper = Helper([self.task], self.stores["helper"], self.helper_key,
                             {self.task.task_id: self.verify_key}, clock=lambda: self.now)
        if getattr(self, "leader", None) is not None:
            self.leader.helper = self.peer(self.helper)
        return self.helper

    def start_leader(self) -> Leader:
        self.leader = Leader([self.task], self.stores["leader"], self.leader_key,
                             {self.task.task_id: self.verify_key}, self.peer(self.helper), job_size=self.job_size,
                             report_expiry=10 ** 8, clock=lambda: self.now)
        return self.leader

    def report(self, value: int) -> bytes:
        from ldp import prio

        return bytes(prio.seal_report(self.task.prio3(), value, task_id=self.task.task_id, time=T0 + 5,
                                      leader=self.leader_key.config, helper=self.helper_key.config))

    def collect(self) -> dict[str, Any]:
        from ldp.aggregators.collect import open_collection

        self.now = max(self.now, T0 + WINDOW + 1)
        doc = self.leader.collect(self.task.task_id, T0)
        c = open_collection(self.task, self.collector, doc)
        return {"sums": list(c.sums), "count": c.report_count, "refused": c.refused, "doc": doc}


def _counts(values: list[int]) -> list[int]:
    return [values.count(v) for v in range(LENGTH)]


def _padded(body: bytes, extra: int) -> bytes:
    """The report with its helper ciphertext's payload ``extra`` bytes longer (the attack)."""
    pos = 24 + 4 + int.from_bytes(body[24:28], "big")   # past the metadata and the public share
    pos += 1 + 2 + int.from_bytes(body[pos + 1:pos + 3], "big")  # the leader's ciphertext: config id, enc
    pos += 4 + int.from_bytes(body[pos:pos + 4], "big")  # and its payload
    pos += 1 + 2 + int.from_bytes(body[pos + 1:pos + 3], "big")  # the helper's: config id, enc
    n = int.from_bytes(body[pos:pos + 4], "big")
    return body[:pos] + (n + extra).to_bytes(4, "big") + body[pos + 4:pos + 4 + n] + bytes(extra)


# -- the cases ------------------------------------------------------------------------------------------------------

def padded_share(root: Path) -> dict[str, Any]:
    from ldp import prio
    from ldp.aggregators.state import StoredReport

    w = World(root, job_size=1000)
    rng = random.Random(1)
    honest = [rng.randrange(LENGTH) for _ in range(100)]
    door = w.leader.upload_many(w.task.task_id, [w.report(v) for v in honest] +
                                [_padded(w.report(1), 100_000) for _ in range(20)])
    refused_at_door = sum(err is not None and err.code == ReportError.invalid_message.code for err in door)
    past = [_padded(w.report(2), 100_000) for _ in range(10)]  # stored by an older leader, past the door
    state = w.leader.task_state(w.task.task_id)
    w.leader._store_reports(state, [StoredReport(b[:16], b, prio.DapReport.from_bytes(b), None) for b in past])
    out = w.collect()
    ok = refused_at_door == 20 and out["sums"] == _counts(honest) and out["refused"] == {"invalid_message": 10}
    return {"ok": ok, "refused_at_door": refused_at_door, "released": out["count"], "refused_in_jobs": out["refused"]}


class _RefusesInItsAnswers:
    def __init__(self, helper: Any) -> None:
        self.helper = helper

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        resp = AggregationJobResp.from_bytes(self.helper.aggregation_job(task_id, job_id, body))
        return AggregationJobResp(tuple(PrepareResp(r.report_id, error=ReportError.vdaf_invalid)
                                        for r in resp.prepare_resps)).to_bytes()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.helper, name)


def helper_refuses_all(root: Path) -> dict[str, Any]:
    w = World(root, min_batch_size=5)
    w.peer = _RefusesInItsAnswers
    w.leader.helper = w.peer(w.helper)
    w.leader.upload_many(w.task.task_id, [w.report(v % LENGTH) for v in range(8)])
    try:
        w.collect()
        code = None
    except AggregatorError as exc:
        code = exc.code
    alarms = {side.role: len(side.status()["tasks"][0]["disagreements"]) for side in (w.leader, w.helper)}
    return {"ok": code == "batch_mismatch" and alarms == {"leader": 1, "helper": 1}, "refused": code,
            "disagreements": alarms}


class _AnotherJobsAnswer:
    """Answers the jobs holding ``bad`` with the answer of the previous job it prepared (or, with none, a broken
    one): a job holding ``bad`` never gets an answer the leader can use."""

    def __init__(self, helper: Any, bad: bytes) -> None:
        self.helper, self.bad, self.last = helper, bad, b""

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        answer = bytes(self.helper.aggregation_job(task_id, job_id, body))
        previous, self.last = self.last, answer
        if self.bad not in body:
            return answer
        return previous if previous and previous != answer else answer[:-1]  # (the first job: a broken answer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.helper, name)


def helper_answers_another_job(root: Path) -> dict[str, Any]:
    w = World(root, job_size=8)
    values = [v % LENGTH for v in range(40)]
    bodies = [w.report(v) for v in values]
    bad = bodies[21][:16]
    w.peer = lambda helper: _AnotherJobsAnswer(helper, bad)
    w.leader.helper = w.peer(w.helper)
    w.leader.upload_many(w.task.task_id, bodies)
    out = w.collect()
    expected = values[:21] + values[22:]
    helper = w.helper.status()["tasks"][0]
    ok = (out["sums"] == _counts(expected) and out["refused"] == {"helper_disagreed": 1}
          and helper["windows"][str(T0)]["valid"] == 39 and helper["abandoned_jobs"] >= 1)
    return {"ok": ok, "released": out["count"], "refused": out["refused"], "abandoned": helper["abandoned_jobs"]}


class _KillingStore:
    """A store that counts its writes (``put``, ``create``, ``delete``) and kills the process before or after the
    write numbered ``at`` (``None``: never)."""

    def __init__(self, inner: Any, at: int | None, when: str) -> None:
        self.inner, self.at, self.when, self.writes = inner, at, when, 0

    def _write(self, op: str, *args: Any) -> Any:
        n, self.writes = self.writes, self.writes + 1
        if n == self.at and self.when == "before":
            raise Killed
        out = getattr(self.inner, op)(*args)
        if n == self.at:
            raise Killed
        return out

    def put(self, key: str, data: bytes) -> None:
        self._write("put", key, data)

    def create(self, key: str, data: bytes) -> bool:
        return bool(self._write("create", key, data))

    def delete(self, key: str) -> None:
        self._write("delete", key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _run_with_kill(root: Path, side: str, at: int | None, when: str) -> tuple[bool, int]:
    """One run killed at a write of ``side`` (module docstring): whether it ended exact, and the side's writes."""
    w = World(root, job_size=8)
    values = [v % LENGTH for v in range(24)]
    bodies = [w.report(v) for v in values]
    w.peer = lambda helper: _AnotherJobsAnswer(helper, bodies[13][:16])  # one job split, on the way
    killing = _KillingStore(w.stores[side], at, when)
    w.stores[side] = killing
    (w.start_helper if side == "helper" else w.start_leader)()
    w.leader.helper = w.peer(w.helper)
    answered: set[int] = set()
    for _ in range(2):  # devices retry what was not answered; the killed side is started again from its store
        try:
            for i in range(0, len(bodies), 12):
                for j, err in enumerate(w.leader.upload_many(w.task.task_id, bodies[i:i + 12])):
                    if err is None or err.code == ReportError.report_replayed.code:
                        answered.add(i + j)
            first = w.collect()
            second = w.collect()
            expected = [v for i, v in enumerate(values) if i != 13]
            exact = (first["sums"] == _counts(expected) and first["refused"] == {"helper_disagreed": 1}
                     and second["doc"] == first["doc"] and len(answered) == len(bodies))
            return exact, killing.writes
        except Killed:
            killing.at = None
            (w.start_helper if side == "helper" else w.start_leader)()
            w.leader.helper = w.peer(w.helper)
    return False, killing.writes


def kill_at_every_write(root: Path) -> dict[str, Any]:
    cases, broken = 0, []
    for side in ("leader", "helper"):
        ok, writes = _run_with_kill(root / f"{side}-clean", side, None, "before")
        if not ok:
            broken.append(f"{side}: the run without a kill")
        for at in range(writes):
            for when in ("before", "after"):
                cases += 1
                ok, _ = _run_with_kill(root / f"{side}-{at}-{when}", side, at, when)
                if not ok:
                    broken.append(f"{side} killed {when} write {at}")
    return {"ok": not broken, "kills": cases, "broken": broken[:10]}


def late_write_after_takeover(root: Path) -> dict[str, Any]:
    """A leader taken over (another process of the role started on its store) wakes after the window's release:
    it runs its jobs and stores a late report. Its writes land, and nothing of the release changes: the next leader
    and the helper count every report once, and the window's release is the one recorded."""
    w = World(root, job_size=8)
    values = [v % LENGTH for v in range(16)]
    bodies = [w.report(v) for v in values]
    stale = w.leader
    stale.upload_many(w.task.task_id, bodies[:8])
    w.start_leader()  # the taker, over the same store
    w.leader.upload_many(w.task.task_id, bodies[8:])
    first = w.collect()
    try:
        stale.run_aggregation_jobs()  # its jobs of reports the taker counted: the helper refuses them as replays
    except AggregatorError:
        pass
    stale.upload_many(w.task.task_id, [w.report(1)])  # a late chunk of a released window
    w.start_leader()
    w.start_helper()
    second = w.collect()
    valid = {side.role: side.status()["tasks"][0]["windows"][str(T0)]["valid"] for side in (w.leader, w.helper)}
    same = {k: v for k, v in second["doc"].items() if k != "refused"} == {
        k: v for k, v in first["doc"].items() if k != "refused"}
    ok = (first["sums"] == _counts(values) and same and valid == {"leader": 16, "helper": 16}
          and second["refused"] == {"batch_collected": 1})  # the late report: refused, its window released
    return {"ok": ok, "released": first["count"], "valid_after": valid, "refused_after": second["refused"]}


def store_recombination(root: Path) -> dict[str, Any]:
    w = World(root, job_size=1)
    rng = random.Random(3)
    truth = {}
    for _ in range(24):
        body = w.report(rng.randrange(LENGTH))
        truth[body[:16]] = body
    values = {rid: None for rid in truth}
    w.leader.upload_many(w.task.task_id, list(truth.values()))
    w.leader.run_aggregation_jobs()
    del values
    p = w.leader.records[w.task.task_id].modulus

    def records(side: Any) -> dict[str, dict[str, Any]]:
        out = {}
        for key in side.store.inner.list(""):
            try:
                rec = json.loads(side.store.inner.get(key))
            except ValueError:
                continue
            if isinstance(rec, dict) and "/jobs/" in key:
                out[key.rsplit("/", 1)[1]] = rec
        return out

    def int_lists(rec: dict[str, Any]) -> list[list[int]]:
        return [[int(x) for x in v] for v in rec.values()
                if isinstance(v, list) and len(v) == LENGTH and all(isinstance(x, int) for x in v)]

    lead, help_ = records(w.leader), records(w.helper)
    found = opened = 0
    for name in lead.keys() & help_.keys():
        if not lead[name].get("accepted"):
            continue
        sums = [[(a + b) % p for a, b in zip(x, y, strict=True)] for x in int_lists(lead[name])
                for y in int_lists(help_[name])]
        found += any(sorted(s) == [0] * (LENGTH - 1) + [1] for s in sums)
        shares = [side.records[w.task.task_id].sealer.open(rec["job"], rec["window"], rec["sealed_share"])
                  for side, rec in ((w.leader, lead[name]), (w.helper, help_[name]))]
        opened += sorted((a + b) % p for a, b in zip(*shares, strict=True)) == [0] * (LENGTH - 1) + [1]
    return {"ok": found == 0 and opened == len(truth), "jobs": len(truth), "recovered_from_stores": found,
            "recovered_with_records_keys": opened}


CASES: dict[str, Callable[[Path], dict[str, Any]]] = {
    "padded_share": padded_share, "helper_refuses_all": helper_refuses_all,
    "helper_answers_another_job": helper_answers_another_job, "kill_at_every_write": kill_at_every_write,
    "late_write_after_takeover": late_write_after_takeover, "store_recombination": store_recombination}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="a case to run (default: all)")
    args = parser.parse_args(argv)
    failed = 0
    for name in args.case or list(CASES):
        with tempfile.TemporaryDirectory() as tmp:
            line = {"case": name, **CASES[name](Path(tmp))}
        print(json.dumps(line, sort_keys=True), flush=True)
        failed += not line["ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
