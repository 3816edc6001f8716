"""docs/privacy-rights.md stays true where it names code: it is linked (README's clients table, the nav, the
operator's pages); every file it cites exists; every setting it names is a config key or a flag, with the default it
states; the Python opt-out deletes exactly the tables it lists and keeps what it says; an upload line with an
identifier is refused."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import fields
from pathlib import Path

import pytest
from support import ROOT, call_main

from ldp.client import TelemetryClient, consent
from ldp.ingest.config import Limits
from ldp.ingest.journal import STALE_SECONDS
from ldp.ingest.rejects import PREFIX_BYTES, find_rejects
from ldp.shuffler.consumed import DEFAULT_ORIGINALS_SECONDS
from ldp.shuffler.stage import DEFAULT_DEDUP_SECONDS, DEFAULT_GRACE_SECONDS, DEFAULT_HOLD_SECONDS
from ldp.spec import CollectionSpec

PAGE = ROOT / "docs" / "privacy-rights.md"
TEXT = PAGE.read_text(encoding="utf-8")
DAY = 86400


def test_the_page_is_linked_from_the_readme_table_the_nav_and_the_operators_pages() -> None:
    table = [ln for ln in (ROOT / "README.md").read_text().splitlines() if ln.startswith("|")]
    assert any("(docs/privacy-rights.md)" in ln for ln in table)
    assert re.search(r"^\s+- .+: privacy-rights\.md$", (ROOT / "mkdocs.yml").read_text(), re.M)
    for page in ("ingest.md", "two-aggregators.md", "scale-out.md"):
        assert "(privacy-rights.md" in (ROOT / "docs" / page).read_text(), page


def test_every_file_it_cites_exists() -> None:
    cited = set(re.findall(r"`((?:ldp|clients|tests)/[\w./-]+\.(?:py|ts|kt|rs))`", TEXT))
    assert len(cited) >= 15
    assert [p for p in sorted(cited) if not (ROOT / p).is_file()] == []


def test_every_setting_it_names_exists_with_the_default_it_states() -> None:
    limits = {f.name for f in fields(Limits)}
    named = set(re.findall(r"`\[limits\] (\w+)", TEXT)) | set(re.findall(r"`(\w+_(?:seconds|days|bytes))`", TEXT))
    assert {"reject_retention_days", "dedup_horizon_seconds", "segment_max_seconds", "max_reject_line_bytes"} <= named
    assert named <= limits, named - limits
    helps = "".join(call_main([cmd, "--help"])[1] for cmd in ("serve", "shuffle", "aggregate"))
    flags = set(re.findall(r"(--[a-z][a-z-]+)", TEXT))
    assert {"--originals-days", "--no-access-log", "--dedup-days", "--hold-days", "--grace"} <= flags
    assert [f for f in sorted(flags) if f not in helps] == []
    d = Limits()
    for claim in (f"`reject_retention_days` (default {d.reject_retention_days})",
                  f"`dedup_horizon_seconds` (default {d.dedup_horizon_seconds / DAY:g} days)",
                  f"`[limits] segment_max_seconds` (default {d.segment_max_seconds:g} s)",
                  f"`--originals-days` from when written (default {DEFAULT_ORIGINALS_SECONDS / DAY:g})",
                  f"`--hold-days` (default {DEFAULT_HOLD_SECONDS / DAY:g})",
                  f"twice `--dedup-days` (default {DEFAULT_DEDUP_SECONDS / DAY:g})",
                  f"`--grace` past its end (default {DEFAULT_GRACE_SECONDS:g} s)",
                  f"the first {PREFIX_BYTES} bytes as sent",
                  f"default {d.max_reject_line_bytes // 1024} KiB"):
        assert claim in TEXT, claim
    assert STALE_SECONDS == DAY and "the file: a day more at most" in TEXT


def test_the_python_opt_out_deletes_what_the_page_lists_and_keeps_the_rest(tmp_path: Path) -> None:
    listed = set(re.search(r"\(Python: the\s+tables ([^)]+)\)", TEXT).group(1).replace("\n", " ")  # type: ignore[union-attr]
                 .replace(" and ", ", ").replace("`", "").split(", "))
    assert listed == {stmt.removeprefix("DELETE FROM ") for stmt in consent._FORGET}
    spec = CollectionSpec.from_dict({
        "spec_version": 1, "name": "rights_page", "budget": {"per_window": 1e6, "lifetime": 1e7},
        "upload": {"min_interval_seconds": 0},
        "metrics": {"flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}}}})
    with TelemetryClient(spec, tmp_path / "state.db", clock=lambda: 86400.0 * 20000, rng=3, simulation=True) as client:
        client.record_many([("flag", i % 2 == 0) for i in range(5)])
        assert client.next_batch() is not None  # a batch pinned, and the batch salt made
        assert client.opt_out() == 5
    db = sqlite3.connect(tmp_path / "state.db")
    try:
        for table in listed:
            assert db.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
        assert db.execute("SELECT count(*) FROM ldp_ledger_charges").fetchone() == (5,)  # the budget spent stays
        meta = dict(db.execute("SELECT key, value FROM ldp_client_meta"))
        assert len(bytes.fromhex(meta["batch_salt"])) == 32 and meta["opted_out"] == "1"
    finally:
        db.close()
    assert "`ldp_ledger_charges`" in TEXT and "the salt that keys batch ids" in TEXT


@pytest.mark.parametrize("extra", ['"device_id":"a1b2"', '"ts":1795305600', '"user":"someone@example.com"'])
def test_an_upload_line_with_an_identifier_is_refused(extra: str) -> None:
    spec = CollectionSpec.load(ROOT / "examples" / "collection.json")
    good = next(ln for ln in (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
                if ln.startswith(b'{"spec":"' + spec.fingerprint.encode()))
    marked = good.replace(b"{", b"{" + extra.encode() + b",", 1)
    folder, spans = find_rejects(good + marked, {spec.fingerprint: spec})
    assert folder.accepted == 1 and [s.reason for s in spans] == ["unknown_key"]
    assert "`unknown_key`, `ldp/spec/envelope.py`" in TEXT
