// The privatizing MetricReader (src/otel/reader.ts) in a real OpenTelemetry JS SDK (@opentelemetry/sdk-metrics):
// undeclared instruments never reach a report, the device's state or an upload; each `value` of the spec's `otel`
// table becomes the window's value as Python's ldp/otel/window.py says; the ledger is charged each metric's
// per-report cost once per window, the reports carrying their window; a restart mid-window continues the tally;
// closeWindow and reportOnShutdown; misfits dropped and listed; construction refusals.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  AggregationTemporality, AggregationType, InstrumentType, MeterProvider,
} from "@opentelemetry/sdk-metrics";
import { CollectionSpec, KeyedRandomSource, MemoryStore, SpecError, TelemetryClient } from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import * as otelEntry from "../dist/otel/index.js";
import { CollectionSpec as SpecOtel } from "../dist/spec-otel.js";
import { FakeIndexedDB, install, uninstall } from "../test-support/fake-indexeddb.mjs";

const { DEFAULT_COLLECT_INTERVAL_MILLIS, PrivatizingMetricReader } = otelEntry;

const W = 3600; // the spec's window
const START = 500_000 * W + 10; // ten seconds into window 500000
const LN3 = 1.0986122886681098; // what one rr report of p 0.25, q 0.75 costs

const METRICS = {
  screen: { protocol: "grr", params: { epsilon: 1, domain_size: 3, labels: ["home", "search", "profile"] }, budget: { per_report: 1 },
    otel: { instrument: "app.screen.views", kind: "counter", value: "attribute", attribute: "screen" } },
  crashed: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: LN3 },
    otel: { instrument: "app.crashes", kind: "counter", value: "any" } },
  errors2: { protocol: "grr", params: { epsilon: 1, domain_size: 2 }, budget: { per_report: 1 },
    otel: { instrument: "app.errors", kind: "histogram", value: "any" } },
  opened: { protocol: "duchi", params: { epsilon: 1, low: 0, high: 10, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "files.opened", kind: "counter", value: "sum" } },
  depth: { protocol: "hybrid", params: { epsilon: 1, low: -10, high: 10, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "queue.depth", kind: "updown_counter", value: "sum" } },
  battery: { protocol: "duchi", params: { epsilon: 1, low: 0, high: 100, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "battery.level", kind: "gauge", value: "last" } },
  startup: { protocol: "duchi", params: { epsilon: 1, low: 0, high: 10, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "startup.seconds", kind: "histogram", value: "mean" } },
  latency: { protocol: "grr", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 },
    otel: { instrument: "http.client.duration", kind: "histogram", value: "bucket", buckets: [100, 250] } },
  theme: { protocol: "oue", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 },
    otel: { instrument: "ui.theme", kind: "histogram", value: "attribute", attribute: "theme", values: ["dark", "light", "café"] } },
  query: { protocol: "cms", params: { epsilon: 2, width: 8, num_hashes: 2 }, budget: { per_report: 2 },
    otel: { instrument: "search.queries", kind: "counter", value: "attribute", attribute: "q" } },
  plain: { protocol: "grr", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 } },
};

function specOf(metrics = METRICS, extra = {}) {
  return CollectionSpec.fromDict({ spec_version: 1, name: "otel_app", window_seconds: W,
    budget: { per_window: 100, lifetime: 10_000 }, upload: { min_interval_seconds: 0, max_batch: 100 }, metrics, ...extra });
}

/** Every `TelemetryClient.record` call of the test: its metric, value and the client's clock then. */
let records = [];
const realRecord = TelemetryClient.prototype.record;
TelemetryClient.prototype.record = function (metric, value) {
  records.push({ metric, value, at: this.clock() });
  return realRecord.call(this, metric, value);
};
afterEach(() => {
  records = [];
});

const recordedIn = (window) => Object.fromEntries(records.filter((r) => Math.floor(r.at / W) === window).map((r) => [r.metric, r.value]));

/** A fake `ldp serve`: every body it was sent, each answered as the collector does. */
function collector({ failFirst = 0 } = {}) {
  const bodies = [];
  let calls = 0;
  const fetch = async (url, init) => {
    calls += 1;
    if (calls <= failFirst) throw new TypeError("network down");
    const text = String(init.body);
    bodies.push(text);
    const lines = text.trimEnd().split("\n").length;
    return new Response(JSON.stringify({ batch_id: init.headers["ldp-batch-id"], accepted: lines, rejected: {}, lines }), { status: 200 });
  };
  return { bodies, fetch, upload: { fetch, gzip: false, sleep: async () => {}, maxAttempts: 1 } };
}

