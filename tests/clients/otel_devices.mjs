// The devices of the OpenTelemetry end-to-end test (tests/clients/test_typescript_otel.py), shared by its web page
// (otel_page.mjs, bundled with esbuild) and its Node program (otel_node.mjs). Each device is an app instrumented with
// plain OpenTelemetry code (a counter, a histogram, a gauge, and instruments of its own that the spec does not
// declare) plus the one line that adds the privatizing reader, with its own state (store) and clock. The devices
// take three paths through a window:
//
// - "roll": measure, collect, then the clock passes the window's end and the next collection reports it;
// - "shutdown": `reportOnShutdown`, the window reported as the app shuts down;
// - "restart": measure, shut down mid-window (nothing reported), start again on the same state, measure more,
//   `closeWindow()`: the window's values are those of both runs (the test's data make the first run decide them).
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { CollectionSpec } from "ldp-telemetry-client";
import { PrivatizingMetricReader } from "ldp-telemetry-client/otel";

/** What one part of a device's measurements records, with plain OpenTelemetry instruments. */
function measure(meter, part) {
  const views = meter.createCounter("app.screen.views", { description: "screens viewed" });
  for (const [screen, n] of part.views) views.add(n, { screen });
  meter.createCounter("app.crashes").add(part.crashes);
  const duration = meter.createHistogram("http.client.duration", { unit: "ms" });
  for (const ms of part.latencies) duration.record(ms, { route: "/api" });
  const battery = meter.createGauge("battery.level", { unit: "%" });
  for (const level of part.battery) battery.record(level);
  // the app's own instruments, which the spec does not declare: they must never leave the device
  const s = part.secret;
  meter.createCounter("secret.clicks").add(s.clicks, { screen: s.screen, user: s.user });
  meter.createHistogram("secret.timing").record(s.timing, { user: s.user });
  meter.createGauge("secret.temperature").record(s.temperature, { room: s.room });
  meter.createObservableCounter("secret.observed").addCallback((r) => r.observe(s.observed, { user: s.user }));
}

/** Run one device; what became of it. */
async function runDevice(spec, device, { storeFor, url, token, uploadOptions }) {
  const clock = { now: device.start };
  const start = (extra = {}) => {
    // The one line an app adds to its OpenTelemetry setup:
    const reader = new PrivatizingMetricReader({ spec, store: storeFor(), url, token, clock: () => clock.now,
      collectIntervalMillis: 0, uploadOptions, ...extra });
    const provider = new MeterProvider({ readers: [reader] });
    return { reader, provider, meter: provider.getMeter("otel-e2e-app", "1.0.0") };
  };
  const [first, second] = device.parts;
  let app;
  if (device.path === "roll") {
    app = start();
    measure(app.meter, first);
    await app.provider.forceFlush();
    measure(app.meter, second);
    await app.provider.forceFlush();
    clock.now = device.next; // the window ended: the next collection reports it
    await app.provider.forceFlush();
  } else if (device.path === "shutdown") {
    app = start({ reportOnShutdown: true });
    measure(app.meter, first);
    await app.provider.forceFlush();
    measure(app.meter, second);
  } else {
    const before = start();
    measure(before.meter, first);
    await before.provider.shutdown(); // mid-window: the tally stays in the device's state
    clock.now += 600;
    app = start();
    measure(app.meter, second);
    await app.reader.closeWindow();
  }
  await app.provider.shutdown();
  const client = await app.reader.client();
  const counts = Object.values(await client.counts());
  return {
    reported: app.reader.reported, misfits: [...app.reader.misfits.keys()],
    uploaded: counts.reduce((n, c) => n + c.uploaded, 0), pending: counts.reduce((n, c) => n + c.pending, 0),
  };
}

/** Run every device (`parallel` at a time): the summary the test reads. `storeFor(d)`: a new store object on device
 * `d`'s state (called again for a restart). */
export async function runDevices({ specDoc, devices, storeFor, url, token, parallel = 8, uploadOptions = {} }) {
  const spec = CollectionSpec.fromDict(specDoc);
  const results = new Array(devices.length);
  let next = 0;
  const worker = async () => {
    while (next < devices.length) {
      const d = next++;
      results[d] = await runDevice(spec, devices[d], { storeFor: () => storeFor(d), url, token,
        uploadOptions: { timeout: 10, maxAttempts: 4, ...uploadOptions } });
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  const outcomes = {};
  const windows = new Set();
  for (const r of results) {
    for (const w of r.reported) {
      windows.add(w.window);
      for (const o of Object.values(w.outcome)) outcomes[o] = (outcomes[o] ?? 0) + 1;
    }
  }
  return {
    devices: devices.length, specFingerprint: spec.fingerprint, outcomes, windows: [...windows].sort(),
    reportsPerDevice: [...new Set(results.map((r) => r.reported.reduce((n, w) => n + Object.keys(w.outcome).length, 0)))],
    uploaded: results.reduce((n, r) => n + r.uploaded, 0), pending: results.reduce((n, r) => n + r.pending, 0),
    misfits: [...new Set(results.flatMap((r) => r.misfits))],
    unfit: results.reduce((n, r) => n + r.reported.reduce((m, w) => m + w.unfit, 0), 0),
  };
}
