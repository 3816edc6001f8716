// The page of tests/clients/test_typescript_dap_browser.py: reads job.json ({spec, tasks: {metric: task file text},
// devices: [{clock, records: [[metric, value], …]}]}), and for each device opens a TelemetryClient of its own (a
// MemoryStore: its own secret, ledger and outbox), records its values (the two-aggregator reports made by the `dap`
// entry's WebAssembly) and uploads them with `uploadReports` to the tasks' leader, another origin than the page's
// (the leader's CORS answers let the page send and read). The Prio3 measurements each device made are spied on
// (`report`), so that the collected sums can be checked exactly. The outcome goes to window.__result (or
// window.__error).
import { CollectionSpec, MemoryStore, TelemetryClient } from "./dist/index.js";
import { dapTask, loadDap, twoAggregatorMetrics } from "./dist/dap/index.js";

const log = document.getElementById("log");

/** `tasks` with their `report` spied on: each measurement made goes to `made[metric]`. */
function spied(tasks, made) {
  const out = {};
  for (const [metric, task] of Object.entries(tasks)) {
    out[metric] = { ...task, report: (m, time) => ((made[metric] ??= []).push(Array.from(m)), task.report(m, time)) };
  }
  return out;
}

/** One device: its records and its upload (a few quick tries: a leader refusing the page fails the test at once). */
async function device(spec, tasks, { clock, records }) {
  const made = {}, refused = [];
  const client = await TelemetryClient.open(spec, new MemoryStore(), {
    clock: () => clock, twoAggregator: twoAggregatorMetrics(spec, spied(tasks, made)) });
  for (const [metric, value] of records) {
    try {
      await client.record(metric, value);
    } catch (err) {
      refused.push([metric, err.name]);
    }
  }
  const r = await client.uploadReports({ timeout: 10, maxAttempts: 2, maxDelay: 1 });
  const result = { accepted: r.accepted, acknowledged: r.acknowledged, rejected: r.rejected, stopped: r.stopped };
  return { made, refused, result, pending: await client.pending() };
}

async function run() {
  const job = await (await fetch("./job.json")).json();
  await loadDap(); // the WebAssembly beside the entry (dist/dap/wasm), fetched from this page's origin
  const spec = CollectionSpec.fromDict(job.spec);
  const tasks = Object.fromEntries(Object.entries(job.tasks).map(([metric, text]) => [metric, dapTask(text)]));
  const devices = [];
  for (const d of job.devices) devices.push(await device(spec, tasks, d));
  return { devices, origin: location.origin };
}

run().then((r) => { window.__result = r; log.textContent = JSON.stringify(r); },
           (e) => { window.__error = String(e && e.stack || e); log.textContent = window.__error; });
