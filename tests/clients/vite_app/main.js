// A web developer's page: the packed client installed from its tarball, the lite entry and the two protocols its
// spec names (so the bundle holds only those), devices recording into IndexedDB and uploading to `ldp serve`.
// The spec and the devices' values come from the test (collection.json, devices.json), written before the build.
import { CollectionSpec, IndexedDBStore, TelemetryClient } from "ldp-telemetry-client/lite";
import { grr, rr } from "ldp-telemetry-client/protocols";
import SPEC from "./collection.json";
import DEVICES from "./devices.json";

const query = new URLSearchParams(location.search);
const collector = query.get("collector");
const token = query.get("token");
const spec = CollectionSpec.fromDict(SPEC, { protocols: [grr, rr] });

/** Every device records its values and uploads them: counts of what was recorded, acknowledged and accepted. */
window.runDevices = async () => {
  const out = { recorded: 0, acknowledged: 0, accepted: 0, specFingerprint: spec.fingerprint };
  for (const [i, values] of DEVICES.entries()) {
    const client = await TelemetryClient.open(spec, new IndexedDBStore(`device-${i}`));
    for (const [metric, value] of values) {
      await client.record(metric, value);
      out.recorded++;
    }
    const r = await client.upload(collector, token);
    out.acknowledged += r.acknowledged;
    out.accepted += r.accepted;
  }
  document.getElementById("status").textContent = `uploaded ${out.acknowledged}`;
  return out;
};

/** One more device records one value and leaves the page: `uploadWhenHidden` must send it as the page goes. */
window.recordThenLeave = async (metric, value) => {
  const client = await TelemetryClient.open(spec, new IndexedDBStore("leaving-device"));
  client.uploadWhenHidden(collector, token);
  await client.record(metric, value);
  return client.pending();
};
window.ready = true;
