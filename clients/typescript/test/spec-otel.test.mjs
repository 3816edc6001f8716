// The spec's per-metric `otel` key against the Python client (../../conformance/specs/otel.json, written by
// conformance/otel_vectors.py): the same canonical form and fingerprint byte for byte, the same normalized mapping
// per metric, and a refused spec's errors at the same paths in the same order, each error at an `.otel` path with
// Python's text up to its first `, got ` (the value after it in this client's notation; the whole text when Python's
// has none).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { CollectionSpec, OTEL_KINDS, OTEL_VALUES, OTEL_VALUE_CLASSES, SpecError } from "../dist/index.js";
import { CollectionSpec as LiteSpec } from "../dist/lite.js";
import { CollectionSpec as OtelEntrySpec } from "../dist/spec-otel.js";
import { PROTOCOLS, grr, rr } from "../dist/protocols/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURE = join(here, "..", "..", "..", "conformance", "specs", "otel.json");
const doc = JSON.parse(readFileSync(FIXTURE, "utf8"));

const beforeGot = (message) => message.split(", got ")[0];
const isOtelPath = (path) => /\.otel(\.|$)/.test(path);

test("the fixture's format, and the kinds, values and classes as Python's", () => {
  assert.equal(doc.format, 1);
  assert.equal(doc.cases.length, 6);
  assert.deepEqual([...OTEL_KINDS], ["counter", "updown_counter", "histogram", "gauge"]);
  assert.deepEqual([...OTEL_VALUES], ["any", "sum", "last", "mean", "bucket", "attribute"]);
  // every built-in protocol of one value has a class; multi none
  assert.equal(OTEL_VALUE_CLASSES.rr, "boolean");
  assert.equal(OTEL_VALUE_CLASSES.multi, undefined);
  for (const name of Object.keys(PROTOCOLS)) {
    if (name !== "multi") assert.ok(OTEL_VALUE_CLASSES[name] !== undefined, name);
  }
});

let refused = 0, accepted = 0, otelErrors = 0;
for (const c of doc.cases) {
  if (c.errors !== undefined) {
    refused += 1;
    otelErrors += c.errors.filter((e) => isOtelPath(e.path)).length;
    test(`otel fixture, refused: ${c.name}`, () => {
      assert.throws(() => CollectionSpec.fromDict(c.spec), (err) => {
        assert.ok(err instanceof SpecError, String(err));
        const got = err.errors.map((e) => { const i = e.indexOf(": "); return { path: e.slice(0, i), message: e.slice(i + 2) }; });
        assert.deepEqual(got.map((e) => e.path), c.errors.map((e) => e.path), err.message);
        for (const [i, want] of c.errors.entries()) {
          if (!isOtelPath(want.path)) continue;
          assert.equal(beforeGot(got[i].message), beforeGot(want.message), want.path);
          assert.equal(got[i].message.includes(", got "), want.message.includes(", got "), got[i].message);
        }
        return true;
      });
    });
    continue;
  }
  accepted += 1;
  test(`otel fixture, accepted: ${c.name}`, () => {
    const spec = CollectionSpec.fromDict(c.spec);
    assert.equal(spec.canonical(), c.canonical);
    assert.equal(spec.fingerprint, c.fingerprint);
    assert.deepEqual(Object.fromEntries([...spec.metrics].map(([n, m]) => [n, m.otel ?? null])), c.otel);
    // loads (JSON text) reads the key as fromDict does
    assert.equal(CollectionSpec.loads(JSON.stringify(c.spec)).fingerprint, c.fingerprint);
  });
}

test("the fixture holds both kinds of case, and errors at otel paths", () => {
  assert.ok(accepted >= 2 && refused >= 4 && otelErrors > 100, { accepted, refused, otelErrors });
});