/** The device's outbox: each envelope. */
async function outbox(store) {
  const items = await store.transact((tx) => tx.head(tx.pending), { readOnly: true, head: Infinity });
  return items.map((i) => JSON.parse(i.line));
}

const stateOf = (store) => store.transact((tx) => tx.state, { readOnly: true });

/** An app's OpenTelemetry setup with the reader: a clock the test moves, a device seeded for repeatability. */
function app({ spec = specOf(), store = new MemoryStore(), clock = { now: START }, seed = "device", ...options } = {}) {
  const reader = new PrivatizingMetricReader({ spec, store, clock: () => clock.now, collectIntervalMillis: 0,
    rng: new KeyedRandomSource(new TextEncoder().encode(seed), new Uint8Array(1)), ...options });
  const provider = new MeterProvider({ readers: [reader] });
  return { reader, provider, meter: provider.getMeter("test-app"), store, clock, spec };
}

test("the entry: the reader, the spec that reads otel keys, the defaults", () => {
  assert.equal(otelEntry.CollectionSpec, SpecOtel);
  assert.equal(DEFAULT_COLLECT_INTERVAL_MILLIS, 60_000);
  for (const name of ["declaredMetrics", "WindowTally", "bucketMap", "TALLY_FORMAT", "OTEL_VALUE_CLASSES"]) assert.ok(name in otelEntry, name);
});

test("the SDK is asked: delta temporality; the drop aggregation for types nothing declares; the spec's bounds for histograms", () => {
  const only = specOf({ screen: METRICS.screen, latency: METRICS.latency, startup: METRICS.startup,
    other: { ...METRICS.latency, otel: { ...METRICS.latency.otel, instrument: "other.duration", buckets: [5, 100] } } });
  const { reader } = app({ spec: only });
  for (const type of Object.values(InstrumentType)) assert.equal(reader.selectAggregationTemporality(type), AggregationTemporality.DELTA);
  for (const type of [InstrumentType.GAUGE, InstrumentType.OBSERVABLE_GAUGE, InstrumentType.UP_DOWN_COUNTER,
    InstrumentType.OBSERVABLE_UP_DOWN_COUNTER]) {
    assert.deepEqual(reader.selectAggregation(type), { type: AggregationType.DROP }, type);
  }
  assert.deepEqual(reader.selectAggregation(InstrumentType.COUNTER), { type: AggregationType.DEFAULT });
  assert.deepEqual(reader.selectAggregation(InstrumentType.OBSERVABLE_COUNTER), { type: AggregationType.DEFAULT });
  assert.deepEqual(reader.selectAggregation(InstrumentType.HISTOGRAM),
    { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: [5, 100, 250], recordMinMax: false } });
});

