"""Both HTTP services through one table (issue 83, item 2): ``ldp serve`` (the ingest service, as
:func:`ldp.ingest.service.create_service` builds it) and ``ldp serve --role leader|helper`` (the apps of
:func:`ldp.aggregators.http.create_app`) answer the same header and body cases the same way, because they are built
on one layer (:mod:`ldp.web`): one ``Authorization`` parser (RFC 9110 §11.1: the scheme case-insensitive; OWS
around the token), one body limit (413 before more is read), one problem document (RFC 9457,
``application/problem+json``) for every refusal, 404 and 405 included.

Each service names the route a token opens, its token, the route and limit of a body, and a route's wrong method;
the rows are the cases. The aggregators are the real ones when the Prio3 binding is built, else stand-ins with the
same public methods: every refusal of the table is the layer's (or the routes') before an aggregator is asked, and an
accepted row reads its ``status()``.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient
from support import ROOT

from ldp.aggregators.http import create_app as aggregator_app
from ldp.ingest.config import new_token, parse_config, token_sha256
from ldp.ingest.service import create_service

PROBLEM = "application/problem+json"
DAP = "urn:ietf:params:ppm:dap:error:"
SPEC = ROOT / "examples" / "collection.json"
GOOD = [ln for ln in (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
        if ln.startswith(b'{"spec":"3455db860d356e46"')][:3]
UPLOADER, PEER, COLLECTOR = new_token(), new_token(), new_token()
INGEST_LIMIT = 4096
TASK = "A" * 43  # a task ID's base64url (32 bytes): the routes check its form, the stand-ins nothing more


@dataclass
class Service:
    """One service as the table drives it."""

    name: str
    client: TestClient
    token: str
    auth: Callable[[TestClient, dict[str, Any]], Any]
    """A request to a route the token opens (more headers given)."""
    body: tuple[str, str, dict[str, str]]
    """The method, path and headers of a route whose body has a limit."""
    limit: int
    wrong_method: tuple[str, str, str]
    """A method a path does not take, the path, and its ``Allow``."""
    dap: bool
    """Whether its own refusals (the 401 here) have DAP's type."""


class StandIn:
    """An aggregator's public face (``role`` and the methods the routes call), used without the Prio3 binding."""

    def __init__(self, role: str) -> None:
        self.role = role

    def hpke_config_list(self) -> bytes:
        return b"\x00\x00"

    def status(self) -> dict[str, Any]:
        return {"role": self.role, "tasks": []}

    def upload(self, task_id: bytes, body: bytes) -> None:
        return None

    def aggregation_job(self, task_id: bytes, job: str, body: bytes) -> bytes:
        return b""

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        return b""

    def collect(self, task_id: bytes, window: int) -> dict[str, Any]:
        return {}


def _aggregators(root: Path) -> tuple[Any, Any]:
    """The real leader and helper when the Prio3 binding is built, else stand-ins."""
    from ldp import prio

    if prio.available() and hasattr(prio, "seal_report"):
        folder = str(ROOT / "tests" / "aggregators")  # its helper module, as its own tests import it
        if folder not in sys.path:
            sys.path.append(folder)
        from two_aggregators import world

        w = world(root)
        return w.leader, w.helper
    return StandIn("leader"), StandIn("helper")


_BATCHES = itertools.count()


def _upload(c: TestClient, headers: dict[str, Any]) -> Any:
    """An upload of a few good lines, each under a batch id of its own (an accepted one is stored)."""
    return c.post("/v1/reports", content=b"".join(GOOD), headers={
        "Content-Type": "application/x-ndjson", "Ldp-Batch-Id": f"b{next(_BATCHES)}", **headers})


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Service]]:
    root = tmp_path_factory.mktemp("services")
    config = parse_config({"data_dir": "data", "fold": {"every_seconds": 0}, "limits": {"max_body_bytes": INGEST_LIMIT},
                           "apps": {"demo": {"token_sha256": token_sha256(UPLOADER), "specs": [str(SPEC)]}}}, root)
    leader, helper = _aggregators(root)
    status: Callable[[TestClient, dict[str, Any]], Any] = lambda c, h: c.get("/status", headers=h)  # noqa: E731
    reports, shares = f"/tasks/{TASK}/reports", f"/tasks/{TASK}/aggregate_shares"
    leader_app = aggregator_app(leader, collector_token_sha256=token_sha256(COLLECTOR))
    helper_app = aggregator_app(helper, peer_token_sha256=token_sha256(PEER))
    upload_headers = {"Content-Type": "application/x-ndjson", "Ldp-Batch-Id": "big"}
    with TestClient(create_service(config)) as ingest:
        yield {"ingest": Service("ingest", ingest, UPLOADER, _upload, ("POST", "/v1/reports", upload_headers),
                                 INGEST_LIMIT, ("GET", "/v1/reports", "POST"), dap=False),
               "leader": Service("leader", TestClient(leader_app), COLLECTOR, status,
                                 ("PUT", reports, {"Content-Type": "application/dap-report"}), 1 << 20,
                                 ("DELETE", reports, "PUT"), dap=True),
               "helper": Service("helper", TestClient(helper_app), PEER, status,
                                 ("POST", shares, {"Content-Type": "application/dap-aggregate-share-req"}), 4096,
                                 ("GET", shares, "POST"), dap=True)}


