"""``/healthz``, ``/readyz`` and ``/livez`` (issue 70, item 9): anyone is told up or down, and why in one word of a
fixed vocabulary; the details (the error's text, the apps, the replica) go only to the operator's token, which is
the ``[metrics]`` scraper's. A wrong token gets the anonymous answer, with the same status code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("starlette")
from starlette.testclient import TestClient
from test_metrics import GOOD, SPEC

from ldp.ingest.app import create_app
from ldp.ingest.config import parse_config, token_sha256
from ldp.ingest.health import HEALTH_REASONS, coarse_health

APP = "zebra-app-7f3"
REPLICA = "okapi-replica-9c1"
DATA = "data-folder-q4w8"
UPLOADER = "healthz-test-upload-token-0123456789abcdefghij"
OPERATOR = "healthz-test-operator-token-0123456789abcdefgh"
ANALYST = "healthz-test-analyst-token-0123456789abcdefghi"
INJECTED = "injected: No space left on device at /srv/secret-mount/segments"
WORDS = {"ok", "alive", "unavailable", "other", *HEALTH_REASONS.values()}
"""Every word an anonymous health answer may hold."""
ROUTES = ("/healthz", "/readyz")


def config(tmp_path: Path, operator: str | None = OPERATOR) -> Any:
    doc: dict[str, Any] = {"data_dir": DATA, "replica": REPLICA, "fold": {"every_seconds": 0},
                           "analysts": {"tokens_sha256": [token_sha256(ANALYST)]},
                           "apps": {APP: {"token_sha256": token_sha256(UPLOADER), "specs": [str(SPEC)]}}}
    if operator is not None:
        doc["metrics"] = {"token_sha256": token_sha256(operator)}
    return parse_config(doc, tmp_path)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def secrets_in(text: str, tmp_path: Path) -> list[str]:
    """The secrets an anonymous answer must not hold, of those found in ``text``."""
    secrets = [APP, REPLICA, DATA, str(tmp_path), INJECTED, "No space", "secret-mount", "demo"]
    return [s for s in secrets if s in text]


def assert_coarse(r: Any, tmp_path: Path, want: dict[str, str]) -> None:
    assert r.json() == want, r.text
    assert set(r.json().values()) <= WORDS and not secrets_in(r.text, tmp_path), r.text


def test_anonymous_answers_are_coarse_up_and_down(tmp_path: Path) -> None:
    with TestClient(create_app(config(tmp_path))) as c:
        upload = {**bearer(UPLOADER), "Ldp-Batch-Id": "b1", "Content-Type": "application/x-ndjson"}
        assert c.post("/v1/reports", content=GOOD[0], headers=upload).status_code == 200
        for route in ROUTES:
            r = c.get(route)
            assert r.status_code == 200 and "retry-after" not in r.headers
            assert_coarse(r, tmp_path, {"status": "ok"})
        assert_coarse(c.get("/livez"), tmp_path, {"status": "alive"})
        c.app.state.writer._fail(INJECTED)  # type: ignore[attr-defined]  # as a failed write does
        for route in ROUTES:
            r = c.get(route)
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            assert_coarse(r, tmp_path, {"status": "unavailable", "reason": "storage"})
        r = c.get("/livez")
        assert r.status_code == 200
        assert_coarse(r, tmp_path, {"status": "alive"})


def test_the_operator_token_gets_the_details(tmp_path: Path) -> None:
    with TestClient(create_app(config(tmp_path))) as c:
        for route in ROUTES:
            doc = c.get(route, headers=bearer(OPERATOR)).json()
            assert doc["status"] == "ok" and doc["apps"] == [APP] and doc["replica"] == REPLICA
            assert doc["pending"] == 0
        assert c.get("/livez", headers=bearer(OPERATOR)).json() == {"status": "alive", "replica": REPLICA}
        c.app.state.writer._fail(INJECTED)  # type: ignore[attr-defined]
        for route in ROUTES:
            r = c.get(route, headers=bearer(OPERATOR))
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            doc = r.json()
            assert doc["status"] == "storage_error" and doc["error"] == INJECTED and doc["error_since"] > 0
            assert doc["apps"] == [APP] and doc["replica"] == REPLICA and "WWW-Authenticate" not in r.headers


@pytest.mark.parametrize("token", [UPLOADER, ANALYST, OPERATOR + "x", "", token_sha256(OPERATOR)],
                         ids=["upload", "analyst", "altered", "empty", "the-hash"])
def test_a_wrong_token_gets_the_coarse_answer_and_the_same_status(tmp_path: Path, token: str) -> None:
    with TestClient(create_app(config(tmp_path))) as c:
        for route in ROUTES:
            r = c.get(route, headers=bearer(token))
            assert r.status_code == 200 and r.headers["www-authenticate"] == 'Bearer error="invalid_token"'
            assert_coarse(r, tmp_path, {"status": "ok"})
        c.app.state.writer._fail(INJECTED)  # type: ignore[attr-defined]
        for route in ROUTES:
            r = c.get(route, headers=bearer(token))
            assert r.status_code == 503 and r.headers["www-authenticate"] == 'Bearer error="invalid_token"'
            assert_coarse(r, tmp_path, {"status": "unavailable", "reason": "storage"})
        r = c.get("/livez", headers=bearer(token))
        assert r.status_code == 200 and r.headers["www-authenticate"]
        assert_coarse(r, tmp_path, {"status": "alive"})
        r = c.get("/healthz", headers={"Authorization": f"Basic {OPERATOR}"})  # not a bearer token
        assert_coarse(r, tmp_path, {"status": "unavailable", "reason": "storage"})


def test_without_an_operator_token_nobody_gets_the_details(tmp_path: Path) -> None:
    with TestClient(create_app(config(tmp_path, operator=None))) as c:
        c.app.state.writer._fail(INJECTED)  # type: ignore[attr-defined]
        for token in (OPERATOR, UPLOADER, ANALYST):
            r = c.get("/healthz", headers=bearer(token))
            assert r.status_code == 503
            assert_coarse(r, tmp_path, {"status": "unavailable", "reason": "storage"})


def test_closing_and_stopped_have_their_words(tmp_path: Path) -> None:
    with TestClient(create_app(config(tmp_path))) as c:
        writer = c.app.state.writer  # type: ignore[attr-defined]
        writer.closing = True
        r = c.get("/readyz")
        assert r.status_code == 503
        assert_coarse(r, tmp_path, {"status": "unavailable", "reason": "shutting_down"})
        assert c.get("/readyz", headers=bearer(OPERATOR)).json()["status"] == "closing"
        writer.closing = False
    # the lifespan ended: the writer stopped (its thread gone), answered through the app's handler still
    app = create_app(config(tmp_path))
    with TestClient(app) as c:
        pass
    app.state.writer.closing = False
    r = TestClient(app).get("/healthz")
    assert r.status_code == 503
    assert_coarse(r, tmp_path, {"status": "unavailable", "reason": "stopped"})


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_coarse_health_says_only_words_of_the_vocabulary(state: str) -> None:
    doc = coarse_health(state)
    assert set(doc.values()) <= WORDS
    assert doc == ({"status": "ok"} if state == "ok" else
                   {"status": "unavailable", "reason": HEALTH_REASONS.get(state, "other")})


def test_no_error_text_ever_reaches_an_anonymous_caller(tmp_path: Path) -> None:
    """Whatever an error says (its text drawn by hypothesis), the anonymous answer is the same few bytes."""
    with TestClient(create_app(config(tmp_path))) as c:
        writer = c.app.state.writer  # type: ignore[attr-defined]

        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.text(min_size=1, max_size=60))
        def check(error: str) -> None:
            writer._fail(error)
            r = c.get("/healthz")
            assert r.status_code == 503 and r.content == b'{"status":"unavailable","reason":"storage"}'
            detailed = c.get("/healthz", headers=bearer(OPERATOR)).json()
            assert detailed["error"] == error

        check()
        assert json.loads(c.get("/healthz").content)["reason"] == "storage"
