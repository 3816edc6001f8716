// The client runtime, its state stores and the uploader: caps per window and lifetime (refusals write nothing),
// memoized charges, a failed update writing nothing, two processes on one FileStore never over-spending, and every
// branch of the upload protocol with a fake fetch (the headless-Chromium test runs it against `ldp serve`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { refusal } from "../test-support/refusal.mjs";
import { LdpTypeError } from "../dist/errors.js";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";

import { CollectionSpec, MemoryStore, TelemetryClient, checkAnswer, parseRetryAfter } from "../dist/index.js";
import { FileStore } from "../dist/node.js";

const SPEC = {
  spec_version: 1, name: "client_test", window_seconds: 100,
  budget: { per_window: 3.0, lifetime: 4.5 }, upload: { min_interval_seconds: 0, max_batch: 4 },
  metrics: {
    cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0, per_window: 2.0 } },
    page: { protocol: "rappor", params: { num_bloombits: 16, num_hashes: 2, num_cohorts: 4, p: 0.25, q: 0.75, f: 0.5 },
      budget: { per_report: 2.1, lifetime: 4.5 } },
  },
};

function clockAt(t) { const c = () => c.now; c.now = t; return c; }

test("record charges per window and lifetime, refuses over a cap with nothing written", async () => {
  const spec = CollectionSpec.fromDict(SPEC);
  const clock = clockAt(1000);
  const client = await TelemetryClient.open(spec, new MemoryStore(), { clock });
  await client.record("cat", 0);
  await client.record("cat", 2);
  await assert.rejects(client.record("cat", 1), (e) => e.name === "BudgetExceeded" && e.scope === "cat" && e.period === "window");
  assert.equal(await client.pending(), 2);
  assert.deepEqual(await client.spent("cat"), { epsilon: 2, delta: 0 });
  await assert.rejects(client.record("cat", 7), refusal("ValueError", "value_range", { got: 7, min: 0, max: 3, max_exclusive: true }));
  await assert.rejects(client.record("cat", "x"), (e) => e instanceof LdpTypeError && e.code === "value_type");
  assert.equal(await client.pending(), 2);
  clock.now = 1100;                                  // the next window
  await client.record("cat", 1);
  await client.record("cat", 1);
  clock.now = 1200;
  await assert.rejects(client.record("cat", 1), (e) => e.name === "BudgetExceeded" && e.scope === "*" && e.period === "lifetime");
  assert.deepEqual(await client.spent("*", "lifetime"), { epsilon: 4, delta: 0 });
});

test("a memoized RAPPOR value costs at most its cap however often it is reported", async () => {
  const spec = CollectionSpec.fromDict({ ...SPEC, budget: { per_window: 100, lifetime: 100 } });
  const cap = spec.params("page").privacyCost;
  const clock = clockAt(0);
  const store = new MemoryStore();
  const client = await TelemetryClient.open(spec, store, { clock });
  const lines = [];
  for (let i = 0; i < 4; i++) {
    clock.now = i * 100;
    await client.record("page", "https://example.com/");
  }
  const life = await client.spent("page", "lifetime");
  assert.ok(life.epsilon <= 4.5 * (1 + 1e-9));
  await store.transact((tx) => { lines.push(...tx.head(100).map((o) => JSON.parse(o.line))); }, { readOnly: true });
  assert.equal(lines.length, 4);
  assert.equal(new Set(lines.map((l) => l.report.payload.cohort)).size, 1, "one cohort, kept");
  assert.ok(cap.epsilon > 0);
});

test("a state of another collection is refused, never reset", async () => {
  const store = new MemoryStore();
  await TelemetryClient.open(CollectionSpec.fromDict(SPEC), store);
  await assert.rejects(TelemetryClient.open(CollectionSpec.fromDict({ ...SPEC, name: "other" }), store), /another store/);
});

