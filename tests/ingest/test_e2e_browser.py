"""From device to dashboard, as a person would use it (issue 22, item 5; issue 30, items 6 and 7).

A real ``python -m ldp serve`` on a loopback port (a TOML config, a bearer token, a collection spec of two
metrics, folding every second); simulated devices that record reports with ``TelemetryClient`` on three days
(the last two days and today) and send them all at once with ``TelemetryClient.upload``, as a device offline
for two days would. First the segment stays open (``segment_max_seconds`` is an hour): the page says the
reports wait for the next fold. Then the ingest service is restarted (a stop closes the open segment) and folds
them: the dashboard in a real headless Chromium (Debian's, driven by Playwright), signed in as an analyst through
its sign-in form (issue 57: the page answers 401 without), is checked by what it shows:
each metric's name and number of reports, a time series of three windows with confidence bands (counted in
SVG elements), the latest window's estimates near the truth with their confidence intervals, the privacy cost;
no console error; the same text without JavaScript; no sideways scrolling on a phone-sized screen. Full-page
screenshots are kept as artifacts.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from support.e2e import (
    ANALYST,
    CHROMIUM,
    CHROMIUM_ARGS,
    Served,
    artifact_dir,
    get_json,
    need_browser,
    serve,
    wait_for_fold,
    write_ingest_config,
)

from ldp.client.runtime import TelemetryClient

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Locator, Page

APP = "demo"
LABELS = ["games", "social", "news", "other"]
SHARES = [0.4, 0.3, 0.2, 0.1]  # of app_category; dark mode is on for DARK_SHARE of the devices
DARK_SHARE = 0.35
CLIENTS = 4                    # simulated apps, each standing for DEVICES_EACH devices (the budget allows it)
DEVICES_EACH = 250
DEVICES = CLIENTS * DEVICES_EACH
DAYS = 3                       # the same devices report on the last two days and today
METRICS: dict[str, dict[str, Any]] = {
    "app_category": {"description": "Category of the app used most today.", "protocol": "grr",
                     "params": {"epsilon": 2.0, "domain_size": 4, "labels": LABELS}, "budget": {"per_report": 2.0}},
    "dark_mode": {"description": "Is dark mode on?", "protocol": "rr", "params": {"p": 0.25, "q": 0.75},
                  "budget": {"per_report": 1.1}},
}
SPEC: dict[str, Any] = {
    "spec_version": 1, "name": "e2e_app",
    "description": "End-to-end test: which kind of app is used most, and whether dark mode is on.",
    # the whole fleet's reports through a few clients: caps wide enough for DEVICES_EACH devices each
    "budget": {"per_window": 10000.0, "lifetime": 100000.0},
    "upload": {"min_interval_seconds": 0, "max_batch": 500},
    "metrics": METRICS,
}
COST = {"app_category": "ε=2 (cap ε=2)", "dark_mode": f"ε={math.log(3):.6g} (cap ε=1.1)"}  # as the page writes ε
FOLD_TIMEOUT = 25.0


def truth() -> dict[str, dict[str, int]]:
    """The true counts over all devices (each client's devices are a slice of the same fleet)."""
    cats = [LABELS[i] for i, s in enumerate(SHARES) for _ in range(round(s * DEVICES))]
    dark = round(DARK_SHARE * DEVICES)
    return {"app_category": {c: cats.count(c) for c in LABELS}, "dark_mode": {"yes": dark, "no": DEVICES - dark}}


def device_values(client: int) -> list[tuple[str, Any]]:
    """The reports of client ``client``'s devices: every DEVICES-th device of the fleet from ``client`` on."""
    cats = [LABELS[i] for i, s in enumerate(SHARES) for _ in range(round(s * DEVICES))]
    dark = round(DARK_SHARE * DEVICES)
    out: list[tuple[str, Any]] = []
    for d in range(client, DEVICES, CLIENTS):
        out += [("app_category", cats[d]), ("dark_mode", d < dark)]
    return out


def run_devices(tmp: Path, url: str, token: str) -> int:
    """Record every device's reports on each of the DAYS days (a clock set to that day) and upload them all at
    once; return the number of reports acknowledged."""
    acked = 0
    now = [0.0]
    for c in range(CLIENTS):
        values = device_values(c)
        with TelemetryClient(tmp / "spec.json", tmp / f"device{c}.sqlite", rng=1000 + c, simulation=True,
                             clock=lambda: now[0]) as client:
            for day in range(DAYS - 1, -1, -1):
                now[0] = time.time() - day * 86400
                client.record_many(values)
            now[0] = time.time()
            result = client.upload(url, token, timeout=10.0, max_attempts=4)
            counts = client.counts()
        assert result.stopped == "empty" and result.acknowledged == result.accepted == DAYS * len(values), result
        assert not result.rejected and not result.duplicates, result
        assert all(m["pending"] == 0 and m["uploaded"] == m["reports"] for m in counts.values()), counts
        acked += result.acknowledged
    return acked


def wait_for_waiting(served: Served, reports: int) -> dict[str, Any]:
    """Poll GET /v1/estimates until the ingest service counts the reports and says when they will be folded."""
    deadline = time.monotonic() + FOLD_TIMEOUT
    body: Any = None
    while time.monotonic() < deadline:
        status, body = get_json(served.port, "/v1/estimates")
        state = (body.get("waiting") or {}).get(APP) if status == 200 else None
        if state and state["reports"] == reports and state["next_fold_at"] and state["open_segment_closes_at"]:
            return dict(state)
        time.sleep(0.05)
    raise AssertionError(f"the reports were not waiting within {FOLD_TIMEOUT} s: {json.dumps(body)[:2000]}")


def sign_in(context: BrowserContext, url: str) -> None:
    """Sign the browser of ``context`` in as an analyst does: the dashboard answers 401 with the sign-in form, the
    form takes the analyst token, and the dashboard comes back; its cookie then serves every page of the context
    (it holds no token, and no script can read it)."""
    from playwright.sync_api import expect

    page = context.new_page()
    response = page.goto(url + "/")
    assert response is not None and response.status == 401, response
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    page.get_by_label("Analyst token").fill(ANALYST)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="LDP estimates", level=1)).to_be_visible()
    (cookie,) = context.cookies()
    assert cookie["name"] == "ldp_analyst" and cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
    assert ANALYST not in cookie["value"]
    page.close()


