"""The binding's HTTP front (issue 86, item 3; :mod:`ldp.web.front`, :mod:`ldp.aggregators.uploads`): the leader
served through it answers every request exactly as the Starlette app answers it (a differential test, by hand and by
hypothesis; the CORS headers of :mod:`ldp.aggregators.cors` included, which only the two device routes carry), each
upload answered 201 is stored once (many threads racing the same reports in), the shares the front opens as uploads
arrive change no outcome, and the front's own edges (a body over its limit with no length, a request left
unanswered at close, its arguments) are refused or answered."""

from __future__ import annotations

import http.client
import json
import secrets
import socket
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from two_aggregators import prio, world

from ldp.aggregators.routes import MAX_REPORT

DAP = "application/dap-report"


def _twin(w: Any, root: Path) -> Any:
    """A second leader of the same task, keys and clock over a store of its own."""
    from ldp.aggregators.leader import Leader
    from ldp.storage import open_store

    return Leader([w.task], open_store(root), w.leader_key, {w.task.task_id: w.verify_key}, w.helper,
                  clock=lambda: w.now, **(w.leader_options or {}))


@pytest.fixture
def pair(tmp_path: Path) -> Any:
    """(world, twin leader, a TestClient of the world's leader's app, the twin served through the front)."""
    from starlette.testclient import TestClient

    from ldp.aggregators.http import create_app
    from ldp.aggregators.service import front_for

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    twin = _twin(w, tmp_path / "twin-store")
    front = front_for(create_app(twin), "leader", "127.0.0.1", 0)
    front.start()
    try:
        yield w, twin, TestClient(create_app(w.leader)), front
    finally:
        front.stop()


def exchange(front: Any, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
             conn: http.client.HTTPConnection | None = None) -> tuple[int, str | None, bytes, list[tuple[str, str]]]:
    """One request to the front: (status, Content-Type, body, its CORS headers as :func:`cors_of` lists them)."""
    own = conn is None
    conn = conn or http.client.HTTPConnection(*front.address, timeout=30)
    try:
        try:
            conn.request(method, path, body=body, headers=headers or {})
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered (413) and closed before the whole body was sent: the answer is read all the same
        resp = conn.getresponse()
        return resp.status, resp.getheader("content-type"), resp.read(), cors_of(resp.getheaders())
    finally:
        if own:
            conn.close()


def send(front: Any, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
         conn: http.client.HTTPConnection | None = None) -> tuple[int, str | None, bytes]:
    """One request to the front: (status, Content-Type, body)."""
    status, ctype, data, _ = exchange(front, method, path, body, headers, conn)
    return status, ctype, data


def cors_of(headers: Any) -> list[tuple[str, str]]:
    """The CORS headers among ``headers`` (``(name, value)`` pairs), names in lower case, in their order."""
    return [(k.lower(), v) for k, v in headers if k.lower().startswith("access-control-") or k.lower() == "vary"]


