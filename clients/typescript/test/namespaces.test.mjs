// A FileStore folder shared across namespaces (src/node.ts, "The lock"): two recorders on one folder, one of them in
// a network namespace of its own (`unshare -n`: two containers sharing a volume) or in a PID namespace of its own
// (`unshare -p -f`), record, pin and acknowledge as fast as they can for a few seconds. The store must come out
// whole: it opens, every report has its charge and is counted once (recorded = pending + uploaded), each recorder's
// own count adds up, and no error was raised. Before the lock had a part reached through the folder, the two took
// the lock at once and damaged the store ("outbox.0.log is damaged: shorter than its committed ... bytes").
// Skipped, saying why, where `unshare` is not permitted.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { CollectionSpec, TelemetryClient } from "../dist/index.js";
import { FileStore, LedgerError } from "../dist/node.js";

const DIST = new URL("../dist/", import.meta.url).href;
const SPEC = {
  spec_version: 1, name: "namespaces_test", window_seconds: 1000000, budget: { per_window: 1e9, lifetime: 1e9 },
  upload: { min_interval_seconds: 0, max_batch: 5 },
  metrics: { cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 3 }, budget: { per_report: 1.0 } } },
};
const RUN_MS = 3000;
const AT_LEAST = 10; // records each, past RUN_MS if need be (one of two processes may get the lock far more often)

/** Why `unshare` with `flags` cannot run a command here, or `null` when it can. */
function unshareRefused(flags) {
  const r = spawnSync("unshare", [...flags, "true"], { encoding: "utf8" });
  if (r.error) return `unshare ${flags.join(" ")} cannot run here (${r.error.code ?? r.error.message})`;
  return r.status === 0 ? null : `unshare ${flags.join(" ")} is not permitted here: ${r.stderr.trim() || `exit ${r.status}`}`;
}

/** The recorder: records, and every third record uploads (pins a batch of at most 5, acknowledges it through a
 * fake collector), from `start` (a shared wall-clock time, so both run at once) for `RUN_MS` and until it recorded
 * `AT_LEAST`; prints what it did. */
const RECORDER = `
  const [dist, dir, start, runMs, atLeast, spec] = process.argv.slice(1);
  const { CollectionSpec, TelemetryClient } = await import(dist + "index.js");
  const { FileStore } = await import(dist + "node.js");
  const fetch = async (url, init) => {
    const n = String(init.body).trimEnd().split("\\n").length;
    return new Response(JSON.stringify({ batch_id: init.headers["ldp-batch-id"], accepted: n, rejected: {}, lines: n }),
      { status: 200 });
  };
  const client = await TelemetryClient.open(CollectionSpec.fromDict(JSON.parse(spec)), new FileStore(dir, { compactBytes: 2000 }));
  while (Date.now() < Number(start)) await new Promise((r) => setTimeout(r, 1));
  let recorded = 0, acknowledged = 0, uploads = 0;
  while (Date.now() < Number(start) + Number(runMs) || recorded < Number(atLeast)) {
    await client.record("cat", recorded % 3);
    recorded++;
    if (recorded % 3 === 0) {
      acknowledged += (await client.upload("http://collector.test/v1/reports", "t", { fetch, gzip: false })).acknowledged;
      uploads++;
    }
  }
  console.log(JSON.stringify({ recorded, acknowledged, uploads }));
`;

function recorder(prefix, dir, start) {
  const argv = [...prefix, process.execPath, "--input-type=module", "-e", RECORDER, DIST, dir, String(start),
    String(RUN_MS), String(AT_LEAST), JSON.stringify(SPEC)];
  const proc = spawn(argv[0], argv.slice(1));
  let out = "", err = "";
  proc.stdout.on("data", (d) => { out += d; });
  proc.stderr.on("data", (d) => { err += d; });
  return new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal, out, err })));
}

