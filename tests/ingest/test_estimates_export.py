"""Tests of ldp.ingest.estimates_export: the released estimates as Prometheus series (``GET /metrics/estimates``,
analysts only) and as OTLP pushes, against a real Prometheus that scrapes the ingest service and a receiver that decodes
the pushes with ``opentelemetry-proto``."""

from __future__ import annotations

import copy
import gzip
import http.server
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from prometheus_client.parser import text_string_to_metric_families
from support.e2e import ANALYST, free_port, serve
from support.prometheus import prometheus, wait_for_series
from test_watch import HOSTILE, add_segment, simulate_lines, spec_fixture, spec_path_fixture  # noqa: F401 (fixtures)

from ldp.ingest.config import ConfigError, parse_config, token_sha256
from ldp.ingest.estimates_export import (
    FAMILIES,
    EstimatesCollector,
    OtlpPush,
    estimate_samples,
    metrics_data,
    otlp_name,
)
from ldp.ingest.watch import fold_app

UPLOAD = "export-upload-token-0123456789abcdefghijklmn"


@pytest.fixture(name="doc")
def folded_doc(spec, spec_path, tmp_path) -> dict[str, Any]:
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 400, seed=5), 1)
    return fold_app(data, "demo", [spec_path])


def _page(docs: dict[str, Any], max_items: int = 100) -> dict[str, dict[tuple, float]]:
    """The exposition of ``docs`` parsed back: family -> {sorted label items: value}."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    registry.register(EstimatesCollector(lambda: docs, max_items))
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_every_released_row_is_a_series_with_its_interval(doc):
    page = _page({"demo": doc})
    for m in doc["metrics"]:
        w = m["windows"][-1]
        for row in w["rows"]:
            labels = tuple(sorted({"app": "demo", "metric": m["metric"], "item": row["item"]}.items()))
            assert page["ldp_estimate"][labels] == row["estimate"]
            assert page["ldp_estimate_standard_error"][labels] == row["std_error"]
            assert (page["ldp_estimate_lower"][labels], page["ldp_estimate_upper"][labels]) == (row["ci_low"],
                                                                                              row["ci_high"])
        per = tuple(sorted({"app": "demo", "metric": m["metric"]}.items()))
        assert page["ldp_estimate_reports"][per] == w["n"] == 400
        assert page["ldp_estimate_confidence"][per] == 0.95
        assert page["ldp_estimate_central_epsilon"][per] == m["central"]["epsilon"]
        assert page["ldp_estimate_local_epsilon"][per] == m["privacy"]["per_report"]["epsilon"]
        assert page["ldp_estimate_window_start_timestamp_seconds"][per] == 20000 * 86400
        assert page["ldp_estimate_window_end_timestamp_seconds"][per] == 20001 * 86400
        assert page["ldp_estimate_window_open"][per] == 0
        info = {dict(k)["metric"]: dict(k) for k in page["ldp_estimate_metric_info"]}
        assert info[m["metric"]]["protocol"] == m["protocol"] and info[m["metric"]]["spec"] == "watch_test"
    assert any(dict(k)["item"] == HOSTILE for k in page["ldp_estimate"])  # escaped on the page, whole when parsed
    assert set(page) <= {f"{f}" if f != "ldp_estimate_metric_info" else f for f in FAMILIES}


def test_items_are_capped_at_the_largest_estimates_and_the_rest_counted(doc):
    page = _page({"demo": doc}, max_items=2)
    for m in doc["metrics"]:
        rows = m["windows"][-1]["rows"]
        got = {dict(k)["item"] for k in page["ldp_estimate"] if dict(k)["metric"] == m["metric"]}
        want = {r["item"] for r in sorted(rows, key=lambda r: -r["estimate"])[:2]}
        assert got == want
        per = tuple(sorted({"app": "demo", "metric": m["metric"]}.items()))
        assert page["ldp_estimate_items_omitted"][per] == max(0, len(rows) - 2)


def test_a_withheld_window_is_never_exported(doc):
    withheld = copy.deepcopy(doc)
    for m in withheld["metrics"]:
        for w in m["windows"]:
            w["release"]["released"] = False
    page = _page({"demo": withheld})
    assert "ldp_estimate" not in page and "ldp_estimate_reports" not in page
    assert _page({"demo": None}) == {}


def test_a_metric_in_two_specs_is_exported_once_from_the_later_window(doc):
    twice = copy.deepcopy(doc)
    later = copy.deepcopy(twice["metrics"][0])
    later["windows"][-1]["window"] += 1
    later["windows"][-1]["n"] = 7
    twice["metrics"].append(later)
    samples = [s for s in estimate_samples({"demo": twice}) if s.family == "ldp_estimate_reports"]
    assert [s.value for s in samples if s.labels["metric"] == later["metric"]] == [7.0]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=st.lists(st.tuples(st.integers(0, 3), st.text(max_size=8), _json), max_size=6),
       max_items=st.integers(1, 5))
def test_any_damaged_document_exports_without_error_and_within_the_cap(doc, mutation, max_items):
    damaged = copy.deepcopy(doc)
    targets = [damaged, damaged["metrics"][0], damaged["metrics"][0]["windows"][-1],
               damaged["metrics"][0]["windows"][-1]["rows"][0]]
    for where, key, value in mutation:
        targets[where][key or "rows"] = value
    samples = estimate_samples({"demo": damaged}, max_items)
    per_metric: dict[str, int] = {}
    for s in samples:
        if s.family == "ldp_estimate":
            per_metric[s.labels["metric"]] = per_metric.get(s.labels["metric"], 0) + 1
    assert all(v <= max_items for v in per_metric.values())
    _page({"demo": damaged}, max_items)  # renders


def test_the_export_table_parses_and_refuses_bad_values(spec_path, tmp_path):
    base = {"data_dir": "data", "apps": {"a": {"token_sha256": token_sha256(UPLOAD), "specs": [str(spec_path)]}}}
    config = parse_config({**base, "export": {"max_items": 5, "otlp_endpoint": "http://127.0.0.1:4318/v1/metrics"}},
                          tmp_path)
    assert (config.export.max_items, config.export.otlp_endpoint) == (5, "http://127.0.0.1:4318/v1/metrics")
    assert parse_config(base, tmp_path).export.max_items == 100
    for bad in ({"max_items": 0}, {"max_items": 10**6}, {"max_items": 1.5}, {"otlp_endpoint": "localhost:4318"},
                {"otlp_endpoint": "ftp://x/y"}, {"otlp_endpoint": 5}, {"otlp_timeout_seconds": 0}, {"token": "x"}):
        with pytest.raises(ConfigError, match=r"\[export\]"):
            parse_config({**base, "export": bad}, tmp_path)


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args: Any) -> None:
        pass


def test_the_otlp_push_is_what_a_receiver_decodes(doc):
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    _Receiver.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        push = OtlpPush(f"http://127.0.0.1:{server.server_address[1]}/v1/metrics", max_items=3)
        assert push.push({"demo": doc}) and not push.push({"demo": doc})  # once per fold
        push.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    assert len(_Receiver.bodies) == 1
    request = ExportMetricsServiceRequest.FromString(_Receiver.bodies[0])
    (rm,) = request.resource_metrics
    assert {a.key: a.value.string_value for a in rm.resource.attributes}["service.name"] == "ldp-collector"
    got = {}
    for metric in rm.scope_metrics[0].metrics:
        for p in metric.gauge.data_points:
            attrs = {a.key: a.value.string_value for a in p.attributes}
            got[(metric.name, tuple(sorted(attrs.items())))] = (p.as_double, p.start_time_unix_nano, p.time_unix_nano)
    want = estimate_samples({"demo": doc}, 3)
    assert len(got) == len(want)
    for s in want:
        value, start, at = got[(otlp_name(s.family), tuple(sorted({**s.labels, **s.extra}.items())))]
        assert value == s.value and start <= at  # a gauge's point carries no start on the wire
    names = {m.name for m in rm.scope_metrics[0].metrics}
    assert {"ldp.estimate", "ldp.estimate.standard_error", "ldp.estimate.lower", "ldp.estimate.upper"} <= names
    assert metrics_data(want).resource_metrics[0].scope_metrics[0].metrics  # the SDK's own types


def test_prometheus_scrapes_the_estimates_with_an_analyst_token(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 400, seed=5), 1)
    doc = fold_app(data, "demo", [spec_path])
    config = tmp_path / "serve.toml"
    config.write_text(f'data_dir = "data"\n[fold]\nevery_seconds = 1\n[export]\nmax_items = 50\n'
                      f'[analysts]\ntokens_sha256 = ["{token_sha256(ANALYST)}"]\n'
                      f'[apps.demo]\ntoken_sha256 = "{token_sha256(UPLOAD)}"\nspecs = ["{spec_path}"]\n')
    with serve(config, tmp_path / "serve.log") as served:
        import urllib.error
        import urllib.request

        url = f"http://127.0.0.1:{served.port}/metrics/estimates"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=5)
        assert refused.value.code == 401
        refused.value.close()
        for token in (UPLOAD, "nope"):
            with pytest.raises(urllib.error.HTTPError) as other:
                urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}),
                                       timeout=5)
            assert other.value.code == 401
            other.value.close()
        with prometheus(tmp_path / "prom", served.port, ANALYST) as prom:
            rows = {(m["metric"], r["item"]): r for m in doc["metrics"] for r in m["windows"][-1]["rows"]}
            got = wait_for_series(prom, 'ldp_estimate{app="demo"}', len(rows))
            assert {(g["metric"]["metric"], g["metric"]["item"]): g["value"] for g in got} == \
                {k: r["estimate"] for k, r in rows.items()}
            for g in got:
                assert g["metric"]["job"] == "ldp-estimates" and set(g["metric"]) == {"__name__", "app", "metric",
                                                                                      "item", "instance", "job"}
            (n,) = wait_for_series(prom, 'sum(ldp_estimate_reports{app="demo", metric="dark_mode"})', 1)
            assert n["value"] == 400
            covered = wait_for_series(prom, 'ldp_estimate_upper - ldp_estimate_lower > 0', len(rows))
            assert len(covered) == len(rows)
    assert Path(tmp_path / "prom" / "prometheus.yml").exists()
    assert json.loads((data / "apps" / "demo" / "estimates.json").read_text())["metrics"]


def test_ldp_serve_pushes_the_estimates_after_its_fold(spec, spec_path, tmp_path):
    """``[export] otlp_endpoint``: the running service folds, then pushes every released estimate once."""
    import time

    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 300, seed=9), 1)
    _Receiver.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/metrics"
    config = tmp_path / "serve.toml"
    config.write_text(f'data_dir = "data"\n[fold]\nevery_seconds = 1\n[export]\notlp_endpoint = "{endpoint}"\n'
                      f'[apps.demo]\ntoken_sha256 = "{token_sha256(UPLOAD)}"\nspecs = ["{spec_path}"]\n')
    try:
        with serve(config, tmp_path / "serve.log"):
            deadline = time.monotonic() + 30
            while not _Receiver.bodies and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(2.5)  # two more folds: nothing new, so no second push
    finally:
        server.shutdown()
        server.server_close()
    assert len(_Receiver.bodies) == 1
    request = ExportMetricsServiceRequest.FromString(_Receiver.bodies[0])
    points = {(m.name, tuple(sorted((a.key, a.value.string_value) for a in p.attributes))): p.as_double
              for m in request.resource_metrics[0].scope_metrics[0].metrics for p in m.gauge.data_points}
    doc = json.loads((data / "apps" / "demo" / "estimates.json").read_text())
    for m in doc["metrics"]:
        for row in m["windows"][-1]["rows"]:
            key = ("ldp.estimate", tuple(sorted({"app": "demo", "metric": m["metric"], "item": row["item"]}.items())))
            assert points[key] == row["estimate"]
