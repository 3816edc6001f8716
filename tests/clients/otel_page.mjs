// The OpenTelemetry end-to-end test's web page (tests/clients/test_typescript_otel.py), bundled with esbuild as an
// app's bundler would: every device keeps its state in the page's IndexedDB (its own key) and uploads to the
// collector across origins.
import { IndexedDBStore } from "ldp-telemetry-client";
import { runDevices } from "./otel_devices.mjs";

window.runAll = (specDoc, devices, url, token) => {
  runDevices({ specDoc, devices, url, token, storeFor: (d) => new IndexedDBStore(`otel-device-${d}`) })
    .then((result) => { window.__result = result; }, (err) => { window.__error = String(err?.stack ?? err); });
};
window.ready = true;
