"""The aggregators' routes in-process (Starlette's test client): tokens, problem documents with codes, any upload
body refused with a code and never a server error (fuzzed), the status page with each release's central ε."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from two_aggregators import T0, prio, world

from ldp.aggregators.http import create_app
from ldp.aggregators.messages import MEDIA_TYPES
from ldp.aggregators.task import Noise, b64
from ldp.ingest.config import new_token, token_sha256

PEER, COLLECTOR = new_token(), new_token()
DAP_REPORT = {"Content-Type": "application/dap-report"}
"""What a device's upload says it is (DAP-09 §4.4.2; the leader refuses any other media type)."""


@pytest.fixture
def apps(tmp_path: Path) -> Any:
    from starlette.testclient import TestClient

    w = world(tmp_path, params={"length": 4}, noise=Noise("laplace", 1.0), min_batch_size=2, seed=3)
    leader = TestClient(create_app(w.leader, collector_token_sha256=token_sha256(COLLECTOR)))
    helper = TestClient(create_app(w.helper, peer_token_sha256=token_sha256(PEER)))
    return w, leader, helper


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_routes_tokens_and_codes(apps: Any) -> None:
    w, leader, helper = apps
    p = prio()
    configs = p.decode_hpke_config_list(leader.get("/hpke_config").content)
    assert configs[0].to_bytes() == w.leader_key.config.to_bytes()
    by_task = leader.get("/hpke_config", params={"task_id": w.task.id_text})  # DAP-09 §4.4.1's query
    assert by_task.status_code == 200 and by_task.content == leader.get("/hpke_config").content
    assert by_task.headers["content-type"] == "application/dap-hpke-config-list"
    other = helper.get("/hpke_config", params={"task_id": b64(bytes(32))})
    assert other.status_code == 404 and other.json()["type"] == "urn:ietf:params:ppm:dap:error:unrecognizedTask"
    assert other.json()["taskid"] == b64(bytes(32))
    bad = helper.get("/hpke_config", params={"task_id": "not a task"})
    assert bad.status_code == 400 and bad.json()["type"] == "urn:ietf:params:ppm:dap:error:invalidMessage"
    assert "taskid" not in bad.json()  # no task ID to name
    path = f"/tasks/{w.task.id_text}/reports"
    body = w.report(1)
    assert leader.put(path, content=body, headers=DAP_REPORT).status_code == 201
    again = leader.put(path, content=body, headers=DAP_REPORT)
    assert again.status_code == 409 and again.json()["code"] == "report_replayed"
    assert again.json()["type"] == "urn:ietf:params:ppm:dap:error:reportRejected"
    assert again.json()["taskid"] == w.task.id_text  # DAP-09 §3.2's member: the task the refusal is about
    unknown = leader.put(f"/tasks/{b64(bytes(32))}/reports", content=body, headers=DAP_REPORT)
    assert unknown.json()["code"] == "unrecognized_task"
    assert leader.put("/tasks/short/reports", content=body, headers=DAP_REPORT).status_code == 404
    assert leader.put(path, content=w.report(2), headers=DAP_REPORT).status_code == 201
    collect = f"/tasks/{w.task.id_text}/collections"
    assert leader.post(collect, json={"window": T0}).status_code == 401
    assert leader.post(collect, json={"window": T0}, headers=_auth(PEER)).status_code == 401  # not the collector's
    assert leader.post(collect, json={"window": "x"}, headers=_auth(COLLECTOR)).json()["code"] == "invalid_message"
    assert helper.get("/status").status_code == 401
    # the helper's job routes take only the leader's token
    job = helper.put(f"/tasks/{w.task.id_text}/aggregation_jobs/AAAAAAAAAAAAAAAAAAAAAA", content=b"",
                     headers=_auth(COLLECTOR))
    assert job.status_code == 401
    dap_auth = helper.get("/status", headers={"DAP-Auth-Token": PEER})  # DAP implementations' header, taken too
    assert dap_auth.status_code == 200
    job = helper.put(f"/tasks/{w.task.id_text}/aggregation_jobs/AAAAAAAAAAAAAAAAAAAAAA", content=b"x",
                     headers=_auth(PEER))
    assert job.status_code == 415 and job.json()["code"] == "invalid_message"  # no DAP-09 media type
    job = helper.put(f"/tasks/{w.task.id_text}/aggregation_jobs/AAAAAAAAAAAAAAAAAAAAAA", content=b"x",
                     headers={**_auth(PEER), "Content-Type": MEDIA_TYPES["AggregationJobInitReq"]})
    assert job.status_code == 400 and job.json()["code"] == "invalid_message"
    early = leader.post(collect, json={"window": T0}, headers=_auth(COLLECTOR))
    assert early.status_code == 400 and early.json()["code"] == "window_open"
    w.now = T0 + 3601
    done = leader.post(collect, json={"window": T0}, headers=_auth(COLLECTOR))
    assert done.status_code == 200, done.text
    doc = done.json()
    assert doc["report_count"] == 2 and doc["release_epsilon"] == {"epsilon": 1.0, "delta": 0.0}
    page = leader.get("/", headers=_auth(COLLECTOR))
    assert page.status_code == 200 and "ε = 1" in page.text and "over every release" in page.text
    status = helper.get("/status", headers=_auth(PEER)).json()
    assert status["tasks"][0]["windows"][str(T0)] == {"valid": 2, "refused": {}, "collected": True}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_any_upload_body_is_refused_with_a_code(apps: Any, body: bytes) -> None:
    w, leader, _ = apps
    resp = leader.put(f"/tasks/{w.task.id_text}/reports", content=body, headers=DAP_REPORT)
    assert resp.status_code in (400, 409), resp.text
    assert json.loads(resp.text)["code"] in ("invalid_message", "report_too_early", "hpke_unknown_config_id",
                                             "hpke_decrypt_error", "report_replayed", "batch_collected")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_job_body_is_refused_with_a_code(apps: Any, body: bytes) -> None:
    w, _, helper = apps
    resp = helper.put(f"/tasks/{w.task.id_text}/aggregation_jobs/AAAAAAAAAAAAAAAAAAAAAA", content=body,
                      headers={**_auth(PEER), "Content-Type": MEDIA_TYPES["AggregationJobInitReq"]})
    assert resp.status_code in (200, 400, 409), resp.text


