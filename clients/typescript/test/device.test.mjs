// On the device (docs/client.md, "On the device: a bounded outbox, opting out, failing closed"), through each store
// (`MemoryStore`; `FileStore`; `IndexedDBStore` on an IndexedDB in memory, test-support/fake-indexeddb.mjs):
// * reads write nothing: opening an existing store and every query — counted by a wrapper that sees what each
//   transaction would write, by the FileStore's files (inode, mtime, ctime, size: unchanged, no temporary file) and by
//   IndexedDB's puts, deletes and readwrite transactions — and only a transaction that writes repairs leftovers;
// * `counts` says per metric what the reports became (pending, uploaded, discarded by an opt-out), adding up;
// * the outbox is bounded by `maxOutboxBytes`: a record past it, and a `recordMany` batch that does not fit, are
//   refused before anything is charged or stored, pinned batches count, an upload frees room;
// * a state missing beside traces of it, or damaged, is refused, naming what was found and how to start over;
// * `optOut` deletes what collection left and stops it, keeping the budget spent; `optIn` draws a fresh secret;
// * `nextUploadAt` is the last acknowledged upload plus the upload interval, as Python's `next_upload_at`.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { refusal } from "../test-support/refusal.mjs";
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  CollectionSpec, DEFAULT_MAX_OUTBOX_BYTES, IndexedDBStore, MemoryStore, OptedOutError, OutboxFullError, StateError,
  TelemetryClient,
} from "../dist/index.js";
import { FileStore, LedgerError } from "../dist/node.js";
import { FakeIndexedDB, install, uninstall } from "../test-support/fake-indexeddb.mjs";

install();
after(uninstall);

const SPEC = {
  spec_version: 1, name: "device_test", window_seconds: 1000000, budget: { per_window: 1000, lifetime: 1000 },
  upload: { min_interval_seconds: 3600, max_batch: 4 },
  metrics: {
    cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } },
    page: { protocol: "rappor", params: { num_bloombits: 16, num_hashes: 2, num_cohorts: 4, p: 0.25, q: 0.75, f: 0.5 },
      budget: { per_report: 5.0 } },
    mood: { protocol: "thresh", params: { epsilon: 1.0, domain_size: 4 }, budget: { per_report: 1.0 } },
  },
};
const spec = CollectionSpec.fromDict(SPEC);
const U = "http://collector.test/v1/reports";
const tmp = () => mkdtempSync(join(tmpdir(), "ldp-ts-device-"));
const utf8 = (s) => new TextEncoder().encode(s).length;

function clockAt(t) {
  const c = () => c.now;
  c.now = t;
  return c;
}

/** A fake collector: `status` for every request (a sane answer to a 2xx); `calls` counts them. */
function collector(status = 200) {
  const f = async (url, init) => {
    f.calls += 1;
    const n = String(init.body).trimEnd().split("\n").length;
    const body = JSON.stringify({ batch_id: init.headers["ldp-batch-id"], accepted: n, rejected: {}, lines: n });
    return new Response(status === 200 ? body : "", { status });
  };
  f.calls = 0;
  return f;
}

/** Each store, fresh: `store`, and `reopen()`, another handle on the same state (a second tab or process). */
const STORES = {
  MemoryStore: () => {
    const store = new MemoryStore();
    return { store, reopen: () => store };
  },
  FileStore: () => {
    const dir = tmp();
    return { store: new FileStore(dir), reopen: () => new FileStore(dir), dir };
  },
  IndexedDBStore: () => {
    const idb = new FakeIndexedDB();
    return { store: new IndexedDBStore("device", idb), reopen: () => new IndexedDBStore("device", idb), idb };
  },
};

/** `store`, counting the transactions that would write: not read-only, and appending, dropping or changing the
 * state (what `StateStore.transact` commits). */
