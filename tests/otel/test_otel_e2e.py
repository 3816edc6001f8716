"""The OpenTelemetry bridge end to end, Python side (issue 75, item 4): simulated devices, each an app instrumented
with plain OpenTelemetry code (counters, a histogram, a gauge, and instruments the spec does not declare) and the
privatizing reader added to its ``MeterProvider``, upload to a real ``python -m ldp serve``; a real Prometheus
scrapes the ingest service's ``/metrics/estimates`` with an analyst token, and PromQL gives back estimates within four
standard errors of the truth. Every request body the devices sent is kept and inspected: nothing of an undeclared
instrument is in any of them; and each device's ledger was charged exactly one report's cost per declared metric."""

from __future__ import annotations

import gzip
import json
import math
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.metrics")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402  # after the skip
from support.devices_e2e import work_folder  # noqa: E402
from support.e2e import ANALYST, serve, wait_for_fold, write_ingest_config  # noqa: E402
from support.prometheus import need_prometheus, prometheus, wait_for_series  # noqa: E402

from ldp.client.transport import default_opener  # noqa: E402
from ldp.ingest.config import new_token  # noqa: E402
from ldp.otel import PrivatizingMetricReader  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402

APP = "otel"
DEVICES = 600
SCREENS = ["home", "search", "profile", "settings"]
SCREEN_SHARES = [0.4, 0.3, 0.2, 0.1]
BOUNDS = [100.0, 300.0, 1000.0]
LATENCY_SHARES = [0.25, 0.35, 0.3, 0.1]
CRASH_SHARE = 0.3
SECRET = "4111-1111-1111-1111"
SPEC: dict[str, Any] = {
    "spec_version": 1, "name": "otel_e2e", "description": "The OpenTelemetry bridge end to end.",
    "budget": {"per_window": 10.0, "lifetime": 100.0}, "upload": {"min_interval_seconds": 0, "max_batch": 500},
    "metrics": {
        "crashed": {"protocol": "rr", "params": {"p": 0.2, "q": 0.8}, "budget": {"per_report": 1.4},
                    "otel": {"instrument": "app.crashes", "kind": "counter", "value": "any"}},
        "screen": {"protocol": "grr", "params": {"epsilon": 3.0, "domain_size": 4, "labels": SCREENS},
                   "budget": {"per_report": 3.0}, "otel": {"instrument": "ui.screen.views", "kind": "counter",
                                                           "value": "attribute", "attribute": "screen"}},
        "latency": {"protocol": "oue", "params": {"epsilon": 3.0, "domain_size": 4}, "budget": {"per_report": 3.0},
                    "otel": {"instrument": "http.client.duration", "kind": "histogram", "value": "bucket",
                             "buckets": BOUNDS}},
        "battery": {"protocol": "duchi", "params": {"epsilon": 2.0, "low": 0.0, "high": 100.0, "clip": True},
                    "budget": {"per_report": 2.0}, "otel": {"instrument": "battery.level", "kind": "gauge",
                                                            "value": "last"}},
    },
}
LATENCY_ITEMS = ["0", "1", "2", "3"]
"""OUE's items without labels: the bucket indices."""


def _spread(shares: list[float]) -> list[int]:
    return [i for i, s in enumerate(shares) for _ in range(round(s * DEVICES))]


def device_values(d: int) -> dict[str, Any]:
    """Device ``d``'s truth: whether it crashed, its screen, its usual latency bucket, its battery level."""
    return {"crashed": d < CRASH_SHARE * DEVICES, "screen": _spread(SCREEN_SHARES)[(d * 7) % DEVICES],
            "latency": _spread(LATENCY_SHARES)[(d * 11) % DEVICES], "battery": float((d * 37) % 101)}


def run_app(provider: MeterProvider, values: dict[str, Any]) -> None:
    """What an app instrumented with OpenTelemetry does: it knows nothing of ldp."""
    meter = provider.get_meter("shop.app", "1.0")
    crashes = meter.create_counter("app.crashes", description="Crashes recovered from")
    views = meter.create_counter("ui.screen.views")
    duration = meter.create_histogram("http.client.duration", unit="ms")
    battery = meter.create_gauge("battery.level", unit="%")
    purchases = meter.create_counter("purchase.amount", unit="USD")  # not declared: must never leave
    secret = meter.create_histogram("secret.latency")
    crashes.add(0)
    if values["crashed"]:
        crashes.add(2)
    views.add(5, {"screen": SCREENS[values["screen"]]})
    views.add(2, {"screen": SCREENS[(values["screen"] + 1) % 4]})
    centre = [50.0, 200.0, 600.0, 2000.0][values["latency"]]
    for k in range(3):
        duration.record(centre + k, {"route": "/cart"})
    duration.record([50.0, 200.0, 600.0, 2000.0][(values["latency"] + 2) % 4])
    battery.set(100.0)
    battery.set(values["battery"])
    purchases.add(129.99, {"card": SECRET})
    secret.record(7.0, {"card": SECRET})


