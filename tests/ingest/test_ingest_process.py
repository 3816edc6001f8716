"""``ldp serve`` as a real uvicorn process on a loopback port: requests over sockets, a slow body,
graceful SIGTERM, and SIGKILLs under load with clients retrying (the harness of
simulations/bench_serve.py, shortened)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from pathlib import Path

import pytest
from support.scripts import load_script

pytest.importorskip("uvicorn")

bench = load_script("bench_serve")


@pytest.fixture
def served(tmp_path: Path):
    from ldp.ingest.config import new_token, token_sha256

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(bench.SPEC_DOC))
    token = new_token()
    config = tmp_path / "serve.toml"
    config.write_text(f'data_dir = "data"\n[limits]\nbody_timeout_seconds = 0.5\n'
                      f'[apps.demo]\ntoken_sha256 = "{token_sha256(token)}"\nspecs = ["spec.json"]\n')
    server = bench.Server(config, bench.free_port(), tmp_path / "server.log")
    server.start()
    try:
        yield server, token, tmp_path
    finally:
        if server.proc.poll() is None:
            server.kill()


def post(port: int, body: bytes, token: str, batch_id: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/v1/reports", body, {"Authorization": f"Bearer {token}", "Ldp-Batch-Id": batch_id,
                                                   "Content-Type": "application/x-ndjson"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_serve_store_and_sigterm(served) -> None:
    server, token, tmp = served
    pool = bench.make_pool(bench.CollectionSpec.load(tmp / "spec.json"), 2, 50)
    status, doc = post(server.port, pool[0], token, "one")
    assert status == 200 and doc["accepted"] == 50 and not doc["duplicate"]
    assert post(server.port, pool[0], token, "one")[1]["duplicate"]
    assert post(server.port, pool[0], "wrong", "two")[0] == 401
    # a slow body: headers, a part of the body, then silence past body_timeout_seconds -> 408
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() +
                  b"\r\nContent-Type: application/x-ndjson\r\nLdp-Batch-Id: slow\r\nContent-Length: 1000\r\n\r\n" +
                  pool[1][:100])
        t0 = time.monotonic()
        reply = s.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408") and 0.4 < time.monotonic() - t0 < 4
    assert server.stop() in (0, -15)  # uvicorn re-raises SIGTERM after its graceful shutdown
    seg = tmp / "data" / "apps" / "demo" / "segments"
    assert not list((seg / "open").iterdir())
    stored = b"".join(p.read_bytes() for p in (seg / "closed").iterdir())
    assert sorted(stored.splitlines()) == sorted(pool[0].splitlines())  # shuffled on close
    log = (tmp / "server.log").read_text()
    assert token not in log and pool[0].decode().splitlines()[0] not in log
    assert '"status":408' in log and '"status":401' in log


def test_sigkill_under_load_is_exact(tmp_path: Path) -> None:
    """Three SIGKILLs at random moments of a 4 s load; every report sent is counted exactly once."""
    out = bench.run("kill", 4.0, 3, 3, None, 8, tmp_path, seed=1)
    assert out["server_starts"] == 4 and len(out["kills_at_seconds"]) == 3
    assert out["check"]["ok"], out["check"]
    assert out["check"]["aggregate_exact"] and out["check"]["reports_in_segments"] > 0


def test_no_access_log(tmp_path: Path) -> None:
    """``--no-access-log``: a batch is stored and answered, and the log holds no line for it."""
    from ldp.ingest.config import new_token, token_sha256

    (tmp_path / "spec.json").write_text(json.dumps(bench.SPEC_DOC))
    token = new_token()
    config = tmp_path / "serve.toml"
    config.write_text(f'data_dir = "data"\n[apps.demo]\ntoken_sha256 = "{token_sha256(token)}"\n'
                      'specs = ["spec.json"]\n')
    server = bench.Server(config, bench.free_port(), tmp_path / "server.log", extra=("--no-access-log",))
    server.start()
    try:
        pool = bench.make_pool(bench.CollectionSpec.load(tmp_path / "spec.json"), 1, 20)
        status, doc = post(server.port, pool[0], token, "quiet-batch")
        assert status == 200 and doc["accepted"] == 20
    finally:
        assert server.stop() in (0, -15)
    log = (tmp_path / "server.log").read_text()
    assert "listening on" in log and "quiet-batch" not in log and '"status"' not in log
