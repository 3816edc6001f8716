"""TelemetryClient.upload against a fake ingest service (stdlib ThreadingHTTPServer speaking the wire
protocol of the ingest service design: bearer token, batch ids deduplicated, counts by reason) with
scripted failures: lost answers, crashes, Retry-After, backoff, 413 splits, refusals."""

from __future__ import annotations

import email.utils
import gzip
import json
import logging
import math
import os
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from support import ROOT

from ldp.client.runtime import StateError, TelemetryClient
from ldp.client.uploader import UploadError, UploadProtocolError, backoff_delay, batch_id, parse_retry_after
from ldp.spec import CollectionSpec, EnvelopeError, parse_envelope

T0 = 86400.0 * 20000 + 3600.0

TOKEN = "test-token-0123456789abcdefghijklmnopqrstuvwxyzAB"


class FakeCollector:
    """``script``: one action per request, in order (then "ok"): "ok"; "drop" (close without an
    answer, store nothing); "store_drop" (store, then close without an answer: a lost 2xx);
    ``(status, headers, body)``: answer that instead. ``max_lines``: 413 above it."""

    def __init__(self, spec: CollectionSpec, token: str = TOKEN) -> None:
        self.spec, self.token = spec, token
        self.script: list[Any] = []
        self.max_lines: int | None = None
        self.requests: list[dict[str, Any]] = []
        self.stored: dict[str, dict[str, Any]] = {}
        self.lines: list[str] = []  # every stored line, in order
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/reports"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _answer(self, bid: str, lines: list[str]) -> dict[str, Any]:
        with self.lock:
            if bid in self.stored:
                return {**self.stored[bid], "duplicate": True}
            rejected: dict[str, int] = {}
            for line in lines:
                try:
                    parse_envelope(line, self.spec)
                except EnvelopeError as exc:
                    rejected[exc.reason] = rejected.get(exc.reason, 0) + 1
            answer = {"batch_id": bid, "accepted": len(lines) - sum(rejected.values()), "rejected": rejected,
                      "lines": len(lines), "duplicate": False}
            self.stored[bid] = answer
            self.lines.extend(lines)
            return answer

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw
                lines = body.decode("utf-8").splitlines()
                bid = self.headers.get("Ldp-Batch-Id", "")
                with fake.lock:
                    fake.requests.append({"headers": dict(self.headers), "raw": raw, "lines": lines, "batch_id": bid})
                    action = fake.script.pop(0) if fake.script else "ok"
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    return self._send(401, {"error": "unauthorized"}, {"WWW-Authenticate": "Bearer"})
                if isinstance(action, tuple):
                    status, headers, answer = action
                    return self._send(status, answer, headers)
                if fake.max_lines is not None and len(lines) > fake.max_lines:
                    return self._send(413, {"error": "too_many_lines", "detail": fake.max_lines})
                if action == "drop":
                    self.close_connection = True
                    return None
                answer = fake._answer(bid, lines)
                if action == "store_drop":
                    self.close_connection = True
                    return None
                if action == "store_cut":  # stored, then the answer cut after its headers (a replica killed)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "200")
                    self.end_headers()
                    self.wfile.write(b'{"batch')
                    self.close_connection = True
                    return None
                return self._send(200, answer)

        return Handler


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


def spec_doc(interval: int = 3600, max_batch: int = 10) -> dict[str, Any]:
    return {
        "spec_version": 1, "name": "upload_app",
        "budget": {"per_window": 100, "lifetime": 1000},
        "upload": {"min_interval_seconds": interval, "max_batch": max_batch},
        "metrics": {
            "color": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3, "labels": ["r", "g", "b"]},
                      "budget": {"per_report": 1}},
            "flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
        },
    }


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def collector():
    fake = FakeCollector(CollectionSpec.from_dict(spec_doc()))
    yield fake
    fake.close()


def make_client(tmp_path: Path, n: int = 3, clock: Clock | None = None, **spec) -> TelemetryClient:
    client = TelemetryClient(CollectionSpec.from_dict(spec_doc(**spec)), tmp_path / "state.db",
                             clock=clock or Clock(), rng=5, simulation=True)
    client.record_many([("color", "rgb"[i % 3]) if i % 2 else ("flag", i % 4 == 0) for i in range(n)])
    return client


