// The reader's `url` (src/otel/ingest-url.ts): refused when the reader is made unless it is an ingest service's upload
// endpoint (the Python client's ldp/otel/endpoint.py, the same rule), and an upload that fails logged through the
// OpenTelemetry diagnostic logger with its HTTP status and URL. Also the timed collection (`nextCollectionMillis`),
// which falls at each window's end.
import { test } from "node:test";
import assert from "node:assert/strict";

import { diag, DiagLogLevel } from "@opentelemetry/api";
import { MemoryStore } from "../dist/index.js";
import { INGEST_PATH, MIN_COLLECT_INTERVAL_MILLIS, PrivatizingMetricReader, checkIngestUrl, nextCollectionMillis }
  from "../dist/otel/index.js";
import { prng } from "../test-support/domain.mjs";
import { METRICS, W, app, specOf, stateOf } from "../test-support/otel-app.mjs";

const TOKEN = "t0ken-0123456789abcdef";
const SPEC = specOf({ crashed: METRICS.crashed });

for (const base of ["http://collector:8080", "http://collector:8080/", "https://ldp.example/telemetry",
  "https://ldp.example/v1/reports/", "https://ldp.example/v1"]) {
  test(`a base URL is refused when the reader is made, saying what was meant: ${base}`, async () => {
    const store = new MemoryStore();
    assert.throws(() => new PrivatizingMetricReader({ spec: SPEC, store, url: base, token: TOKEN }), (err) => {
      assert.ok(err instanceof RangeError);
      assert.match(err.message, /POST \/v1\/reports/);
      const meant = new URL(base).href.replace(/\/+$/, "") + INGEST_PATH;
      assert.ok(err.message.includes(`did you mean ${JSON.stringify(meant)}`), err.message);
      return true;
    });
    assert.equal(await stateOf(store), null); // refused before the device's state is touched
  });
}

test("the endpoint is accepted, one or a list; a bad one of a list is named; the upload's checks first", async () => {
  const good = ["https://a.example/v1/reports", "https://proxy.example/ldp/v1/reports?region=eu"];
  const reader = new PrivatizingMetricReader({ spec: SPEC, store: new MemoryStore(), url: good, token: TOKEN });
  await reader.client();
  assert.throws(() => checkIngestUrl([good[0], "https://b.example/"]), /^RangeError: url 1 "https:\/\/b.example\/"/);
  assert.throws(() => checkIngestUrl("ftp://a.example/v1/reports"), /http\(s\)/);
});

test("fuzzed URLs: accepted exactly when the path ends with /v1/reports; never the password or query shown", () => {
  const r = prng(88), pick = (xs) => xs[Math.floor(r() * xs.length)];
  const segments = ["v1", "reports", "api", "ldp", "v2", "report", "", "v1reports"];
  for (let i = 0; i < 2000; i++) {
    const path = Array.from({ length: Math.floor(r() * 5) }, () => "/" + pick(segments)).join("");
    const host = pick(["a", "ldp.example", "x-1.b.example", "127.0.0.1", "[::1]"]);
    const url = `${pick(["http", "https"])}://${pick(["", "me:s3cret@"])}${host}${pick(["", ":8080"])}${path}` +
      pick(["", "?a=k3y"]);
    const resolved = new URL(url).pathname;
    if (resolved.endsWith(INGEST_PATH)) {
      checkIngestUrl(url);
      continue;
    }
    assert.throws(() => checkIngestUrl(url), (err) => {
      assert.ok(!err.message.includes("s3cret") && !err.message.includes("k3y"), err.message);
      const meant = JSON.parse(err.message.split("did you mean ")[1].slice(0, -2));
      checkIngestUrl(meant); // what it suggests is accepted
      return true;
    }, url);
  }
});

test("a failed upload is logged with its HTTP status and URL, and the reports stay queued", async () => {
  const warnings = [];
  const sink = { warn: (m) => warnings.push(m), error: () => {}, info: () => {}, debug: () => {}, verbose: () => {} };
  diag.setLogger(sink, DiagLogLevel.WARN);
  try {
    const urls = [];
    const fetch = async (url) => {
      urls.push(url);
      return new Response(JSON.stringify({ error: "method_not_allowed" }), { status: 405 });
    };
    const url = "https://me:s3cret@ldp.example/v1/reports?key=k3y";
    const { provider, meter, clock, reader } = app({ spec: SPEC, url, token: TOKEN,
      uploadOptions: { fetch, gzip: false, sleep: async () => {}, maxAttempts: 1 } });
    meter.createCounter("app.crashes").add(1);
    clock.now += W;
    await provider.forceFlush();
    assert.ok(urls.length > 0 && urls.every((u) => u === url));
    const failed = warnings.filter((w) => w.includes("upload to"));
    assert.equal(failed.length, urls.length);
    for (const w of failed) {
      assert.match(w, /upload to https:\/\/ldp\.example\/v1\/reports failed: HTTP 405 \(method_not_allowed\)/);
      for (const secret of ["s3cret", "k3y", TOKEN]) assert.ok(!w.includes(secret), w);
    }
    assert.equal((await reader.pending()).length, 1); // queued for the next try
    await provider.shutdown();
  } finally {
    diag.disable();
  }
});

test("a timed collection falls at each window's end, never past it, never sooner than the shortest wait", () => {
  const r = prng(5);
  for (let i = 0; i < 5000; i++) {
    const window = [1, 60, 3600, 86_400][i % 4];
    const now = i % 7 === 0 ? Math.floor(r() * 1e5) * window : r() * 4e9;
    const every = MIN_COLLECT_INTERVAL_MILLIS + r() * 1e8;
    const wait = nextCollectionMillis(now, window, every);
    assert.ok(wait >= MIN_COLLECT_INTERVAL_MILLIS && wait <= every, `${now} ${window} ${every}: ${wait}`);
    const end = (Math.floor(now / window) + 1) * window;
    assert.ok(now + wait / 1000 <= end + MIN_COLLECT_INTERVAL_MILLIS / 1000 + 1e-6, `${now} ${window}: ${wait}`);
    if (wait < every && wait > MIN_COLLECT_INTERVAL_MILLIS) assert.ok(Math.abs(now + wait / 1000 - end) < 1e-6);
  }
});
