"""One writer per replica name (issue 56): a replica claims its name in the shared store at start, and a second
process under a live claim refuses to start naming the first; a replica killed and restarted on its host takes its
own dead claim over at once, another folder waits for the expiry; chunk keys carry the claim's token, so a replica
restarted with its clock stepped back loses nothing; a forced key collision is an error, never an overwrite."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_metrics import GOOD, SCRAPER, SPEC, TOKENS
from test_replica_storage import post

from ldp.errors import LeaseHeldError
from ldp.ingest import chunklog
from ldp.ingest.app import create_app
from ldp.ingest.applog import Batch, Stored
from ldp.ingest.chunklog import ChunkLog
from ldp.ingest.claim import replica_claim
from ldp.ingest.config import Limits, parse_config, token_sha256
from ldp.ingest.upload import BatchCounts
from ldp.shuffler import decode_chunk, shuffle_app
from ldp.storage.lease import FencedStore
from ldp.storage.local import LocalStore


def config(tmp_path: Path, replica: str, store: Path, data: str | None = None, claim: float = 30.0) -> Any:
    doc = {"data_dir": data or f"data-{replica}", "fold": {"every_seconds": 0}, "replica": replica,
           "storage": {"url": str(store), "claim_seconds": claim}, "metrics": {"token_sha256": token_sha256(SCRAPER)},
           "apps": {"demo": {"token_sha256": token_sha256(TOKENS["demo"]), "specs": [str(SPEC)]}}}
    return parse_config(doc, tmp_path)


def test_a_second_replica_under_a_live_name_refuses_to_start(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with TestClient(create_app(config(tmp_path, "r1", store))) as c1:
        assert post(c1, GOOD[0], "a").status_code == 200
        with pytest.raises(LeaseHeldError, match=r"replica r1 lease .* is held by .*pid \d+"), \
                TestClient(create_app(config(tmp_path, "r1", store, data="elsewhere"))):
            pass
        with TestClient(create_app(config(tmp_path, "r2", store))) as c2:  # another name: fine
            assert post(c2, GOOD[1], "b").status_code == 200
    with TestClient(create_app(config(tmp_path, "r1", store, data="elsewhere"))) as c3:  # released on close
        assert post(c3, GOOD[2], "c").status_code == 200
    keys = LocalStore(store).list("apps/demo/incoming/r1/")
    assert [k.rsplit("/", 1)[1].split("-")[1] for k in keys] == ["f000001", "f000002"]  # each claim's token


def test_a_chunk_key_collision_is_an_error_never_an_overwrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    monkeypatch.setattr(chunklog, "chunk_key", lambda *a: "apps/demo/incoming/r1/same.chunk")
    with TestClient(create_app(config(tmp_path, "r1", store))) as c:
        assert post(c, GOOD[0], "a").status_code == 200
        r = post(c, GOOD[1], "b")
        assert r.status_code == 503  # not acknowledged
        health = c.get("/healthz", headers={"Authorization": f"Bearer {SCRAPER}"}).json()  # the operator's token
        assert "exists already: not overwritten" in health["error"]
        assert c.get("/healthz").json() == {"status": "unavailable", "reason": "storage"}  # anyone: no error text
    (batch,) = decode_chunk(LocalStore(store).get("apps/demo/incoming/r1/same.chunk"))
    assert batch.batch_id == "a" and batch.lines == GOOD[0]


def _batch(batch_id: str, body: bytes, got: dict[str, Any]) -> Batch:
    lines = body.count(b"\n")
    return Batch("demo", batch_id, body, BatchCounts(lines, lines), lambda r: got.__setitem__(batch_id, r))


def test_restarted_with_the_clock_stepped_back_nothing_is_lost(tmp_path: Path) -> None:
    """Second by second the same names as before the restart (the clock an hour back, the sequence from 1 again):
    the claim's token keeps the keys apart, and the shuffler finds every batch."""
    store = LocalStore(tmp_path / "store")
    t0 = 20000 * 86400 + 7200.0
    got: dict[str, Any] = {}
    for life, clock in enumerate((t0, t0 - 3600)):
        claim = replica_claim(store, "r1", tmp_path / "data", ttl=30)
        claim.acquire()
        log = ChunkLog(FencedStore(store, claim), "demo", "r1", tmp_path / "data" / "demo", Limits(),
                       clock=lambda c=clock: c)
        log.recover()
        for i in range(3):
            for b, stored in log.commit([_batch(f"life{life}-{i}", GOOD[3 * life + i], got)]):
                got[b.batch_id] = stored
        claim.release()
    assert all(isinstance(r, Stored) and not r.duplicate for r in got.values()) and len(got) == 6
    assert len(store.list("apps/demo/incoming/r1/")) == 6
    run = shuffle_app(store, "demo", now=t0 + 3 * 86400, min_reports=1)
    assert sum(w["reports"] for w in run.windows.values()) == 6 and run.duplicates == 0


