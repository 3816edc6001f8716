// The bounded outbox (docs/client.md, "On the device: a bounded outbox, opting out, failing closed"), through each
// store: the outbox keeps at most `maxOutboxBytes`; a record past it, and a `recordMany` batch that does not fit, are
// refused before anything is charged or stored, pinned batches count, an upload frees room; a state written before the
// cap is counted by the next record.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { refusal } from "../test-support/refusal.mjs";

import {
  CollectionSpec, DEFAULT_MAX_OUTBOX_BYTES, MemoryStore, OutboxFullError, TelemetryClient,
} from "../dist/index.js";
import { install, uninstall } from "../test-support/fake-indexeddb.mjs";
import { SPEC, STORES, U, clockAt, collector, look, spec, utf8 } from "../test-support/device.mjs";

install();
after(uninstall);

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
