"""The TypeScript client's OpenTelemetry reader end to end (``ldp-telemetry-client/otel``): an app instrumented with
plain OpenTelemetry JS code (``@opentelemetry/sdk-metrics``: a counter, a histogram, a gauge, and instruments of its
own that the spec does not declare) adds one line, ``new PrivatizingMetricReader({...})``, and its measurements leave
each device only as locally private reports of the declared instruments, uploaded to a real ``python -m ldp serve``
on loopback.

Two runs of the same devices (tests/clients/otel_devices.mjs), each device with its own state:

* in a web page in headless Chromium, bundled with esbuild as an app's bundler would (otel_page.mjs), each device's
  state in IndexedDB, uploading across origins; every request body the page sends is read by Playwright;
* in Node (otel_node.mjs), each device's state a ``FileStore`` folder; every body kept by a wrapper of ``fetch``.

Each device takes one of three paths through its window (the clock passes the window's end, ``reportOnShutdown``,
or a restart mid-window on the same state then ``closeWindow()``); the data are such that a restart that lost the
first run's tally would report other values. Checked: every window value recorded, every report accepted and
acknowledged, none left; no request body holds an undeclared instrument's name or any of its values or attributes;
every line is a declared metric's, of the devices' window; and the Python decoder's estimates of the folded reports
lie within 4 standard errors of the truth (their 95 % intervals widened to about 99.99 %, as the other end-to-end
tests), and so do the ones a real Prometheus scrapes from the ingest service and gives back to PromQL. CI builds the
client (.ci/run) and sets ``LDP_REQUIRE_TS_BUNDLE=1``, ``LDP_REQUIRE_BROWSER=1`` and ``LDP_REQUIRE_PROMETHEUS=1``: a
missing build, OpenTelemetry SDK, Node, Chromium or Prometheus fails there instead of skipping.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support.devices_e2e import work_folder
from support.e2e import (
    ANALYST,
    CHROMIUM,
    CHROMIUM_ARGS,
    Served,
    need_browser,
    serve,
    static_site,
    wait_for_fold,
    write_ingest_config,
)
from support.prometheus import prometheus, wait_for_series

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"
HERE = Path(__file__).parent
APP_FILES = ("otel_devices.mjs", "otel_page.mjs", "otel_node.mjs")
APP = "otel"
DEVICES = 300
WINDOW = 86400
LABELS = ["home", "search", "profile", "settings"]
SHARES = [0.4, 0.3, 0.2, 0.1]
BUCKET_SHARES = [0.5, 0.3, 0.2]  # of the spec's buckets (-inf, 100], (100, 250], (250, inf)
CRASH_EVERY = 5
PATHS = ("roll", "shutdown", "restart")
SECRETS = ("secret", "hunter2", "vault", "31337.125", "27182.5", "4242.75", "1618.25")
"""What the undeclared instruments' names, values and attributes hold: never in a request body (case-insensitive;
a device's state has a ``secret``, its own, so there ``secret.``, the instruments' names, is looked for)."""
SPEC: dict[str, Any] = {
    "spec_version": 1, "name": "otel_e2e", "description": "The OpenTelemetry reader end to end.",
    "budget": {"per_window": 10.0, "lifetime": 100.0}, "upload": {"min_interval_seconds": 0, "max_batch": 500},
    "metrics": {
        "screen": {"protocol": "grr", "params": {"epsilon": 2.0, "domain_size": 4, "labels": LABELS},
                   "budget": {"per_report": 2.0},
                   "otel": {"instrument": "app.screen.views", "kind": "counter", "value": "attribute",
                            "attribute": "screen"}},
        "crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1},
                    "otel": {"instrument": "app.crashes", "kind": "counter", "value": "any"}},
        "latency": {"protocol": "grr", "params": {"epsilon": 2.0, "domain_size": 3}, "budget": {"per_report": 2.0},
                    "otel": {"instrument": "http.client.duration", "kind": "histogram", "value": "bucket",
                             "buckets": [100, 250]}},
        "load_ms": {"protocol": "duchi", "params": {"epsilon": 1.0, "low": 0.0, "high": 1000.0, "clip": True},
                    "budget": {"per_report": 1.0},
                    "otel": {"instrument": "http.client.duration", "kind": "histogram", "value": "mean"}},
        "battery": {"protocol": "duchi", "params": {"epsilon": 1.0, "low": 0.0, "high": 100.0, "clip": True},
                    "budget": {"per_report": 1.0},
                    "otel": {"instrument": "battery.level", "kind": "gauge", "value": "last"}},
    },
}
FOLD_TIMEOUT = 60.0
BUCKET_VALUES = [(40.0, 90.0), (120.0, 240.0), (300.0, 700.0)]  # two latencies in each spec bucket


def _spread(shares: list[float]) -> list[int]:
    return [i for i, s in enumerate(shares) for _ in range(round(s * DEVICES))]


def devices(window: int) -> list[dict[str, Any]]:
    """Each device's path, clock and two parts of measurements, in window ``window``. A restart that lost its first
    run's tally would report the second part alone: there the decoy screen leads, the crash is gone and the latencies
    of another bucket lead."""
    screens, buckets = _spread(SHARES), _spread(BUCKET_SHARES)
    out = []
    for d in range(DEVICES):
        s, b = screens[d], buckets[(d * 7) % DEVICES]
        decoy, other = (s + 1) % len(LABELS), (b + 1) % 3
        lo, hi = BUCKET_VALUES[b]
        secret = {"clicks": 31337.125, "screen": f"SECRET-SCREEN-{d}", "user": "hunter2", "timing": 27182.5,
                  "temperature": 1618.25, "room": "vault", "observed": 4242.75}
        parts = [
            {"views": [[LABELS[s], 2]], "crashes": int(d % CRASH_EVERY == 0), "latencies": [lo, hi, lo + 1],
             "battery": [float(100 - d % 50)], "secret": secret},
            {"views": [[LABELS[s], 2], [LABELS[decoy], 3]], "crashes": 0,
             "latencies": list(BUCKET_VALUES[other]), "battery": [float(5 + (d * 13) % 91)], "secret": secret},
        ]
        out.append({"path": PATHS[d % 3], "start": window * WINDOW + 3600 + d, "next": (window + 1) * WINDOW + 60 + d,
                    "parts": parts})
    return out


def truth(devs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per metric, each item's true count over the devices (the two means: ``mean``)."""
    out: dict[str, dict[str, float]] = {m: {} for m in SPEC["metrics"]}
    loads, levels = [], []
    for dev in devs:
        first, second = dev["parts"]
        views: dict[str, int] = {}
        for part in (first, second):
            for screen, n in part["views"]:
                views[screen] = views.get(screen, 0) + n
        screen = min((label for label in LABELS if views.get(label) == max(views.values())), key=LABELS.index)
        crashed = "yes" if first["crashes"] + second["crashes"] > 0 else "no"
        latencies = first["latencies"] + second["latencies"]
        per_bucket = [sum(1 for ms in latencies if lo < ms <= hi) for lo, hi in
                      ((-math.inf, 100), (100, 250), (250, math.inf))]
        bucket = str(per_bucket.index(max(per_bucket)))
        for metric, item in (("screen", screen), ("crashed", crashed), ("latency", bucket)):
            out[metric][item] = out[metric].get(item, 0) + 1
        loads.append(sum(latencies) / len(latencies))
        levels.append(second["battery"][-1])
    out["load_ms"]["mean"] = sum(loads) / len(loads)
    out["battery"]["mean"] = sum(levels) / len(levels)
    return out