def number(text: str) -> float:
    return float(text.replace(",", "").strip())


def estimates_table(section: Locator, metric: str) -> dict[str, dict[str, float]]:
    """The estimates table of ``metric`` as the page shows it: item -> estimate, se, low, high."""
    table = section.get_by_role("table", name=f"Estimates of {metric}")
    rows: dict[str, dict[str, float]] = {}
    for row in table.get_by_role("row").all()[1:]:  # the header row first
        cells = [c.strip() for c in row.inner_text().split("\t")]
        rows[cells[0]] = dict(zip(("estimate", "std_error", "ci_low", "ci_high"), map(number, cells[1:5]),
                                  strict=True))
    return rows


def check_waiting(page: Page, reports: int) -> None:
    """Before the fold: the page says how many reports wait and until when (the open segment's close)."""
    from playwright.sync_api import expect

    status = page.get_by_role("status")
    expect(status).to_contain_text(f"{reports:,} reports waiting for the next fold at ")
    expect(status).to_contain_text("folded only once it closes, by ")
    text = page.inner_text("body")
    assert re.search(r"Reports accepted by the ingest service\s+" + re.escape(f"{reports:,}"), text), text[:3000]
    assert text.count("No reports yet.") == len(METRICS), text[:3000]


def check_page(page: Page, folded: Mapping[str, Any]) -> None:
    """What a person sees: names, report counts, a time series of DAYS windows with confidence bands, the latest
    window's estimates near the truth with CIs, privacy costs, charts."""
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="LDP estimates", level=1)).to_be_visible()
    expect(page.get_by_role("heading", name=f"App {APP}")).to_be_visible()
    text = page.inner_text("body")
    assert re.search(r"Reports aggregated\s+" + re.escape(f"{folded['accepted']:,}"), text), text[:3000]
    assert page.get_by_role("status").count() == 0  # nothing waits any more
    true = truth()
    for metric, spec in METRICS.items():
        section = page.get_by_role("region", name=metric)
        expect(section.get_by_role("heading", name=metric)).to_be_visible()
        shown = section.inner_text()
        assert spec["description"] in shown
        assert re.search(r"Reports in all windows\s+" + re.escape(f"{DAYS * DEVICES:,}") + r"\b", shown), shown
        assert re.search(r"Reports in the latest window\s+" + re.escape(f"{DEVICES:,}") + r"\b", shown), shown
        assert re.search(r"Windows with reports\s+" + str(DAYS) + r"\b", shown), shown
        assert re.search(r"Privacy cost per report\s+" + re.escape(COST[metric]), shown), shown
        assert re.search(r"Per device per window \(86,400 s\)\s+this metric: no cap; all metrics: ε=10000\b", shown), \
            shown
        assert "estimated number of clients" not in shown
        series = section.get_by_role("img", name=re.compile(
            rf"^{metric}: estimated reports in the window, window by window \(1 day\)"))
        expect(series).to_be_visible()
        items = len(true[metric])
        assert series.locator("circle.point").count() == DAYS * items  # a point per window and item
        assert series.locator("polygon.ci-band").count() == items     # one band per item over the DAYS windows
        box = series.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50, box
        expect(section.get_by_role("table", name=f"{metric} per window")).to_be_visible()
        chart = section.get_by_role("img", name=re.compile(rf"^{metric}: estimated reports in the window of "))
        expect(chart).to_be_visible()
        rows = estimates_table(section, metric)
        assert set(rows) == set(true[metric]), (metric, rows)
        for item, count in true[metric].items():
            r = rows[item]
            assert r["ci_low"] < r["estimate"] < r["ci_high"], (metric, item, r)
            assert abs(r["estimate"] - count) <= 4 * r["std_error"], (metric, item, r, count)


