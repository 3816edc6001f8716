"""CORS for ``POST /v1/reports`` (issue 32): the ``cors_origins`` config key, the preflight, the CORS headers on
every answer of an upload from a listed origin (and none otherwise), through Starlette's TestClient and through
uvicorn's two HTTP parsers."""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402
from test_ingest_app import GOOD, SPEC, TOKEN, headers, lines, stored_lines  # noqa: E402

from ldp.ingest.app import ACCESS_LOGGER, create_app  # noqa: E402
from ldp.ingest.config import ConfigError, IngestConfig, check_origin, load_config, parse_config, token_sha256  # noqa: E402
from ldp.ingest.cors import ALLOW_HEADERS  # noqa: E402

APP = "https://app.example.com"
LOCAL = "http://127.0.0.1:8123"
CORS_HEADERS = ("access-control-allow-origin", "access-control-allow-methods", "access-control-allow-headers",
                "access-control-max-age", "access-control-expose-headers", "access-control-allow-credentials")


def cors_config(tmp_path: Path, origins: Any = (APP, LOCAL), **limits: float) -> IngestConfig:
    origins = list(origins) if isinstance(origins, tuple) else origins
    doc = {"data_dir": "data", "limits": limits, "cors_origins": origins,
           "apps": {"demo": {"token_sha256": token_sha256(TOKEN), "specs": [str(SPEC)]}}}
    return parse_config(doc, tmp_path)


def preflight(origin: str | bytes | None = APP, method: str | None = "POST") -> dict[str, Any]:
    h: dict[str, Any] = {"Access-Control-Request-Headers": "authorization,content-encoding,content-type,ldp-batch-id"}
    if origin is not None:
        h["Origin"] = origin
    if method is not None:
        h["Access-Control-Request-Method"] = method
    return h


def no_cors(r: Any) -> bool:
    return not any(h in r.headers for h in CORS_HEADERS) and "origin" not in r.headers.get("vary", "").lower()


def exposed(r: Any, origin: str) -> bool:
    """The answer lets the page of ``origin`` read it."""
    return (r.headers.get("access-control-allow-origin") == origin and r.headers.get("vary") == "Origin"
            and r.headers.get("access-control-expose-headers") == "Retry-After"
            and "access-control-allow-credentials" not in r.headers)


@pytest.fixture
def config(tmp_path: Path) -> IngestConfig:
    return cors_config(tmp_path, max_body_bytes=200_000)


@pytest.fixture
def client(config: IngestConfig) -> Iterator[TestClient]:
    with TestClient(create_app(config)) as c:
        yield c


# -- the config key ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("origins, want", [
    ([], ()), ([APP, LOCAL], (APP, LOCAL)), ([APP, APP], (APP,)), (APP, (APP,)), (["*"], ("*",)), ("*", ("*",)),
    (["http://localhost:3000", "https://xn--bcher-kva.example", "http://[::1]:8080", "https://a.b.c:65535",
      "http://192.0.2.1", "http://[::ffff:102:304]"], None),
])
def test_good_origins(tmp_path: Path, origins: Any, want: tuple[str, ...] | None) -> None:
    got = cors_config(tmp_path, origins).cors_origins
    assert got == (want if want is not None else tuple(origins))


def test_no_key_is_no_cors(tmp_path: Path) -> None:
    doc = {"apps": {"demo": {"token_sha256": token_sha256(TOKEN), "specs": [str(SPEC)]}}}
    assert parse_config(doc, tmp_path).cors_origins == ()


