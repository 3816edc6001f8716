"""Read paths behind a token (issue 57, item 4): the dashboard and ``/v1/estimates`` answer analysts only.

Each read page (``/``, ``/v1/estimates`` in its query forms) without a token, with a wrong one, with an upload or
scraper token, with forged, expired and foreign cookies: 401 (the sign-in page, or a JSON error), and nothing of the
estimates in it; with the analyst's token as a bearer or through the sign-in form's cookie: 200. The cookie's
attributes (HttpOnly, SameSite=Strict, Secure over HTTPS, no token in it), signing out, a removed analyst, the key
file. ``public = true``: 200 for anyone, and a warning at every start. Roles stay apart (an analyst token uploads
nothing, and is refused for ``/metrics``). Config errors. Random header values never get 200 or 500. A real
``ldp serve`` signed into with a cookie jar, as a browser is. ``/metrics``: nothing on it times a batch (published
once per interval, the last batch's time a multiple of it, no body size finer than a MiB)."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import http.cookiejar
import json
import logging
import os
import re
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402
from support import ROOT  # noqa: E402

from ldp.errors import ConfigError  # noqa: E402
from ldp.ingest.access import COOKIE_NAME, KEY_FILE, SESSION_SECONDS, ReadAccess  # noqa: E402
from ldp.ingest.config import IngestConfig, load_config, parse_config, token_sha256  # noqa: E402
from ldp.ingest.metrics import BUFFERED_STEP, IngestMetrics, publish_seconds  # noqa: E402
from ldp.ingest.segments import SegmentWriter  # noqa: E402
from ldp.ingest.service import PUBLIC_WARNING, create_service  # noqa: E402

SPEC = ROOT / "examples" / "collection.json"
LINES = (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
GOOD = [ln for ln in LINES if ln.startswith(b'{"spec":"3455db860d356e46"')]
UPLOADER = "read-auth-upload-token-0123456789abcdefghijklm"
SCRAPER = "read-auth-scraper-token-0123456789abcdefghijkl"
ANALYST = "read-auth-analyst-token-0123456789abcdefghijkl"
OTHER_ANALYST = "read-auth-analyst-two-0123456789abcdefghijklmn"
PAGES = ["/", "/v1/estimates", "/v1/estimates?window=latest", "/v1/estimates?window=all", "/v1/estimates?window=0"]
"""Every read page: the dashboard and each query form of its data."""
BAD_WINDOW = "/v1/estimates?window=yesterday"


def config_doc(**top: Any) -> dict[str, Any]:
    return {"data_dir": "data", "fold": {"every_seconds": 0}, "metrics": {"token_sha256": token_sha256(SCRAPER)},
            "apps": {"demo": {"token_sha256": token_sha256(UPLOADER), "specs": [str(SPEC)]}}, **top}


def make_config(tmp_path: Path, **top: Any) -> IngestConfig:
    top.setdefault("analysts", {"tokens_sha256": [token_sha256(ANALYST), token_sha256(OTHER_ANALYST)]})
    return parse_config(config_doc(**top), tmp_path)


def upload(c: TestClient, body: bytes, batch_id: str, token: str = UPLOADER) -> Any:
    return c.post("/v1/reports", content=body, headers={"Authorization": f"Bearer {token}",
                                                        "Content-Type": "application/x-ndjson",
                                                        "Ldp-Batch-Id": batch_id})


@pytest.fixture(name="client")
def client_fixture(tmp_path: Path) -> Any:
    config = make_config(tmp_path)
    with TestClient(create_service(config)) as c:
        assert upload(c, b"".join(GOOD[:20]), "b1").status_code == 200
        _counted(config.data_dir / "ingest.json", 20)
        yield c


def _counted(path: Path, accepted: int) -> None:
    """Wait until the writer's counters file (rewritten by its chores thread a little after a commit) says
    ``accepted`` reports of demo: the pages read it."""
    deadline = time.monotonic() + 60
    while True:
        try:
            if json.loads(path.read_text())["apps"]["demo"]["accepted"] == accepted:
                return
        except (OSError, ValueError, KeyError, TypeError):
            pass
        assert time.monotonic() < deadline, "ingest.json never counted the upload"
        time.sleep(0.02)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_refused(r: Any, path: str) -> None:
    """401, with how to authenticate, and nothing of the estimates or the counters."""
    assert r.status_code == 401, (path, r.status_code, r.text[:300])
    assert r.headers["www-authenticate"] == "Bearer" and r.headers["cache-control"] == "no-store"
    assert "demo" not in r.text and "accepted" not in r.text
    if path == "/":
        assert r.headers["content-type"].startswith("text/html")
        assert '<form method="post" action="login">' in r.text and 'name="token"' in r.text
        assert "form-action 'self'" in r.headers["content-security-policy"]
        assert "script-src" not in r.headers["content-security-policy"]
    else:
        assert r.json()["error"] == "unauthorized"


def signed_cookie(tmp_path: Path, token: str = ANALYST, **kw: Any) -> str:
    """A cookie made by the ingest service's own rule (its key file)."""
    rule = ReadAccess([token_sha256(token)], key_file=tmp_path / "data" / KEY_FILE, **kw)
    value = rule.cookie_for(token)
    assert value is not None
    return value


