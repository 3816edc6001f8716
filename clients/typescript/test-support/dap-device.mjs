// One Node device of a two-aggregator collection, for tests/clients/test_typescript_dap_e2e.py: reads a JSON job on
// stdin ({spec, tasks: {metric: task file text}, state: folder, clock, records: [[metric, value], …]}), records with
// the client's FileStore, uploads its reports to their leaders (`uploadReports`), and prints the Prio3 measurements
// it made per metric (the randomized ones too: `report` spied on), the upload's result and the refusals.
import { readFileSync } from "node:fs";
import { CollectionSpec, TelemetryClient } from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import { spiedTasks } from "./dap-spy.mjs";

const job = JSON.parse(readFileSync(0, "utf8"));
const spec = CollectionSpec.fromDict(job.spec);
const { twoAggregator, made } = await spiedTasks(spec, job.tasks);
const client = await TelemetryClient.open(spec, new FileStore(job.state), { clock: () => job.clock, twoAggregator });
const refused = [];
for (const [metric, value] of job.records) {
  try {
    await client.record(metric, value);
  } catch (err) {
    refused.push([metric, err.name]);
  }
}
const result = await client.uploadReports();
console.log(JSON.stringify({ made, refused, result, pending: await client.pending() }));
