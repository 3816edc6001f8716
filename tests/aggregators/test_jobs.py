"""No report can block a window (issue 84, item 2): jobs bounded in reports and bytes, a job the helper refuses or
answers unusably split until the reports at fault are alone (refused with a code, counted on both sides) and the
rest released exactly, every job's attempts counted and bounded (ldp.aggregators.jobs)."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from two_aggregators import T0, WINDOW, World, prio, world

from ldp.aggregators import crashpoints
from ldp.aggregators.jobs import REPORT_INIT_OVERHEAD, child_job_ids, plan_jobs
from ldp.errors import AggregatorError


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 5000), max_size=60), st.integers(1, 9), st.integers(1, 20000))
def test_jobs_are_bounded_in_reports_and_bytes_and_keep_every_report_once(sizes: list[int], job_size: int,
                                                                         job_bytes: int) -> None:
    reports = [(i.to_bytes(16, "big"), n) for i, n in enumerate(sizes)]
    jobs = plan_jobs(reports, job_size, job_bytes)
    assert [r for job in jobs for r in job] == [r for r, _ in reports]  # every report once, in order
    size = dict(reports)
    for job in jobs:
        assert 1 <= len(job) <= job_size
        assert len(job) == 1 or sum(size[r] + REPORT_INIT_OVERHEAD for r in job) <= job_bytes
    for a, b in zip(jobs, jobs[1:], strict=False):  # a job is cut only when the next report would not fit
        assert len(a) == job_size or sum(size[r] + REPORT_INIT_OVERHEAD for r in a + b[:1]) > job_bytes


def test_a_split_jobs_halves_are_the_same_however_often_it_is_split() -> None:
    a, b = child_job_ids("x" * 22)
    assert (a, b) == child_job_ids("x" * 22) and a != b and len(a) == len(b) == 22


def _padded(body: bytes, extra: int) -> bytes:
    """A DAP-09 report whose helper ciphertext's payload is ``extra`` bytes longer (the attack on the leader's
    door, here stored past a door that would not check it: an older leader's store)."""
    pos = 24
    pos += 4 + int.from_bytes(body[pos:pos + 4], "big")                         # the public share
    for _ in range(2):                                                          # the leader's, then the helper's
        start = pos
        pos += 1
        pos += 2 + int.from_bytes(body[pos:pos + 2], "big")                     # enc
        n = int.from_bytes(body[pos:pos + 4], "big")
        if start != 24 + 4 + int.from_bytes(body[24:28], "big"):                # the helper's: padded
            return body[:pos] + struct.pack(">I", n + extra) + body[pos + 4:pos + 4 + n] + bytes(extra)
        pos += 4 + n
    raise AssertionError("unreachable")


def _stored_past_the_door(w: World, bodies: list[bytes]) -> None:
    """Reports written to the leader's store as an older leader took them (no check of their bytes)."""
    from ldp.aggregators.state import StoredReport

    p = prio()
    state = w.leader.task_state(w.task.task_id)
    items = [StoredReport(b[:16], b, p.DapReport.from_bytes(b), None) for b in bodies]
    assert w.leader._store_reports(state, items) == [None] * len(items)


class _LimitedHelper:
    """The helper behind a body limit of ``limit`` bytes (413 ``too_large`` for a longer job, as its route)."""

    def __init__(self, helper: Any, limit: int) -> None:
        self.helper, self.limit, self.sizes = helper, limit, []

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        self.sizes.append(len(body))
        if len(body) > self.limit:
            self.helper.refused_jobs["too_large"] += 1
            raise AggregatorError("the body is over the limit", "too_large", 413)
        return bytes(self.helper.aggregation_job(task_id, job_id, body))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.helper, name)