const ONE = { spec_version: 1, name: "app", budget: { per_window: 4, lifetime: 40 }, metrics: {
  theme: { protocol: "grr", params: { epsilon: 1, domain_size: 3, labels: ["light", "dark", "auto"] },
    budget: { per_report: 1 }, otel: { instrument: "ui.theme", kind: "counter", value: "attribute", attribute: "theme" } },
  crashed: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 } },
} };

test("the otel-reading CollectionSpec of spec-otel.ts (the otel entry's) reads the key with the protocols a page names; the lite entry's refuses it", () => {
  const full = CollectionSpec.fromDict(ONE);
  const named = OtelEntrySpec.fromDict(ONE, { protocols: [grr, rr] });
  assert.equal(named.fingerprint, full.fingerprint);
  assert.deepEqual(named.metric("theme").otel, { instrument: "ui.theme", kind: "counter", value: "attribute", attribute: "theme" });
  assert.equal(named.metric("crashed").otel, undefined);
  assert.ok(!("otel" in named.metric("crashed")));
  assert.throws(() => LiteSpec.fromDict(ONE, { protocols: [grr, rr] }), (err) => err instanceof SpecError &&
    err.errors.length === 1 && err.errors[0].startsWith("metrics.theme.otel: unknown key"));
  // without the key, the three read the same spec
  const { otel: _, ...theme } = ONE.metrics.theme;
  const plain = { ...ONE, metrics: { ...ONE.metrics, theme } };
  assert.equal(LiteSpec.fromDict(plain, { protocols: [grr, rr] }).fingerprint, CollectionSpec.fromDict(plain).fingerprint);
  assert.equal(OtelEntrySpec.fromDict(plain, { protocols: [grr, rr] }).fingerprint, CollectionSpec.fromDict(plain).fingerprint);
  // a protocol not given is refused as ever, and the otel key is still read against nothing
  assert.throws(() => OtelEntrySpec.fromDict(ONE, { protocols: [rr] }), (err) => err instanceof SpecError &&
    err.errors.length === 1 && err.errors[0].startsWith("metrics.theme.protocol: unknown protocol"));
});

test("otel errors come after each metric's own, before the next metric's, as Python reads them", () => {
  const spec = { ...ONE, name: 5, metrics: {
    a: { protocol: "grr", params: { epsilon: -1, domain_size: 3 }, budget: { per_report: 1 },
      otel: { instrument: "x", kind: "gauge", value: "sum" } },
    b: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 }, otel: { instrument: "y", kind: "counter", value: "mean" } },
    c: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 0.1 } },
    "D d": { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 }, otel: { instrument: "", kind: "counter", value: "any" } },
  } };
  assert.throws(() => CollectionSpec.fromDict(spec), (err) => {
    assert.deepEqual(err.errors.map((e) => e.slice(0, e.indexOf(": "))), [
      "name", 'metrics["D d"]', 'metrics["D d"].otel.instrument', "metrics.a.params.epsilon", "metrics.a.otel.value",
      "metrics.b.otel.value", "metrics.b.otel.value", "metrics.c.budget.per_report"]);
    return true;
  });
});

test("a metric named __proto__ and an instrument bound given as a bigint are read as any other", () => {
  const metrics = JSON.parse('{"__proto__": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3}, "budget": {"per_report": 1}, ' +
    '"otel": {"instrument": "h", "kind": "histogram", "value": "bucket", "buckets": [1, 2.5]}}}');
  assert.throws(() => CollectionSpec.fromDict({ ...ONE, metrics }), (err) => err instanceof SpecError &&
    err.errors.length === 1 && err.errors[0].startsWith('metrics["__proto__"]: metric names match'));
  const spec = CollectionSpec.fromDict({ ...ONE, metrics: { h: { ...metrics.__proto__, otel: { ...metrics.__proto__.otel, buckets: [1n, 2.5] } } } });
  assert.deepEqual(spec.metric("h").otel.buckets, [1, 2.5]);
  assert.match(spec.canonical(), /"buckets":\[1\.0,2\.5\]/);
});
