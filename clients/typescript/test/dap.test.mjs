// ldp-telemetry-client/dap (issue 87): two-aggregator metrics through the native client's Rust compiled to
// WebAssembly. The DAP reports of ../../rust/tests/data/dap_reports.json replayed byte for byte through `dapTask`;
// the example spec's two metrics recorded with their tasks (each checked against the spec), charged the local ε
// or `per_report` and capped at the task's k reports a window; the outbox line; and every answer of a leader to
// `uploadReports` (a fake fetch), the outbox a queue whose two-aggregator head goes to its leader.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { BudgetExceeded, CollectionSpec, LdpValueError, MemoryStore, TelemetryClient, UploadError } from "../dist/index.js";
import { dapTask, loadDap, refusalCode, twoAggregatorMetrics } from "../dist/dap/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURE = JSON.parse(readFileSync(join(here, "..", "..", "rust", "tests", "data", "dap_reports.json"), "utf8"));
const SPEC = JSON.parse(readFileSync(join(here, "..", "..", "..", "examples", "two_aggregators.json"), "utf8"));
const b64 = (hex) => Buffer.from(hex, "hex").toString("base64url");
const T = 1_700_000_000;

/** A task file as `ldp collect task` writes it, with the fixture's task ID and configs. */
function taskFile(metric, vdaf, extra = {}) {
  return JSON.stringify({ format: "ldp-task/1", task_id: b64(FIXTURE.task_id), app: "example_browser", metric, vdaf,
    window_seconds: 86400, time_precision: 3600, min_batch_size: 10, noise: { mechanism: "none" },
    leader_url: "https://leader.example", helper_url: "https://helper.example", collector_hpke_config: "AQ",
    local: null, hpke_configs: { leader: b64(FIXTURE.leader.config), helper: b64(FIXTURE.helper.config) }, ...extra });
}
const TASKS = {
  search_engine: taskFile("search_engine", { type: "Prio3Histogram", draft: 18, length: 4, chunk_length: 2 },
    { reports_per_window: 1 }),
  crashed: taskFile("crashed", { type: "Prio3Count", draft: 8 },
    { reports_per_window: 2, local: { protocol: "rr", params: { p: 0.25, q: 0.75 } } }),
};

await loadDap();

test("the fixture's DAP reports, byte for byte through dapTask", () => {
  FIXTURE.reports.forEach((c, i) => {
    const task = dapTask(taskFile("m", { ...c.vdaf }));
    const rand = Uint8Array.from({ length: task.randLength }, (_, j) => (31 * j + i) & 0xff);
    const m = Array.isArray(c.measurement) ? c.measurement : [c.measurement];
    const report = task.reportWithRandom(m, c.time, Buffer.from(c.report_id, "hex"), rand);
    assert.equal(Buffer.from(report).toString("hex"), c.report, c.vdaf.type);
    assert.notEqual(Buffer.from(task.report(m, c.time)).toString("hex"), c.report); // fresh randomness
  });
});

test("a malformed task file is refused naming its member", () => {
  assert.throws(() => dapTask("{}"), /not an ldp-task\/1 task file/);
  assert.throws(() => dapTask(taskFile("m", { type: "Prio3Count" }, { hpke_configs: null })), /has no hpke_configs/);
  assert.throws(() => dapTask(taskFile("m", { type: "Prio3Count", draft: 9 })), /vdaf.draft must be 8 or 18/);
});

async function open(tasks = TASKS, clock = () => T) {
  const spec = CollectionSpec.fromDict(SPEC);
  const twoAggregator = twoAggregatorMetrics(spec, tasks);
  return TelemetryClient.open(spec, new MemoryStore(), { twoAggregator, clock });
}

test("each report is charged, k a window pass, and the line holds the sealed report", async () => {
  const client = await open();
  await client.record("search_engine", "engine_b");
  await assert.rejects(client.record("search_engine", "engine_a"), BudgetExceeded); // k = 1
  await client.record("crashed", true);
  await client.record("crashed", false);
  await assert.rejects(client.record("crashed", true), BudgetExceeded); // k = 2 of its local ε
  assert.deepEqual(await client.spent("search_engine"), { epsilon: 1, delta: 0 });
  assert.ok(Math.abs((await client.spent("crashed")).epsilon - 2 * Math.log(3)) < 1e-12);
  assert.equal(await client.pending(), 3);
});

