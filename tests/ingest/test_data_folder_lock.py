"""One ``ldp serve`` per data folder (issue 70, item 8): the OS lock of :mod:`ldp.ingest.datafolder` on
``DATA/serve.lock``, and the helper under it (:class:`ldp.jobs.filelock.FileLock`).

Real processes: a second ``ldp serve`` on a folder in use exits with status 3 naming the first (pid, host, start)
and writes nothing there; after the first is SIGKILLed a new one starts on the folder at once (the kernel dropped
the lock) and a batch sent before the kill is a duplicate after it; in replica mode too, before any claim.
In process: the lock excludes every other open of its file (a model checked by hypothesis), writes and removes the
holder's description, and dies with its process."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("uvicorn")
from test_ingest_process import bench, post, served  # noqa: F401  # served: its fixture, ldp serve on a port

from ldp.errors import DataFolderBusyError
from ldp.ingest.datafolder import HOLDER_FILE, LOCK_FILE, hold_data_folder
from ldp.jobs.filelock import FileLock

WAIT = 120.0
"""Generous: the machine is shared; every wait polls and ends as soon as its condition holds."""


def _serve(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m ldp serve`` on a free port, run until it exits (a refused start exits at once)."""
    return subprocess.run([sys.executable, "-P", "-m", "ldp", "serve", "--config", str(config),
                           "--port", str(bench.free_port()), *extra],
                          capture_output=True, text=True, timeout=WAIT)


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of what a second process would recover or write first: each app's segments and journal, and
    the lock's files (the running ingest service's own fold and counters change the rest by themselves)."""
    found = [*folder.glob("apps/*/segments/**/*"), *folder.glob("apps/*/journal/**/*"), *folder.glob("serve.*")]
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(found) if p.is_file()}


def _refusal(proc: subprocess.CompletedProcess[str], pid: int) -> str:
    """The one-line error of a refused start, checked: status 3, no traceback, the holder named."""
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("ldp serve: error: the data folder ") and "is in use by another process" in line, line
    assert f"pid {pid} on host {socket.gethostname()}" in line, line
    assert re.search(r"started \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line), line
    return line


# -- two real processes ----------------------------------------------------------------------------------------
def test_a_second_serve_on_the_folder_refuses_naming_the_first(served) -> None:  # noqa: F811
    server, token, tmp = served
    pool = bench.make_pool(bench.CollectionSpec.load(tmp / "spec.json"), 1, 2)
    assert post(server.port, pool[0], token, "b1")[0] == 200
    data = tmp / "data"
    before = _files(data)
    assert {k.split("/")[2] for k in before if k.startswith("apps/")} == {"segments", "journal"}
    holder = json.loads((data / HOLDER_FILE).read_text())
    assert holder["pid"] == server.proc.pid and holder["host"] == socket.gethostname()
    _refusal(_serve(tmp / "serve.toml"), server.proc.pid)
    assert _files(data) == before  # nothing written nor recovered by the refused process, its holder file kept
    status, doc = post(server.port, pool[0], token, "b1")  # the first still serves, and knows the batch
    assert status == 200 and doc["duplicate"] is True
    assert server.stop() in (0, -15)
    seg = data / "apps" / "demo" / "segments"
    stored = b"".join(p.read_bytes() for p in (seg / "closed").iterdir())
    assert sorted(stored.splitlines()) == sorted(pool[0].splitlines())  # 2 lines sent, 2 stored
    assert (data / LOCK_FILE).exists()  # kept: only the lock on it says whether the folder is in use


def test_after_kill_9_a_new_serve_starts_on_the_folder(served) -> None:  # noqa: F811
    server, token, tmp = served
    pool = bench.make_pool(bench.CollectionSpec.load(tmp / "spec.json"), 1, 2)
    assert post(server.port, pool[0], token, "b1")[0] == 200
    first = server.proc.pid
    server.kill()  # SIGKILL, waited for: no clean-up ran, its holder file is left behind
    assert json.loads((tmp / "data" / HOLDER_FILE).read_text())["pid"] == first
    server.start(timeout=WAIT)  # raises if the new process exits (refused) instead of becoming healthy
    assert server.proc.pid != first
    assert json.loads((tmp / "data" / HOLDER_FILE).read_text())["pid"] == server.proc.pid
    status, doc = post(server.port, pool[0], token, "b1")  # the device's retry after the crash
    assert status == 200 and doc["duplicate"] is True
    assert server.stop() in (0, -15)
    seg = tmp / "data" / "apps" / "demo" / "segments"
    stored = b"".join(p.read_bytes() for p in (seg / "closed").iterdir())
    assert sorted(stored.splitlines()) == sorted(pool[0].splitlines())


def test_the_lock_holds_in_replica_mode_before_the_claim(tmp_path: Path) -> None:
    """A replica keeps rejects, counters and its claim file in its data folder: a second process on it refuses
    (under another replica name, so no claim is in the way) before it claims a name or writes anything."""
    from ldp.ingest.claim import CLAIM_FILE
    from ldp.ingest.config import token_sha256

    (tmp_path / "spec.json").write_text(json.dumps(bench.SPEC_DOC))
    config = tmp_path / "replica.toml"
    config.write_text(f'data_dir = "data"\nreplica = "r1"\n[storage]\nurl = "shared"\n'
                      f'[apps.demo]\ntoken_sha256 = "{token_sha256("t" * 43)}"\nspecs = ["spec.json"]\n')
    with hold_data_folder(tmp_path / "data", command="a test"):
        line = _refusal(_serve(config, "--replica", "r2"), os.getpid())
        assert "a test, pid" in line
        assert not (tmp_path / "data" / CLAIM_FILE).exists()
        assert not (tmp_path / "shared").exists() or not list((tmp_path / "shared").rglob("*lease*"))
    assert not (tmp_path / "data" / HOLDER_FILE).exists()


# -- the helper, in process ------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=30))
def test_one_filelock_at_a_time_and_its_holder_file(ops: list[tuple[int, bool]]) -> None:
    """Four locks on one path, in one process, acquired and released in any order: one holds at most; a lock is
    acquired exactly when none holds; the holder file says who holds it, and is gone when nobody does."""
    with tempfile.TemporaryDirectory() as tmp:
        path, about = Path(tmp) / "x.lock", Path(tmp) / "x.holder.json"
        locks = [FileLock(path, about) for _ in range(4)]
        holder: int | None = None
        try:
            for i, take in ops:
                if take and not locks[i].held:
                    got = locks[i].acquire({"i": i})
                    assert got == (holder is None)
                    holder = i if got else holder
                elif not take:
                    locks[i].release()
                    holder = None if holder == i else holder
                assert [k for k, lock in enumerate(locks) if lock.held] == ([] if holder is None else [holder])
                assert (json.loads(about.read_text()) if about.exists() else None) == (
                    None if holder is None else {"i": holder})
        finally:
            for lock in locks:
                lock.release()


def test_a_filelock_refuses_a_second_acquire_and_keeps_its_file(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "a.lock")
    assert lock.acquire() and lock.holder() is None  # no holder file asked for
    with pytest.raises(RuntimeError, match="already held"):
        lock.acquire()
    lock.release()
    lock.release()  # a no-op
    assert (tmp_path / "a.lock").exists() and not lock.held


def test_a_filelock_dies_with_its_process(tmp_path: Path) -> None:
    path = tmp_path / "p.lock"
    code = ("import sys, time\nfrom ldp.jobs.filelock import FileLock\nlock = FileLock(sys.argv[1])\n"
            "print(lock.acquire(), flush=True)\ntime.sleep(600)\n")
    with subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "True"
            mine = FileLock(path)
            assert not mine.acquire()  # the child holds it
            child.send_signal(signal.SIGKILL)
            child.wait(WAIT)
            assert mine.acquire()  # the kernel dropped it with the process
            mine.release()
        finally:
            if child.poll() is None:
                child.kill()


def test_hold_data_folder_is_counted_within_a_process(tmp_path: Path) -> None:
    data = tmp_path / "new" / "data"
    first = hold_data_folder(data)  # the folder is made
    again = hold_data_folder(data / ".." / "data")  # the same folder by another path
    assert again is first and first.count == 2
    doc = json.loads((data / HOLDER_FILE).read_text())
    assert doc["pid"] == os.getpid() and doc["host"] == socket.gethostname() and doc["command"] == "ldp serve"
    other = FileLock(data / LOCK_FILE)  # another open of the file: as another process would
    first.release()
    assert not other.acquire()  # still held: one hold is left
    again.release()
    assert not (data / HOLDER_FILE).exists()
    assert other.acquire()
    other.release()


def test_busy_names_the_holder(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    other = FileLock(tmp_path / "data" / LOCK_FILE, tmp_path / "data" / HOLDER_FILE)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": "2026-01-31T12:00:00Z", "command": "ldp serve"}
    assert other.acquire(me)
    try:
        with pytest.raises(DataFolderBusyError) as info:
            hold_data_folder(tmp_path / "data")
        err = info.value
        assert (err.pid, err.host, err.started) == (os.getpid(), socket.gethostname(), "2026-01-31T12:00:00Z")
        assert f"pid {os.getpid()} on host {socket.gethostname()}, started 2026-01-31T12:00:00Z" in str(err)
        assert str(tmp_path / "data") in str(err)
    finally:
        other.release()
    hold_data_folder(tmp_path / "data").release()  # free again


def test_a_dead_holders_description_is_not_believed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A description left by a process that is gone (the next holder has not replaced it yet): waited for a moment,
    then the error says the holder is unknown instead of naming the dead one."""
    import ldp.ingest.datafolder as datafolder

    monkeypatch.setattr(datafolder, "HOLDER_WAIT_SECONDS", 0.2)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(WAIT)
    data = tmp_path / "data"
    data.mkdir()
    other = FileLock(data / LOCK_FILE)  # holds the lock, says nothing
    (data / HOLDER_FILE).write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(),
                                                "started": "2026-01-31T12:00:00Z"}))
    assert other.acquire()
    try:
        with pytest.raises(DataFolderBusyError, match="has not said which") as info:
            hold_data_folder(data)
        assert info.value.pid == 0 and str(dead.pid) not in str(info.value)
    finally:
        other.release()


def test_an_embedded_app_takes_the_lock_before_recovering(tmp_path: Path) -> None:
    """The app run by another server than ``ldp serve`` holds the folder too, from its start, before recovery;
    within one process it shares the hold ``ldp serve`` took."""
    from starlette.testclient import TestClient
    from test_metrics import make_config

    from ldp.ingest.app import create_app

    config = make_config(tmp_path)
    config.data_dir.mkdir()
    other = FileLock(config.data_dir / LOCK_FILE)  # as another process would hold it
    assert other.acquire()
    try:
        with pytest.raises(DataFolderBusyError, match="is in use by another process"), TestClient(create_app(config)):
            pass
        assert sorted(p.name for p in config.data_dir.iterdir()) == [LOCK_FILE]  # nothing recovered, made, written
    finally:
        other.release()
    with hold_data_folder(config.data_dir) as hold, TestClient(create_app(config)) as c:
        assert hold.count == 2 and c.get("/healthz").status_code == 200
    assert hold.count == 0 and other.acquire()
    other.release()