def test_padded_shares_past_the_door_cannot_block_the_windows_honest_reports(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=1000)
    w.restart_leader(job_bytes=2 ** 26)  # jobs as large as the helper's own limit
    rng = random.Random(4)
    honest = [rng.randrange(4) for _ in range(100)]
    bodies = [w.report(m) for m in honest] + [_padded(w.report(1), 300_000) for _ in range(8)]
    bodies.append(_padded(w.report(2), 1_500_000))  # alone still over the helper's limit
    rng.shuffle(bodies)
    _stored_past_the_door(w, bodies)
    w.leader.helper = peer = _LimitedHelper(w.helper, limit=1_000_000)  # 8 padded reports: 2.4 MB in one job
    c = w.collect()
    assert list(c.sums) == [honest.count(v) for v in range(4)] and c.report_count == 100
    # the jobs too large for the helper split until they fit; there the helper refuses each padded report
    # (invalid_message: its sealed share is not the VDAF's length), recorded on both sides; the one too large even
    # alone is refused on the leader's side with the helper's code, and counted by the helper as a job refused
    assert c.refused == {"invalid_message": 8, "too_large": 1}
    assert max(peer.sizes) > peer.limit and w.helper.status()["refused_jobs"]["too_large"] >= 1
    assert w.helper.status()["tasks"][0]["windows"][str(T0)]["refused"] == {"invalid_message": 8}
    for side in (w.leader, w.helper):
        assert side.status()["tasks"][0]["windows"][str(T0)]["valid"] == 100


class _UnusableAnswers:
    """The helper, answering any job holding ``bad`` with another job's answer (a broken or hostile helper)."""

    def __init__(self, helper: Any, bad: bytes) -> None:
        self.helper, self.bad, self.abandoned = helper, bad, []

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        answer = bytes(self.helper.aggregation_job(task_id, job_id, body))
        return answer[:-3] if self.bad in body else answer

    def abandon_job(self, task_id: bytes, job_id: str) -> bool:
        self.abandoned.append(job_id)
        return bool(self.helper.abandon_job(task_id, job_id))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.helper, name)


def test_an_unusable_answer_is_abandoned_on_both_sides_and_split_until_the_report_is_alone(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=64)
    rng = random.Random(5)
    values = [rng.randrange(4) for _ in range(64)]
    bodies = [w.report(m) for m in values]
    assert w.leader.upload_many(w.task.task_id, bodies) == [None] * 64
    w.leader.helper = peer = _UnusableAnswers(w.helper, bad=bodies[17][:16])
    c = w.collect()
    expected = values[:17] + values[18:]
    assert list(c.sums) == [expected.count(v) for v in range(4)] and c.report_count == 63
    assert c.refused == {"helper_disagreed": 1}
    assert len(peer.abandoned) == 7  # the job of 64, then halves of 32, 16, 8, 4, 2 and the report alone
    helper_status = w.helper.status()["tasks"][0]
    assert helper_status["abandoned_jobs"] == 7 and helper_status["windows"][str(T0)]["valid"] == 63


class _CannotAbandon(_UnusableAnswers):
    """A helper of another implementation: no request to abandon a job (405), or a DAP-09 ``DELETE`` that discards
    the job's state but keeps its share counted (204 without this project's header, as Janus 0.7 answers)."""

    def __init__(self, helper: Any, bad: bytes, status: int) -> None:
        super().__init__(helper, bad)
        self.status = status

    def abandon_job(self, task_id: bytes, job_id: str) -> bool:
        self.abandoned.append(job_id)
        if self.status == 405:
            raise AggregatorError("this path takes PUT (Allow)", "method_not_allowed", 405)
        return False


@pytest.mark.parametrize(("status", "reason"), [(405, "cannot abandon it (method_not_allowed, HTTP 405)"),
                                                (204, "did not say it took its share out")])
