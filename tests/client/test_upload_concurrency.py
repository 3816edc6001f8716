"""Issue 73, item 3: one upload at a time per state file, enforced. A client belongs to one thread (another thread
gets ThreadMisuseError); the clients of one state file in a process (one per thread) take turns under a lock kept
per file, so concurrent uploads send each batch once: POSTs = batches + retries, each report stored once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from test_uploader import TOKEN, Clock, FakeCollector, Sleeps, spec_doc

from ldp.client.runtime import TelemetryClient
from ldp.errors import ThreadMisuseError
from ldp.spec import CollectionSpec

THREADS, ROUNDS = 8, 25


@pytest.fixture
def collector():
    fake = FakeCollector(CollectionSpec.from_dict(spec_doc()))
    yield fake
    fake.close()


def open_client(path: Path) -> TelemetryClient:
    doc = spec_doc(interval=0, max_batch=7)
    doc["budget"] = {"per_window": 1000, "lifetime": 10000}
    return TelemetryClient(CollectionSpec.from_dict(doc), path, clock=Clock(), rng=None)


def hammer(path: Path, url: str) -> list:
    """8 threads, each with its own client on the state file at ``path``, 25 × (record + upload)."""
    results: list = []
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(t: int) -> None:
        try:
            with open_client(path) as client:
                start.wait()
                for i in range(ROUNDS):
                    client.record("color", "rgb"[(t + i) % 3])
                    results.append(client.upload(url, TOKEN, call_timeout=120, max_delay=0.0, sleep=Sleeps()))
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,), name=f"uploader-{t}") for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not any(th.is_alive() for th in threads)
    assert errors == []
    return results


def check(path: Path, fake: FakeCollector, results: list) -> None:
    reports = THREADS * ROUNDS
    batches = {r["batch_id"] for r in fake.requests}
    retries = len(fake.requests) - len(batches)  # a batch's POSTs after its first
    refused = sum(1 for r in fake.requests if r.get("refused"))
    assert retries == refused, f"{len(fake.requests)} POSTs for {len(batches)} batches, {refused} refused"
    assert len(fake.requests) <= len(batches) + refused
    # every report stored once: the ingest service's stored lines are the 200 reports
    assert len(fake.lines) == reports == sum(a["lines"] for a in fake.stored.values())
    assert sum(r.acknowledged for r in results) == reports
    assert sum(r.batches for r in results) == len(batches)
    with open_client(path) as client:
        assert client.pending() == []
        assert client.counts()["color"] == {"reports": reports, "pending": 0, "uploaded": reports, "discarded": 0}


def test_eight_threads_record_and_upload_each_batch_once(tmp_path, collector):
    path = tmp_path / "state.db"
    results = hammer(path, collector.url)
    check(path, collector, results)
    assert sum(len(r["lines"]) for r in collector.requests) == THREADS * ROUNDS  # each line sent once


def test_with_503s_posts_are_batches_plus_retries(tmp_path, collector):
    count = [0]
    original = collector.script

    class Every5th(list):  # the fake pops one action per POST: every 5th is a 503
        def pop(self, i: int = -1):
            count[0] += 1
            if count[0] % 5 == 0:
                collector.requests[-1]["refused"] = True
                return 503, {"Retry-After": "0"}, {"error": "busy"}
            return "ok"

        def __bool__(self) -> bool:
            return True

    collector.script = Every5th(original)
    path = tmp_path / "state.db"
    results = hammer(path, collector.url)
    assert any(r.get("refused") for r in collector.requests)
    check(path, collector, results)


def test_a_waiting_upload_stops_at_its_deadline_having_sent_nothing(tmp_path, collector):
    path = tmp_path / "state.db"
    entered, release = threading.Event(), threading.Event()
    first: list = []

    def slow_opener_upload() -> None:
        with open_client(path) as client:
            def sleep(_: float) -> None:  # the first POST gets a 503; its back-off waits for the test
                entered.set()
                release.wait(30)
            first.append(client.upload(collector.url, TOKEN, call_timeout=60, sleep=sleep))

    collector.script = [(503, {}, {"error": "busy"})]
    with open_client(path) as client:
        for i in range(3):
            client.record("color", "rgb"[i])
        t = threading.Thread(target=slow_opener_upload)
        t.start()
        assert entered.wait(30)
        second = client.upload(collector.url, TOKEN, call_timeout=0.2)
        assert (second.stopped, second.batches, second.acknowledged) == ("deadline", 0, 0)
        assert len(collector.requests) == 1
        release.set()
        t.join(30)
        assert (first[0].stopped, first[0].acknowledged) == ("empty", 3)
        after = client.upload(collector.url, TOKEN)  # its turn: nothing left
        assert (after.stopped, after.batches) == ("empty", 0)
    assert len(collector.requests) == 2 and len(collector.lines) == 3


def test_one_client_from_another_thread_is_refused_and_reentry_raises(tmp_path, collector):
    path = tmp_path / "state.db"
    with open_client(path) as client:
        client.record("color", "r")
        caught: list[BaseException] = []
        th = threading.Thread(target=lambda: caught.extend(_raises(lambda: client.upload(collector.url, TOKEN))))
        th.start()
        th.join()
        assert len(caught) == 1 and isinstance(caught[0], ThreadMisuseError)
        assert collector.requests == []

        inner: list[BaseException] = []

        def sleep(_: float) -> None:
            inner.extend(_raises(lambda: client.upload(collector.url, TOKEN)))

        collector.script = [(503, {}, {"error": "busy"})]
        result = client.upload(collector.url, TOKEN, sleep=sleep)
        assert len(inner) == 1 and type(inner[0]) is RuntimeError and "already uploading" in str(inner[0])
        assert result.acknowledged == 1 and len(collector.requests) == 2


def _raises(call) -> list[BaseException]:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001
        return [exc]
    return []
