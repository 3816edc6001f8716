"""The ingest service's storage under trouble: a full disk (a real tmpfs, and injected failures of ftruncate), bounded
rejects, multi-member gzip, and the journal's compaction past the dedup horizon."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support import ROOT

from ldp.errors import IngestError
from ldp.ingest import applog as applog_module, segments as segments_module
from ldp.ingest.applog import AppLog, Batch, Stored
from ldp.ingest.config import ConfigError, Limits, parse_config, token_sha256
from ldp.ingest.rejects import PREFIX_BYTES, RejectKeeper, find_rejects
from ldp.ingest.upload import MAX_GZIP_MEMBERS, BatchCounts, Gunzip, check_lines
from ldp.spec import CollectionSpec

SPEC = ROOT / "examples" / "collection.json"
SPECS = {(s := CollectionSpec.load(SPEC)).fingerprint: s}
LINES = (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
GOOD = [ln for ln in LINES if ln.startswith(b'{"spec":"3455db860d356e46"')]
TOKEN = "test-token-0123456789abcdefghijklmnopqrstuvwxyz"


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs user and mount namespaces (unshare -rm) for a private tmpfs")
def test_full_disk_twenty_times_heals_without_restart_and_loses_nothing(tmp_path: Path) -> None:
    """A 4 MiB tmpfs filled to the last byte 20 times at random points: every time the writer fails, refuses
    uploads, heals by itself within seconds of the space coming back; no acknowledged line lost or doubled,
    before and after a restart (tests/support/enospc.py)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f"mount -t tmpfs -o size=4m tmpfs {mnt} && exec {sys.executable} -m support.enospc {mnt} 20 7"
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=ROOT / "tests", capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["failures"] == 20 and out["lost_or_doubled"] == 0
    assert out["refused_then_stored"] >= 20 * 6 and out["batches_acknowledged"] == out["index"]
    assert out["cut_on_recovery"] == {"journal_bytes": 0, "segment_bytes": 0}


class _FailingOs:
    """``os`` with ``ftruncate`` (and ``write`` when armed) failing as on a dying disk."""

    def __init__(self) -> None:
        self.fail_write = self.fail_truncate = 0

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def write(self, fd: int, data: bytes) -> int:
        if self.fail_write:
            self.fail_write -= 1
            raise OSError(28, "No space left on device")
        return os.write(fd, data)

    def ftruncate(self, fd: int, size: int) -> None:
        if self.fail_truncate:
            self.fail_truncate -= 1
            raise OSError(5, "Input/output error")
        os.ftruncate(fd, size)


def _batch(batch_id: str, body: bytes, got: dict[str, Stored | BaseException] | None = None) -> Batch:
    lines = body.count(b"\n")

    def done(result: Stored | BaseException) -> None:
        if got is not None:
            got[batch_id] = result

    return Batch("demo", batch_id, body, BatchCounts(lines, lines), done)


