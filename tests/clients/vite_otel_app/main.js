// A web app already instrumented with OpenTelemetry JS adds the privatizing reader of the packed client (one line in
// `start`); the rest is plain OpenTelemetry. Each simulated device keeps its state in IndexedDB (its own key), measures
// for one window, and the window's reports go to `ldp serve` when the clock passes its end. The spec and the devices
// come from the test (collection.json, devices.json), written before the build.
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { IndexedDBStore } from "ldp-telemetry-client/lite";
import { CollectionSpec, PrivatizingMetricReader } from "ldp-telemetry-client/otel";
import { grr, rr } from "ldp-telemetry-client/protocols";
import SPEC from "./collection.json";
import DEVICES from "./devices.json";

const query = new URLSearchParams(location.search);
const collector = query.get("collector");
const token = query.get("token");
const spec = CollectionSpec.fromDict(SPEC, { protocols: [grr, rr] });

/** Every device measures a window and reports it: what became of each window, and what is left to send. */
window.runDevices = async () => {
  const day = spec.windowSeconds;
  const out = { recorded: 0, notRecorded: [], misfits: 0, pending: 0, windows: [] };
  for (const [i, device] of DEVICES.entries()) {
    const clock = { now: Date.now() / 1000 };
    const reader = new PrivatizingMetricReader({ spec, store: new IndexedDBStore(`otel-device-${i}`), url: collector,
      token, clock: () => clock.now, collectIntervalMillis: 0 });
    const provider = new MeterProvider({ readers: [reader] });
    const meter = provider.getMeter("vite-shop", "1.0.0");
    meter.createCounter("ui.screen.views").add(3, { screen: device.screen });
    meter.createCounter("ui.screen.views").add(1, { screen: "home" });
    meter.createCounter("app.crashes").add(device.crashed ? 2 : 0);
    meter.createCounter("purchase.amount").add(129.99, { card: "4111-1111-1111-1111" }); // not declared
    meter.createHistogram("checkout.latency").record(812.5, { user: "alice@example.com" }); // not declared
    await provider.forceFlush();
    clock.now = (Math.floor(clock.now / day) + 1) * day + 1; // the window ends: its reports go
    await provider.forceFlush();
    for (const report of reader.reported) {
      out.windows.push(report.window);
      for (const [metric, what] of Object.entries(report.outcome)) {
        if (what === "recorded") out.recorded++;
        else out.notRecorded.push(`${metric}: ${what}`);
      }
    }
    out.misfits += reader.misfits.size;
    out.pending += (await reader.pending()).length;
    await provider.shutdown();
  }
  document.getElementById("status").textContent = `recorded ${out.recorded}`;
  return out;
};
window.ready = true;
