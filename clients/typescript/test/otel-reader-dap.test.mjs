// The privatizing MetricReader (src/otel/reader.ts) with two-aggregator metrics: the example spec's two metrics
// (examples/two_aggregators.json) fed by OpenTelemetry instruments, their tasks given as `twoAggregator` (what
// `twoAggregatorMetrics` of ldp-telemetry-client/dap makes). Each window's value is recorded as a DAP report line
// (charged the spec's charge, the exact value measured for `two-aggregator`, the randomized bit for
// `two-aggregator+local`), one per metric per window, and sent to the task's leader without an ingest service; a
// declared two-aggregator metric without its task is refused when the reader is made; the otel entry never imports
// the dap entry. Python's tests/otel/test_otel_reader_dap.py is the same, and collects from real aggregators.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { CollectionSpec } from "../dist/index.js";
import { dapTask, loadDap, twoAggregatorMetrics } from "../dist/dap/index.js";
import { app, outbox, records } from "../test-support/otel-app.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURE = JSON.parse(readFileSync(join(here, "..", "..", "rust", "tests", "data", "dap_reports.json"), "utf8"));
const EXAMPLE = JSON.parse(readFileSync(join(here, "..", "..", "..", "examples", "two_aggregators.json"), "utf8"));
const b64 = (hex) => Buffer.from(hex, "hex").toString("base64url");
const DAY = 86400;
const T0 = 20_000 * DAY; // the start of window 20000
const LN3 = Math.log(3);
const IDS = { search_engine: b64("11".repeat(32)), crashed: b64(FIXTURE.task_id) };

const OTEL = {
  search_engine: { instrument: "browser.searches", kind: "counter", value: "attribute", attribute: "engine" },
  crashed: { instrument: "app.crashes", kind: "counter", value: "any" },
};
const SPEC = CollectionSpec.fromDict({ ...EXAMPLE, metrics: Object.fromEntries(Object.entries(EXAMPLE.metrics)
  .map(([name, m]) => [name, { ...m, otel: OTEL[name] }])) });

/** A task file as `ldp collect task` writes it for the example's metric, with the fixture's aggregator configs. */
function taskFile(metric) {
  const vdaf = metric === "crashed" ? { type: "Prio3Count", draft: 8 } :
    { type: "Prio3Histogram", draft: 18, length: 4, chunk_length: 2 };
  return JSON.stringify({ format: "ldp-task/1", task_id: IDS[metric], app: "example_browser", metric, vdaf,
    window_seconds: DAY, time_precision: 3600, min_batch_size: 10, noise: { mechanism: "none" },
    leader_url: `https://leader.example/${metric}`, helper_url: "https://helper.example",
    collector_hpke_config: "AQ", reports_per_window: metric === "crashed" ? 2 : 1,
    local: metric === "crashed" ? { protocol: "rr", params: { p: 0.25, q: 0.75 } } : null,
    hpke_configs: { leader: b64(FIXTURE.leader.config), helper: b64(FIXTURE.helper.config) } });
}

await loadDap();

/** The spec's tasks, each report's measurement kept in `made` (by metric). */
function tasks(names = ["search_engine", "crashed"]) {
  const made = {};
  const given = Object.fromEntries(names.map((name) => {
    const task = dapTask(taskFile(name));
    made[name] = [];
    return [name, { ...task, report: (m, time) => (made[name].push(m), task.report(m, time)) }];
  }));
  return { twoAggregator: twoAggregatorMetrics(SPEC, given), made };
}

/** A fake leader: every report PUT to it, answered `status`. */
function leader(status) {
  const puts = [];
  const fetch = async (url, init) => {
    puts.push([url, Buffer.from(init.body).toString("base64url")]);
    return new Response(null, { status: fake.status });
  };
  const fake = { status, puts, options: { fetch, sleep: async () => {}, maxAttempts: 1 } };
  return fake;
}

function measure(meter, engines, crashes) {
  const searches = meter.createCounter("browser.searches");
  for (const [engine, n] of Object.entries(engines)) searches.add(n, { engine });
  meter.createCounter("app.crashes").add(crashes);
}

