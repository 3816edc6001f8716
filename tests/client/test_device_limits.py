"""On the device (issue 58; docs/client.md "On the device"): reads write nothing, the outbox is bounded, a store
with its state missing but traces left fails closed, and opting out stops collection and forgets the device.

Each promise is tested by breaking it: a query after which the file's bytes changed, a record past the cap that
charged anything, a restore that would open as a new device, a record after opting out, a memoized value that
kept its old permanent response after opting in, another client of the file that did not notice.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from test_client import EPS_INF, EPS_ONE, SPEC, Clock, open_client

from ldp.client import state
from ldp.client.runtime import DEFAULT_MAX_OUTBOX_BYTES, StateError, TelemetryClient
from ldp.errors import OptedOutError, OutboxFull
from ldp.privacy.accountant import PrivacyCost
from ldp.spec import CollectionSpec


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pending_bytes(client: TelemetryClient) -> int:
    return sum(len(i.line) + 1 for i in client.pending(limit=10**6))


# -- reads write nothing -------------------------------------------------------------------------------------------


def test_opening_and_every_query_leave_the_file_as_it_was(tmp_path: Path) -> None:
    with open_client(tmp_path) as client:
        client.record("color", "r")
        client.record("page", "a.example")
    path = tmp_path / "state.db"
    before = digest(path)
    assert not Path(f"{path}-wal").exists()  # closed cleanly: the WAL checkpointed and removed
    with open_client(tmp_path) as client:
        client.pending(), client.spent(), client.spent("page", "lifetime"), client.remaining(), client.counts()
        client.has_pending(), client.next_upload_at(), client.opted_out, client.current_window()
        wal = Path(f"{path}-wal")
        assert not wal.exists() or wal.stat().st_size == 0  # no frame written: no transaction changed a page
    assert digest(path) == before


def test_a_read_only_state_file_opens_and_answers_queries(tmp_path: Path) -> None:
    with open_client(tmp_path) as client:
        client.record("color", "r")
    path = tmp_path / "state.db"
    ro = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # what a query needs: reading, nothing else
    try:
        assert ro.execute("SELECT count(*) FROM ldp_client_outbox").fetchone()[0] == 1
    finally:
        ro.close()


# -- a bounded outbox ----------------------------------------------------------------------------------------------


def test_a_record_past_the_cap_is_refused_before_anything_is_charged(tmp_path: Path) -> None:
    spec = SPEC
    with open_client(tmp_path, spec=spec, max_outbox_bytes=400) as client:
        client.record("color", "r")
        client.record("flag", True)
        used, spent, counts = pending_bytes(client), client.spent(), client.counts()
        with pytest.raises(OutboxFull) as err:
            for _ in range(10):
                client.record("color", "g")
                used, spent, counts = pending_bytes(client), client.spent(), client.counts()
        assert err.value.cap == 400 and err.value.pending_bytes == used and used + err.value.needed > 400
        assert client.spent() == spent and client.counts() == counts  # nothing charged, nothing stored
        assert "upload to make room" in str(err.value)
        batch = client.pending()
        client.acknowledge([i.id for i in batch])  # uploaded: room again
        client.record("color", "b")


def test_record_many_is_all_or_nothing_at_the_cap(tmp_path: Path) -> None:
    with open_client(tmp_path, max_outbox_bytes=400) as client:
        with pytest.raises(OutboxFull) as err:
            client.record_many([("flag", True), ("flag", False), ("color", "r")])  # about 150 bytes each
        assert err.value.index is not None and err.value.index >= 1 and "nothing of the batch" in str(err.value)
        assert client.counts() == {} and client.spent() == PrivacyCost(0.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 2000), st.lists(st.sampled_from(["color", "flag"]), max_size=12))
def test_the_outbox_never_passes_its_cap(tmp_path_factory: pytest.TempPathFactory, cap: int,
                                         metrics: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("cap")
    value = {"color": "r", "flag": True}
    with open_client(tmp, Clock(), max_outbox_bytes=cap, rng=None) as client:
        for m in metrics:
            try:
                client.record(m, value[m])
            except OutboxFull as exc:
                assert exc.pending_bytes + exc.needed > cap
            except Exception as exc:  # the budget: a refusal of its own, before the cap
                assert type(exc).__name__ == "BudgetExceeded"
            assert pending_bytes(client) <= cap
        c = client.counts()
        assert sum(v["reports"] for v in c.values()) == sum(v["pending"] for v in c.values())


def test_the_cap_must_be_a_positive_int(tmp_path: Path) -> None:
    for bad in (0, -1, True, 1.5, None):
        with pytest.raises(ValueError, match="max_outbox_bytes"):
            open_client(tmp_path, max_outbox_bytes=bad)
    assert DEFAULT_MAX_OUTBOX_BYTES == 1 << 20


# -- fail closed ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("trace", ["-wal", "-journal"])
def test_a_missing_state_file_beside_its_traces_is_refused(tmp_path: Path, trace: str) -> None:
    path = tmp_path / "state.db"
    Path(f"{path}{trace}").write_bytes(b"left by a partial restore")
    with pytest.raises(StateError, match=f"missing but .*{trace}.* remain"):
        TelemetryClient(SPEC, path)
    assert not path.exists()  # nothing created: not a new device


@pytest.mark.parametrize("trace", ["-wal", "-journal"])
def test_a_new_file_created_by_another_process_between_the_looks_is_not_an_orphan(
        tmp_path: Path, trace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process creates the file, then its first journal, right after this process's first look: whatever
    the order of the looks, the file is found and the device is not refused (a CI run hit this window)."""
    path = tmp_path / "state.db"
    real_exists = os.path.exists
    looks: list[str] = []

    def exists(p: object) -> bool:
        found = real_exists(p)
        if not looks:  # the other process's first transaction lands just after this look
            path.write_bytes(b"")
            Path(f"{path}{trace}").write_bytes(b"")
        looks.append(str(p))
        return found

    monkeypatch.setattr(state.os.path, "exists", exists)
    state.refuse_orphan_traces(str(path))  # no StateError
    assert looks


