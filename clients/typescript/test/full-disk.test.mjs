// A full disk (docs/client.md, "On the device"; src/node.ts): a FileStore keeps `state.reserve`, 256 KiB of zeros made
// after a transaction that wrote (never by a read), which an acknowledgement, pinning a batch or an opt-out that fails
// for lack of room deletes before trying once more; a record on a full disk fails with nothing charged and the reserve
// kept. The reserve is neither a trace of a state (fail closed) nor a temporary file to sweep. The real test runs in a
// user and mount namespace (`unshare -rm`) on a 1 MiB tmpfs filled to the last byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { CollectionSpec, TelemetryClient } from "../dist/index.js";
import { FileStore, LedgerError, RESERVE_BYTES } from "../dist/node.js";

const DIST = new URL("../dist/", import.meta.url).href;
const SPEC = {
  spec_version: 1, name: "full_disk_test", window_seconds: 1000000, budget: { per_window: 100, lifetime: 100 },
  upload: { min_interval_seconds: 0, max_batch: 50 },
  metrics: { cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } } },
};
const spec = CollectionSpec.fromDict(SPEC);
const tmp = () => mkdtempSync(join(tmpdir(), "ldp-ts-full-"));
const reserveSize = (dir) => (existsSync(join(dir, "state.reserve")) ? statSync(join(dir, "state.reserve")).size : null);
const okFetch = async (url, init) => {
  const n = String(init.body).trimEnd().split("\n").length;
  return new Response(JSON.stringify({ batch_id: init.headers["ldp-batch-id"], accepted: n, rejected: {}, lines: n }),
    { status: 200 });
};

test("FileStore: a write leaves the reserve; reads never make it", async () => {
  assert.equal(RESERVE_BYTES, 262144);
  const dir = tmp();
  const clock = () => 5;
  const client = await TelemetryClient.open(spec, new FileStore(dir), { clock });
  assert.equal(reserveSize(dir), RESERVE_BYTES, "made after the transaction that created the state");
  await client.record("cat", 0);
  rmSync(join(dir, "state.reserve"));

  const again = await TelemetryClient.open(spec, new FileStore(dir), { clock });
  await again.pending();
  await again.hasPending();
  await again.counts();
  await again.spent("*", "lifetime");
  await again.nextUploadAt();
  await again.optedOut();
  assert.equal(await again.optIn(), false); // a call that may write, with nothing to do
  assert.equal(reserveSize(dir), null, "no read made it");
  assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".tmp")), [], "nor left a temporary file");

  await again.record("cat", 1);
  assert.equal(reserveSize(dir), RESERVE_BYTES, "the next write made it again");
  assert.equal(await again.pending(), 2);
});

test("FileStore: the reserve is no trace of a state, and not swept as a temporary file", async () => {
  const clock = () => 5;
  const dir = tmp();
  const client = await TelemetryClient.open(spec, new FileStore(dir), { clock });
  await client.record("cat", 0);
  const reserve = statSync(join(dir, "state.reserve"));
  writeFileSync(join(dir, "state.reserve.4242.tmp"), "\0\0\0"); // a reserve a killed process did not finish
  await client.record("cat", 1); // a new FileStore's first write sweeps; this one's did already
  await (await TelemetryClient.open(spec, new FileStore(dir), { clock })).record("cat", 2);
  assert.ok(!existsSync(join(dir, "state.reserve.4242.tmp")), "the unfinished reserve was swept");
  assert.equal(statSync(join(dir, "state.reserve")).ino, reserve.ino, "the reserve itself stays");

  rmSync(join(dir, "state.json")); // the log remains: refused, naming the log and not the reserve
  await assert.rejects(TelemetryClient.open(spec, new FileStore(dir), { clock }), (e) => e instanceof LedgerError &&
    /outbox\.\d+\.log/.test(e.message) && !e.message.includes("reserve"));

  const alone = tmp(); // a reserve (and a reserve's temporary file) alone: no state ever recorded here
  writeFileSync(join(alone, "state.reserve"), Buffer.alloc(RESERVE_BYTES));
  writeFileSync(join(alone, "state.reserve.4242.tmp"), "\0");
  const fresh = await TelemetryClient.open(spec, new FileStore(alone), { clock });
  assert.deepEqual([await fresh.pending(), await fresh.counts()], [0, {}]);
  assert.equal(reserveSize(alone), RESERVE_BYTES);
});