/** Two recorders on one fresh folder, one run through `prefix`: both exit 0 and the store is whole and exact. */
async function sharedFolder(prefix) {
  const dir = mkdtempSync(join(tmpdir(), "ldp-ts-ns-"));
  const start = Date.now() + 1500; // both started (node and the dist loaded) before either records
  const [inside, outside] = await Promise.all([recorder(prefix, dir, start), recorder([], dir, start)]);
  for (const [who, r] of [["inside", inside], ["outside", outside]]) {
    assert.equal(r.code, 0, `the recorder ${who} the namespace failed: ${r.err || r.out}`);
  }
  const a = JSON.parse(inside.out), b = JSON.parse(outside.out);
  assert.ok(a.recorded >= AT_LEAST && b.recorded >= AT_LEAST, `both recorded (${a.recorded}, ${b.recorded})`);
  const store = new FileStore(dir);
  const client = await TelemetryClient.open(CollectionSpec.fromDict(SPEC), store);
  const counts = await client.counts();
  const spent = (await client.spent("*", "lifetime")).epsilon;
  const recorded = a.recorded + b.recorded;
  assert.deepEqual(counts, { cat: { reports: recorded, pending: recorded - a.acknowledged - b.acknowledged,
    uploaded: a.acknowledged + b.acknowledged, discarded: 0 } }, "every report counted once, where it is");
  assert.equal(spent, recorded, "every report with its charge, each once");
  const lines = await store.transact((tx) => tx.head(tx.pending).map((i) => JSON.parse(i.line)), { readOnly: true });
  assert.equal(lines.length, counts.cat.pending, "the waiting reports read whole");
  const upload = await client.upload("http://collector.test/v1/reports", "t", { gzip: false, fetch: async (url, init) => {
    const n = String(init.body).trimEnd().split("\n").length;
    return new Response(JSON.stringify({ batch_id: init.headers["ldp-batch-id"], accepted: n, rejected: {}, lines: n }));
  } });
  assert.equal(upload.acknowledged, counts.cat.pending, "what waited uploads");
  const logs = readdirSync(dir).filter((n) => n.endsWith(".log"));
  assert.deepEqual(logs, [], "an empty outbox keeps no log");
  return { dir, a, b };
}

const netRefused = unshareRefused(["-n"]);
test("FileStore: two recorders on one folder, one in a network namespace of its own, never damage the store",
  { skip: netRefused ?? false }, async () => {
    const { dir } = await sharedFolder(["unshare", "-n"]);
    const sockets = readdirSync(dir).filter((n) => /^lock\.\d+\.sock$/.test(n));
    for (const name of sockets) assert.ok(statSync(join(dir, name)).isSocket(), name);
  });

const pidRefused = unshareRefused(["-p", "-f", "--mount-proc"]);
test("FileStore: two recorders on one folder, one in a PID namespace of its own, never damage the store",
  { skip: pidRefused ?? false }, async () => {
    await sharedFolder(["unshare", "-p", "-f", "--mount-proc"]);
  });

/** Runs `body` (module code with `store`, a FileStore on `dir` told `onStep`) in a child process through `prefix`
 * (`unshare -n`, or nothing); `holdAt`: the step at which the child, the first time, prints "holding" and blocks for
 * `holdMs` (its event loop stopped, as a process busy in a transaction); `killAt`: the step at which it kills itself.
 * Returns a promise of "holding" and one of its exit. */
