// The spec's `poplar1` metric kind (issue 89, item 3) against the Python client (../../conformance/specs/poplar1.json,
// written by conformance/poplar1_spec_vectors.py): the same canonical form and fingerprint byte for byte, the same
// trust per metric, a record without the metric's task refused as Python refuses it (`trust_model`, before its value
// is looked at), a refused spec's errors at the same paths in the same order, each `.trust` error with Python's text
// up to its `, got`; and every measurement (a value's bits/8 bytes, or Python's refusal code).
//
// One rule of JavaScript is stated, not hidden: `JSON.parse` makes the float token `64.0` the number 64, an int by
// the client's rule (`isPyInt`), where Python reads a float and refuses it. The metrics whose params hold such a
// token (read from the file's text) are accepted here; their Python errors are left out of the comparison, and the
// test checks that exactly those are.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { CollectionSpec, MemoryStore, SpecError, TelemetryClient } from "../dist/index.js";
import { CollectionSpec as LiteSpec } from "../dist/lite.js";
import { PyFloat } from "../dist/canonical.js";
import { poplar1, grr, rr, SHARED_KINDS, ALL_PROTOCOLS } from "../dist/protocols/index.js";
import { Poplar1Params } from "../dist/protocols/poplar1.js";
import { refusal } from "../test-support/refusal.mjs";
import { parseKeepingFloats } from "../test-support/json-floats.mjs";
import { acceptedSpec, assertSpecErrors, replayRecords } from "../test-support/spec-fixture.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURE = join(here, "..", "..", "..", "conformance", "specs", "poplar1.json");
const text = readFileSync(FIXTURE, "utf8");
const doc = JSON.parse(text);
const exact = parseKeepingFloats(text); // the same document, float tokens as PyFloat
const CLOCK = 1_764_000_000;

const hex = (bytes) => Buffer.from(bytes).toString("hex");

/** The metrics of case `i` with a parameter given as an integral float token (`64.0`): an int in JavaScript. */
function integralFloatMetrics(i) {
  const metrics = exact.cases[i].spec.metrics;
  return new Set(Object.keys(metrics).filter((name) => {
    const p = metrics[name].params;
    return p !== null && typeof p === "object" && Poplar1Params.fields.some(({ name: key }) =>
      p[key] instanceof PyFloat && Number.isInteger(p[key].value));
  }));
}

test("the fixture's format, and poplar1 a shared kind beside the protocols", () => {
  assert.equal(doc.format, 1);
  assert.ok(doc.cases.length >= 5 && doc.measurements.length >= 40);
  assert.deepEqual(SHARED_KINDS.map((e) => e.name), ["poplar1"]);
  assert.ok(!ALL_PROTOCOLS.includes(poplar1), "poplar1 makes no local report: not a protocol of ALL_PROTOCOLS");
});

for (const [i, c] of doc.cases.entries()) {
  if (c.errors !== undefined) {
    test(`poplar1 fixture, refused: ${c.name}`, () => {
      const floats = integralFloatMetrics(i);
      const inFloats = (path) => [...floats].some((m) => path.startsWith(`metrics.${m}.`));
      const want = c.errors.filter((e) => !inFloats(e.path));
      assert.equal(want.length, c.errors.length - floats.size, "one Python error per integral-float metric");
      assertSpecErrors(c.spec, want);
      for (const m of floats) { // accepted here, alone: JavaScript cannot tell 64.0 from 64
        const alone = { ...c.spec, metrics: { [m]: c.spec.metrics[m] } };
        assert.equal(CollectionSpec.fromDict(alone).metric(m).params.protocol, "poplar1", m);
      }
    });
    continue;
  }
  test(`poplar1 fixture, accepted: ${c.name}`, async () => {
    const client = await TelemetryClient.open(acceptedSpec(c), new MemoryStore(), { clock: () => CLOCK });
    await replayRecords(client, c.records);
    assert.equal(await client.pending(), c.pending);
    assert.deepEqual(await client.spent("new_words"), { epsilon: 0, delta: 0 }); // a refusal charges nothing
  });
}

