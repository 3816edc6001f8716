"""One ``ldp shuffle`` at a time, by the store itself (issue 56): k runs at once over the same chunks, on a folder
and on a real S3-compatible server, count every report exactly once and the others are refused naming the holder;
a run that loses its lease (paused past it) writes nothing more and the next run finishes its work; a run SIGSTOPped
past its lease and woken after another run took over writes nothing more; a store or app that is not there is an
error, not "nothing to mix"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import call_main
from test_stage import DAY, W0, batch, outputs, scenario

from ldp.errors import LeaseHeldError, LeaseLostError
from ldp.shuffler import shuffle_app
from ldp.shuffler.stage import shuffler_lease
from ldp.storage import Store, open_store
from ldp.storage.lease import Lease
from ldp.storage.local import LocalStore

NOW = W0 + 2 * DAY + 400


@pytest.fixture(params=["local", "s3"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any] | None]:
    if request.param == "local":
        return str(tmp_path / "store"), None
    s3 = request.getfixturevalue("s3")
    return f"{s3.bucket('ldp-shuffle-lease')}/t{time.monotonic_ns()}", s3.options()


class Gated:
    """A store that holds a run's first record write until every other run was refused (so the k runs overlap
    for sure, whatever the machine's load)."""

    def __init__(self, inner: Store, refused: threading.Semaphore, others: int) -> None:
        self.inner, self.url, self.refused, self.others = inner, inner.url, refused, others

    def create(self, key: str, data: bytes) -> bool:
        if "/shuffler/runs/" in key:
            for _ in range(self.others):
                assert self.refused.acquire(timeout=120), "the other runs were never refused"
        return self.inner.create(key, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("k", [2, 4])
def test_k_runs_at_once_count_every_report_once_and_the_others_are_refused(
        url: tuple[str, dict[str, Any] | None], k: int) -> None:
    expected = scenario(open_store(*url))
    refused = threading.Semaphore(0)
    results: list[Any] = [None] * k
    barrier = threading.Barrier(k)

    def run(i: int) -> None:
        store = open_store(*url)  # each its own client, as separate processes would have
        barrier.wait()
        try:
            results[i] = shuffle_app(Gated(store, refused, k - 1), "demo", now=NOW, min_reports=1)  # type: ignore[arg-type]
        except LeaseHeldError as exc:
            results[i] = exc
            refused.release()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ran = [r for r in results if not isinstance(r, LeaseHeldError)]
    assert len(ran) == 1 and ran[0].run_id is not None, results
    assert all("is held by" in str(r) and "pid" in str(r) for r in results if isinstance(r, LeaseHeldError))
    store = open_store(*url)
    got = Counter(ln for data in outputs(store).values() for ln in data.splitlines())
    assert got == expected and store.list("apps/demo/incoming/") == []
    again = shuffle_app(store, "demo", now=NOW + 60, min_reports=1)
    assert again.run_id is None  # released: the next run takes it at once


def test_a_second_command_is_refused_naming_the_holder(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    scenario(store)
    holder = shuffler_lease(store, "demo", ttl=600)
    holder.acquire()
    code, out, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "s"), "--app", "demo"])
    assert code == 3 and out == "" and "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith("ldp shuffle: error: the shuffler of demo lease at ")
    assert f"host {holder.host}, pid {os.getpid()}" in last and "expires at " in last and "unless it renews" in last
    assert store.list("apps/demo/shuffler/runs/") == [] and len(store.list("apps/demo/incoming/")) == 3
    holder.release()
    code, out, _ = call_main(["shuffle", "--min-reports", "1",
                              "--store", str(tmp_path / "s"), "--app", "demo", "--grace", "0"])
    assert code == 0 and "run " in out


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def pausing(monkeypatch: pytest.MonkeyPatch, mono: Clock, at: int) -> None:
    """The run pauses (its process stopped past the lease) as it mixes its ``at``-th segment, just before writing
    it."""
    from ldp.shuffler import local_engine

    left, shuffle = [at], local_engine.shuffle_lines

    def slow(data: bytes) -> Any:
        left[0] -= 1
        if left[0] == 0:
            mono.t += 1000  # a pause far past the lease
        return shuffle(data)

    monkeypatch.setattr(local_engine, "shuffle_lines", slow)


def test_a_run_that_loses_its_lease_writes_nothing_more_and_the_next_finishes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "s")
    expected = scenario(store)
    mono = Clock(100.0)
    lease = Lease(store, "apps/demo/shuffler/lease/", "shuffler of demo", ttl=30, monotonic=mono)
    with pytest.raises(LeaseLostError, match="not renewed within"):
        pausing(monkeypatch, mono, 2)
        shuffle_app(store, "demo", now=NOW, lease=lease, min_reports=1)
    assert len(outputs(store)) == 1  # the first window's segment; not the second, nor anything after it
    assert store.list("apps/demo/shuffler/seen/") == [] and len(store.list("apps/demo/incoming/")) == 3
    (rec,) = [json.loads(store.get(k)) for k in store.list("apps/demo/shuffler/runs/")]
    assert rec["state"] == "started" and rec["fence"] == 1
    with pytest.raises(LeaseHeldError):  # the lost lease was not released: it expires by itself
        shuffle_app(store, "demo", now=NOW + 60, min_reports=1)
    wall = Clock(time.time() + 31)
    later = Lease(store, "apps/demo/shuffler/lease/", "shuffler of demo", clock=wall)
    again = shuffle_app(store, "demo", now=NOW + 60, lease=later, min_reports=1)
    assert again.resumed == [rec["id"]] and again.run_id is None
    got = Counter(ln for data in outputs(store).values() for ln in data.splitlines())
    assert got == expected and store.list("apps/demo/incoming/") == []
    (done,) = [json.loads(store.get(k)) for k in store.list("apps/demo/shuffler/runs/")]
    assert done["state"] == "closed" and done["fence"] == 1 and done["finished_fence"] == 2
    assert all(k.endswith("-f1.jsonl") for k in outputs(store))  # planned under token 1


