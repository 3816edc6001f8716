"""The reader's ``url`` (ldp/otel/endpoint.py): refused at construction unless it is an ingest service's upload
endpoint, and an upload that fails logged under ``ldp.otel`` with its HTTP status and URL. Also the timed collection
(``next_collection_in``), which falls at each window's end."""

from __future__ import annotations

import io
import json
import logging
import math
import urllib.error
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("opentelemetry.sdk.metrics")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402  # after the skip

from ldp.otel import PrivatizingMetricReader  # noqa: E402
from ldp.otel.endpoint import INGEST_PATH, check_ingest_url, shown_url  # noqa: E402
from ldp.otel.window import MIN_COLLECT_SECONDS, next_collection_in  # noqa: E402

WINDOW = 3600
T0 = 1_800_000_000.0
SPEC: dict[str, Any] = {
    "spec_version": 1, "name": "otel_url", "window_seconds": WINDOW, "budget": {"per_window": 10, "lifetime": 100},
    "upload": {"min_interval_seconds": 0, "max_batch": 100},
    "metrics": {"crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1},
                            "otel": {"instrument": "app.crashes", "kind": "counter", "value": "any"}}}}
TOKEN = "t0ken-0123456789abcdef"


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path


def test_the_ingest_path_is_the_one_ldp_serve_takes_reports_on():
    pytest.importorskip("starlette")
    from ldp.ingest.app import UPLOAD_PATH

    assert INGEST_PATH == UPLOAD_PATH


@pytest.mark.parametrize("base", ["http://collector:8080", "http://collector:8080/", "https://ldp.example/telemetry",
                                  "https://ldp.example/v1/reports/", "https://ldp.example/v1"])
def test_a_base_url_is_refused_when_the_reader_is_made_saying_what_was_meant(tmp_path, base):
    with pytest.raises(ValueError, match=r"POST /v1/reports") as err:
        PrivatizingMetricReader(_spec(tmp_path), tmp_path / "state.db", url=base, token=TOKEN, collect_seconds=0)
    assert f"did you mean '{base.rstrip('/')}/v1/reports'" in str(err.value)
    assert not (tmp_path / "state.db").exists()  # refused before the device's state is touched


def test_the_endpoint_is_accepted_one_or_a_list_and_a_bad_one_of_a_list_is_named(tmp_path):
    good = ["https://a.example/v1/reports", "https://proxy.example/ldp/v1/reports?region=eu"]
    reader = PrivatizingMetricReader(_spec(tmp_path), tmp_path / "state.db", url=good, token=TOKEN,
                                     collect_seconds=0)
    reader.shutdown()
    with pytest.raises(ValueError, match=r"^url 1 'https://b.example/'"):
        check_ingest_url([good[0], "https://b.example/"])
    with pytest.raises(ValueError, match="http"):
        check_ingest_url("ftp://a.example/v1/reports")  # the uploader's own checks come first


_hosts = st.from_regex(r"[a-z][a-z0-9-]{0,12}(\.[a-z]{2,5}){0,2}", fullmatch=True)
_segments = st.lists(st.sampled_from(["v1", "reports", "api", "ldp", "v2", "report", "", "v1reports"]), max_size=4)


@settings(max_examples=300, deadline=None)
@given(scheme=st.sampled_from(["http", "https"]), host=_hosts, port=st.none() | st.integers(1, 65535),
       segments=_segments, query=st.sampled_from(["", "?a=1"]), userinfo=st.sampled_from(["", "me:s3cret@"]))
def test_a_url_is_accepted_exactly_when_its_path_ends_with_the_ingest_path(scheme, host, port, segments, query,
                                                                           userinfo):
    path = "/" + "/".join(segments) if segments else ""
    url = f"{scheme}://{userinfo}{host}{'' if port is None else f':{port}'}{path}{query}"
    if path.endswith(INGEST_PATH):
        assert check_ingest_url(url) == [url]
        return
    with pytest.raises(ValueError) as err:
        check_ingest_url(url)
    text = str(err.value)
    assert INGEST_PATH in text and "s3cret" not in text and "?a=1" not in text  # never the password or the query
    meant = text.split("did you mean '")[1].split("'")[0]
    assert check_ingest_url(meant) == [meant]  # what it suggests is accepted


@given(st.text(max_size=60))
def test_shown_url_never_fails_and_keeps_the_password_out(text):
    assert shown_url(text).isprintable()
    assert "s3cret" not in shown_url(f"https://me:s3cret@{text}")  # any host: the password never shows


class _Refusing:
    """A collector that answers every upload ``status`` with a JSON error (the client's opener)."""

    def __init__(self, status: int) -> None:
        self.status, self.urls = status, []

    def open(self, request: Any, data: Any = None, timeout: float = 0) -> Any:
        self.urls.append(request.full_url)
        body = json.dumps({"error": "method_not_allowed"}).encode()
        raise urllib.error.HTTPError(request.full_url, self.status, "no", Message(), io.BytesIO(body))


def test_a_failed_upload_is_logged_with_its_status_and_url_and_the_reports_stay(tmp_path, caplog):
    clock = [T0 + 10]
    collector = _Refusing(405)
    url = "https://me:s3cret@ldp.example/v1/reports?key=k3y"
    reader = PrivatizingMetricReader(_spec(tmp_path), tmp_path / "state.db", url=url, token=TOKEN, collect_seconds=0,
                                     clock=lambda: clock[0], upload_options={"opener": collector, "max_attempts": 1})
    provider = MeterProvider(metric_readers=[reader])
    provider.get_meter("app").create_counter("app.crashes").add(1)
    clock[0] += WINDOW
    with caplog.at_level(logging.WARNING, logger="ldp.otel"):
        provider.force_flush()
    assert collector.urls and set(collector.urls) == {url}  # (tried after the window's reports, and by the flush)
    failed = [r for r in caplog.records if r.name.startswith("ldp.otel") and "failed" in r.getMessage()]
    assert len(failed) == len(collector.urls)
    for record in failed:
        message = record.getMessage()
        assert record.levelno == logging.WARNING
        assert "https://ldp.example/v1/reports" in message and "HTTP 405" in message, message
        assert "method_not_allowed" in message and "s3cret" not in message and "k3y" not in message
        assert TOKEN not in message
    assert len(reader.pending()) == 1  # queued for the next try
    provider.shutdown()


@settings(max_examples=300)
@given(now=st.floats(0, 4e9), window=st.sampled_from([1, 60, 3600, 86_400]), every=st.floats(0.05, 1e5))
def test_a_timed_collection_falls_at_each_windows_end(now, window, every):
    wait = next_collection_in(now, window, every)
    assert MIN_COLLECT_SECONDS <= wait <= max(every, MIN_COLLECT_SECONDS)
    end = (math.floor(now / window) + 1) * window
    assert now + wait <= end + MIN_COLLECT_SECONDS + 1e-6  # never past the end (but for the shortest wait)
    if wait < every and wait > MIN_COLLECT_SECONDS:
        assert math.isclose(now + wait, end, rel_tol=0, abs_tol=1e-6)  # cut short: right at it
