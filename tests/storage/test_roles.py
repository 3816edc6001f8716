"""A store split by role (issue 57, item 3).

* **In the code**: :class:`~ldp.storage.roles.RoleStore` refuses every operation outside a role's prefixes before
  it is sent (a property over random keys), and the replica, the shuffler and ``--keep-originals`` go through it.
* **In the object store**: the three IAM policies of ``docs/scale-out.md``, applied as written to a moto server
  that enforces IAM, let each role do its whole job — a replica takes uploads, the shuffler mixes them (kept
  originals under its own prefix), ``ldp fold`` folds the segments — and refuse each role what it must not
  read or write: the analyst every chunk, record and kept original; the replica its own chunks once written.
* **The bucket's settings**: ``ldp shuffle`` warns when versioning keeps deleted chunks, not when a lifecycle rule
  expires them within a day.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st
from support import ROOT, call_main
from support.s3_server import CREDENTIALS, S3Server, s3_server

from ldp.errors import StorageError
from ldp.storage import open_store
from ldp.storage.local import LocalStore
from ldp.storage.roles import RoleStore, analyst_role, replica_role, shuffler_role

DOC = ROOT / "docs" / "scale-out.md"
BUCKET = "roles"


def policies() -> dict[str, dict[str, Any]]:
    """The IAM policies of docs/scale-out.md (``<!-- iam-policy: role -->`` then a JSON block), for bucket
    ``roles``."""
    text = DOC.read_text(encoding="utf-8")
    found = re.findall(r"<!-- iam-policy: (\w+) -->\n```json\n(.*?)```", text, re.S)
    assert {name for name, _ in found} == {"replica", "shuffler", "analyst"}
    return {name: json.loads(body.replace("telemetry-bucket", BUCKET)) for name, body in found}


# -- in the code ---------------------------------------------------------------------------------------------------


@given(st.lists(st.sampled_from(["apps", "demo", "other", "incoming", "shuffler", "segments", "closed", "r1", "r2",
                                 "replicas", "consumed", "x.chunk"]), min_size=1, max_size=6),
       st.sampled_from(["read", "write", "remove"]))
def test_a_role_allows_exactly_its_prefixes(parts: list[str], op: str) -> None:
    key = "/".join(parts)
    roles = {"replica": replica_role("r1"), "shuffler": shuffler_role("demo"), "analyst": analyst_role("demo")}
    expect = {
        "replica": (op in ("read", "remove") and key.startswith("replicas/r1/"))
        or (op == "write" and (key.startswith("replicas/r1/") or bool(re.match(r"apps/[^/]+/incoming/r1/", key)))),
        "shuffler": {"read": key.startswith(("apps/demo/incoming/", "apps/demo/shuffler/")),
                     "write": key.startswith(("apps/demo/shuffler/", "apps/demo/segments/")),
                     "remove": key.startswith(("apps/demo/incoming/", "apps/demo/shuffler/"))}[op],
        "analyst": op == "read" and key.startswith("apps/demo/segments/"),
    }
    for name, role in roles.items():
        assert role.allows(op, key) == expect[name], (name, op, key)


def test_a_role_store_refuses_before_sending(tmp_path: Path) -> None:
    inner = LocalStore(tmp_path / "s")
    inner.put("apps/demo/incoming/r1/a.chunk", b"x")
    analyst = RoleStore(inner, analyst_role("demo"))
    for call in (lambda: analyst.get("apps/demo/incoming/r1/a.chunk"), lambda: analyst.list("apps/demo/"),
                 lambda: analyst.put("apps/demo/segments/closed/x.jsonl", b""),
                 lambda: analyst.delete("apps/demo/segments/closed/x.jsonl")):
        with pytest.raises(PermissionError, match="analyst of demo"):
            call()
    assert analyst.list("apps/demo/segments/") == []
    shuffler = RoleStore(inner, shuffler_role("demo"))
    with pytest.raises(PermissionError, match=r"shuffler of demo does not write 'apps/demo/consumed/"):
        shuffler.put("apps/demo/consumed/r1/a.chunk", b"x")  # where --keep-originals once kept them
    with pytest.raises(PermissionError):
        shuffler.get("apps/demo/segments/closed/x.jsonl")  # put only: the shuffler never reads a segment back


# -- in the object store (moto, IAM enforced) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def iam(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Server, dict[str, dict[str, str]]]]:
    """A moto server of its own with bucket ``roles``, versioning on, a user per role with its documented policy,
    then IAM enforced: ``(server, {role: store options with its keys})``."""
    import boto3
    import requests

    with s3_server(tmp_path_factory.mktemp("moto-iam") / "moto.log") as server:
        admin = {"endpoint_url": server.endpoint, "region_name": CREDENTIALS["AWS_DEFAULT_REGION"],
                 "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
                 "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"]}
        s3, iam_client = boto3.client("s3", **admin), boto3.client("iam", **admin)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        keys = {}
        for role, policy in policies().items():
            iam_client.create_user(UserName=role)
            iam_client.put_user_policy(UserName=role, PolicyName=role, PolicyDocument=json.dumps(policy))
            key = iam_client.create_access_key(UserName=role)["AccessKey"]
            keys[role] = {"endpoint_url": server.endpoint, "region_name": CREDENTIALS["AWS_DEFAULT_REGION"],
                          "key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
        requests.post(f"{server.endpoint}/moto-api/reset-auth", data=b"0", timeout=10).raise_for_status()
        yield server, keys


def denied(call: Any) -> bool:
    try:
        call()
    except (StorageError, PermissionError, OSError) as exc:
        return "denied" in str(exc).lower() or "forbidden" in str(exc).lower() or isinstance(exc, PermissionError)
    return False


def test_each_role_does_its_job_under_its_policy_and_nothing_more(
        iam: tuple[S3Server, dict[str, dict[str, str]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.test_metrics import GOOD, SPEC, TOKENS
    from starlette.testclient import TestClient

    from ldp.ingest.app import create_app
    from ldp.ingest.config import parse_config, token_sha256
    from ldp.shuffler import shuffle_app
    from ldp.spec import CollectionSpec

    server, keys = iam
    url = f"s3://{BUCKET}/prod"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", keys["replica"]["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", keys["replica"]["secret"])
    doc = {"data_dir": "data-r1", "fold": {"every_seconds": 0}, "replica": "r1",
           "storage": {"url": url, "endpoint_url": server.endpoint, "region_name": "us-east-1"},
           "apps": {"demo": {"token_sha256": token_sha256(TOKENS["demo"]), "specs": [str(SPEC)]}}}
    with TestClient(create_app(parse_config(doc, tmp_path))) as client:
        for i in range(3):
            r = client.post("/v1/reports", content=b"".join(GOOD[i * 10:(i + 1) * 10]), headers={
                "Authorization": f"Bearer {TOKENS['demo']}", "Content-Type": "application/x-ndjson",
                "Ldp-Batch-Id": f"b{i}"})
            assert r.status_code == 200, r.text

    shuffler = open_store(url, keys["shuffler"])
    chunks = shuffler.list("apps/demo/incoming/")
    chunk = chunks[0]
    replica = open_store(url, keys["replica"])
    assert denied(lambda: replica.get(chunk))  # a replica cannot read a chunk back, not even its own
    assert denied(lambda: replica.put("apps/demo/segments/closed/forged.jsonl", b"x"))

    code, _, err = call_main(["shuffle", "--min-reports", "1",
                              "--store", url, "--app", "demo", "--keep-originals", "--grace", "0",
                              "--spec", str(SPEC), *(f"--store-option={k}={v}" for k, v in keys["shuffler"].items())])
    assert code == 0, err
    assert "versioning enabled" in err  # deleted chunks stay as noncurrent versions: said at every run
    spec = CollectionSpec.load(SPEC)  # the day's window is not over: the run mixes as if two days later
    shuffle_app(shuffler, "demo", now=time.time() + 2 * 86400, keep_originals=True, specs={spec.fingerprint: spec},
                min_reports=1)
    assert shuffler.list("apps/demo/incoming/") == []
    kept = shuffler.list("apps/demo/shuffler/consumed/")
    assert kept == [k.replace("/incoming/", "/shuffler/consumed/") for k in chunks]
    record = shuffler.list("apps/demo/shuffler/runs/")[0]

    analyst = open_store(url, keys["analyst"])
    (segment,) = analyst.list("apps/demo/segments/")
    assert re.fullmatch(r"apps/demo/segments/closed/\d{8}T\d{6}Z-[0-9a-f]{16}-f\d+\.jsonl", segment)  # the window
    data = analyst.get(segment)  # and report lines alone: no batch id, replica, chunk or arrival time
    assert sorted(data.splitlines()) == sorted(ln.rstrip(b"\n") for ln in GOOD[:30])
    assert denied(lambda: shuffler.get(segment))  # the shuffler puts segments, never reads one back
    for key in (chunk, kept[0], record, "replicas/r1/probe"):
        assert denied(lambda key=key: analyst.get(key)), key
    # moto does not evaluate the s3:prefix condition of ListBucket (S3 does): listing outside a role's prefixes is
    # refused by RoleStore in the code (test_a_role_store_refuses_before_sending), which the replica and the
    # shuffler above ran through
    code, out, err = call_main(["aggregate", f"{url}/apps/demo/segments/closed", "--spec", str(SPEC), "--out",
                                str(tmp_path / "job"), *(f"--store-option={k}={v}" for k, v in
                                                         keys["analyst"].items())])
    assert code == 0, err
    manifest = json.loads((tmp_path / "job" / "manifest.json").read_text())
    assert [e["path"] for e in manifest["inputs"]] == [f"{url}/{segment}"]


def test_a_lifecycle_rule_expiring_noncurrent_chunks_within_a_day_silences_the_warning(s3: Any) -> None:
    import boto3

    bucket = f"versioned-{time.monotonic_ns()}"
    client = boto3.client("s3", endpoint_url=s3.endpoint, region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
                          aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
    client.create_bucket(Bucket=bucket)
    store = open_store(f"s3://{bucket}/prod", s3.options())
    assert store.retention_warning("apps/demo/incoming/") is None  # versioning never turned on
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    assert "versioning enabled" in store.retention_warning("apps/demo/incoming/")
    rule = {"ID": "x", "Status": "Enabled", "Filter": {"Prefix": "prod/apps/demo/incoming/"},
            "NoncurrentVersionExpiration": {"NoncurrentDays": 7}}
    client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [rule]})
    assert "versioning enabled" in store.retention_warning("apps/demo/incoming/")  # a week: too long
    rule["NoncurrentVersionExpiration"] = {"NoncurrentDays": 1}
    client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [rule]})
    assert store.retention_warning("apps/demo/incoming/") is None
    assert store.retention_warning("apps/other/incoming/") is not None  # the rule covers demo's chunks only