def _write_config(tmp_path: Path, name: str, data: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'data_dir = "{data}"\nreplica = "r1"\n[fold]\nevery_seconds = 0\n'
                    f'[storage]\nurl = "{tmp_path / "store"}"\nclaim_seconds = 30\n'
                    f'[apps.demo]\ntoken_sha256 = "{token_sha256(TOKENS["demo"])}"\nspecs = ["{SPEC}"]\n')
    return path


def test_ldp_serve_twice_under_one_name_and_restarted_after_a_kill(tmp_path: Path) -> None:
    """Two ``ldp serve --replica r1`` on one store: the second exits 3 naming the first. The first SIGKILLed:
    restarted from its own data folder it takes its dead claim over at once; from another folder it is refused
    until the claim expires."""
    from support.s3_server import free_port
    from support.scripts import load_script

    first_cfg, other_cfg = _write_config(tmp_path, "first", "data-a"), _write_config(tmp_path, "other", "data-b")
    first = load_script("bench_serve").Server(first_cfg, free_port(), tmp_path / "first.log")
    first.start(timeout=60)
    try:
        second = subprocess.run([sys.executable, "-m", "ldp", "serve", "--config", str(other_cfg), "--port",
                                 str(free_port())], capture_output=True, text=True, timeout=120)
        last = second.stderr.strip().splitlines()[-1]
        assert second.returncode == 3 and last.startswith("ldp serve: error: the replica r1 lease at ")
        assert f"pid {first.proc.pid}" in last and "expires at" in last
        dead = first.proc.pid
        first.kill()  # SIGKILL, and reaped
        refused = subprocess.run([sys.executable, "-m", "ldp", "serve", "--config", str(other_cfg), "--port",
                                  str(free_port())], capture_output=True, text=True, timeout=120)
        assert refused.returncode == 3 and f"pid {dead}" in refused.stderr  # not its folder: waits the ttl
        first.start(timeout=60)  # its own folder, its host, its process gone: at once
        doc = json.loads((tmp_path / "data-a" / "replica-claim.json").read_text())
        assert doc["token"] == 2
    finally:
        if first.proc is not None and first.proc.poll() is None:
            first.stop()
    assert LocalStore(tmp_path / "store").list("replicas/r1/lease/")[-1].endswith(".json")


def test_the_store_down_past_the_claim_then_back_the_replica_claims_its_name_again(tmp_path: Path, s3: Any,
                                                                                  monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """The store unreachable for longer than the claim: the replica cannot be sure of its name any more, answers
    503, and once the store is back takes its claim again (a new token) and stores again; nothing acknowledged is
    lost."""
    from support.s3_server import CREDENTIALS, Outage

    from ldp.ingest import segments
    from ldp.storage import open_store

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(segments, "PROBE_SECONDS", 0.05)  # the writer probes the store often: heals soon after
    monkeypatch.setattr(segments, "_TICK", 0.01)
    relay = Outage(s3.port)
    url = f"{s3.bucket('ldp-claim-outage')}/t{time.monotonic_ns()}"
    doc = {"data_dir": "data-r1", "fold": {"every_seconds": 0}, "replica": "r1",
           "storage": {"url": url, "endpoint_url": relay.endpoint, "region_name": "us-east-1", "claim_seconds": 1.5},
           "apps": {"demo": {"token_sha256": token_sha256(TOKENS["demo"]), "specs": [str(SPEC)]}}}
    try:
        with TestClient(create_app(parse_config(doc, tmp_path))) as c:
            assert post(c, GOOD[0], "before").status_code == 200
            relay.down()
            time.sleep(2.5)  # past the claim's 1 s deadline (two thirds of 1.5 s)
            assert post(c, GOOD[1], "during").status_code == 503
            relay.up()
            deadline = time.monotonic() + 60
            while post(c, GOOD[1], "during").status_code != 200:  # the device retries
                assert time.monotonic() < deadline, c.get("/healthz").json()
                time.sleep(0.05)
    finally:
        relay.down()
    store = open_store(url, s3.options())
    chunks = {k.rsplit("/", 1)[1].split("-")[1]: [b.batch_id for b in decode_chunk(store.get(k))]
              for k in store.list("apps/demo/incoming/r1/")}
    assert chunks["f000001"] == ["before"] and [b for k, v in chunks.items() if k != "f000001" for b in v] == ["during"]
