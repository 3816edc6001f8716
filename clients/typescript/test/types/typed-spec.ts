// Compiled by test/types.test.mjs (tsc --noEmit): the metric names and values a spec allows are types, both from a
// spec written `as const` (MetricValues) and from the module `ldp-spec-types` writes (metrics.generated.ts). Each
// `@ts-expect-error` must find an error, so types that became too loose fail the test.
import { CollectionSpec, MemoryStore, TelemetryClient } from "../../dist/index.js";
import type { MetricValues } from "../../dist/index.js";
import type { Metrics } from "./metrics.generated.js";

const SPEC = {
  spec_version: 1, name: "typed", budget: { per_window: 10, lifetime: 100 },
  metrics: {
    theme: { protocol: "grr", params: { epsilon: 1, domain_size: 2, labels: ["light", "dark"] }, budget: { per_report: 1 } },
    dark: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 } },
    load_ms: { protocol: "duchi", params: { epsilon: 1, low: 0, high: 1000 }, budget: { per_report: 1 } },
    page: { protocol: "rappor", params: { num_bloombits: 16, num_hashes: 2, num_cohorts: 4, p: 0.25, q: 0.75, f: 0.5 },
      budget: { per_report: 3 } },
    shared: { protocol: "grr", params: { epsilon: 1, domain_size: 2 }, budget: { per_report: 1 }, trust: "two-aggregator" },
    shuffled: { protocol: "grr", params: { epsilon: 1, domain_size: 2 }, budget: { per_report: 1 }, trust: "shuffle" },
    words: { protocol: "poplar1", params: { bits: 64, threshold: 20, max_candidates: 1024 }, budget: { per_report: 1 },
      trust: "two-aggregator" },
  },
} as const;

export async function fromConst(): Promise<void> {
  const client = await TelemetryClient.open<MetricValues<typeof SPEC>>(CollectionSpec.fromDict(SPEC), new MemoryStore());
  await client.record("theme", "dark");
  await client.record("theme", 1);
  await client.record("dark", true);
  await client.record("load_ms", 12.5);
  await client.record("page", "/home");
  await client.record("shuffled", 1);
  await client.record("shared", 1); // trust "two-aggregator": its protocol's values (recorded given its task)
  // @ts-expect-error: not a value of the two-aggregator metric's protocol
  await client.record("shared", "x");
  await client.record("words", "new-word"); // poplar1: a string (recorded given its task)
  // @ts-expect-error: poplar1 records strings
  await client.record("words", 5);
  // @ts-expect-error: not a label of the metric
  await client.record("theme", "blue");
  // @ts-expect-error: not a metric of the spec
  await client.record("colour", "dark");
  // @ts-expect-error: a number metric
  await client.record("load_ms", "12");
  // @ts-expect-error: binary RR takes booleans or 0/1
  await client.record("dark", 2);
  await client.recordMany([["theme", "dark"], ["load_ms", 3], ["dark", false]]);
  // @ts-expect-error: a recordMany item with a value not of its metric
  await client.recordMany([["theme", "dark"], ["load_ms", "3"]]);
  // @ts-expect-error: a recordMany item naming no metric of the spec
  await client.recordMany([["colour", "dark"]]);
  await client.spent("theme");
  await client.spent("*");
  // @ts-expect-error: not a metric of the spec
  await client.spent("colour");
}

export async function fromGenerated(spec: CollectionSpec): Promise<void> {
  const client = await TelemetryClient.open<Metrics>(spec, new MemoryStore());
  await client.record("app_category", "games");
  await client.record("load_time", 3);
  await client.record("shuffled", 0);
  await client.record("shared", 0); // trust "two-aggregator+local": its protocol's values
  // @ts-expect-error: not a value of the two-aggregator metric's protocol
  await client.record("shared", "zero");
  await client.record("words", "new-word");
  // @ts-expect-error: poplar1 records strings
  await client.record("words", null);
  // @ts-expect-error: not a label of the metric
  await client.record("app_category", "sport");
  // @ts-expect-error: a number metric
  await client.record("load_time", true);
}
