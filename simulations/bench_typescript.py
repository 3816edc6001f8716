"""TypeScript client section of ``simulations/benchmark.py`` (issue 47), registered by :func:`register`.

What one ``TelemetryClient.record`` costs in the web/Node client (``clients/typescript``) with 10, 1,000 and 10,000
reports already queued, for each state store: ``MemoryStore`` and ``FileStore`` in Node
(``scripts/bench-record.mjs``), and ``IndexedDBStore`` in headless Chromium (``bench/record.mjs`` loaded by a page
served from loopback, driven with Playwright). The outbox is appended to, never rewritten, so the cost must not grow
with the queue: the target is ``us(10,000 queued) <= 1.5 × us(10 queued)`` for every store (the 0.1 client, which
rewrote the whole state, took 4.25 ms per record at 4,000 queued in its file store). Also the bundle sizes
(``npm run size``: the whole browser client, the core, and a one-metric GRR page). Without ``node`` (or without the
built ``dist/``) the section says so; without Chromium or Playwright the IndexedDB rows say so.

Section ``web_dap`` (issue 87, item 6): two-aggregator reports in Node, ``ldp-telemetry-client/dap`` (the Rust client in
WebAssembly) beside divviup-ts (``@divviup/dap`` 0.9.1, ``tests/support/divviup``: ``npm ci`` there) in one process
(``bench_web_dap.mjs``: rounds alternating, each path warmed): the milliseconds of one Prio3Histogram report, sharding
and both seals, at 16 and 1,024 buckets, VDAF-08 for both (divviup-ts's draft) and draft 18 for ldp; the target is
``divviup_ms / ldp_ms >= 30`` at 1,024 buckets in the same draft.

And the per-report ``encode`` time in Node (``scripts/bench-encode.mjs``: the platform CSPRNG, each report turned into
its JSON text) on ``bench_kotlin.CASES``, beside the Kotlin client's ``EncodeBenchmark`` run just before it with the
same cases and number of calls, at least 800,000 so that the JVM is warmed (issue 61): the target is
``node_us <= 1.5 × kotlin_us`` for RAPPOR and OLH (GRR is recorded beside them). Without the Kotlin build (or
``java``) the Node figures stand alone.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

TS = Path(__file__).resolve().parents[1] / "clients" / "typescript"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
SIZES = (10, 1000, 10000)
PAGE = """<!doctype html><meta charset="utf-8"><script type="module">
import * as lib from "/dist/ldp-client.min.js";
import { benchRecord } from "/bench/record.mjs";
try { window.__result = await benchRecord(lib, (i) => new lib.IndexedDBStore("bench-" + i + "-" + Date.now()),
                                          { calls: CALLS }); }
catch (e) { window.__error = String(e && e.stack || e); }
</script>"""


def _built(b: ModuleType) -> str | None:
    """Why the client cannot be measured, or ``None`` once ``dist/`` is built."""
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        return "not measured: the TypeScript section needs node and npm"
    if not (TS / "node_modules").is_dir():
        b.log("  typescript: npm ci")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=TS, check=True, timeout=600)
    b.log("  typescript: npm run build")
    subprocess.run([npm, "run", "--silent", "build"], cwd=TS, check=True, timeout=600, capture_output=True)
    return None


def _indexeddb(calls: int) -> dict[str, Any] | str:
    """The IndexedDB rows, measured in headless Chromium, or why not."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "not measured: needs Playwright for Python (the test extra)"
    if not Path(CHROMIUM).exists():
        return f"not measured: needs Chromium at {CHROMIUM}"

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the base class's name
            if self.path.startswith("/index.html"):
                body = PAGE.replace("CALLS", str(calls)).encode()
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                super().do_GET()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(TS)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/index.html")
                page.wait_for_function("window.__result !== undefined || window.__error !== undefined",
                                       timeout=600_000)
                error = page.evaluate("window.__error")
                if error:
                    return f"failed: {error}"
                result: dict[str, Any] = page.evaluate("window.__result")
                return result
            finally:
                browser.close()
    finally:
        httpd.shutdown()


