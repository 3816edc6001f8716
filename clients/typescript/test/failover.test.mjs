// The uploader over several collector endpoints (issue 50, `src/endpoints.ts`): a failure that says "this replica
// cannot take it now" (no answer in time, a refused connection, 408, 5xx) moves the part to the next endpoint at once,
// and the following parts stay there; the uploader waits only when every endpoint has failed in a row (the backoff's
// exponent: the round); 429 and 413 stay on the endpoint, other 4xx stop; bad lists are refused before any request.
// The call's deadline (`callTimeout`) and the options' checks are tested here too, on the same fake fetch.
// A fake fetch answers per endpoint; one test uses real sockets (a closed port, then a live server).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import { CollectionSpec, MemoryStore, TelemetryClient, checkEndpoints } from "../dist/index.js";

const [A, B, C] = ["http://a.test/v1/reports", "http://b.test:8080/v1/reports", "https://c.test/v1/reports"];
const TOKEN = "tok-secret";

async function filled(n, maxBatch = 4) {
  const spec = CollectionSpec.fromDict({ spec_version: 1, name: "failover_test", budget: { per_window: 100, lifetime: 100 },
    upload: { min_interval_seconds: 0, max_batch: maxBatch },
    metrics: { cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } } } });
  const client = await TelemetryClient.open(spec, new MemoryStore(), { clock: () => 1 });
  for (let i = 0; i < n; i++) await client.record("cat", i % 3);
  return client;
}

const ok = (batch, lines) => ({ status: 200, body: JSON.stringify({ batch_id: batch, accepted: lines, rejected: {}, lines }) });

/** A fake fetch: `respond(url, call, batchId, lines)` (call: the request's number, from 0) gives `{status, body,
 * headers}`, `"refuse"` (a network error) or `"hang"` (no answer until the request's deadline). */
function fakeFetch(respond) {
  const calls = [];
  const f = async (url, init) => {
    const lines = String(init.body).trimEnd().split("\n").length;
    const batch = init.headers["ldp-batch-id"];
    calls.push({ url, batch, lines });
    const step = respond(url, calls.length - 1, batch, lines);
    if (step === "refuse") throw new TypeError("fetch failed");
    if (step === "hang") { // (AbortSignal.timeout's timer does not keep Node alive: a socket would, this one does)
      const alive = setTimeout(() => {}, 60_000);
      return new Promise((_, reject) => init.signal.addEventListener("abort", () => {
        clearTimeout(alive);
        reject(init.signal.reason);
      }));
    }
    return new Response(step.body ?? "", { status: step.status, headers: step.headers });
  };
  f.calls = calls;
  return f;
}

function recorder() {
  const waits = [], lines = [];
  const options = { sleep: async (s) => { waits.push(s); }, log: (l) => lines.push(l), gzip: false, random: () => 0.5 };
  return { waits, lines, options };
}

test("one URL is a list of one: the same requests and waits, no switch logged", async () => {
  const failures = [{ status: 503, headers: { "retry-after": "2" } }, { status: 500 }, "refuse"];
  const script = (url, call, b, n) => (call < failures.length ? failures[call] : ok(b, n));
  const runs = [];
  for (const endpoints of [A, [A]]) {
    const client = await filled(6);
    const fetch = fakeFetch(script);
    const rec = recorder();
    const r = await client.upload(endpoints, TOKEN, { fetch, ...rec.options });
    runs.push({ urls: fetch.calls.map((c) => c.url), waits: rec.waits, lines: rec.lines, acknowledged: r.acknowledged });
  }
  assert.deepEqual(runs[0], { urls: [A, A, A, A, A], waits: [2, 1, 2], lines: [], acknowledged: 6 });
  assert.deepEqual(runs[1], runs[0]);
});

const FAILURES = {
  "refuses the connection": ["refuse", "network error"],
  "times out": ["hang", "no answer within 0.05 s"],
  "answers 503 (with a Retry-After)": [{ status: 503, headers: { "retry-after": "60" } }, "HTTP 503"],
  "answers 408": [{ status: 408 }, "HTTP 408"],
  "answers 502": [{ status: 502 }, "HTTP 502"],
};

