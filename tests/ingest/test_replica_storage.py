"""An ingest service replica over shared object storage (``[storage]``, a real S3-compatible server): a batch is
acknowledged only once its chunk is stored; the store down answers 503 and /readyz 503, loses nothing
acknowledged, and uploads resume by themselves when it is back; two replicas' chunks, a retry across them
included, become one anonymized segment through the shuffler with each batch once."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.s3_server import Outage
from test_metrics import GOOD, SCRAPER, SPEC, TOKENS

from ldp.errors import ConfigError
from ldp.ingest.app import create_app
from ldp.ingest.config import parse_config, token_sha256
from ldp.shuffler import decode_chunk, shuffle_app
from ldp.storage import open_store


def config(tmp_path: Path, replica: str, url: str, endpoint: str) -> Any:
    doc = {"data_dir": f"data-{replica}", "fold": {"every_seconds": 0}, "replica": replica,
           "storage": {"url": url, "endpoint_url": endpoint, "region_name": "us-east-1"},
           "metrics": {"token_sha256": token_sha256(SCRAPER)},  # the operator's token reads /healthz's details
           "apps": {"demo": {"token_sha256": token_sha256(TOKENS["demo"]), "specs": [str(SPEC)]}}}
    return parse_config(doc, tmp_path)


OPERATOR = {"Authorization": f"Bearer {SCRAPER}"}
"""The operator's token (the scraper's): /healthz's details."""


def post(c: TestClient, body: bytes, batch_id: str) -> Any:
    return c.post("/v1/reports", content=body, headers={"Authorization": f"Bearer {TOKENS['demo']}",
                                                        "Content-Type": "application/x-ndjson",
                                                        "Ldp-Batch-Id": batch_id})


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    from support.s3_server import CREDENTIALS

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)


def test_acknowledged_means_stored_and_replicas_mix_into_one_segment(tmp_path: Path, s3: Any,
                                                                     credentials: None) -> None:
    url = f"{s3.bucket('ldp-replicas')}/t{time.monotonic_ns()}"
    store = open_store(url, s3.options())
    bodies = {f"b{i}": b"".join(GOOD[i * 5:(i + 1) * 5]) for i in range(6)}
    with TestClient(create_app(config(tmp_path, "r1", url, s3.endpoint))) as c1, \
            TestClient(create_app(config(tmp_path, "r2", url, s3.endpoint))) as c2:
        for i, (bid, body) in enumerate(bodies.items()):
            r = post(c1 if i % 2 else c2, body, bid)
            assert r.status_code == 200 and r.json()["lines"] == 5
            # acknowledged: its chunk is in the store now
            chunks = [b for k in store.list("apps/demo/incoming/") for b in decode_chunk(store.get(k))]
            assert bid in {b.batch_id for b in chunks}
        retry = post(c1, bodies["b0"], "b0")  # b0 was taken by r2; its answer lost, the device retries on r1
        assert retry.status_code == 200
        assert post(c2, bodies["b0"], "b0").json()["duplicate"] is True  # r2 knows its own
        assert c1.get("/readyz", headers=OPERATOR).json()["replica"] == "r1"
    assert sorted(k.split("/")[3] for k in store.list("apps/demo/incoming/"))[0] in ("r1", "r2")
    run = shuffle_app(store, "demo", now=time.time() + 2 * 86400, min_reports=1)
    (segment,) = store.list("apps/demo/segments/closed/")
    lines = store.get(segment).splitlines()
    assert Counter(lines) == Counter(b"".join(bodies.values()).splitlines()) and run.duplicates == 1
    (w,) = run.windows.values()
    assert w["reports"] == 30 and w["replicas"] == 2 and w["batches"] == 6


