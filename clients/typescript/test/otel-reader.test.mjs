// The privatizing MetricReader (src/otel/reader.ts) in a real OpenTelemetry JS SDK (@opentelemetry/sdk-metrics):
// undeclared instruments never reach a report, the device's state or an upload; each `value` of the spec's `otel`
// table becomes the window's value as Python's ldp/otel/window.py says; the ledger is charged each metric's
// per-report cost once per window, the reports carrying their window; misfits dropped and listed. Its life across
// windows, processes, stores and options: test/otel-reader-lifecycle.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";

import { AggregationTemporality, AggregationType, InstrumentType } from "@opentelemetry/sdk-metrics";
import * as otelEntry from "../dist/otel/index.js";
import { CollectionSpec as SpecOtel } from "../dist/spec-otel.js";
import {
  LN3, METRICS, W, app, collector, outbox, recordedIn, records, specOf, stateOf,
} from "../test-support/otel-app.mjs";

const { DEFAULT_COLLECT_INTERVAL_MILLIS } = otelEntry;

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
