"""Rejects stay where they were rejected (issue 70, item 7): a line a replica refused — one holding an e-mail
address — is kept in that replica's data folder and never reaches its chunks, a segment or any prefix the analysts
read, through either shuffle engine; and the shuffler drops such a line should an older replica's chunk hold one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_metrics import GOOD, SPEC, TOKENS

from ldp.ingest.app import create_app
from ldp.ingest.config import parse_config, token_sha256
from ldp.shuffler import ChunkBatch, chunk_key, decode_chunk, encode_chunk, shuffle_app
from ldp.storage import open_store
from ldp.storage.roles import RoleStore, analyst_role

SECRET = b'{"user_email":"alice@example.com"}\n'


def replica(tmp_path: Path, store_dir: Path) -> Any:
    return parse_config({"data_dir": "data-r1", "fold": {"every_seconds": 0}, "replica": "r1",
                         "storage": {"url": f"file://{store_dir}"},
                         "apps": {"demo": {"token_sha256": token_sha256(TOKENS["demo"]), "specs": [str(SPEC)]}}},
                        tmp_path)


def analysts_see(store_dir: Path) -> bytes:
    """Every byte the analysts' role can read."""
    analyst = RoleStore(open_store(store_dir), analyst_role("demo"))
    return b"".join(analyst.get(k) for k in analyst.list("apps/demo/segments/"))


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_rejected_line_with_an_email_never_reaches_the_analysts(tmp_path: Path, engine: str) -> None:
    if engine == "dask":
        pytest.importorskip("distributed")
    store_dir = tmp_path / "store"
    with TestClient(create_app(replica(tmp_path, store_dir))) as c:
        r = c.post("/v1/reports", content=SECRET + GOOD[0], headers={
            "Authorization": f"Bearer {TOKENS['demo']}", "Content-Type": "application/x-ndjson",
            "Ldp-Batch-Id": "b1"})
        assert r.status_code == 200 and r.json()["accepted"] == 1 and sum(r.json()["rejected"].values()) == 1
    store = open_store(store_dir)
    (chunk,) = store.list("apps/demo/incoming/")
    assert b"alice" not in store.get(chunk)  # not even in the replica's chunk
    (b,) = decode_chunk(store.get(chunk))
    assert b.lines == GOOD[0]
    kept = b"".join(p.read_bytes() for p in (tmp_path / "data-r1").rglob("rejects/*.jsonl"))
    assert b"alice@example.com" in kept and b'"why":"not_shared"' in kept  # kept where it was rejected
    run = shuffle_app(store, "demo", now=time.time() + 2 * 86400, min_reports=1, engine=engine)
    assert [w["reports"] for w in run.windows.values()] == [1]
    seen = analysts_see(store_dir)
    assert seen == GOOD[0] and b"alice" not in seen


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_an_older_chunk_holding_a_rejected_line_is_stripped_by_the_shuffler(tmp_path: Path, engine: str) -> None:
    """A chunk of a replica from before (its rejected lines kept in the body): the shuffler drops every line that
    is no report, counted ``rejected``, even when the window holds nothing else (nothing is published)."""
    if engine == "dask":
        pytest.importorskip("distributed")
    store = open_store(tmp_path / "store")
    day = 20000 * 86400
    store.put(chunk_key("demo", "r1", day + 60, 1), encode_chunk([ChunkBatch("a", day, 86400, SECRET + GOOD[0])]))
    store.put(chunk_key("demo", "r1", day + 86400 + 60, 2), encode_chunk([ChunkBatch("b", day + 86400, 86400,
                                                                                      SECRET)]))
    run = shuffle_app(store, "demo", now=day + 3 * 86400, min_reports=1, engine=engine)
    first, second = run.windows.values()
    assert first["reports"] == 1 and first["lines"]["rejected"] == 1
    assert second["segment"] is None and second["reports"] == 0 and second["lines"] == {"rejected": 1}
    seen = analysts_see(tmp_path / "store")
    assert b"alice" not in seen and seen == GOOD[0]