def pins(tmp_path: Path) -> list[tuple[int, str]]:
    db = sqlite3.connect(tmp_path / "state.db")
    try:
        return db.execute("SELECT outbox, batch FROM ldp_client_batch ORDER BY outbox").fetchall()
    finally:
        db.close()


# --------------------------------------------------------------------------------------------
# The protocol: headers, body, acknowledgement
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_gzip", [True, False])
def test_a_2xx_acknowledges_the_batch(tmp_path, collector, use_gzip):
    with make_client(tmp_path, 3) as client:
        lines = [item.line for item in client.pending()]
        result = client.upload(collector.url, TOKEN, gzip=use_gzip, sleep=Sleeps())
        assert (result.batches, result.acknowledged, result.accepted, result.duplicates) == (1, 3, 3, 0)
        assert result.rejected == {} and result.stopped == "empty" and result.next_upload_at == T0 + 3600
        assert client.pending() == [] and client.counts()["color"] == {"reports": 1, "pending": 0, "uploaded": 1,
                                                                        "discarded": 0}
    [request] = collector.requests
    headers = request["headers"]
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert headers["Content-Type"] == "application/x-ndjson"
    assert headers.get("Content-Encoding") == ("gzip" if use_gzip else None)
    assert len(request["batch_id"]) == 32 and int(request["batch_id"], 16) >= 0
    body = gzip.decompress(request["raw"]) if use_gzip else request["raw"]
    assert body == ("\n".join(lines) + "\n").encode()  # the body round-trips to exactly the pending lines
    assert collector.lines == lines and pins(tmp_path) == []


def test_rejected_counts_are_summed_from_the_answers(tmp_path, collector):
    with make_client(tmp_path, 2) as client:
        with client._ledger.transaction() as db:  # one line the ingest service rejects (a foreign spec fingerprint)
            db.execute("UPDATE ldp_client_outbox SET line=replace(line, ?, '0000000000000000') WHERE id=1",
                       (client.spec.fingerprint,))
        result = client.upload(collector.url, TOKEN)
    assert (result.accepted, result.rejected, result.rejected_total, result.acknowledged) == (
        1, {"unknown_spec": 1}, 1, 2)


@pytest.mark.parametrize("lost", ["store_drop", "store_cut"])
def test_a_lost_answer_is_retried_under_the_same_id_and_stored_once(tmp_path, collector, lost):
    """No answer, or one cut before its Content-Length (not a "not sane" answer that would stop the call)."""
    collector.script = [lost]
    sleeps = Sleeps()
    with make_client(tmp_path, 3) as client:
        result = client.upload(collector.url, TOKEN, sleep=sleeps)
    first, second = collector.requests
    assert first["batch_id"] == second["batch_id"] and first["lines"] == second["lines"]
    assert len(collector.stored) == 1 and len(collector.lines) == 3
    assert (result.batches, result.acknowledged, result.duplicates) == (1, 3, 1)
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 1


@pytest.mark.parametrize("answer, what", [({"batch_id": "other", "accepted": 3, "rejected": {}, "lines": 3},
                                           "names batch 'other'"),
                                          ({"ok": True}, "lacks batch_id, accepted, rejected, lines")])
def test_a_2xx_without_the_batch_id_acknowledges_nothing(tmp_path, collector, answer, what):
    collector.script = [(200, {}, answer)]
    sleeps = Sleeps()
    with make_client(tmp_path, 3) as client, pytest.raises(UploadProtocolError, match=what) as info:
        client.upload(collector.url, TOKEN, max_attempts=2, sleep=sleeps)
    assert info.value.status == 200 and what in info.value.reason  # refused at once: a protocol error, no retry
    assert len(collector.requests) == 1 and sleeps == [] and len(pins(tmp_path)) == 3
    with make_client(tmp_path, 0) as client:
        assert len(client.pending()) == 3


# --------------------------------------------------------------------------------------------
# Waiting: Retry-After and backoff
# --------------------------------------------------------------------------------------------


def test_retry_after_seconds_and_http_date_are_honoured(tmp_path, collector):
    clock = Clock()
    date = email.utils.formatdate(T0 + 42, usegmt=True)
    collector.script = [(429, {"Retry-After": "7"}, {"error": "busy"}),
                        (503, {"Retry-After": date}, {"error": "shutting_down"}),
                        (429, {"Retry-After": "100000"}, {"error": "busy"})]
    sleeps = Sleeps()
    with make_client(tmp_path, 3, clock=clock) as client:
        result = client.upload(collector.url, TOKEN, sleep=sleeps, max_delay=120)
    assert sleeps == [7.0, 42.0, 120.0]  # the last capped at max_delay
    assert result.acknowledged == 3 and len({r["batch_id"] for r in collector.requests}) == 1