test("two processes on one FileStore never spend over the lifetime cap", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-ts-"));
  const path = join(dir, "device");
  const script = `
    import { CollectionSpec, TelemetryClient } from ${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)};
    import { FileStore } from ${JSON.stringify(new URL("../dist/node.js", import.meta.url).href)};
    const spec = CollectionSpec.fromDict(${JSON.stringify({ ...SPEC, budget: { per_window: 25, lifetime: 25 },
      metrics: { cat: { ...SPEC.metrics.cat, budget: { per_report: 1.0 } } } })});
    const client = await TelemetryClient.open(spec, new FileStore(${JSON.stringify(path)}), { clock: () => 1 });
    let ok = 0;
    for (let i = 0; i < 40; i++) { try { await client.record("cat", i % 3); ok++; } catch (e) { if (e.name !== "BudgetExceeded") throw e; } }
    console.log(ok);`;
  const run = () => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script]);
    let out = "";
    child.stdout.on("data", (d) => { out += d; });
    child.stderr.on("data", (d) => { out += d; });
    child.on("exit", (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(out))));
  });
  const counts = await Promise.all([run(), run(), run()]);
  assert.equal(counts.reduce((a, b) => a + b, 0), 25, `recorded ${counts}`);
  const state = JSON.parse(readFileSync(join(path, "state.json"), "utf8"));
  assert.equal(state.outbox[4], 25, "25 reports waiting");
  assert.equal(state.device.totals["*"].lifetime[0], 25);
});

function answer(batch, lines, extra = {}) {
  return JSON.stringify({ batch_id: batch, accepted: lines, rejected: {}, lines, ...extra });
}

function fakeFetch(script) {
  const calls = [];
  const f = async (url, init) => {
    calls.push({ url, init, body: init.body });
    const step = script[Math.min(calls.length - 1, script.length - 1)];
    if (step === "throw") throw new TypeError("network down");
    const lines = String(init.body).trimEnd().split("\n").length;
    const { status, body, headers } = step(init.headers["ldp-batch-id"], lines);
    return new Response(body ?? "", { status, headers });
  };
  f.calls = calls;
  return f;
}

async function filled(n) {
  const spec = CollectionSpec.fromDict({ ...SPEC, budget: { per_window: 100, lifetime: 100 },
    metrics: { cat: { ...SPEC.metrics.cat, budget: { per_report: 1.0 } } } });
  const client = await TelemetryClient.open(spec, new MemoryStore(), { clock: () => 1 });
  for (let i = 0; i < n; i++) await client.record("cat", i % 3);
  return client;
}

const noSleep = { sleep: async () => {}, gzip: false };
const U = "http://u/"; // the fake fetch's collector (a URL: the uploader checks it before sending)

test("upload: a sane 2xx acknowledges, batch by batch", async () => {
  const client = await filled(6);
  const fetch = fakeFetch([(b, n) => ({ status: 200, body: answer(b, n) })]);
  const r = await client.upload("http://x/v1/reports", "tok", { fetch, ...noSleep });
  assert.deepEqual([r.batches, r.acknowledged, r.accepted, r.stopped], [2, 6, 6, "empty"]);
  assert.equal(await client.pending(), 0);
  assert.equal(fetch.calls[0].init.headers.authorization, "Bearer tok");
  assert.equal(fetch.calls[0].init.redirect, "manual");
});

test("upload: an insane 2xx acknowledges nothing; the retry resends the same batch id", async () => {
  const client = await filled(2);
  const bad = fakeFetch([(b, n) => ({ status: 200, body: answer(b, n + 1) })]);
  await assert.rejects(client.upload(U, "t", { fetch: bad, ...noSleep }), (e) => e.name === "UploadProtocolError");
  assert.equal(await client.pending(), 2);
  const good = fakeFetch(["throw", (b, n) => ({ status: 503, headers: { "retry-after": "2" } }),
    (b, n) => ({ status: 500 }), (b, n) => ({ status: 200, body: answer(b, n) })]);
  const waits = [];
  const r = await client.upload(U, "t", { fetch: good, sleep: async (s) => { waits.push(s); }, gzip: false, random: () => 0.5 });
  assert.equal(r.acknowledged, 2);
  const ids = new Set([...bad.calls, ...good.calls].map((c) => c.init.headers["ldp-batch-id"]));
  assert.equal(ids.size, 1, "one batch id across every try");
  assert.deepEqual(waits, [0.5, 2, 2]);
});