# -- each page without, with wrong, with the right token ----------------------------------------------------------

@pytest.mark.parametrize("path", [*PAGES, BAD_WINDOW])
def test_each_page_refuses_without_an_analyst(client: TestClient, tmp_path: Path, path: str) -> None:
    foreign = ReadAccess([token_sha256(ANALYST)]).cookie_for(ANALYST)  # right analyst, another key
    expired = signed_cookie(tmp_path, clock=lambda: 1.0)  # issued in 1970
    valid = signed_cookie(tmp_path)
    forged = valid[:-1] + ("A" if valid[-1] != "A" else "B")
    attempts: list[dict[str, str]] = [
        {}, bearer("wrong"), bearer(UPLOADER), bearer(SCRAPER), bearer(ANALYST + "x"), bearer(token_sha256(ANALYST)),
        {"Authorization": f"Basic {ANALYST}"}, {"Authorization": ANALYST},
        {"Cookie": f"{COOKIE_NAME}={foreign}"}, {"Cookie": f"{COOKIE_NAME}={expired}"},
        {"Cookie": f"{COOKIE_NAME}={forged}"}, {"Cookie": f"{COOKIE_NAME}={ANALYST}"},
        {"Cookie": f"{COOKIE_NAME}={token_sha256(ANALYST)}"}, {"Cookie": f"other={valid}"},
    ]
    for headers in attempts:
        assert_refused(client.get(path, headers=headers), path)
    assert_refused(client.get(path + ("&" if "?" in path else "?") + f"token={ANALYST}"), path)  # never from a URL


@pytest.mark.parametrize("path", [*PAGES, BAD_WINDOW])
@pytest.mark.parametrize("how", ["bearer", "other analyst", "cookie", "cookie among others"])
def test_each_page_answers_an_analyst(client: TestClient, tmp_path: Path, path: str, how: str) -> None:
    valid = signed_cookie(tmp_path, ANALYST if how != "other analyst" else OTHER_ANALYST)
    headers = {"bearer": bearer(ANALYST), "other analyst": bearer(OTHER_ANALYST),
               "cookie": {"Cookie": f"{COOKIE_NAME}={valid}"},
               "cookie among others": {"Authorization": "Basic eDp5",  # a proxy's own auth, passed on
                                       "Cookie": f"a=b; {COOKIE_NAME}=stale.x; {COOKIE_NAME}={valid}; c=d"}}[how]
    r = client.get(path, headers=headers)
    if path == BAD_WINDOW:
        assert r.status_code == 400 and r.json()["error"] == "bad_window"
        return
    assert r.status_code == 200, r.text[:300]
    assert r.headers["cache-control"] == "no-store"
    if path == "/":
        assert "App demo" in r.text and "Sign in" not in r.text
        assert ('action="logout"' in r.text) == how.startswith("cookie")  # a way out where there is a way in
    else:
        assert r.json()["ingest"]["apps"]["demo"]["accepted"] == 20


def test_head_is_refused_too(client: TestClient) -> None:
    assert client.head("/").status_code == 401 and client.head("/v1/estimates").status_code == 401
    assert client.head("/", headers=bearer(ANALYST)).status_code == 200


# -- the sign-in form and its cookie ---------------------------------------------------------------------------------