def test_backoff_grows_with_full_jitter_within_bounds(tmp_path, collector):
    collector.script = [(500, {}, {"error": "oops"})] * 6 + ["drop"]
    sleeps = Sleeps()
    with make_client(tmp_path, 3) as client:
        result = client.upload(collector.url, TOKEN, sleep=sleeps, max_delay=10)
    assert result.acknowledged == 3 and len(sleeps) == 7
    assert all(0 <= s <= min(10, 2 ** k) for k, s in enumerate(sleeps))
    draws = [[backoff_delay(attempt, 300) for _ in range(200)] for attempt in (1, 4, 8)]
    for bound, sample in zip((1, 8, 128), draws, strict=True):
        assert all(0 <= d <= bound for d in sample)
        assert len(set(sample)) > 150  # jittered, not a fixed delay
        assert max(sample) > bound / 2  # and it reaches up toward the bound: the delays grow
    assert max(backoff_delay(60, 5.0) for _ in range(50)) <= 5.0


def test_retries_give_up_after_max_attempts_keeping_items_and_pin(tmp_path, collector):
    collector.script = [(502, {}, {"error": "bad_gateway"})] * 3
    sleeps = Sleeps()
    with make_client(tmp_path, 3) as client:
        with pytest.raises(UploadError) as info:
            client.upload(collector.url, TOKEN, max_attempts=3, sleep=sleeps)
        assert info.value.status == 502 and info.value.reason == "bad_gateway" and len(sleeps) == 2
        pinned = pins(tmp_path)
        assert len(pinned) == 3 and len(client.pending()) == 3
        result = client.upload(collector.url, TOKEN, sleep=sleeps)  # the server is back
    assert result.acknowledged == 3 and {r["batch_id"] for r in collector.requests} == {pinned[0][1]}
    assert pins(tmp_path) == []


def test_connection_refused_retries_then_raises(tmp_path):
    fake = FakeCollector(CollectionSpec.from_dict(spec_doc()))
    fake.close()  # nothing listens there any more
    sleeps = Sleeps()
    with make_client(tmp_path, 2) as client, pytest.raises(UploadError, match="after 4 attempt") as info:
        client.upload(fake.url, TOKEN, max_attempts=4, sleep=sleeps, timeout=5)
    assert info.value.status is None and len(sleeps) == 3


# --------------------------------------------------------------------------------------------
# Refusals and 413
# --------------------------------------------------------------------------------------------


def test_a_wrong_token_raises_keeps_items_and_logs_no_secret(tmp_path, collector, caplog):
    caplog.set_level(logging.DEBUG)
    with make_client(tmp_path, 3) as client:
        lines = [item.line for item in client.pending()]
        with pytest.raises(UploadError) as info:
            client.upload(collector.url, "wrong-token-xyz", sleep=Sleeps())
        assert info.value.status == 401 and info.value.reason == "unauthorized"
        assert len(client.pending()) == 3 and len(pins(tmp_path)) == 3 and collector.stored == {}
        client.upload(collector.url, TOKEN)  # the log of a successful upload too
    text = caplog.text + str(info.value)
    assert "wrong-token-xyz" not in text and TOKEN not in text
    assert not any(line in text for line in lines) and "payload" not in text


@pytest.mark.parametrize("status", [400, 403, 404, 415, 422, 307])
def test_client_errors_and_redirects_are_not_retried(tmp_path, collector, status):
    collector.script = [(status, {"Location": "http://127.0.0.1:1/elsewhere"}, {"error": f"e{status}"})]
    sleeps = Sleeps()
    with make_client(tmp_path, 2) as client, pytest.raises(UploadError, match=f"HTTP {status}"):
        client.upload(collector.url, TOKEN, sleep=sleeps)
    assert sleeps == [] and len(collector.requests) == 1 and len(pins(tmp_path)) == 2


