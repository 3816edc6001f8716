"""Every stale write of a shuffler run is harmless (issue 70, item 1).

For each kind of store write a run makes — its run record (created, then ``done``, then ``closed``), a segment or a
Dask part, a seen record, a chunk delete, the Dask engine's staging record and window markers — a run is paused
*after* its lease check and *before* that write (a process stopped there, or a request still in the client's
retries when the lease expires); a second run takes the lease over and finishes; the first wakes and its write
lands. Then the shuffler runs twice more. Every report is in the segments exactly once, the later runs succeed,
and the stale run fails naming the lost lease. Both engines, over a folder and over a real S3-compatible server.

The run record's creation is the one write that did harm before (a ``started`` record naming chunks the taker had
consumed stopped every later run): such a record is recognised as superseded and closed as ``void``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_shuffle_lease import Clock
from test_stage import DAY, W0, outputs, scenario

from ldp.errors import LeaseLostError
from ldp.shuffler import shuffle_app
from ldp.storage import Store, open_store
from ldp.storage.lease import Lease

NOW = W0 + 2 * DAY + 400
RUNS, SEGMENTS = "/shuffler/runs/", "/segments/closed/"


def _record_state(state: str) -> Callable[[str, str, bytes], bool]:
    return lambda op, key, data: op == "put" and RUNS in key and json.loads(data)["state"] == state


KINDS: dict[str, Callable[[str, str, bytes], bool]] = {
    "run record created": lambda op, key, data: op == "create" and RUNS in key,
    "run record done": _record_state("done"),
    "run record closed": _record_state("closed"),
    "segment created": lambda op, key, data: op == "create" and SEGMENTS in key,
    "seen record": lambda op, key, data: op == "put" and "/shuffler/seen/" in key,
    "chunk deleted": lambda op, key, data: op == "delete" and "/incoming/" in key,
}
DASK_KINDS: dict[str, Callable[[str, str, bytes], bool]] = {
    **KINDS,
    "staging record": lambda op, key, data: op == "put" and "/shuffler/staging/" in key and key.endswith("/run.json"),
    "window marker": lambda op, key, data: op == "put" and "/shuffler/staging/" in key and "/windows/" in key,
}


class Paused:
    """``inner`` whose first write matching ``kind`` waits (the lease already checked above it) until
    :attr:`wake` is set, then lands; :attr:`paused` is set when it starts waiting."""

    def __init__(self, inner: Store, kind: Callable[[str, str, bytes], bool]) -> None:
        self.inner, self.kind, self.url = inner, kind, inner.url
        self.paused, self.wake, self.hit = threading.Event(), threading.Event(), False
        self.lock = threading.Lock()

    def _gate(self, op: str, key: str, data: bytes = b"") -> None:
        with self.lock:
            first = not self.hit and self.kind(op, key, data)
            self.hit = self.hit or first
        if first:
            self.paused.set()
            assert self.wake.wait(300), "never woken"

    def put(self, key: str, data: bytes) -> None:
        self._gate("put", key, data)
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        self._gate("create", key, data)
        return self.inner.create(key, data)

    def delete(self, key: str) -> None:
        self._gate("delete", key)
        self.inner.delete(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _lease(store: Store, **clocks: Any) -> Lease:
    return Lease(store, "apps/demo/shuffler/lease/", "shuffler of demo", ttl=30, **clocks)


def stale_write_case(store: Store, kind: Callable[[str, str, bytes], bool], **run: Any) -> dict[str, Any]:
    """The scenario with one run paused before a write of ``kind`` while another takes over and finishes, then two
    more runs; what happened (the stale run's error, the runs' records, the segments' lines, what was expected)."""
    expected = scenario(store)
    mono = Clock(1000.0)
    paused = Paused(store, kind)
    stale: dict[str, Any] = {}

    def first() -> None:
        try:
            stale["run"] = shuffle_app(paused, "demo", now=NOW, lease=_lease(store, monotonic=mono), min_reports=1,
                                       **run)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread
            stale["error"] = exc

    thread = threading.Thread(target=first)
    thread.start()
    assert paused.paused.wait(300), f"the first run made no such write (it ended: {stale})"
    mono.t += 1000  # its process stopped far past the lease (its own clock goes on while it is stopped)
    taker = _lease(store, clock=lambda: time.time() + 1000)  # the stopped holder's lease has expired meanwhile
    taken = shuffle_app(store, "demo", now=NOW + 60, lease=taker, min_reports=1, **run)
    paused.wake.set()  # the write lands now
    thread.join(300)
    later = [shuffle_app(store, "demo", now=NOW + 120 + 60 * i, min_reports=1, **run) for i in range(2)]
    return {"stale": stale, "taken": taken, "later": later, "expected": expected,
            "got": Counter(ln for data in outputs(store).values() for ln in data.splitlines()),
            "records": [json.loads(store.get(k)) for k in store.list("apps/demo/shuffler/runs/")]}


def check(case: dict[str, Any], store: Store) -> None:
    assert isinstance(case["stale"].get("error"), LeaseLostError), case["stale"]
    assert "shuffler of demo lease" in str(case["stale"]["error"])
    assert case["got"] == case["expected"]  # every report exactly once
    assert store.list("apps/demo/incoming/") == [] and store.list("apps/demo/shuffler/staging/") == []
    assert all(r["state"] in ("closed", "void") for r in case["records"]), case["records"]
    assert case["later"][1].run_id is None and not case["later"][1].voided  # the second later run: nothing left


@pytest.fixture(params=["local", "s3"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any] | None]:
    if request.param == "local":
        return str(tmp_path / "store"), None
    s3 = request.getfixturevalue("s3")
    return f"{s3.bucket('ldp-stale-writes')}/t{time.monotonic_ns()}", s3.options()


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_stale_write_of_the_local_engine_is_harmless(url: tuple[str, dict[str, Any] | None],
                                                           kind: str) -> None:
    store = open_store(*url)
    case = stale_write_case(store, KINDS[kind])
    check(case, store)
    voided = [r for r in case["records"] if r["state"] == "void"]
    if kind == "run record created":  # the stale record landed after the taker consumed its chunks
        (rec,) = voided
        assert rec["fence"] < rec["void"]["fence"] and "chunks are gone" in rec["void"]["reason"]
        assert case["later"][0].voided == [rec["id"]]
    else:
        assert voided == []


def test_a_superseded_record_with_every_chunk_still_there_is_resumed_not_voided(tmp_path: Path) -> None:
    """A record of an older fence whose chunks are all there is an interrupted run (chunks go only once it is
    done): resumed, never voided."""
    from ldp.shuffler.stage import superseded

    store = open_store(tmp_path / "s")
    scenario(store)
    chunks = store.list("apps/demo/incoming/")
    rec = {"fence": 1, "chunks": chunks}
    fenced = type("F", (), {"fence": 2, "exists": store.exists})()
    assert superseded(fenced, "demo", rec) is None  # type: ignore[arg-type]
    store.delete(chunks[0])
    assert "1 of its 3 chunks are gone" in str(superseded(fenced, "demo", rec))  # type: ignore[arg-type]
    same = type("F", (), {"fence": 1, "exists": store.exists})()
    assert superseded(same, "demo", rec) is None  # type: ignore[arg-type]  # not older: never void


distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler() -> Any:
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit="1GiB",
                                  dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


DASK_ON_S3 = ("run record created", "segment created", "staging record", "window marker")
"""The kinds also tried on S3 with the Dask engine (the others write through the same code as the local engine's,
tried on S3 above): a Dask run costs seconds, and the suite's time is shared."""


@pytest.mark.parametrize("kind, where", [(k, "local") for k in DASK_KINDS] + [(k, "s3") for k in DASK_ON_S3])
def test_every_stale_write_of_the_dask_engine_is_harmless(kind: str, where: str, scheduler: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    if where == "local":
        store = open_store(tmp_path / "store")
    else:
        s3 = request.getfixturevalue("s3")
        store = open_store(f"{s3.bucket('ldp-stale-writes')}/d{time.monotonic_ns()}", s3.options())
    case = stale_write_case(store, DASK_KINDS[kind], engine="dask", scheduler=scheduler)
    check(case, store)
    assert [r["state"] for r in case["records"]].count("void") == (kind == "run record created")