class Recorder(urllib.request.BaseHandler):
    """Keeps every request body the uploader sends (ungzipped): the bytes that leave the device."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def http_request(self, request: urllib.request.Request) -> urllib.request.Request:
        body = request.data if isinstance(request.data, bytes) else b""
        gzipped = (request.get_header("Content-encoding") or request.headers.get("Content-Encoding")) == "gzip"
        self.bodies.append(gzip.decompress(body) if gzipped else body)
        return request


def test_devices_instrumented_with_opentelemetry_report_privately_and_prometheus_reads_the_estimates(tmp_path: Path):
    need_prometheus()
    token = new_token()
    spec = CollectionSpec.from_dict(SPEC)
    cost = sum(m.params.privacy_cost.epsilon for m in spec.metrics.values())
    recorder = Recorder()
    opener = default_opener(recorder)
    now = time.time()
    window = math.floor(now / spec.window_seconds)
    with work_folder(tmp_path) as work:
        config = write_ingest_config(work, APP, token, SPEC)
        (work / "states").mkdir()
        with serve(config, work / "server.log") as served:
            for d in range(DEVICES):
                clock = [now]
                reader = PrivatizingMetricReader(work / "spec.json", work / "states" / f"{d}.db",
                                                 url=f"{served.url}/v1/reports", token=token, collect_seconds=0,
                                                 clock=lambda c=clock: c[0], upload_options={"opener": opener})
                provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
                run_app(provider, device_values(d))
                provider.force_flush()
                clock[0] = (window + 1) * spec.window_seconds + 1.0  # the window ends: its reports go
                provider.force_flush()
                spent = reader.spent(None, "lifetime")
                assert math.isclose(spent.epsilon, cost, rel_tol=1e-12), (d, spent, cost)
                assert reader.reported == [(window, {m: "recorded" for m in SPEC["metrics"]})], reader.reported
                assert not reader.pending()  # all acknowledged
                provider.shutdown()
        sent = b"\n".join(recorder.bodies)
        lines = [json.loads(line) for body in recorder.bodies for line in body.splitlines() if line.strip()]
        assert len(lines) == DEVICES * len(SPEC["metrics"])
        assert {e["metric"] for e in lines} == set(SPEC["metrics"]) and {e["window"] for e in lines} == {window}
        for needle in (b"purchase", b"4111", b"secret", b"USD", b"129.99", b"/cart", b"route", b"shop.app"):
            assert needle not in sent, needle
        with serve(config, work / "server.log") as served:  # the stop closed the segment: fold it
            folded = wait_for_fold(served, APP, DEVICES * len(SPEC["metrics"]), DEVICES, 60.0)
            assert all(m["n"] == DEVICES for m in folded["metrics"])
            with prometheus(work / "prometheus", served.port, ANALYST) as prom:
                estimates = wait_for_series(prom, f'ldp_estimate{{app="{APP}"}}', 2 + 4 + 4 + 1)
                errors = wait_for_series(prom, f'ldp_estimate_standard_error{{app="{APP}"}}', 11)
                reports = wait_for_series(prom, f'ldp_estimate_reports{{app="{APP}"}}', 4)
    se = {(e["metric"]["metric"], e["metric"]["item"]): e["value"] for e in errors}
    got = {(e["metric"]["metric"], e["metric"]["item"]): e["value"] for e in estimates}
    truth = _truth()
    assert set(got) == set(truth), sorted(got)
    for key, want in truth.items():
        assert abs(got[key] - want) <= 4 * se[key], (key, got[key], want, se[key])
    assert {r["metric"]["metric"]: r["value"] for r in reports} == {m: DEVICES for m in SPEC["metrics"]}


def _truth() -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    values = [device_values(d) for d in range(DEVICES)]
    crashed = sum(v["crashed"] for v in values)
    out[("crashed", "yes")], out[("crashed", "no")] = crashed, DEVICES - crashed
    for i, name in enumerate(SCREENS):
        out[("screen", name)] = sum(v["screen"] == i for v in values)
    for i, item in enumerate(LATENCY_ITEMS):
        out[("latency", item)] = sum(v["latency"] == i for v in values)
    out[("battery", "mean")] = sum(v["battery"] for v in values) / DEVICES
    return out