def test_413_splits_the_batch_until_it_fits(tmp_path, collector):
    collector.max_lines = 2
    with make_client(tmp_path, 5) as client:
        lines = [item.line for item in client.pending()]
        result = client.upload(collector.url, TOKEN, sleep=Sleeps())
    assert [len(r["lines"]) for r in collector.requests] == [5, 3, 2, 1, 2]  # 5 -> 3 + 2 -> (2 + 1) + 2
    assert collector.lines == lines and all(len(s["batch_id"]) == 32 for s in collector.stored.values())
    assert (result.batches, result.acknowledged, result.stopped) == (3, 5, "empty")


def test_413_of_a_single_line_raises(tmp_path, collector):
    collector.max_lines = 0
    with make_client(tmp_path, 2) as client, pytest.raises(UploadError, match="single report") as info:
        client.upload(collector.url, TOKEN, sleep=Sleeps())
    assert info.value.status == 413 and [len(r["lines"]) for r in collector.requests] == [2, 1]
    assert len(pins(tmp_path)) == 2


def test_the_upload_interval_is_respected(tmp_path, collector):
    clock = Clock()
    with make_client(tmp_path, 5, clock=clock, max_batch=2) as client:
        result = client.upload(collector.url, TOKEN)
        assert (result.batches, result.acknowledged, result.stopped, result.next_upload_at) == (
            1, 2, "interval", T0 + 3600)
        assert client.upload(collector.url, TOKEN).batches == 0 and len(collector.requests) == 1
        clock.t += 3600
        assert client.upload(collector.url, TOKEN).acknowledged == 2
    with make_client(tmp_path, 0, clock=clock, interval=0, max_batch=2) as client:  # no interval: all batches
        result = client.upload(collector.url, TOKEN)
        assert (result.batches, result.acknowledged, result.stopped) == (1, 1, "empty")
    assert len(collector.lines) == 5


def test_bad_arguments_are_refused_before_anything_is_sent(tmp_path, collector):
    with make_client(tmp_path, 1) as client:
        for kw in ({"url": "ftp://x/v1/reports"}, {"token": ""}, {"token": "a b"}, {"max_attempts": 0},
                   {"timeout": 0}):
            args = {"url": collector.url, "token": TOKEN, **kw}
            with pytest.raises(ValueError):
                client.upload(args.pop("url"), args.pop("token"), **args)
    assert collector.requests == [] and pins(tmp_path) == []


# --------------------------------------------------------------------------------------------
# The state file
# --------------------------------------------------------------------------------------------


def test_a_state_file_without_the_batch_table_is_upgraded(tmp_path, collector):
    make_client(tmp_path, 2).close()
    db = sqlite3.connect(tmp_path / "state.db")
    db.execute("DROP TABLE ldp_client_batch")  # as a file written by the previous version
    db.commit()
    db.close()
    with make_client(tmp_path, 0) as client:
        assert client.upload(collector.url, TOKEN).acknowledged == 2


def test_a_damaged_batch_salt_is_refused(tmp_path, collector):
    with make_client(tmp_path, 2) as client:
        client.upload(collector.url, TOKEN)
    db = sqlite3.connect(tmp_path / "state.db")
    db.execute("UPDATE ldp_client_meta SET value='zz' WHERE key='batch_salt'")
    db.commit()
    db.close()
    with make_client(tmp_path, 1, clock=Clock(T0 + 7200)) as client, pytest.raises(StateError, match="batch_salt"):
        client.upload(collector.url, TOKEN)


# --------------------------------------------------------------------------------------------
# Crashes: a child process uploads and dies at a named point; a new client resends the same batch
# --------------------------------------------------------------------------------------------

CHILD = r"""
import os, sys
import ldp.client.state
from ldp.client.runtime import TelemetryClient
spec_path, state_path, url, token, point = sys.argv[1:6]
client = TelemetryClient(spec_path, state_path, clock=lambda: float(sys.argv[6]))
ldp.client.state._fault = lambda p: os._exit(77) if p == point else None
client.upload(url, token, sleep=lambda s: None)
os._exit(0)
"""