for (const [what, [step, reason]] of Object.entries(FAILURES)) {
  test(`the first endpoint ${what}: the part goes to the second at once, and the next part straight there`, async () => {
    const client = await filled(6);
    const fetch = fakeFetch((url, call, b, n) => (url === A ? step : ok(b, n)));
    const rec = recorder();
    const r = await client.upload([A, B], TOKEN, { fetch, timeout: 0.05, ...rec.options });
    assert.deepEqual(fetch.calls.map((c) => c.url), [A, B, B], "sticky: part 2 goes straight to B");
    assert.equal(fetch.calls[0].batch, fetch.calls[1].batch, "the same batch id on both endpoints");
    assert.notEqual(fetch.calls[1].batch, fetch.calls[2].batch);
    assert.deepEqual([r.batches, r.acknowledged, r.accepted, r.duplicates, r.stopped], [2, 6, 6, 0, "empty"]);
    assert.deepEqual(rec.waits, [], "no sleep");
    assert.deepEqual(rec.lines, [`upload to a.test: ${reason}; switching to b.test:8080 at once`]);
    assert.equal(await client.pending(), 0);
  });
}

test("real sockets: a port nothing listens on, then a live collector", async () => {
  const dead = createServer();
  await new Promise((r) => dead.listen(0, "127.0.0.1", r));
  const deadUrl = `http://127.0.0.1:${dead.address().port}/v1/reports`;
  await new Promise((r) => dead.close(r));
  const seen = [];
  const live = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => {
      seen.push(req.headers["ldp-batch-id"]);
      const { status, body: text } = ok(req.headers["ldp-batch-id"], body.trimEnd().split("\n").length);
      res.writeHead(status, { "content-type": "application/json" });
      res.end(text);
    });
  });
  await new Promise((r) => live.listen(0, "127.0.0.1", r));
  try {
    const client = await filled(9);
    const rec = recorder();
    const r = await client.upload([deadUrl, `http://127.0.0.1:${live.address().port}/v1/reports`], TOKEN, rec.options);
    assert.deepEqual([r.batches, r.acknowledged, seen.length, new Set(seen).size, rec.waits], [3, 9, 3, 3, []]);
    assert.equal(rec.lines.length, 1, "one switch: the later parts stay on the live collector");
  } finally {
    live.closeAllConnections();
    live.close();
  }
});

test("every endpoint failing: one wait per full round, its exponent the round, maxAttempts tries in all", async () => {
  const client = await filled(2);
  const fetch = fakeFetch(() => ({ status: 500 }));
  const rec = recorder();
  await assert.rejects(client.upload([A, B, C], TOKEN, { fetch, maxAttempts: 7, ...rec.options }),
    (e) => e.name === "UploadError" && e.reason === "undelivered");
  assert.deepEqual(fetch.calls.map((c) => c.url), [A, B, C, A, B, C, A]);
  assert.equal(new Set(fetch.calls.map((c) => c.batch)).size, 1);
  assert.deepEqual(rec.waits, [0.5 * 1, 0.5 * 2], "backoff 2^(round-1), full jitter");
  assert.equal(rec.lines.length, 6);
  assert.match(rec.lines[2], /^upload to c\.test: HTTP 500; switching to a\.test in 0\.500 s \(every endpoint failed\)$/);
  assert.equal(await client.pending(), 2, "nothing acknowledged");
});

test("a round starts after the last endpoint tried; a 503's Retry-After sets its wait, capped at maxDelay", async () => {
  const client = await filled(6);
  // part 1: A down, B takes it; part 2: B, C, A answer 503 (A with Retry-After), then B takes it
  const fetch = fakeFetch((url, call, b, n) => (call === 0 || (call >= 2 && call <= 4)
    ? { status: 503, headers: url === A ? { "retry-after": "9" } : {} } : ok(b, n)));
  const rec = recorder();
  const r = await client.upload([A, B, C], TOKEN, { fetch, maxDelay: 5, ...rec.options });
  assert.deepEqual(fetch.calls.map((c) => c.url), [A, B, B, C, A, B]);
  assert.deepEqual(rec.waits, [5]);
  assert.equal(r.acknowledged, 6);
});