def _encode_rows(b: ModuleType, ctx: Any) -> dict[str, Any]:
    """µs per report in Node and (when built) in the Kotlin client, side by side, on ``bench_kotlin.CASES``."""
    from bench_kotlin import CASES, MAIN, kotlin_classpath

    # at least 800,000 calls: the JVM's figures settle only there (at bench_kotlin's 200,000 a pinned JVM still
    # compiles, and its RAPPOR mean is twice its settled one), and the target must hold against a warmed JVM
    calls = max(ctx.sizes.client_calls * 4, 800_000)
    kotlin: dict[str, Any] = {}
    cp, java = kotlin_classpath(), shutil.which("java")
    if cp is not None and java is not None:
        b.log(f"  typescript: kotlin encode, {calls:,} calls per case in a JVM")
        done = subprocess.run([java, "-cp", cp, MAIN, json.dumps(CASES), str(calls)], capture_output=True, text=True,
                              check=True, timeout=600)
        kotlin = json.loads(done.stdout.strip().splitlines()[-1])
    b.log(f"  typescript: node encode, {calls:,} calls per case")
    done = subprocess.run(["node", "scripts/bench-encode.mjs", json.dumps(CASES), str(calls)], cwd=TS,
                          capture_output=True, text=True, check=True, timeout=600)
    node: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    jvm = kotlin.pop("jvm", None) if kotlin else "not built: see the kotlin_client section"
    out: dict[str, Any] = {"calls": calls, "node": node.pop("node", None), "jvm": jvm, "loadavg": os.getloadavg(),
                           "cases": {}}
    for name, case in CASES.items():
        row: dict[str, Any] = {"protocol": case["protocol"], "params": case["params"], "node": node[name]}
        if name in kotlin:
            row["kotlin"] = kotlin[name]
            row["node_over_kotlin"] = node[name]["us_mean"] / kotlin[name]["us_mean"]
            if case["protocol"] in ("rappor", "olh"):
                row.update(ctx.judge(f"{name}.node_us_mean", node[name]["us_mean"], "<=",
                                     1.5 * kotlin[name]["us_mean"], "µs/report (1.5 × the Kotlin client's)"))
        out["cases"][name] = row
    return out


DIVVIUP = Path(__file__).resolve().parents[1] / "tests" / "support" / "divviup"


def _web_dap(b: ModuleType, ctx: Any) -> dict[str, Any]:
    """The ``web_dap`` section (module docstring)."""
    entry = DIVVIUP / "node_modules" / "@divviup" / "dap" / "dist" / "index.js"
    if not entry.exists():
        return {"reports": f"not measured: divviup-ts is not installed (npm ci in {DIVVIUP})"}
    why = _built(b)
    if why is not None:
        return {"reports": why}
    per_round, rounds = (10, 5) if ctx.quick else (30, 7)
    b.log(f"  web_dap: divviup-ts and ldp's WebAssembly, {rounds} rounds of {per_round} reports per path")
    done = subprocess.run(["node", str(Path(__file__).with_name("bench_web_dap.mjs")), str(entry),
                           str(TS / "dist" / "dap" / "index.js"), str(per_round), str(rounds)],
                          capture_output=True, text=True, check=True, timeout=1200)
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    for row in out["cases"]:
        ratio = row["divviup_ts_vdaf08"]["median_ms"] / row["ldp_wasm_vdaf08"]["median_ms"]
        row["divviup_over_ldp_vdaf08"] = ratio
        if row["buckets"] == 1024:
            out["divviup_over_ldp_1024_buckets"] = ratio
            out["faster_30x"] = ctx.judge("web_dap.divviup_over_ldp_1024_buckets", ratio, ">=", 30.0,
                                          "× (divviup-ts ms / ldp ms, VDAF-08, 1,024 buckets)")
    return out


def register(b: ModuleType) -> None:
    """Add the ``typescript_client`` and ``web_dap`` sections to the benchmark module ``b``."""

    @b.benchmark("web_dap")
    def web_dap(ctx: Any) -> dict[str, Any]:
        return _web_dap(b, ctx)

    @b.benchmark("typescript_client")
    def typescript_client(ctx: Any) -> dict[str, Any]:
        why = _built(b)
        if why is not None:
            return {"record": why}
        calls = max(50, min(400, ctx.sizes.client_calls // 10))
        b.log(f"  typescript: record cost, node stores, {calls} calls per queue length")
        done = subprocess.run(["node", "scripts/bench-record.mjs", str(calls)], cwd=TS, capture_output=True,
                              text=True, check=True, timeout=1200)
        stores: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        b.log("  typescript: record cost, IndexedDB in headless Chromium")
        stores["indexeddb"] = _indexeddb(calls)
        out: dict[str, Any] = {"calls": calls, "record": stores, "encode": _encode_rows(b, ctx)}
        for name, rows in stores.items():
            if isinstance(rows, dict):
                small, large = rows[str(SIZES[0])]["us_per_record"], rows[str(SIZES[-1])]["us_per_record"]
                out[f"{name}_growth_10k_over_10"] = large / small
                out.update({f"{name}_flat": ctx.judge(f"{name}.us_at_10000_queued", large, "<=", 1.5 * small,
                                                      "µs/record (1.5 × at 10 queued)")})
        size = subprocess.run(["node", "scripts/size.mjs"], cwd=TS, capture_output=True, text=True, timeout=600)
        try:
            out["bundle_bytes"] = json.loads(size.stdout)
        except json.JSONDecodeError:
            out["bundle_bytes"] = f"failed: {size.stderr.strip()[-300:]}"
        return out