def need_client() -> str:
    """``node``, with the built client, its OpenTelemetry SDK and esbuild (``npm test`` in clients/typescript builds
    them); a skip, or with ``LDP_REQUIRE_TS_BUNDLE=1`` (CI) a failure, without them."""
    node = shutil.which("node")
    wanted = [CLIENT / "dist" / "otel" / "index.js", CLIENT / "dist" / "node.js",
              CLIENT / "node_modules" / "@opentelemetry" / "sdk-metrics" / "package.json",
              CLIENT / "node_modules" / ".bin" / "esbuild"]
    missing = [str(p) for p in wanted if not p.exists()] + ([] if node else ["node"])
    if node and not missing:
        return node
    reason = (f"the OpenTelemetry end-to-end test needs {', '.join(missing)} "
              "(cd clients/typescript && npm ci && npm test)")
    if os.environ.get("LDP_REQUIRE_TS_BUNDLE") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def app_folder(work: Path) -> Path:
    """The app's folder: its sources, and ``node_modules`` holding the package and its OpenTelemetry SDK as an app's
    install would (links to clients/typescript and its ``node_modules/@opentelemetry``)."""
    app = work / "app"
    (app / "node_modules").mkdir(parents=True)
    for name in APP_FILES:
        shutil.copyfile(HERE / name, app / name)
    (app / "node_modules" / "ldp-telemetry-client").symlink_to(CLIENT, target_is_directory=True)
    (app / "node_modules" / "@opentelemetry").symlink_to(CLIENT / "node_modules" / "@opentelemetry",
                                                         target_is_directory=True)
    return app