# -- opting out ----------------------------------------------------------------------------------------------------


def test_opting_out_deletes_what_is_pending_and_stops_recording(tmp_path: Path) -> None:
    clock = Clock()
    with open_client(tmp_path, clock, rng=None) as client:
        client.record("color", "r")
        client.record("page", "a.example")
        old_secret, spent = client._encoder("page").secret, client.spent("page", "lifetime")
        assert not client.opted_out
        assert client.opt_out() == 2 and client.opted_out and client.opt_out() == 0  # idempotent
        assert client.pending() == [] and not client.has_pending() and client.next_upload_at() == float("inf")
        assert client.counts()["color"] == {"reports": 1, "pending": 0, "uploaded": 0, "discarded": 1}
        assert client.spent("page", "lifetime") == spent  # spent stays spent
        for call in (lambda: client.record("color", "g"), lambda: client.record_many([("flag", True)]),
                     lambda: client.cohort("page")):
            with pytest.raises(OptedOutError):
                call()
        assert client.spent("page", "lifetime") == spent
    db = sqlite3.connect(tmp_path / "state.db")
    try:
        meta = dict(db.execute("SELECT key, value FROM ldp_client_meta"))
        assert meta["secret"] == "" and meta["opted_out"] == "1"
        assert [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in (
            "ldp_client_outbox", "ldp_client_batch", "ldp_client_cohorts", "ldp_ledger_memo")] == [0, 0, 0, 0]
    finally:
        db.close()
    with open_client(tmp_path, clock, rng=None) as client:  # reopened: still opted out
        assert client.opted_out
        with pytest.raises(OptedOutError):
            client.record("flag", True)
        assert client.opt_in() and not client.opted_out and not client.opt_in()
        assert client._encoder("page").secret != old_secret  # a fresh device secret
        client.record("page", "a.example")  # its permanent response is new: charged afresh
        assert client.spent("page", "lifetime") == spent + PrivacyCost(EPS_ONE)
        assert client.spent("page", "lifetime").epsilon <= 2 * EPS_INF


def test_another_client_of_the_file_sees_the_opt_out_and_the_new_secret(tmp_path: Path) -> None:
    clock = Clock()
    a, b = open_client(tmp_path, clock, rng=None), open_client(tmp_path, clock, rng=None)
    try:
        b.record("page", "a.example")  # b's encoder is built with the first secret
        first = b._encoder("page").secret
        a.opt_out()
        with pytest.raises(OptedOutError):
            b.record("page", "a.example")
        a.opt_in()
        b.record("page", "b.example")  # b notices the new secret inside its transaction, and rebuilds
        assert b._encoder("page").secret != first and b._encoder("page").secret == a._encoder("page").secret
        assert b.counts()["page"] == {"reports": 2, "pending": 1, "uploaded": 0, "discarded": 1}
    finally:
        a.close()
        b.close()


def test_a_state_file_whose_marker_disagrees_with_its_secret_is_refused(tmp_path: Path) -> None:
    with open_client(tmp_path) as client:
        client.record("color", "r")
    db = sqlite3.connect(tmp_path / "state.db")
    db.execute("INSERT OR REPLACE INTO ldp_client_meta VALUES ('opted_out', '1')")
    db.commit()
    db.close()
    with pytest.raises(StateError, match="opt-out marker"):
        open_client(tmp_path)


# -- a full disk ---------------------------------------------------------------------------------------------------