def test_devices_upload_and_the_dashboard_shows_estimates(tmp_path: Path) -> None:
    need_browser()
    from playwright.sync_api import sync_playwright

    from ldp.ingest.config import new_token

    t0 = time.monotonic()
    token = new_token()
    # segments open an hour: the reports wait for a fold until the ingest service stops
    config = write_ingest_config(tmp_path, APP, token, SPEC)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            with serve(config, tmp_path / "server.log") as served:
                reports = run_devices(tmp_path, served.url + "/v1/reports", token)
                assert reports == DAYS * DEVICES * len(METRICS)
                state = wait_for_waiting(served, reports)
                print(f"e2e: {reports} reports uploaded, waiting: {state['text']}")
                context = browser.new_context(viewport={"width": 1200, "height": 900})
                sign_in(context, served.url)
                page = context.new_page()
                page.goto(served.url + "/")
                waiting = artifact_dir(tmp_path) / "e2e-dashboard-waiting.png"
                page.screenshot(path=str(waiting), full_page=True)
                print(f"e2e: waiting screenshot: {waiting}")
                check_waiting(page, reports)
                context.close()
            assert served.proc.returncode in (0, -15), served.tail()  # a graceful stop closes the open segment

            with serve(config, tmp_path / "server.log") as served:
                folded = wait_for_fold(served, APP, reports, reports // len(METRICS), FOLD_TIMEOUT)
                print(f"e2e: {reports} reports uploaded and folded in {time.monotonic() - t0:.1f} s")
                errors: list[str] = []
                context = browser.new_context(viewport={"width": 1200, "height": 900})
                sign_in(context, served.url)
                page = context.new_page()
                page.on("console", lambda m: errors.append(f"{m.text} ({m.location.get('url')})")
                        if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
                response = page.goto(served.url + "/")
                assert response is not None and response.ok, response
                shot = artifact_dir(tmp_path) / "e2e-dashboard.png"  # first, so that a failure has its picture
                page.screenshot(path=str(shot), full_page=True)
                print(f"e2e: dashboard screenshot: {shot}")
                check_page(page, folded)
                assert errors == [], errors  # no console error or page error (the page declares no favicon)

                # without JavaScript (the page uses none): the same text
                context.close()
                nojs = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
                sign_in(nojs, served.url)  # a plain form: no script needed
                page2 = nojs.new_page()
                page2.goto(served.url + "/")
                check_page(page2, folded)
                nojs.close()

                # a phone-sized screen: the page itself never scrolls sideways (wide boxes scroll in place)
                phone = browser.new_context(viewport={"width": 380, "height": 800})
                sign_in(phone, served.url)
                page3 = phone.new_page()
                page3.goto(served.url + "/")
                narrow = artifact_dir(tmp_path) / "e2e-dashboard-380px.png"
                page3.screenshot(path=str(narrow), full_page=True)
                print(f"e2e: narrow screenshot: {narrow}")
                check_page(page3, folded)
                width = page3.evaluate("document.documentElement.scrollWidth")
                assert width <= 380, f"the page scrolls sideways at 380 px: scrollWidth {width}"
                phone.close()
        finally:
            browser.close()
    assert served.proc.returncode in (0, -15), served.tail()  # a graceful stop
    log = served.log.read_text(errors="replace")
    assert token not in log and ANALYST not in log
    print(f"e2e: total {time.monotonic() - t0:.1f} s")