test("undeclared instruments never reach a recorded report, the device's state or an upload body", async () => {
  const fake = collector();
  const { reader, provider, meter, store, clock } = app({ url: "http://collector.test/v1/reports", token: "t0ken-0123456789abcdef",
    uploadOptions: fake.upload });
  const secrets = ["secret.", "SECRET-SCREEN", "hunter2", "31337.25", "27182.5", "4242.75", "1618.5"];
  const views = meter.createCounter("app.screen.views");
  const duration = meter.createHistogram("http.client.duration");
  const level = meter.createGauge("battery.level");
  // the app's own instruments, which the spec does not declare: of declared types, and of others
  const clicks = meter.createCounter("secret.clicks");
  const timing = meter.createHistogram("secret.timing");
  const temperature = meter.createGauge("secret.temperature"); // a gauge: declared type (battery.level)
  const pending = meter.createUpDownCounter("secret.pending", {}); // up-down: declared type (queue.depth)
  meter.createObservableCounter("secret.observed").addCallback((r) => r.observe(4242.75, { user: "hunter2" }));
  meter.createObservableUpDownCounter("secret.observed.updown").addCallback((r) => r.observe(1618.5));
  for (let w = 0; w < 3; w++) {
    views.add(2, { screen: "search" });
    views.add(1, { screen: "home" });
    clicks.add(31337.25, { screen: "SECRET-SCREEN", user: "hunter2" });
    duration.record(120);
    timing.record(31337.25, { user: "hunter2" });
    level.record(40 + w);
    temperature.record(27182.5, { room: "secret" });
    pending.add(1618.5, { queue: "secret" });
    await provider.forceFlush();
    const state = JSON.stringify(await stateOf(store));
    for (const s of secrets) assert.ok(!state.includes(s), `the state holds ${s}`);
    assert.match(state, /"battery":\[/); // the declared ones are kept
    clock.now += W;
    await provider.forceFlush();
  }
  await provider.shutdown();
  const declared = new Set(Object.keys(METRICS).filter((m) => METRICS[m].otel));
  assert.ok(records.length > 0);
  for (const r of records) {
    assert.ok(declared.has(r.metric), r.metric);
    assert.ok(![31337.25, 27182.5, 4242.75, 1618.5].includes(r.value), JSON.stringify(r));
  }
  assert.equal(fake.bodies.length, 3);
  const lines = fake.bodies.flatMap((b) => b.trimEnd().split("\n"));
  assert.equal(lines.length, records.length);
  for (const body of fake.bodies) for (const s of secrets) assert.ok(!body.includes(s), `an upload holds ${s}`);
  assert.deepEqual(new Set(lines.map((l) => JSON.parse(l).metric)), new Set(["screen", "crashed", "errors2", "opened", "depth", "latency", "battery"]));
  assert.deepEqual(reader.misfits, new Map());
  assert.equal(await (await reader.client()).pending(), 0);
});

test("each value of the spec's otel table becomes the window's value as Python's window.py says", async () => {
  const { reader, provider, meter, clock } = app();
  const views = meter.createCounter("app.screen.views");
  views.add(2, { screen: "profile" });
  views.add(3, { screen: "search" });
  views.add(7, { other: "home" }); // without the attribute: says nothing of it
  views.add(9, { screen: "settings" }); // not a category: unfit
  meter.createCounter("APP.Crashes").add(1); // names match without case, as OpenTelemetry's
  meter.createHistogram("app.errors").record(3);
  const opened = meter.createCounter("files.opened");
  opened.add(2);
  opened.add(4.5, { kind: "doc" });
  const depth = meter.createUpDownCounter("queue.depth");
  depth.add(4);
  depth.add(-7);
  let battery = 80;
  meter.createObservableGauge("battery.level").addCallback((r) => r.observe(battery));
  const startup = meter.createHistogram("startup.seconds");
  startup.record(1);
  startup.record(2);
  const duration = meter.createHistogram("http.client.duration");
  for (const ms of [50, 120, 130, 300]) duration.record(ms);
  const theme = meter.createHistogram("ui.theme");
  theme.record(1, { theme: "dark" });
  for (let i = 0; i < 3; i++) theme.record(1, { theme: "café" });
  const queries = meter.createCounter("search.queries");
  queries.add(2, { q: "b" });
  queries.add(2, { q: "a" });
  await provider.forceFlush(); // one collection in the middle of the window: the tally adds them all up
  battery = 70;
  opened.add(0.5);
  startup.record(1.5);
  views.add(1, { screen: "profile" });
  await provider.forceFlush(); // collected in the window (what a collection brings after the window ended goes to the next)
  clock.now += W;
  await provider.forceFlush();
  const got = recordedIn(500_000);
  assert.deepEqual(got, {
    screen: 1, // search 3 and profile 2 + 1 tie: the lowest category (search, index 1)
    crashed: true, // any, of a counter, for rr: a boolean
    errors2: 1, // any, of a histogram, for a protocol of 2 categories: index 1
    opened: 7, // sum
    depth: -3, // sum of an up-down counter
    battery: 70, // last: the latest collection's
    startup: 1.5, // mean: (1 + 2 + 1.5) / 3
    latency: 1, // bucket: (100, 250] holds 2 of 4
    theme: 2, // attribute over the spec's values: café, index 2
    query: "a", // attribute over strings: a tie, the smallest
  });
  assert.deepEqual(reader.reported, [{ window: 500_000, outcome: Object.fromEntries(Object.keys(got).sort().map((m) => [m, "recorded"])), unfit: 1 }]);
  // every report of the window was recorded at the window's last millisecond
  assert.ok(records.every((r) => r.at === 500_001 * W - 0.001), JSON.stringify(records.map((r) => r.at)));
  // the next window: nothing measured, so only any (false) and sum (0) have values, and last, of an observable gauge
  clock.now += W;
  await provider.forceFlush();
  assert.deepEqual(recordedIn(500_001), { crashed: false, errors2: 0, opened: 0, depth: 0, battery: 70 });
  await provider.shutdown();
});

test("the ledger is charged each metric's per-report cost once per window, and the reports carry their window", async () => {
  const metrics = { screen: METRICS.screen, crashed: METRICS.crashed, opened: METRICS.opened, battery: METRICS.battery };
  const { reader, provider, meter, store, clock, spec } = app({ spec: specOf(metrics) });
  const views = meter.createCounter("app.screen.views");
  const opened = meter.createCounter("files.opened");
  const level = meter.createGauge("battery.level");
  const windows = [500_000, 500_001, 500_002, 500_003];
  for (const w of windows) {
    views.add(1, { screen: "home" });
    opened.add(3);
    if (w !== 500_002) level.record(50); // a window without a gauge point has no `last` value: nothing charged
    await provider.forceFlush();
    clock.now += W;
    await provider.forceFlush(); // as a collector running every minute would, before the next window's measurements
  }
  await provider.forceFlush();
  await provider.shutdown();
  const client = await reader.client();
  const costs = Object.fromEntries(Object.keys(metrics).map((m) => [m, spec.params(m).privacyCost.epsilon]));
  assert.deepEqual(costs, { screen: 1, crashed: LN3, opened: 1, battery: 1 }); // each per_report is its cost
  const times = { screen: 4, crashed: 4, opened: 4, battery: 3 };
  let total = 0;
  for (const [m, n] of Object.entries(times)) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += costs[m];
    assert.deepEqual(await client.spent(m, "lifetime"), { epsilon: sum, delta: 0 }, m);
    total += sum;
  }
  assert.ok(Math.abs((await client.spent("*", "lifetime")).epsilon - total) < 1e-12);
  const envelopes = await outbox(store);
  assert.equal(envelopes.length, 15);
  for (const w of windows) {
    const metricsOf = envelopes.filter((e) => e.window === w).map((e) => e.metric).sort();
    assert.deepEqual(metricsOf, w === 500_002 ? ["crashed", "opened", "screen"] : ["battery", "crashed", "opened", "screen"], String(w));
  }
  assert.deepEqual(reader.reported.map((r) => r.window), windows);
  // the state's ledger: each metric's window is the last reported, charged its cost once
  const state = await stateOf(store);
  assert.deepEqual(state.totals.screen, { window: 500_003, spent: [1, 0], lifetime: [4, 0] });
});