function counting(store) {
  const counted = {
    writes: 0,
    transact(fn, options = {}) {
      return store.transact((tx) => {
        const before = JSON.stringify(tx.state);
        let touched = false;
        const view = {
          get state() { return tx.state; },
          set state(s) { tx.state = s; },
          get pending() { return tx.pending; },
          head: (n) => tx.head(n),
          append(item) { touched = true; tx.append(item); },
          dropHead(n) { touched ||= n > 0 && tx.pending > 0; tx.dropHead(n); },
        };
        const out = fn(view);
        if (!options.readOnly && (touched || JSON.stringify(tx.state) !== before)) counted.writes += 1;
        return out;
      }, options);
    },
  };
  return counted;
}

/** What a FileStore folder's files are: names, inodes, sizes, modification and change times (not access times). */
function snapshot(dir) {
  const st = (p) => statSync(p, { bigint: true });
  const d = st(dir);
  return [[".", d.mtimeNs, d.ctimeNs], ...readdirSync(dir).sort().map((name) => {
    const s = st(join(dir, name));
    return [name, s.ino, s.size, s.mtimeNs, s.ctimeNs];
  })];
}

/** The state and the outbox as the store has them (a read). */
function look(store) {
  return store.transact((tx) => ({ state: tx.state, lines: tx.head(tx.pending).map((i) => i.line) }),
    { readOnly: true });
}

/** A device with reports waiting, one upload acknowledged and the interval running: 9 recorded at t = 1000, the first
 * 4 acknowledged then, 5 waiting until t = 4600. */
async function busy(store, clock) {
  const client = await TelemetryClient.open(spec, store, { clock });
  for (let i = 0; i < 6; i++) await client.record("cat", i % 3);
  await client.record("page", "/home");
  await client.recordMany([["mood", 2], ["mood", 3]]);
  const r = await client.upload(U, "t", { fetch: collector(), gzip: false });
  assert.deepEqual([r.acknowledged, r.stopped, r.nextUploadAt], [4, "interval", 4600]);
  return client;
}

/** What `counts` says after `busy`: cat 0 1 2 0 1 2 (the first four acknowledged), page, mood twice. */
const BUSY_COUNTS = {
  cat: { reports: 6, pending: 2, uploaded: 4, discarded: 0 },
  page: { reports: 1, pending: 1, uploaded: 0, discarded: 0 },
  mood: { reports: 2, pending: 2, uploaded: 0, discarded: 0 },
};

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

for (const [name, make] of Object.entries(STORES)) {
  test(`${name}: the outbox keeps at most maxOutboxBytes; a record past it is refused before any charge`, async () => {
    const { store } = make();
    const clock = clockAt(1000);
    const scratch = new MemoryStore();
    await (await TelemetryClient.open(spec, scratch, { clock })).record("cat", 0);
    const line = (await look(scratch)).lines[0];
    const need = utf8(line) + 1; // every GRR line of `cat` in this window has the same length
    const cap = 3 * need + need - 1; // room for three, not four
    const client = await TelemetryClient.open(spec, store, { clock, maxOutboxBytes: cap });
    assert.equal(client.maxOutboxBytes, cap);
    for (let i = 0; i < 3; i++) await client.record("cat", i);
    await assert.rejects(client.record("cat", 0), (e) => e instanceof OutboxFullError && e.name === "OutboxFullError" &&
      e.pendingBytes === 3 * need && e.needed === need && e.cap === cap && e.index === null &&
      e.message.includes(`${3 * need} bytes of reports wait for upload`) && e.message.includes(`maxOutboxBytes is ${cap}`));
    assert.equal(await client.pending(), 3, "nothing stored");
    assert.deepEqual(await client.spent("*", "lifetime"), { epsilon: 3, delta: 0 }, "nothing charged");
    const seen = await look(store);
    assert.equal(seen.state.outboxBytes, seen.lines.reduce((n, l) => n + utf8(l) + 1, 0), "each line's bytes plus one");

    // A pinned batch still counts: a failed upload leaves it pinned, and the outbox as full.
    await assert.rejects(client.upload(U, "t", { fetch: collector(503), maxAttempts: 1, gzip: false }), /not delivered/);
    assert.notEqual((await look(store)).state.batch, null);
    await assert.rejects(client.record("cat", 1), OutboxFullError);
    const sent = await client.upload(U, "t", { fetch: collector(), gzip: false }); // uploading frees room
    assert.equal(sent.acknowledged, 3);
    assert.equal((await look(store)).state.outboxBytes, 0);

    // recordMany: all or nothing, naming the first item that did not fit.
    await client.record("cat", 1);
    await assert.rejects(client.recordMany([["cat", 0], ["cat", 1], ["cat", 2]]), (e) => e instanceof OutboxFullError &&
      e.index === 2 && e.pendingBytes === 3 * need && /at item 2 of a batch \(nothing of the batch was kept\)/.test(e.message));
    assert.equal(await client.pending(), 1, "nothing of the batch stored");
    assert.deepEqual(await client.spent("*", "lifetime"), { epsilon: 4, delta: 0 }, "nothing of the batch charged");
    const ids = await client.recordMany([["cat", 0], ["cat", 2]]);
    assert.deepEqual(ids.length, 2);
    assert.equal(ids[1], ids[0] + 1);
    assert.equal((await look(store)).state.outboxBytes, 3 * need);
  });
}

