// The state stores (src/state.ts, src/node.ts): a transaction commits the state and the outbox together or not at
// all; the FileStore survives a process killed at every step of a transaction — taking the lock and announcing it in
// the folder included, in a record, an acknowledgement and an opt-out — and at 200 random moments, never
// over-spending, never damaged, never locked out; what a killed process leaves is swept by the next write; logs are
// compacted; a live holder makes others wait, then fail with a clear error. Namespaces: test/namespaces.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";

import { CollectionSpec, MemoryStore, TelemetryClient } from "../dist/index.js";
import { FILE_STORE_STEPS, FileStore, LedgerError } from "../dist/node.js";

const DIST = new URL("../dist/", import.meta.url).href;
const SPEC = {
  spec_version: 1, name: "store_test", window_seconds: 1000000, budget: { per_window: 60.0, lifetime: 60.0 },
  upload: { min_interval_seconds: 0, max_batch: 7 },
  metrics: { cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } } },
};
const tmp = () => mkdtempSync(join(tmpdir(), "ldp-ts-store-"));

function answer(batch, lines) {
  return JSON.stringify({ batch_id: batch, accepted: lines, rejected: {}, lines });
}
const okFetch = async (url, init) => {
  const n = String(init.body).trimEnd().split("\n").length;
  return new Response(answer(init.headers["ldp-batch-id"], n), { status: 200 });
};
const OK_FETCH_SOURCE = `async (u, init) => {
  const n = String(init.body).trimEnd().split("\\n").length;
  return new Response(JSON.stringify({ batch_id: init.headers["ldp-batch-id"], accepted: n, rejected: {}, lines: n }),
    { status: 200 }); }`;

/** Runs `body` (module code with `client`, `store`, `spec` in scope) in a child process on the store in `dir`;
 * with `killAt`, the child kills itself (SIGKILL) at that step of its `killTransaction`-th transaction; with `holdMs`,
 * it prints "holding" and blocks that long in its third transaction (the first record), locked. Returns the
 * process, a promise of "ready" on its output, and one of its exit. */
function child(dir, body, { killAt = null, killTransaction = 0, spec = SPEC, holdMs = 0 } = {}) {
  const script = `
    import { CollectionSpec, TelemetryClient } from ${JSON.stringify(DIST + "index.js")};
    import { FileStore } from ${JSON.stringify(DIST + "node.js")};
    const spec = CollectionSpec.fromDict(${JSON.stringify(spec)});
    let transactions = 0;
    const onStep = (s) => {
      if (s === "lock") transactions++;
      if (${JSON.stringify(killAt)} === s && transactions === ${killTransaction}) process.kill(process.pid, "SIGKILL");
      if (${holdMs} > 0 && s === "locked" && transactions === 3) {
        console.log("holding");
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${holdMs});
      }
    };
    const store = new FileStore(${JSON.stringify(dir)}, { onStep, compactBytes: 200 });
    const client = await TelemetryClient.open(spec, store, { clock: () => 5 });
    ${body}`;
  const proc = spawn(process.execPath, ["--input-type=module", "-e", script]);
  let out = "";
  let ready;
  const readyP = new Promise((r) => { ready = r; });
  proc.stdout.on("data", (d) => { out += d; if (/ready|holding/.test(out)) ready(); });
  proc.stderr.on("data", (d) => { out += d; });
  const exit = new Promise((resolve) => proc.on("exit", (code, signal) => { ready(); resolve({ code, signal, out }); }));
  return { proc, ready: readyP, exit };
}

/** The store as a fresh client sees it: ε spent in all, reports waiting, reports acknowledged. */
async function audit(dir, spec = SPEC) {
  const store = new FileStore(dir, { lockWaitMs: 2000 });
  const client = await TelemetryClient.open(CollectionSpec.fromDict(spec), store, { clock: () => 5 });
  const spent = (await client.spent("*", "lifetime")).epsilon;
  const pending = await client.pending();
  const uploaded = await store.transact((tx) => Object.values(tx.state.uploaded).reduce((a, b) => a + b, 0), { readOnly: true });
  const lines = await store.transact((tx) => tx.head(pending).map((i) => JSON.parse(i.line)), { readOnly: true });
  assert.equal(lines.length, pending);
  return { spent, pending, uploaded, client, store };
}

