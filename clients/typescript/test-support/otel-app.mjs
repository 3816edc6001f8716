// The app of the OpenTelemetry reader's tests (test/otel-reader*.test.mjs): a spec of one metric per `otel` value, a
// real MeterProvider with the reader on a clock the test moves, a fake collector, and every
// `TelemetryClient.record` call of a test (`records`, emptied after each test).
import { afterEach } from "node:test";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { CollectionSpec, KeyedRandomSource, MemoryStore, TelemetryClient } from "../dist/index.js";
import { PrivatizingMetricReader } from "../dist/otel/index.js";

export const W = 3600; // the spec's window
export const START = 500_000 * W + 10; // ten seconds into window 500000
export const LN3 = 1.0986122886681098; // what one rr report of p 0.25, q 0.75 costs

export const METRICS = {
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

export function specOf(metrics = METRICS, extra = {}) {
  return CollectionSpec.fromDict({ spec_version: 1, name: "otel_app", window_seconds: W,
    budget: { per_window: 100, lifetime: 10_000 }, upload: { min_interval_seconds: 0, max_batch: 100 }, metrics, ...extra });
}

/** Every `TelemetryClient.record` call of the test: its metric, value and the client's clock then. */
export let records = [];
const realRecord = TelemetryClient.prototype.record;
TelemetryClient.prototype.record = function (metric, value) {
  records.push({ metric, value, at: this.clock() });
  return realRecord.call(this, metric, value);
};
afterEach(() => {
  records = [];
});

export const recordedIn = (window) => Object.fromEntries(records.filter((r) => Math.floor(r.at / W) === window).map((r) => [r.metric, r.value]));

/** A fake `ldp serve`: every body it was sent, each answered as the collector does. */
export function collector({ failFirst = 0 } = {}) {
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
export async function outbox(store) {
  const items = await store.transact((tx) => tx.head(tx.pending), { readOnly: true, head: Infinity });
  return items.map((i) => JSON.parse(i.line));
}

export const stateOf = (store) => store.transact((tx) => tx.state, { readOnly: true });

/** An app's OpenTelemetry setup with the reader: a clock the test moves, a device seeded for repeatability. */
export function app({ spec = specOf(), store = new MemoryStore(), clock = { now: START }, seed = "device", ...options } = {}) {
  const reader = new PrivatizingMetricReader({ spec, store, clock: () => clock.now, collectIntervalMillis: 0,
    rng: new KeyedRandomSource(new TextEncoder().encode(seed), new Uint8Array(1)), ...options });
  const provider = new MeterProvider({ readers: [reader] });
  return { reader, provider, meter: provider.getMeter("test-app"), store, clock, spec };
}
