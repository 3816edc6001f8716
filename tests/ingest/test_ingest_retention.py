"""What the ingest service keeps that could be tied to a person, and for how long (docs/privacy-rights.md): the
``rejects/`` day files (``reject_retention_days``) and the batch ids of ``seen.jsonl`` (``dedup_horizon_seconds``,
then a day at most on disk). Each is checked kept before its retention and gone after it, through a restart and
through the writer's periodic chore, and a bad setting is refused naming its key."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT, call_main

from ldp.ingest import segments as segments_module
from ldp.ingest.applog import AppLog, Batch
from ldp.ingest.config import ConfigError, Limits, parse_config
from ldp.ingest.journal import STALE_SECONDS
from ldp.ingest.rejects import RejectKeeper, utc_day
from ldp.ingest.segments import SegmentWriter
from ldp.ingest.upload import check_lines
from ldp.spec import CollectionSpec

SPEC = ROOT / "examples" / "collection.json"
SPECS = {(s := CollectionSpec.load(SPEC)).fingerprint: s}
GOOD = [ln for ln in (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
        if ln.startswith(b'{"spec":"3455db860d356e46"')]
DAY = 86400
D0 = 20000 * DAY  # the start of a UTC day
LONG = b"my e-mail is someone@example.com " + b"x" * 100 + b"\n"  # rejected (not JSON), over 50 bytes


def _batch(batch_id: str, body: bytes) -> Batch:
    counts, spans = check_lines(body, SPECS)
    return Batch("demo", batch_id, body, counts, lambda result: None, spans)


def _rejects(app_dir: Path) -> list[str]:
    folder = app_dir / "rejects"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# -- rejects/ ---------------------------------------------------------------------------------------------------
def test_a_day_of_rejects_is_kept_for_its_retention_then_deleted(tmp_path: Path) -> None:
    """A day's file lives through ``retention_days`` full days after its day, and is gone at the next midnight;
    today's file and files that are not day files are never touched."""
    keeper = RejectKeeper(tmp_path, 50, 10**6, retention_days=2)
    for day in range(4):
        (tmp_path / f"{utc_day(D0 + day * DAY)}.jsonl").write_text("{}\n")
    (tmp_path / "notes.txt").write_text("operator's")
    (tmp_path / "20261399.jsonl").write_text("not a date")
    assert keeper.expire(D0 + 3 * DAY - 1) == []  # day 0 ended 2 days - 1 s ago
    assert keeper.expire(D0 + 3 * DAY) == [f"{utc_day(D0)}.jsonl"]
    assert keeper.expire(D0 + 5 * DAY + 1) == [f"{utc_day(D0 + DAY)}.jsonl", f"{utc_day(D0 + 2 * DAY)}.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["20261399.jsonl", f"{utc_day(D0 + 3 * DAY)}.jsonl",
                                                                 "notes.txt"])
    assert RejectKeeper(tmp_path / "absent", 50, 10**6).expire(D0 + 99 * DAY) == []
    with pytest.raises(ValueError, match="retention_days"):
        RejectKeeper(tmp_path, 50, 10**6, retention_days=0)


def test_rejected_lines_leave_the_disk_after_reject_retention_days(tmp_path: Path) -> None:
    """End to end in one app's folder: a long rejected line (a person's text) goes to ``rejects/<day>.jsonl``; a
    restart within the retention keeps it, the writer's periodic chore deletes it once the retention has passed, and
    so does a restart."""
    now = [D0 + 3600.0]
    limits = Limits(max_reject_line_bytes=50, reject_retention_days=3)
    log = AppLog(tmp_path / "demo", limits, clock=lambda: now[0])
    log.recover()
    log.commit([_batch("b1", GOOD[0] + LONG)])
    log.close()
    day0 = f"{utc_day(now[0])}.jsonl"
    assert _rejects(tmp_path / "demo") == [day0] and b"someone@example.com" in (tmp_path / "demo" / "rejects" /
                                                                                 day0).read_bytes()
    now[0] = D0 + 4 * DAY - 1  # day 0 ended 3 days - 1 s ago
    again = AppLog(tmp_path / "demo", limits, clock=lambda: now[0])
    again.recover()
    assert _rejects(tmp_path / "demo") == [day0]
    again.close()
    now[0] = D0 + 4 * DAY
    again = AppLog(tmp_path / "demo", limits, clock=lambda: now[0])
    again.recover()
    assert _rejects(tmp_path / "demo") == []
    again.close()


