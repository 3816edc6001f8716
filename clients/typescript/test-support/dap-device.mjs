// Node devices of a two-aggregator collection, for tests/clients/test_typescript_dap_e2e.py and
// test_typescript_poplar1_e2e.py: reads a JSON job on stdin ({spec, tasks: {metric: task file text}, state: folder,
// clock, records: [[metric, value], …]}), or a list of jobs (devices run one after the other in this process, each
// with its own state), records with the client's FileStore, uploads its reports to their leaders (`uploadReports`),
// and prints, per job, what it made per metric (`report` spied on: the Prio3 measurements, the randomized ones too;
// a `poplar1` metric's packed strings in hex), the upload's result and the refusals ([metric, error name, code]).
import { readFileSync } from "node:fs";
import { CollectionSpec, TelemetryClient } from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import { spiedTasks } from "./dap-spy.mjs";

async function device(job) {
  const spec = CollectionSpec.fromDict(job.spec);
  const { twoAggregator, made } = await spiedTasks(spec, job.tasks);
  const client = await TelemetryClient.open(spec, new FileStore(job.state), { clock: () => job.clock, twoAggregator });
  const refused = [];
  for (const [metric, value] of job.records) {
    try {
      await client.record(metric, value);
    } catch (err) {
      refused.push(err.code === undefined ? [metric, err.name] : [metric, err.name, err.code]);
    }
  }
  const result = await client.uploadReports();
  return { made, refused, result, pending: await client.pending() };
}

const input = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const job of Array.isArray(input) ? input : [input]) out.push(await device(job));
console.log(JSON.stringify(Array.isArray(input) ? out : out[0]));