STOPPED = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from ldp.shuffler import shuffle_app
    from ldp.storage import open_store
    from ldp.storage.lease import FencedStore
    create, flag = FencedStore.create, Path(sys.argv[2])

    def slow(self, key, data):
        if "/segments/closed/" in key:
            print("mixing", flush=True)
            while not flag.exists():  # the test stops this process here, then wakes it
                time.sleep(0.02)
        return create(self, key, data)

    FencedStore.create = slow
    shuffle_app(open_store(sys.argv[1]), "demo", now=float(sys.argv[3]), lease_seconds=2, min_reports=1)
""")


def test_a_run_stopped_past_its_lease_and_woken_after_a_takeover_writes_nothing_more(tmp_path: Path) -> None:
    """A real pause (SIGSTOP): the stopped run's lease expires, another run takes over and finishes the work; the
    stopped run, woken, fails with the lease lost before its next write."""
    root = tmp_path / "s"
    store = LocalStore(root)
    expected = scenario(store)
    flag = tmp_path / "wake"
    proc = subprocess.Popen([sys.executable, "-c", STOPPED, str(root), str(flag), str(NOW)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "mixing"
        proc.send_signal(signal.SIGSTOP)
        lease = shuffler_lease(store, "demo", ttl=2)
        deadline = time.monotonic() + 60
        while True:  # until the stopped run's lease expires
            try:
                again = shuffle_app(store, "demo", now=NOW + 60, lease=lease, min_reports=1)
                break
            except LeaseHeldError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert len(again.resumed) == 1
        flag.touch()
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0 and "LeaseLostError" in err and "not renewed within" in err
    got = Counter(ln for data in outputs(store).values() for ln in data.splitlines())
    assert got == expected and store.list("apps/demo/incoming/") == []
    assert [json.loads(store.get(k))["state"] for k in store.list("apps/demo/shuffler/runs/")] == ["closed"]


def test_a_store_or_app_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    code, out, err = call_main(["shuffle", "--min-reports", "1",
                                "--store", str(tmp_path / "no" / "such"), "--app", "demo"])
    assert code == 2 and "no store at file://" in err and "no such folder" in err and out == ""
    assert not (tmp_path / "no").exists()  # nothing created where the typo points
    (tmp_path / "empty").mkdir()
    code, _, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "empty"), "--app", "demo"])
    assert code == 2 and "holds nothing of app 'demo'" in err and "it holds no app at all" in err
    store = LocalStore(tmp_path / "other")
    store.put("apps/prod/incoming/r1/x.chunk", b"")
    code, _, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "other"), "--app", "demo"])
    assert code == 2 and "a wrong --store or --app? apps there: prod" in err


def test_a_bucket_that_is_not_there_is_an_error(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from support.s3_server import CREDENTIALS

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    args = ["--store-option", f"endpoint_url={s3.endpoint}", "--app", "demo"]
    code, _, err = call_main(["shuffle", "--min-reports", "1", "--store", "s3://no-such-bucket-ldp/prod", *args])
    assert code == 2 and "no bucket at s3://no-such-bucket-ldp/prod: create it first" in err
    code, _, err = call_main(["shuffle", "--min-reports", "1", "--store", f"{s3.bucket('ldp-empty')}/prod", *args])
    assert code == 2 and "holds nothing of app 'demo'" in err


def test_a_window_is_mixed_once_though_a_stale_holder_writes_its_segment(tmp_path: Path) -> None:
    """Segments are named in the run's record and created if absent: a stale holder that passed its check just
    before losing the lease cannot add a second copy of a window the new holder wrote."""
    store = LocalStore(tmp_path / "s")
    store.put("apps/demo/incoming/r1/a.chunk", b"")
    expected = scenario(store)
    store.delete("apps/demo/incoming/r1/a.chunk")
    run = shuffle_app(store, "demo", now=NOW, min_reports=1)
    (rec,) = [json.loads(store.get(k)) for k in store.list("apps/demo/shuffler/runs/")]
    name = next(iter(v for v in rec["outputs"].values() if v))
    assert store.create(f"apps/demo/segments/closed/{name}", b"stale\n") is False  # what a stale holder would do
    got = Counter(ln for data in outputs(store).values() for ln in data.splitlines())
    assert got == expected and run.run_id == rec["id"]
    assert batch("a", 3).lines.splitlines()[0] in got
