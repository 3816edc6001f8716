"""The ingest service app through Starlette's TestClient: auth, headers, limits, exactly-once, counts,
logs; the stored segments read back by ``ldp fold``."""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("starlette")
from starlette.testclient import TestClient
from support import ROOT
from support.aggregate_files import assert_same_aggregate

from ldp.ingest.app import ACCESS_LOGGER, create_app
from ldp.ingest.config import IngestConfig, Limits, parse_config, token_sha256
from ldp.ingest.upload import BATCH_ID_RE, IngestError, check_batch_id, prepare_body
from ldp.jobs.job import fold_files

SPEC = ROOT / "examples" / "collection.json"
TOKEN = "test-token-0123456789abcdefghijklmnopqrstuvwxyz"
LINES = (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
GOOD = [ln for ln in LINES if ln.startswith(b'{"spec":"3455db860d356e46"')]


def make_config(tmp_path: Path, **limits: float) -> IngestConfig:
    doc = {"data_dir": "data", "limits": limits,
           "apps": {"demo": {"token_sha256": token_sha256(TOKEN), "specs": [str(SPEC)]}}}
    return parse_config(doc, tmp_path)


def headers(batch_id: str = "b1", **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-ndjson", "Ldp-Batch-Id": batch_id,
            **extra}


@pytest.fixture
def config(tmp_path: Path) -> IngestConfig:
    return make_config(tmp_path, max_body_bytes=200_000, max_decompressed_bytes=400_000, max_lines=1000)


@pytest.fixture
def client(config: IngestConfig):
    with TestClient(create_app(config)) as c:
        yield c


def lines(data: bytes) -> list[bytes]:
    """The lines of ``data``, sorted: what can be compared once segments are shuffled on close."""
    return sorted(data.splitlines(keepends=True))


def stored_lines(config: IngestConfig) -> list[bytes]:
    d = config.app_dir("demo") / "segments"
    return lines(b"".join(p.read_bytes() for p in d.rglob("*.jsonl")))


def test_accepts_and_counts(client: TestClient, config: IngestConfig) -> None:
    body = b"".join(GOOD[:50]) + b"not json\n" + b'{"spec":"0000000000000000","metric":"x","window":1,"report":{}}'
    r = client.post("/v1/reports", content=body, headers=headers())
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["batch_id"] == "b1" and doc["accepted"] == 50 and doc["lines"] == 52 and not doc["duplicate"]
    assert sum(doc["rejected"].values()) == 2 and doc["rejected"]["not_json"] == 1
    assert stored_lines(config) == lines(body + b"\n")  # rejected lines are stored too, a final newline added


def test_retry_is_stored_once(client: TestClient, config: IngestConfig) -> None:
    body = b"".join(GOOD[:20])
    first = client.post("/v1/reports", content=body, headers=headers("again"))
    again = client.post("/v1/reports", content=gzip.compress(body), headers=headers("again", **{
        "Content-Encoding": "gzip"}))
    assert again.status_code == 200
    assert {**first.json(), "duplicate": True} == again.json()
    assert stored_lines(config) == lines(body)


def test_closed_segments_aggregate_to_the_accepted_reports(config: IngestConfig, tmp_path: Path) -> None:
    sent = []
    with TestClient(create_app(config)) as c:
        for i in range(5):
            body = b"".join(LINES[i * 100:(i + 1) * 100])
            sent.append(body)
            assert c.post("/v1/reports", content=body, headers=headers(f"b{i}")).status_code == 200
    closed = config.closed_dir("demo")
    assert len(list(closed.glob("*.jsonl"))) == 1 and not list(closed.parent.glob("open/*"))
    got = fold_files([closed], [SPEC], tmp_path / "agg", progress=False)
    (tmp_path / "sent.jsonl").write_bytes(b"".join(sent))
    want = fold_files([tmp_path / "sent.jsonl"], [SPEC], tmp_path / "agg2", progress=False)
    assert (got.accepted, got.rejected) == (want.accepted, want.rejected) and got.accepted == 498
    for name in want.aggregates:
        assert_same_aggregate(tmp_path / "agg" / "aggregates" / f"{name}.agg",
                              tmp_path / "agg2" / "aggregates" / f"{name}.agg")
    counters = json.loads((config.data_dir / "ingest.json").read_text())
    assert counters["apps"]["demo"]["accepted"] == 498 and counters["apps"]["demo"]["batches"] == 5


@pytest.mark.parametrize("auth", [None, "Bearer wrong", f"Basic {TOKEN}", "Bearer"])
def test_auth_401_stores_nothing(client: TestClient, config: IngestConfig, auth: str | None) -> None:
    h = headers()
    del h["Authorization"]
    if auth is not None:
        h["Authorization"] = auth
    r = client.post("/v1/reports", content=GOOD[0], headers=h)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert stored_lines(config) == lines(b"")


@pytest.mark.parametrize("ctype, encoding", [("text/plain", None), ("application/json", None),
                                             ("application/x-ndjson; charset=latin-1", None),
                                             ("application/x-ndjson", "br")])
def test_415(client: TestClient, ctype: str, encoding: str | None) -> None:
    extra = {"Content-Type": ctype} | ({"Content-Encoding": encoding} if encoding else {})
    assert client.post("/v1/reports", content=GOOD[0], headers=headers(**extra)).status_code == 415


def test_jsonl_type_and_charset_accepted(client: TestClient) -> None:
    for i, ctype in enumerate(("application/jsonl", "application/x-ndjson; charset=utf-8")):
        r = client.post("/v1/reports", content=GOOD[i], headers=headers(f"t{i}", **{"Content-Type": ctype}))
        assert r.status_code == 200


def test_413_body_bomb_and_lines(client: TestClient, config: IngestConfig) -> None:
    big = b"x" * 200_001
    assert client.post("/v1/reports", content=big, headers=headers()).status_code == 413
    bomb = gzip.compress(b"\n" * 10_000_000)  # ~10 kB that inflate to 10 MB
    assert len(bomb) < 200_000
    r = client.post("/v1/reports", content=bomb, headers=headers(**{"Content-Encoding": "gzip"}))
    assert r.status_code == 413 and r.json()["error"] == "too_large"
    many = b"".join(GOOD[i % len(GOOD)] for i in range(1001))
    r = client.post("/v1/reports", content=gzip.compress(many), headers=headers(**{"Content-Encoding": "gzip"}))
    assert r.status_code == 413 and r.json()["error"] == "too_many_lines"
    assert stored_lines(config) == lines(b"")


def test_streamed_body_over_the_limit(client: TestClient, config: IngestConfig) -> None:
    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(30):
            yield b"y" * 10_000

    assert client.post("/v1/reports", content=chunks(), headers=headers()).status_code == 413


@pytest.mark.parametrize("body, gz, reason", [
    (b"not gzip at all", True, "bad_gzip"),
    (gzip.compress(b"{}\n", mtime=0)[:-5], True, "bad_gzip"),
    (gzip.compress(b"{}\n", mtime=0) + b"trailing", True, "bad_gzip"),
    (b"\xff\xfe{}\n", False, "not_utf8"),
    (b"", False, "empty_body"),
    (b"\n\n", False, "empty_body"),
])
def test_400(client: TestClient, config: IngestConfig, body: bytes, gz: bool, reason: str) -> None:
    h = headers(**({"Content-Encoding": "gzip"} if gz else {}))
    r = client.post("/v1/reports", content=body, headers=h)
    assert r.status_code == 400 and r.json()["error"] == reason
    assert stored_lines(config) == lines(b"")


@pytest.mark.parametrize("batch_id", [None, "", "a b", "x" * 129, "é", "a/b"])
def test_bad_batch_id(client: TestClient, batch_id: str | None) -> None:
    h = headers()
    del h["Ldp-Batch-Id"]
    if batch_id is not None:
        h["Ldp-Batch-Id"] = batch_id
    r = client.post("/v1/reports", content=GOOD[0], headers={k: v.encode() for k, v in h.items()})
    assert r.status_code == 400 and r.json()["error"] == "bad_batch_id"


def test_queue_full_429(config: IngestConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    from ldp.ingest import segments

    def full(self: segments.SegmentWriter, batch: segments.Batch) -> None:
        raise segments.QueueFull()

    with TestClient(create_app(config)) as c:
        monkeypatch.setattr(segments.SegmentWriter, "submit", full)
        r = c.post("/v1/reports", content=GOOD[0], headers=headers())
        assert r.status_code == 429 and r.headers["retry-after"] == "1"


def test_healthz(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_logs_hold_no_token_and_no_report(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret_line = b"".join(GOOD[:3]) + b'{"secret": "do-not-log-me"}\n'
    client.post("/v1/reports", content=secret_line, headers=headers("logged"))
    client.post("/v1/reports", content=b"\xffdo-not-log-me", headers=headers("bad"))
    client.post("/v1/reports", content=secret_line, headers=headers(Authorization=f"Bearer {TOKEN}x"))
    access = [json.loads(r.getMessage()) for r in caplog.records if r.name == ACCESS_LOGGER]
    assert [a["status"] for a in access] == [200, 400, 401]
    assert access[0]["app"] == "demo" and access[0]["lines"] == 4 and access[0]["batch_id"] == "logged"
    text = caplog.text
    assert TOKEN not in text and "do-not-log-me" not in text and "3455db860d356e46" not in text


def test_internal_error_logs_no_content(client: TestClient, monkeypatch: pytest.MonkeyPatch,
                                        caplog: pytest.LogCaptureFixture) -> None:
    from ldp.ingest import app as app_module

    def boom(body: bytes, specs: object) -> None:
        raise ValueError(body.decode())

    monkeypatch.setattr(app_module, "check_body", boom)
    caplog.set_level(logging.DEBUG)
    r = client.post("/v1/reports", content=b"do-not-log-me\n", headers=headers())
    assert r.status_code == 500 and r.json()["error"] == "internal"
    assert "do-not-log-me" not in caplog.text and "ValueError" in caplog.text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.integers(1, 20))
def test_fuzz_body(body: bytes, max_lines: int) -> None:
    """prepare_body either refuses with a 400/413 or returns the body as stored: UTF-8, newline-ended."""
    try:
        out = prepare_body(body, max_lines)
    except IngestError as err:
        assert (err.status, err.reason) in {(400, "empty_body"), (400, "not_utf8"), (413, "too_many_lines")}
        return
    out.decode("utf-8")
    assert out.endswith(b"\n") and out.rstrip(b"\n") == body.rstrip(b"\n") and out.count(b"\n") <= max_lines


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=140))
def test_fuzz_batch_id(value: str) -> None:
    try:
        assert check_batch_id(value) == value
    except IngestError as err:
        assert err.status == 400 and not BATCH_ID_RE.match(value)
    else:
        assert 1 <= len(value) <= 128 and value.isascii()


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=200))
def test_fuzz_gzip(data: bytes) -> None:
    """Any bytes as a gzip body: a clean 400/413 or the data, never another error."""
    from ldp.ingest.upload import Gunzip

    for payload in (data, gzip.compress(data), gzip.compress(data)[:len(data) // 2 + 1]):
        g = Gunzip(150)
        try:
            g.feed(payload)
            out = g.finish()
        except IngestError as err:
            assert err.status in (400, 413)
        else:
            assert out == zlib.decompress(payload, 16 + zlib.MAX_WBITS) and len(out) <= 150


def test_limits_defaults() -> None:
    assert Limits().max_lines == 5000


def test_bodies_held_at_once_are_bounded(tmp_path: Path) -> None:
    """``max_buffered_bytes`` bounds the bodies all requests hold together: over it, 429 with
    Retry-After and nothing stored; the budget is given back, so the next batch that fits goes in."""
    cfg = make_config(tmp_path, max_buffered_bytes=3000)
    big, small = b"".join(GOOD[:40]), b"".join(GOOD[:5])
    assert len(big) > 3000 > len(small)
    with TestClient(create_app(cfg)) as c:
        for body, extra in ((big, {}), (gzip.compress(big), {"Content-Encoding": "gzip"})):
            r = c.post("/v1/reports", content=body, headers=headers("big", **extra))
            assert r.status_code == 429 and r.headers["retry-after"] == "1" and r.json()["error"] == "busy"
        for i in range(3):  # each answered request gave its bytes back
            assert c.post("/v1/reports", content=small, headers=headers(f"s{i}")).status_code == 200
    assert stored_lines(cfg) == lines(small * 3)


def test_startup_loads_what_the_first_upload_needs(config: IngestConfig) -> None:
    """The protocol registry (about 20 ms of imports) is built at start-up, not in the first upload."""
    from ldp.protocols.registry import protocols

    protocols.cache_clear()
    with TestClient(create_app(config)):
        assert protocols.cache_info().currsize == 1