function child(prefix, dir, body, { holdAt = null, holdMs = 0, killAt = null } = {}) {
  const script = `
    import { FileStore } from ${JSON.stringify(DIST + "node.js")};
    let held = false;
    const onStep = (s) => {
      if (s === ${JSON.stringify(killAt)}) process.kill(process.pid, "SIGKILL");
      if (s === ${JSON.stringify(holdAt)} && !held) {
        held = true;
        console.log("holding");
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${holdMs});
      }
    };
    const store = new FileStore(${JSON.stringify(dir)}, { onStep });
    ${body}`;
  const argv = [...prefix, process.execPath, "--input-type=module", "-e", script];
  const proc = spawn(argv[0], argv.slice(1));
  let out = "", ready;
  const holding = new Promise((r) => { ready = r; });
  proc.stdout.on("data", (d) => { out += d; if (out.includes("holding")) ready(); });
  proc.stderr.on("data", (d) => { out += d; });
  const exit = new Promise((resolve) => proc.on("exit", (code, signal) => { ready(); resolve({ code, signal, out }); }));
  return { holding, exit };
}

const RECORD = `await store.transact((tx) => {
  tx.state ??= { n: 0 };
  tx.state.n += 1;
  tx.append({ id: tx.state.n, metric: "m", line: "report " + tx.state.n });
});`;
const sockets = (dir) => readdirSync(dir).filter((n) => /\.sock$/.test(n)).sort();
/** A fresh folder whose path is longer than a socket address holds (108 bytes). */
function longFolder() {
  const dir = join(mkdtempSync(join(tmpdir(), "ldp-ts-ns-")), "a-folder-whose-path-is-too-long-for-a-unix-socket-address".repeat(2));
  mkdirSync(dir);
  assert.ok(Buffer.byteLength(join(dir, "lock.4026531840.sock")) > 108);
  return dir;
}

test("FileStore: a writer of another network namespace holding the folder keeps writers here out, naming its socket; " +
  "reads here go on and write nothing (a folder path too long for a socket address)", { skip: netRefused ?? false }, async () => {
  const dir = longFolder();
  const first = child([], dir, RECORD);
  assert.equal((await first.exit).code, 0);
  const holder = child(["unshare", "-n"], dir, RECORD, { holdAt: "announced", holdMs: 4000 });
  await holder.holding;
  const [name] = sockets(dir);
  assert.match(name, /^lock\.\d+\.sock$/, "the holder's socket, in the folder");
  const own = `lock.${statSync("/proc/self/ns/net").ino}.sock`;
  assert.notEqual(name, own, "of another namespace");
  const store = new FileStore(dir, { lockWaitMs: 300 });
  const before = statSync(dir, { bigint: true });
  assert.deepEqual(await store.transact((tx) => [tx.state, tx.pending], { readOnly: true }), [{ n: 1 }, 1],
    "a read sees the last committed state, at once");
  const after = statSync(dir, { bigint: true });
  assert.deepEqual([after.mtimeNs, after.ctimeNs], [before.mtimeNs, before.ctimeNs], "and leaves the folder as it was");
  const t0 = Date.now();
  await assert.rejects(store.transact((tx) => { tx.state.n += 10; }),
    (e) => e instanceof LedgerError && e.message.includes("another process held the state for over 300 ms") &&
      e.message.includes(`another network namespace: its ${name} answers`));
  assert.ok(Date.now() - t0 >= 300);
  assert.deepEqual(sockets(dir), [name], "the writer here gave way, removing its own socket");
  const patient = new FileStore(dir, { lockWaitMs: 60_000 });
  await patient.transact((tx) => { tx.state.n += 10; });
  assert.equal((await holder.exit).code, 0);
  assert.deepEqual(await patient.transact((tx) => [tx.state, tx.pending], { readOnly: true }), [{ n: 12 }, 2],
    "the writer here went after the holder, on its state");
  assert.deepEqual(sockets(dir), [], "each holder removed its socket when it let go");
});

