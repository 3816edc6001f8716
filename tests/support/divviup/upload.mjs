// Uploads measurements to a DAP-09 leader with divviup-ts (@divviup/dap, its public API only: `new Task({...})`,
// `task.sendMeasurement(measurement, { timestamp })`), as an app would; then, optionally, times
// `task.generateReport` (Prio3 sharding and both HPKE seals, no upload) for some tasks.
//
//   node upload.mjs JOB.json   (or the job on stdin)
//
// JOB: {
//   "uploads": [{"name": "...", "task": {<ClientParameters & KnownVdafSpec: id, leader, helper,
//                 timePrecisionSeconds, type: "count"|"sum"|"sumVec"|"histogram", bits, length, chunkLength>},
//                "measurements": [...], "timestamp": <seconds since the epoch>}],
//   "concurrency": 8,
//   "bench": [{"name": "...", "task": {...}, "reports": 20}]
// }
// A count's measurements are JSON booleans (divviup-ts's Prio3Count takes a boolean), a sum's numbers, a sumVec's
// arrays, a histogram's bucket indexes.
//
// Prints one JSON object: per upload, the reports sent (`ok`), the refusals (`errors`: DAPError's type, title,
// status and detail, counted by kind) and the seconds taken; per bench, the milliseconds of each generateReport.

import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { Task, DAPError } from "@divviup/dap";

const job = JSON.parse(readFileSync(process.argv[2] ?? 0, "utf8"));
const concurrency = job.concurrency ?? 8;

function describe(error) {
  if (error instanceof DAPError) {
    // DAPError keeps the problem document's fields (RFC 9457) the leader answered with
    const { type, shortType, title, status, detail } = error;
    return { kind: "DAPError", type, shortType, title, status, detail, message: error.message };
  }
  return { kind: error?.constructor?.name ?? typeof error, message: String(error?.message ?? error) };
}

async function upload({ name, task: params, measurements, timestamp }) {
  const task = new Task(params);
  const options = timestamp === undefined ? undefined : { timestamp: new Date(timestamp * 1000) };
  const errors = {};
  let ok = 0;
  let next = 0;
  const started = performance.now();
  async function worker() {
    while (next < measurements.length) {
      const measurement = measurements[next++];
      try {
        await task.sendMeasurement(measurement, options);
        ok += 1;
      } catch (error) {
        const d = describe(error);
        const key = JSON.stringify(d);
        errors[key] = (errors[key] ?? 0) + 1;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, measurements.length) }, worker));
  return {
    name, ok, sent: measurements.length, seconds: (performance.now() - started) / 1000,
    errors: Object.entries(errors).map(([key, count]) => ({ ...JSON.parse(key), count })),
  };
}

async function bench({ name, task: params, measurement, reports }) {
  const task = new Task(params);
  await task.fetchKeyConfiguration(); // GET /hpke_config?task_id= of both, once: not timed
  await task.generateReport(measurement); // warm-up (the JIT, the XOF's and the field's first use)
  const ms = [];
  for (let i = 0; i < reports; i++) {
    const t = performance.now();
    await task.generateReport(measurement);
    ms.push(performance.now() - t);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  return { name, reports, mean_ms: mean, median_ms: sorted[Math.floor(sorted.length / 2)], min_ms: sorted[0],
           max_ms: sorted[sorted.length - 1] };
}

const out = { node: process.version, dap: Task.protocolVersion, uploads: [], bench: [] };
for (const u of job.uploads ?? []) out.uploads.push(await upload(u));
for (const b of job.bench ?? []) out.bench.push(await bench(b));
process.stdout.write(JSON.stringify(out) + "\n");