def bundle(app: Path, site: Path) -> None:
    """``site/page.js``: the page's code and what it imports, bundled for the browser by esbuild."""
    done = subprocess.run([str(CLIENT / "node_modules" / ".bin" / "esbuild"), "otel_page.mjs", "--bundle",
                           "--format=esm", "--platform=browser", "--target=es2020", "--minify",
                           f"--outfile={site / 'page.js'}"], cwd=app, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = (site / "page.js").read_text()
    assert "node:" not in text, "the page's bundle imports a node: module"


def check_bodies(bodies: list[str], reports: int, window: int, fingerprint: str) -> None:
    """Every upload line is a declared metric's report of ``window``; no body holds an undeclared instrument's name,
    value or attribute."""
    lines = [line for body in bodies for line in body.splitlines() if line]
    assert len(lines) == reports, (len(lines), reports)
    for body in bodies:
        lowered = body.lower()
        for secret in SECRETS:
            assert secret.lower() not in lowered, f"an upload body holds {secret!r}"
    envelopes = [json.loads(line) for line in lines]
    assert {e["metric"] for e in envelopes} == set(SPEC["metrics"])
    assert {e["window"] for e in envelopes} == {window}
    assert {e["spec"] for e in envelopes} == {fingerprint}
    per_metric = {m: sum(1 for e in envelopes if e["metric"] == m) for m in SPEC["metrics"]}
    assert per_metric == dict.fromkeys(SPEC["metrics"], DEVICES), per_metric


def check_run(result: dict[str, Any], window: int) -> int:
    """The devices' summary: every window value recorded, uploaded and acknowledged; the number of reports."""
    reports = DEVICES * len(SPEC["metrics"])
    assert result["devices"] == DEVICES, result
    assert result["outcomes"] == {"recorded": reports}, result
    assert result["reportsPerDevice"] == [len(SPEC["metrics"])], result
    assert result["windows"] == [window], result
    assert result["uploaded"] == reports and result["pending"] == 0, result
    assert result["misfits"] == [] and result["unfit"] == 0, result
    return reports


def check_estimates(folded: dict[str, Any], devs: list[dict[str, Any]], fingerprint: str) -> None:
    """The Python decoder's estimates of the folded reports within 4 standard errors of the truth."""
    assert {s["fingerprint"] for s in folded["specs"]} == {fingerprint}
    true = truth(devs)
    assert {m["metric"] for m in folded["metrics"]} == set(SPEC["metrics"])
    for m in folded["metrics"]:
        name, rows = m["metric"], {r["item"]: r for r in m["rows"]}
        assert m["error"] is None and m["n"] == DEVICES, m
        for item, value in true[name].items():
            r = rows[item]
            assert r["ci_low"] <= r["estimate"] <= r["ci_high"], (name, item, r)
            assert abs(r["estimate"] - value) <= 4 * r["std_error"], (name, item, r, value)


def check_prometheus(served: Served, folder: Path, devs: list[dict[str, Any]]) -> None:
    """The estimates read back from a real Prometheus scraping the ingest service's ``/metrics/estimates`` with the
    analyst's token: each within 4 standard errors (as Prometheus has them too) of the truth."""
    true = truth(devs)
    wanted = sum(len(items) for items in true.values())
    with prometheus(folder / "prometheus", served.port, ANALYST) as prom:
        got = {(e["metric"]["metric"], e["metric"]["item"]): e["value"]
               for e in wait_for_series(prom, f'ldp_estimate{{app="{APP}"}}', wanted)}
        se = {(e["metric"]["metric"], e["metric"]["item"]): e["value"]
              for e in wait_for_series(prom, f'ldp_estimate_standard_error{{app="{APP}"}}', wanted)}
        n = {e["metric"]["metric"]: e["value"] for e in wait_for_series(prom, f'ldp_estimate_reports{{app="{APP}"}}',
                                                                         len(SPEC["metrics"]))}
    assert n == dict.fromkeys(SPEC["metrics"], DEVICES), n
    for metric, items in true.items():
        for item, value in items.items():
            assert abs(got[(metric, item)] - value) <= 4 * se[(metric, item)], (metric, item, got, value)


def test_the_truth_needs_both_runs_of_a_restarted_device() -> None:
    """The data: a device that lost its first run's tally would report other values of three metrics."""
    for dev in devices(1000)[2::3]:
        first, second = dev["parts"]
        assert dev["path"] == "restart"
        alone = truth([{**dev, "parts": [{**second, "crashes": 0, "views": [], "latencies": []}, second]}])
        both = truth([dev])
        for metric in ("screen", "latency"):
            assert alone[metric] != both[metric], (metric, dev)
        assert first["crashes"] == 0 or alone["crashed"] != both["crashed"]


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
def test_an_opentelemetry_web_app_uploads_only_private_reports_of_the_declared_instruments(tmp_path: Path) -> None:
    need_client()
    need_browser()
    from playwright.sync_api import sync_playwright

    from ldp.ingest.config import new_token

    window = int(time.time() // WINDOW) - 1  # yesterday's: a past window, as the ingest service sees it
    devs = devices(window)
    token = new_token()
    bodies: list[str] = []
    with work_folder(tmp_path) as work:
        app = app_folder(work)
        site = work / "site"
        site.mkdir()
        bundle(app, site)
        shutil.copyfile(HERE / "otel_page.html", site / "index.html")
        with static_site(site) as origin, sync_playwright() as p:
            config = write_ingest_config(work, APP, token, SPEC, cors_origin=origin)
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                with serve(config, work / "server.log") as served:
                    errors: list[str] = []
                    page = browser.new_page()
                    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
                    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

                    def keep(request: Any) -> None:
                        if request.method == "POST" and request.url.startswith(served.url):
                            raw = request.post_data_buffer or b""
                            bodies.append((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode())

                    page.on("request", keep)
                    page.goto(f"{origin}/index.html")
                    page.wait_for_function("window.ready === true", timeout=60_000)
                    page.evaluate("([s, d, u, t]) => window.runAll(s, d, u, t)",
                                  [SPEC, devs, f"{served.url}/v1/reports", token])
                    page.wait_for_function("window.__result !== undefined || window.__error !== undefined",
                                           timeout=600_000)
                    assert page.evaluate("window.__error === undefined"), page.evaluate("window.__error")
                    result = page.evaluate("window.__result")
                    assert errors == [], errors
            finally:
                browser.close()
        reports = check_run(result, window)
        check_bodies(bodies, reports, window, result["specFingerprint"])
        with serve(config, work / "server.log") as served:  # the stop closed the segment: fold it
            folded = wait_for_fold(served, APP, reports, DEVICES, FOLD_TIMEOUT)
            check_prometheus(served, work, devs)
    check_estimates(folded, devs, result["specFingerprint"])


def test_an_opentelemetry_node_app_uploads_only_private_reports_of_the_declared_instruments(tmp_path: Path) -> None:
    node = need_client()
    from ldp.ingest.config import new_token

    window = int(time.time() // WINDOW) - 1
    devs = devices(window)
    token = new_token()
    with work_folder(tmp_path) as work:
        app = app_folder(work)
        (work / "devices.json").write_text(json.dumps(devs))
        config = write_ingest_config(work, APP, token, SPEC)  # writes work/spec.json
        with serve(config, work / "server.log") as served:
            done = subprocess.run([node, "otel_node.mjs", str(work / "spec.json"), str(work / "devices.json"),
                                   str(work / "states"), f"{served.url}/v1/reports", token, str(work / "bodies.json")],
                                  cwd=app, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-4000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        reports = check_run(result, window)
        check_bodies(json.loads((work / "bodies.json").read_text()), reports, window, result["specFingerprint"])
        for state in (work / "states").iterdir():  # nor does a device's state hold them
            text = (state / "state.json").read_text().lower()
            assert not any(s.lower() in text for s in ("secret.", *SECRETS[1:])), state
        with serve(config, work / "server.log") as served:
            folded = wait_for_fold(served, APP, reports, DEVICES, FOLD_TIMEOUT)
            check_prometheus(served, work, devs)
    check_estimates(folded, devs, result["specFingerprint"])