test("429 and 413 stay on the endpoint; 400 stops without trying another", async () => {
  const client = await filled(4);
  let throttled = false;
  const fetch = fakeFetch((url, call, b, n) => {
    if (!throttled) {
      throttled = true;
      return { status: 429, headers: { "retry-after": "3" } };
    }
    return n > 1 ? { status: 413 } : ok(b, n);
  });
  const rec = recorder();
  const r = await client.upload([A, B], TOKEN, { fetch, ...rec.options });
  assert.deepEqual([r.acknowledged, r.batches], [4, 4]);
  assert.ok(fetch.calls.every((c) => c.url === A), "every request to A");
  assert.deepEqual([rec.waits, rec.lines], [[3], []]);
  const more = await filled(1);
  const refusing = fakeFetch(() => ({ status: 400, body: '{"error":"bad_request"}' }));
  await assert.rejects(more.upload([A, B], TOKEN, { fetch: refusing, ...recorder().options }),
    (e) => e.name === "UploadError" && e.status === 400 && e.reason === "bad_request");
  assert.deepEqual(refusing.calls.map((c) => c.url), [A]);
  const insane = fakeFetch((url, call, b, n) => ({ status: 200, body: ok(b, n + 1).body }));
  await assert.rejects(more.upload([A, B], TOKEN, { fetch: insane, ...recorder().options }),
    (e) => e.name === "UploadProtocolError");
  assert.deepEqual(insane.calls.map((c) => c.url), [A]);
});

test("bad lists are refused before anything is sent", async () => {
  const client = await filled(1);
  const fetch = fakeFetch((url, call, b, n) => ok(b, n));
  const bad = [
    [[], /non-empty list/],
    [[A, B, A], /endpoint 2 repeats endpoint 0 \(a\.test\)/],
    [["http://A.test:80/v1/reports", A], /endpoint 1 repeats endpoint 0/],
    [[A, "ftp://b.test/"], /endpoint 1 is a URL of scheme ftp:/],
    ["javascript:alert(1)", /endpoint 0 is a URL of scheme javascript:/],
    [[A, "b.test/v1/reports"], /endpoint 1 is not a URL/],
    [[A, 42], /endpoint 1 is a number/],
    [{ length: 1, 0: A }, /non-empty list/],
  ];
  for (const [endpoints, message] of bad) {
    await assert.rejects(client.upload(endpoints, TOKEN, { fetch }), (e) => e instanceof RangeError && message.test(e.message),
      JSON.stringify(endpoints));
  }
  assert.equal(fetch.calls.length, 0);
  assert.equal(await client.pending(), 1);
  assert.deepEqual(checkEndpoints([A, B]).map((e) => e.host), ["a.test", "b.test:8080"]);
});

test("callTimeout: a request that hangs is cut at the call's deadline; the part stays pinned and is resent", async () => {
  const client = await filled(3, 3);
  const hang = fakeFetch(() => "hang");
  const rec = recorder();
  const start = performance.now();
  const r = await client.upload([A, B], TOKEN, { fetch: hang, timeout: 30, callTimeout: 0.2, ...rec.options });
  const took = (performance.now() - start) / 1000;
  assert.ok(took >= 0.19 && took < 5, `returned after ${took} s, not at the call's deadline`);
  assert.deepEqual([r.stopped, r.batches, r.acknowledged, hang.calls.length], ["deadline", 0, 0, 1]);
  assert.equal(r.nextUploadAt, -Infinity, "never uploaded: the next call may go at once");
  assert.equal(await client.pending(), 3, "nothing acknowledged");
  const fetch = fakeFetch((url, call, b, n) => ok(b, n));
  const again = await client.upload([A, B], TOKEN, { fetch, callTimeout: 5, ...recorder().options });
  assert.deepEqual([again.stopped, again.acknowledged], ["empty", 3]);
  assert.equal(fetch.calls[0].batch, hang.calls[0].batch, "the pinned part is resent under its id");
});

const WAITS = {
  "a 503's Retry-After": { status: 503, headers: { "retry-after": "60" } },
  "a 429's Retry-After": { status: 429, headers: { "retry-after": "60" } },
  "the backoff": { status: 500 },
};

for (const [what, answer] of Object.entries(WAITS)) {
  test(`callTimeout: a wait (${what}) that would pass the deadline ends the call instead`, async () => {
    const client = await filled(2);
    const fetch = fakeFetch(() => answer);
    const rec = recorder();
    const r = await client.upload(A, TOKEN, { fetch, callTimeout: 0.25, maxDelay: 60, ...rec.options,
      random: () => 1 });
    assert.deepEqual([r.stopped, fetch.calls.length, rec.waits], ["deadline", 1, []]);
    assert.equal(await client.pending(), 2);
  });
}