@pytest.mark.parametrize("point, sent", [("pinned", 0), ("uploaded", 1), ("acknowledge", 1)])
def test_killed_while_uploading_resends_the_same_batch_once(tmp_path, collector, point, sent):
    make_client(tmp_path, 4).close()
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec_doc()))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    res = subprocess.run([sys.executable, str(script), str(spec_path), str(tmp_path / "state.db"), collector.url,
                          TOKEN, point, repr(T0)], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 77, res.stderr
    pinned = pins(tmp_path)
    assert len(pinned) == 4 and len({b for _, b in pinned}) == 1  # the batch survived the crash, pinned
    assert len(collector.requests) == sent and len(collector.stored) == sent
    with make_client(tmp_path, 0) as client:
        assert len(client.pending()) == 4  # nothing was acknowledged
        result = client.upload(collector.url, TOKEN)
        assert (result.acknowledged, result.duplicates) == (4, sent)
        assert client.counts()["flag"]["uploaded"] == 2
    assert {r["batch_id"] for r in collector.requests} == {pinned[0][1]}
    assert len({tuple(r["lines"]) for r in collector.requests}) == 1  # the same lines every time
    assert len(collector.stored) == 1 and len(collector.lines) == 4 and pins(tmp_path) == []


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**12), st.floats(0, 2e9), st.sampled_from(["", " ", "\t"]))
def test_retry_after_delta_seconds(seconds, now, pad):
    assert parse_retry_after(f"{pad}{seconds}{pad}", now) == float(seconds)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4102444800), st.integers(-10**6, 10**6))
def test_retry_after_http_dates(when, offset):
    now = float(when - offset)
    for text in (email.utils.formatdate(when, usegmt=True), email.utils.formatdate(when),
                 email.utils.formatdate(when, localtime=True)):
        assert parse_retry_after(text, now) == max(0.0, float(offset))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_retry_after_junk_never_raises(text):
    got = parse_retry_after(text, T0)
    assert got is None or (got >= 0 and math.isfinite(got) or got == math.inf)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32),
       st.lists(st.integers(1, 2**40), min_size=1, max_size=6, unique=True),
       st.lists(st.text(max_size=30), min_size=1, max_size=6))
def test_batch_ids_are_deterministic_and_distinct(salt, other_salt, ids, lines):
    ids, lines = sorted(ids), (lines * 6)[:len(ids)]
    bid = batch_id(salt, ids, lines)
    assert bid == batch_id(salt, list(ids), list(lines))  # a retry recomputes the same id
    assert len(bid) == 32 and all(c in "0123456789abcdef" for c in bid)
    if other_salt != salt:
        assert batch_id(other_salt, ids, lines) != bid  # another device, the same lines
    assert batch_id(salt, [i + 1 for i in ids], lines) != bid  # the same lines again, later: a new batch
    assert batch_id(salt, ids, [*lines[:-1], lines[-1] + "x"]) != bid


def test_two_devices_with_identical_reports_send_different_ids(tmp_path, collector):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        with make_client(tmp_path / name, 3) as client:  # rng=5: the very same lines on both
            client.upload(collector.url, TOKEN)
    one, two = collector.requests
    assert one["lines"] == two["lines"] and one["batch_id"] != two["batch_id"]
    assert len(collector.lines) == 6


def test_pinned_items_acknowledged_elsewhere_are_unpinned(tmp_path, collector):
    collector.script = [(500, {}, {"error": "oops"})]
    with make_client(tmp_path, 4) as client:
        with pytest.raises(UploadError):
            client.upload(collector.url, TOKEN, max_attempts=1)
        pinned = pins(tmp_path)
        client.acknowledge([pinned[0][0]])  # the app acknowledged one by hand: it was delivered
        with client._ledger.transaction() as db:  # an older version deletes outbox rows only
            db.execute("DELETE FROM ldp_client_outbox WHERE id=?", (pinned[1][0],))
        result = client.upload(collector.url, TOKEN)
    assert result.acknowledged == 2 and collector.requests[-1]["batch_id"] == pinned[0][1]
    assert [len(r["lines"]) for r in collector.requests] == [4, 2] and pins(tmp_path) == []


def test_a_damaged_pin_is_refused(tmp_path, collector):
    collector.script = [(500, {}, {"error": "oops"})]
    with make_client(tmp_path, 2) as client:
        with pytest.raises(UploadError):
            client.upload(collector.url, TOKEN, max_attempts=1)
        with client._ledger.transaction() as db:
            db.execute("UPDATE ldp_client_batch SET batch='x y'")
        with pytest.raises(StateError, match="pinned batch id 'x y'"):
            client.upload(collector.url, TOKEN)