def test_a_failed_undo_is_repaired_before_the_next_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write fails and so does the cut back (twice): the app is damaged, refuses writes; the cut is tried
    again, and once it works the next batch is stored after the last acknowledged byte, nothing of the failed
    batch in between."""
    fake = _FailingOs()
    monkeypatch.setattr(applog_module, "os", fake)
    monkeypatch.setattr("ldp.ingest.journal.os", fake)
    monkeypatch.setattr("ldp.ingest.linefile.os", fake)
    monkeypatch.setattr("ldp.jobs.store.os", fake)
    monkeypatch.setattr("ldp.jobs.store._write_synced_compiled", None)  # the faked os: the Python path
    log = AppLog(tmp_path / "demo", Limits())
    log.recover()
    log.commit([_batch("a", b"one\n")])
    fake.fail_write, fake.fail_truncate = 0, 0
    # the segment write works, the journal's fails, then the cut back fails twice
    calls = {"n": 0}

    def write(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return os.write(fd, data)

    monkeypatch.setattr(fake, "write", write)
    fake.fail_truncate = 2
    with pytest.raises(OSError):
        log.commit([_batch("b", b"two\n")])
    assert log.damaged is not None
    with pytest.raises(OSError, match="could not be cut back"):
        log.commit([_batch("c", b"three\n")])  # the second cut fails too: refused
    assert log.repair() and log.damaged is None
    log.commit([_batch("d", b"four\n")])
    log.close()
    stored = b"".join(p.read_bytes() for p in sorted((tmp_path / "demo" / "segments").rglob("*.jsonl")))
    assert sorted(stored.splitlines()) == [b"four", b"one"]
    again = AppLog(tmp_path / "demo", Limits())
    assert again.recover() == {"journal_bytes": 0, "segment_bytes": 0}
    assert again.ids() == {"a", "d"}
    again.close()


def test_healthz_says_storage_error_then_recovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from ldp.ingest.app import create_app

    monkeypatch.setattr(segments_module, "PROBE_SECONDS", 0.05)
    operator = "test-operator-token-0123456789abcdefghijklmnopqrst"  # [metrics]: it reads /healthz's details
    config = parse_config({"data_dir": "data", "metrics": {"token_sha256": token_sha256(operator)},
                           "apps": {"demo": {"token_sha256": token_sha256(TOKEN), "specs": [str(SPEC)]}}}, tmp_path)
    details = {"Authorization": f"Bearer {operator}"}
    fake = _FailingOs()
    monkeypatch.setattr("ldp.jobs.store.os", fake)  # write_all: the segment write and the probe
    monkeypatch.setattr("ldp.jobs.store._write_synced_compiled", None)  # the faked os: the Python path
    hdr = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-ndjson"}
    with TestClient(create_app(config)) as c:
        fake.fail_write = 3  # the batch's write, then two probes
        r = c.post("/v1/reports", content=GOOD[0], headers={**hdr, "Ldp-Batch-Id": "x1"})
        assert r.status_code == 503 and r.headers["Retry-After"]
        h = c.get("/healthz", headers=details)
        assert h.status_code == 503 and h.json()["status"] == "storage_error" and "No space" in h.json()["error"]
        h = c.get("/healthz")  # anyone: down, and why in one word
        assert h.status_code == 503 and h.json() == {"status": "unavailable", "reason": "storage"}
        assert c.post("/v1/reports", content=GOOD[1], headers={**hdr, "Ldp-Batch-Id": "x2"}).status_code == 503
        writer = c.app.state.writer  # type: ignore[attr-defined]
        event = threading.Event()
        for _ in range(200):
            if writer.error is None:
                break
            event.wait(0.02)
        h = c.get("/healthz", headers=details)
        assert h.status_code == 200 and h.json()["status"] == "ok" and "No space" in h.json()["recovered"]["error"]
        assert c.get("/healthz").json() == {"status": "ok"}
        r = c.post("/v1/reports", content=GOOD[0], headers={**hdr, "Ldp-Batch-Id": "x1"})
        assert r.status_code == 200 and r.json()["accepted"] == 1 and not r.json()["duplicate"]


# -- rejects within bounds -------------------------------------------------------------------------------------
def test_a_huge_junk_line_is_kept_as_prefix_and_digest(tmp_path: Path) -> None:
    """One 30 KB gzip request of a 30 MiB junk line: answered with exact counts; the segment keeps the good lines
    only, ``rejects/`` one entry (reason, length, SHA-256, a prefix); ``ldp fold`` agrees on the accepted."""
    pytest.importorskip("starlette")
    import hashlib

    from starlette.testclient import TestClient

    from ldp.ingest.app import create_app

    config = parse_config({"data_dir": "data", "limits": {"max_decompressed_bytes": 40 * 2**20},
                           "apps": {"demo": {"token_sha256": token_sha256(TOKEN), "specs": [str(SPEC)]}}}, tmp_path)
    junk = b"A" * (30 * 2**20) + b"\n"
    body = b"".join(GOOD[:10]) + junk + b"not json\n"
    packed = gzip.compress(body)
    assert len(packed) < 64 * 2**10
    with TestClient(create_app(config)) as c:
        r = c.post("/v1/reports", content=packed, headers={"Authorization": f"Bearer {TOKEN}", "Ldp-Batch-Id": "j",
                                                           "Content-Type": "application/x-ndjson",
                                                           "Content-Encoding": "gzip"})
        assert r.status_code == 200, r.text
        assert r.json()["accepted"] == 10 and r.json()["rejected"] == {"not_json": 1, "too_large": 1}
    stored = b"".join(p.read_bytes() for p in (config.app_dir("demo") / "segments").rglob("*.jsonl"))
    assert sorted(stored.splitlines()) == sorted((b"".join(GOOD[:10]) + b"not json\n").splitlines())
    (entry,) = [json.loads(x) for p in (config.app_dir("demo") / "rejects").glob("*.jsonl")
                for x in p.read_text().splitlines()]
    assert entry["bytes"] == len(junk) and entry["sha256"] == hashlib.sha256(junk).hexdigest()
    assert entry["prefix"] == "A" * PREFIX_BYTES and entry["reason"] == "too_large" and entry["why"] == "too_long"
    counters = json.loads((config.data_dir / "ingest.json").read_text())["apps"]["demo"]
    assert counters["rejected"] == {"not_json": 1, "too_large": 1} and counters["rejects_left_out"] == 1


def test_the_daily_reject_budget_is_spent_then_only_counted(tmp_path: Path) -> None:
    """Each app stores at most ``reject_bytes_per_day`` of rejects a UTC day; then counts them only. The budget
    spent is rebuilt from the journal on restart, and a new day starts a new budget."""
    now = [86400.0 * 20000 + 10]
    limits = Limits(max_reject_line_bytes=50, reject_bytes_per_day=1000)
    log = AppLog(tmp_path / "demo", limits, clock=lambda: now[0])
    log.recover()
    bad = b"x" * 19 + b"\n"  # 20 bytes, rejected as not_json
    body = bad * 60
    counts, spans = check_lines(body, SPECS)
    assert counts.rejected == {"not_json": 60} and len(spans) == 60
    log.commit([Batch("demo", "r1", body, counts, lambda r: None, spans)])
    assert log.stats.rejects_unkept == 10 and log.rejects.used == 1000  # 50 lines kept, then the budget is spent
    seg = log.open_dir / log._name
    assert seg.read_bytes() == bad * 50
    log.close()
    again = AppLog(tmp_path / "demo", limits, clock=lambda: now[0])
    again.recover()
    assert again.rejects.used == 1000 and again.stats.rejects_unkept == 10
    now[0] += 86400  # the next UTC day
    again.commit([Batch("demo", "r2", bad * 2, BatchCounts(2, 0, {"not_json": 2}), lambda r: None,
                        check_lines(bad * 2, SPECS)[1])])
    assert again.rejects.used == 40
    again.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(GOOD[:5] + [b"not json\n", b"{}\n", b"\n", b'{"spec":"x"}\n', b"[1,2]\n"]),
                min_size=1, max_size=60))
def test_reject_spans_agree_with_the_folder(lines: list[bytes]) -> None:
    """Differential: the spans found are exactly the lines the parser of ``ldp fold`` rejects, with its
    reasons; the counts are the Folder's."""
    from ldp.jobs.fold import Folder
    from ldp.jobs.lines import fold_lines

    body = b"".join(lines)
    folder, spans = find_rejects(body, SPECS)
    plain = Folder(SPECS)
    fold_lines(plain, body, 0)
    assert (folder.records, folder.accepted, folder.rejected) == (plain.records, plain.accepted, plain.rejected)
    assert len(spans) == sum(plain.rejected.values())
    for s in spans:
        line = body[s.start:s.end]
        assert line.endswith(b"\n") and line in lines and line not in GOOD
    kept = RejectKeeper(Path("/nonexistent"), 4, 10**9).keep(body, spans, 0.0)
    assert kept.body == b"".join(ln for ln in lines if ln in GOOD or ln == b"\n" or len(ln) <= 4)