test("callTimeout: waits that fit are taken, and the call ends by its deadline at the latest", async () => {
  const client = await filled(2);
  const fetch = fakeFetch(() => ({ status: 503, headers: { "retry-after": "0" } }));
  const rec = recorder();
  rec.options.sleep = (s) => new Promise((res) => setTimeout(res, 40 + s * 1000));
  const start = performance.now();
  const r = await client.upload([A, B], TOKEN, { fetch, callTimeout: 0.3, maxAttempts: 1000, ...rec.options });
  const took = (performance.now() - start) / 1000;
  assert.equal(r.stopped, "deadline");
  assert.ok(fetch.calls.length >= 3 && took < 2, `${fetch.calls.length} requests in ${took} s`);
});

test("bad tokens and options are refused before anything is sent", async () => {
  const client = await filled(1);
  const fetch = fakeFetch((url, call, b, n) => ok(b, n));
  const bad = [
    ["", {}, /upload token must be a non-empty printable ASCII string without spaces/],
    ["a b", {}, /upload token/], ["tok\n", {}, /upload token/], ["t\u00e9", {}, /upload token/], [42, {}, /upload token/],
    ...[0, -1, NaN, Infinity, "3", null].map((v) => [TOKEN, { timeout: v }, /^timeout \(seconds for one request/]),
    ...[0, -1, NaN, Infinity, "3"].map((v) => [TOKEN, { callTimeout: v }, /^callTimeout \(seconds for the whole/]),
    ...[-1, NaN, "3", null].map((v) => [TOKEN, { maxDelay: v }, /^maxDelay must be a number >= 0/]),
    ...[0, -1, 1.5, NaN, Infinity, "3", null].map((v) => [TOKEN, { maxAttempts: v }, /^maxAttempts must be a whole/]),
  ];
  for (const [token, options, message] of bad) {
    await assert.rejects(client.upload(A, token, { fetch, ...options }),
      (e) => e instanceof RangeError && message.test(e.message), `${JSON.stringify(token)} ${String(Object.values(options))}`);
  }
  assert.equal(fetch.calls.length, 0);
  const r = await client.upload(A, TOKEN, { fetch, callTimeout: null, maxDelay: 0, timeout: 1e-3 * 50 });
  assert.equal(r.acknowledged, 1, "null callTimeout (none), a zero backoff cap and a short timeout are fine");
});

test("in a page a relative URL is resolved against the page, as fetch does; elsewhere it is refused", () => {
  assert.throws(() => checkEndpoints("/v1/reports"), /endpoint 0 is not a URL/);
  const saved = globalThis.location;
  globalThis.location = { href: "https://app.example/shop/index.html" };
  try {
    assert.deepEqual(checkEndpoints(["/v1/reports", "https://backup.example/v1/reports"]),
      [{ url: "/v1/reports", host: "app.example" }, { url: "https://backup.example/v1/reports", host: "backup.example" }]);
    assert.throws(() => checkEndpoints(["/v1/reports", "https://app.example/v1/reports"]), /repeats endpoint 0/);
  } finally {
    globalThis.location = saved;
  }
});

test("uploadWhenHidden: the request as the page goes is for the first endpoint; the rest follows over the list", async () => {
  const client = await filled(6);
  const doc = Object.assign(new EventTarget(), { visibilityState: "visible" });
  const win = new EventTarget();
  const saved = { document: globalThis.document, add: globalThis.addEventListener, remove: globalThis.removeEventListener };
  globalThis.document = doc;
  globalThis.addEventListener = win.addEventListener.bind(win);
  globalThis.removeEventListener = win.removeEventListener.bind(win);
  try {
    assert.throws(() => client.uploadWhenHidden([A, A], TOKEN), /repeats endpoint 0/);
    assert.throws(() => client.uploadWhenHidden(A, "tok en"), /upload token/, "checked now: its errors are dropped later");
    assert.throws(() => client.uploadWhenHidden(A, TOKEN, { timeout: 0 }), /^ValueError|timeout/);
    const fetch = fakeFetch((url, call, b, n) => (url === A ? "refuse" : ok(b, n)));
    const stop = client.uploadWhenHidden([A, B], TOKEN, { fetch, gzip: false });
    await new Promise((r) => setTimeout(r, 20)); // the first batch pinned and its request built
    win.dispatchEvent(new Event("pagehide"));
    await new Promise((r) => setTimeout(r, 100));
    stop();
    assert.deepEqual(fetch.calls.map((c) => c.url), [A, A, B, B], "the keepalive one to A; then A, B (failover), B (sticky)");
    assert.equal(await client.pending(), 0);
  } finally {
    globalThis.document = saved.document;
    globalThis.addEventListener = saved.add;
    globalThis.removeEventListener = saved.remove;
  }
});
