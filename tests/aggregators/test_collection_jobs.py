"""DAP-09's collection flow at the leader (ldp/aggregators/collection_jobs.py; issue 85, item 2): a collection job
created, polled (202 while its window is open, then the Collection), deleted; one window per batch; the job
recorded; the same release for every job of a window; the collector's figures from the leader's status, or from
the task alone for a leader without one."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from two_aggregators import T0, WINDOW, world

from ldp.aggregators.codec import MEDIA_TYPES, Interval
from ldp.aggregators.collect import collection_document, open_collection
from ldp.aggregators.collection_messages import Collection, CollectionReq
from ldp.aggregators.http import create_app
from ldp.aggregators.task import Noise, b64
from ldp.ingest.config import new_token, token_sha256

COLLECTOR = new_token()
AUTH = {"Authorization": f"Bearer {COLLECTOR}"}
REQ = {**AUTH, "Content-Type": MEDIA_TYPES["CollectionReq"]}


@pytest.fixture
def app(tmp_path: Path) -> Any:
    from starlette.testclient import TestClient

    w = world(tmp_path, params={"length": 4}, noise=Noise("laplace", 1.0), min_batch_size=2, seed=3)
    return w, TestClient(create_app(w.leader, collector_token_sha256=token_sha256(COLLECTOR)))


def _url(w: Any, job: bytes | None = None) -> str:
    return f"/tasks/{w.task.id_text}/collection_jobs/{b64(job or secrets.token_bytes(16))}"


def _req(start: int = T0, duration: int = WINDOW) -> bytes:
    return CollectionReq(Interval(start, duration)).to_bytes()


def test_a_window_is_collected_through_a_collection_job(app: Any) -> None:
    w, leader = app
    for value in (0, 1, 1, 3):
        w.leader.upload(w.task.task_id, w.report(value))
    url = _url(w)
    assert leader.put(url, content=_req(), headers=REQ).status_code == 201
    assert leader.put(url, content=_req(), headers=REQ).status_code == 201  # the same request again
    early = leader.post(url, headers=AUTH)
    assert early.status_code == 202 and 0 < int(early.headers["Retry-After"]) <= 60
    w.now = T0 + WINDOW + 1
    done = leader.post(url, headers=AUTH)
    assert done.status_code == 200 and done.headers["content-type"] == MEDIA_TYPES["Collection"]
    coll = Collection.from_bytes(done.content)
    assert (coll.report_count, coll.interval) == (4, Interval(T0, WINDOW))
    status = leader.get("/status", headers=AUTH).json()
    opened = open_collection(w.task, w.collector_key, collection_document(w.task, done.content, status))
    assert opened.report_count == 4 and opened.releases == 1
    assert all(abs(s - t) < 60 for s, t in zip(opened.sums, [1, 2, 0, 1], strict=True))  # Laplace(1) on each side
    other = _url(w)  # another job of the same window: the same release, no fresh noise
    leader.put(other, content=_req(), headers=REQ)
    assert leader.post(other, headers=AUTH).content == done.content
    assert leader.delete(url, headers=AUTH).status_code == 204
    gone = leader.post(url, headers=AUTH)
    assert gone.status_code == 404 and gone.json()["code"] == "unrecognized_collection_job"


def test_a_leader_without_a_status_gives_the_release_but_not_the_figures_over_releases(app: Any) -> None:
    w, leader = app
    for value in (0, 2):
        w.leader.upload(w.task.task_id, w.report(value))
    w.now = T0 + WINDOW + 1
    url = _url(w)
    leader.put(url, content=_req(), headers=REQ)
    doc = collection_document(w.task, leader.post(url, headers=AUTH).content, None)
    opened = open_collection(w.task, w.collector_key, doc)
    assert opened.release_epsilon == {"epsilon": 1.0, "delta": 0.0}  # one release of Laplace(1): from the task
    assert opened.cumulative_epsilon is None and opened.cumulative_device_epsilon is None


@pytest.mark.parametrize(("start", "duration"), [(T0, WINDOW - 1), (T0 + 1, WINDOW), (T0 - WINDOW, 2 * WINDOW)])
def test_a_batch_interval_other_than_one_window_is_refused(app: Any, start: int, duration: int) -> None:
    w, leader = app
    r = leader.put(_url(w), content=_req(start, duration), headers=REQ)
    assert r.status_code == 400 and r.json()["code"] == "batch_invalid"


def test_refusals(app: Any) -> None:
    w, leader = app
    url = _url(w)
    assert leader.put(url, content=_req(), headers=AUTH).status_code == 415  # no DAP media type
    assert leader.put(url, content=_req(), headers={"Content-Type": MEDIA_TYPES["CollectionReq"]}).status_code == 401
    assert leader.put(url, content=b"x", headers=REQ).json()["code"] == "invalid_message"
    bad_id = f"/tasks/{w.task.id_text}/collection_jobs/short"
    assert leader.put(bad_id, content=_req(), headers=REQ).json()["code"] == "invalid_message"
    assert leader.put(url, content=_req(), headers=REQ).status_code == 201
    mismatch = leader.put(url, content=_req(T0 + WINDOW), headers=REQ)
    assert mismatch.status_code == 409 and mismatch.json()["code"] == "job_mismatch"
    param = CollectionReq(Interval(T0, WINDOW), b"p").to_bytes()
    assert leader.put(_url(w), content=param, headers=REQ).json()["code"] == "invalid_message"
    assert leader.post(_url(w), headers=AUTH).status_code == 404


def test_a_job_survives_the_leaders_restart(app: Any) -> None:
    w, leader = app
    w.leader.upload(w.task.task_id, w.report(1))
    w.leader.upload(w.task.task_id, w.report(2))
    url = _url(w)
    leader.put(url, content=_req(), headers=REQ)
    w.restart_leader()
    from starlette.testclient import TestClient

    again = TestClient(create_app(w.leader, collector_token_sha256=token_sha256(COLLECTOR)))
    w.now = T0 + WINDOW + 1
    assert Collection.from_bytes(again.post(url, headers=AUTH).content).report_count == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=64))
def test_any_request_body_is_refused_with_a_code(app: Any, body: bytes) -> None:
    w, leader = app
    r = leader.put(_url(w), content=body, headers=REQ)
    assert r.status_code in (201, 400), r.text
    if r.status_code == 400:
        assert r.json()["code"] in ("invalid_message", "batch_invalid")


class _Polled:
    """A leader's answers to the collector's requests, in order (``_exchange`` stood in), and a clock that the
    collector's sleeps move."""

    def __init__(self, answers: list[tuple[int, dict[str, str]]]) -> None:
        self.answers, self.calls, self.now, self.slept = answers, [], 0.0, []

    def exchange(self, method: str, url: str, body: Any, token: Any, content_type: str, timeout: float,
                 token_header: str = "authorization") -> tuple[int, bytes, dict[str, str]]:
        self.calls.append((method, token_header))
        if method == "PUT":
            return 201, b"", {}
        status, headers = self.answers.pop(0)
        return status, b"collection" if status == 200 else b"", headers

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _client(polled: _Polled, monkeypatch: pytest.MonkeyPatch, wait: float) -> Any:
    from ldp.aggregators import http

    monkeypatch.setattr(http, "_exchange", polled.exchange)
    return http.LeaderClient("http://leader.example", "tok", token_header="dap-auth-token", wait=wait,
                             sleep=polled.sleep, clock=lambda: polled.now)