def test_the_running_writer_deletes_expired_rejects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a restart: the writer's chore (every ``COMPACT_SECONDS``, here at once) deletes the day past its
    retention and keeps the newer one."""
    monkeypatch.setattr(segments_module, "COMPACT_SECONDS", 0.0)
    config = parse_config({"limits": {"max_reject_line_bytes": 50, "reject_retention_days": 1},
                           "apps": {"demo": {"token_sha256": "0" * 64, "specs": [str(SPEC)]}}}, tmp_path)
    now = [D0 + 60.0]
    writer = SegmentWriter(config, clock=lambda: now[0])
    writer.start()
    try:
        folder = config.app_dir("demo") / "rejects"
        folder.mkdir(parents=True, exist_ok=True)
        old, new = folder / f"{utc_day(D0 - 2 * DAY)}.jsonl", folder / f"{utc_day(D0 - DAY)}.jsonl"
        old.write_text("{}\n")
        new.write_text("{}\n")
        writer._maintain()
        writer.jobs.join()
        assert not old.exists() and new.exists()  # D0 - 2 days ended 1 day + 60 s ago; D0 - 1 day, 60 s ago
        now[0] = D0 + DAY
        writer._maintain()
        writer.jobs.join()
        assert not new.exists()
    finally:
        writer.close()


def test_one_byte_lines_keep_every_rejected_line_out_of_the_segments(tmp_path: Path) -> None:
    """``max_reject_line_bytes = 1`` (the page's advice for a one-process ingest service): no rejected line is stored in
    a segment, where it would live as long as the segment; each is in ``rejects/``, under its retention."""
    log = AppLog(tmp_path / "demo", Limits(max_reject_line_bytes=1), clock=lambda: D0 + 60.0)
    log.recover()
    log.commit([_batch("b1", GOOD[0] + b"short\n" + LONG + GOOD[1])])
    log.maybe_rotate(force=True)
    log.close()
    (closed,) = (tmp_path / "demo" / "segments" / "closed").glob("*.jsonl")
    assert sorted(closed.read_bytes().splitlines(keepends=True)) == sorted([GOOD[0], GOOD[1]])
    kept = (tmp_path / "demo" / "rejects" / f"{utc_day(D0)}.jsonl").read_bytes()
    assert kept.count(b"\n") == 2 and b"short" in kept and b"someone@example.com" in kept


def test_a_bad_retention_is_refused_naming_the_key(tmp_path: Path) -> None:
    app = {"demo": {"token_sha256": "0" * 64, "specs": [str(SPEC)]}}
    assert parse_config({"apps": app}, tmp_path).limits.reject_retention_days == 30
    for bad, why in ((0, "must be > 0"), (-3, "must be > 0"), (1.5, "must be an integer"),
                     (True, "must be an integer"), ("30", "must be an integer")):
        with pytest.raises(ConfigError, match=f"reject_retention_days {why}"):
            parse_config({"limits": {"reject_retention_days": bad}, "apps": app}, tmp_path)
    (tmp_path / "c.toml").write_text(f'[limits]\nreject_retention_days = 0\n[apps.demo]\ntoken_sha256 = "{"0" * 64}"\n'
                                     f'specs = ["{SPEC}"]\n')
    code, _, err = call_main(["serve", "--config", str(tmp_path / "c.toml")])
    assert code == 2 and err.splitlines()[-1].startswith("ldp serve: error:") and "reject_retention_days" in err


# -- seen.jsonl -------------------------------------------------------------------------------------------------
def _ids_on_disk(app_dir: Path) -> str:
    return (app_dir / "journal" / "seen.jsonl").read_text()


def test_a_batch_id_leaves_the_disk_within_a_day_of_the_horizon(tmp_path: Path) -> None:
    """A handful of ids (far below the thousand that compact a file by count): inside the horizon each is a
    duplicate and on disk; past it, out of the index; a day past it, out of the file too, whether the process ran
    all along or restarted in between (the age is the id's window, not the process's)."""
    horizon, g = 10 * DAY, float(DAY)
    limits = Limits(dedup_horizon_seconds=horizon)
    now = [D0 + 60.0]
    log = AppLog(tmp_path / "demo", limits, clock=lambda: now[0], granularity=g)
    log.recover()
    log.commit([_batch("old-batch-id", GOOD[0]), _batch("other-old-id", GOOD[1])])
    log.maybe_rotate(force=True)
    now[0] = D0 + 5 * DAY
    log.commit([_batch("new-batch-id", GOOD[2])])
    log.maybe_rotate(force=True)
    end = D0 + g  # the old ids' window ended here
    now[0] = end + horizon - 1
    assert not log.seen.compact(now[0])
    assert log.known("old-batch-id") is not None and "old-batch-id" in _ids_on_disk(tmp_path / "demo")
    now[0] = end + horizon + 1
    assert not log.seen.compact(now[0])  # past the horizon: out of the index, still in the file for a day at most
    assert log.known("old-batch-id") is None and "old-batch-id" in _ids_on_disk(tmp_path / "demo")
    log.close()
    now[0] = end + horizon + STALE_SECONDS + 1
    again = AppLog(tmp_path / "demo", limits, clock=lambda: now[0], granularity=g)
    again.recover()
    assert again.seen.compact(now[0])
    text = _ids_on_disk(tmp_path / "demo")
    assert "old-batch-id" not in text and "other-old-id" not in text and "new-batch-id" in text
    assert again.known("new-batch-id") is not None and again.stats.batches == 3 and again.stats.compacted == 2
    assert not again.seen.compact(now[0] + 60)  # nothing left to drop: no rewrite every minute
    again.close()


def test_a_running_collector_drops_old_ids_from_the_file(tmp_path: Path) -> None:
    """The same without a restart: the id's window, not the time it was evicted, starts the day."""
    horizon, g = 2 * DAY, float(DAY)
    now = [D0 + 60.0]
    log = AppLog(tmp_path / "demo", Limits(dedup_horizon_seconds=horizon), clock=lambda: now[0], granularity=g)
    log.recover()
    log.commit([_batch("gone-soon", GOOD[3])])
    log.maybe_rotate(force=True)
    for t in range(int(D0 + g + horizon), int(D0 + g + horizon + STALE_SECONDS), 6 * 3600):
        assert not log.seen.compact(t) and "gone-soon" in _ids_on_disk(tmp_path / "demo")
    assert log.seen.compact(D0 + g + horizon + STALE_SECONDS + 1)
    assert "gone-soon" not in _ids_on_disk(tmp_path / "demo") and log.ids() == set()
    log.close()