def both(w: Any, client: Any, front: Any, method: str, path: str, body: bytes = b"",
         headers: dict[str, str] | None = None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The same request to the app (through Starlette's TestClient) and to the front: each (status, Content-Type,
    body, a JSON body decoded, its CORS headers)."""
    ref = client.request(method, path, content=body, headers=headers or {}, follow_redirects=False)
    got = exchange(front, method, path, body, headers)

    def norm(status: int, ctype: str | None, data: bytes, cors: list[tuple[str, str]]) -> tuple[Any, ...]:
        try:
            return status, ctype, json.loads(data), cors
        except ValueError:
            return status, ctype, data, cors

    mine = norm(ref.status_code, ref.headers.get("content-type"), ref.content, cors_of(ref.headers.multi_items()))
    return mine, norm(*got)


def test_the_front_answers_every_route_as_the_app(pair: Any) -> None:
    """A valid upload, its replay, each refusal of the upload route (media type, task, size, bytes), and the other
    routes: the same status, type and body through the front as through the app."""
    w, _, client, front = pair
    path = f"/tasks/{w.task.id_text}/reports"
    body = w.report(1)
    other = "A" * 43
    cases = [
        ("PUT", path, body, {"Content-Type": DAP}),  # 201
        ("PUT", path, body, {"Content-Type": DAP}),  # the replay: 409
        ("PUT", path, w.report(2), {"Content-Type": "application/DAP-Report; x=1"}),  # the type, case-insensitive
        ("PUT", path, w.report(2), {"Content-Type": "application/octet-stream"}),  # 415
        ("PUT", path, w.report(2), {}),  # no type: 415
        ("PUT", f"/tasks/{other}/reports", w.report(2), {"Content-Type": DAP}),  # no such task: 404
        ("PUT", "/tasks/not-a-task/reports", w.report(2), {"Content-Type": DAP}),  # no task ID: 404
        ("PUT", path, b"\x00" * (MAX_REPORT + 1), {"Content-Type": DAP}),  # 413
        ("PUT", path, b"no report", {"Content-Type": DAP}),  # invalid_message
        ("PUT", path, b"", {"Content-Type": DAP}),
        ("GET", path, b"", {}),  # 405
        ("POST", path, b"", {}),
        ("GET", "/healthz", b"", {}),
        ("GET", "/hpke_config", b"", {}),
        ("GET", f"/hpke_config?task_id={w.task.id_text}", b"", {}),
        ("GET", "/hpke_config?task_id=bad", b"", {}),
        ("GET", "/status", b"", {}),  # 401
        ("GET", "/nothing/here", b"", {}),  # 404
        ("PUT", f"/tasks/{w.task.id_text}/collection_jobs/abc", b"{}", {"Content-Type": "application/json"}),
    ]
    statuses = []
    for method, p, data, headers in cases:
        ref, got = both(w, client, front, method, p, data, headers)
        assert got == ref, (method, p, headers)
        statuses.append(ref[0])
    assert statuses[:2] == [201, 409] and 415 in statuses and 413 in statuses and 405 in statuses


def test_the_door_counters_agree(pair: Any) -> None:
    """The refusals counted at the door (``refused_at_upload``) are the same through the front and the app."""
    w, twin, client, front = pair
    path = f"/tasks/{w.task.id_text}/reports"
    for headers, data in (({"Content-Type": "text/plain"}, w.report(1)), ({"Content-Type": DAP}, b"junk"),
                          ({"Content-Type": DAP}, w.report(3))):
        both(w, client, front, "PUT", path, data, headers)
    mine = w.leader.status()["tasks"][0]["refused_at_upload"]
    assert mine == twin.status()["tasks"][0]["refused_at_upload"] and sum(mine.values()) == 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["PUT", "POST", "GET", "DELETE"]),
       path=st.sampled_from(["/tasks/{t}/reports", "/tasks/{t}/reports/", "/tasks/{x}/reports", "/tasks//reports",
                             "/hpke_config", "/tasks/{t}/collections", "/{x}", "/tasks/{t}/reports?{x}"]),
       segment=st.text(alphabet="abcAB-_09%/.", max_size=12),
       body=st.binary(max_size=300),
       ctype=st.sampled_from([DAP, "application/dap-report; charset=x", "APPLICATION/DAP-REPORT", "text/plain",
                              None]))
def test_any_request_gets_the_apps_answer(pair: Any, method: str, path: str, segment: str, body: bytes,
                                          ctype: str | None) -> None:
    """Any method, path, body and media type (never a valid report: the answers do not depend on the door's state)
    gets the same status, type and body through the front as through the app."""
    w, _, client, front = pair
    from urllib.parse import quote

    p = path.format(t=w.task.id_text, x=quote(segment, safe="/%"))
    # httpx (the TestClient) reads "//x" as a URL with an authority, and drops dot segments (RFC 3986 §5.2.4): a
    # server is sent them as they are, so they are no request the two can be compared on
    assume(not p.startswith("//") and not {".", ".."} & set(p.split("?")[0].split("/")))
    headers = {"Content-Type": ctype} if ctype else {}
    ref, got = both(w, client, front, method, p, body, headers)
    assert got == ref


ORIGIN = "http://page.example:8080"
PREFLIGHT = {"Origin": ORIGIN, "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "content-type"}
ANY = [("access-control-allow-origin", "*")]


def preflight(method: str) -> list[tuple[str, str]]:
    """The CORS headers of a device route's preflight answer (``method``: the route's)."""
    return [*ANY, ("access-control-allow-methods", method), ("access-control-allow-headers", "content-type"),
            ("access-control-max-age", "86400")]


@pytest.fixture
def helper_pair(tmp_path: Path) -> Any:
    """(world, a TestClient of the world's helper's app, the same helper served through the front)."""
    from starlette.testclient import TestClient

    from ldp.aggregators.http import create_app
    from ldp.aggregators.service import front_for

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    front = front_for(create_app(w.helper), "helper", "127.0.0.1", 0)
    front.start()
    try:
        yield w, TestClient(create_app(w.helper)), front
    finally:
        front.stop()


def test_the_device_routes_answer_pages_of_any_origin(pair: Any, helper_pair: Any) -> None:
    """The leader's upload route and both aggregators' ``/hpke_config`` answer a preflight 204 with the CORS headers,
    and carry ``Access-Control-Allow-Origin: *`` on every answer, refusals included; the collector's, the operator's
    and the helper's aggregation routes carry none, their preflight refused as before. The same through the front
    as through the app."""
    w, _, client, front = pair
    path, t = f"/tasks/{w.task.id_text}/reports", w.task.id_text
    dap, body = {"Origin": ORIGIN, "Content-Type": DAP}, w.report(1)
    cases = [
        ("OPTIONS", path, b"", PREFLIGHT, 204, preflight("PUT")),
        ("OPTIONS", "/tasks/not-a-task/reports", b"", {}, 204, preflight("PUT")),  # whatever the task and headers
        ("OPTIONS", "/hpke_config", b"", {"Origin": ORIGIN, "Access-Control-Request-Method": "GET"}, 204,
         preflight("GET")),
        ("PUT", path, body, dap, 201, ANY),
        ("PUT", path, body, dap, 409, ANY),
        ("PUT", path, w.report(2), {"Origin": ORIGIN, "Content-Type": "text/plain"}, 415, ANY),
        ("PUT", f"/tasks/{'A' * 43}/reports", w.report(2), dap, 404, ANY),
        ("PUT", path, b"\x00" * (MAX_REPORT + 1), dap, 413, ANY),
        ("PUT", path, b"no report", {"Content-Type": DAP}, 400, ANY),  # no Origin: the same answer
        ("GET", "/hpke_config", b"", {"Origin": ORIGIN}, 200, ANY),
        ("GET", "/hpke_config?task_id=bad", b"", {"Origin": ORIGIN}, 400, ANY),
        ("GET", path, b"", {"Origin": ORIGIN}, 405, []),
        ("OPTIONS", f"/tasks/{t}/collection_jobs/abc", b"", PREFLIGHT, 405, []),
        ("PUT", f"/tasks/{t}/collection_jobs/abc", b"{}", dap, 401, []),
        ("OPTIONS", f"/tasks/{t}/collections", b"", PREFLIGHT, 405, []),
        ("OPTIONS", "/status", b"", PREFLIGHT, 405, []),
        ("GET", "/status", b"", {"Origin": ORIGIN}, 401, []),
        ("GET", "/healthz", b"", {"Origin": ORIGIN}, 200, []),
    ]
    for method, p, data, headers, status, cors in cases:
        ref, got = both(w, client, front, method, p, data, headers)
        assert got == ref and (ref[0], ref[3]) == (status, cors), (method, p, ref)
    w, client, front = helper_pair
    cases = [
        ("OPTIONS", "/hpke_config", b"", PREFLIGHT, 204, preflight("GET")),
        ("GET", "/hpke_config", b"", {"Origin": ORIGIN}, 200, ANY),
        ("OPTIONS", path, b"", PREFLIGHT, 404, []),  # the helper takes no upload
        ("PUT", path, w.report(1), dap, 404, []),
        ("OPTIONS", f"/tasks/{t}/aggregation_jobs/abc", b"", PREFLIGHT, 405, []),
        ("PUT", f"/tasks/{t}/aggregation_jobs/abc", b"", dap, 401, []),
        ("POST", f"/tasks/{t}/aggregate_shares", b"", dap, 401, []),
    ]
    for method, p, data, headers, status, cors in cases:
        ref, got = both(w, client, front, method, p, data, headers)
        assert got == ref and (ref[0], ref[3]) == (status, cors), (method, p, ref)


DEVICE_PATHS = {"/tasks/{t}/reports": "PUT", "/tasks/{x}/reports": "PUT", "/hpke_config": "GET",
                "/hpke_config?task_id={x}": "GET"}
"""The paths of the property below that may be a device route (``{x}`` one when it is one segment), each with its
method."""


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(role=st.sampled_from(["leader", "helper"]),
       method=st.sampled_from(["OPTIONS", "PUT", "GET", "HEAD", "POST", "DELETE"]),
       path=st.sampled_from([*DEVICE_PATHS, "/tasks/{t}/reports/", "/tasks/{t}/aggregation_jobs/{x}",
                             "/tasks/{t}/aggregate_shares", "/tasks/{t}/collection_jobs/{x}",
                             "/tasks/{t}/collections", "/tasks/{t}/jobs/put_back", "/status", "/", "/healthz",
                             "/{x}", "/hpke_config/{x}"]),
       segment=st.text(alphabet="abcAB-_09%/", min_size=1, max_size=12),
       origin=st.one_of(st.none(), st.just("null"), st.text(alphabet="abcz09.:/-", max_size=30),
                        st.sampled_from(["https://app.example", "http://127.0.0.1:9"])),
       asked=st.sampled_from([None, "PUT", "GET", "POST", "DELETE"]))
def test_only_the_device_routes_carry_cors(pair: Any, helper_pair: Any, role: str, method: str, path: str,
                                          segment: str, origin: str | None, asked: str | None) -> None:
    """Any origin (none too), method, path and asked method, at either role: an answer carries CORS headers exactly
    when it is one of the two device routes' (the leader's upload route, either's ``/hpke_config``) with their method
    (``HEAD`` beside ``GET``) or a preflight of one — the same whatever the origin — and the front's are the app's."""
    from urllib.parse import quote, unquote

    w, client, front = (pair[0], pair[2], pair[3]) if role == "leader" else helper_pair
    p = path.format(t=w.task.id_text, x=quote(segment, safe="/%"))
    assume(not p.startswith("//"))
    headers = {k: v for k, v in (("Origin", origin), ("Access-Control-Request-Method", asked)) if v is not None}
    if method == "PUT":
        headers["Content-Type"] = DAP
    ref, got = both(w, client, front, method, p, b"junk" if method == "PUT" else b"", headers)
    assert got == ref
    one_segment = "/" not in unquote(quote(segment, safe="/%")) and path != "/tasks/{t}/reports/"
    route = DEVICE_PATHS.get(path) if one_segment or "{x}" not in path.split("?")[0] else None
    if route == "PUT" and role == "helper":
        route = None
    if route is None:
        assert ref[3] == [], (role, method, p, ref)
    elif method == "OPTIONS":
        assert ref[:1] + ref[3:] == (204, preflight(route)), (role, method, p, ref)
    else:
        assert ref[3] == (ANY if method == route or (route, method) == ("GET", "HEAD") else []), (role, method, p)


def test_every_upload_answered_201_is_stored_once(pair: Any) -> None:
    """Eight clients race 240 uploads in, each of 80 reports sent three times: exactly one copy of each is answered
    201 (the others 409), and the chunks in the store hold each of those reports once."""
    from ldp.aggregators.messages import REPORT_ID_SIZE
    from ldp.aggregators.records import split_chunk

    w, twin, _, front = pair
    path = f"/tasks/{w.task.id_text}/reports"
    bodies = [w.report(i % 4) for i in range(80)]
    sends = [b for b in bodies for _ in range(3)]
    secrets.SystemRandom().shuffle(sends)
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def client(part: list[bytes]) -> None:
        conn = http.client.HTTPConnection(*front.address, timeout=60)
        for body in part:
            status, _, _ = send(front, "PUT", path, body, {"Content-Type": DAP}, conn=conn)
            with lock:
                statuses[status] += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(sends[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == {201: 80, 409: 160}
    stored = [b[:REPORT_ID_SIZE] for key in twin.store.list("aggregators/leader/") if key.endswith(".reports")
              for b in split_chunk(twin.store.get(key))]
    assert sorted(stored) == sorted(b[:REPORT_ID_SIZE] for b in bodies)


def test_shares_opened_by_the_front_change_no_outcome(tmp_path: Path) -> None:
    """``upload_many`` given the shares already opened refuses and takes exactly what it does opening them itself: a
    share that did not open is ``hpke_decrypt_error``; a list of another length is refused."""
    p = prio()
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    twin = _twin(w, tmp_path / "twin-store")
    bodies = [w.report(1), w.report(2), b"junk", w.report(3)]
    bodies.append(bodies[0])
    opened = []
    for body in bodies:
        try:
            r = p.DapReport.from_bytes(body)
            opened.append(p.open_input_share(w.leader_key, role="leader", task_id=w.task.task_id,
                                             report_id=r.report_id, time=r.time, public_share=r.public_share,
                                             ciphertext=r.leader_ciphertext))
        except Exception:  # noqa: BLE001 (no report: nothing opens)
            opened.append(None)
    codes = [None if e is None else e.code for e in w.leader.upload_many(w.task.task_id, bodies)]
    assert codes == [None if e is None else e.code for e in twin.upload_many(w.task.task_id, bodies, opened)]
    assert codes == [None, None, "invalid_message", None, "report_replayed"]
    third = _twin(w, tmp_path / "third-store")
    assert [e and e.code for e in third.upload_many(w.task.task_id, bodies[:1], [None])] == ["hpke_decrypt_error"]
    with pytest.raises(ValueError, match="2 shares for 1 bodies"):
        third.upload_many(w.task.task_id, bodies[:1], [None, None])


def test_a_chunked_body_over_the_limit_is_413(pair: Any) -> None:
    """A body with no ``Content-Length`` (chunked) is counted as it comes: past the front's limit it is refused 413
    with the layer's problem document, for the upload route and any other."""
    w, _, _, front = pair
    sock = socket.create_connection(front.address, timeout=30)
    chunk = b"\x00" * 65536
    head = (f"PUT /tasks/{w.task.id_text}/reports HTTP/1.1\r\nHost: x\r\nContent-Type: {DAP}\r\n"
            f"Transfer-Encoding: chunked\r\n\r\n").encode()
    sock.sendall(head)
    try:
        for _ in range(MAX_REPORT // len(chunk) + 2):
            sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
    except OSError:
        pass  # the front answered and closed mid-body
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            break
        data += more
    sock.close()
    assert data.startswith(b"HTTP/1.1 413"), data[:200]
    assert b"application/problem+json" in data.lower()


def test_a_request_left_unanswered_at_close_gets_503() -> None:
    """The front closed with a request it handed over and nobody answered: the client gets a 503, not a hang."""
    p = prio()
    front = p.HttpFront("127.0.0.1", 0, max_body=1024)
    out: list[int] = []
    t = threading.Thread(target=lambda: out.append(send(front, "GET", "/x")[0]))
    t.start()
    assert len(front.next_requests(10, 30)) == 1  # taken, never answered
    front.close(0.1)
    t.join(30)
    assert out == [503]


def test_the_fronts_arguments_and_answers_are_checked() -> None:
    """Each argument the front takes is checked, and a request is answered exactly once."""
    p = prio()
    with pytest.raises(ValueError, match="go together"):
        p.HttpFront("127.0.0.1", 0, max_body=10, keypair=p.HpkeKeypair.generate(1))
    with pytest.raises(ValueError, match="32-byte task ID"):
        p.HttpFront("127.0.0.1", 0, max_body=10, keypair=p.HpkeKeypair.generate(1), upload_tasks={"a": b"x"})
    with pytest.raises(ValueError, match="IP address"):
        p.HttpFront("localhost", 0, max_body=10)
    with pytest.raises(ValueError, match="threads"):
        p.HttpFront("127.0.0.1", 0, max_body=10, threads=0)
    front = p.HttpFront("127.0.0.1", 0, max_body=10, reuse_port=True)
    try:
        with pytest.raises(OSError, match="cannot listen"):
            p.HttpFront("127.0.0.1", front.address[1], max_body=10)
        second = p.HttpFront("127.0.0.1", front.address[1], max_body=10, reuse_port=True)  # replicas share a port
        second.close()
        with pytest.raises(ValueError, match="timeout"):
            front.next_requests(1, -1.0)
        out: list[tuple[int, str | None, bytes]] = []
        t = threading.Thread(target=lambda: out.append(send(front, "POST", "/y?q=1", b"hi")))
        t.start()
        (req,) = front.next_requests(10, 30)
        assert (req.method, req.path, req.query, req.body, req.body_error) == ("POST", "/y", "q=1", b"hi", None)
        assert req.header("HOST") is not None and not req.open_tried and req.opened is None
        with pytest.raises(ValueError, match="no HTTP status"):
            req.respond(99, [], b"")
        with pytest.raises(ValueError, match="cannot be sent"):
            req.respond(200, [("bad name", b"x")], b"")
        req.respond(202, [("x-k", b"v")], b"ok")
        with pytest.raises(RuntimeError, match="answered already"):
            req.respond(200, [], b"")
        t.join(30)
        assert out == [(202, None, b"ok")] and req.answered
    finally:
        front.close(1.0)
    front.close(1.0)  # idempotent


def test_http_is_an_aggregators_choice(tmp_path: Path) -> None:
    """``--http`` names an aggregator's server; the ingest service refuses it, and ``serve`` refuses another name."""
    import subprocess
    import sys

    from ldp.aggregators.service import serve

    done = subprocess.run([sys.executable, "-m", "ldp", "serve", "--http", "native", "--config", "x.toml"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--http is an aggregator's" in done.stderr
    with pytest.raises(ValueError, match="native or uvicorn"):
        serve(None, "127.0.0.1", 0, http="h2")  # type: ignore[arg-type]


def test_the_fronts_own_500_carries_cors_on_the_device_routes(pair: Any) -> None:
    """A failure the front answers itself (its batch route raising, or the app) is a 500 problem with the route's
    CORS headers on the device routes, as behind another ASGI server, and none elsewhere: a page reads the 500 instead
    of a network error."""
    w, _, _, front = pair

    def broken_batch(requests: list[Any]) -> list[Any]:
        raise RuntimeError("broken")

    async def broken_app(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("broken")

    front.batch, front.app = broken_batch, broken_app
    upload = exchange(front, "PUT", f"/tasks/{w.task.id_text}/reports", w.report(1),
                      {"Origin": ORIGIN, "Content-Type": DAP})
    assert (upload[0], upload[3]) == (500, ANY)
    front.batch = None  # the app's failures: a device route and another
    assert [(s, c) for s, _, _, c in (exchange(front, "GET", "/hpke_config", b"", {"Origin": ORIGIN}),
                                       exchange(front, "GET", "/status", b"", {"Origin": ORIGIN}))] == [(500, ANY),
                                                                                                       (500, [])]