def test_the_store_down_answers_503_loses_nothing_and_heals(tmp_path: Path, s3: Any, credentials: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from ldp.ingest import segments

    monkeypatch.setattr(segments, "PROBE_SECONDS", 0.05)  # the writer probes the store often: heals soon after
    monkeypatch.setattr(segments, "_TICK", 0.01)
    relay = Outage(s3.port)
    url = f"{s3.bucket('ldp-outage')}/t{time.monotonic_ns()}"
    store = open_store(url, s3.options())
    cfg = config(tmp_path, "r1", url, relay.endpoint)
    acked: list[str] = []
    try:
        with TestClient(create_app(cfg)) as c:
            assert post(c, GOOD[0], "before").status_code == 200
            acked.append("before")
            relay.down()
            r = post(c, GOOD[1], "during")
            assert r.status_code == 503 and r.headers["retry-after"]
            assert c.get("/readyz").status_code == 503 and c.get("/livez").status_code == 200
            relay.up()
            deadline = time.monotonic() + 30
            while c.get("/readyz").status_code != 200:  # the writer probes the store and heals by itself
                assert time.monotonic() < deadline, c.get("/readyz", headers=OPERATOR).json()
                time.sleep(0.02)
            assert post(c, GOOD[1], "during").status_code == 200  # the device's retry
            acked.append("during")
            health = c.get("/healthz", headers=OPERATOR).json()
            assert health["recovered"]["error"] and c.get("/healthz").json() == {"status": "ok"}
    finally:
        relay.down()
    stored = [b.batch_id for k in store.list("apps/demo/incoming/") for b in decode_chunk(store.get(k))]
    assert sorted(stored) == sorted(acked)


def test_storage_needs_a_replica_name_and_a_supported_url(tmp_path: Path) -> None:
    base = {"apps": {"demo": {"token_sha256": token_sha256("x"), "specs": [str(SPEC)]}}}
    with pytest.raises(ConfigError, match="give this one a name"):
        parse_config({**base, "storage": {"url": "s3://b/p"}}, tmp_path)
    with pytest.raises(ConfigError, match="only s3://"):
        parse_config({**base, "replica": "r", "storage": {"url": "gs://b/p"}}, tmp_path)
    with pytest.raises(ConfigError, match="not a folder"):
        parse_config({**base, "replica": "r", "storage": {"url": "shared", "endpoint_url": "http://x"}}, tmp_path)
    with pytest.raises(ConfigError, match="unknown|not one of|key"):
        parse_config({**base, "replica": "r", "storage": {"url": "s3://b", "key": "secret!"}}, tmp_path)
    cfg = parse_config({**base, "replica": "r", "storage": {"url": "shared"}}, tmp_path)
    assert cfg.storage is not None and cfg.storage.url == str((tmp_path / "shared").resolve())
    assert json.dumps(dict(cfg.storage.options)) == "{}"


def test_a_slow_store_slows_acknowledgements_and_loses_nothing(tmp_path: Path, s3: Any, credentials: None) -> None:
    """Each answer of the store held 0.1 s (within the timeouts): uploads are acknowledged later, never before their
    chunk is stored; the replica stays ready; everything acknowledged is in the store once."""
    relay = Outage(s3.port)
    url = f"{s3.bucket('ldp-slow')}/t{time.monotonic_ns()}"
    store = open_store(url, s3.options())
    try:
        with TestClient(create_app(config(tmp_path, "r1", url, relay.endpoint))) as c:
            assert post(c, GOOD[0], "fast").status_code == 200
            relay.delay = 0.1  # each held answer is waited for, not worked on: 0.1 s shows it as 0.3 s did
            t0 = time.monotonic()
            for i in range(1, 4):
                assert post(c, GOOD[i], f"slow{i}").status_code == 200
            assert time.monotonic() - t0 >= 3 * relay.delay  # each waited for its chunk
            assert c.get("/readyz").status_code == 200
    finally:
        relay.down()
    stored = Counter(b.batch_id for k in store.list("apps/demo/incoming/") for b in decode_chunk(store.get(k)))
    assert stored == Counter({"fast": 1, "slow1": 1, "slow2": 1, "slow3": 1})


def test_a_replica_folds_the_shuffled_segments_of_the_store_not_its_chunks(tmp_path: Path, s3: Any,
                                                                             credentials: None) -> None:
    """With [fold], a replica over shared storage folds what the shuffler wrote to the store: nothing before the
    shuffle (its chunks are not analysis input), every report once after it, with the central guarantee computed
    from the real per-window anonymity set."""
    from ldp.ingest.watch import Watcher

    url = f"{s3.bucket('ldp-fold')}/t{time.monotonic_ns()}"
    store = open_store(url, s3.options())
    cfg = parse_config({"data_dir": "data-f", "fold": {"every_seconds": 5}, "replica": "f",
                        "storage": {"url": url, "endpoint_url": s3.endpoint, "region_name": "us-east-1"},
                        "apps": {"demo": {"token_sha256": token_sha256(TOKENS["demo"]), "specs": [str(SPEC)]}}},
                       tmp_path)
    with TestClient(create_app(config(tmp_path, "r1", url, s3.endpoint))) as c:
        for i in range(4):
            assert post(c, b"".join(GOOD[i * 5:(i + 1) * 5]), f"f{i}").status_code == 200
    watcher = Watcher.from_config(cfg)
    before = watcher.fold_all()["demo"]
    assert before is not None and before["records"] == 0  # the chunks are not folded
    run = shuffle_app(store, "demo", now=time.time() + 2 * 86400, min_reports=1)
    after = watcher.fold_all()["demo"]
    assert after is not None and after["records"] == 20 and after["segments"] == len(run.windows)
    (w,) = run.windows.values()
    shuffled = [m["shuffle"] for m in after["metrics"] if m.get("shuffle")]
    assert shuffled and all(e["segments"] == 1 and e["smallest"] <= w["reports"] for e in shuffled)
    assert sum(e["smallest"] for e in shuffled) == w["reports"]  # each metric's reports in the one segment
    again = watcher.fold_all()["demo"]
    assert again is not None and again["records"] == 20  # folding again counts nothing twice


def test_the_fold_reads_the_shared_store_as_an_analyst(tmp_path: Path, s3: Any, credentials: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read of the replica's fold goes through the analyst's role (issue 70, item 4): its stores are
    RoleStores of ``analyst_role``, and one made to read a chunk is refused before the request is sent."""
    from ldp.ingest import watch
    from ldp.jobs.inputs import InputStores
    from ldp.storage.roles import RoleStore

    url = f"{s3.bucket('ldp-fold-role')}/t{time.monotonic_ns()}"
    with TestClient(create_app(config(tmp_path, "r1", url, s3.endpoint))) as c:
        assert post(c, b"".join(GOOD[:5]), "a").status_code == 200
    shuffle_app(open_store(url, s3.options()), "demo", now=time.time() + 2 * 86400, min_reports=1)
    opened: list[Any] = []
    locate = InputStores.locate

    def spying(self: InputStores, where: str) -> Any:
        store, key = locate(self, where)
        opened.append((store, key))
        return store, key

    monkeypatch.setattr(InputStores, "locate", spying)
    doc = watch.fold_app(tmp_path / "data-f", "demo", [SPEC], store=(url, s3.options()))
    assert doc["records"] == 5 and opened
    assert all(isinstance(s, RoleStore) and s.role.name == "analyst of demo" for s, _ in opened)
    stores = InputStores(s3.options(), watch._analyst("demo", (url, {})))
    with pytest.raises(PermissionError, match="analyst of demo"):
        stores.locate(f"{url}/apps/demo/shuffler/runs/x.json")[0].get("apps/demo/shuffler/runs/x.json")


def test_a_replica_over_a_shared_folder_stores_chunks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A folder every replica mounts is a store too; a replica that folds says where it folds from."""
    from ldp.ingest.service import create_service

    doc = {"replica": "r1", "fold": {"every_seconds": 5}, "storage": {"url": "shared"},
           "apps": {"demo": {"token_sha256": token_sha256("x"), "specs": [str(SPEC)]}}}
    with caplog.at_level("INFO", logger="ldp.ingest.service"):
        app = create_service(parse_config(doc, tmp_path))
    assert "folding the shuffled segments of" in caplog.text
    with TestClient(app) as c:
        r = c.post("/v1/reports", content=GOOD[0], headers={"Authorization": "Bearer x",
                                                            "Content-Type": "application/x-ndjson",
                                                            "Ldp-Batch-Id": "one"})
        assert r.status_code == 200
    keys = open_store(tmp_path / "shared").list("apps/demo/incoming/r1/")
    assert len(keys) == 1 and keys[0].endswith(".chunk")


def test_a_replica_on_a_bucket_that_is_not_there_says_to_create_it_first(tmp_path: Path, s3: Any,
                                                                        credentials: None) -> None:
    """The first mistake of a first trial (issue 70, item 10): the error says to create the bucket, first."""
    with pytest.raises(OSError, match=r"no bucket at s3://ldp-no-such-bucket/prod: create it first"):
        with TestClient(create_app(config(tmp_path, "r1", "s3://ldp-no-such-bucket/prod", s3.endpoint))):
            pass
