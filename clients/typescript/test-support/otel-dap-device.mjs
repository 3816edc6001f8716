// One Node device whose two-aggregator metrics come from OpenTelemetry, for
// tests/clients/test_typescript_otel_dap_e2e.py: reads a JSON job on stdin ({spec, tasks: {metric: task file text},
// state: folder, start, end, engines: {engine: count}, crashes}); an app measures with plain OpenTelemetry code at
// `start`, the clock moves to `end` (the window is over) and `forceFlush` makes the reader record the window and send
// its reports to their leaders (no ingest service). Prints the Prio3 measurements made per metric (`report` spied
// on), what the reader reported and the lines left in the outbox.
import { readFileSync } from "node:fs";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { CollectionSpec } from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import { PrivatizingMetricReader } from "../dist/otel/index.js";
import { spiedTasks } from "./dap-spy.mjs";

const job = JSON.parse(readFileSync(0, "utf8"));
const spec = CollectionSpec.fromDict(job.spec);
const { twoAggregator, made } = await spiedTasks(spec, job.tasks);
const clock = { now: job.start };
const reader = new PrivatizingMetricReader({ spec, store: new FileStore(job.state), clock: () => clock.now,
  collectIntervalMillis: 0, twoAggregator });
const provider = new MeterProvider({ readers: [reader] });
const meter = provider.getMeter("browser");
const searches = meter.createCounter("browser.searches");
for (const [engine, n] of Object.entries(job.engines)) searches.add(n, { engine });
meter.createCounter("app.crashes").add(job.crashes);
await provider.forceFlush();
clock.now = job.end;
await provider.forceFlush();
console.log(JSON.stringify({ made, reported: reader.reported, pending: await reader.pending() }));
await provider.shutdown();
