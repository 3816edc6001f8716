// The privatizing MetricReader (src/otel/reader.ts) across windows, processes and stores: a restart mid-window
// continues the tally; closeWindow and reportOnShutdown; the default store; construction refusals; the instruments
// named; an opted-out device; uploads; collecting on its own; a store of another collection. What becomes of a
// window's measurements: test/otel-reader.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { AggregationType, InstrumentType, MeterProvider } from "@opentelemetry/sdk-metrics";
import { CollectionSpec, MemoryStore, SpecError, TelemetryClient } from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import * as otelEntry from "../dist/otel/index.js";
import { FakeIndexedDB, install, uninstall } from "../test-support/fake-indexeddb.mjs";
import {
  METRICS, START, W, app, collector, outbox, recordedIn, records, specOf, stateOf,
} from "../test-support/otel-app.mjs";

const { PrivatizingMetricReader } = otelEntry;

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
