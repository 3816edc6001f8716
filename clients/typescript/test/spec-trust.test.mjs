// The spec's per-metric `trust` against the Python client (../../conformance/specs/trust.json, written by
// conformance/spec_vectors.py): the same canonical form and fingerprint byte for byte, the same trust per metric,
// the same refusal of a record (a two-aggregator metric: `trust_model`), and a refused spec's errors at the same
// paths in the same order, each `.trust` error with Python's text up to its `, got` (the value after it in this
// client's notation).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { CollectionSpec, LdpValueError, MemoryStore, SpecError, TelemetryClient, TRUST_MODELS } from "../dist/index.js";
import { assertRefusal, refusal } from "../test-support/refusal.mjs";
import { acceptedSpec, assertSpecErrors, replayRecords } from "../test-support/spec-fixture.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURE = join(here, "..", "..", "..", "conformance", "specs", "trust.json");
const doc = JSON.parse(readFileSync(FIXTURE, "utf8"));
const CLOCK = 1_764_000_000;


test("the fixture's format, and TRUST_MODELS as Python's", () => {
  assert.equal(doc.format, 1);
  assert.deepEqual([...TRUST_MODELS], ["local", "shuffle", "two-aggregator", "two-aggregator+local"]);
});

for (const c of doc.cases) {
  if (c.errors !== undefined) {
    test(`trust fixture, refused: ${c.name}`, () => {
      assertSpecErrors(c.spec, c.errors);
    });
    continue;
  }
  test(`trust fixture, accepted: ${c.name}`, async () => {
    const spec = acceptedSpec(c);
    if (c.pending === undefined) return;
    const client = await TelemetryClient.open(spec, new MemoryStore(), { clock: () => CLOCK });
    await replayRecords(client, c.records);
    if (c.record_many !== undefined) {
      const many = client.recordMany(c.record_many.items);
      if (c.record_many.error === undefined) await many;
      else await assert.rejects(many, (err) => (assertRefusal(err, c.record_many.error, "recordMany"), true));
    }
    assert.equal(await client.pending(), c.pending);
  });
}

test("a two-aggregator metric is refused before its value is looked at, with nothing spent", async () => {
  const spec = CollectionSpec.fromDict({ spec_version: 1, name: "app", budget: { per_window: 4, lifetime: 40 },
    metrics: { m: { protocol: "oue", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 }, trust: "two-aggregator" } } });
  const client = await TelemetryClient.open(spec, new MemoryStore(), { clock: () => CLOCK });
  for (const value of [0, 7, "x", null]) {
    await assert.rejects(client.record("m", value), refusal("ValueError", "trust_model", { metric: "m", trust: "two-aggregator" }));
  }
  await assert.rejects(client.recordMany([["m", 1]]), (err) => err instanceof LdpValueError && err.code === "trust_model" &&
    err.message.startsWith('recordMany item 0 ("m"): '));
  assert.deepEqual(await client.spent("m"), { epsilon: 0, delta: 0 });
  assert.equal(await client.pending(), 0);
});

test("pgr and hpg fit Prio3 (a Prio3Histogram of their K outputs): a spec takes them in the two-aggregator modes", async () => {
  const spec = CollectionSpec.fromDict({ spec_version: 1, name: "app", budget: { per_window: 4, lifetime: 40 }, metrics: {
    p: { protocol: "pgr", params: { epsilon: 1, domain_size: 13 }, budget: { per_report: 1 }, trust: "two-aggregator" },
    h: { protocol: "hpg", params: { epsilon: 2, domain_size: 40 }, budget: { per_report: 2 }, trust: "two-aggregator+local" },
  } });
  // the Python client's canonical form and fingerprint of this spec
  assert.equal(spec.canonical(), '{"budget":{"lifetime":40.0,"per_window":4.0},"metrics":{"h":{"budget":{"per_report":2.0},' +
    '"params":{"blocks":2,"domain_size":40,"epsilon":2.0,"labels":null,"q":5},"protocol":"hpg","trust":"two-aggregator+local"},' +
    '"p":{"budget":{"per_report":1.0},"params":{"domain_size":13,"epsilon":1.0,"labels":null,"q":3},"protocol":"pgr",' +
    '"trust":"two-aggregator"}},"name":"app","spec_version":1,"upload":{"max_batch":1000,"min_interval_seconds":86400},' +
    '"window_seconds":86400}');
  assert.equal(spec.fingerprint, "37259294ed68cdbf");
  const client = await TelemetryClient.open(spec, new MemoryStore(), { clock: () => CLOCK });
  for (const [metric, trust] of [["p", "two-aggregator"], ["h", "two-aggregator+local"]]) {
    await assert.rejects(client.record(metric, 1), refusal("ValueError", "trust_model", { metric, trust }));
  }
  assert.throws(() => CollectionSpec.fromDict({ spec_version: 1, name: "app", budget: { per_window: 4, lifetime: 40 }, metrics: {
    o: { protocol: "olh", params: { epsilon: 1, domain_size: 4 }, budget: { per_report: 1 }, trust: "two-aggregator" },
  } }), (err) => err instanceof SpecError && err.errors[0] ===
    "metrics.o.trust: olh does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): no two-aggregator mode for it");
});