def test_a_job_a_helper_cannot_abandon_is_set_aside_and_the_others_go_on(tmp_path: Path, status: int,
                                                                         reason: str) -> None:
    """Issue 85: paired with another implementation's helper, an unusable answer cannot be taken back there, so
    its job is set aside for the operator (never split and sent again: the helper counted it), and the run goes on."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=8)
    bodies = [w.report(i % 4) for i in range(32)]
    assert w.leader.upload_many(w.task.task_id, bodies) == [None] * 32
    w.leader.helper = peer = _CannotAbandon(w.helper, bodies[3][:16], status)
    totals = w.leader.run_aggregation_jobs()
    assert totals["set_aside"] == 1 and totals["jobs"] == 3 and len(peer.abandoned) == 1
    aside = w.leader.status()["tasks"][0]["set_aside"]
    assert len(aside) == 1 and reason in aside[0]["reason"]
    assert w.leader.run_aggregation_jobs().get("set_aside", 0) == 0  # not tried again until put back
    w.now = T0 + WINDOW + 1
    with pytest.raises(AggregatorError) as exc:
        w.leader.collect(w.task.task_id, T0)
    assert exc.value.code == "jobs_set_aside"


class _Away:
    """A helper that does not answer jobs (``helper_unavailable``) until ``back``."""

    def __init__(self, helper: Any) -> None:
        self.helper, self.back, self.calls = helper, False, 0

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        self.calls += 1
        if not self.back:
            raise AggregatorError("did not answer", "helper_unavailable", 502)
        return bytes(self.helper.aggregation_job(task_id, job_id, body))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.helper, name)


def test_a_job_is_tried_a_bounded_number_of_times_then_set_aside_until_put_back(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    w.restart_leader(max_job_attempts=3)
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in (0, 1, 2, 2)])
    w.leader.helper = away = _Away(w.helper)
    for _ in range(2):
        with pytest.raises(AggregatorError, match="did not answer"):
            w.leader.run_aggregation_jobs()
        assert w.leader.run_aggregation_jobs() == {"waiting": 1}  # its next attempt is not due: not sent
        w.now += 3600
    with pytest.raises(AggregatorError):
        w.leader.run_aggregation_jobs()
    assert away.calls == 3
    w.now += 3600
    assert w.leader.run_aggregation_jobs() == {"set_aside": 1}
    w.restart_leader(max_job_attempts=3, helper=away)  # set aside for good, across restarts
    assert w.leader.run_aggregation_jobs() == {} and away.calls == 3
    (aside,) = w.leader.status()["tasks"][0]["set_aside"]
    assert aside["attempts"] == 3 and "3 attempts did not finish it" in aside["reason"] and aside["window"] == T0
    from ldp.aggregators.dashboard import render

    assert f"job {aside['job']}" in render(w.leader.status()) and "Jobs set aside" in render(w.leader.status())
    with pytest.raises(AggregatorError) as refused:
        w.collect()
    assert refused.value.code == "jobs_set_aside"
    away.back = True
    _put_back_over_http(w, aside["job"])
    w.restart_leader(max_job_attempts=3, helper=away)  # put back for good: its attempts are gone from the store
    assert w.leader.task_state(w.task.task_id).records.attempts == {}
    assert list(w.collect().sums) == [1, 1, 2, 0]


def _put_back_over_http(w: World, job_id: str) -> None:
    """The operator's route: its token only, the body checked, the job put back."""
    from starlette.testclient import TestClient

    from ldp.aggregators.http import create_app
    from ldp.aggregators.task import b64
    from ldp.ingest.config import token_sha256

    app = TestClient(create_app(w.leader, operator_token_sha256=token_sha256("op"),
                                collector_token_sha256=token_sha256("coll")))
    url = f"/tasks/{b64(w.task.task_id)}/jobs/put_back"
    assert app.post(url, json={}, headers={"Authorization": "Bearer coll"}).status_code == 401
    for body in (b"[1]", b'{"jobs": "x"}', b'{"jobs": [1]}', b"not json", b'{"jobs": ["nosuch"]}'):
        r = app.post(url, content=body, headers={"Authorization": "Bearer op"})
        assert r.status_code == 400 and r.json()["code"] == "invalid_message", body
    r = app.post(url, json={"jobs": [job_id]}, headers={"Authorization": "Bearer op"})
    assert r.status_code == 200 and r.json() == {"put_back": [job_id]}
    assert w.leader.status()["tasks"][0]["set_aside"] == []