for (const Store of [MemoryStore, FileStore]) {
  test(`${Store.name}: a transaction commits the state and the outbox together, or nothing`, async () => {
    const store = Store === MemoryStore ? new MemoryStore() : new FileStore(tmp());
    const client = await TelemetryClient.open(CollectionSpec.fromDict(SPEC), store, { clock: () => 5 });
    for (let i = 0; i < 5; i++) await client.record("cat", i % 3);
    await assert.rejects(store.transact((tx) => {
      tx.state.clock = 99;
      tx.append({ id: 100, metric: "cat", line: "x" });
      tx.dropHead(2);
      throw new Error("boom");
    }), /boom/);
    const seen = await store.transact((tx) => [tx.pending, tx.state.clock, tx.head(5).map((i) => i.id)], { readOnly: true });
    assert.deepEqual(seen, [5, 5, [1, 2, 3, 4, 5]]);
    await store.transact((tx) => {
      tx.dropHead(2);
      assert.deepEqual(tx.head(10).map((i) => i.id), [3, 4, 5], "head skips what this transaction dropped");
      tx.append({ id: 6, metric: "cat", line: "six" });
      assert.equal(tx.pending, 4);
    });
    assert.deepEqual(await store.transact((tx) => tx.head(10).map((i) => [i.id, i.metric]), { readOnly: true }),
      [[3, "cat"], [4, "cat"], [5, "cat"], [6, "cat"]]);
    await store.transact((tx) => { tx.state.clock = 7; }, { readOnly: true });
    assert.equal(await store.transact((tx) => tx.state.clock, { readOnly: true }), 5, "a read-only transaction writes nothing");
    await assert.rejects(store.transact((tx) => tx.append({ id: 7, metric: "cat", line: "two\nlines" })), /one line/);
  });
}

test("FileStore: logs are compacted and retired, every line kept in order", async () => {
  const dir = tmp();
  const store = new FileStore(dir, { compactBytes: 300 });
  const spec = CollectionSpec.fromDict({ ...SPEC, budget: { per_window: 1000, lifetime: 1000 } });
  const client = await TelemetryClient.open(spec, store, { clock: () => 5 });
  const mirror = [];
  const generations = new Set();
  for (let round = 0; round < 6; round++) {
    for (let i = 0; i < 9; i++) await client.record("cat", i % 3);
    const queue = await store.transact((tx) => tx.head(1000).map((x) => x.line), { readOnly: true });
    mirror.push(...queue.slice(-9));
    await store.transact((tx) => { tx.dropHead(5); }); // 5 acknowledged: the head moves, the log stays
    mirror.splice(0, 5);
    generations.add(JSON.parse(readFileSync(join(dir, "state.json"), "utf8")).outbox[0]);
  }
  assert.ok(generations.size >= 2, "compacted into a new generation at least once");
  assert.equal(readdirSync(dir).filter((n) => n.endsWith(".log")).length, 1, "one live log");
  assert.deepEqual(await store.transact((tx) => tx.head(1000).map((x) => x.line), { readOnly: true }), mirror);
  const sent = [];
  const fetch = async (url, init) => { sent.push(...String(init.body).trimEnd().split("\n")); return okFetch(url, init); };
  await client.upload("http://x/", "t", { fetch, gzip: false });
  assert.deepEqual(sent, mirror, "uploaded in order, each once");
  assert.equal(await client.pending(), 0);
  assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".log")), [], "an empty outbox retires its log");
});

test("FileStore: a process killed at every step of a record leaves a whole state, unlocked", async () => {
  for (const step of FILE_STORE_STEPS) {
    const dir = tmp();
    // The open (a read, then the new state) and three records commit; the sixth transaction (the fourth record)
    // dies at `step`.
    const r = await child(dir, `for (let i = 0; i < 5; i++) await client.record("cat", i % 3);`,
      { killAt: step, killTransaction: 6 }).exit;
    assert.equal(r.signal, "SIGKILL", `${step}: ${r.out}`);
    const t0 = Date.now();
    const { spent, pending, client } = await audit(dir);
    assert.ok(Date.now() - t0 < 1500, `${step}: not locked out`);
    const committed = FILE_STORE_STEPS.indexOf(step) >= FILE_STORE_STEPS.indexOf("state-renamed") ? 4 : 3;
    assert.deepEqual([spent, pending], [committed, committed], `${step}: each report with its charge`);
    await client.record("cat", 1); // appends past a torn tail, if any
    const after = await audit(dir);
    assert.deepEqual([after.spent, after.pending], [committed + 1, committed + 1], `${step}: recording goes on`);
    assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".tmp")), [], `${step}: temporary files swept`);
    // Killed while it held the folder (from `announced` on), it left its lock socket: the next writer of its
    // namespace took the name over and removed it when it let go.
    assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".sock")), [], `${step}: no lock socket left`);
  }
});

test("FileStore: a process killed at every step of an acknowledgement keeps its batch, or drops it whole", async () => {
  for (const step of FILE_STORE_STEPS.filter((s) => !s.startsWith("log-"))) { // an acknowledgement appends nothing
    const dir = tmp();
    const fill = await child(dir, `for (let i = 0; i < 10; i++) await client.record("cat", i % 3);`).exit;
    assert.equal(fill.code, 0, fill.out);
    // open (1), pin (2), acknowledge (3): killed in the acknowledgement.
    const r = await child(dir, `await client.upload("http://x/", "t", { gzip: false, fetch: ${OK_FETCH_SOURCE} });`,
      { killAt: step, killTransaction: 3 }).exit;
    assert.equal(r.signal, "SIGKILL", `${step}: ${r.out}`);
    const { spent, pending, uploaded } = await audit(dir);
    const acked = FILE_STORE_STEPS.indexOf(step) >= FILE_STORE_STEPS.indexOf("state-renamed") ? 7 : 0;
    assert.deepEqual([spent, pending, uploaded], [10, 10 - acked, acked], step);
  }
});

