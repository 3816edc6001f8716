// SUE and OUE (`sue`, `oue`) beyond the conformance vectors: bad inputs of every JSON type (a seeded generator),
// Python's refusal texts the vectors do not reach, the exact rational ε*, the report law through the platform CSPRNG
// (20,000 reports, within 4 standard errors), and the exact audits of the vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";
import { CryptoRandomSource } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";

import { OUEParams, SUEParams, oue, sue, unaryEpsilon } from "../dist/protocols/unary.js";

import { VECTORS, N, prng, UNITS, randomValue, show, assertValidReport, isRefusal, withinSE, bernoulliWithin, inDomain, fuzzDomainValues, SPECIAL_INTS, fuzzDomainParams, auditVectors, refuses } from "../test-support/domain.mjs";

for (const [entry, Params, seed] of [[sue, SUEParams, 31], [oue, OUEParams, 41]]) {
  fuzzDomainValues(entry, Params, [
    { epsilon: 1, domain_size: 4 },
    { epsilon: 2, domain_size: 3, labels: ["l0", "é", "\ud83d\ude00"] },
    { epsilon: 0.5, domain_size: 200 },
  ], seed);

  fuzzDomainParams(entry, Params, {}, seed + 1);

  test(`${entry.name}: Python's refusals for parameters the client cannot realize or collect`, () => {
    refuses(Params, { epsilon: 1e-20, domain_size: 5 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_small" });
    refuses(Params, { epsilon: 1000, domain_size: 5 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_large" });
    refuses(Params, { epsilon: 1, domain_size: 2 ** 23 }, "ValueError", "param_limit", { limit: "line_bytes", got: 8388790, max: 4194304 });
  });

  test(`${entry.name}: 20,000 reports set the value's bit w.p. p and every other bit w.p. q`, () => {
    const params = fromDict(Params, { epsilon: 1.5, domain_size: 8 });
    const encoder = entry.makeEncoder(params, { rng: new CryptoRandomSource() });
    let own = 0, others = 0;
    for (let i = 0; i < N; i++) {
      const bits = encoder.encode(5).payload[0][1];
      for (let b = 0; b < 8; b++) {
        if (b === 5) own += bits[b] === "1" ? 1 : 0;
        else others += bits[b] === "1" ? 1 : 0;
      }
    }
    bernoulliWithin(own, N, params.p, "own bit");
    bernoulliWithin(others, 7 * N, params.q, "other bits");
  });

  auditVectors(entry, Params);
}

test("sue, oue: a wide domain (100,000 bits) reports its bits, the value's at its index", () => {
  for (const Params of [SUEParams, OUEParams]) {
    const entry = Params === SUEParams ? sue : oue;
    const params = fromDict(Params, { epsilon: 40, domain_size: 100000 }); // q ≈ 4e-18 (SUE 2e-9): nearly one-hot
    const report = entry.makeEncoder(params).encode(76543);
    assertValidReport(report, params);
    const bits = report.payload[0][1];
    if (Params === SUEParams) assert.equal(bits[76543], "1");
    assert.ok(bits.split("1").length - 1 <= 2, "nearly one-hot");
  }
});

test("unaryEpsilon: ln(p(1−q)/((1−p)q)) from the exact reduced ratio, as Python's Fraction and math.log", () => {
  // computed with Python's unary_epsilon
  assert.equal(unaryEpsilon(0.5, 0.25), 1.0986122886681098);
  assert.equal(unaryEpsilon(0.75, 0.25), 2.1972245773362196);
  assert.equal(unaryEpsilon(0.5, 2 ** -64), 44.3614195558365);
  assert.equal(fromDict(OUEParams, { epsilon: 1, domain_size: 4 }).privacyCost.epsilon, 1.0);
  const p = fromDict(SUEParams, { epsilon: 40, domain_size: 4 });
  assert.equal(p.privacyCost.epsilon, 40.0); // Python: 40.0 (ε* of the realized p, q is not above it)
  assert.equal(p.q, 2.0611536181709515e-9);
});
