"""Azure Blob Storage (``az://``, :mod:`ldp.storage.azure`, issue 70, item 6) against Azurite, the Azure Storage
emulator: the store contract in one line (its service cut too); the lease's conditional create (two holders, one
wins); reads a block at a time pinned to the ETag; a hierarchical namespace's folders are not objects; the
retention warning; the URL forms, the options and where credentials come from; the ingest service's ``[storage]`` of an
``az://`` store; and a collection end to end over it — a replica's chunks, ``ldp shuffle``, ``ldp fold``."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from support import call_main
from support.azure_server import ACCOUNT, FAST, KEY, Azurite
from support.s3_server import Outage

from ldp.errors import ConfigError, LeaseHeldError, StorageError
from ldp.storage import READ_BLOCK, open_store
from ldp.storage.azure import AzureStore, credentials, parse_url
from ldp.storage.checks import check_store
from ldp.storage.lease import Lease


@pytest.fixture
def relay(azure: Azurite) -> Iterator[Outage]:
    relay = Outage(azure.port)
    yield relay
    relay.down()


def fresh(azure: Azurite, **extra: str) -> AzureStore:
    store = open_store(f"{azure.container('ldp-az')}/t{uuid.uuid4().hex}", {**azure.options(), **extra})
    assert isinstance(store, AzureStore)
    return store


def test_azure_passes_the_store_contract_with_its_service_down_too(azure: Azurite, relay: Outage) -> None:
    check_store(lambda: fresh(azure, **FAST, account_url=f"http://127.0.0.1:{relay.port}/{ACCOUNT}"),
                outage=relay.cut)


def test_two_lease_holders_at_once_one_wins(azure: Azurite) -> None:
    url = fresh(azure).url
    stores = [open_store(url, azure.options()) for _ in range(2)]  # each its own client, as two processes
    barrier, won, refused = threading.Barrier(2), [], []

    def take(i: int) -> None:
        barrier.wait(30)
        try:
            won.append(Lease(stores[i], "apps/demo/shuffler/lease/", "shuffler of demo").acquire())
        except LeaseHeldError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert won == [1] and len(refused) == 1 and "held by" in str(refused[0])
    first, second = (stores[0].create("x/once", b"1"), stores[1].create("x/once", b"2"))  # If-None-Match: *
    assert (first, second) == (True, False) and stores[1].get("x/once") == b"1"


def test_reads_are_a_block_at_a_time_pinned_to_the_etag(azure: Azurite) -> None:
    store = fresh(azure)
    data = bytes(i % 253 for i in range(2 * READ_BLOCK + 10))
    store.put("big", data)
    from azure.storage.blob import BlobClient

    real, calls = BlobClient.download_blob, []

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(self, *args, **kwargs)

    with mock.patch.object(BlobClient, "download_blob", counted):
        with store.open("big") as fh:
            assert fh.read() == data
    assert [c["length"] for c in calls] == [READ_BLOCK, READ_BLOCK, 10]
    etag = store.stat("big").etag
    assert all(c["etag"] == etag and c["match_condition"].name == "IfNotModified" for c in calls)


def test_a_folder_of_a_hierarchical_namespace_is_not_an_object(azure: Azurite) -> None:
    store = fresh(azure)
    store.put("d/x", b"1")
    store.container.upload_blob(f"{store.root}/d", b"", metadata={"hdi_isfolder": "true"})
    assert store.list() == ["d/x"] and not store.exists("d")
    with pytest.raises(FileNotFoundError, match="no object d$"):
        store.stat("d")


def test_the_retention_warning_reads_what_the_container_keeps(azure: Azurite) -> None:
    store = fresh(azure)
    store.put("apps/demo/incoming/r1/a.chunk", b"x")
    store.delete("apps/demo/incoming/r1/a.chunk")
    assert store.retention_warning("apps/demo/incoming/") is None  # Azurite keeps nothing deleted

    class Blob:
        def __init__(self, deleted: bool, current: bool | None) -> None:
            self.deleted, self.is_current_version = deleted, current

    with mock.patch.object(store.container, "list_blobs", return_value=[Blob(True, None), Blob(False, False)]):
        warning = store.retention_warning("apps/demo/incoming/")
    assert warning is not None and "soft delete and versioning keeps blobs" in warning
    assert "1 soft-deleted, 1 earlier versions" in warning and "incoming/" in warning

    def refused(**_: Any) -> Any:
        raise StorageError(13, "AuthorizationPermissionMismatch")

    with mock.patch.object(store.container, "list_blobs", refused):
        assert "could not list the deleted blobs" in (store.retention_warning("apps/demo/incoming/") or "")


def test_a_wrong_key_is_a_storage_error_naming_the_refusal(azure: Azurite) -> None:
    wrong = "A" * 86 + "=="
    store = open_store(f"{azure.container('ldp-az')}/t", {**azure.options(), "account_key": wrong, **FAST})
    for op in (lambda: store.put("a", b"x"), lambda: store.get("a"), lambda: store.list(),
               lambda: store.create("a", b"x")):
        with pytest.raises(StorageError, match=r"cannot \w+ [a/]: AuthorizationFailure \(HTTP 403\)"):
            op()


# -- URLs, options, credentials (no server) --------------------------------------------------------------------------
@pytest.mark.parametrize("url, parsed", [
    ("az://c-1/a/b", ("c-1", "a/b", None)), ("az://ccc", ("ccc", "", None)), ("abfs://data/x/", ("data", "x", None)),
    ("abfss://data@acct.dfs.core.windows.net/p", ("data", "p", "acct")),
    ("az://data@acct.blob.core.windows.net", ("data", "", "acct"))])
def test_url_forms(url: str, parsed: tuple[str, str, str | None]) -> None:
    assert parse_url(url) == parsed


@pytest.mark.parametrize("url", ["az://", "az://UPPER/x", "az://a/x", "az://ab--c/x", "az://c" + "x" * 63,
                                 "az://ccc/../x", "az://ccc/.hidden", "s3://ccc/x", "az://@acct.x/p"])
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        parse_url(url)


def test_options_and_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY",
                "AZURE_STORAGE_SAS_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    assert credentials({"connection_string": "X"}) == {"connection_string": "X"}
    got = credentials({"account_name": "acct", "account_key": "k"})
    assert got == {"account_url": "https://acct.blob.core.windows.net",
                   "credential": {"account_name": "acct", "account_key": "k"}}
    got = credentials({"account_url": "http://127.0.0.1:1/devstoreaccount1", "sas_token": "?sv=1&sig=2"})
    assert got == {"account_url": "http://127.0.0.1:1/devstoreaccount1", "credential": "sv=1&sig=2"}
    assert credentials({"account_name": "a", "anonymous": "true"})["credential"] is None
    env = {"AZURE_STORAGE_ACCOUNT": "envacct", "AZURE_STORAGE_KEY": "envkey"}
    assert credentials({}, env)["credential"] == {"account_name": "envacct", "account_key": "envkey"}
    assert credentials({"account_name": "acct"}, {"AZURE_STORAGE_SAS_TOKEN": "sig"})["credential"] == "sig"
    assert credentials({}, {"AZURE_STORAGE_CONNECTION_STRING": "C"}) == {"connection_string": "C"}
    assert credentials({"account_key": "opt"}, {**env, "AZURE_STORAGE_CONNECTION_STRING": "C"})["credential"] == {
        "account_name": "envacct", "account_key": "opt"}  # the options first
    with pytest.raises(ValueError, match="needs its account"):
        credentials({}, {})
    with mock.patch.dict("sys.modules", {"azure.identity": None}), \
            pytest.raises(ValueError, match="no credential .*install azure-identity"):
        credentials({"account_name": "acct"}, {})
    with pytest.raises(ValueError, match="unknown option.*endpoint_url.*account_url here"):
        open_store("az://ccc/p", {"endpoint_url": "http://x", "account_name": "a", "account_key": "k"})


def test_without_azurite_the_tests_skip_unless_it_is_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from support import azure_server

    monkeypatch.setattr(azure_server, "BINARY", tmp_path / "no-azurite")
    monkeypatch.delenv("LDP_REQUIRE_AZURITE", raising=False)
    with pytest.raises(pytest.skip.Exception, match="npm ci"), azure_server.azurite_server(tmp_path):
        pass
    monkeypatch.setenv("LDP_REQUIRE_AZURITE", "1")  # CI: a missing emulator fails the run
    with pytest.raises(pytest.fail.Exception, match="LDP_REQUIRE_AZURITE=1 but Azurite is not installed"), \
            azure_server.azurite_server(tmp_path):
        pass


def test_spec_reopens_it_with_the_urls_account(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("azure.storage.blob", reason="the azure extra")
    monkeypatch.setenv("AZURE_STORAGE_KEY", KEY)
    store = open_store("abfss://data@acct.dfs.core.windows.net/p")
    assert store.url == "az://data/p" and store.spec() == ("az://data/p", {"account_name": "acct"})
    again = open_store(*store.spec())
    assert isinstance(again, AzureStore) and again.container.url == store.container.url  # type: ignore[attr-defined]
    assert store.container.url.startswith("https://acct.blob.core.windows.net/data")  # type: ignore[attr-defined]


# -- the ingest service's configuration, and a collection end to end ---------------------------------------------------
def test_the_collectors_storage_table_takes_azure(tmp_path: Path) -> None:
    from ingest.test_metrics import SPEC

    from ldp.ingest.config import parse_config, token_sha256

    base = {"replica": "r1", "apps": {"demo": {"token_sha256": token_sha256("x"), "specs": [str(SPEC)]}}}

    def storage(**table: Any) -> Any:
        return parse_config({**base, "storage": table}, tmp_path).storage

    got = storage(url="az://telemetry/prod", account_name="acct")
    assert got.url == "az://telemetry/prod" and dict(got.options) == {"account_name": "acct"}
    assert dict(storage(url="abfss://telemetry/prod", account_url="http://h/acct").options) == {
        "account_url": "http://h/acct"}
    with pytest.raises(ConfigError, match=r"account_key: credentials are never in this file.*AZURE_STORAGE_KEY"):
        storage(url="az://telemetry/prod", account_name="acct", account_key="secret")
    with pytest.raises(ConfigError, match="AZURE_STORAGE_CONNECTION_STRING"):
        storage(url="az://telemetry/prod", connection_string="secret")
    with pytest.raises(ConfigError, match=r"endpoint_url are not options of az:// storage \(it takes account_name"):
        storage(url="az://telemetry/prod", endpoint_url="http://x")
    with pytest.raises(ConfigError, match=r"account_name are not options of s3:// storage"):
        storage(url="s3://b/p", account_name="acct")
    with pytest.raises(ConfigError, match="container is 3 to 63"):
        storage(url="az://Telemetry/prod")
    with pytest.raises(ConfigError, match="not a folder"):
        storage(url="shared", account_name="acct")


def test_a_collection_end_to_end_over_azure(azure: Azurite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two replicas' chunks in an az:// store (the key from the environment, the account in the file), ``ldp
    shuffle --store az://…`` mixes them into one segment, ``ldp fold az://…`` folds it: every report once."""
    from ingest.test_metrics import GOOD, SPEC, TOKENS
    from starlette.testclient import TestClient

    from ldp.ingest.app import create_app
    from ldp.ingest.config import parse_config, token_sha256

    monkeypatch.setenv("AZURE_STORAGE_KEY", KEY)
    url = f"{azure.container('ldp-e2e')}/t{uuid.uuid4().hex[:8]}"
    account = {"account_url": azure.endpoint, "account_name": ACCOUNT}
    for i, replica in enumerate(("r1", "r2")):
        doc = {"data_dir": f"data-{replica}", "fold": {"every_seconds": 0}, "replica": replica,
               "storage": {"url": url, **account},
               "apps": {"demo": {"token_sha256": token_sha256(TOKENS["demo"]), "specs": [str(SPEC)]}}}
        with TestClient(create_app(parse_config(doc, tmp_path))) as client:
            r = client.post("/v1/reports", content=b"".join(GOOD[i * 10:(i + 1) * 10]), headers={
                "Authorization": f"Bearer {TOKENS['demo']}", "Content-Type": "application/x-ndjson",
                "Ldp-Batch-Id": f"b{i}"})
            assert r.status_code == 200, r.text
    store = open_store(url, account)
    assert len(store.list("apps/demo/incoming/")) == 2
    options = [f"--store-option={k}={v}" for k, v in account.items()]
    code, _, err = call_main(["shuffle", "--store", url, "--app", "demo", "--min-reports", "1", *options])
    assert code == 0, err  # the lease taken and released, the chunks listed and read: today's window is still open
    assert len(store.list("apps/demo/incoming/")) == 2 and store.list("apps/demo/shuffler/lease/") != []
    from ldp.shuffler import shuffle_app
    from ldp.spec import CollectionSpec

    spec = CollectionSpec.load(SPEC)  # mixed as if two days later, when the day's window is over
    shuffle_app(store, "demo", now=time.time() + 2 * 86400, specs={spec.fingerprint: spec}, min_reports=1)
    assert store.list("apps/demo/incoming/") == []
    (segment,) = store.list("apps/demo/segments/")
    assert re.fullmatch(r"apps/demo/segments/closed/\d{8}T\d{6}Z-[0-9a-f]{16}-f\d+\.jsonl", segment)
    assert sorted(store.get(segment).splitlines()) == sorted(ln.rstrip(b"\n") for ln in GOOD[:20])
    code, out, err = call_main(["aggregate", f"{url}/apps/demo/segments/closed", "--spec", str(SPEC), "--out",
                                str(tmp_path / "job"), *options])
    assert code == 0, err
    manifest = json.loads((tmp_path / "job" / "manifest.json").read_text())
    assert [e["path"] for e in manifest["inputs"]] == [f"{url}/{segment}"]
