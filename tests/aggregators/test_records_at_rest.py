"""What the two aggregators' stores hold reveals nothing alone or together (issue 84, item 3): each job's share is
sealed to its aggregator's records key (ldp.aggregators.sealing), and a released window's job records are deleted
after ``job_retention`` (ldp.aggregators.records.TaskRecords.prune).

The attack is the one found: a quiet task makes jobs of one report; adding, in the field, the leader's and the
helper's stored shares of the same job gives that device's measurement. It is run here on everything both stores
hold (every JSON field that reads as a list of field elements, in each store's records of the same job), and shown
able to succeed (with the records keys, the same addition gives every measurement back)."""

from __future__ import annotations

import json
import random
import secrets
from pathlib import Path
from typing import Any

import pytest
from two_aggregators import WINDOW, World, prio, world


def _objects(aggregator: Any) -> dict[str, dict[str, Any]]:
    """Every JSON record of an aggregator's whole store (not only its role's prefix), by key."""
    store = aggregator.store.inner
    out = {}
    for key in store.list(""):
        try:
            rec = json.loads(store.get(key))
        except (ValueError, UnicodeDecodeError):
            continue  # a chunk of reports (sealed to the leader's HPKE key), the lease
        if isinstance(rec, dict):
            out[key] = rec
    return out


def _int_lists(rec: dict[str, Any], length: int) -> list[list[int]]:
    """Every field of ``rec`` that reads as ``length`` integers: a share in the clear, whatever its name."""
    out = []
    for value in rec.values():
        if isinstance(value, list) and len(value) == length:
            try:
                out.append([int(x) for x in value])
            except (TypeError, ValueError):
                continue
    return out


def _one_report_jobs(tmp_path: Path, n: int = 24) -> tuple[World, dict[bytes, int]]:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=1)
    rng = random.Random(3)
    truth = {secrets.token_bytes(16): rng.randrange(4) for _ in range(n)}
    w.leader.upload_many(w.task.task_id, [w.report(m, report_id=rid) for rid, m in truth.items()])
    assert w.leader.run_aggregation_jobs()["prepared"] == n
    return w, truth


def _recovered(w: World, truth: dict[bytes, int], shares: Any) -> int:
    """How many devices' measurements the two stores' records of each one-report job give when added; ``shares``
    maps (aggregator, job record) to the candidate shares read from it."""
    records = w.leader.records[w.task.task_id]
    p, length = records.modulus, records.length
    lead = {k.rsplit("/", 1)[1]: r for k, r in _objects(w.leader).items() if "/jobs/" in k}
    help_ = {k.rsplit("/", 1)[1]: r for k, r in _objects(w.helper).items() if "/jobs/" in k}
    found = 0
    for name in lead.keys() & help_.keys():
        if not lead[name].get("accepted"):
            continue
        rid = bytes.fromhex(lead[name]["accepted"][0])
        onehot = [1 if v == truth[rid] else 0 for v in range(length)]
        if any([(a + b) % p for a, b in zip(x, y, strict=True)] == onehot
               for x in shares(w.leader, lead[name]) for y in shares(w.helper, help_[name])):
            found += 1
    return found


def test_adding_both_stores_records_of_one_report_jobs_recovers_nothing(tmp_path: Path) -> None:
    w, truth = _one_report_jobs(tmp_path)
    length = w.leader.records[w.task.task_id].length
    assert _recovered(w, truth, lambda _agg, rec: _int_lists(rec, length)) == 0
    # the same addition with each aggregator's records key (what neither store holds) gives every device back:
    # the attack above was able to succeed
    opened = _recovered(w, truth, lambda agg, rec: [agg.records[w.task.task_id].sealer.open(
        rec["job"], rec["window"], rec["sealed_share"])])
    assert opened == len(truth)


def test_a_sealed_share_opens_only_with_its_records_key_and_as_its_own_job(tmp_path: Path) -> None:
    from ldp.aggregators.sealing import ShareSealer
    from ldp.errors import PrioError

    w, _ = _one_report_jobs(tmp_path, n=2)
    records = w.helper.records[w.task.task_id]
    jobs = [r for k, r in _objects(w.helper).items() if "/jobs/" in k]
    rec, other = jobs
    assert records.sealer.open(rec["job"], rec["window"], rec["sealed_share"])
    stranger = ShareSealer(prio().HpkeKeypair.generate(9), w.task.prio3(), "helper", w.task.task_id)
    leader_side = ShareSealer(w.leader.records_key, w.task.prio3(), "leader", w.task.task_id)
    for attempt in (lambda: stranger.open(rec["job"], rec["window"], rec["sealed_share"]),
                    lambda: leader_side.open(rec["job"], rec["window"], rec["sealed_share"]),
                    lambda: records.sealer.open(other["job"], rec["window"], rec["sealed_share"]),
                    lambda: records.sealer.open(rec["job"], rec["window"] + WINDOW, rec["sealed_share"])):
        with pytest.raises(PrioError):
            attempt()


def test_another_records_key_is_refused_at_start_naming_the_job(tmp_path: Path) -> None:
    w, _ = _one_report_jobs(tmp_path, n=1)
    with pytest.raises(ValueError, match="does not open with this aggregator's records key"):
        w.restart_helper(records_key=prio().HpkeKeypair.generate(5))


def test_a_records_key_apart_from_the_hpke_key(tmp_path: Path) -> None:
    from ldp.aggregators.sealing import ShareSealer
    from ldp.errors import PrioError

    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=2)
    records_key = prio().HpkeKeypair.generate(3)
    w.restart_helper(records_key=records_key)
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in (0, 1, 1, 3)])
    w.leader.run_aggregation_jobs()
    rec = next(r for k, r in _objects(w.helper).items() if "/jobs/" in k)
    with pytest.raises(PrioError):  # not sealed to the HPKE key of /hpke_config
        ShareSealer(w.helper_key, w.task.prio3(), "helper", w.task.task_id).open(rec["job"], rec["window"],
                                                                                rec["sealed_share"])
    w.restart_helper(records_key=records_key)  # restarted with it, the helper reads its records back
    assert list(w.collect().sums) == [1, 2, 0, 1]


@pytest.mark.parametrize("retention", [0, 3600])
def test_a_released_windows_job_records_are_deleted_after_the_retention(tmp_path: Path, retention: int) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=2)
    for restart in (w.restart_helper, w.restart_leader):
        restart(job_retention=retention)
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in (0, 1, 1, 3, 2)])

    def job_records() -> int:
        return sum("/jobs/" in k for agg in (w.leader, w.helper) for k in agg.store.inner.list(""))

    w.leader.run_aggregation_jobs()
    assert job_records() == 3 + 3 * 3  # the helper's 3 jobs; the leader's 3 jobs, their plans and first attempts
    first = w.collect()
    assert job_records() == (0 if retention == 0 else 12)
    w.now += retention
    for restart in (w.restart_helper, w.restart_leader):  # pruned at start once the retention is past
        restart(job_retention=retention)
    assert job_records() == 0
    again = w.collect()  # the window's counts and release are its collection record's
    assert list(again.sums) == list(first.sums) == [1, 2, 1, 1] and again.report_count == first.report_count == 5
    status = w.leader.status()["tasks"][0]["windows"]
    assert list(status.values())[0]["valid"] == 5