test("maxOutboxBytes: 1 MiB by default, a positive integer or a RangeError", async () => {
  assert.equal(DEFAULT_MAX_OUTBOX_BYTES, 1048576);
  assert.equal((await TelemetryClient.open(spec, new MemoryStore())).maxOutboxBytes, 1048576);
  for (const bad of [0, -1, 1.5, NaN, Infinity, "1024", 2 ** 60]) {
    await assert.rejects(TelemetryClient.open(spec, new MemoryStore(), { maxOutboxBytes: bad }),
      (e) => e instanceof RangeError && /maxOutboxBytes must be a positive integer/.test(e.message), String(bad));
  }
  const tiny = await TelemetryClient.open(spec, new MemoryStore(), { maxOutboxBytes: 1 });
  await assert.rejects(tiny.record("cat", 0), (e) => e instanceof OutboxFullError && e.pendingBytes === 0);
});

test("recordMany: every value checked first, naming its item; a budget refusal names its charge; nothing kept", async () => {
  const small = CollectionSpec.fromDict({ ...SPEC, budget: { per_window: 3, lifetime: 3 }, metrics: { cat: SPEC.metrics.cat } });
  const client = await TelemetryClient.open(small, new MemoryStore(), { clock: () => 5 });
  await assert.rejects(client.recordMany([["cat", 0], ["cat", 7]]),
    (e) => refusal("ValueError", "value_range", { got: 7, min: 0, max: 3, max_exclusive: true })(e) &&
      e.message === 'recordMany item 1 ("cat"): value must be >= 0 and < 3, got 7');
  await assert.rejects(client.recordMany([["cat", 0], ["cat", "x"]]),
    (e) => refusal("TypeError", "value_type", { expected: "index", got: "string" })(e) && /^recordMany item 1 \("cat"\): /.test(e.message));
  await assert.rejects(client.recordMany([["cat", 0], ["colour", 1]]),
    (e) => e instanceof RangeError && /^recordMany item 1 \("colour"\): no metric "colour"/.test(e.message));
  await assert.rejects(client.recordMany([["cat", 0], ["cat", 1], ["cat", 2], ["cat", 0]]),
    (e) => e.name === "BudgetExceeded" && e.index === 3 && /at charge 3 of a batch/.test(e.message) && e.spent.epsilon === 3);
  assert.deepEqual([await client.pending(), (await client.spent()).epsilon], [0, 0]);
  assert.deepEqual(await client.recordMany([["cat", 0], ["cat", 1]]), [1, 2]);
  assert.deepEqual(await client.recordMany([]), []);
});

