// On the device (docs/client.md, "On the device: a bounded outbox, opting out, failing closed"), through each store
// (`MemoryStore`; `FileStore`; `IndexedDBStore` on an IndexedDB in memory, test-support/fake-indexeddb.mjs):
// * reads write nothing: opening an existing store and every query — counted by a wrapper that sees what each
//   transaction would write, by the FileStore's files (inode, mtime, ctime, size: unchanged, no temporary file) and by
//   IndexedDB's puts, deletes and readwrite transactions — and only a transaction that writes repairs leftovers;
// * a state missing beside traces of it, or damaged, is refused, naming what was found and how to start over;
// * `nextUploadAt` is the last acknowledged upload plus the upload interval, as Python's `next_upload_at`.
// The bounded outbox: test/device-outbox.test.mjs; opting out and `counts`: test/opt-out.test.mjs.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { IndexedDBStore, MemoryStore, StateError, TelemetryClient } from "../dist/index.js";
import { FileStore, LedgerError } from "../dist/node.js";
import { FakeIndexedDB, install, uninstall } from "../test-support/fake-indexeddb.mjs";
import {
  BUSY_COUNTS, STORES, U, busy, clockAt, collector, counting, look, snapshot, spec, tmp,
} from "../test-support/device.mjs";

install();
after(uninstall);

for (const [name, make] of Object.entries(STORES)) {
  test(`${name}: opening an existing store and every query write nothing`, async () => {
    const { store, reopen, dir, idb } = make();
    const clock = clockAt(1000);
    await busy(store, clock);
    clock.now = 2000;
    const total = (await look(store)).state.totals["*"].spent[0];
    const before = dir && snapshot(dir);
    idb?.resetCounts();
    const counted = counting(reopen());
    const client = await TelemetryClient.open(spec, counted, { clock });
    const answers = [
      await client.pending(), await client.hasPending(), await client.spent(), await client.spent("cat", "lifetime"),
      await client.nextUploadAt(), await client.optedOut(), await client.counts(),
    ];
    assert.deepEqual(answers, [5, true, { epsilon: total, delta: 0 }, { epsilon: 6, delta: 0 }, 4600, false, BUSY_COUNTS]);
    if (idb) assert.equal(idb.transactions.readwrite, 0, "queries run in readonly transactions");
    // Calls that may write, with nothing to do: an upload before the interval passed (no batch to pin), an optIn
    // of a device that did not opt out.
    const fetch = collector();
    assert.equal((await client.upload(U, "t", { fetch, gzip: false })).stopped, "interval");
    assert.equal(fetch.calls, 0);
    assert.equal(await client.optIn(), false);
    assert.equal(counted.writes, 0, "no transaction wrote");
    if (dir) assert.deepEqual(snapshot(dir), before, "every file as it was, none added");
    if (idb) assert.equal(idb.writes, 0, "no put or delete");
    await client.record("cat", 1); // a write, which the wrapper sees
    assert.equal(counted.writes, 1);
  });
}

test("FileStore: leftovers of a killed process stay through reads; the next write repairs them", async () => {
  const dir = tmp();
  const clock = clockAt(1000);
  await busy(new FileStore(dir), clock);
  const doc = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
  const log = `outbox.${doc.outbox[0]}.log`;
  writeFileSync(join(dir, "state.json.4242.18f.tmp"), "{\"device\":"); // a state write cut short
  writeFileSync(join(dir, "outbox.99.log"), "1\tcat\t{}\n"); // a compaction's copy, never committed
  appendFileSync(join(dir, log), "77\tcat\t{\"torn"); // a record appended, its state never written
  const before = snapshot(dir);
  const client = await TelemetryClient.open(spec, new FileStore(dir), { clock });
  assert.equal(await client.pending(), 5);
  assert.equal(await client.nextUploadAt(), 4600);
  assert.deepEqual(snapshot(dir), before, "reads left the leftovers as they were");
  await client.record("cat", 2);
  const names = readdirSync(dir).sort();
  assert.ok(!names.some((n) => n.endsWith(".tmp")) && !names.includes("outbox.99.log"), names.join(" "));
  const end = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")).outbox[2];
  assert.equal(statSync(join(dir, log)).size, end, "the torn tail was cut off by the append");
  assert.equal(await client.pending(), 6);
});