@pytest.mark.parametrize("origins, message", [
    (["https://app.example.com/"], "has a trailing slash: an origin is scheme://host[:port] only; write "
                                   "'https://app.example.com'"),
    (["https://app.example.com/upload"], "has a path, query or fragment"),
    (["https://app.example.com?x=1"], "has a path, query or fragment"),
    (["ftp://app.example.com"], "has the scheme 'ftp': an origin here is http:// or https://"),
    (["app.example.com"], "is not an origin: write scheme://host[:port]"),
    (["https://user@app.example.com"], "is not an origin"),
    (["https://App.Example.com"], "not written as browsers send it (lowercase, no default port, no leading zero); "
                                  "write 'https://app.example.com'"),
    (["HTTPS://app.example.com"], "write 'https://app.example.com'"),
    (["https://app.example.com:443"], "write 'https://app.example.com'"),
    (["http://app.example.com:80"], "write 'http://app.example.com'"),
    (["http://127.0.0.1:08123"], "write 'http://127.0.0.1:8123'"),
    (["http://127.0.0.1:0"], "has the port '0': a port is 1 to 65535"),
    (["http://127.0.0.1:70000"], "has the port '70000'"),
    (["http://127.0.0.1:x"], "has the port 'x'"),
    (["https://bücher.example"], "xn-- (punycode)"),
    (["http://[0:0:0:0:0:0:0:1]"], "which browsers write as '[::1]'"),
    (["http://[::g]"], "not an IPv6 address"),
    (["http://300.1.2.3"], "ends in a number but is not an IPv4 address"),
    (["https://a..example"], "not a valid host name"),
    (["https://-a.example"], "not a valid host name"),
    (["null"], "sandboxed frames and local files"),
    (["*", APP], '"*" (any origin) must be alone'),
    ([APP, "*"], '"*" (any origin) must be alone'),
    ([APP, 3], "must be a list of origins"),
    ({"origin": APP}, "must be a list of origins"),
    (True, "must be a list of origins"),
])
def test_bad_origins(tmp_path: Path, origins: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        cors_config(tmp_path, origins)
    assert str(info.value).startswith("config: cors_origins")


def test_origins_in_a_toml_file(tmp_path: Path) -> None:
    """A top-level key: in TOML it comes before the first table."""
    (tmp_path / "serve.toml").write_text(
        f'cors_origins = ["{APP}", "{LOCAL}"]\n\n[apps.demo]\ntoken_sha256 = "{token_sha256(TOKEN)}"\n'
        f'specs = ["{SPEC}"]\n')
    assert load_config(tmp_path / "serve.toml").cors_origins == (APP, LOCAL)
    (tmp_path / "bad.toml").write_text(f'cors_origins = ["{APP}/"]\n[apps.demo]\ntoken_sha256 = '
                                       f'"{token_sha256(TOKEN)}"\nspecs = ["{SPEC}"]\n')
    with pytest.raises(ConfigError, match=re.escape("bad.toml: cors_origins: 'https://app.example.com/' has a "
                                                    "trailing slash")):
        load_config(tmp_path / "bad.toml")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_fuzz_check_origin(text: str) -> None:
    """Any string: a message or accepted; an accepted one is an ASCII origin with nothing after the host/port."""
    problem = check_origin(text)
    if problem is None:
        assert re.fullmatch(r"https?://[a-z0-9_.\-\[\]:]+", text) and text.isascii()


# -- the preflight ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("origin", [APP, LOCAL])
def test_preflight_allowed(client: TestClient, origin: str) -> None:
    r = client.options("/v1/reports", headers=preflight(origin))
    assert r.status_code == 204 and r.content == b""
    assert r.headers["access-control-allow-origin"] == origin
    assert r.headers["access-control-allow-methods"] == "POST"
    assert r.headers["access-control-allow-headers"] == ALLOW_HEADERS == \
        "authorization, content-type, content-encoding, ldp-batch-id"
    assert r.headers["access-control-max-age"] == "600" and r.headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in r.headers


@pytest.mark.parametrize("origin", ["https://evil.example", APP + "/", "https://App.example.com", "http://app.example.com",
                                    APP + ":443", "null", "", APP + ".evil.example", LOCAL[:-1]])
def test_preflight_refused(client: TestClient, origin: str) -> None:
    r = client.options("/v1/reports", headers=preflight(origin))
    assert r.status_code == 403 and no_cors(r)
    assert r.json()["error"] == "origin_not_allowed"


@pytest.mark.parametrize("method", [None, "PUT", "GET", "post"])
def test_preflight_for_another_method_refused(client: TestClient, method: str | None) -> None:
    r = client.options("/v1/reports", headers=preflight(APP, method))
    assert r.status_code == 403 and no_cors(r) and r.json()["error"] == "method_not_allowed"


def test_options_without_origin_as_before(client: TestClient) -> None:
    r = client.options("/v1/reports", headers=preflight(None))
    assert r.status_code == 405 and no_cors(r)


def test_preflights_logged_and_counted(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, ACCESS_LOGGER)
    client.options("/v1/reports", headers=preflight(APP))
    client.options("/v1/reports", headers=preflight("https://evil.example"))
    access = [json.loads(r.getMessage()) for r in caplog.records if r.name == ACCESS_LOGGER]
    assert access == [{"method": "OPTIONS", "path": "/v1/reports", "origin": APP, "status": 204},
                      {"method": "OPTIONS", "path": "/v1/reports", "origin": "https://evil.example",
                       "error": "origin_not_allowed", "status": 403}]
    client.app.state.metrics.publish()  # type: ignore[attr-defined]  # as the next interval boundary does
    page = client.get("/metrics").text
    assert 'ldp_collector_requests_total{route="/v1/reports",status="204"} 1.0' in page
    assert 'ldp_collector_requests_total{route="/v1/reports",status="403"} 1.0' in page


# -- the upload's answers ---------------------------------------------------------------------------------------

def test_upload_from_a_listed_origin(client: TestClient, config: IngestConfig) -> None:
    body = b"".join(GOOD[:10])
    r = client.post("/v1/reports", content=body, headers=headers(Origin=APP))
    assert r.status_code == 200 and r.json()["accepted"] == 10 and exposed(r, APP)
    again = client.post("/v1/reports", content=body, headers=headers(Origin=LOCAL))  # a duplicate: 200 too
    assert again.status_code == 200 and again.json()["duplicate"] and exposed(again, LOCAL)
    assert stored_lines(config) == lines(body)


@pytest.mark.parametrize("origin", [None, "https://evil.example", APP + "/", "null", "*"])
def test_upload_without_a_listed_origin_unchanged(client: TestClient, config: IngestConfig,
                                                  origin: str | None) -> None:
    """Stored and answered as before, without any CORS header (a page of another origin cannot read it)."""
    r = client.post("/v1/reports", content=GOOD[0], headers=headers(**({"Origin": origin} if origin else {})))
    assert r.status_code == 200 and r.json()["accepted"] == 1 and no_cors(r)
    assert stored_lines(config) == lines(GOOD[0])


@pytest.mark.parametrize("case", ["401", "400", "415", "413", "413-gzip", "429-queue", "429-memory", "503", "500"])
def test_every_answer_keeps_the_cors_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """Errors too: the page reads the status, the JSON and Retry-After (429 and 503) of any answer."""
    import gzip

    from ldp.ingest import app as app_module, segments

    cfg = cors_config(tmp_path, max_body_bytes=200_000, max_buffered_bytes=3000 if case == "429-memory" else 2**28)
    body, h = GOOD[0], headers(Origin=APP)
    with TestClient(create_app(cfg)) as c:
        if case == "401":
            h["Authorization"] = "Bearer nope"
        elif case == "400":
            h["Ldp-Batch-Id"] = "a b"
        elif case == "415":
            h["Content-Type"] = "text/plain"
        elif case == "413":
            body = b"x" * 200_001
        elif case == "413-gzip":
            body, h["Content-Encoding"] = gzip.compress(b"\n" * 10_000_000), "gzip"
        elif case == "429-queue":
            def full(self: segments.SegmentWriter, batch: segments.Batch) -> None:
                raise segments.QueueFull()
            monkeypatch.setattr(segments.SegmentWriter, "submit", full)
        elif case == "429-memory":
            body = b"".join(GOOD[:40])
        elif case == "503":
            c.app.state.writer.closing = True  # type: ignore[attr-defined]
        elif case == "500":
            monkeypatch.setattr(app_module, "check_body", lambda body, specs: 1 / 0)
        r = c.post("/v1/reports", content=body, headers=h)
        if case == "503":
            c.app.state.writer.closing = False  # type: ignore[attr-defined]
    assert r.status_code == int(case[:3]) and exposed(r, APP), (r.status_code, dict(r.headers))
    assert r.json()["error"]
    if r.status_code in (429, 503):
        assert r.headers["retry-after"] == "1"


def test_no_cors_on_other_routes(client: TestClient) -> None:
    for r in (client.get("/healthz", headers={"Origin": APP}), client.get("/metrics", headers={"Origin": APP}),
              client.options("/healthz", headers=preflight(APP)),
              client.options("/v1/reportsx", headers=preflight(APP))):
        assert r.status_code in (200, 404, 405) and no_cors(r)


def test_no_cors_when_not_configured(tmp_path: Path) -> None:
    with TestClient(create_app(cors_config(tmp_path, []))) as c:
        r = c.options("/v1/reports", headers=preflight(APP))
        assert r.status_code == 405 and no_cors(r)
        r = c.post("/v1/reports", content=GOOD[0], headers=headers(Origin=APP))
        assert r.status_code == 200 and no_cors(r)


def test_any_origin(tmp_path: Path) -> None:
    """``["*"]``: the request's origin is echoed (never ``*``), for any origin a browser can send."""
    with TestClient(create_app(cors_config(tmp_path, ["*"]))) as c:
        for i, origin in enumerate(["https://anything.example", "http://localhost:5173", "chrome-extension://abcdef"]):
            r = c.options("/v1/reports", headers=preflight(origin))
            assert r.status_code == 204 and r.headers["access-control-allow-origin"] == origin
            r = c.post("/v1/reports", content=GOOD[i], headers=headers(f"any{i}", Origin=origin))
            assert r.status_code == 200 and exposed(r, origin)
        for origin in ["null", "", "https://a b.example", "https://\x7f.example"]:  # not origins a browser sends
            r = c.options("/v1/reports", headers=preflight(origin))
            assert r.status_code == 403 and no_cors(r)


ORIGINS = st.one_of(
    st.binary(max_size=60).filter(lambda b: b"\r" not in b and b"\n" not in b and b"\0" not in b),
    st.sampled_from([APP, LOCAL, "null", "*"]).flatmap(
        lambda o: st.tuples(st.text(max_size=3), st.text(max_size=3)).map(lambda ab: (ab[0] + o + ab[1]).encode())),
    st.sampled_from([APP.upper(), APP + "/", APP + ":443", LOCAL + "0", APP.encode().hex()]).map(str.encode),
).map(lambda b: b.strip(b" \t"))
"""Origin values: any bytes a header may hold, listed origins with a few characters around, near misses. Without
blanks around (h11 strips them, and :class:`~ldp.ingest.cors.Cors` those httptools leaves: see
:func:`test_through_uvicorn`)."""


@pytest.mark.parametrize("origins", [(APP, LOCAL), ("*",)])
def test_fuzz_origin_header(tmp_path: Path, origins: tuple[str, ...]) -> None:
    """Any Origin value: never a 500, and CORS headers only for a listed origin (or, with ``*``, a well-formed one),
    always echoing exactly what was sent."""
    cfg = cors_config(tmp_path, origins)
    listed = {o.encode() for o in origins if o != "*"}
    with TestClient(create_app(cfg)) as c:
        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(ORIGINS)
        def check(origin: bytes) -> None:
            ok = origin in listed or (origins == ("*",) and re.fullmatch(rb"[a-z][a-z0-9+.-]*://[\x21-\x7e]+", origin))
            r = c.options("/v1/reports", headers=preflight(origin))
            assert r.status_code == (204 if ok else 403)
            u = c.post("/v1/reports", content=GOOD[0], headers={**headers(), "Authorization": "Bearer x",
                                                                  "Origin": origin})
            assert u.status_code == 401
            for answer in (r, u):
                if ok:
                    assert answer.headers["access-control-allow-origin"].encode("latin-1") == origin
                else:
                    assert no_cors(answer)

        check()


# -- through uvicorn ----------------------------------------------------------------------------------------------

@pytest.fixture(params=["httptools", "h11"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
    """The app with ``cors_origins`` on a uvicorn server in a thread (``ldp serve``'s protocol), on each parser."""
    pytest.importorskip("uvicorn")
    pytest.importorskip(request.param)
    from ldp.ingest import http

    cfg = cors_config(tmp_path)
    bound: list[int] = []
    server = http.ListeningServer(http.server_config(create_app(cfg), cfg.limits, host="127.0.0.1", port=0,
                                                     parser=request.param),
                                  lambda addresses: bound.append(addresses[0][1]))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not bound and time.monotonic() < deadline:
        time.sleep(0.01)
    assert bound, "the server did not start"
    yield bound[0]
    server.should_exit = True
    thread.join(20)


def raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """One request on a new connection: (status, headers with lowercase names, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    found = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), found, body


def test_through_uvicorn(served: int) -> None:
    """uvicorn gives header names in lowercase bytes whatever the client's case; h11 strips the blanks around a value,
    httptools only those before it: an ``Origin`` with blanks around matches on both parsers."""
    status, got, _ = raw(served, b"OPTIONS /v1/reports HTTP/1.1\r\nHost: t\r\nORIGIN:  " + APP.encode() +
                         b"  \r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
    assert status == 204 and got["access-control-allow-origin"] == APP and got["vary"] == "Origin"
    assert got["access-control-allow-headers"] == ALLOW_HEADERS and got["access-control-max-age"] == "600"
    status, got, _ = raw(served, b"OPTIONS /v1/reports HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n"
                         b"Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
    assert status == 403 and not any(k.startswith("access-control-") for k in got)
    body = b"".join(GOOD[:5])
    request = (b"POST /v1/reports HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN.encode() +
               b"\r\nContent-Type: application/x-ndjson\r\nLdp-Batch-Id: u1\r\norigin: " + LOCAL.encode() +
               b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    status, got, answer = raw(served, request)
    assert status == 200 and json.loads(answer)["accepted"] == 5
    assert got["access-control-allow-origin"] == LOCAL and got["access-control-expose-headers"] == "Retry-After"
    status, got, _ = raw(served, request.replace(LOCAL.encode(), b"http://127.0.0.1:8124"))
    assert status == 200 and not any(k.startswith("access-control-") for k in got)