test("a state written before the cap (no outboxBytes) is counted by the next record, IndexedDB's prefetch included", async () => {
  for (const make of Object.values(STORES)) {
    const { store } = make();
    const client = await TelemetryClient.open(spec, store, { clock: () => 5 });
    for (let i = 0; i < 5; i++) await client.record("cat", i % 3);
    await store.transact((tx) => { delete tx.state.outboxBytes; });
    await client.record("cat", 1);
    const seen = await look(store);
    assert.equal(seen.lines.length, 6);
    assert.equal(seen.state.outboxBytes, seen.lines.reduce((n, l) => n + utf8(l) + 1, 0));
  }
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

for (const [name, make] of Object.entries(STORES)) {
  test(`${name}: optOut deletes what collection left and stops it, keeping the budget spent; optIn starts afresh`, async () => {
    const { store, reopen, dir } = make();
    const clock = clockAt(1000);
    const client = await busy(store, clock);
    clock.now = 5000;
    await assert.rejects(client.upload(U, "t", { fetch: collector(503), maxAttempts: 1, gzip: false })); // pins a batch
    const { state: was } = await look(store);
    assert.notEqual(was.batch, null);
    assert.ok(Object.keys(was.cohorts).length && Object.keys(was.memo).length && Object.keys(was.changes).length);
    const other = await TelemetryClient.open(spec, reopen(), { clock }); // a second tab or process

    assert.equal(await client.optOut(), 5, "five reports deleted");
    const { state, lines } = await look(store);
    assert.deepEqual(lines, []);
    assert.deepEqual([state.optedOut, state.secret, state.batch, state.cohorts, state.memo, state.changes, state.outboxBytes],
      [true, null, null, {}, {}, undefined, 0]);
    assert.deepEqual(state.totals, was.totals, "the budget spent stays spent");
    assert.deepEqual([state.salt, state.nextId, state.lastUpload, state.uploaded], [was.salt, was.nextId, was.lastUpload, was.uploaded]);
    assert.deepEqual(state.discarded, { cat: 2, page: 1, mood: 2 }, "the deleted reports counted, per metric");
    if (dir) assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".log")), [], "the log is gone");

    for (const c of [client, other]) {
      await assert.rejects(c.record("cat", 1), (e) => e instanceof OptedOutError && e.name === "OptedOutError" && /optIn/.test(e.message));
      await assert.rejects(c.recordMany([["cat", 1]]), OptedOutError);
      assert.deepEqual([await c.optedOut(), await c.pending(), await c.hasPending(), await c.nextUploadAt()], [true, 0, false, Infinity]);
    }
    assert.deepEqual((await look(store)).state.totals, was.totals, "nothing charged by the refused records");
    const fetch = collector();
    const r = await other.upload(U, "t", { fetch, gzip: false });
    assert.deepEqual([fetch.calls, r.batches, r.stopped, r.nextUploadAt], [0, 0, "empty", Infinity], "an upload sends nothing");

    const counted = counting(reopen());
    const again = await TelemetryClient.open(spec, counted, { clock });
    assert.equal(await again.optOut(), 0, "idempotent");
    assert.equal(counted.writes, 0, "a second optOut writes nothing");

    assert.equal(await other.optIn(), true);
    assert.equal(await other.optIn(), false, "idempotent");
    const { state: back } = await look(store);
    assert.equal(back.optedOut, undefined);
    assert.match(back.secret, /^[0-9a-f]{64}$/);
    assert.notEqual(back.secret, was.secret, "a fresh device secret");
    assert.equal(await client.optedOut(), false);
    assert.equal(await client.nextUploadAt(), was.lastUpload + 3600);
    await client.record("page", "/home"); // a memoized response of the new secret, charged afresh as a first report
    const { state: now } = await look(store);
    assert.deepEqual(Object.values(now.memo), Object.values(was.memo), "charged as the first report was");
    assert.notDeepEqual(Object.keys(now.memo), Object.keys(was.memo), "under a memo key of the new secret");
    assert.equal(Object.keys(now.cohorts).length, 1, "a cohort drawn anew");
    await other.record("page", "/home");
    assert.equal(Object.values((await look(store)).state.memo)[0][0], 2, "both clients report under the new secret");
    assert.equal(await client.pending(), 2);
  });
}

