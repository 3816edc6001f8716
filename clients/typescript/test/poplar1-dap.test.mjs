// A spec's `poplar1` string metric through ldp-telemetry-client/dap (issue 89, item 3): the task file read by the
// native client's Poplar1 code compiled to WebAssembly (`poplar1Task`), checked against the spec (every member that
// differs refused by name when the client's options are made), a string recorded as a sealed DAP-09 report of its
// bits/8 bytes (the measurement spied on), charged the spec's per_report and capped at the task's k reports a
// window, a refused value refused before any charge, and the report sent to the task's leader as a Prio3 report is.
// The aggregators opening and counting these reports: tests/clients/test_typescript_poplar1_e2e.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { BudgetExceeded, CollectionSpec, MemoryStore, TelemetryClient } from "../dist/index.js";
import { dapTask, loadDap, poplar1Task, twoAggregatorMetrics } from "../dist/dap/index.js";
import { parseDapLine } from "../dist/dap/metric.js";
import { refusal } from "../test-support/refusal.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURE = JSON.parse(readFileSync(join(here, "..", "..", "rust", "tests", "data", "dap_reports.json"), "utf8"));
const b64 = (hex) => Buffer.from(hex, "hex").toString("base64url");
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const T = 1_700_000_000;
const WORDS = { bits: 64, threshold: 20, max_candidates: 1024 };
const SPEC = { spec_version: 1, name: "words", budget: { per_window: 4, lifetime: 40 }, metrics: {
  new_words: { protocol: "poplar1", params: WORDS, budget: { per_report: 1, per_window: 2 }, trust: "two-aggregator" },
  crashed: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 }, trust: "two-aggregator" },
} };

/** A Poplar1 task file as `ldp collect task` writes it, with the Rust fixture's task ID and aggregators' configs. */
function taskFile(extra = {}, vdaf = {}) {
  return JSON.stringify({ format: "ldp-task/1", task_id: b64(FIXTURE.task_id), app: "words", metric: "new_words",
    vdaf: { type: "Poplar1", draft: 18, bits: 64, max_candidates: 1024, threshold: 20, ...vdaf },
    window_seconds: 86400, time_precision: 3600, min_batch_size: 10, noise: { mechanism: "none" },
    leader_url: "https://leader.example", helper_url: "https://helper.example", collector_hpke_config: "AQ",
    local: null, reports_per_window: 2, spec_fingerprint: "0123456789abcdef",
    hpke_configs: { leader: b64(FIXTURE.leader.config), helper: b64(FIXTURE.helper.config) }, ...extra });
}

await loadDap();

/** DAP-09's `Report` (§4.4.2) of `bytes`, read to its end: metadata, public share, the two sealed input shares. */
function decodeReport(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const take = (n) => { const out = bytes.subarray(at, at + n); at += n; assert.ok(at <= bytes.length, "truncated"); return out; };
  const opaque = (size) => take(size === 2 ? view.getUint16(at) + (at += 2, 0) : view.getUint32(at) + (at += 4, 0));
  const id = take(16), time = Number(view.getBigUint64(at)); at += 8;
  const publicShare = opaque(4);
  const sealed = [0, 1].map(() => ({ configId: take(1)[0], enc: opaque(2), payload: opaque(4) }));
  assert.equal(at, bytes.length, "bytes after the report");
  return { id, time, publicShare, sealed };
}

test("a Poplar1 task's report, sealed through the WebAssembly: DAP-09's shape, the same bytes for the same randomness", () => {
  const task = poplar1Task(taskFile());
  assert.deepEqual([task.metric, task.bits, task.maxCandidates, task.reportsPerWindow, task.windowSeconds, task.timePrecision],
    ["new_words", 64, 1024, 2, 86400, 3600]);
  assert.equal(task.taskId, b64(FIXTURE.task_id));
  assert.ok(task.randLength > 2 * 16 + 3 * 32, String(task.randLength)); // sharding, then each seal's key material
  const packed = Buffer.from("6162630000000000", "hex");
  const id = Uint8Array.from({ length: 16 }, (_, i) => i), rand = Uint8Array.from({ length: task.randLength }, (_, i) => (7 * i) & 0xff);
  const a = task.reportWithRandom(packed, T, id, rand);
  assert.equal(hex(task.reportWithRandom(packed, T, id, rand)), hex(a));
  const r = decodeReport(a);
  assert.deepEqual([hex(r.id), r.time], [hex(id), T - (T % 3600)]);
  assert.deepEqual(r.sealed.map((s) => s.configId), [1, 2]); // the leader's config, then the helper's
  const other = decodeReport(task.reportWithRandom(Buffer.from("6162640000000000", "hex"), T, id, rand));
  assert.equal(other.publicShare.length, r.publicShare.length);
  assert.notEqual(hex(other.publicShare), hex(r.publicShare)); // the string is in the shares
  const fresh = decodeReport(task.report(packed, T));
  assert.notEqual(hex(fresh.id), hex(r.id));
  assert.equal(fresh.publicShare.length, r.publicShare.length);
  assert.throws(() => task.report(Buffer.from("616263", "hex"), T), /64 bits is 8 bytes, got 3/);
});