def test_the_collector_polls_a_pending_collection_job_as_the_leader_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A leader that aggregates asynchronously (Janus) answers 202 until the job is done: the collector polls
    after each Retry-After (1 s when none is named), sending its token as the configured header."""
    polled = _Polled([(202, {"Retry-After": "2"}), (202, {}), (200, {})])
    assert _client(polled, monkeypatch, wait=60).collect(bytes(32), T0, WINDOW) == b"collection"
    assert polled.slept == [2.0, 1.0]
    assert polled.calls == [("PUT", "dap-auth-token")] + [("POST", "dap-auth-token")] * 3


@pytest.mark.parametrize(("answers", "wait", "slept"), [
    ([(202, {"Retry-After": "3600"})], 60, []),  # an ldp leader whose window has not ended: at once
    ([(202, {"Retry-After": "x"})] * 6, 5, [1.0] * 5),  # no usable Retry-After: 1 s polls for the wait, then out
])
def test_the_collector_stops_polling_when_the_leader_asks_to_wait_past_its_wait(
        monkeypatch: pytest.MonkeyPatch, answers: list[tuple[int, dict[str, str]]], wait: float,
        slept: list[float]) -> None:
    from ldp.errors import AggregatorError

    polled = _Polled(list(answers))
    with pytest.raises(AggregatorError) as exc:
        _client(polled, monkeypatch, wait=wait).collect(bytes(32), T0, WINDOW)
    assert exc.value.code == "window_open" and polled.slept == slept
