// Deadlines that hold under load (issue 73, item 2; src/uploader.ts): against a collector on loopback that never
// answers, one that trickles its whole answer (status line included) a byte per 100 ms, and one that sends its
// headers and then trickles the body, an upload is cut at the request's deadline (`timeout`) and at the call's
// (`callTimeout`) — not before it, and within 5 times it — while two busy-loop processes keep the machine's cores
// busy beside the test. Nothing is acknowledged.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";

import { CollectionSpec, MemoryStore, TelemetryClient } from "../dist/index.js";

const SPEC = CollectionSpec.fromDict({
  spec_version: 1, name: "deadline_test", budget: { per_window: 100, lifetime: 100 },
  upload: { min_interval_seconds: 0, max_batch: 10 },
  metrics: { cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } } },
});
const SLACK = 5; // the call ends within SLACK times its deadline, on a loaded machine

const hogs = [];
before(() => {
  for (let i = 0; i < 2; i++) hogs.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
});
after(() => {
  for (const hog of hogs) hog.kill("SIGKILL");
});

/** How a collector on loopback answers each request, once it has read the request's headers: never (`silent`), the
 * whole answer a byte per 100 ms (`trickle`), or its headers at once and then the body a byte per 100 ms
 * (`trickle-body`). */
const ANSWERS = {
  silent: () => () => {},
  trickle: (socket) => drip(socket, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n" +
    "{".padEnd(200, " ")),
  "trickle-body": (socket) => {
    socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n");
    return drip(socket, "{".padEnd(200, " "));
  },
};

/** Writes `text` to `socket` a byte per 100 ms; returns what stops it. */
function drip(socket, text) {
  let at = 0;
  const timer = setInterval(() => {
    if (at < text.length && !socket.destroyed) socket.write(text[at++]);
  }, 100);
  return () => clearInterval(timer);
}

/** A raw TCP collector on loopback answering as `answer` says: its URL, how many requests it saw, and `close`. */
async function collector(answer) {
  const stops = new Set();
  const sockets = new Set();
  let requests = 0;
  const srv = createServer((socket) => {
    sockets.add(socket);
    let head = "";
    socket.on("data", (d) => {
      if (head.includes("\r\n\r\n")) return; // the body: read and dropped
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      requests++;
      const stop = answer(socket);
      stops.add(stop);
      socket.on("close", stop);
    });
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${srv.address().port}/v1/reports`,
    get requests() { return requests; },
    close() {
      for (const stop of stops) stop();
      for (const socket of sockets) socket.destroy();
      srv.close();
    },
  };
}

async function filled(n) {
  const client = await TelemetryClient.open(SPEC, new MemoryStore(), { clock: () => 1 });
  for (let i = 0; i < n; i++) await client.record("cat", i % 3);
  return client;
}

/** Seconds `promise` took to settle, and how: `{ seconds, value }` or `{ seconds, error }`. */
async function timed(promise) {
  const t0 = performance.now();
  try {
    const value = await promise;
    return { seconds: (performance.now() - t0) / 1000, value };
  } catch (error) {
    return { seconds: (performance.now() - t0) / 1000, error };
  }
}

for (const [kind, answer] of Object.entries(ANSWERS)) {
  for (const deadline of [0.5, 1]) {
    test(`a collector that answers ${kind}: the request is cut at its ${deadline} s deadline, under load`, { timeout: 60_000 }, async () => {
      assert.ok(hogs.every((h) => h.exitCode === null), "the hogs are running");
      const srv = await collector(answer);
      try {
        const client = await filled(3);
        const { seconds, error } = await timed(client.upload(srv.url, "t", { timeout: deadline, maxAttempts: 1, gzip: false }));
        assert.ok(error?.name === "UploadError" && error.reason === "undelivered", String(error?.stack ?? error));
        assert.ok(seconds >= deadline * 0.95 && seconds <= SLACK * deadline,
          `cut after ${seconds.toFixed(3)} s, the deadline ${deadline} s`);
        // one attempt: never a second request (on a loaded machine the collector may not even have read the first
        // request's headers within the deadline, so it may have seen none)
        assert.ok(srv.requests <= 1, `${srv.requests} requests`);
        assert.deepEqual([await client.pending(), error.result.acknowledged], [3, 0], "nothing acknowledged");
      } finally {
        srv.close();
      }
    });

    test(`a collector that answers ${kind}: the call is cut at its ${deadline} s deadline, under load`, { timeout: 60_000 }, async () => {
      const srv = await collector(answer);
      try {
        const client = await filled(3);
        const { seconds, value, error } = await timed(client.upload(srv.url, "t", { timeout: 30, callTimeout: deadline,
          gzip: false }));
        assert.equal(error, undefined);
        assert.equal(value.stopped, "deadline");
        assert.ok(seconds >= deadline * 0.95 && seconds <= SLACK * deadline,
          `cut after ${seconds.toFixed(3)} s, the deadline ${deadline} s`);
        assert.deepEqual([value.acknowledged, await client.pending()], [0, 3]);
      } finally {
        srv.close();
      }
    });
  }
}

test("uploadWhenHidden: the request sent as the page goes has the request's deadline too; a collector that never " +
  "answers does not stop the page's later sends", { timeout: 60_000 }, async () => {
  const client = await filled(2);
  const doc = Object.assign(new EventTarget(), { visibilityState: "visible" });
  const win = new EventTarget();
  const saved = { document: globalThis.document, add: globalThis.addEventListener, remove: globalThis.removeEventListener };
  globalThis.document = doc;
  globalThis.addEventListener = win.addEventListener.bind(win);
  globalThis.removeEventListener = win.removeEventListener.bind(win);
  const srv = await collector(ANSWERS.silent);
  try {
    const calls = [];
    const fetch = (url, init) => {
      calls.push({ at: performance.now(), signal: init.signal });
      return globalThis.fetch(url, init);
    };
    const stop = client.uploadWhenHidden(srv.url, "t", { fetch, timeout: 0.5, gzip: false });
    await new Promise((r) => setTimeout(r, 50)); // the first batch pinned and its request built
    win.dispatchEvent(new Event("pagehide"));
    assert.equal(calls.length, 1, "sent at once");
    assert.ok(calls[0].signal instanceof AbortSignal, "under a deadline");
    const t0 = calls[0].at;
    while (!calls[0].signal.aborted && performance.now() - t0 < SLACK * 500) await new Promise((r) => setTimeout(r, 20));
    const seconds = (performance.now() - t0) / 1000;
    assert.ok(calls[0].signal.aborted && seconds >= 0.45 && seconds <= SLACK * 0.5, `cut after ${seconds.toFixed(3)} s`);
    await new Promise((r) => setTimeout(r, 100)); // the failed send settles; the next batch is prepared
    win.dispatchEvent(new Event("pagehide"));
    assert.equal(calls.length, 2, "the page sends again as it goes again");
    stop();
    assert.equal(await client.pending(), 2, "nothing acknowledged");
  } finally {
    srv.close();
    globalThis.document = saved.document;
    globalThis.addEventListener = saved.add;
    globalThis.removeEventListener = saved.remove;
  }
});
