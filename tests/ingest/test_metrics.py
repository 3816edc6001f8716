"""``GET /metrics`` (ldp.ingest.metrics): exact counters after uploads, the latency and commit histograms,
the queue and writer state, bytes on disk (cached), fold lag after a fold, the ``[metrics]`` table (token,
off), the page read back by prometheus-client's parsers, and never a token, a report line or a batch id on it.
What moves with uploads is published once per interval (tests/ingest/test_read_auth.py checks that the page
stays put between two publications); :func:`scrape` publishes first, as the next interval boundary would."""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient
from support import ROOT

from ldp.errors import ENVELOPE_REASONS, REASONS, ConfigError
from ldp.ingest.app import create_app
from ldp.ingest.config import IngestConfig, parse_config, token_sha256
from ldp.ingest.metrics import (
    COMMIT_BUCKETS,
    DISK_PARTS,
    UPLOAD_BUCKETS,
    WRITER_STATES,
    IngestMetrics,
    StateCollector,
)
from ldp.ingest.segments import SegmentWriter
from ldp.ingest.watch import estimates_path, fold_app

SPEC = ROOT / "examples" / "collection.json"
TOKENS = {"demo": "metrics-test-token-demo-0123456789abcdefghijkl",
          "other": "metrics-test-token-other-0123456789abcdefghijk"}