def set_cookie(r: Any) -> dict[str, str]:
    """The attributes of the answer's one Set-Cookie, lowercased names (the value under its cookie name)."""
    (header,) = r.headers.get_list("set-cookie")
    parts = [p.strip() for p in header.split(";")]
    name, _, value = parts[0].partition("=")
    attrs = {p.partition("=")[0].lower(): p.partition("=")[2] for p in parts[1:]}
    return {"name": name, "value": value, **attrs}


def test_signing_in_sets_a_cookie_without_the_token(client: TestClient, tmp_path: Path) -> None:
    assert_refused(client.get("/"), "/")
    r = client.post("/login", data={"token": ANALYST}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "./"  # relative: works under a proxy's prefix
    c = set_cookie(r)
    assert c["name"] == COOKIE_NAME and "httponly" in c and c["samesite"] == "Strict" and "secure" not in c
    assert c["max-age"] == str(SESSION_SECONDS) and "path" not in c and "domain" not in c
    assert ANALYST not in c["value"] and token_sha256(ANALYST) not in c["value"]
    assert re.fullmatch(r"\d+\.[A-Za-z0-9_-]{43}", c["value"]), c["value"]
    key = tmp_path / "data" / KEY_FILE
    assert len(key.read_bytes()) == 32 and stat.S_IMODE(key.stat().st_mode) == 0o600
    page = client.get("/")  # the client keeps the cookie, as a browser does
    assert page.status_code == 200 and "App demo" in page.text and 'action="logout"' in page.text
    assert client.get("/v1/estimates").status_code == 200
    out = client.post("/logout", follow_redirects=False)
    assert out.status_code == 303 and set_cookie(out)["max-age"] == "0" and set_cookie(out)["value"] == ""
    client.cookies.clear()
    assert_refused(client.get("/"), "/")


def test_signing_in_follows_back_to_the_page(client: TestClient) -> None:
    r = client.post("/login", data={"token": ANALYST})  # the browser's way: 303, then GET ./
    assert r.status_code == 200 and "App demo" in r.text and str(r.url) == "http://testserver/"


def test_the_cookie_is_secure_over_https(tmp_path: Path) -> None:
    with TestClient(create_service(make_config(tmp_path)), base_url="https://testserver") as c:
        r = c.post("/login", data={"token": ANALYST}, follow_redirects=False)
        assert "secure" in set_cookie(r)
        assert c.post("/logout", follow_redirects=False).headers["set-cookie"].endswith("; Secure")
    with TestClient(create_service(make_config(tmp_path))) as c:  # a TLS proxy in front says so, uvicorn believes it
        r = c.post("/login", data={"token": ANALYST}, follow_redirects=False)
        assert "secure" not in set_cookie(r)


@pytest.mark.parametrize("form, status, says", [
    ({"token": "wrong"}, 401, "That is not an analyst token."),
    ({"token": UPLOADER}, 401, "That is not an analyst token."),
    ({"token": SCRAPER}, 401, "That is not an analyst token."),
    ({"token": token_sha256(ANALYST)}, 401, "That is not an analyst token."),
    ({"token": ""}, 401, "Give your analyst token."),
    ({}, 401, "Give your analyst token."),
    ({"token": "x" * 5000}, 413, "far longer than a token"),
    ({f"f{i}": "x" for i in range(20)}, 401, "Give your analyst token."),
])
def test_a_failed_sign_in_shows_the_form_again(client: TestClient, form: dict[str, str], status: int,
                                                says: str) -> None:
    r = client.post("/login", data=form, follow_redirects=False)
    assert r.status_code == status and says in r.text and "set-cookie" not in r.headers
    assert '<form method="post" action="login">' in r.text and "demo" not in r.text
    assert ANALYST not in r.text


def test_removed_analysts_and_a_new_key_sign_out(tmp_path: Path) -> None:
    key = tmp_path / KEY_FILE
    now = [1_800_000_000.0]
    rule = ReadAccess([token_sha256(ANALYST), token_sha256(OTHER_ANALYST)], key_file=key, clock=lambda: now[0])
    cookie = rule.cookie_for(ANALYST)
    assert cookie is not None and rule.cookie_for(UPLOADER) is None
    header = f"{COOKIE_NAME}={cookie}"
    assert rule.allows(None, header) == "cookie"
    restarted = ReadAccess([token_sha256(ANALYST)], key_file=key, clock=lambda: now[0])
    assert restarted.allows(None, header) == "cookie"  # the key file outlives the process
    removed = ReadAccess([token_sha256(OTHER_ANALYST)], key_file=key, clock=lambda: now[0])
    assert removed.allows(None, header) is None  # the MAC names the analyst's hash
    now[0] += SESSION_SECONDS - 1
    assert rule.allows(None, header) == "cookie"
    now[0] += 1
    assert rule.allows(None, header) is None  # expired
    now[0] -= SESSION_SECONDS
    key.unlink()
    assert ReadAccess([token_sha256(ANALYST)], key_file=key, clock=lambda: now[0]).allows(None, header) is None
    stretched = f"{COOKIE_NAME}={int(now[0]) + 10 * SESSION_SECONDS}.{cookie.partition('.')[2]}"
    assert rule.allows(None, stretched) is None


def test_no_analyst_no_reader(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Neither analysts nor public (an upgraded config): every read is refused, and the start says why."""
    with caplog.at_level(logging.INFO, "ldp.ingest.service"):
        app = create_service(parse_config(config_doc(), tmp_path))
    assert "answer 401 to everyone" in caplog.text and "ldp serve token --analyst" in caplog.text
    with TestClient(app) as c:
        for path in PAGES:
            for headers in ({}, bearer(UPLOADER), bearer(ANALYST)):
                assert_refused(c.get(path, headers=headers), path)
        assert c.post("/login", data={"token": ANALYST}).status_code == 401


# -- public = true -------------------------------------------------------------------------------------------------

def test_public_opens_the_read_paths_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "ldp.ingest.service"):
        app = create_service(parse_config(config_doc(public=True), tmp_path))
    (record,) = [r for r in caplog.records if r.name == "ldp.ingest.service"]
    assert record.levelno == logging.WARNING and record.getMessage() == PUBLIC_WARNING
    with TestClient(app) as c:
        upload(c, GOOD[0], "p1")
        for path in PAGES:
            for headers in ({}, bearer("wrong"), {"Cookie": f"{COOKIE_NAME}=junk"}):
                r = c.get(path, headers=headers)
                assert r.status_code == 200, (path, headers)
        assert 'action="logout"' not in c.get("/").text
        r = c.post("/login", data={"token": "anything"}, follow_redirects=False)
        assert r.status_code == 303 and "set-cookie" not in r.headers
        assert upload(c, GOOD[1], "p2", token=ANALYST).status_code == 401  # public reads, not public uploads


# -- roles ----------------------------------------------------------------------------------------------------------

def test_an_analyst_token_uploads_nothing_and_scrapes_nothing(client: TestClient, tmp_path: Path) -> None:
    for token in (ANALYST, OTHER_ANALYST):
        r = upload(client, GOOD[0], "as-analyst", token=token)
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        assert client.get("/metrics", headers=bearer(token)).status_code == 401
    assert client.get("/metrics", headers={"Cookie": f"{COOKIE_NAME}={signed_cookie(tmp_path)}"}).status_code == 401
    assert client.get("/metrics", headers=bearer(SCRAPER)).status_code == 200
    assert not (tmp_path / "data" / "apps" / "demo" / "rejects").exists()


# -- config ---------------------------------------------------------------------------------------------------------

HASH = token_sha256(ANALYST)


@pytest.mark.parametrize("top, message", [
    ({"analysts": {"tokens_sha256": HASH}}, "[analysts].tokens_sha256 must be a list of hashes"),
    ({"analysts": {"tokens_sha256": {"a": HASH}}}, "must be a list of hashes"),
    ({"analysts": {"tokens_sha256": ["abc"]}}, "[analysts].tokens_sha256[0] must be the 64 lowercase hex digits"),
    ({"analysts": {"tokens_sha256": [HASH, HASH.upper()]}}, "tokens_sha256[1] must be the 64 lowercase hex"),
    ({"analysts": {"tokens_sha256": [HASH, 7]}}, "tokens_sha256[1] must be the 64 lowercase hex digits"),
    ({"analysts": {"tokens_sha256": [token_sha256(UPLOADER)]}}, "is the upload token of app 'demo'"),
    ({"analysts": {"tokens_sha256": [token_sha256(SCRAPER)]}}, "is the [metrics] token"),
    ({"analysts": {}}, "[analysts] needs tokens_sha256"),
    ({"analysts": {"tokens_sha256": [], "token_sha256": HASH}}, "unknown key(s) 'token_sha256'"),
    ({"analysts": [HASH]}, "[analysts] must be a table"),
    ({"public": "yes"}, "public must be true"),
    ({"public": 1}, "public must be true"),
])
def test_config_errors(tmp_path: Path, top: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(config_doc(**top), tmp_path)


def test_config_file(tmp_path: Path) -> None:
    text = (f'data_dir = "data"\npublic = false\n[analysts]\ntokens_sha256 = ["{HASH}", "{HASH}"]\n'
            f'[apps.demo]\ntoken_sha256 = "{token_sha256(UPLOADER)}"\nspecs = ["{SPEC}"]\n')
    (tmp_path / "c.toml").write_text(text)
    config = load_config(tmp_path / "c.toml")
    assert config.analysts == (HASH,) and config.public is False  # listed twice: once
    assert parse_config(config_doc(), tmp_path).analysts == () and not parse_config(config_doc(), tmp_path).public
    (tmp_path / "late.toml").write_text(text.replace("public = false\n", "") + "public = true\n")
    with pytest.raises(ConfigError, match=r"\[apps.demo\]: unknown key\(s\) 'public'.*'public' belong\(s\) at the "
                                          r"top of the file"):
        load_config(tmp_path / "late.toml")  # after [apps.demo], TOML puts it in that table


def test_token_command_for_an_analyst(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "ldp", "serve", "token", "--analyst"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    token, line = out[0], out[-1]
    assert len(token) == 43 and line == f'tokens_sha256 = ["{token_sha256(token)}"]' and "[analysts]" in out[1]
    (tmp_path / "c.toml").write_text(f'[analysts]\n{line}\n[apps.demo]\ntoken_sha256 = "{token_sha256(UPLOADER)}"\n'
                                     f'specs = ["{SPEC}"]\n')
    with TestClient(create_service(load_config(tmp_path / "c.toml"))) as c:
        assert c.get("/v1/estimates", headers=bearer(token)).status_code == 200
        assert c.get("/v1/estimates").status_code == 401
    both = subprocess.run([sys.executable, "-m", "ldp", "serve", "token", "--analyst", "--app", "demo"],
                          capture_output=True, text=True)
    assert both.returncode == 2 and "--analyst and --app" in both.stderr and not both.stdout


# -- random headers -------------------------------------------------------------------------------------------------

_NO_NEWLINE = st.binary(max_size=60).filter(lambda b: b"\r" not in b and b"\n" not in b)
_TOKENS = st.sampled_from([ANALYST, OTHER_ANALYST, UPLOADER, SCRAPER, HASH, ""]).map(str.encode)
_CHANGE = st.tuples(st.integers(0, 99), st.integers(33, 126))
"""Where to change one byte, and to what."""


def _mutate(value: bytes, at: int, byte: int) -> bytes:
    i = at % (len(value) or 1)
    changed = value[:i] + bytes([byte]) + value[i + 1:]
    return changed if changed != value else value + b"0"


@functools.cache  # built (and validated by hypothesis) once, not per example
def _authorizations() -> st.SearchStrategy[bytes | None]:
    """Random bytes; a bearer of random bytes; a known token with junk after or before; the analyst's token changed
    by one byte."""
    right = f"Bearer {ANALYST}".encode()
    return st.one_of(
        st.none(), _NO_NEWLINE, st.builds(lambda b: b"Bearer " + b, _NO_NEWLINE),
        st.builds(lambda t, junk: b"Bearer " + t + junk, _TOKENS, _NO_NEWLINE.filter(lambda b: b.strip(b" \t"))),
        st.builds(lambda t, c: b"Bearer " + t + bytes([c]), _TOKENS, st.sampled_from([0x1C, 0x1F, 0x85, 0xA0, 0x0B])),
        st.builds(lambda t, junk: junk + t, _TOKENS, _NO_NEWLINE).filter(lambda v: v[:7].lower() != b"bearer "),
        st.builds(lambda t: b"Bearer " + _mutate(ANALYST.encode(), *t), _CHANGE).filter(lambda v: v != right))


@functools.cache  # per valid cookie: built (and validated by hypothesis) once, not per example
def _cookies(valid: bytes) -> st.SearchStrategy[bytes | None]:
    """Random bytes; our cookie's name with random bytes; a valid cookie changed by one byte."""
    name = COOKIE_NAME.encode() + b"="
    return st.one_of(
        st.none(), _NO_NEWLINE, st.builds(lambda b: name + b, _NO_NEWLINE.filter(lambda b: b";" not in b)),
        st.builds(lambda t: name + _mutate(valid, *t), _CHANGE)
        .filter(lambda v: b";" not in v and v.partition(b"=")[2].strip(b' "') != valid))


# hypothesis examples: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_headers_never_read_and_never_fail(client: TestClient, tmp_path: Path, data: st.DataObject) -> None:
    """Any Authorization and Cookie bytes (random, or a known token or a valid cookie changed by one byte, or with
    junk around it): never 200, never a 500; always the 401 of the page."""
    auth = data.draw(_authorizations(), label="authorization")
    cookie = data.draw(_cookies(signed_cookie(tmp_path).encode()), label="cookie")
    path = data.draw(st.sampled_from(PAGES), label="path")
    headers = {k: v for k, v in (("Authorization", auth), ("Cookie", cookie)) if v is not None}
    r = client.get(path, headers=headers)
    assert r.status_code == 401, (path, headers, r.status_code)


# -- a real ldp serve, signed into with a cookie jar ---------------------------------------------------------------

def test_a_real_collector_signs_a_browser_in(tmp_path: Path) -> None:
    """``python -m ldp serve`` on a loopback port: urllib with a cookie jar (RFC 6265's path and redirect rules, as a
    browser follows them) gets 401, signs in with the form's POST, follows the 303 back and reads both pages; the
    token is never logged. Then a ``public = true`` collector warns on stderr at its start."""
    from support.e2e import serve

    (tmp_path / "serve.toml").write_text(
        f'data_dir = "data"\n[fold]\nevery_seconds = 0\n[analysts]\ntokens_sha256 = ["{HASH}"]\n'
        f'[apps.demo]\ntoken_sha256 = "{token_sha256(UPLOADER)}"\nspecs = ["{SPEC}"]\n')
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with serve(tmp_path / "serve.toml", tmp_path / "server.log") as served:
        with pytest.raises(urllib.error.HTTPError) as refused:
            browser.open(served.url + "/", timeout=5)
        assert refused.value.code == 401 and b'action="login"' in refused.value.read()
        with browser.open(served.url + "/login", data=urllib.parse.urlencode({"token": ANALYST}).encode(),
                          timeout=5) as page:
            assert page.status == 200 and page.url == served.url + "/" and b"App demo" in page.read()
        (cookie,) = list(jar)
        assert cookie.name == COOKIE_NAME and cookie.path == "/" and ANALYST not in (cookie.value or "")
        assert cookie.has_nonstandard_attr("HttpOnly") and not cookie.secure
        with browser.open(served.url + "/v1/estimates", timeout=5) as doc:
            assert doc.status == 200 and b'"demo"' in doc.read()
    log = served.log.read_text(errors="replace")
    assert ANALYST not in log and HASH not in log and "public" not in log

    (tmp_path / "public.toml").write_text(
        f'data_dir = "data2"\npublic = true\n[fold]\nevery_seconds = 0\n'
        f'[apps.demo]\ntoken_sha256 = "{token_sha256(UPLOADER)}"\nspecs = ["{SPEC}"]\n')
    with serve(tmp_path / "public.toml", tmp_path / "public.log") as served:
        with urllib.request.urlopen(served.url + "/v1/estimates", timeout=5) as doc:
            assert doc.status == 200
    assert f"ldp: WARNING: {PUBLIC_WARNING}" in served.log.read_text(errors="replace")


# -- /metrics: nothing on it times a batch -----------------------------------------------------------------------

def samples(page: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(page) for s in f.samples}


def test_metrics_publish_once_per_interval(tmp_path: Path) -> None:
    """Two batches in one interval: the page does not move until the next publication, which shows their sum; the
    last batch's time is a multiple of the interval; no family holds a batch's size; bodies held are whole MiB."""
    config = make_config(tmp_path)
    with TestClient(create_service(config), headers=bearer(SCRAPER)) as c:
        metrics: IngestMetrics = c.app.state.metrics  # type: ignore[attr-defined]
        assert metrics.interval == 60.0 == publish_seconds(config)  # folding off: the default fold period
        before = c.get("/metrics").text
        first, second = b"".join(GOOD[:7]), b"".join(GOOD[7:30])
        assert upload(c, first, "m1").status_code == 200
        assert upload(c, second, "m2").status_code == 200
        during = samples(c.get("/metrics").text)
        assert {k: v for k, v in during.items() if not k[0].startswith(("process_", "ldp_collector_requests"))} == \
            {k: v for k, v in samples(before).items() if not k[0].startswith(("process_", "ldp_collector_requests"))}
        assert ("ldp_collector_stored_bytes_total", (("app", "demo"),)) in during  # rebuilt at the start: 0
        assert during[("ldp_collector_stored_bytes_total", (("app", "demo"),))] == 0
        assert during.get(("ldp_collector_requests_total", (("route", "/v1/reports"), ("status", "200")))) is None
        metrics.publish()  # the next boundary
        after = samples(c.get("/metrics").text)
        assert after[("ldp_collector_stored_bytes_total", (("app", "demo"),))] == len(first) + len(second)
        assert after[("ldp_collector_batches_total", (("app", "demo"),))] == 2
        last = after[("ldp_collector_last_batch_timestamp_seconds", (("app", "demo"),))]
        assert last % metrics.interval == 0
        assert after[("ldp_collector_buffered_bytes", ())] % BUFFERED_STEP == 0
        names = {name for name, _ in after}
        assert not [n for n in names if re.search(r"batch_(size|bytes)|last_batch_(?!timestamp)|body_bytes", n)]
        metrics.state.buffered = lambda: 1234  # one body of 1234 bytes in flight
        held = samples(c.get("/metrics").text)[("ldp_collector_buffered_bytes", ())]
        assert held == BUFFERED_STEP


@pytest.mark.parametrize("every, interval", [(0, 60.0), (5, 5.0), (0.2, 1.0), (3600, 3600.0)])
def test_the_interval_is_the_fold_period(tmp_path: Path, every: float, interval: float) -> None:
    config = parse_config({**config_doc(), "fold": {"every_seconds": every}}, tmp_path)
    metrics = IngestMetrics(config, SegmentWriter(config), wall=lambda: 1_800_000_123.5)
    assert metrics.interval == interval
    metrics.state.writer.logs["demo"].stats.last_batch_at = 1_800_000_007.0  # type: ignore[union-attr]
    page = samples(metrics.render()[0].decode())
    assert page[("ldp_collector_last_batch_timestamp_seconds", (("app", "demo"),))] == \
        (1_800_000_007.0 // interval) * interval


def test_the_publisher_publishes_at_most_once_per_interval(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    metrics = IngestMetrics(config, SegmentWriter(config), interval=0.1)
    seen: list[int] = []
    publish = metrics.publish

    def counted() -> None:
        publish()
        assert metrics.published_index is not None
        seen.append(metrics.published_index)

    metrics.publish = counted  # type: ignore[method-assign]

    async def run() -> None:
        task = asyncio.create_task(metrics.publish_every_interval())
        await asyncio.sleep(0.55)
        task.cancel()

    asyncio.run(run())
    assert 3 <= len(seen) <= 6 and seen == sorted(set(seen)), seen


def test_the_access_module_needs_no_http_stack() -> None:
    code = "import sys, ldp.ingest.access; sys.exit(1 if 'starlette' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_the_cookie_key_file_is_made_once(tmp_path: Path) -> None:
    key = tmp_path / "sub" / KEY_FILE
    a, b = ReadAccess([HASH], key_file=key), ReadAccess([HASH], key_file=key)
    assert a.key() == b.key() == key.read_bytes() and len(a.key()) == 32
    assert [p.name for p in key.parent.iterdir()] == [KEY_FILE]  # no part file left
    os.chmod(key, 0o000)
    if os.geteuid() != 0:  # root reads it anyway
        assert len(ReadAccess([HASH], key_file=key).key()) == 32  # unreadable: a key in memory, logged
    os.chmod(key, 0o600)
    key.write_bytes(b"short")
    assert ReadAccess([HASH], key_file=key).key() != b"short"
    assert hashlib.sha256(a.key()).hexdigest() != HASH