test("upload: 413 splits, 401 refuses, redirects are refused, attempts run out", async () => {
  const client = await filled(4);
  const split = fakeFetch([(b, n) => (n > 1 ? { status: 413 } : { status: 200, body: answer(b, n) })]);
  const r = await client.upload(U, "t", { fetch: split, ...noSleep });
  assert.equal(r.acknowledged, 4);
  const more = await filled(1);
  await assert.rejects(more.upload(U, "t", { fetch: fakeFetch([() => ({ status: 401, body: '{"error":"unauthorized"}' })]), ...noSleep }),
    (e) => e.name === "UploadError" && e.status === 401 && e.reason === "unauthorized");
  await assert.rejects(more.upload(U, "t", { fetch: fakeFetch([() => ({ status: 302, headers: { location: "http://evil/" } })]), ...noSleep }),
    (e) => e.name === "UploadError" && e.reason === "redirect");
  await assert.rejects(more.upload(U, "t", { fetch: fakeFetch(["throw"]), maxAttempts: 3, ...noSleep }),
    (e) => e.name === "UploadError" && e.reason === "undelivered");
  assert.equal(await more.pending(), 1);
});

test("checkAnswer and Retry-After follow the Python rules", () => {
  assert.throws(() => checkAnswer("[]", "b", 1), /not a JSON object/);
  assert.throws(() => checkAnswer(answer("c", 1), "b", 1), /names batch/);
  assert.throws(() => checkAnswer('{"batch_id":"b","accepted":1,"rejected":{},"lines":2}', "b", 2), /!= lines/);
  assert.throws(() => checkAnswer('{"batch_id":"b","accepted":true,"rejected":{},"lines":1}', "b", 1), /integer/);
  assert.deepEqual(checkAnswer('{"batch_id":"b","duplicate":true,"lines":3}', "b", 2).lines, 3);
  assert.equal(parseRetryAfter("7", 0), 7);
  assert.equal(parseRetryAfter("Thu, 01 Jan 1970 00:00:10 GMT", 4), 6);
  assert.equal(parseRetryAfter("soon", 0), null);
});