# -- multi-member gzip -----------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=6), st.integers(1, 64))
def test_multi_member_gzip_is_the_concatenation(parts: list[bytes], chunk: int) -> None:
    """A body of several gzip members (``cat a.gz b.gz``) inflates to the members' contents one after the other,
    fed in chunks of any size, as ``gzip.decompress`` does."""
    packed = b"".join(gzip.compress(p) for p in parts)
    g = Gunzip(10**6)
    for i in range(0, len(packed), chunk):
        g.feed(packed[i:i + chunk])
    assert g.finish() == b"".join(parts) == gzip.decompress(packed)
    assert g.members == len(parts)


def test_gzip_trailing_garbage_truncation_and_member_cap() -> None:
    g = Gunzip(10**6)
    with pytest.raises(IngestError, match="after gzip member 1 is not a gzip member"):
        g.feed(gzip.compress(b"a\n") + b"garbage")
    g = Gunzip(10**6)
    g.feed(gzip.compress(b"a\n") + gzip.compress(b"b\n")[:5])
    with pytest.raises(IngestError, match="truncated"):
        g.finish()
    g = Gunzip(10**6)
    with pytest.raises(IngestError, match=f"more than {MAX_GZIP_MEMBERS} gzip members"):
        g.feed(gzip.compress(b"") * (MAX_GZIP_MEMBERS + 1))
    g = Gunzip(10)
    with pytest.raises(IngestError) as err:
        g.feed(gzip.compress(b"x" * 6) + gzip.compress(b"y" * 6))
    assert err.value.status == 413


