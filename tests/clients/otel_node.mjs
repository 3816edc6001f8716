// The OpenTelemetry end-to-end test's Node program (tests/clients/test_typescript_otel.py): the same devices as the
// web page, each with its state in a FileStore folder of its own. Every request body it sends is kept (unzipped) in
// BODIES, by a wrapper around the global fetch, which the uploader calls. Prints the summary as one JSON line.
//
// node otel_node.mjs SPEC DEVICES STATES URL TOKEN BODIES
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { FileStore } from "ldp-telemetry-client/node";
import { runDevices } from "./otel_devices.mjs";

const [specPath, devicesPath, states, url, token, bodiesPath] = process.argv.slice(2);
const bodies = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers);
  const raw = typeof init.body === "string" ? Buffer.from(init.body) : Buffer.from(init.body ?? []);
  bodies.push((headers.get("content-encoding") === "gzip" ? gunzipSync(raw) : raw).toString("utf8"));
  return realFetch(input, init);
};
const summary = await runDevices({
  specDoc: JSON.parse(readFileSync(specPath, "utf8")), devices: JSON.parse(readFileSync(devicesPath, "utf8")),
  storeFor: (d) => new FileStore(join(states, `device-${d}`)), url, token,
});
writeFileSync(bodiesPath, JSON.stringify(bodies));
console.log(JSON.stringify(summary));