/** A collector on loopback whose reply to each POST is `reply(req, res, n)` (n: the request's number, from 1). */
async function server(reply) {
  const { createServer } = await import("node:http");
  let n = 0;
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => reply(req, res, ++n, body));
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}/v1/reports`, close: () => { srv.closeAllConnections(); srv.close(); },
    get requests() { return n; } };
}

function saneReply(req, res, body) {
  const lines = body.trimEnd().split("\n").length;
  res.writeHead(200, { "content-type": "application/json" });
  res.end(answer(req.headers["ldp-batch-id"], lines));
}

test("upload: a reply that trickles past the deadline is retried like a failed request, then delivered", async () => {
  const client = await filled(2);
  const srv = await server((req, res, n, body) => {
    if (n > 1) return saneReply(req, res, body);
    res.writeHead(200, { "content-type": "application/json" });
    res.write("{");
    const drip = setInterval(() => res.write(" "), 50); // headers sent, then a byte now and then, never the end
    res.on("close", () => clearInterval(drip));
  });
  try {
    const waits = [];
    const r = await client.upload(srv.url, "t", { timeout: 0.4, gzip: false, random: () => 0.5,
      sleep: async (s) => { waits.push(s); } });
    assert.deepEqual([r.acknowledged, srv.requests, waits], [2, 2, [0.5]]);
    const more = await filled(1);
    await assert.rejects(more.upload(srv.url, "t", { timeout: 0.4, maxAttempts: 1, gzip: false,
      fetch: (u, init) => fetch(u, init).then((resp) => new Response(new ReadableStream({ pull: () => new Promise(() => {}) }),
        { status: 200, headers: resp.headers })) }),
    (e) => e.name === "UploadError" && e.reason === "undelivered");
  } finally {
    srv.close();
  }
});

test("upload: a huge reply is read no further than 64 KiB, and a 2xx cut there is not sane", async () => {
  const client = await filled(1);
  let written = 0;
  const srv = await server((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    const chunk = Buffer.alloc(1 << 20, 0x20);
    const pump = () => {
      while (written < 512 * 2 ** 20 && res.write(chunk)) written += chunk.length;
      if (written < 512 * 2 ** 20) res.once("drain", pump);
      else res.end();
    };
    res.on("close", () => res.removeAllListeners("drain"));
    pump();
  });
  try {
    const before = process.memoryUsage().rss;
    await assert.rejects(client.upload(srv.url, "t", { gzip: false, ...noSleep }),
      (e) => e.name === "UploadProtocolError" && /not sane/.test(e.message));
    assert.ok(process.memoryUsage().rss - before < 64 * 2 ** 20, "memory did not follow the reply");
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(written < 64 * 2 ** 20, `the download stopped (${written} bytes written by the server)`);
    assert.equal(await client.pending(), 1, "nothing acknowledged");
  } finally {
    srv.close();
  }
});

test("uploadWhenHidden: a hidden or left page sends with keepalive, at most 60 KiB of lines per request", async () => {
  const client = await filled(0);
  const spec = CollectionSpec.fromDict({ ...SPEC, budget: { per_window: 1e6, lifetime: 1e6 }, upload: { min_interval_seconds: 0, max_batch: 5000 },
    metrics: { cat: { ...SPEC.metrics.cat, budget: { per_report: 1.0 } } } });
  const big = await TelemetryClient.open(spec, new MemoryStore(), { clock: () => 1 });
  for (let i = 0; i < 1200; i++) await big.record("cat", i % 3);
  const doc = Object.assign(new EventTarget(), { visibilityState: "visible" });
  const win = new EventTarget();
  const saved = { document: globalThis.document, add: globalThis.addEventListener, remove: globalThis.removeEventListener };
  globalThis.document = doc;
  globalThis.addEventListener = win.addEventListener.bind(win);
  globalThis.removeEventListener = win.removeEventListener.bind(win);
  try {
    const calls = [];
    const fetch = async (url, init) => {
      calls.push(init);
      const n = String(init.body).trimEnd().split("\n").length;
      return new Response(answer(init.headers["ldp-batch-id"], n), { status: 200 });
    };
    const stop = big.uploadWhenHidden("http://x/", "t", { fetch, gzip: false });
    doc.dispatchEvent(new Event("visibilitychange")); // still visible: nothing
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(calls.length, 0);
    doc.visibilityState = "hidden";
    doc.dispatchEvent(new Event("visibilitychange"));
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(calls.length >= 2, "the outbox went in several keepalive-sized requests");
    assert.ok(calls.every((c) => c.keepalive === true && new TextEncoder().encode(c.body).length <= 60 * 1024));
    assert.equal(await big.pending(), 0);
    await big.record("cat", 1);
    await new Promise((r) => setTimeout(r, 50)); // the batch is pinned and its request built after the record
    const before = calls.length;
    win.dispatchEvent(new Event("pagehide"));
    assert.equal(calls.length, before + 1, "sent synchronously, while the page is still there");
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(await big.pending(), 0, "pagehide sends too");
    stop();
    await big.record("cat", 1);
    win.dispatchEvent(new Event("pagehide"));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(await big.pending(), 1, "stopped listening");
    globalThis.document = undefined;
    assert.throws(() => client.uploadWhenHidden("u", "t"), /needs a page/);
  } finally {
    globalThis.document = saved.document;
    globalThis.addEventListener = saved.add;
    globalThis.removeEventListener = saved.remove;
  }
});

test("thresh through the client: a change opens an epoch and is charged; a repeat replays it for free", async () => {
  const spec = CollectionSpec.fromDict({ spec_version: 1, name: "thresh_client", budget: { per_window: 100, lifetime: 100 },
    upload: { min_interval_seconds: 0, max_batch: 100 },
    metrics: { mood: { protocol: "thresh", params: { epsilon: 1.0, domain_size: 4 }, budget: { per_report: 1.0 } } } });
  const store = new MemoryStore();
  const client = await TelemetryClient.open(spec, store, { clock: () => 5 });
  const values = [0, 0, 2, 2, 2, 0, 3, 3];
  for (const v of values) await client.record("mood", v);
  assert.deepEqual(await client.spent("mood", "lifetime"), { epsilon: 4, delta: 0 }, "four epochs: 0, 2, 0, 3");
  const lines = await store.transact((tx) => tx.head(100).map((o) => JSON.parse(o.line).report.payload.index), { readOnly: true });
  for (const [a, b] of [[0, 1], [2, 3], [3, 4], [6, 7]]) assert.equal(lines[a], lines[b], `reports ${a} and ${b} share an epoch`);
  const epochs = await store.transact((tx) => Object.values(tx.state.changes).map(([, e]) => e), { readOnly: true });
  assert.deepEqual(epochs, [3], "one stream, at its fourth epoch");
});
