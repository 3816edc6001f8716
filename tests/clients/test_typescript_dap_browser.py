"""The TypeScript client's two-aggregator metrics in a real browser (issue 87): a page served from one loopback
origin (tests/clients/dap_page.html and dap_page.mjs, beside the built clients/typescript/dist) loads
``ldp-telemetry-client`` and its ``dap`` entry (the WebAssembly fetched from dist/dap/wasm) in headless Chromium,
makes simulated devices, each a ``TelemetryClient`` over a ``MemoryStore`` of its own, records the two metrics of
examples/two_aggregators.json with the task files ``ldp collect task`` writes, and uploads the reports to a loopback
``ldp`` leader paired with an ``ldp`` helper (tests/support/loopback_aggregators.py). The leader is another origin
than the page's, and ``Content-Type: application/dap-report`` is no CORS-safelisted type: every upload is preceded
by a preflight, which only the leader's CORS answers (:mod:`ldp.aggregators.cors`) let through. ``ldp collect``
then reads back exactly the sum of the measurements the devices made (no noise: the spec without its central
target; ``crashed``'s randomized bits spied on in the page). Each test pairs the two metrics with the two VDAF drafts
the other way round, so that each draft serves both an exact histogram and a locally randomized count; one Chromium
serves both tests.

CI builds the client first (.ci/run) and sets ``LDP_REQUIRE_TS_BUNDLE=1`` and ``LDP_REQUIRE_BROWSER=1``: without the
build or the browser these tests fail there instead of skipping."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.e2e import CHROMIUM, CHROMIUM_ARGS, artifact_dir, need_browser, static_site
from support.loopback_aggregators import LoopbackAggregators, TaskSpec

from ldp.spec import CollectionSpec

DIST = ROOT / "clients" / "typescript" / "dist"
WASM = DIST / "dap" / "wasm" / "ldp_dap_bg.wasm"
PAGE = Path(__file__).with_name("dap_page.html")
SCRIPT = Path(__file__).with_name("dap_page.mjs")
WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
DEVICES = 6


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module's tests; each test opens its page in a fresh context."""
    need_browser()
    if not (WASM.exists() and (DIST / "index.js").exists()):
        why = "the TypeScript client's dap entry is not built (npm run build in clients/typescript)"
        if os.environ.get("LDP_REQUIRE_TS_BUNDLE") == "1":
            pytest.fail(f"LDP_REQUIRE_TS_BUNDLE=1 but {why}", pytrace=False)
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def write_site(root: Path, doc: dict[str, Any], tasks: dict[str, str], labels: list[str]) -> Path:
    """The page's folder: the page, its script, the built client (``dist``, linked) and the job: each device's clock
    (in window ``T0``) and records (the third ``crashed`` over the metric's two a window: refused)."""
    site = root / "site"
    site.mkdir()
    (site / "index.html").write_text(PAGE.read_text())
    (site / "dap_page.mjs").write_text(SCRIPT.read_text())
    (site / "dist").symlink_to(DIST, target_is_directory=True)
    devices = [{"clock": T0 + 700 * d + 11, "records": [["search_engine", labels[d % 3]], ["crashed", d % 2 == 0],
                                                        ["crashed", d % 3 == 0], ["crashed", True]]}
               for d in range(DEVICES)]
    (site / "job.json").write_text(json.dumps({"spec": doc, "tasks": tasks, "devices": devices}))
    return site


def run_page(browser: Any, origin: str, shots: Path) -> dict[str, Any]:
    """The page's result (its devices' outcomes), with no console error or uncaught error on the page."""
    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.goto(f"{origin}/index.html")
        page.wait_for_function("window.__result !== undefined || window.__error !== undefined", timeout=180_000)
        page.screenshot(path=str(shots / "ts-dap-browser.png"))
        assert page.evaluate("window.__error === undefined"), page.evaluate("window.__error")
        assert errors == [], errors
        return dict(page.evaluate("window.__result"))
    finally:
        context.close()


@pytest.mark.parametrize("drafts", [{"search_engine": 18, "crashed": 8}, {"search_engine": 8, "crashed": 18}],
                         ids=["histogram-draft18-count-draft8", "histogram-draft8-count-draft18"])
def test_browser_devices_upload_across_origins_and_the_aggregators_count_exactly(
        tmp_path: Path, browser: Any, drafts: dict[str, int]) -> None:
    doc = json.loads((ROOT / "examples" / "two_aggregators.json").read_text())
    del doc["release"]
    spec = CollectionSpec.from_dict(doc)
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {
        "search_engine": TaskSpec("Prio3Histogram", draft=drafts["search_engine"], time_precision=3600),
        "crashed": TaskSpec("Prio3Count", draft=drafts["crashed"], time_precision=3600)}, collection=spec)
    agg.start_both()
    try:
        tasks = {m: (tmp_path / "deploy" / "collector" / f"{m}.task.json").read_text() for m in drafts}
        with static_site(write_site(tmp_path, doc, tasks, spec.params("search_engine").labels)) as origin:
            assert origin.rsplit(":", 1)[1] != str(agg.leader_port)  # another origin than the leader's
            result = run_page(browser, origin, artifact_dir(tmp_path))
        made: dict[str, list[Any]] = {"search_engine": [], "crashed": []}
        for device in result["devices"]:
            assert device["refused"] == [["crashed", "BudgetExceeded"]], device  # k = 2 a window
            assert (device["result"]["accepted"], device["result"]["stopped"], device["pending"]) == (3, "empty", 0)
            for metric, ms in device["made"].items():
                made[metric] += [m[0] for m in ms]
        assert made["search_engine"] == [d % 3 for d in range(DEVICES)]
        for metric, measurements in made.items():
            _, collected = agg.collect(metric, T0)
            assert collected is not None, agg.log("leader")
            assert collected["sums"] == spec.params(metric).prio3_fit().sums(measurements), metric
            assert collected["n"] == len(measurements) == DEVICES * (1 if metric == "search_engine" else 2)
            assert collected["refused"] == {}
    finally:
        agg.stop()