for (const [name, make] of Object.entries(STORES)) {
  test(`${name}: counts says per metric what the reports became, pending + uploaded + discarded = reports`, async () => {
    const { store, reopen } = make();
    const clock = clockAt(1000);
    const client = await TelemetryClient.open(spec, store, { clock });
    assert.deepEqual(await client.counts(), {}, "nothing recorded yet");
    await busy(store, clock);
    assert.deepEqual(await client.counts(), BUSY_COUNTS);
    const sum = (counts) => Object.values(counts).every((c) => c.reports === c.pending + c.uploaded + c.discarded);

    clock.now = 5000; // a pinned batch still waits: pending
    await assert.rejects(client.upload(U, "t", { fetch: collector(503), maxAttempts: 1, gzip: false }));
    assert.notEqual((await look(store)).state.batch, null);
    assert.deepEqual(await client.counts(), BUSY_COUNTS);

    const other = await TelemetryClient.open(spec, reopen(), { clock }); // another tab or process opts out
    assert.equal(await other.optOut(), 5);
    const out = {
      cat: { reports: 6, pending: 0, uploaded: 4, discarded: 2 },
      page: { reports: 1, pending: 0, uploaded: 0, discarded: 1 },
      mood: { reports: 2, pending: 0, uploaded: 0, discarded: 2 },
    };
    assert.deepEqual(await client.counts(), out);
    assert.equal(await other.optOut(), 0);
    assert.deepEqual(await client.counts(), out, "a second opt-out discards nothing more");

    await other.optIn();
    await client.recordMany([["cat", 0], ["cat", 1], ["page", "/x"]]);
    clock.now = 9000;
    const r = await client.upload(U, "t", { fetch: collector(), gzip: false });
    assert.equal(r.acknowledged, 3);
    await client.record("cat", 2);
    const end = await other.counts();
    assert.deepEqual(end, {
      cat: { reports: 9, pending: 1, uploaded: 6, discarded: 2 },
      page: { reports: 2, pending: 0, uploaded: 1, discarded: 1 },
      mood: { reports: 2, pending: 0, uploaded: 0, discarded: 2 },
    });
    assert.ok(sum(end));
  });
}

test("counts reads every pending report, past IndexedDB's prefetch; a state without discarded counts none", async () => {
  for (const make of Object.values(STORES)) {
    const { store } = make();
    const client = await TelemetryClient.open(spec, store, { clock: () => 5 });
    for (let i = 0; i < 300; i++) await client.record("cat", i % 3);
    assert.deepEqual(await client.counts(), { cat: { reports: 300, pending: 300, uploaded: 0, discarded: 0 } });
    await client.optOut();
    assert.deepEqual((await look(store)).state.discarded, { cat: 300 });
    await store.transact((tx) => { delete tx.state.discarded; }); // as a state written before it was kept
    assert.deepEqual(await client.counts(), {});
  }
});

test("a client whose store another opted out and in reports under the new secret, not its cached one", async () => {
  const spec1 = CollectionSpec.fromDict({ ...SPEC, metrics: { lg: { protocol: "lgrr",
    params: { epsilon_perm: 2.0, epsilon: 1.0, domain_size: 4 }, budget: { per_report: 2.0 } } } });
  const store = new MemoryStore();
  const a = await TelemetryClient.open(spec1, store, { clock: () => 5 });
  const b = await TelemetryClient.open(spec1, store, { clock: () => 5 });
  await a.record("lg", 1); // a caches the encoder, with the metric secret of the first device secret
  const [old] = Object.keys((await look(store)).state.memo);
  await b.optOut();
  await b.optIn();
  await a.record("lg", 1);
  const memo = (await look(store)).state.memo;
  assert.equal(Object.keys(memo).length, 1);
  assert.notEqual(Object.keys(memo)[0], old, "the memo key of the new secret");
  assert.equal(Object.values(memo)[0][0], 1, "a first report of the value, charged afresh");
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