test("a malformed or foreign task file is refused naming its member", () => {
  assert.throws(() => poplar1Task("{}"), /the task file lacks|not an ldp-task\/1 task file/);
  assert.throws(() => poplar1Task(taskFile({ hpke_configs: null })), /has no hpke_configs/);
  assert.throws(() => poplar1Task(taskFile({ local: { protocol: "rr", params: { p: 0.25, q: 0.75 } } })), /no local protocol/);
  assert.throws(() => poplar1Task(taskFile({}, { draft: 8 })), /vdaf.draft of a Poplar1 task must be 18/);
  assert.throws(() => poplar1Task(taskFile({}, { bits: 300 })), /bits must be an integer in \[1, 256\], got 300/);
  assert.throws(() => poplar1Task(taskFile({}, { max_candidates: 1 })), /max_candidates must be at least 2/);
  assert.throws(() => poplar1Task(taskFile({}, { bits: 64.5 })), /bits must be an integer in \[1, 256\], got 64.5/);
  assert.throws(() => poplar1Task(taskFile({}, { length: 4 })), /Poplar1 takes no length/);
  assert.throws(() => poplar1Task(taskFile({}, { type: "Prio3Count", bits: undefined })), /not a Poplar1 task/);
  assert.throws(() => dapTask(taskFile()), /vdaf.type "Poplar1"/); // and the other way round: the Prio3 reader refuses it
});

/** A client of SPEC with the Poplar1 task (its `report` spied on: the packed measurements in `made`). */
async function open(text = taskFile()) {
  const spec = CollectionSpec.fromDict(SPEC);
  const task = poplar1Task(text), made = [];
  const spied = { ...task, report: (packed, time) => (made.push(hex(packed)), task.report(packed, time)) };
  const twoAggregator = twoAggregatorMetrics(spec, { new_words: spied }), store = new MemoryStore();
  return { client: await TelemetryClient.open(spec, store, { twoAggregator, clock: () => T }), made, task, store };
}

test("a string is recorded as its sealed report: its bits/8 bytes, charged per_report, k a window", async () => {
  const { client, made, task, store } = await open();
  await client.record("new_words", "hello");
  await client.record("new_words", "日本");
  await assert.rejects(client.record("new_words", "third"), BudgetExceeded); // k = 2: per_window 2 / per_report 1
  assert.deepEqual(made, ["68656c6c6f000000", "e697a5e69cac0000"]);
  assert.deepEqual(await client.spent("new_words"), { epsilon: 2, delta: 0 });
  assert.equal(await client.pending(), 2);
  const [first] = (await store.transact((tx) => tx.head(2), { readOnly: true, head: 2 })).map((i) => parseDapLine(i.line));
  assert.equal(first.taskId, task.taskId);
  assert.equal(decodeReport(first.report).time, T - (T % 3600));
});

test("a refused value charges nothing and makes no report; the Prio3 metric without its task stays refused", async () => {
  const { client, made } = await open();
  for (const [value, code] of [["123456789", "value_too_long"], ["ab\u0000", "not_in_alphabet"], [5, "value_type"],
    [null, "value_type"], ["\ud800", "not_encodable"]]) {
    await assert.rejects(client.record("new_words", value), (e) => e.code === code, JSON.stringify(value));
  }
  assert.deepEqual(made, []);
  assert.deepEqual(await client.spent("new_words"), { epsilon: 0, delta: 0 });
  await assert.rejects(client.record("crashed", true), refusal("ValueError", "trust_model", { metric: "crashed", trust: "two-aggregator" }));
  await client.record("new_words", "");
  await client.record("new_words", "12345678");
  assert.deepEqual(made, ["0000000000000000", "3132333435363738"]);
});

test("a task that is not the metric's is refused when the client's options are made, naming the member", () => {
  const spec = CollectionSpec.fromDict(SPEC);
  const refused = (text, why) => assert.throws(() => twoAggregatorMetrics(spec, { new_words: text }), why);
  refused(taskFile({}, { bits: 32 }), /its bits is 32, the spec's 64/);
  refused(taskFile({}, { max_candidates: 512 }), /its max_candidates is 512, the spec's 1024/);
  refused(taskFile({ reports_per_window: 3 }), /its reports_per_window is 3, the spec's 2/);
  refused(taskFile({ metric: "other" }), /its metric is other/);
  refused(taskFile({ window_seconds: 3600 }), /its window_seconds is 3600, the spec's 86400/);
  refused(taskFile({}, { type: "Prio3Count", bits: undefined, max_candidates: undefined, threshold: undefined }), /not a Poplar1 task/);
  assert.throws(() => twoAggregatorMetrics(spec, { crashed: taskFile({ metric: "crashed" }) }), /vdaf.type "Poplar1"/);
  // the collector's T is the task's own (its default threshold): a device does not check it
  assert.doesNotThrow(() => twoAggregatorMetrics(spec, { new_words: taskFile({}, { threshold: 7, levels: 16 }) }));
});

test("the report goes to the task's leader as a DAP report", async () => {
  const { client } = await open();
  await client.record("new_words", "hi");
  const sent = [];
  const fetch = async (url, init) => {
    sent.push([url, init.method, init.headers["content-type"], init.body.length]);
    return new Response(null, { status: 201 });
  };
  const result = await client.uploadReports({ fetch });
  assert.deepEqual([result.accepted, result.stopped, await client.pending()], [1, "empty", 0]);
  assert.deepEqual(sent.map((s) => s.slice(0, 3)),
    [[`https://leader.example/tasks/${b64(FIXTURE.task_id)}/reports`, "PUT", "application/dap-report"]]);
  assert.deepEqual((await client.counts()).new_words, { reports: 1, pending: 0, uploaded: 1, discarded: 0 });
});
