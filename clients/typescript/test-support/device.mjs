// The device of the on-device tests (test/device*.test.mjs, test/opt-out.test.mjs): a spec of three metrics, a fake
// collector, each store fresh (`STORES`), a wrapper counting the transactions that would write, a FileStore folder's
// files, and `busy`, a device with reports waiting and one upload acknowledged.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { CollectionSpec, IndexedDBStore, MemoryStore, TelemetryClient } from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import { FakeIndexedDB } from "./fake-indexeddb.mjs";

export const SPEC = {
  spec_version: 1, name: "device_test", window_seconds: 1000000, budget: { per_window: 1000, lifetime: 1000 },
  upload: { min_interval_seconds: 3600, max_batch: 4 },
  metrics: {
    cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } },
    page: { protocol: "rappor", params: { num_bloombits: 16, num_hashes: 2, num_cohorts: 4, p: 0.25, q: 0.75, f: 0.5 },
      budget: { per_report: 5.0 } },
    mood: { protocol: "thresh", params: { epsilon: 1.0, domain_size: 4 }, budget: { per_report: 1.0 } },
  },
};
export const spec = CollectionSpec.fromDict(SPEC);
export const U = "http://collector.test/v1/reports";
export const tmp = () => mkdtempSync(join(tmpdir(), "ldp-ts-device-"));
export const utf8 = (s) => new TextEncoder().encode(s).length;

export function clockAt(t) {
  const c = () => c.now;
  c.now = t;
  return c;
}

/** A fake collector: `status` for every request (a sane answer to a 2xx); `calls` counts them. */
export function collector(status = 200) {
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
export const STORES = {
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
export function counting(store) {
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
export function snapshot(dir) {
  const st = (p) => statSync(p, { bigint: true });
  const d = st(dir);
  return [[".", d.mtimeNs, d.ctimeNs], ...readdirSync(dir).sort().map((name) => {
    const s = st(join(dir, name));
    return [name, s.ino, s.size, s.mtimeNs, s.ctimeNs];
  })];
}

/** The state and the outbox as the store has them (a read). */
export function look(store) {
  return store.transact((tx) => ({ state: tx.state, lines: tx.head(tx.pending).map((i) => i.line) }),
    { readOnly: true });
}

/** A device with reports waiting, one upload acknowledged and the interval running: 9 recorded at t = 1000, the first
 * 4 acknowledged then, 5 waiting until t = 4600. */
export async function busy(store, clock) {
  const client = await TelemetryClient.open(spec, store, { clock });
  for (let i = 0; i < 6; i++) await client.record("cat", i % 3);
  await client.record("page", "/home");
  await client.recordMany([["mood", 2], ["mood", 3]]);
  const r = await client.upload(U, "t", { fetch: collector(), gzip: false });
  assert.deepEqual([r.acknowledged, r.stopped, r.nextUploadAt], [4, "interval", 4600]);
  return client;
}

/** What `counts` says after `busy`: cat 0 1 2 0 1 2 (the first four acknowledged), page, mood twice. */
export const BUSY_COUNTS = {
  cat: { reports: 6, pending: 2, uploaded: 4, discarded: 0 },
  page: { reports: 1, pending: 1, uploaded: 0, discarded: 0 },
  mood: { reports: 2, pending: 2, uploaded: 0, discarded: 0 },
};