test("FileStore: a read that finds a new store's log before its state while another namespace writes it tries " +
  "again; with no writer alive, the same folder is refused", { skip: netRefused ?? false }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-ts-ns-"));
  const writer = child(["unshare", "-n"], dir, RECORD, { holdAt: "log-synced", holdMs: 3000 });
  await writer.holding; // outbox.0.log written and synced; state.json not yet
  assert.deepEqual(readdirSync(dir).filter((n) => !n.endsWith(".sock")), ["outbox.0.log"]);
  let tries = 0;
  const reader = new FileStore(dir, { onStep: (s) => { if (s === "locked") tries++; } });
  assert.deepEqual(await reader.transact((tx) => [tx.state, tx.pending], { readOnly: true }), [{ n: 1 }, 1]);
  assert.ok(tries > 1, "it saw the log without a state, and tried again");
  assert.equal((await writer.exit).code, 0);

  const dead = mkdtempSync(join(tmpdir(), "ldp-ts-ns-"));
  const killed = await child(["unshare", "-n"], dead, RECORD, { killAt: "log-synced" }).exit;
  assert.equal(killed.signal, "SIGKILL");
  const names = readdirSync(dead).sort();
  assert.equal(names.filter((n) => n.endsWith(".sock")).length, 1, "the killed writer's socket stays");
  const t0 = Date.now();
  await assert.rejects(new FileStore(dead).transact((tx) => tx.pending, { readOnly: true }),
    (e) => e instanceof LedgerError && /state\.json is missing but outbox\.0\.log remain/.test(e.message));
  assert.ok(Date.now() - t0 < 10_000, "refused at once, not after lockWaitMs");
  assert.deepEqual(readdirSync(dead).sort(), names, "refused with nothing changed");
});

test("FileStore: a writer here whose state another namespace changed before it announced itself runs again on the " +
  "new state", { skip: netRefused ?? false }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-ts-ns-"));
  const first = child([], dir, RECORD);
  assert.equal((await first.exit).code, 0);
  let reads = 0;
  const onStep = (s) => {
    if (s !== "read" || reads++ !== 0) return;
    // Between this writer's read and its announcement, a writer of another namespace records (and is not kept out:
    // this one holds only its own namespace's abstract socket so far).
    const script = `import { FileStore } from ${JSON.stringify(DIST + "node.js")};
      const store = new FileStore(${JSON.stringify(dir)});
      ${RECORD}`;
    const r = spawnSync("unshare", ["-n", process.execPath, "--input-type=module", "-e", script], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
  };
  const store = new FileStore(dir, { onStep });
  const runs = [];
  await store.transact((tx) => {
    runs.push(tx.state.n);
    tx.state.n += 1;
    tx.append({ id: tx.state.n, metric: "m", line: "report " + tx.state.n });
  });
  assert.deepEqual(runs, [1, 2], "run on the state read, then again on the one the other namespace committed");
  const seen = await store.transact((tx) => [tx.state, tx.head(10).map((i) => i.line)], { readOnly: true });
  assert.deepEqual(seen, [{ n: 3 }, ["report 1", "report 2", "report 3"]], "both records kept, each once");
});

test("FileStore: lock sockets are no traces of a state; another namespace's stale socket is left to it and does not " +
  "keep writers out", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-ts-ns-"));
  // A socket its holder left when it was killed (SIGKILL: libuv had no chance to remove it), named as another
  // namespace's would be.
  const stale = join(dir, "lock.4242.sock");
  const left = spawnSync(process.execPath, ["-e", `require("net").createServer().listen(${JSON.stringify(stale)}, () =>
    process.kill(process.pid, "SIGKILL"))`]);
  assert.equal(left.signal, "SIGKILL");
  assert.ok(statSync(stale).isSocket());
  const store = new FileStore(dir, { lockWaitMs: 2000 });
  assert.deepEqual(await store.transact((tx) => [tx.state, tx.pending], { readOnly: true }), [null, 0],
    "a folder with a lock socket alone opens as a new device");
  for (let i = 0; i < 3; i++) await store.transact((tx) => { tx.state = { n: i }; });
  assert.deepEqual(sockets(dir), ["lock.4242.sock"], "another namespace's name: only its owner removes it");
  assert.equal(await store.transact((tx) => tx.state.n, { readOnly: true }), 2);
});