def check_problem(r: Any, status: int, code: str, type_: str) -> dict[str, Any]:
    """An RFC 9457 problem document with ``status`` and ``code`` (as ``code`` and as ``error``, which comes first)."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    doc = r.json()
    assert doc["status"] == status and doc["code"] == doc["error"] == code and doc["type"] == type_, doc
    assert isinstance(doc["title"], str) and doc["title"] and isinstance(doc["detail"], str) and doc["detail"], doc
    assert list(doc)[:2] == ["error", "detail"], doc
    return doc


AUTH_CASES = [
    # (case, the Authorization header with {t} for the service's token, accepted)
    ("missing", None, False),
    ("wrong scheme", "Basic {t}", False),
    ("the scheme alone", "Bearer", False),
    ("lower-case scheme", "bearer {t}", True),
    ("upper-case scheme", "BEARER {t}", True),
    ("mixed-case scheme", "bEaReR {t}", True),
    ("extra spaces after the scheme", "Bearer     {t}", True),
    ("a tab, not a space, after the scheme", "Bearer\t{t}", False),
    ("tabs around the token", "Bearer \t{t}\t", True),
    ("no space after the scheme", "Bearer{t}", False),
    ("empty token", "Bearer ", False),
    ("empty token, blanks", "Bearer  \t ", False),
    ("wrong token", "Bearer wrong-{t}", False),
    ("the token and one more character", "Bearer {t}x", False),
    ("a trailing space (OWS, dropped)", "Bearer {t} ", True),
    ("a trailing separator (not OWS: str.strip would drop it)", "Bearer {t}\x1c", False),
    ("a trailing no-break space", "Bearer {t}\xa0", False),
    ("another service's token", "Bearer {other}", False),
]


@pytest.mark.parametrize("service", ["ingest", "leader", "helper"])
@pytest.mark.parametrize(("case", "header", "accepted"), AUTH_CASES, ids=[c[0] for c in AUTH_CASES])
def test_authorization_cases(services: dict[str, Service], service: str, case: str, header: str | None,
                             accepted: bool) -> None:
    s = services[service]
    other = {"ingest": PEER, "leader": UPLOADER, "helper": COLLECTOR}[service]
    headers = {} if header is None else {"Authorization": header.format(t=s.token, other=other).encode("latin-1")}
    r = s.auth(s.client, headers)
    if accepted:
        assert r.status_code == 200, (case, r.text)
        assert r.headers["content-type"].startswith("application/json")
        return
    check_problem(r, 401, "unauthorized", DAP + "unauthorizedRequest" if s.dap else "about:blank")
    assert r.headers["www-authenticate"] == "Bearer"


def _chunks(n: int) -> Iterator[bytes]:
    while n > 0:
        yield b"x" * min(n, 1000)
        n -= 1000


BODY_CASES = [
    # (case, the body's size over the limit, sent with a Content-Length)
    ("over the limit, said by Content-Length", 1, True),
    ("over the limit, streamed without a length", 1, False),
    ("far over the limit, streamed", 10_000, False),
]


@pytest.mark.parametrize("service", ["ingest", "leader", "helper"])
@pytest.mark.parametrize(("case", "over", "length"), BODY_CASES, ids=[c[0] for c in BODY_CASES])
def test_body_limit_cases(services: dict[str, Service], service: str, case: str, over: int, length: bool) -> None:
    s = services[service]
    method, path, headers = s.body
    size = s.limit + over
    content: Any = b"x" * size if length else _chunks(size)
    r = s.client.request(method, path, content=content, headers={**headers, "Authorization": f"bearer {s.token}"})
    doc = check_problem(r, 413, "too_large", "about:blank")
    assert doc["title"] == "Content Too Large" and str(s.limit) in doc["detail"]
    assert r.headers["connection"] == "close"


@pytest.mark.parametrize("service", ["ingest", "leader", "helper"])
def test_a_body_at_the_limit_is_read(services: dict[str, Service], service: str) -> None:
    """The limit itself is allowed: what the route answers then is its own business, never a 413."""
    s = services[service]
    method, path, headers = s.body
    auth = {"Authorization": f"Bearer {s.token}"}
    r = s.client.request(method, path, content=_chunks(s.limit), headers={**headers, **auth})
    assert r.status_code != 413, r.text


@pytest.mark.parametrize("service", ["ingest", "leader", "helper"])
@pytest.mark.parametrize("path", ["/no/such/path", "/v1/report", "/tasks", "/%00"])
def test_unknown_path(services: dict[str, Service], service: str, path: str) -> None:
    s = services[service]
    r = s.client.get(path, headers={"Authorization": f"Bearer {s.token}"})
    doc = check_problem(r, 404, "not_found", "about:blank")
    assert doc["title"] == "Not Found"


@pytest.mark.parametrize("service", ["ingest", "leader", "helper"])
def test_wrong_method(services: dict[str, Service], service: str) -> None:
    s = services[service]
    method, path, allow = s.wrong_method
    r = s.client.request(method, path, headers={"Authorization": f"Bearer {s.token}"})
    doc = check_problem(r, 405, "method_not_allowed", "about:blank")
    assert r.headers["allow"] == allow and doc["title"] == "Method Not Allowed" and allow in doc["detail"]


@pytest.mark.parametrize("service", ["leader", "helper"])
def test_an_aggregators_own_refusal_has_dap_type(services: dict[str, Service], service: str) -> None:
    """A refusal of the aggregators' (a task ID that is none) keeps DAP's type and its status."""
    s = services[service]
    path = "/tasks/short/reports" if service == "leader" else "/tasks/short/aggregate_shares"
    r = s.client.request("PUT" if service == "leader" else "POST", path, content=b"x",
                         headers={"Authorization": f"Bearer {s.token}"})
    doc = check_problem(r, 404, "unrecognized_task", DAP + "unrecognizedTask")
    assert doc["title"] == "Unrecognized task"
