"""The uploader against an ingest service that misbehaves on purpose (a stdlib HTTP server on loopback): answers that
trickle one byte at a time or never come (the per-request deadline ``timeout`` and the per-call ``call_timeout`` end
them, also with two CPU hogs beside the test), and 2xx answers whose counts are absurd (refused as a protocol error,
the outbox unchanged)."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import socket
import sqlite3
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support.load import cpu_hogs

from ldp.client import TelemetryClient, UploadError
from ldp.client.transport import _DeadlineSocket, default_opener
from ldp.client.uploader import MAX_ANSWER, UploadProtocolError
from ldp.spec import CollectionSpec
from ldp.spec.schema import MAX_BATCH

T0 = 86400.0 * 20000 + 3600.0
TOKEN = "deadline-token"
GAP = 0.2  # seconds between two trickled bytes
SLACK = 0.5  # seconds a deadline may be overrun: thread switches on a loaded 2-core machine (the overrun is ~ms)
LOADED = 3.0  # with two CPU hogs beside the test, an upload ends before this many times its deadline (a deadline
# that is not kept lets the trickle run for 200 s, the silent server for 60 s: far beyond it either way)


class Collector:
    """``mode`` says how each request is answered: ``"ok"`` (a sane answer at once), ``"slow"`` (the same after
    ``delay`` s), ``"trickle_body"`` (200 and its headers at once, then a long body one byte per ``GAP`` s),
    ``"trickle_headers"`` (the status line and headers one byte per ``GAP`` s), ``"silent"`` (the request read,
    no answer for 60 s), ``"busy"`` (429, Retry-After 100 s), or a function of (batch id, lines) giving the body of
    a 200. Batches are stored (by id, once) when their request arrives."""

    def __init__(self) -> None:
        self.mode: str | Callable[[str, int], bytes] = "ok"
        self.delay = 0.3
        self.requests: list[tuple[str, int]] = []
        self.stored: dict[str, int] = {}
        self.lock = threading.Lock()
        self.closing = threading.Event()  # ends the silent answers' wait
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/reports"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()

    def answer(self, bid: str, n: int) -> bytes:
        with self.lock:
            duplicate = bid in self.stored
            self.stored.setdefault(bid, n)
        return json.dumps({"batch_id": bid, "accepted": n, "rejected": {}, "lines": n,
                           "duplicate": duplicate}).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _raw(self, data: bytes, gap: float = 0.0) -> None:
                try:
                    if not gap:
                        self.wfile.write(data)
                    for i in range(len(data) if gap else 0):
                        self.wfile.write(data[i:i + 1])
                        time.sleep(gap)
                except OSError:  # the client gave up
                    self.close_connection = True

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw
                bid, n = self.headers["Ldp-Batch-Id"], len(body.splitlines())
                with fake.lock:
                    fake.requests.append((bid, n))
                mode = fake.mode
                if mode == "silent":
                    fake.closing.wait(60)
                    self.close_connection = True
                    return None
                if mode == "busy":
                    return self._raw(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 100\r\nContent-Length: 0\r\n\r\n")
                if callable(mode):
                    data = mode(bid, n)
                    return self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
                data = fake.answer(bid, n)
                if mode == "slow":
                    time.sleep(fake.delay)
                head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                if mode == "trickle_body":
                    data = data + b" " * 1000  # 200 s at one byte per GAP
                    self._raw(head % len(data))
                    return self._raw(data, GAP)
                if mode == "trickle_headers":
                    return self._raw(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"x" * 1000 + b"\r\n", GAP)
                return self._raw(head % len(data) + data)

        return Handler


def spec(max_batch: int = 10) -> CollectionSpec:
    return CollectionSpec.from_dict({
        "spec_version": 1, "name": "deadline_app",
        "budget": {"per_window": 1e6, "lifetime": 1e7},
        "upload": {"min_interval_seconds": 0, "max_batch": max_batch},
        "metrics": {"flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}}},
    })


def make_client(path: Path, n: int, max_batch: int = 10) -> TelemetryClient:
    client = TelemetryClient(spec(max_batch), path / "state.db", clock=lambda: T0, rng=3, simulation=True)
    client.record_many([("flag", i % 2 == 0) for i in range(n)])
    return client


def state(path: Path) -> tuple[list[int], list[tuple[int, str]]]:
    """The outbox ids and the pins of the state file, read by another connection."""
    db = sqlite3.connect(path / "state.db")
    try:
        return ([i for (i,) in db.execute("SELECT id FROM ldp_client_outbox ORDER BY id")],
                db.execute("SELECT outbox, batch FROM ldp_client_batch ORDER BY outbox").fetchall())
    finally:
        db.close()


@pytest.fixture
def collector():
    fake = Collector()
    yield fake
    fake.close()


# --------------------------------------------------------------------------------------------------------------
# Deadlines
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["trickle_body", "trickle_headers"])
def test_a_trickling_answer_ends_at_the_request_deadline(tmp_path, collector, mode):
    collector.mode = mode
    with make_client(tmp_path, 3) as client:
        start = time.monotonic()
        with pytest.raises(UploadError, match="after 1 attempt") as info:
            client.upload(collector.url, TOKEN, timeout=1.0, max_attempts=1)
        elapsed = time.monotonic() - start
    # each byte comes within GAP (< timeout): a timeout per socket read would wait for all ~1000 (200 s)
    assert 1.0 <= elapsed < 1.0 + SLACK, elapsed
    assert info.value.status is None and "deadline" in info.value.reason
    ids, pinned = state(tmp_path)
    assert len(ids) == 3 and [i for i, _ in pinned] == ids  # nothing acknowledged; the batch stays pinned


def test_the_call_deadline_cuts_retries_of_a_trickling_answer(tmp_path, collector):
    collector.mode = "trickle_body"
    sleeps: list[float] = []
    with make_client(tmp_path, 3) as client:
        start = time.monotonic()
        result = client.upload(collector.url, TOKEN, timeout=0.5, call_timeout=1.2, max_delay=0, sleep=sleeps.append)
        elapsed = time.monotonic() - start
    assert 1.2 <= elapsed < 1.2 + SLACK, elapsed
    assert (result.stopped, result.acknowledged, result.batches) == ("deadline", 0, 0)
    assert len(collector.requests) == 3 and len(sleeps) == 2  # 0.5 s + 0.5 s + the last 0.2 s cut by the call
    ids, pinned = state(tmp_path)
    assert len(ids) == 3 and len(pinned) == 3


def test_the_call_deadline_stops_between_batches_and_the_rest_stays_queued(tmp_path, collector):
    collector.mode, collector.delay = "slow", 0.4
    with make_client(tmp_path, 6, max_batch=1) as client:
        start = time.monotonic()
        result = client.upload(collector.url, TOKEN, timeout=5, call_timeout=1.0)
        elapsed = time.monotonic() - start
        # 0.4 s per batch: 2 in time, the 3rd sent at 0.8 s (stored by the ingest service) and cut at 1.0 s; on a loaded
        # machine a batch's own overhead can push the 2nd past the deadline: then 1 in time and the 2nd cut
        assert 1.0 <= elapsed < 1.0 + SLACK, elapsed
        assert result.stopped == "deadline" and result.acknowledged in (1, 2)
        assert result.acknowledged == result.batches == len(collector.stored) - 1
        ids, pinned = state(tmp_path)
        assert len(ids) == 6 - result.acknowledged and [i for i, _ in pinned] == ids[:1]
        collector.mode = "ok"
        rest = client.upload(collector.url, TOKEN)
    assert (rest.stopped, rest.acknowledged, rest.duplicates) == ("empty", 6 - result.acknowledged, 1)
    assert sum(collector.stored.values()) == 6 and state(tmp_path) == ([], [])  # each line stored once


def test_a_retry_after_beyond_the_call_deadline_stops_without_waiting(tmp_path, collector):
    collector.mode = "busy"
    sleeps: list[float] = []
    with make_client(tmp_path, 2) as client:
        start = time.monotonic()
        result = client.upload(collector.url, TOKEN, call_timeout=30, sleep=sleeps.append)
        assert time.monotonic() - start < SLACK and sleeps == [] and len(collector.requests) == 1
        assert result.stopped == "deadline" and len(state(tmp_path)[1]) == 2


@pytest.fixture
def hogs():
    """Two busy-looping processes beside the test (a loaded 2-core machine), killed after it."""
    with cpu_hogs(2) as procs:
        yield procs


@pytest.mark.parametrize("mode", ["silent", "trickle_body", "trickle_headers"])
def test_under_load_a_silent_or_trickling_answer_ends_at_the_request_deadline(tmp_path, collector, hogs, mode):
    collector.mode = mode
    with make_client(tmp_path, 3) as client:
        start = time.monotonic()
        with pytest.raises(UploadError, match="after 1 attempt") as info:
            client.upload(collector.url, TOKEN, timeout=0.5, max_attempts=1)
        elapsed = time.monotonic() - start
    assert all(h.poll() is None for h in hogs)  # the load was there all along
    assert 0.5 <= elapsed < 0.5 * LOADED, elapsed
    assert info.value.status is None and "deadline" in info.value.reason
    assert len(collector.requests) == 1
    ids, pinned = state(tmp_path)
    assert len(ids) == 3 and [i for i, _ in pinned] == ids


@pytest.mark.parametrize("mode", ["silent", "trickle_body"])
def test_under_load_the_call_deadline_cuts_a_long_request_deadline(tmp_path, collector, hogs, mode):
    collector.mode = mode
    with make_client(tmp_path, 2) as client:
        start = time.monotonic()
        result = client.upload(collector.url, TOKEN, timeout=60, call_timeout=0.7)
        elapsed = time.monotonic() - start
    assert all(h.poll() is None for h in hogs)
    assert 0.7 <= elapsed < 0.7 * LOADED, elapsed  # the call's 0.7 s, not the request's 60 s
    assert (result.stopped, result.acknowledged, result.batches) == ("deadline", 0, 0)
    assert len(collector.requests) == 1 and len(state(tmp_path)[1]) == 2  # the part stays pinned


def test_a_send_to_a_peer_that_never_reads_ends_at_the_deadline():
    ours, theirs = socket.socketpair()
    try:
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            _DeadlineSocket(ours, start + 0.5).sendall(b"x" * (32 << 20))  # far more than the buffers hold
        assert 0.5 <= time.monotonic() - start < 0.5 + SLACK
    finally:
        ours.close()
        theirs.close()


def test_a_tls_handshake_that_never_comes_ends_at_the_deadline(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))  # the kernel completes the TCP connection; no one answers
    try:
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1/reports"
        with make_client(tmp_path, 1) as client:
            start = time.monotonic()
            with pytest.raises(UploadError) as info:
                client.upload(url, TOKEN, timeout=0.5, max_attempts=1)
            assert 0.5 <= time.monotonic() - start < 0.5 + SLACK and "deadline" in info.value.reason
    finally:
        listener.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
@pytest.mark.parametrize("mode", ["ok", "trickle_headers"])
def test_https_answers_end_at_the_deadline_too(tmp_path, collector, mode):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", tmp_path / "key.pem", "-out", tmp_path / "cert.pem", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    collector.server.socket = server_context.wrap_socket(collector.server.socket, server_side=True)
    collector.mode = mode
    opener = default_opener(context=ssl.create_default_context(cafile=tmp_path / "cert.pem"))
    with make_client(tmp_path, 3) as client:
        start = time.monotonic()
        if mode == "ok":
            assert client.upload(collector.url.replace("http:", "https:"), TOKEN, opener=opener).acknowledged == 3
            return
        with pytest.raises(UploadError) as info:
            client.upload(collector.url.replace("http:", "https:"), TOKEN, timeout=0.5, max_attempts=1,
                          opener=opener)
        assert 0.5 <= time.monotonic() - start < 0.5 + SLACK and "deadline" in info.value.reason
    with pytest.raises(ValueError, match="context"):
        default_opener(urllib.request.HTTPSHandler())


def test_bad_deadlines_are_refused_before_anything_is_sent(tmp_path, collector):
    with make_client(tmp_path, 1) as client:
        for kw in ({"timeout": math.inf}, {"timeout": math.nan}, {"timeout": -1}, {"timeout": True},
                   {"timeout": "5"}, {"call_timeout": 0}, {"call_timeout": math.inf}, {"call_timeout": -2.5},
                   {"call_timeout": False}, {"call_timeout": 10**400}, {"max_delay": math.nan}):
            with pytest.raises(ValueError, match=next(iter(kw))):
                client.upload(collector.url, TOKEN, **kw)
    assert collector.requests == [] and state(tmp_path)[1] == []


# --------------------------------------------------------------------------------------------------------------
# Absurd answers: never an acknowledgement unless the answer is exactly sane
# --------------------------------------------------------------------------------------------------------------

N = 3  # lines per batch
JUNK: list[Any] = [-1, -5, 1e30, 2.5, 3.0, True, False, None, "3", [], {}, 10**30, -(10**30)]
REASONS = ["bad_value", "unknown_spec", "not_json"]


@st.composite
def sane_answers(draw: st.DrawFn) -> dict[str, Any]:
    """A sane answer for a batch of ``N`` lines (``"BID"`` stands for its id)."""
    duplicate = draw(st.sampled_from([None, False, True]))
    lines = N + (draw(st.integers(0, 5)) if duplicate else 0)
    reasons = draw(st.lists(st.sampled_from(REASONS), unique=True, max_size=3))
    cuts = sorted(draw(st.lists(st.integers(0, lines), min_size=len(reasons), max_size=len(reasons))))
    rejected = {r: b - a for r, a, b in zip(reasons, [0, *cuts][:len(cuts)], cuts, strict=True)}
    answer: dict[str, Any] = {"batch_id": "BID", "accepted": lines - sum(rejected.values()), "rejected": rejected,
                              "lines": lines}
    if duplicate is not None:
        answer["duplicate"] = duplicate
    if draw(st.booleans()):
        answer["note"] = draw(st.sampled_from([None, "x", 1, [1], {"a": -1}]))  # other keys are ignored
    return answer


def _break(answer: dict[str, Any], how: str, junk: Any, k: int) -> Any:
    """``answer`` made absurd: every case here is refused, whatever ``junk`` (from ``JUNK``) and ``k`` (!= 0)."""
    a = dict(answer)
    if how == "junk_count":  # no junk value is a count: negative, not an int, or breaking the sums
        a["accepted" if k > 0 else "lines"] = junk
    elif how == "junk_rejected":
        a["rejected"] = {"": 0} if junk == {} else {"bad_value": junk} if isinstance(junk, (int, float)) else junk
    elif how == "missing":
        del a[["batch_id", "accepted", "rejected", "lines"][abs(k) % 4]]
    elif how == "other_id":
        a["batch_id"] = junk
    elif how == "junk_duplicate":
        a["duplicate"] = "yes" if isinstance(junk, bool) else junk
    elif how == "sum":
        a["accepted"] += k
    elif how == "lines":  # the sums add up, to a line count that is not the one sent
        new = (N - 1 if k < 0 else MAX_BATCH + 1) if a.get("duplicate") else a["lines"] + k
        a["accepted"] += new - a["lines"]
        a["lines"] = new
    elif how == "top":
        return [a] if k > 0 else junk
    return a


ABSURD_BODIES = [b"", b"<html>ok</html>", b"{", b"\xff\xfe", b'{"batch_id": "BID", "accepted": NaN}',
                 b'{"batch_id": "BID", "accepted": 3, "accepted": 3, "rejected": {}, "lines": 3}',
                 b'{"batch_id": "BID", "accepted": 3, "rejected": {}, "lines": 3}' + b" " * MAX_ANSWER,
                 b'{"batch_id": "BID", "accepted": 3, "rejected": {}, "lines": 3e0}', b"[" * 50_000]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    """One ingest service and one client for every example (an acknowledged batch is replaced by a new one)."""
    fake = Collector()
    path = tmp_path_factory.mktemp("answers")
    client = make_client(path, N)
    yield fake, client, path
    client.close()
    fake.close()


def _exchange(fixed: Any, body: Callable[[str], bytes]) -> tuple[Any, list[int], list[tuple[int, str]], str]:
    """Upload one batch answered with ``body(batch id)``: the result or the error, and the state before."""
    fake, client, path = fixed
    if not client.has_pending():
        client.record_many([("flag", True)] * N)
    bid = client.next_batch()[0]  # pinned now: the id the answer is written for
    before = state(path)
    fake.requests.clear()
    fake.mode = lambda sent_bid, n: body(sent_bid)
    try:
        outcome: Any = client.upload(fake.url, TOKEN, timeout=5, max_attempts=3, sleep=lambda s: None)
    except UploadProtocolError as exc:
        outcome = exc
    assert len(fake.requests) == 1  # a protocol error is not retried
    return outcome, *before, bid


def _check_refused(outcome: Any, before: tuple[list[int], list[tuple[int, str]]], path: Path) -> None:
    assert isinstance(outcome, UploadProtocolError), outcome
    assert outcome.status == 200 and outcome.reason and "not sane" in str(outcome)
    assert outcome.result.acknowledged == 0 and state(path) == before  # the outbox and the pin unchanged


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sane_answers(), st.sampled_from(["none", "junk_count", "junk_rejected", "missing", "other_id",
                                        "junk_duplicate", "sum", "lines", "top"]),
       st.sampled_from(JUNK), st.integers(-4, 4).filter(bool))
def test_only_a_sane_answer_acknowledges(fixed, answer, how, junk, k):
    sent = answer if how == "none" else _break(answer, how, junk, k)
    outcome, ids, pinned, bid = _exchange(fixed, lambda b: json.dumps(sent).replace('"BID"', json.dumps(b)).encode())
    if how != "none":
        return _check_refused(outcome, (ids, pinned), fixed[2])
    assert not isinstance(outcome, Exception), outcome
    assert (outcome.acknowledged, outcome.batches, outcome.accepted) == (N, 1, answer["accepted"])
    assert dict(outcome.rejected) == answer["rejected"]
    assert outcome.duplicates == (answer.get("duplicate") is True)
    assert state(fixed[2])[0] == [i for i in ids if i not in {o for o, _ in pinned}]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["accepted", "lines", "batch_id", "duplicate"]),
       st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                               max_size=3), max_leaves=6))
def test_any_json_in_one_field_is_acknowledged_only_when_it_is_the_right_value(fixed, key, value):
    def body(bid: str) -> bytes:
        answer = {"batch_id": bid, "accepted": N, "rejected": {}, "lines": N, "duplicate": False, key: value}
        return json.dumps(answer).encode()

    right = {"accepted": json.dumps(N), "lines": json.dumps(N)}
    outcome, ids, pinned, bid = _exchange(fixed, body)
    sane = isinstance(value, bool) if key == "duplicate" else json.dumps(value) == right.get(key, json.dumps(bid))
    if not sane:
        return _check_refused(outcome, (ids, pinned), fixed[2])
    assert not isinstance(outcome, Exception) and outcome.acknowledged == N


@pytest.mark.parametrize("raw", ABSURD_BODIES, ids=range(len(ABSURD_BODIES)))
def test_bodies_that_are_not_a_sane_answer_are_refused(fixed, raw):
    outcome, ids, pinned, _ = _exchange(fixed, lambda bid: raw.replace(b"BID", bid.encode()))
    _check_refused(outcome, (ids, pinned), fixed[2])
