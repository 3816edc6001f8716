// One upload at a time per outbox (issue 73, item 3; src/uploader.ts): concurrent `upload` calls on one outbox —
// promises of one client, and two clients of one process on one store (two `FileStore`s on one folder, two
// `IndexedDBStore`s on one key, one `MemoryStore`) — take turns, so each batch is sent once (or again only after a
// failure: POSTs = batches + retries) and every report is stored once, by a counting collector on loopback. A call
// waiting for its turn waits at most its `callTimeout`, and then returns having sent nothing.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { CollectionSpec, IndexedDBStore, MemoryStore, TelemetryClient } from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import { FakeIndexedDB, install, uninstall } from "../test-support/fake-indexeddb.mjs";

install();
after(uninstall);

const SPEC = CollectionSpec.fromDict({
  spec_version: 1, name: "upload_turns_test", window_seconds: 1000000, budget: { per_window: 1e6, lifetime: 1e6 },
  upload: { min_interval_seconds: 0, max_batch: 3 },
  metrics: { cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } } },
});

/** A collector on loopback that counts: every POST, the batch ids it stored (a batch stored again is a duplicate, as
 * `ldp serve` answers it), and the lines stored; every `refuseEvery`-th POST is a 503 (a retry follows). With
 * `hold`, every answer waits for that promise. */
async function countingCollector({ refuseEvery = 0, hold = null } = {}) {
  const seen = { posts: 0, refused: 0, duplicates: 0, batches: new Map(), lines: 0 };
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", async () => {
      seen.posts++;
      const n = seen.posts;
      if (hold !== null) await hold;
      if (refuseEvery > 0 && n % refuseEvery === 0) {
        seen.refused++;
        res.writeHead(503).end();
        return;
      }
      const id = req.headers["ldp-batch-id"];
      const lines = body.trimEnd().split("\n").length;
      const duplicate = seen.batches.has(id);
      if (duplicate) seen.duplicates++;
      else {
        seen.batches.set(id, lines);
        seen.lines += lines;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(duplicate ? { batch_id: id, duplicate: true, lines }
        : { batch_id: id, accepted: lines, rejected: {}, lines }));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}/v1/reports`, seen,
    close: () => { srv.closeAllConnections(); srv.close(); } };
}

/** Two stores of one process on one outbox, each store kind. */
const PAIRS = {
  "one MemoryStore": () => {
    const store = new MemoryStore();
    return [store, store];
  },
  "two FileStores on one folder": () => {
    const dir = mkdtempSync(join(tmpdir(), "ldp-ts-turns-"));
    return [new FileStore(dir), new FileStore(dir)];
  },
  "two IndexedDBStores on one key": () => {
    const idb = new FakeIndexedDB();
    return [new IndexedDBStore("device", idb), new IndexedDBStore("device", idb)];
  },
};
const TASKS = 40;

for (const [name, pair] of Object.entries(PAIRS)) {
  test(`${name}: ${TASKS} concurrent record + upload, on one client and on two: each batch sent once, each report ` +
    "stored once", { timeout: 120_000 }, async () => {
    const srv = await countingCollector({ refuseEvery: 5 });
    try {
      const [s1, s2] = pair();
      const a = await TelemetryClient.open(SPEC, s1, { clock: () => 5 });
      const b = await TelemetryClient.open(SPEC, s2, { clock: () => 5 });
      const options = { gzip: false, maxDelay: 0 };
      // Half the tasks on `a` (concurrent promises of one client), the other half on `b` (a second client).
      const results = await Promise.all(Array.from({ length: TASKS }, async (_, i) => {
        const client = i % 2 === 0 ? a : b;
        await client.record("cat", i % 3);
        return client.upload(srv.url, "t", options);
      }));
      const last = await a.upload(srv.url, "t", options);
      const { seen } = srv;
      assert.equal(seen.lines, TASKS, "every report stored once");
      assert.equal(seen.duplicates, 0, `no batch sent again after it was stored (${seen.duplicates} were, in ${seen.posts} POSTs ` +
        `for ${seen.batches.size} batches)`);
      assert.equal(seen.posts, seen.batches.size + seen.refused,
        `POSTs (${seen.posts}) = batches (${seen.batches.size}) + retries after a 503 (${seen.refused})`);
      assert.equal([...results, last].reduce((n, r) => n + r.acknowledged, 0), TASKS, "each acknowledged once");
      assert.deepEqual([await a.pending(), await b.pending()], [0, 0]);
      assert.ok(results.some((r) => r.batches === 0 && r.stopped === "empty"), "calls that waited found nothing left");
    } finally {
      srv.close();
    }
  });
}

test("a call waiting for another upload of its outbox waits at most its callTimeout, then returns having sent " +
  "nothing; one without a deadline uploads what is still pending", { timeout: 60_000 }, async () => {
  let release;
  const hold = new Promise((r) => { release = r; });
  const srv = await countingCollector({ hold });
  try {
    const dir = mkdtempSync(join(tmpdir(), "ldp-ts-turns-"));
    const a = await TelemetryClient.open(SPEC, new FileStore(dir), { clock: () => 5 });
    const b = await TelemetryClient.open(SPEC, new FileStore(dir), { clock: () => 5 });
    for (let i = 0; i < 2; i++) await a.record("cat", i);
    const first = a.upload(srv.url, "t", { gzip: false, timeout: 30 }); // its answer held until `release`
    while (srv.seen.posts < 1) await new Promise((r) => setTimeout(r, 5));
    const t0 = performance.now();
    const waited = await b.upload(srv.url, "t", { gzip: false, callTimeout: 0.3 });
    const seconds = (performance.now() - t0) / 1000;
    assert.deepEqual([waited.stopped, waited.batches, waited.acknowledged], ["deadline", 0, 0]);
    assert.ok(seconds >= 0.28, `returned after ${seconds} s, before its deadline`);
    assert.equal(srv.seen.posts, 1, "it sent nothing: the batch in flight is the first call's");
    assert.equal(waited.nextUploadAt, -Infinity, "and it says when the next may go, as any result");
    const patient = b.upload(srv.url, "t", { gzip: false });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(srv.seen.posts, 1, "the patient call waits for its turn");
    release();
    const [r1, r2] = await Promise.all([first, patient]);
    assert.deepEqual([r1.acknowledged, r1.stopped], [2, "empty"]);
    assert.deepEqual([r2.batches, r2.acknowledged, r2.stopped], [0, 0, "empty"], "nothing left to send: not sent twice");
    assert.equal(srv.seen.posts, 1);
  } finally {
    srv.close();
  }
});

test("calls on different outboxes do not wait for each other", { timeout: 60_000 }, async () => {
  let release;
  const hold = new Promise((r) => { release = r; });
  const held = await countingCollector({ hold });
  const free = await countingCollector();
  try {
    const a = await TelemetryClient.open(SPEC, new FileStore(mkdtempSync(join(tmpdir(), "ldp-ts-turns-"))), { clock: () => 5 });
    const b = await TelemetryClient.open(SPEC, new FileStore(mkdtempSync(join(tmpdir(), "ldp-ts-turns-"))), { clock: () => 5 });
    await a.record("cat", 0);
    await b.record("cat", 1);
    const first = a.upload(held.url, "t", { gzip: false });
    while (held.seen.posts < 1) await new Promise((r) => setTimeout(r, 5));
    const other = await b.upload(free.url, "t", { gzip: false, callTimeout: 10 });
    assert.deepEqual([other.acknowledged, other.stopped], [1, "empty"], "another folder's upload went at once");
    release();
    assert.equal((await first).acknowledged, 1);
  } finally {
    held.close();
    free.close();
  }
});