SCRAPER = "metrics-test-scraper-token-0123456789abcdefghij"
LINES = (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
GOOD = [ln for ln in LINES if ln.startswith(b'{"spec":"3455db860d356e46"')]
JUNK = b"junk-line-never-on-the-page\n"
UNKNOWN = b'{"spec":"0000000000000000","metric":"x","window":1,"report":{}}\n'


def make_config(tmp_path: Path, metrics: dict[str, Any] | None = None) -> IngestConfig:
    doc: dict[str, Any] = {"data_dir": "data", "fold": {"every_seconds": 0},
                           "apps": {a: {"token_sha256": token_sha256(t), "specs": [str(SPEC)]}
                                    for a, t in TOKENS.items()}}
    if metrics is not None:
        doc["metrics"] = metrics
    return parse_config(doc, tmp_path)


def upload(c: TestClient, body: bytes, batch_id: str, app: str = "demo", **extra: str) -> Any:
    return c.post("/v1/reports", content=body, headers={"Authorization": f"Bearer {TOKENS[app]}",
                                                        "Content-Type": "application/x-ndjson",
                                                        "Ldp-Batch-Id": batch_id, **extra})


def scrape(c: TestClient, publish: bool = True,
           **headers: str) -> tuple[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """The page and its samples, ``{(name, sorted labels): value}``, as prometheus-client's parser reads them;
    ``publish``: as it is after the next interval boundary (the counters as they are now)."""
    if publish:
        c.app.state.metrics.publish()  # type: ignore[attr-defined]
    r = c.get("/metrics", headers=headers)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(r.text) for s in family.samples}
    return r.text, samples


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_counters_equal_the_answers(tmp_path: Path) -> None:
    """Uploads to two apps (good lines, junk, unknown specs, a retry, refusals): every counter on the page
    equals the sum of what the answers said, and the latency histogram counted each upload answered 200."""
    config = make_config(tmp_path)
    bodies = {("demo", "d1"): b"".join(GOOD[:40]) + JUNK + UNKNOWN, ("demo", "d2"): b"".join(LINES[:100]),
              ("other", "o1"): b"".join(GOOD[40:50]) + JUNK + JUNK, ("demo", "d1-again"): JUNK}
    answers = []
    with TestClient(create_app(config)) as c:
        for (app, batch_id), body in bodies.items():
            answers.append((app, upload(c, body, batch_id, app).json()))
        retry = upload(c, bodies[("demo", "d1")], "d1")  # a retry: answered, not stored again
        assert retry.json()["duplicate"]
        assert upload(c, GOOD[0], "u1", Authorization="Bearer wrong").status_code == 401
        assert upload(c, GOOD[0], "u2", **{"Content-Type": "text/plain"}).status_code == 415
        assert c.get("/healthz").status_code == 200
        page, samples = scrape(c)
        _, again = scrape(c)
    for app in TOKENS:
        mine = [a for name, a in answers if name == app]
        assert value(samples, "ldp_collector_reports_accepted_total", app=app) == sum(a["accepted"] for a in mine)
        assert value(samples, "ldp_collector_batches_total", app=app) == len(mine)
        rejected = Counter[str]()
        for a in mine:
            rejected.update(a["rejected"])
        got = {dict(k[1])["reason"]: v for k, v in samples.items()
               if k[0] == "ldp_collector_reports_rejected_total" and dict(k[1])["app"] == app}
        assert got == dict(rejected) and rejected["not_json"] >= 1
        assert value(samples, "ldp_collector_stored_bytes_total", app=app) == \
            sum(len(body) for (a, _), body in bodies.items() if a == app)
    assert value(samples, "ldp_collector_duplicate_batches_total", app="demo") == 1
    assert value(samples, "ldp_collector_duplicate_batches_total", app="other") == 0
    assert value(samples, "ldp_collector_requests_total", route="/v1/reports", status="200") == 5
    assert value(samples, "ldp_collector_requests_total", route="/v1/reports", status="401") == 1
    assert value(samples, "ldp_collector_requests_total", route="/v1/reports", status="415") == 1
    assert value(samples, "ldp_collector_requests_total", route="/healthz", status="200") == 1
    assert value(again, "ldp_collector_requests_total", route="/metrics", status="200") == 1
    assert value(samples, "ldp_collector_refused_requests_total", reason="unauthorized") == 1
    assert value(samples, "ldp_collector_refused_requests_total", reason="unsupported_media_type") == 1
    assert value(samples, "ldp_collector_upload_duration_seconds_count") == 5
    raw = [value(samples, "ldp_collector_upload_duration_seconds_bucket", le=str(b)) for b in (*UPLOAD_BUCKETS, "+Inf")]
    buckets = [b for b in raw if b is not None]
    assert len(buckets) == len(raw) and buckets == sorted(buckets) and buckets[-1] == 5
    assert 0 < value(samples, "ldp_collector_upload_duration_seconds_sum") < 5 * 10  # type: ignore[operator]
    assert value(samples, "ldp_collector_write_queue_batches") == 0
    assert value(samples, "ldp_collector_buffered_bytes") == 0
    assert value(samples, "ldp_collector_writer_healthy") == 1
    assert value(samples, "ldp_collector_writer_error_seconds") == 0
    assert [value(samples, "ldp_collector_writer_state", state=s) for s in WRITER_STATES] == [1, 0, 0, 0]
    last = value(samples, "ldp_collector_last_batch_timestamp_seconds", app="demo")
    assert last is not None and last % 60 == 0  # no folding: published every 60 s, the time no finer
    for secret in (*TOKENS.values(), "d1-again", JUNK.decode().strip(), GOOD[0].decode().strip()[:40]):
        assert secret not in page


def test_disk_bytes_and_queue_depth(tmp_path: Path) -> None:
    """Bytes on disk: the open segment holds the bodies, the journal its file; the queue depth is the
    writer's ``pending`` (here held up by a full queue)."""
    config = make_config(tmp_path)
    with TestClient(create_app(config)) as c:
        c.app.state.metrics.state.disk_cache_seconds = 0  # type: ignore[attr-defined]  # (measured at the start)
        for i in range(3):
            assert upload(c, b"".join(GOOD[i * 10:(i + 1) * 10]), f"q{i}").status_code == 200
        writer: SegmentWriter = c.app.state.writer  # type: ignore[attr-defined]
        _, samples = scrape(c)
        journals = sum(p.stat().st_size for p in (config.app_dir("demo") / "journal").iterdir())  # the open one's
        disk = {p: value(samples, "ldp_collector_disk_bytes", app="demo", part=p) for p in DISK_PARTS}
        assert disk["segments_open"] == len(b"".join(GOOD[:30])) and disk["journal"] == journals > 0
        assert disk["segments_closed"] == disk["rejects"] == disk["other"] == 0
        assert value(samples, "ldp_collector_disk_bytes", app="other", part="segments_open") == 0
        writer._queue.put_nowait(None)  # the writer stops taking...
        writer._thread.join(5)  # type: ignore[union-attr]
        for _ in range(3):
            writer._queue.put_nowait(None)  # ...and the queue holds three items
        _, samples = scrape(c)
        assert value(samples, "ldp_collector_write_queue_batches") == 3
        assert value(samples, "ldp_collector_writer_healthy") == 0  # its thread is gone: /healthz says 503 too
        assert value(samples, "ldp_collector_writer_state", state="stopped") == 1
        assert c.get("/healthz").status_code == 503


def test_storage_error_state(tmp_path: Path) -> None:
    """While the writer is in its storage error: the state says so, with the seconds since it began."""
    config = make_config(tmp_path)
    with TestClient(create_app(config)) as c:
        writer: SegmentWriter = c.app.state.writer  # type: ignore[attr-defined]
        metrics: IngestMetrics = c.app.state.metrics  # type: ignore[attr-defined]
        metrics.state.wall = lambda: 1000.0
        writer.error, writer.error_since = "writing the segments of 'demo' failed: No space left on device", 975.0
        _, samples = scrape(c)
        writer.error = writer.error_since = None
    assert value(samples, "ldp_collector_writer_state", state="storage_error") == 1
    assert value(samples, "ldp_collector_writer_state", state="ok") == 0
    assert value(samples, "ldp_collector_writer_error_seconds") == 25.0
    assert value(samples, "ldp_collector_writer_healthy") == 0


def test_disk_bytes_are_cached(tmp_path: Path) -> None:
    """The disk is measured again only after ``disk_cache_seconds``; a closed segment once."""
    config = make_config(tmp_path)
    clock = [0.0]
    state = StateCollector(config, SegmentWriter(config), lambda: 0, disk_cache_seconds=10, clock=lambda: clock[0])
    closed = config.closed_dir("demo")
    closed.mkdir(parents=True)
    (closed / "a.jsonl").write_bytes(b"x" * 100)
    assert state.disk()["demo"]["segments_closed"] == 100
    (closed / "b.jsonl").write_bytes(b"x" * 50)
    clock[0] = 9.9
    assert state.disk()["demo"]["segments_closed"] == 100
    clock[0] = 10.0
    assert state.disk()["demo"] == {"segments_open": 0, "segments_closed": 150, "journal": 0, "rejects": 0,
                                    "other": 0}
    (closed / "a.jsonl").unlink()
    (config.app_dir("demo") / "estimates.json").write_bytes(b"{}")
    (config.app_dir("demo") / "rejects").mkdir()
    (config.app_dir("demo") / "rejects" / "20260101.jsonl").write_bytes(b"r" * 7)
    clock[0] = 20.0
    assert state.disk()["demo"] == {"segments_open": 0, "segments_closed": 50, "journal": 0, "rejects": 7,
                                    "other": 2}


def test_fold_lag(tmp_path: Path) -> None:
    """Before the first fold every accepted report is waiting and there is no age; after ``fold_app`` none
    is; new uploads wait again; the age is the wall time minus ``checked_at``."""
    config = make_config(tmp_path)
    with TestClient(create_app(config)) as c:
        first = upload(c, b"".join(GOOD[:60]) + JUNK, "f1").json()
        _, samples = scrape(c)
        assert value(samples, "ldp_collector_fold_pending_reports", app="demo") == first["accepted"] == 60
        assert value(samples, "ldp_collector_fold_age_seconds", app="demo") is None
    doc = fold_app(config.data_dir, "demo", [SPEC])  # the segment was closed at shutdown
    assert doc["accepted"] == 60
    checked = datetime.strptime(doc["checked_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    with TestClient(create_app(config)) as c:  # the counters are rebuilt from the journal on start
        metrics: IngestMetrics = c.app.state.metrics  # type: ignore[attr-defined]
        metrics.state.wall = lambda: checked + 42.0
        _, samples = scrape(c)
        assert value(samples, "ldp_collector_fold_pending_reports", app="demo") == 0
        assert value(samples, "ldp_collector_fold_age_seconds", app="demo") == 42.0
        assert value(samples, "ldp_collector_fold_age_seconds", app="other") is None
        second = upload(c, b"".join(GOOD[60:85]), "f2").json()
        _, samples = scrape(c)
        assert value(samples, "ldp_collector_fold_pending_reports", app="demo") == second["accepted"] == 25
        estimates_path(config.data_dir, "demo").write_text("{damaged")  # read again: changed; ignored
        _, samples = scrape(c)
        assert value(samples, "ldp_collector_fold_pending_reports", app="demo") == 85
        assert value(samples, "ldp_collector_fold_age_seconds", app="demo") is None
        estimates_path(config.data_dir, "demo").write_text(json.dumps(  # folded more than this ingest service took
            {"accepted": 10**6, "checked_at": doc["checked_at"], "metrics": []}))
        _, samples = scrape(c)
        assert value(samples, "ldp_collector_fold_pending_reports", app="demo") == 0  # never negative
        assert value(samples, "ldp_collector_fold_age_seconds", app="demo") == 42.0


def test_commit_histogram(tmp_path: Path) -> None:
    """``on_commit`` (the writer thread's report of a group commit) feeds a thread-safe histogram per app,
    and a hook set before keeps being called."""
    config = make_config(tmp_path)
    earlier: list[tuple[str, int, float]] = []
    writer = SegmentWriter(config)
    writer.on_commit = lambda *a: earlier.append(a)
    metrics = IngestMetrics(config, writer)
    hook = writer.on_commit
    assert hook is not None
    threads = [threading.Thread(target=lambda: [hook("demo", 2, 0.004) for _ in range(500)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hook("other", 1, 3.0)
    page, ctype = metrics.render()  # the first page publishes: nothing was
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(page.decode()) for s in f.samples}
    assert value(samples, "ldp_collector_commit_duration_seconds_count", app="demo") == 2000 and len(earlier) == 2001
    for b in COMMIT_BUCKETS:
        assert value(samples, "ldp_collector_commit_duration_seconds_bucket", app="demo", le=str(b)) == \
            (2000 if b >= 0.004 else 0)
        assert value(samples, "ldp_collector_commit_duration_seconds_bucket", app="other", le=str(b)) == \
            (1 if b >= 3.0 else 0)


def test_commits_observed_by_the_writer(tmp_path: Path) -> None:
    """Uploads through the app: the writer calls ``on_commit`` once per group commit (1 to N for N batches)."""
    config = make_config(tmp_path)
    if not hasattr(SegmentWriter(config), "on_commit"):
        pytest.skip("SegmentWriter has no on_commit hook yet")
    with TestClient(create_app(config)) as c:
        for i in range(4):
            assert upload(c, b"".join(GOOD[i * 5:(i + 1) * 5]), f"c{i}").status_code == 200
        _, samples = scrape(c)
    assert 1 <= value(samples, "ldp_collector_commit_duration_seconds_count", app="demo") <= 4  # type: ignore[operator]


def test_token_required_when_set(tmp_path: Path) -> None:
    config = make_config(tmp_path, {"token_sha256": token_sha256(SCRAPER)})
    with TestClient(create_app(config)) as c:
        for auth in (None, "Bearer wrong", f"Bearer {TOKENS['demo']}", f"Basic {SCRAPER}"):
            r = c.get("/metrics", headers={} if auth is None else {"Authorization": auth})
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            assert r.json()["error"] == "unauthorized"
        page, samples = scrape(c, Authorization=f"Bearer {SCRAPER}")
        assert value(samples, "ldp_collector_requests_total", route="/metrics", status="401") == 4
        assert value(samples, "ldp_collector_refused_requests_total", reason="unauthorized") is None  # uploads only
        assert SCRAPER not in page and token_sha256(SCRAPER) not in page
        assert c.get("/healthz").status_code == 200  # still open


def test_disabled(tmp_path: Path) -> None:
    config = make_config(tmp_path, {"enabled": False})
    with TestClient(create_app(config)) as c:
        assert c.get("/metrics").status_code == 404
        assert c.app.state.metrics is None  # type: ignore[attr-defined]
        assert upload(c, GOOD[0], "x").status_code == 200


@pytest.mark.parametrize("table, message", [
    ({"enabled": "yes"}, "enabled must be true or false"),
    ({"token_sha256": "abc"}, "token_sha256 must be the 64"),
    ({"token_sha256": token_sha256(TOKENS["other"])}, "is the token of app 'other'"),
    ({"scrape": 1}, "unknown key(s) 'scrape'"),
])
def test_config_errors(tmp_path: Path, table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_config(tmp_path, table)


def test_openmetrics_when_asked(tmp_path: Path) -> None:
    with TestClient(create_app(make_config(tmp_path))) as c:
        upload(c, GOOD[0], "om")
        r = c.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/openmetrics-text")
    assert r.headers["cache-control"] == "no-store" and r.text.endswith("# EOF\n")
    families = {f.name: f for f in parse_openmetrics(r.text)}
    assert families["ldp_collector_reports_accepted"].type == "counter"
    assert families["ldp_collector_upload_duration_seconds"].type == "histogram"
    assert families["ldp_collector_write_queue_batches"].type == "gauge"


_ID = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-", min_size=1, max_size=40)
_LINE = st.one_of(st.sampled_from([g.decode().rstrip("\n") for g in GOOD[:20]]),
                  st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r"), max_size=60))


def test_fuzz_page_labels_and_sums(tmp_path: Path) -> None:
    """Any lines under any batch id: the page parses, its only label values are app names, known reasons,
    routes and status codes, no batch id or line is on it, and accepted + rejected = the lines answered."""
    config = make_config(tmp_path)
    refusals = {"bad_batch_id", "bad_gzip", "not_utf8", "empty_body", "unauthorized", "body_timeout", "too_large",
                "too_many_lines", "unsupported_media_type", "unsupported_encoding", "busy", "unavailable",
                "client_disconnected"}  # the errors of docs/ingest.md
    known = {*TOKENS, *REASONS, *ENVELOPE_REASONS, *refusals, "/v1/reports", "/healthz", "/metrics", *DISK_PARTS,
             *WRITER_STATES}
    lines_total = [0]
    with TestClient(create_app(config)) as c:

        @settings(max_examples=40, deadline=None)
        @given(_ID, st.lists(_LINE, min_size=1, max_size=8))
        def check(batch_id: str, lines: list[str]) -> None:
            batch_id = f"zz-batch-{batch_id}"
            before, _ = scrape(c)  # a line may be a piece of the page itself (a metric's name, its help text)
            r = upload(c, ("\n".join(lines) + "\n").encode(), batch_id)
            if r.status_code == 200 and not r.json()["duplicate"]:
                lines_total[0] += r.json()["lines"]
            page, samples = scrape(c)
            assert batch_id not in page
            for x in lines:
                assert len(x) < 12 or x not in page or x in before
            labels = {v for (name, ls), _ in samples.items() if name.startswith("ldp_collector_")
                      for k, v in ls if k not in ("le", "status")}
            assert labels <= known, labels - known
            total = sum(v for (name, _), v in samples.items()
                        if name in ("ldp_collector_reports_accepted_total", "ldp_collector_reports_rejected_total"))
            assert total == lines_total[0]

        check()


def test_registry_per_app(tmp_path: Path) -> None:
    """Two apps in one process count apart (no global registry)."""
    a, b = make_config(tmp_path / "a"), make_config(tmp_path / "b")
    with TestClient(create_app(a)) as ca, TestClient(create_app(b)) as cb:
        upload(ca, GOOD[0], "one")
        _, sa = scrape(ca)
        _, sb = scrape(cb)
    assert value(sa, "ldp_collector_requests_total", route="/v1/reports", status="200") == 1
    assert value(sb, "ldp_collector_requests_total", route="/v1/reports", status="200") is None
    assert json.loads((a.data_dir / "ingest.json").read_text())["apps"]["demo"]["batches"] == 1


def test_connection_counters(tmp_path: Path) -> None:
    """``ldp serve`` hands the HTTP protocol's ConnectionStats to the metrics: read live at each scrape."""
    from ldp.ingest.http import ConnectionStats

    stats = ConnectionStats(open=3, accepted=10, idle_closed=4, header_timeouts=2)
    app = create_app(make_config(tmp_path))
    app.state.metrics.watch_connections(stats)
    with TestClient(app) as c:
        _, samples = scrape(c)
        stats.open, stats.idle_closed = 7, 5
        _, later = scrape(c)
    assert value(samples, "ldp_collector_connections_open") == 3
    assert value(samples, "ldp_collector_connections_accepted_total") == 10
    assert value(samples, "ldp_collector_connections_idle_closed_total") == 4
    assert value(samples, "ldp_collector_connections_header_timeouts_total") == 2
    assert value(later, "ldp_collector_connections_open") == 7
    assert value(later, "ldp_collector_connections_idle_closed_total") == 5
