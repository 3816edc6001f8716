// The TypeScript reader replays conformance/otel/reader-windows.json (Python replays the same file in
// tests/otel/test_otel_conformance.py): each clock script's steps, through a real OpenTelemetry JS SDK, report exactly
// the windows and the values (before randomization) the file expects.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { CollectionSpec, KeyedRandomSource, MemoryStore } from "../dist/index.js";
import { PrivatizingMetricReader } from "../dist/otel/index.js";
import { records } from "../test-support/otel-app.mjs";

const SCRIPT_URL = new URL("../../../conformance/otel/reader-windows.json", import.meta.url);
const SCRIPT = JSON.parse(readFileSync(SCRIPT_URL, "utf8"));
const SPEC = CollectionSpec.fromDict(SCRIPT.spec);

/** One device of a script: its clock, its store, the reader and provider running now. */
class Device {
  constructor(awaitOpen) {
    this.awaitOpen = awaitOpen;
    this.store = new MemoryStore();
    this.now = 0;
    this.reader = this.provider = null;
    this.instruments = new Map();
  }

  async start(at) {
    this.now = at;
    this.reader = new PrivatizingMetricReader({ spec: SPEC, store: this.store, clock: () => this.now,
      collectIntervalMillis: 0, rng: new KeyedRandomSource(new TextEncoder().encode("device"), new Uint8Array(1)) });
    this.provider = new MeterProvider({ readers: [this.reader] });
    this.instruments = new Map();
    // the state is open: a window that ended while nothing ran is reported (an app need not wait: see below)
    if (this.awaitOpen) await this.reader.client();
  }

  measure({ instrument: name, kind, value, attributes }) {
    const meter = this.provider.getMeter("app");
    if (!this.instruments.has(name)) {
      const make = { counter: "createCounter", histogram: "createHistogram", gauge: "createGauge",
        updown_counter: "createUpDownCounter" }[kind];
      this.instruments.set(name, meter[make](name));
    }
    const instrument = this.instruments.get(name);
    if (kind === "counter" || kind === "updown_counter") instrument.add(value, attributes);
    else instrument.record(value, attributes);
  }

  /** Take `step`: a promise for the asynchronous ones (the clock and a measurement are synchronous, as in an app). */
  step(step) {
    if ("start" in step) return this.start(step.start);
    if ("clock" in step) this.now = step.clock;
    else if ("measure" in step) this.measure(step.measure);
    else if ("flush" in step) return this.provider.forceFlush();
    else if ("close" in step) return this.reader.closeWindow();
    else if ("stop" in step) return this.provider.shutdown().then(() => (this.reader = this.provider = null));
    else throw new Error(`unknown step ${JSON.stringify(step)}`);
    return undefined;
  }
}

/** The records grouped by window, in order, as the script writes them. */
function windows(list) {
  const out = [];
  for (const r of list) {
    const window = Math.floor(r.at / SPEC.windowSeconds);
    if (!out.length || out.at(-1).window !== window) out.push({ window, values: {} });
    out.at(-1).values[r.metric] = r.value;
  }
  return out;
}

for (const c of SCRIPT.cases) {
  test(`the shared clock script: ${c.name}`, async () => {
    const device = new Device(true);
    try {
      for (const [i, step] of c.steps.entries()) {
        const before = records.length;
        await device.step(step);
        assert.deepStrictEqual(windows(records.slice(before)), step.expect ?? [], `step ${i}: ${JSON.stringify(step)}`);
      }
    } finally {
      await device.provider?.shutdown();
    }
  });

  // An app does not wait for the device's state to open: it measures at once, and the clock may pass the window's
  // end before the first collection. The same windows, in the same order, with the same values.
  test(`the shared clock script, never waiting for the state to open: ${c.name}`, async () => {
    const device = new Device(false);
    for (const step of c.steps) {
      const done = device.step(step);
      if (done !== undefined) await done; // never between synchronous steps
    }
    await device.provider?.shutdown();
    assert.deepStrictEqual(windows(records), c.steps.flatMap((s) => s.expect ?? []));
  });
}