@pytest.mark.parametrize("point", ["leader_job_abandoning", "leader_job_halved", "helper_job_abandoned"])
def test_killed_while_splitting_counts_every_report_once(tmp_path: Path, point: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    class Killed(BaseException):
        pass

    def fault(name: str) -> None:
        if name == point:
            raise Killed

    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=16)
    values = [v % 4 for v in range(16)]
    bodies = [w.report(m) for m in values]
    w.leader.upload_many(w.task.task_id, bodies)
    w.leader.helper = _UnusableAnswers(w.helper, bad=bodies[3][:16])
    monkeypatch.setattr(crashpoints, "_fault", fault)
    with pytest.raises(Killed):
        w.leader.run_aggregation_jobs()
    monkeypatch.setattr(crashpoints, "_fault", None)
    w.restart_helper()
    w.restart_leader(helper=_UnusableAnswers(w.helper, bad=bodies[3][:16]))
    c = w.collect()
    expected = values[:3] + values[4:]
    assert list(c.sums) == [expected.count(v) for v in range(4)] and c.refused == {"helper_disagreed": 1}


def _configs(w: World, root: Path, extra: str) -> Path:
    from ldp.aggregators.config import save_keypair
    from ldp.aggregators.task import b64
    from ldp.web.secret_files import write_secret

    if not (root / "t.json").exists():
        w.task.save(root / "t.json")
        write_secret(root / "t.verify", b64(w.verify_key) + "\n")
        write_secret(root / "helper.token", "tok\n")
        save_keypair(root / "k.json", w.leader_key)
        save_keypair(root / "records.json", prio().HpkeKeypair.generate(4))
    (root / "leader.toml").write_text(
        f'role = "leader"\nstore = "store"\nhpke_key = "k.json"\n{extra}[peer]\nurl = "http://helper"\n'
        f'token_file = "helper.token"\n[collector]\ntoken_sha256 = "{"b" * 64}"\n'
        '[[tasks]]\nfile = "t.json"\nverify_key_file = "t.verify"\n')
    return root / "leader.toml"


def test_the_leaders_job_bounds_retention_and_records_key_come_from_its_config(tmp_path: Path) -> None:
    from ldp.aggregators.config import load_config
    from ldp.aggregators.service import build
    from ldp.errors import ConfigError
    from ldp.storage import open_store

    w = world(tmp_path / "w", params={"length": 4})
    root = tmp_path / "cfg"
    root.mkdir()
    path = _configs(w, root, 'job_bytes = 1048576\nmax_job_attempts = 4\njob_retention = 600\n'
                             'records_key = "records.json"\njobs_in_flight = 3\n')
    leader = build(load_config(path, "leader"), open_store(root / "store"), helper=w.helper)
    assert (leader.job_bytes, leader.max_job_attempts, leader.job_retention) == (1 << 20, 4, 600.0)
    assert leader.jobs_in_flight == 3
    assert leader.records_key.config.id == 4 and leader.keypair.config.id == w.leader_key.config.id
    for bad, message in (("job_bytes = 100\n", "job_bytes must be >= 65536"),
                         ("job_bytes = 134217728\n", "job_bytes must be <="),
                         ("max_job_attempts = 0\n", "max_job_attempts must be >= 1"),
                         ("job_retention = -1\n", "job_retention must be >= 0"),
                         ("jobs_in_flight = 0\n", "jobs_in_flight must be >= 1"),
                         ("jobs_in_flight = 65\n", "jobs_in_flight must be <= 64")):
        with pytest.raises(ConfigError, match=message):
            load_config(_configs(w, root, bad), "leader")


def test_reports_waiting_under_a_rotated_key_are_refused_with_their_code_and_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    w.leader.upload_many(w.task.task_id, [w.report(v) for v in (0, 1, 2)])
    w.leader_key = prio().HpkeKeypair.generate(9)  # the leader's key replaced while the reports wait in its store
    w.restart_leader()
    with caplog.at_level(logging.WARNING, logger="ldp.aggregators"):
        w.leader.run_aggregation_jobs()
    assert w.leader.status()["tasks"][0]["refused"] == {"hpke_unknown_config_id": 3}
    assert caplog.text.count("sealed to a key this leader no longer holds") == 3