# -- the journal's compaction ----------------------------------------------------------------------------------
@pytest.fixture
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Appends written but not fsynced: the compaction tests check what the files and the index hold (read back
    by the same machine, from its page cache), not durability, and their thousands of fsynced commits were nearly
    all of their time (each commit's fsyncs: the full-disk test above and tests/jobs/test_write_synced.py)."""
    from ldp.ingest import linefile
    from ldp.jobs import store

    monkeypatch.setattr(os, "fsync", lambda fd: None)
    monkeypatch.setattr(linefile, "write_synced", lambda *pairs: store.write_synced(*pairs, compiled=False))


@pytest.mark.usefixtures("no_fsync")
def test_compaction_keeps_exactly_once_inside_the_horizon(tmp_path: Path) -> None:
    """3,000 batches 100 s apart (windows of 10,000 s, a segment closed every 100 batches) with a 100,000 s
    horizon: compaction drops the ids of windows that ended before the horizon from the index and the file (a base
    line keeps their sums); ids inside it are still duplicates, the counters are whole, and a restart reads the
    same."""
    now = [1_000_000.0]
    limits = Limits(dedup_horizon_seconds=100_000.0)
    log = AppLog(tmp_path / "demo", limits, clock=lambda: now[0], granularity=10_000.0)
    log.recover()
    for i in range(3000):
        log.commit([_batch(f"id{i}", b"line\n")])
        now[0] += 100.0
        if i % 100 == 99:
            log.maybe_rotate(force=True)
    before = log.stats.to_dict()
    seen = log.seen.path
    size_before = seen.stat().st_size
    # now = 1,300,000: windows that ended before 1,200,000 leave, i.e. those starting before 1,190,000 (i < 1,900)
    assert log.seen.compact(now[0])
    assert log.ids() == {f"id{i}" for i in range(1900, 3000)}
    assert seen.stat().st_size < size_before / 2
    assert log.stats.to_dict() == {**before, "compacted": 1900}
    dup = log.commit([_batch("id2500", b"line\n"), _batch("id1500", b"line\n")])
    assert dup[0][1].duplicate and not dup[1][1].duplicate  # id1500 is past the horizon: stored again
    after = log.stats.to_dict()
    log.close()
    again = AppLog(tmp_path / "demo", limits, clock=lambda: now[0], granularity=10_000.0)
    again.recover()
    assert again.stats.to_dict() == after and again.ids() == log.ids()
    assert not again.seen.compact(now[0])  # nothing more to drop
    again.close()
    base = json.loads(seen.read_text().splitlines()[0])
    assert base["base"] is True and base["batches"] == 1900 and base["accepted"] == 1900


@pytest.mark.usefixtures("no_fsync")
def test_journal_memory_is_bounded_by_the_horizon(tmp_path: Path) -> None:
    """The index holds the ids of the horizon (and one window) only, however long the ingest service runs."""
    now = [0.0]
    j_limits = Limits(dedup_horizon_seconds=1000.0, segment_max_seconds=10.0)
    log = AppLog(tmp_path / "demo", j_limits, clock=lambda: now[0], granularity=100.0)
    log.recover()
    sizes = []
    for day in range(5):
        for i in range(500):
            log.commit([_batch(f"{day}-{i}", b"l\n")])
            now[0] += 1.0
            if i % 50 == 49:
                log.maybe_rotate(force=True)
        log.seen.compact(now[0], min_dead=1)
        sizes.append(len(log.ids()))
    assert max(sizes) <= 1100 and sizes[-1] == 1100
    log.close()


def test_horizon_must_exceed_the_segment_age() -> None:
    with pytest.raises(ConfigError, match="dedup_horizon_seconds"):
        parse_config({"limits": {"dedup_horizon_seconds": 100.0, "segment_max_seconds": 300.0},
                      "apps": {"demo": {"token_sha256": "0" * 64, "specs": [str(SPEC)]}}}, ".")