test("every measurement: the value's bits/8 bytes, NUL-padded, or Python's refusal", () => {
  for (const m of doc.measurements) {
    const params = new Poplar1Params({ bits: m.bits, threshold: 1, max_candidates: 2 });
    const context = `${m.bits} bits, ${JSON.stringify(m.value)}`;
    if (m.error === undefined) {
      assert.equal(hex(params.measurementBytes(m.value)), m.hex, context);
    } else {
      assert.throws(() => params.measurementBytes(m.value), (err) => err.code === m.error, context);
    }
  }
});

test("the refusals' fields, in Python's order, and what only JavaScript has", () => {
  const p = new Poplar1Params({ bits: 16, threshold: 1, max_candidates: 2 });
  assert.throws(() => p.measurementBytes(5), refusal("TypeError", "value_type", { expected: "string_or_bytes", got: "int" }));
  assert.throws(() => p.measurementBytes("abc"), refusal("ValueError", "value_too_long", { got: 3, max: 2, unit: "bytes" }));
  assert.throws(() => p.measurementBytes("a\u0000"), refusal("ValueError", "not_in_alphabet", { char: "\u0000" }));
  // a lone surrogate has no UTF-8 form: refused as Python's str.encode refuses it (TextEncoder would make it U+FFFD)
  assert.throws(() => p.measurementBytes("\ud800"), refusal("ValueError", "not_encodable", { encoding: "utf-8" }));
  assert.throws(() => p.measurementBytes("\ud800abc"), refusal("ValueError", "not_encodable", { encoding: "utf-8" }));
  // bytes are taken as they are (as Python's bytes), with the same rules
  assert.equal(hex(p.measurementBytes(Uint8Array.of(0xff))), "ff00");
  assert.equal(hex(p.measurementBytes(Uint8Array.of(0, 1))), "0001");
  assert.throws(() => p.measurementBytes(Uint8Array.of(1, 0)), refusal("ValueError", "not_in_alphabet"));
  assert.throws(() => p.measurementBytes(new Uint8Array(3)), refusal("ValueError", "value_too_long"));
});

test("the params: Python's checks and canonical form; no local ε (privacyCost throws)", () => {
  const p = new Poplar1Params({ max_candidates: 1024, bits: 64, threshold: 20 });
  assert.deepEqual(p.toDict(), { bits: 64, threshold: 20, max_candidates: 1024 });
  assert.deepEqual(p.taskVdaf(), { type: "Poplar1", bits: 64, max_candidates: 1024 });
  assert.throws(() => p.privacyCost, /no local randomizer/);
  assert.equal(p.domainSize, null);
  assert.deepEqual(p.schema, []);
  const make = (v) => () => new Poplar1Params({ bits: 64, threshold: 20, max_candidates: 1024, ...v });
  assert.throws(make({ bits: 12 }), refusal("ValueError", "param_relation", { param: "bits", params: ["bits"], rule: "whole_bytes" }));
  assert.throws(make({ bits: 264 }), refusal("ValueError", "param_range", { param: "bits", got: 264, min: 8, max: 256 }));
  assert.throws(make({ bits: true }), refusal("TypeError", "param_type", { param: "bits", expected: "int", got: "bool" }));
  assert.throws(make({ threshold: 0 }), refusal("ValueError", "param_range", { param: "threshold", got: 0, min: 1 }));
  assert.throws(make({ max_candidates: 2 ** 20 + 1 }), refusal("ValueError", "param_range",
    { param: "max_candidates", got: 2 ** 20 + 1, min: 2, max: 2 ** 20 }));
  assert.equal(new Poplar1Params({ bits: 256, threshold: 1, max_candidates: 2 ** 20 }).length, 32);
});

test("a lite page knows poplar1 only when it names it, as it names protocols", () => {
  const spec = { spec_version: 1, name: "app", budget: { per_window: 4, lifetime: 40 }, metrics: {
    w: { protocol: "poplar1", params: { bits: 32, threshold: 5, max_candidates: 64 }, budget: { per_report: 1 },
      trust: "two-aggregator" },
    g: { protocol: "grr", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 } } } };
  assert.throws(() => LiteSpec.fromDict(spec, { protocols: [grr] }), (err) => err instanceof SpecError &&
    err.errors[0].startsWith('metrics.w.protocol: unknown protocol "poplar1"'));
  const lite = LiteSpec.fromDict(spec, { protocols: [grr, rr, poplar1] });
  assert.equal(lite.fingerprint, CollectionSpec.fromDict(spec).fingerprint);
});