test("FileStore: a process killed at every step of an opt-out keeps the reports, or is opted out whole", async () => {
  for (const step of FILE_STORE_STEPS.filter((s) => !s.startsWith("log-"))) { // opting out appends nothing
    const dir = tmp();
    const fill = await child(dir, `for (let i = 0; i < 10; i++) await client.record("cat", i % 3);`).exit;
    assert.equal(fill.code, 0, fill.out);
    // open (1, a read), opt out (2): killed in the opt-out.
    const r = await child(dir, `await client.optOut();`, { killAt: step, killTransaction: 2 }).exit;
    assert.equal(r.signal, "SIGKILL", `${step}: ${r.out}`);
    const { spent, pending, client, store } = await audit(dir);
    const state = await store.transact((tx) => tx.state, { readOnly: true });
    const out = FILE_STORE_STEPS.indexOf(step) >= FILE_STORE_STEPS.indexOf("state-renamed");
    assert.deepEqual([spent, pending, await client.optedOut(), state.secret === null, state.outboxBytes === 0],
      [10, out ? 0 : 10, out, out, out], `${step}: the budget kept, the rest all before or all after`);
    // The next call that writes finishes the job (or undoes it) and sweeps what the kill left: no report remains.
    if (out) assert.equal(await client.optIn(), true, step);
    else assert.equal(await client.optOut(), 10, step);
    assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".log") || n.endsWith(".tmp")), [], step);
  }
});

test("FileStore: killed at 200 random moments, never over-spent, never damaged, never locked out", async () => {
  const dir = tmp();
  const spec = { ...SPEC, budget: { per_window: 150, lifetime: 150 } };
  const body = `console.log("ready");
    for (let i = 0; ; i++) {
      try { await client.record("cat", i % 3); } catch (e) { if (e.name !== "BudgetExceeded") throw e; }
      if (i % 4 === 3) await client.upload("http://x/", "t", { gzip: false, fetch: ${OK_FETCH_SOURCE} });
    }`;
  let seed = 12345;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  let last = 0;
  for (let kill = 0; kill < 200; kill++) {
    const run = child(dir, body, { spec });
    await run.ready;
    await new Promise((r) => setTimeout(r, random() * 15));
    run.proc.kill("SIGKILL");
    const exit = await run.exit;
    assert.equal(exit.signal, "SIGKILL", exit.out);
    const { spent, pending, uploaded } = await audit(dir, spec);
    assert.equal(spent, pending + uploaded, `kill ${kill}: every report with its charge, each once`);
    assert.ok(spent <= 150 && spent >= last, `kill ${kill}: spent ${spent}, before ${last}`);
    last = spent;
  }
  // Never locked out: after the kills (however far a loaded machine let them get), a run left alone reaches the
  // cap exactly and is then refused.
  const rest = child(dir, `console.log("ready");
    for (let i = 0; ; i++) {
      try { await client.record("cat", i % 3); } catch (e) { if (e.name === "BudgetExceeded") break; throw e; }
    }`, { spec });
  const done = await rest.exit;
  assert.equal(done.code, 0, done.out);
  const { spent, pending, uploaded } = await audit(dir, spec);
  assert.equal(spent, pending + uploaded);
  assert.ok(spent === 150 && spent >= last, `the cap was reached exactly (${spent}, ${last} after the kills)`);
});

test("FileStore: a live holder makes others wait, then fail with a clear error; a damaged state is refused", async () => {
  const dir = tmp();
  const holder = child(dir, `await client.record("cat", 0);`, { holdMs: 1500 });
  await holder.ready; // holding the lock in its third transaction, the record: a reader after it sees the record
  const store = new FileStore(dir, { lockWaitMs: 200 });
  await assert.rejects(store.transact((tx) => tx.pending, { readOnly: true }),
    (e) => e instanceof LedgerError && /held the state for over 200 ms/.test(e.message));
  const patient = new FileStore(dir, { lockWaitMs: 10_000 });
  assert.equal(await patient.transact((tx) => tx.pending, { readOnly: true }), 1, "then gets it, with the record");
  assert.equal((await holder.exit).code, 0);
  writeFileSync(join(dir, "state.json"), "{not json");
  await assert.rejects(new FileStore(dir).transact(() => 0), (e) => e instanceof LedgerError && /damaged/.test(e.message));
  assert.throws(() => new FileStore(join(dir, "state.json")), /not a folder/);
});