test("FileStore fails closed: state.json missing beside a log or a temporary state, or damaged, is refused", async () => {
  const clock = clockAt(1000);
  const dir = tmp();
  await busy(new FileStore(dir), clock);
  rmSync(join(dir, "state.json"));
  const before = snapshot(dir);
  const log = readdirSync(dir).find((n) => n.endsWith(".log"));
  await assert.rejects(TelemetryClient.open(spec, new FileStore(dir), { clock }), (e) => e instanceof LedgerError &&
    e instanceof StateError && e.message.includes(log) && /state\.json is missing/.test(e.message) &&
    /delete the whole folder/.test(e.message));
  assert.deepEqual(snapshot(dir), before, "refused with nothing changed");

  const torn = tmp();
  writeFileSync(join(torn, "state.json.4242.18f.tmp"), "{\"device\":{");
  await assert.rejects(TelemetryClient.open(spec, new FileStore(torn)), (e) => e instanceof LedgerError &&
    e.message.includes("state.json.4242.18f.tmp"));

  const locked = tmp();
  writeFileSync(join(locked, "lock"), ""); // a lock alone is no trace of a state: a new device
  const fresh = await TelemetryClient.open(spec, new FileStore(locked), { clock });
  assert.equal(await fresh.pending(), 0);

  writeFileSync(join(locked, "state.json"), "{not json");
  await assert.rejects(TelemetryClient.open(spec, new FileStore(locked)), (e) => e instanceof LedgerError &&
    /damaged/.test(e.message) && /delete the whole folder/.test(e.message));

  rmSync(dir, { recursive: true }); // starting over deliberately: the whole folder
  const again = await TelemetryClient.open(spec, new FileStore(dir), { clock });
  assert.deepEqual([await again.pending(), (await again.spent("*", "lifetime")).epsilon], [0, 0]);
});

test("IndexedDBStore fails closed: the state missing beside outbox records, or damaged, is refused", async () => {
  const idb = new FakeIndexedDB();
  const clock = clockAt(1000);
  await busy(new IndexedDBStore("device", idb), clock);
  await TelemetryClient.open(spec, new IndexedDBStore("other", idb), { clock }); // another key: not a trace of this one
  const state = idb.records("state").find(([k]) => k === "device")[1];
  idb.poke("state", "device", undefined);
  idb.resetCounts();
  await assert.rejects(TelemetryClient.open(spec, new IndexedDBStore("device", idb), { clock }),
    (e) => e instanceof StateError && e.name === "StateError" && /key "device": the state is missing but 5 outbox record\(s\) remain/.test(e.message) &&
      /delete the key's records in "state" and "outbox"/.test(e.message));
  assert.equal(idb.writes, 0);
  idb.poke("state", "device", "{\"device\":");
  await assert.rejects(new IndexedDBStore("device", idb).transact(() => 0, { readOnly: true }),
    (e) => e instanceof StateError && /key "device": the state is damaged/.test(e.message));
  idb.poke("state", "device", state);
  assert.equal(await (await TelemetryClient.open(spec, new IndexedDBStore("device", idb), { clock })).pending(), 5);
  const other = await TelemetryClient.open(spec, new IndexedDBStore("other", idb), { clock });
  assert.equal(await other.pending(), 0);
});

test("nextUploadAt: the last acknowledged upload plus the interval, as Python's next_upload_at", async () => {
  const clock = clockAt(1000);
  const client = await TelemetryClient.open(spec, new MemoryStore(), { clock });
  assert.equal(await client.nextUploadAt(), -Infinity, "never uploaded");
  const empty = await client.upload(U, "t", { fetch: collector(), gzip: false });
  assert.deepEqual([empty.stopped, empty.nextUploadAt], ["empty", -Infinity]);
  await client.record("cat", 1);
  clock.now = 1234.5;
  const r = await client.upload(U, "t", { fetch: collector(), gzip: false });
  assert.deepEqual([r.acknowledged, r.stopped, r.nextUploadAt], [1, "empty", 1234.5 + 3600], "not -Infinity");
  assert.equal(await client.nextUploadAt(), 1234.5 + 3600);
  await client.record("cat", 2);
  clock.now = 2000;
  const wait = await client.upload(U, "t", { fetch: collector(), gzip: false });
  assert.deepEqual([wait.stopped, wait.nextUploadAt, wait.batches], ["interval", 1234.5 + 3600, 0]);
  clock.now = 5000;
  const failed = await client.upload(U, "t", { fetch: collector(401), gzip: false }).catch((e) => e);
  assert.deepEqual([failed.name, failed.result.stopped, failed.result.nextUploadAt], ["UploadError", "error", 1234.5 + 3600]);
  clock.now = 900; // a clock that went back: the interval runs from the latest upload seen
  const ok = await client.upload(U, "t", { fetch: collector(), gzip: false });
  assert.deepEqual([ok.acknowledged, ok.nextUploadAt], [1, 1234.5 + 3600]);
});