_FULL_DISK = r"""
import contextlib, json, os, sys
sys.path[:0] = [sys.argv[2], os.path.join(sys.argv[2], "client")]
from test_client import SPEC, Clock
from ldp.client.runtime import TelemetryClient
from ldp.errors import LdpError
d = sys.argv[1]
path, clock, out = os.path.join(d, "state.db"), Clock(), {}
with TelemetryClient(SPEC, path, clock=clock) as c:
    c.record("color", "r")
    c.record("flag", True)
out["reserve_made"] = os.path.exists(path + ".reserve")
with open(os.path.join(d, "fill"), "ab", buffering=0) as fh:  # the disk filled by someone else, to the last byte
    for block in (4096, 1):
        with contextlib.suppress(OSError):
            while True:
                fh.write(bytes(block))
out["free_blocks"] = os.statvfs(d).f_bavail
with TelemetryClient(SPEC, path, clock=clock) as c:  # opens, uploads and acknowledges, on a full disk
    items = c.pending()
    out["acknowledged"] = c.acknowledge([i.id for i in items])
    out["pending_after"] = c.has_pending()
os.remove(os.path.join(d, "fill"))
with TelemetryClient(SPEC, path, clock=clock) as c:
    clock.t += 7200
    c.record("color", "g")  # room again: recording resumes, and the reserve is made again
out["reserve_again"] = os.path.exists(path + ".reserve")
print(json.dumps(out))
"""


def _unshare_works() -> bool:
    import shutil
    import subprocess

    return shutil.which("unshare") is not None and subprocess.run(["unshare", "-rm", "true"],
                                                                  capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs user and mount namespaces (unshare -rm) for a private tmpfs")
def test_on_a_full_disk_the_app_still_opens_uploads_and_acknowledges(tmp_path: Path) -> None:
    """A 1 MiB tmpfs filled to the last byte by another file: the state file opens, its reports are read and
    acknowledged (the reserve's room released for SQLite), and recording resumes once there is room again."""
    import subprocess
    import sys

    from support import ROOT

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = (f"mount -t tmpfs -o size=1m tmpfs {mnt} && exec {sys.executable} -c '{_FULL_DISK}' {mnt} "
              f"{ROOT / 'tests'}")
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out == {"reserve_made": True, "free_blocks": 0, "acknowledged": 2, "pending_after": False,
                   "reserve_again": True}


# -- opting out, killed at random moments --------------------------------------------------------------------------

# The child loads the spec from a file and imports nothing of the tests (importing test_client brought pytest in:
# two thirds of each child's start-up, twelve times over).
_STORM = r"""
import sys
sys.path.insert(0, sys.argv[2])
from ldp.client.runtime import TelemetryClient
from ldp.errors import BudgetExceeded, OptedOutError
now = float(sys.argv[3])
client = TelemetryClient(sys.argv[4], sys.argv[1], clock=lambda: now)
i = 0
while True:
    try:
        client.record("page", f"v{i % 3}.example")
        client.record("flag", i % 2 == 0)
    except (BudgetExceeded, OptedOutError):
        pass
    if i % 3 == 0:
        client.opt_out()
    elif i % 3 == 1:
        client.opt_in()
    print(i, flush=True)
    i += 1
"""


def test_opting_out_and_in_killed_at_random_moments_keeps_the_file_whole(tmp_path: Path) -> None:
    """A process recording, opting out and in, SIGKILLed 12 times at random moments: every time the file opens,
    the counts add up, an opted-out device holds no report, cohort nor memoized record, and the budget spent never
    goes down."""
    import random
    import signal
    import subprocess
    import sys
    import time

    from support import ROOT
    from test_client import T0, spec_doc

    script = tmp_path / "storm.py"
    script.write_text(_STORM)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec_doc()))
    assert CollectionSpec.load(spec_path).fingerprint == SPEC.fingerprint  # the child's spec is SPEC
    path = tmp_path / "state.db"
    rng, spent = random.Random(58), 0.0
    for round_ in range(12):
        child = subprocess.Popen([sys.executable, str(script), str(path), str(ROOT), repr(T0 + round_),
                                  str(spec_path)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        for _ in range(rng.randrange(1, 6)):
            assert child.stdout.readline(), child.stderr.read() if child.stderr else ""
        time.sleep(rng.random() * 0.02)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
        with TelemetryClient(SPEC, path, clock=Clock(T0 + round_)) as client:
            counts = client.counts()
            for c in counts.values():
                assert c["reports"] == c["pending"] + c["uploaded"] + c["discarded"]
            now = client.spent(period="lifetime").epsilon
            assert now >= spent - 1e-12
            spent = now
            if client.opted_out:
                assert not client.has_pending()
        db = sqlite3.connect(path)
        try:
            meta = dict(db.execute("SELECT key, value FROM ldp_client_meta"))
            if meta.get("opted_out") == "1":
                assert [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in (
                    "ldp_client_outbox", "ldp_client_cohorts", "ldp_ledger_memo")] == [0, 0, 0]
        finally:
            db.close()
