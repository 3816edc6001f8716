"""Tests of the dashboard (ldp.ingest.dashboard, ldp.ingest.charts): the page shows every metric
with its numbers, escapes what clients and specs chose, its SVG charts are well-formed and accessible,
and the Starlette routes serve the page and the JSON."""

from __future__ import annotations

import json
import math
import re
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from test_watch import HOSTILE, add_segment, simulate_lines, spec_fixture, spec_path_fixture  # noqa: F401 (fixtures)

from ldp.ingest.charts import format_number, interval_chart, nice_ticks
from ldp.ingest.dashboard import CHART_ROWS, render_dashboard, render_page, shown_rows
from ldp.ingest.watch import fold_app

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(name="data")
def folded_data(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 400, seed=5) + ["junk line"], 1)
    fold_app(data, "demo", [spec_path])
    (data / "ingest.json").write_text(json.dumps({"apps": {"demo": {"batches": 3, "lines": 1601,
                                                                     "rejected": {"bad_json": 1}}}}))
    return data


class _Checker(HTMLParser):
    """Collects start tags (with attributes) and checks that non-void elements are closed in order."""

    VOID = {"meta", "link", "br", "img", "input", "hr", "rect", "line"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()


def parse(html: str) -> _Checker:
    checker = _Checker()
    checker.feed(html)
    checker.close()
    assert checker.stack == ["html"] or checker.stack == [], checker.stack
    return checker


def test_the_page_shows_every_metric_with_its_numbers(data):
    doc = json.loads((data / "apps" / "demo" / "estimates.json").read_text())
    html = render_dashboard(data, ["demo"], refresh_seconds=15)
    page = parse(html)
    assert '<meta http-equiv="refresh" content="15">' in html and '<html lang="en">' in html
    assert "<script" not in html.lower() and HOSTILE not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html  # a candidate item and a description
    assert "Test &lt;b&gt;collection&lt;/b&gt;" in html
    for m in doc["metrics"]:
        assert f">{m['metric']}</h3>" in html
        assert f"Estimates of {m['metric']} in the window of 2024-10-04</caption>" in html  # window 20000
        assert f"{m['metric']} per window</caption>" in html
        for row in m["windows"][-1]["rows"][:3]:
            for key in ("estimate", "ci_low", "ci_high", "std_error"):
                assert f"<td>{format_number(row[key])}</td>" in html
    assert "Last folded at <time" in html and doc["folded_at"] in html
    assert "ε=4 (cap ε=4)" in html and "this metric: ε=5; all metrics: ε=100" in html  # privacy costs
    assert "<th scope=\"row\">rejected: bad_json</th>" in html and "Uploads received for demo" in html
    assert html.count("<th scope=\"col\">Detected</th>") == 1  # only the CMS metric detects
    names = [t for t, _ in page.tags]
    for tag in ("header", "main", "section", "caption", "figure", "figcaption", "dl"):
        assert tag in names
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    assert len(svgs) == 8  # a time series and the latest window's chart per metric
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.get("role") == "img" and root.find(f"{SVG}title").text and root.find(f"{SVG}desc").text
        assert set(root.get("aria-labelledby").split()) == {root.find(f"{SVG}title").get("id"),
                                                             root.find(f"{SVG}desc").get("id")}
    ids = [a["id"] for _, a in page.tags if "id" in a]
    assert len(ids) == len(set(ids))


def test_a_hostile_string_is_escaped_everywhere():
    evil = "</title><script>alert(1)</script><svg onload=x>&"
    rows = [{"item": evil, "estimate": 5.0, "std_error": 1.0, "ci_low": 3.0, "ci_high": 7.0, "detected": True}]
    window = {"window": 20000, "start": "2024-10-04T00:00:00Z", "end": "2024-10-05T00:00:00Z", "open": False,
              "key": evil, "n": 1, "rejected": {}, "kind": "counts", "rows": rows, "detected": [evil],
              "notes": [evil], "error": None, "confidence": 0.95}
    doc = {"folded_at": "2026-01-01T00:00:00Z", "checked_at": evil, "specs": [{"name": evil, "description": evil}],
           "segments": 1, "records": 1, "accepted": 1, "rejected": {evil: 1}, "warnings": [evil],
           "metrics": [{"metric": evil, "description": evil, "protocol": evil, "n": 1, "rejected": {evil: 2},
                        "privacy": {"per_report": {"text": evil}}, "kind": "counts", "rows": rows,
                        "detected": [evil], "notes": [evil], "error": None, "confidence": 0.95,
                        "window_seconds": 86400, "window_n": {"20000": 1}, "latest": 20000, "windows": [window]}]}
    html = render_page({evil: doc}, {"apps": {evil: {evil: evil, "accepted": 3}}}, refresh_seconds=5)
    parse(html)
    assert "<script" not in html and "onload=x>" not in html and "</title><script" not in html
    assert html.count("&lt;script&gt;") >= 10
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    assert len(svgs) == 2
    for svg in svgs:
        ET.fromstring(svg)


def test_apps_not_folded_yet_and_metrics_without_reports(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    fold_app(data, "demo", [spec_path])  # no segment yet: every metric with 0 reports
    html = render_dashboard(data, ["demo", "later"])
    parse(html)
    assert html.count("No reports yet.") == 4 and "Not folded yet" in html and "<svg" not in html
    assert 'href="#app1">later</a>' in html
    with pytest.raises(ValueError):
        render_page({}, refresh_seconds=0)


def test_chart_scales_negative_and_missing_values():
    rows = [{"item": "a", "estimate": -20.0, "ci_low": -45.0, "ci_high": 5.0},
            {"item": "b", "estimate": float("nan"), "ci_low": None, "ci_high": None},
            {"item": "x" * 80, "estimate": 130.0, "ci_low": 100.0, "ci_high": 160.0, "detected": False}]
    root = ET.fromstring(interval_chart(rows, title="t", desc="d", chart_id="c"))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "n/a" in texts and "-20.0" in texts and "130.0" in texts and "not detected" in texts
    assert "x" * 27 + "…" in texts  # long labels are cut (the table has them whole)
    view = [float(v) for v in root.get("viewBox").split()]
    for el in root.iter():  # everything inside the view box
        for attr in ("x", "x1", "x2"):
            if el.get(attr) is not None:
                assert 0 <= float(el.get(attr)) <= view[2]
    assert nice_ticks(-45, 160) == [-50, 0, 50, 100, 150, 200]
    assert nice_ticks(0, 0) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert [format_number(v) for v in (1234567.8, 12.34, 0.012345, math.inf, None, True)] == \
        ["1,234,568", "12.3", "0.0123", "n/a", "n/a", "n/a"]
    with pytest.raises(ValueError):
        interval_chart([], title="t", desc="d", chart_id="c")


def test_many_items_show_the_largest():
    rows = [{"item": str(i), "estimate": float(i % 50)} for i in range(100)] + [{"item": "nan", "estimate": None}]
    shown = shown_rows(rows)
    assert len(shown) == CHART_ROWS and shown[0]["estimate"] == 49 and all(r["estimate"] >= 35 for r in shown)
    assert shown_rows(rows[:5]) == rows[:5]


def test_routes_serve_the_page_and_the_json(data):
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ldp.ingest.access import ReadAccess
    from ldp.ingest.dashboard import dashboard_routes

    app = Starlette(routes=dashboard_routes(data, {"demo": [], "later": []}, refresh_seconds=20,
                                            access=ReadAccess(public=True)))  # who reads: test_read_auth.py
    with TestClient(app) as client:
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none': no script
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "app_category" in page.text and 'content="20"' in page.text
        doc = client.get("/v1/estimates").json()
        assert doc["apps"]["later"] is None and doc["ingest"]["apps"]["demo"]["batches"] == 3
        assert {m["metric"] for m in doc["apps"]["demo"]["metrics"]} == {"app_category", "dark_mode", "homepage",
                                                                         "minutes"}
        assert client.post("/").status_code == 405
    with pytest.raises(ValueError):
        dashboard_routes(data, [], refresh_seconds=0)


def test_rendering_needs_no_http_stack():
    import subprocess
    import sys

    code = ("import sys; import ldp.ingest.dashboard, ldp.ingest.watch, ldp.ingest.charts; "
            "sys.exit(1 if 'starlette' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_time_is_shown_relative(spec_path, tmp_path):
    doc = {"folded_at": "2026-01-01T00:00:00Z", "checked_at": "2026-01-01T00:05:00Z", "metrics": []}
    now = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    html = render_page({"demo": doc}, now=now)
    assert "(10 min ago)" in html and '<time datetime="2026-01-01T00:05:00Z">' in html


def test_the_collector_app_folds_and_serves_the_dashboard(spec, spec_path, tmp_path):
    """H1's create_app with the dashboard routes and the watcher's hooks: uploads become estimates."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from ldp.ingest.access import ReadAccess
    from ldp.ingest.app import create_app
    from ldp.ingest.config import parse_config, token_sha256
    from ldp.ingest.dashboard import dashboard_routes
    from ldp.ingest.watch import Watcher

    token, analyst = "t" * 43, "a" * 43
    config = parse_config({"data_dir": "data", "limits": {"segment_max_seconds": 0.2}, "fold": {"every_seconds": 0.2},
                           "apps": {"demo": {"token_sha256": token_sha256(token), "specs": [str(spec_path)]}},
                           "analysts": {"tokens_sha256": [token_sha256(analyst)]}}, tmp_path)
    watcher = Watcher.from_config(config)
    app = create_app(config, extra_routes=dashboard_routes(config.data_dir, config.apps, refresh_seconds=5,
                                                           access=ReadAccess.from_config(config)),
                     on_startup=[watcher.startup_hook], on_shutdown=[watcher.shutdown_hook])
    lines = simulate_lines(spec, 100, seed=9)
    with TestClient(app, headers={"Authorization": f"Bearer {analyst}"}) as client:
        assert watcher.running
        answer = client.post("/v1/reports", content=("\n".join(lines) + "\n").encode(),
                             headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson",
                                      "Ldp-Batch-Id": "batch-1"})
        assert answer.status_code == 200 and answer.json()["accepted"] == 400
        deadline, doc = time.monotonic() + 20, None
        while time.monotonic() < deadline:
            doc = client.get("/v1/estimates").json()["apps"]["demo"]
            if doc and doc["accepted"] == 400:
                break
            time.sleep(0.05)
        assert doc and doc["accepted"] == 400 and {m["n"] for m in doc["metrics"]} == {100}
        page = client.get("/").text
        assert "app_category" in page and "Reports aggregated</dt><dd>400</dd>" in page
    assert not watcher.running and watcher.failures == 0


def test_the_page_says_what_the_release_thresholds_withheld():
    def window(w, n, rows, release):
        return {"window": w, "start": None, "end": None, "open": False, "key": None, "n": n, "rejected": {},
                "confidence": 0.95, "kind": "counts", "rows": rows, "detected": None, "notes": [], "error": None,
                "release": release}

    row = {"item": "shown", "estimate": 90.0, "std_error": 10.0, "ci_low": 70.4, "ci_high": 109.6}
    kept = {"applied": True, "min_reports": 100, "min_z": 2.0, "n": 150, "released": True, "withheld_items": 12,
            "reason": None, "text": "12 items below 2 SE withheld"}
    held = {"applied": True, "min_reports": 100, "min_z": 2.0, "n": 37, "released": False, "withheld_items": None,
            "reason": "not enough reports yet — 37 of 100", "text": "not enough reports yet — 37 of 100"}
    metric = {"metric": "m", "protocol": "grr", "n": 187, "window_seconds": 86400, "window_n": {"1": 150, "2": 37},
              "windows": [window(1, 150, [row], kept), window(2, 37, [], held)], "rows": [], "release": held}
    doc = {"folded_at": "2026-01-01T00:00:00Z", "metrics": [metric]}
    html = render_page({"demo": doc}, now=datetime(2026, 1, 1, tzinfo=UTC))
    parse(html)
    assert "Not released: not enough reports yet — 37 of 100." in html
    assert "<td colspan=\"1\">not released: not enough reports yet — 37 of 100</td>" in html
    metric["windows"] = metric["windows"][:1]
    html = render_page({"demo": doc}, now=datetime(2026, 1, 1, tzinfo=UTC))
    parse(html)
    assert '<p class="held">12 items below 2 SE withheld.</p>' in html and "shown" in html
    metric["windows"][0]["rows"] = []
    html = render_page({"demo": doc}, now=datetime(2026, 1, 1, tzinfo=UTC))
    assert "12 items below 2 SE withheld: nothing else to show in this window." in html