test("each window is recorded, charged and queued as one DAP line per metric, then sent to the leader", async () => {
  const { twoAggregator, made } = tasks();
  const fake = leader(503); // busy: the reports stay queued
  const { reader, provider, meter, store, clock } = app({ spec: SPEC, clock: { now: T0 + 100 }, twoAggregator,
    uploadOptions: fake.options });
  measure(meter, { engine_c: 3, engine_a: 1, not_an_engine: 9 }, 0);
  await provider.forceFlush();
  assert.deepEqual([await reader.pending(), fake.puts], [[], []]); // nothing before the window ends
  clock.now = T0 + DAY + 5;
  await provider.forceFlush();
  measure(meter, { other: 2 }, 1);
  clock.now = T0 + 2 * DAY + 5;
  await provider.forceFlush();
  const both = { crashed: "recorded", search_engine: "recorded" };
  assert.deepEqual(reader.reported.map((r) => [r.window, r.outcome]), [[20_000, both], [20_001, both]]);
  // the protocol's values go to the client: a boolean, a category index
  assert.deepEqual(records.map((r) => [r.metric, r.value]),
    [["crashed", false], ["search_engine", 2], ["crashed", true], ["search_engine", 3]]);
  // two-aggregator: the exact value (its index: Prio3Histogram's measurement), no noise; +local: the randomized bit
  assert.deepEqual(made.search_engine, [[2], [3]]);
  assert.ok(made.crashed.length === 2 && made.crashed.every((m) => m.length === 1 && (m[0] === 0 || m[0] === 1)));
  const lines = await outbox(store);
  assert.deepEqual(lines.map((l) => Object.keys(l).sort().join()), Array(4).fill("report,task_id"));
  assert.deepEqual(lines.map((l) => l.task_id).sort(),
    [IDS.crashed, IDS.crashed, IDS.search_engine, IDS.search_engine].sort());
  assert.deepEqual((await reader.pending()).map((l) => JSON.parse(l)), lines);
  assert.deepEqual(await reader.spent("search_engine", "lifetime"), { epsilon: 2, delta: 0 }); // per_report, twice
  assert.ok(Math.abs((await reader.spent("crashed", "lifetime")).epsilon - 2 * LN3) < 1e-12); // rr's local ε, twice
  // no ingest service: the reader sends the queued reports to their tasks' leaders, the bytes as they are
  const [first] = lines;
  const where = first.task_id === IDS.crashed ? "crashed" : "search_engine";
  assert.deepEqual(fake.puts[0], [`https://leader.example/${where}/tasks/${first.task_id}/reports`, first.report]);
  fake.status = 201;
  await provider.forceFlush();
  assert.deepEqual(await reader.pending(), []);
  assert.deepEqual(new Set(fake.puts.map(([, body]) => body)), new Set(lines.map((l) => l.report)));
  await provider.shutdown();
});

test("a declared two-aggregator metric without its task is refused when the reader is made", () => {
  assert.throws(() => app({ spec: SPEC }), (e) => e instanceof RangeError && e.message.includes(
    'collects "crashed" (trust two-aggregator+local), "search_engine" (trust two-aggregator) in the two-aggregator ' +
    "mode, and no task was given for it"));
  assert.throws(() => app({ spec: SPEC, twoAggregator: tasks(["crashed"]).twoAggregator }),
    /collects "search_engine" \(trust two-aggregator\) in the two-aggregator mode/);
  // search_engine is not read: it needs no task
  const { reader } = app({ spec: SPEC, instruments: ["app.crashes"], twoAggregator: tasks(["crashed"]).twoAggregator });
  assert.deepEqual([...reader.declared.keys()], ["app.crashes"]);
});

test("the otel entry imports nothing of the dap entry at run time (its WebAssembly stays the app's choice)", () => {
  const dir = join(here, "..", "dist", "otel");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".js"))) {
    const text = readFileSync(join(dir, file), "utf8");
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?from\s+"([^"]+)"/g)) {
      assert.ok(!/\/dap\/|ldp_dap/.test(m[1]), `${file} imports ${m[1]}`);
    }
    assert.ok(!text.includes("import(\"../dap"), file);
  }
});
