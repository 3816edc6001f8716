"""The ingest service's storage: group commit, exactly-once across restarts, recovery of torn writes,
rotation; and the config file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support import ROOT

from ldp.ingest.config import ConfigError, load_config, new_token, parse_config, token_sha256
from ldp.ingest.journal import ClosedCounts
from ldp.ingest.segments import Batch, SegmentWriter, Stored
from ldp.ingest.upload import BatchCounts

SPEC = ROOT / "examples" / "collection.json"


def config_for(tmp_path: Path, **limits: float):
    return parse_config({"limits": limits, "apps": {"demo": {"token_sha256": "0" * 64, "specs": [str(SPEC)]}}},
                        tmp_path)


class Results:
    def __init__(self) -> None:
        self.got: dict[str, Stored | BaseException] = {}
        self.event = threading.Event()
        self.want = 0

    def batch(self, batch_id: str, body: bytes, lines: int = 1) -> Batch:
        self.want += 1

        def done(result: Stored | BaseException) -> None:
            self.got[batch_id + f"#{len(self.got)}"] = result
            if len(self.got) == self.want:
                self.event.set()

        return Batch("demo", batch_id, body, BatchCounts(lines, lines), done)


def submit_all(writer: SegmentWriter, batches: list[Batch], res: Results) -> None:
    for b in batches:
        writer.submit(b)
    assert res.event.wait(10)


def app_files(config) -> tuple[list[Path], list[Path], Path]:
    """The open and closed segments (``*.jsonl``) and the seen index."""
    seg = config.app_dir("demo") / "segments"
    return sorted((seg / "open").glob("*.jsonl")), sorted((seg / "closed").glob("*.jsonl")), \
        config.app_dir("demo") / "journal" / "seen.jsonl"


def lines_of(paths: list[Path]) -> list[bytes]:
    """Every line of the segments, sorted (a closed segment's order is random)."""
    return sorted(x for p in paths for x in p.read_bytes().splitlines(keepends=True))


def test_group_commit_dedups_within_and_across_groups(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    w = SegmentWriter(config)
    w.start()
    res = Results()
    submit_all(w, [res.batch("a", b"1\n"), res.batch("b", b"2\n"), res.batch("a", b"1\n")], res)
    dup = [r for r in res.got.values() if isinstance(r, Stored) and r.duplicate]
    assert len(dup) == 1
    w.close()
    w2 = SegmentWriter(config)  # a restart: the ids come back from the journal
    w2.start()
    # once its segment closed, a batch is known by its line count only
    assert w2.known("demo", "a") == ClosedCounts(1) and w2.known("demo", "zz") is None
    res2 = Results()
    submit_all(w2, [res2.batch("b", b"2\n"), res2.batch("c", b"3\n")], res2)
    answers = sorted((k, r) for k, r in res2.got.items() if isinstance(r, Stored))
    assert [r.counts for _, r in answers] == [ClosedCounts(1), BatchCounts(1, 1)]
    w2.close()
    opened, closed, seen = app_files(config)
    assert not opened and lines_of(closed) == [b"1\n", b"2\n", b"3\n"]
    assert sorted(d["id"] for d in map(json.loads, seen.read_text().splitlines()) if "id" in d) == ["a", "b", "c"]
    counters = json.loads((config.data_dir / "ingest.json").read_text())["apps"]["demo"]
    assert counters["batches"] == 3 and counters["duplicates"] == 2  # duplicates: since the start only


def test_torn_write_is_cut_on_recovery(tmp_path: Path) -> None:
    """A crash after the segment write but before the journal line (or during it): the bytes of the
    unacknowledged batch are cut, a torn journal tail too; acknowledged batches stay."""
    config = config_for(tmp_path)
    w = SegmentWriter(config)
    w.start()
    res = Results()
    submit_all(w, [res.batch("a", b"first\n")], res)
    log = w.logs["demo"]
    # simulate the crash: stop the thread without closing the segment, then append as a dying writer would
    w._queue.put(None)
    assert w._thread is not None
    w._thread.join()
    opened, _, _ = app_files(config)
    assert len(opened) == 1
    journal = config.app_dir("demo") / "journal" / opened[0].name  # the open segment's own journal
    with open(opened[0], "ab") as fh:
        fh.write(b"torn, never acknowledged\npartial li")
    with open(journal, "ab") as fh:
        fh.write(b'{"id":"b","end":')
    os.close(log._fd)  # type: ignore[arg-type]
    assert log._journal is not None
    log._journal.close()

    w2 = SegmentWriter(config)
    cut = w2.start()
    assert cut["demo"] == {"journal_bytes": len(b'{"id":"b","end":'), "segment_bytes": len(
        b"torn, never acknowledged\npartial li")}
    opened, closed, seen = app_files(config)
    assert not opened and [p.read_bytes() for p in closed] == [b"first\n"] and not journal.exists()
    assert [d.get("id") for d in map(json.loads, seen.read_text().splitlines()) if "id" in d] == ["a"]
    res2 = Results()
    submit_all(w2, [res2.batch("b", b"second\n"), res2.batch("a", b"first\n")], res2)
    w2.close()
    _, closed, _ = app_files(config)
    assert lines_of(closed) == [b"first\n", b"second\n"] and len(closed) == 2


@pytest.mark.parametrize("name", ["seen.jsonl", "journal.jsonl"])  # the seen index; a journal from before 0.3
def test_damaged_journal_middle_refuses_to_start(tmp_path: Path, name: str) -> None:
    config = config_for(tmp_path)
    journal = config.app_dir("demo") / "journal" / name
    journal.parent.mkdir(parents=True)
    journal.write_text("garbage\n" + json.dumps({"closed": "x.jsonl"}) + "\n")
    with pytest.raises(RuntimeError, match="line 1 is damaged"):
        SegmentWriter(config).start()


def test_rotation_by_size_and_age(tmp_path: Path) -> None:
    clock = [1000.0]
    config = config_for(tmp_path, segment_max_bytes=10, segment_max_seconds=60)
    w = SegmentWriter(config, clock=lambda: clock[0])
    w.start()
    res = Results()
    submit_all(w, [res.batch("a", b"0123456789ab\n")], res)  # over 10 bytes: rotated after the commit
    res = Results()
    submit_all(w, [res.batch("b", b"x\n")], res)
    w._maintain()
    w.jobs.join()  # the move to closed/ is a chore of its own thread
    opened, closed, _ = app_files(config)
    assert len(closed) == 1 and len(opened) == 1
    clock[0] += 61
    w._maintain()
    w.jobs.join()
    opened, closed, _ = app_files(config)
    assert len(closed) == 2 and not opened
    # named and dated by the arrival window (a day here: the spec's), a random part instead of an order
    assert all(re.fullmatch(r"19700101T000000Z-[0-9a-f]{16}\.jsonl", p.name) for p in closed)
    assert all(p.stat().st_mtime == 0.0 for p in closed)
    w.close()


def test_config_errors(tmp_path: Path) -> None:
    good = {"token_sha256": token_sha256("t"), "specs": [str(SPEC)]}
    cases = [
        ({"apps": {"demo": good}, "extra": 1}, "unknown key"),
        ({"apps": {"demo": {**good, "token": "t"}}}, "unknown key"),
        ({"apps": {"demo": {**good, "token_sha256": "abc"}}}, "64 lowercase hex"),
        ({"apps": {"demo": {**good, "specs": ["missing.json"]}}}, "no such spec file"),
        ({"apps": {"demo": {**good, "specs": []}}}, "non-empty list"),
        ({"apps": {"Demo!": good}}, "app name"),
        ({"apps": {"a": good, "b": good}}, "same token"),
        ({"apps": {}}, "no \\[apps"),
        ({"apps": {"demo": good}, "limits": {"max_lines": 0}}, "max_lines must be > 0"),
        ({"apps": {"demo": good}, "limits": {"max_lines": 1.5}}, "an integer"),
        ({"apps": {"demo": good}, "limits": {"nope": 1}}, "unknown key"),
        ({"apps": {"demo": good}, "fold": {"every_seconds": -1}}, "every_seconds"),
    ]
    for doc, match in cases:
        with pytest.raises(ConfigError, match=match):
            parse_config(doc, tmp_path)


def test_load_config_file(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(f'data_dir = "d"\n[fold]\nevery_seconds = 0\n[limits]\nmax_lines = 10\n'
                                     f'[apps.demo]\ntoken_sha256 = "{token_sha256("t")}"\nspecs = ["{SPEC}"]\n')
    cfg = load_config(tmp_path / "c.toml")
    assert cfg.data_dir == (tmp_path / "d").resolve() and cfg.limits.max_lines == 10 and cfg.fold_every_seconds == 0
    assert list(cfg.apps["demo"].specs) == ["3455db860d356e46"]
    (tmp_path / "bad.toml").write_text("data_dir = ")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path / "bad.toml")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "none.toml")


def test_token_command() -> None:
    out = subprocess.run([sys.executable, "-m", "ldp", "serve", "token", "--app", "demo"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    token, digest = out[0], out[-1]
    assert len(token) == 43 and digest == f'token_sha256 = "{token_sha256(token)}"' and "[apps.demo]" in out[1]
    assert new_token() != new_token()


def test_serve_without_config_is_an_error() -> None:
    r = subprocess.run([sys.executable, "-m", "ldp", "serve"], capture_output=True, text=True)
    assert r.returncode == 2 and "--config FILE is required" in r.stderr


def test_two_specs_differing_only_in_release_are_refused(tmp_path: Path) -> None:
    """Release thresholds are outside the fingerprint: two such files would map one fingerprint to two policies."""
    doc = json.loads(SPEC.read_text())
    (tmp_path / "a.json").write_text(json.dumps({**doc, "release": {"min_reports": 10}}))
    (tmp_path / "b.json").write_text(json.dumps({**doc, "release": {"min_reports": 20}}))
    (tmp_path / "c.json").write_text(json.dumps({**doc, "release": {"min_reports": 10}}))
    app = {"token_sha256": "0" * 64}
    with pytest.raises(ConfigError, match="same fingerprint .* but differ"):
        parse_config({"apps": {"demo": {**app, "specs": ["a.json", "b.json"]}}}, tmp_path)
    parse_config({"apps": {"demo": {**app, "specs": ["a.json", "c.json"]}}}, tmp_path)  # the same: fine