/** The child of the tmpfs test: `node CHILD DIR`, DIR a 1 MiB tmpfs; prints what it saw as one JSON line. */
const CHILD = `
import * as fs from "node:fs";
import { join } from "node:path";
import { CollectionSpec, TelemetryClient } from ${JSON.stringify(DIST + "index.js")};
import { FileStore } from ${JSON.stringify(DIST + "node.js")};
const dir = process.argv[2], storeDir = join(dir, "store"), fillPath = join(dir, "fill");
const spec = CollectionSpec.fromDict(${JSON.stringify(SPEC)});
const clock = () => 5;
const okFetch = ${okFetch.toString()};
const reserve = () => { try { return fs.statSync(join(storeDir, "state.reserve")).size; } catch { return null; } };
const full = (e) => e.code === "ENOSPC" || e.code === "EDQUOT";
const out = {};

let client = await TelemetryClient.open(spec, new FileStore(storeDir), { clock });
await client.record("cat", 0);
await client.record("cat", 1);
out.reserveAfterRecords = reserve();

// Fill the disk to its last byte with another file: 4096-byte blocks until ENOSPC, then single bytes.
const fd = fs.openSync(fillPath, "w");
for (const size of [4096, 1]) {
  const chunk = Buffer.alloc(size, 0x55);
  for (;;) {
    try { fs.writeSync(fd, chunk); } catch (e) { if (!full(e)) throw e; break; }
  }
}
fs.closeSync(fd);
out.bavail = fs.statfsSync(dir).bavail;
out.fillBytes = fs.statSync(fillPath).size;

// The app starts again on the full disk: it opens its store, reads, cannot record, and uploads.
client = await TelemetryClient.open(spec, new FileStore(storeDir), { clock });
out.pending = await client.pending();
out.countsBefore = await client.counts();
try {
  await client.record("cat", 2);
  out.record = "recorded";
} catch (e) {
  out.record = { name: e.name, code: e.code, message: e.message };
}
out.reserveAfterRefusedRecord = reserve();
out.afterRefusedRecord = [await client.pending(), (await client.spent("*", "lifetime")).epsilon];
const result = await client.upload("http://collector.test/v1/reports", "t", { gzip: false, fetch: okFetch });
out.acknowledged = result.acknowledged;
out.pendingAfterAck = await client.pending();
out.reserveAfterAck = reserve();
out.storeFiles = fs.readdirSync(storeDir).sort();

// Room again: the next record makes the reserve anew.
fs.rmSync(fillPath);
await client.record("cat", 2);
out.reserveAfterFreeing = reserve();
out.countsAfter = await client.counts();
console.log(JSON.stringify(out));
`;

test("FileStore on a tmpfs filled to the last byte: the app opens, reads and acknowledges; a record is refused", (t) => {
  const probe = spawnSync("unshare", ["-rm", "true"], { encoding: "utf8" });
  if (probe.error !== undefined || probe.status !== 0) {
    t.skip(`needs a user and mount namespace to mount a tmpfs, and \`unshare -rm true\` failed here: ${
      probe.error?.message ?? (probe.stderr.trim() || `exit ${probe.status}`)}`);
    return;
  }
  const base = tmp();
  const dir = join(base, "disk");
  mkdirSync(dir);
  const child = join(base, "child.mjs");
  writeFileSync(child, CHILD);
  const run = spawnSync("unshare", ["-rm", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" "$3" "$1"',
    "sh", dir, process.execPath, child], { encoding: "utf8", timeout: 60_000 });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  const out = JSON.parse(run.stdout.trim().split("\n").pop());

  assert.equal(out.reserveAfterRecords, RESERVE_BYTES, "two records made the reserve");
  assert.equal(out.bavail, 0, "the disk is full to the last block");
  assert.ok(out.fillBytes > 512 * 1024, `the fill file took the rest (${out.fillBytes} bytes)`);
  assert.equal(out.pending, 2, "opened and read on the full disk");
  assert.deepEqual(out.countsBefore, { cat: { reports: 2, pending: 2, uploaded: 0, discarded: 0 } });
  assert.equal(out.record.name, "LedgerError", JSON.stringify(out.record));
  assert.equal(out.record.code, "ENOSPC");
  assert.match(out.record.message, /is full \(ENOSPC\): nothing was recorded and nothing charged/);
  assert.equal(out.reserveAfterRefusedRecord, RESERVE_BYTES, "a record does not use up the reserve");
  assert.deepEqual(out.afterRefusedRecord, [2, 2], "nothing stored, nothing charged");
  assert.equal(out.acknowledged, 2, "pinned and acknowledged on the full disk, with the reserve's room");
  assert.equal(out.pendingAfterAck, 0);
  assert.equal(out.reserveAfterAck, null, "the room freed is left to the app: too little to make the reserve again");
  assert.deepEqual(out.storeFiles, ["state.json"], "no temporary file left, the log retired");
  assert.equal(out.reserveAfterFreeing, RESERVE_BYTES, "back after a record once there is room");
  assert.deepEqual(out.countsAfter, { cat: { reports: 3, pending: 1, uploaded: 2, discarded: 0 } });
});