test("a task that is not the metric's is refused, and a metric without one too", async () => {
  const spec = CollectionSpec.fromDict(SPEC);
  assert.throws(() => twoAggregatorMetrics(spec, { ...TASKS, crashed: TASKS.search_engine }), /its metric is search_engine/);
  const other = taskFile("crashed", { type: "Prio3Count", draft: 8 }, { reports_per_window: 3,
    local: { protocol: "rr", params: { p: 0.25, q: 0.75 } } });
  assert.throws(() => twoAggregatorMetrics(spec, { crashed: other }), /reports_per_window is 3, the spec's 2/);
  assert.throws(() => twoAggregatorMetrics(spec, { nope: TASKS.crashed }), /no metric "nope"/);
  const client = await open({ crashed: TASKS.crashed });
  await assert.rejects(client.record("search_engine", "engine_a"), (e) => e instanceof LdpValueError && e.code === "trust_model");
});

/** A fetch answering each PUT from `script` (the last answer repeats), recording the URLs. */
function leader(script) {
  const urls = [];
  const answers = { "201": [201, ""], replayed: [409, '{"code":"report_replayed"}'], early: [400, '{"code":"report_too_early"}'],
    gone: [400, '{"type":"urn:ietf:params:ppm:dap:error:reportRejected"}'], "503": [503, ""], "404": [404, '{"code":"unrecognized_task"}'] };
  const fetch = async (url, init) => {
    assert.equal(init.method, "PUT");
    assert.equal(init.headers["content-type"], "application/dap-report");
    urls.push(url);
    const key = script.length > 1 ? script.shift() : script[0];
    if (key === "reset") throw new TypeError("fetch failed");
    const [status, body] = answers[key];
    return new Response(body || null, { status });
  };
  return { fetch, urls };
}

test("every answer of the leader", async () => {
  const client = await open();
  await client.record("crashed", true);
  await client.record("search_engine", "other");
  const l = leader(["503", "reset", "201", "replayed"]);
  const done = await client.uploadReports({ fetch: l.fetch, sleep: async () => {} });
  assert.deepEqual([done.accepted, done.duplicates, done.acknowledged, done.stopped], [1, 1, 2, "empty"]);
  assert.equal(l.urls[0], `https://leader.example/tasks/${b64(FIXTURE.task_id)}/reports`);
  await client.record("crashed", false);
  assert.equal((await client.uploadReports({ fetch: leader(["early"]).fetch })).stopped, "interval");
  await assert.rejects(client.uploadReports({ fetch: leader(["404"]).fetch }),
    (e) => e instanceof UploadError && e.reason === "unrecognized_task");
  const gone = await client.uploadReports({ fetch: leader(["gone"]).fetch });
  assert.deepEqual(gone.rejected, { report_rejected: 1 });
  assert.deepEqual((await client.counts()).crashed, { reports: 2, pending: 0, uploaded: 2, discarded: 0 });
});

test("the ingest lane stops at a two-aggregator report, and upload sends both in order", async () => {
  const spec = CollectionSpec.fromDict({ ...SPEC, upload: { min_interval_seconds: 0 }, metrics: { ...SPEC.metrics,
    plain: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 } } } });
  const client = await TelemetryClient.open(spec, new MemoryStore(), { clock: () => T,
    twoAggregator: twoAggregatorMetrics(spec, TASKS) });
  await client.record("plain", true);
  await client.record("crashed", true);
  await client.record("plain", false);
  const seen = [];
  const fetch = async (url, init) => {
    seen.push(init.method);
    if (init.method === "PUT") return new Response(null, { status: 201 });
    const lines = String(init.body).trim().split("\n").length;
    return new Response(JSON.stringify({ batch_id: init.headers["ldp-batch-id"], lines, accepted: lines, rejected: {} }), { status: 200 });
  };
  const result = await client.upload("https://ingest.example/v1/reports", "token", { fetch, gzip: false });
  assert.deepEqual(seen, ["POST", "PUT", "POST"]);
  assert.equal(await client.pending(), 0, JSON.stringify(result));
});

test("refusal codes from any body", () => {
  assert.equal(refusalCode('{"code":"report_replayed"}'), "report_replayed");
  assert.equal(refusalCode('{"type":"urn:ietf:params:ppm:dap:error:reportTooEarly"}'), "report_too_early");
  for (const body of ["", "[]", "null", '{"code":3}', '{"type":"x"}', '{"code":"A B"}']) assert.equal(refusalCode(body), null);
});
