"""The TypeScript client as a web developer gets it (issue 47): ``npm pack`` in ``clients/typescript``, the tarball
installed with ``npm install`` into a fresh Vite app (``tests/clients/vite_app``: Vite pinned by its lockfile, a
page importing ``ldp-telemetry-client/lite`` and the two protocols its spec names), ``vite build``, and the built app
served from its own origin and run in headless Chromium against a real ``python -m ldp serve``.

Checked: the package's files (no tests, no sources' maps of other folders; its README, CHANGELOG and ``bin``); the
built page ships only what it imports (its JavaScript under 20 kB gzipped, where every protocol is 28 kB); 60
devices record two metrics each into IndexedDB and upload them, every report accepted and acknowledged once; then one
more device records a value and the page is left at once: ``uploadWhenHidden`` sends it with a keepalive request
while the page goes, and the ingest service stores it.

CI sets ``LDP_REQUIRE_TS_BUNDLE=1``: without npm (or Chromium) this test fails there instead of skipping.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from support.e2e import CHROMIUM, CHROMIUM_ARGS, get_json, need_browser, serve, static_site, write_ingest_config

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"
FIXTURE = Path(__file__).with_name("vite_app")
APP = "vite"
DEVICES = 60
SPEC: dict[str, Any] = {
    "spec_version": 1, "name": "vite_app", "budget": {"per_window": 10.0, "lifetime": 100.0},
    "upload": {"min_interval_seconds": 0, "max_batch": 500},
    "metrics": {
        "theme": {"protocol": "grr", "params": {"epsilon": 2.0, "domain_size": 3, "labels": ["light", "dark", "auto"]},
                  "budget": {"per_report": 2.0}},
        "dark_mode": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
    },
}


def need_npm() -> str:
    npm = shutil.which("npm")
    if npm is not None and shutil.which("node") is not None:
        return npm
    reason = "the package test needs node and npm"
    if os.environ.get("LDP_REQUIRE_TS_BUNDLE") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def npm_run(npm: str, args: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run([npm, *args, "--no-audit", "--no-fund", "--loglevel=error"], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"npm {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def pack(npm: str, dest: Path) -> Path:
    """``npm pack`` of the client as built (``--ignore-scripts``) into ``dest``. Its ``prepack`` would rebuild
    ``dist/`` in place while other workers' tests run node over it (a module half written: "does not provide an
    export named ..."), so the build is the one CI made before the suite (or ``npm run build`` by hand)."""
    if not (CLIENT / "dist" / "index.js").is_file():
        reason = "the TypeScript client is not built (npm run build in clients/typescript)"
        if os.environ.get("LDP_REQUIRE_TS_BUNDLE") == "1":
            pytest.fail(f"LDP_REQUIRE_TS_BUNDLE=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    out = npm_run(npm, ["pack", "--ignore-scripts", "--pack-destination", str(dest)], CLIENT)
    tarball = dest / out.strip().splitlines()[-1]
    assert tarball.exists(), out
    return tarball


def folded_reports(port: int, app: str) -> int:
    status, body = get_json(port, "/v1/estimates")
    doc = body.get("apps", {}).get(app) if status == 200 else None
    return int(doc.get("accepted", 0)) if doc else 0


@pytest.fixture(scope="session", name="tarball")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client's tarball, packed once for the run: under xdist, the workers of one run share it (their base
    folders' parent, keyed by the run's id), taking turns under a lock."""
    import fcntl

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent / f"ldp-packed-{run}" if run else base / "ldp-packed"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(shared.glob("*.tgz"))
        return found[0] if found else pack(need_npm(), shared)


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
def test_the_packed_client_in_a_fresh_vite_app_records_and_uploads_from_headless_chromium(tmp_path: Path,
                                                                                       tarball: Path) -> None:
    npm = need_npm()
    need_browser()
    from playwright.sync_api import sync_playwright

    from ldp.ingest.config import new_token

    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    wanted_files = ("package.json", "README.md", "CHANGELOG.md", "bin/ldp-spec-types.mjs", "dist/index.js",
                    "dist/lite.js", "dist/protocols/index.js", "dist/node.js", "dist/index.d.ts",
                    "dist/otel/index.js", "dist/otel/index.d.ts")
    for wanted in (f"package/{name}" for name in wanted_files):
        assert wanted in names, (wanted, sorted(names)[:20])
    assert not any(n.startswith(("package/test", "package/src", "package/node_modules")) for n in names), names

    app = tmp_path / "app"
    shutil.copytree(FIXTURE, app, ignore=shutil.ignore_patterns("node_modules", "dist"))
    devices = [[["theme", ["light", "dark", "auto"][d % 3]], ["dark_mode", d % 4 == 0]] for d in range(DEVICES)]
    (app / "collection.json").write_text(json.dumps(SPEC))
    (app / "devices.json").write_text(json.dumps(devices))
    npm_run(npm, ["ci"], app)
    npm_run(npm, ["install", str(tarball)], app)
    npm_run(npm, ["run", "build"], app)
    scripts = list((app / "dist" / "assets").glob("*.js"))
    shipped = sum(len(gzip.compress(p.read_bytes(), 9)) for p in scripts)
    assert 0 < shipped <= 20 * 1024, f"the page ships {shipped} bytes of gzipped JavaScript"

    token = new_token()
    recorded = DEVICES * 2
    with static_site(app / "dist") as origin, sync_playwright() as p:
        config = write_ingest_config(tmp_path, APP, token, SPEC, cors_origin=origin)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            with serve(config, tmp_path / "server.log") as served:
                errors: list[str] = []
                page = browser.new_page()
                page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
                page.goto(f"{origin}/index.html?collector={served.url}/v1/reports&token={token}")
                page.wait_for_function("window.ready === true", timeout=60_000)
                result = page.evaluate("window.runDevices()")
                assert result["recorded"] == result["acknowledged"] == result["accepted"] == recorded, result
                assert page.evaluate("window.recordThenLeave('theme', 'dark')") == 1
                page.goto("about:blank")  # pagehide: the keepalive request outlives the page
                assert errors == [], errors
            with serve(config, tmp_path / "server.log") as served:  # the stop closed the segment: fold it
                deadline = time.monotonic() + 30
                while folded_reports(served.port, APP) < recorded + 1 and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert folded_reports(served.port, APP) == recorded + 1, "the report sent as the page went is stored"
        finally:
            browser.close()


OTEL_FIXTURE = Path(__file__).with_name("vite_otel_app")
OTEL_SPEC: dict[str, Any] = {
    "spec_version": 1, "name": "vite_otel_app", "budget": {"per_window": 10.0, "lifetime": 100.0},
    "upload": {"min_interval_seconds": 0, "max_batch": 500},
    "metrics": {
        "screen": {"protocol": "grr", "params": {"epsilon": 2.0, "domain_size": 3,
                                                 "labels": ["home", "search", "cart"]},
                   "budget": {"per_report": 2.0}, "otel": {"instrument": "ui.screen.views", "kind": "counter",
                                                           "value": "attribute", "attribute": "screen"}},
        "crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1},
                    "otel": {"instrument": "app.crashes", "kind": "counter", "value": "any"}},
    },
}
UNDECLARED = (b"purchase", b"4111", b"129.99", b"checkout", b"812.5", b"alice", b"vite-shop")
"""What the app's undeclared instruments hold (names, values, attributes) and its meter's name."""


@pytest.mark.heavy
def test_a_vite_app_instrumented_with_opentelemetry_adds_the_packed_reader_and_only_reports_leave(
        tmp_path: Path, tarball: Path) -> None:
    """The packed client's ``/otel`` entry beside ``@opentelemetry/sdk-metrics`` in a fresh Vite app (its own
    lockfile), built by Vite and run in headless Chromium: 40 devices measure with plain OpenTelemetry code, the reader
    reports the declared instruments when the window ends and uploads them to ``ldp serve``; every request body the
    page sends (read by Playwright) holds the declared metrics' reports only."""
    npm = need_npm()
    need_browser()
    from playwright.sync_api import sync_playwright

    from ldp.ingest.config import new_token

    app = tmp_path / "app"
    shutil.copytree(OTEL_FIXTURE, app, ignore=shutil.ignore_patterns("node_modules", "dist"))
    devices = [{"screen": ["search", "cart", "search"][d % 3], "crashed": d % 4 == 0} for d in range(40)]
    (app / "collection.json").write_text(json.dumps(OTEL_SPEC))
    (app / "devices.json").write_text(json.dumps(devices))
    npm_run(npm, ["ci"], app)
    npm_run(npm, ["install", str(tarball)], app)
    npm_run(npm, ["run", "build"], app)

    token = new_token()
    bodies: list[bytes] = []
    with static_site(app / "dist") as origin, sync_playwright() as p:
        config = write_ingest_config(tmp_path, APP, token, OTEL_SPEC, cors_origin=origin)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            with serve(config, tmp_path / "server.log") as served:
                errors: list[str] = []
                page = browser.new_page()
                page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
                page.on("request", lambda r: bodies.append(r.post_data_buffer or b"") if r.method == "POST" else None)
                page.goto(f"{origin}/index.html?collector={served.url}/v1/reports&token={token}")
                page.wait_for_function("window.ready === true", timeout=60_000)
                result = page.evaluate("window.runDevices()")
                assert errors == [], errors
            with serve(config, tmp_path / "server.log") as served:  # the stop closed the segment: fold it
                deadline = time.monotonic() + 30
                while folded_reports(served.port, APP) < 2 * len(devices) and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert folded_reports(served.port, APP) == 2 * len(devices)
        finally:
            browser.close()
    assert result["recorded"] == 2 * len(devices) and result["notRecorded"] == [] and result["pending"] == 0, result
    assert result["misfits"] == 0 and len(set(result["windows"])) == 1, result
    lines = [json.loads(line) for body in bodies for line in (gzip.decompress(body) if body[:2] == b"\x1f\x8b"
                                                             else body).splitlines() if line.strip()]
    assert len(lines) == 2 * len(devices) and {e["metric"] for e in lines} == {"screen", "crashed"}
    sent = b"\n".join(bodies)
    for needle in UNDECLARED:
        assert needle not in sent, needle

