// multi beyond the vectors: in `sample` mode the attribute is uniform and the others' fields are zeros; both forms of
// an attribute (a list, or a mapping of name/protocol/params) give the same parameters and fingerprint; the split
// cost is the exactly rounded sum; any value is a valid report or a Python error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertRefusal, refusal } from "../test-support/refusal.mjs";

import { fromDict } from "../dist/params/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { utf8Encode } from "../dist/bytes.js";
import { PROTOCOLS } from "../dist/protocols/index.js";
import { MultiParams } from "../dist/protocols/multi.js";
import { fsum } from "../dist/rational.js";
import { N, assertValidReport, bernoulliWithin, prng, randomValue, encodeOrRefuse } from "../test-support/domain.mjs";

const ATTRS = [["a", "grr", { domain_size: 3 }], ["x", "duchi", { low: 0, high: 10 }], ["s", "rr", {}],
  ["h", "bucket-grr", { edges: [0, 1, 2, 4] }]];
const seeded = (tag) => new KeyedRandomSource(utf8Encode("multi-test"), utf8Encode(tag));

test("multi: sample mode reports one uniform attribute, zeros elsewhere", () => {
  const params = fromDict(MultiParams, { epsilon: 2.0, mode: "sample", attributes: ATTRS });
  const enc = PROTOCOLS.multi.makeEncoder(params, { rng: seeded("sample") });
  const prepared = enc.prepare({ a: 2, x: 7.5, s: true, h: 3 });
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < N; i++) {
    const report = enc.randomize(prepared);
    assertValidReport(report, params);
    const p = Object.fromEntries(report.payload);
    counts[p.attr]++;
    for (const [k, v] of report.payload) {
      const owner = params.names.findIndex((n) => k.startsWith(`${n}_`));
      if (owner >= 0 && owner !== p.attr) assert.ok(v === 0 || /^0+$/.test(v), `${k}=${v} outside the sampled attribute`);
    }
  }
  counts.forEach((c, i) => bernoulliWithin(c, N, 1 / 4, `attribute ${i}`));
  assert.equal(params.privacyCost.epsilon, Math.max(...params.components.map((c) => c.privacyCost.epsilon)));
});

test("multi: both attribute forms are one parameter set; split costs the exact sum", () => {
  const tuples = fromDict(MultiParams, { epsilon: 3.0, mode: "split", attributes: ATTRS });
  const maps = fromDict(MultiParams, { epsilon: 3.0, mode: "split",
    attributes: ATTRS.map(([name, protocol, params]) => ({ params, name, protocol })) });
  assert.equal(tuples.fingerprint, maps.fingerprint);
  assert.deepEqual(maps.toDict().attributes.map((a) => a[0]), ["a", "x", "s", "h"]);
  assert.equal(tuples.privacyCost.epsilon, fsum(tuples.components.map((c) => c.privacyCost.epsilon)));
  assert.equal(fsum([0.1, 0.2, 0.3]), 0.6, "fsum rounds the exact sum once (0.1 + 0.2 + 0.3 is 0.6000000000000001)");
  assert.throws(() => fromDict(MultiParams, { epsilon: 1, mode: "split", attributes: [ATTRS[0], ATTRS[0]] }),
    refusal("ValueError", "param_relation", { params: ["attributes"], rule: "distinct" }));
  assert.throws(() => fromDict(MultiParams, { epsilon: 1, mode: "split", attributes: [ATTRS[0], ["y", "grr", { epsilon: 1 }]] }),
    refusal("ValueError", "unknown_params", { params: ["epsilon"], attribute: "y" }));
  assert.throws(() => fromDict(MultiParams, { epsilon: 1, mode: "split", attributes: [ATTRS[0], ["y", "olh", {}]] }),
    refusal("ValueError", "param_choice", { param: "attributes", index: 1, got: "olh",
      choices: ["rr", "grr", "bucket-grr", "dbitflip", "duchi", "piecewise", "hybrid"] }));
  assert.throws(() => fromDict(MultiParams, { epsilon: 1, mode: "split", attributes: [ATTRS[0], ["y", "grr", { domain_size: 1 }]] }),
    refusal("ValueError", "param_range", { param: "domain_size", got: 1, min: 2, max: 2 ** 32, attribute: "y" }));
});

test("multi: any value is a valid report or a refusal", () => {
  const r = prng(48);
  const params = fromDict(MultiParams, { epsilon: 2.0, mode: "split", attributes: ATTRS });
  const enc = PROTOCOLS.multi.makeEncoder(params, { rng: seeded("fuzz") });
  for (let i = 0; i < 3000; i++) {
    const v = r() < 0.3 ? randomValue(r)
      : Object.fromEntries(["a", "x", "s", "h", "z"].filter(() => r() < 0.9).map((k) => [k, r() < 0.7 ? Math.floor(r() * 5) : randomValue(r)]));
    encodeOrRefuse(enc, params, v);
  }
});