test("a metric whose budget is spent is skipped for the window, never charged past it", async () => {
  const metrics = { opened: { ...METRICS.opened, budget: { per_report: 1, lifetime: 2 } }, crashed: METRICS.crashed };
  const { reader, provider, meter, clock } = app({ spec: specOf(metrics) });
  const opened = meter.createCounter("files.opened");
  for (let i = 0; i < 3; i++) {
    opened.add(1);
    await provider.forceFlush();
    clock.now += W;
    await provider.forceFlush();
  }
  assert.deepEqual(reader.reported.map((r) => r.outcome), [
    { crashed: "recorded", opened: "recorded" }, { crashed: "recorded", opened: "recorded" }, { crashed: "recorded", opened: "budget" }]);
  assert.deepEqual(await (await reader.client()).spent("opened", "lifetime"), { epsilon: 2, delta: 0 });
  await provider.shutdown();
});

test("a restart mid-window continues the tally (a FileStore); a window that ended while nothing ran is reported at the next start", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-otel-"));
  try {
    const clock = { now: START };
    const spec = specOf({ opened: METRICS.opened, startup: METRICS.startup, screen: METRICS.screen });
    const first = app({ spec, store: new FileStore(dir), clock });
    first.meter.createCounter("files.opened").add(3);
    first.meter.createHistogram("startup.seconds").record(1);
    first.meter.createCounter("app.screen.views").add(2, { screen: "profile" });
    clock.now += 60;
    await first.provider.shutdown(); // collects, keeps the tally, reports nothing: the window goes on
    assert.deepEqual(first.reader.reported, []);
    assert.equal(records.length, 0);

    const second = app({ spec, store: new FileStore(dir), clock }); // another process on the same device
    second.meter.createCounter("files.opened").add(4);
    second.meter.createHistogram("startup.seconds").record(4);
    second.meter.createCounter("app.screen.views").add(1, { screen: "search" });
    await second.provider.forceFlush();
    assert.deepEqual(records, []);
    clock.now += W;
    await second.provider.forceFlush();
    assert.deepEqual(recordedIn(500_000), { opened: 7, startup: 2.5, screen: 2 });
    second.meter.createCounter("files.opened").add(5); // in window 500001
    await second.provider.shutdown();

    clock.now += 3 * W; // nothing runs for three windows
    const third = app({ spec, store: new FileStore(dir), clock });
    await third.reader.client(); // opening the state reports the window that ended
    assert.deepEqual(recordedIn(500_001), { opened: 5 });
    assert.ok(records.filter((r) => Math.floor(r.at / W) === 500_001).every((r) => r.at === 500_002 * W - 0.001));
    assert.deepEqual(third.reader.reported.map((r) => r.window), [500_001]);
    await third.provider.shutdown();
    const envelopes = await outbox(new FileStore(dir));
    assert.deepEqual(envelopes.map((e) => [e.window, e.metric]), [[500_000, "opened"], [500_000, "screen"], [500_000, "startup"], [500_001, "opened"]]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("closeWindow reports the window now, with the client's own clock, and drops the rest of it", async () => {
  const { reader, provider, meter, clock } = app({ spec: specOf({ opened: METRICS.opened, crashed: METRICS.crashed }) });
  const opened = meter.createCounter("files.opened");
  opened.add(2);
  assert.deepEqual(await reader.closeWindow(), { crashed: "recorded", opened: "recorded" });
  assert.deepEqual(records.map((r) => [r.metric, r.value, r.at]), [["crashed", false, START], ["opened", 2, START]]);
  assert.deepEqual(await reader.closeWindow(), {}); // closed already
  opened.add(5); // later in the closed window: dropped
  await provider.forceFlush();
  clock.now += W;
  await provider.forceFlush(); // the closed window is not reported again
  assert.deepEqual(reader.reported.map((r) => r.window), [500_000]);
  opened.add(1);
  await provider.forceFlush();
  clock.now += W;
  await provider.forceFlush();
  assert.deepEqual(recordedIn(500_001), { crashed: false, opened: 1 });
  assert.deepEqual(await (await reader.client()).spent("opened", "lifetime"), { epsilon: 2, delta: 0 });
  await provider.shutdown();
});

test("reportOnShutdown reports the window at shutdown; a restart in the same window reports it no more", async () => {
  const store = new MemoryStore(), clock = { now: START };
  const spec = specOf({ opened: METRICS.opened });
  const first = app({ spec, store, clock, reportOnShutdown: true });
  first.meter.createCounter("files.opened").add(3);
  await first.provider.shutdown();
  assert.deepEqual(records.map((r) => [r.metric, r.value, r.at]), [["opened", 3, START]]);
  assert.deepEqual(first.reader.reported, [{ window: 500_000, outcome: { opened: "recorded" }, unfit: 0 }]);

  clock.now += 600;
  const second = app({ spec, store, clock, reportOnShutdown: true });
  second.meter.createCounter("files.opened").add(4); // the window was reported: dropped
  await second.provider.forceFlush();
  assert.match(JSON.stringify((await stateOf(store)).otel), /"closed":true/);
  await second.provider.shutdown();
  assert.equal(records.length, 1);
  clock.now += W;
  const third = app({ spec, store, clock, reportOnShutdown: true });
  third.meter.createCounter("files.opened").add(6);
  await third.provider.shutdown();
  assert.deepEqual(records.map((r) => [r.metric, r.value]), [["opened", 3], ["opened", 6]]);
  assert.equal((await outbox(store)).length, 2);
});

test("a declared instrument measured as another kind is dropped and listed, its metrics not reported; the others go on", async () => {
  const spec = specOf({ opened: METRICS.opened, depth: METRICS.depth, crashed: METRICS.crashed });
  const { reader, provider, meter, clock } = app({ spec });
  meter.createUpDownCounter("files.opened").add(5); // declared a counter
  meter.createCounter("queue.depth").add(2); // declared an up-down counter
  meter.createCounter("app.crashes").add(1);
  await provider.forceFlush();
  assert.deepEqual(reader.misfits, new Map([
    ["files.opened", "declared as a counter, collected as updown_counter"],
    ["queue.depth", "declared as a updown_counter, collected as counter"],
  ]));
  clock.now += W;
  await provider.forceFlush();
  assert.deepEqual(recordedIn(500_000), { crashed: true }); // the misfits' metrics are not reported (not even their 0)
  await provider.shutdown();
});

test("what a collection brings after the window ended counts in the window it began in", async () => {
  const { reader, provider, meter, clock } = app({ spec: specOf({ opened: METRICS.opened, battery: METRICS.battery }) });
  await reader.client(); // the device's state is open (at a window's end a reader opening reports the window that ended)
  const opened = meter.createCounter("files.opened");
  opened.add(2);
  meter.createGauge("battery.level").record(30);
  clock.now += W; // the window ends before the next collection
  await provider.forceFlush();
  assert.deepEqual(recordedIn(500_000), { opened: 2, battery: 30 });
  opened.add(1);
  clock.now += W;
  await provider.forceFlush();
  assert.deepEqual(recordedIn(500_001), { opened: 1 });
  await provider.shutdown();
});

test("pending and spent: the exact lines that will leave the device, and what the ledger charged", async () => {
  const { reader, provider, meter, clock } = app({ spec: specOf({ opened: METRICS.opened, crashed: METRICS.crashed }) });
  meter.createCounter("files.opened").add(2);
  assert.deepEqual(await reader.pending(), []); // (the device's state is open)
  clock.now += W;
  await provider.forceFlush();
  const lines = await reader.pending();
  assert.deepEqual(lines.map((l) => [JSON.parse(l).metric, JSON.parse(l).window]), [["crashed", 500_000], ["opened", 500_000]]);
  assert.deepEqual(await reader.spent("opened", "lifetime"), { epsilon: 1, delta: 0 });
  assert.deepEqual(await reader.spent(undefined, "lifetime"), { epsilon: 1 + LN3, delta: 0 });
  assert.deepEqual(await reader.spent(), { epsilon: 0, delta: 0 }); // nothing in the window now
  await provider.shutdown();
});

test("the store: IndexedDB's by default where the platform has one; elsewhere it must be given", async () => {
  const spec = specOf({ opened: METRICS.opened });
  assert.throws(() => new PrivatizingMetricReader({ spec }), { name: "RangeError", message: /give the device's store: there is no IndexedDB here/ });
  const idb = new FakeIndexedDB();
  install();
  globalThis.indexedDB = idb;
  try {
    const clock = { now: START };
    const reader = new PrivatizingMetricReader({ spec, clock: () => clock.now, collectIntervalMillis: 0 });
    const provider = new MeterProvider({ readers: [reader] });
    provider.getMeter("m").createCounter("files.opened").add(3);
    await provider.forceFlush();
    const [[key, value]] = idb.records("state");
    assert.equal(key, otelEntry.DEFAULT_STORE_KEY);
    assert.equal(JSON.parse(value).device.otel.totals.opened, 3);
    clock.now += W;
    await provider.shutdown();
    assert.equal(idb.records("outbox").length, 1);
  } finally {
    delete globalThis.indexedDB;
    uninstall();
  }
});

test("construction refuses a spec that declares no instrument, instruments it does not declare, bad options", () => {
  const store = new MemoryStore();
  const none = specOf({ plain: METRICS.plain });
  assert.throws(() => new PrivatizingMetricReader({ spec: none, store }),
    { name: "RangeError", message: /spec "otel_app" declares no OpenTelemetry instrument: give a metric an "otel" key/ });
  const spec = specOf();
  assert.throws(() => new PrivatizingMetricReader({ spec, store, instruments: ["files.opened", "nope", "Other/x", "nope"] }),
    { name: "RangeError", message: /no metric of spec "otel_app" declares instrument\(s\) Other\/x, nope: add an "otel" key/ });
  assert.throws(() => new PrivatizingMetricReader({ spec, store, url: "http://c/v1/reports" }), /url and token together/);
  assert.throws(() => new PrivatizingMetricReader({ spec, store, token: "t" }), /url and token together/);
  for (const bad of [-1, 10, Infinity, NaN]) {
    assert.throws(() => new PrivatizingMetricReader({ spec, store, collectIntervalMillis: bad }), /collectIntervalMillis must be 0 or/);
  }
  // the spec itself refuses a mapping its protocol cannot encode
  assert.throws(() => specOf({ m: { ...METRICS.plain, otel: { instrument: "x", kind: "gauge", value: "last" } } }), SpecError);
  // instruments named (without case) narrow what is read
  const some = new PrivatizingMetricReader({ spec, store, instruments: ["FILES.opened", "ui.theme"] });
  assert.deepEqual([...some.declared.keys()], ["files.opened", "ui.theme"]);
  assert.deepEqual(some.selectAggregation(InstrumentType.UP_DOWN_COUNTER), { type: AggregationType.DROP });
});

test("instruments: only the ones named are read", async () => {
  const { provider, meter, clock } = app({ instruments: ["files.opened"] });
  meter.createCounter("files.opened").add(2);
  meter.createCounter("app.crashes").add(1);
  await provider.forceFlush();
  clock.now += W;
  await provider.forceFlush();
  assert.deepEqual(recordedIn(500_000), { opened: 2 });
  await provider.shutdown();
});

test("while the device is opted out the reader keeps no tally and records nothing", async () => {
  const store = new MemoryStore();
  const { reader, provider, meter, clock } = app({ spec: specOf({ opened: METRICS.opened }), store });
  const opened = meter.createCounter("files.opened");
  opened.add(2);
  await provider.forceFlush();
  assert.ok((await stateOf(store)).otel !== undefined);
  const client = await reader.client();
  await client.optOut();
  opened.add(3);
  await provider.forceFlush();
  assert.equal((await stateOf(store)).otel, undefined);
  clock.now += W;
  await provider.forceFlush();
  assert.deepEqual(reader.reported.at(-1).outcome, { opened: "opted out" });
  assert.equal(records.length, 1);
  await client.optIn();
  opened.add(4);
  await provider.forceFlush();
  clock.now += W;
  await provider.forceFlush();
  assert.deepEqual(recordedIn(500_001), { opened: 4 });
  await provider.shutdown();
});

test("uploads: when the interval allows; a failed one leaves the reports queued for the next collection", async () => {
  const fake = collector({ failFirst: 1 });
  const spec = specOf({ opened: METRICS.opened }, { upload: { min_interval_seconds: 2 * W, max_batch: 100 } });
  const { reader, provider, meter, clock } = app({ spec, url: "http://collector.test/v1/reports", token: "t0ken-0123456789abcdef",
    uploadOptions: fake.upload });
  const client = await reader.client();
  meter.createCounter("files.opened").add(1);
  await provider.forceFlush();
  clock.now += W;
  await provider.forceFlush(); // recorded; the upload fails
  assert.equal(await client.pending(), 1);
  assert.equal(fake.bodies.length, 0);
  await provider.forceFlush(); // the next collection sends it
  assert.equal(await client.pending(), 0);
  assert.equal(fake.bodies.length, 1);
  clock.now += W;
  await provider.forceFlush(); // recorded; the interval (two windows) holds it
  assert.equal(await client.pending(), 1);
  clock.now += W;
  await provider.forceFlush();
  assert.equal(await client.pending(), 0);
  assert.equal(fake.bodies.length, 2);
  await provider.shutdown();
});

test("collectIntervalMillis: the reader collects on its own, and stops at shutdown", async () => {
  const store = new MemoryStore();
  const { provider, meter } = app({ spec: specOf({ opened: METRICS.opened }), store, collectIntervalMillis: 50 });
  meter.createCounter("files.opened").add(6);
  const deadline = Date.now() + 5000;
  let kept;
  while (Date.now() < deadline) {
    kept = (await stateOf(store))?.otel;
    if (kept?.totals?.opened === 6) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(kept?.totals?.opened, 6);
  await provider.shutdown();
});

test("a store of another collection: the reader's operations reject, saying why", async () => {
  const store = new MemoryStore();
  await TelemetryClient.open(CollectionSpec.fromDict({ spec_version: 1, name: "other", budget: { per_window: 1, lifetime: 10 },
    metrics: { plain: METRICS.plain } }), store);
  const { reader, provider } = app({ store, spec: specOf({ opened: METRICS.opened }) });
  await assert.rejects(reader.client(), /belongs to collection "other"/);
  await assert.rejects(provider.forceFlush(), /belongs to collection "other"/);
});