def test_an_abandoned_job_is_confirmed_by_the_helpers_header(apps: Any) -> None:
    """The leader splits an abandoned job only when the helper says it took the job's share out (an ``ldp`` helper's
    ``Ldp-Abandoned: share-removed``); DAP-09's DELETE alone (another implementation's 204) is not enough."""
    from ldp.aggregators.http import HelperClient
    from ldp.aggregators.messages import ABANDONED_HEADER, SHARE_REMOVED

    w, _, helper = apps
    url = f"/tasks/{w.task.id_text}/aggregation_jobs/AAAAAAAAAAAAAAAAAAAAAA"
    r = helper.delete(url, headers=_auth(PEER))
    assert r.status_code == 204 and r.headers[ABANDONED_HEADER] == SHARE_REMOVED

    class Through(HelperClient):
        def _exchange(self, method: str, path: str, body: bytes, content_type: str) -> tuple[int, bytes, Any]:
            resp = helper.request(method, path, content=body, headers={**_auth(PEER), "Content-Type": content_type})
            return resp.status_code, resp.content, resp.headers

    assert Through("http://helper", PEER).abandon_job(w.task.task_id, "BBBBBBBBBBBBBBBBBBBBBB") is True

    class Janus(Through):  # DAP-09's DELETE: 204, the job's state discarded, nothing said of its share
        def _exchange(self, method: str, path: str, body: bytes, content_type: str) -> tuple[int, bytes, Any]:
            return 204, b"", {}

    assert Janus("http://helper", PEER).abandon_job(w.task.task_id, "BBBBBBBBBBBBBBBBBBBBBB") is False


def test_the_leader_sends_its_token_in_the_header_its_config_names(tmp_path: Path) -> None:
    """``[peer] token_header = "dap-auth-token"``: the leader's requests to a helper that expects DAP implementations'
    ``DAP-Auth-Token`` header carry it there (and no ``Authorization``); the default is the bearer token. A helper's
    config with the key is refused (it takes either), and so is another value."""
    import http.server
    import threading

    from ldp.aggregators.config import load_config
    from ldp.aggregators.http import HelperClient
    from ldp.errors import ConfigError
    from ldp.web.secret_files import write_secret

    seen: list[Any] = []  # each request's headers (an email.message.Message: names compared case-insensitively)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_DELETE(self) -> None:  # noqa: N802 (the standard library's name)
            seen.append(self.headers)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        HelperClient(url, "tok", token_header="dap-auth-token").abandon_job(bytes(32), "A" * 22)
        HelperClient(url, "tok").abandon_job(bytes(32), "A" * 22)
    finally:
        server.shutdown()
        server.server_close()
    assert seen[0].get("DAP-Auth-Token") == "tok" and seen[0].get("Authorization") is None
    assert seen[1].get("Authorization") == "Bearer tok" and seen[1].get("DAP-Auth-Token") is None
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    from ldp.aggregators.config import save_keypair

    w.task.save(tmp_path / "t.json")
    write_secret(tmp_path / "t.verify", b64(w.verify_key) + "\n")
    write_secret(tmp_path / "helper.token", "tok\n")
    save_keypair(tmp_path / "k.json", w.leader_key)
    tasks = '[[tasks]]\nfile = "t.json"\nverify_key_file = "t.verify"\n'
    leader = ('role = "leader"\nstore = "s"\nhpke_key = "k.json"\n[peer]\nurl = "http://h"\n'
              'token_file = "helper.token"\n{extra}[collector]\ntoken_sha256 = "' + "b" * 64 + '"\n' + tasks)
    path = tmp_path / "leader.toml"
    path.write_text(leader.format(extra=""))
    assert load_config(path).peer_token_header == "authorization"
    path.write_text(leader.format(extra='token_header = "dap-auth-token"\n'))
    assert load_config(path).peer_token_header == "dap-auth-token"
    path.write_text(leader.format(extra='token_header = "basic"\n'))
    with pytest.raises(ConfigError, match="peer.token_header must be one of authorization, dap-auth-token"):
        load_config(path)
    path.write_text('role = "helper"\nstore = "s"\nhpke_key = "k.json"\n[peer]\ntoken_sha256 = "' + "a" * 64
                    + '"\ntoken_header = "dap-auth-token"\n' + tasks)
    with pytest.raises(ConfigError, match="the helper takes either header"):
        load_config(path)
