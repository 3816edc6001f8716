// Opting out and what the reports became (docs/client.md, "On the device: a bounded outbox, opting out, failing
// closed"), through each store: `optOut` deletes what collection left and stops it, keeping the budget spent; `optIn`
// draws a fresh secret, which every client of the store reports under; `counts` says per metric what the reports
// became (pending, uploaded, discarded by an opt-out), adding up.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";

import { CollectionSpec, MemoryStore, OptedOutError, TelemetryClient } from "../dist/index.js";
import { install, uninstall } from "../test-support/fake-indexeddb.mjs";
import {
  BUSY_COUNTS, SPEC, STORES, U, busy, clockAt, collector, counting, look, spec,
} from "../test-support/device.mjs";

install();
after(uninstall);

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
