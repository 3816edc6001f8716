// Subset Selection (`ss`) beyond the conformance vectors: bad inputs of every JSON type (a seeded generator),
// Python's refusal texts and derived values the vectors do not reach, the report law through the platform CSPRNG
// (20,000 reports, within 4 standard errors: ω ones always, the value w.p. p, another value w.p. q), and the exact
// audits of the vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";
import { CryptoRandomSource } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";

import { SSParams, floydSubset, ss, subsetSize } from "../dist/protocols/subset-selection.js";

import { VECTORS, N, prng, UNITS, randomValue, show, assertValidReport, isRefusal, withinSE, bernoulliWithin, inDomain, fuzzDomainValues, SPECIAL_INTS, fuzzDomainParams, auditVectors, refuses } from "../test-support/domain.mjs";

function ones(bits) {
  return bits.split("1").length - 1;
}

const omegaOnes = (report, params) => assert.equal(ones(report.payload[0][1]), params.omega);

fuzzDomainValues(ss, SSParams, [
  { epsilon: 1, domain_size: 4 },
  { epsilon: 0.5, domain_size: 6, labels: ["l0", "l1", "é", "\ud83d\ude00", "'", "\\"] },
  { epsilon: 2, domain_size: 500 },
], 81, omegaOnes);

fuzzDomainParams(ss, SSParams, {}, 82, omegaOnes);

test("ss: ω, p, q and the cost as Python's; its texts for parameters it refuses", () => {
  // computed with Python's SSParams
  for (const [epsilon, d, omega, p, q, cost] of [
    [1, 10, 3, 0.5381015262244488, 0.2735442748639501, 1.0],
    [0.5, 6, 2, 0.45186276187760605, 0.3096274476244788, 0.5],
    [3, 100, 5, 0.5138866830116855, 0.04531427592917489, 3.0],
    [1e-20, 5, 3, 0.6000000000000001, 0.6, 3.885780586188048e-16],
  ]) {
    const params = fromDict(SSParams, { epsilon, domain_size: d });
    assert.deepEqual([params.omega, params.p, params.q, params.privacyCost.epsilon], [omega, p, q, cost]);
    assert.equal(subsetSize(epsilon, d), omega);
  }
  refuses(SSParams, { epsilon: 40, domain_size: 10 }, "ValueError", "param_relation", { params: ["epsilon", "domain_size"], rule: "epsilon_too_large" });
  refuses(SSParams, { epsilon: 1, domain_size: 2 ** 22 }, "ValueError", "param_limit", { limit: "line_bytes", got: 4194485, max: 4194304 });
});

test("ss: floydSubset draws R(n−k+1), …, R(n) and gives k distinct elements", () => {
  const calls = [];
  const rng = { randbelow: (n) => { calls.push(n); return n - 1 - (calls.length % 2); } };
  const chosen = floydSubset(10, 4, rng);
  assert.deepEqual(calls, [7, 8, 9, 10]);
  assert.equal(chosen.reduce((a, b) => a + b, 0), 4);
  assert.equal(floydSubset(5, 0, rng).reduce((a, b) => a + b, 0), 0);
});

test("ss: a wide domain (1,000,000 values) reports ω ones", () => {
  const params = fromDict(SSParams, { epsilon: 12, domain_size: 10 ** 6 });
  const report = ss.makeEncoder(params).encode(999999);
  assertValidReport(report, params);
  assert.equal(ones(report.payload[0][1]), params.omega);
});

for (const [epsilon, d, v] of [[1, 10, 4], [0.5, 6, 0], [3, 100, 99]]) {
  test(`ss: 20,000 reports hold the value w.p. p and another value w.p. q (ε=${epsilon}, d=${d})`, () => {
    const params = fromDict(SSParams, { epsilon, domain_size: d });
    const encoder = ss.makeEncoder(params, { rng: new CryptoRandomSource() });
    const u = (v + 1) % d;
    let own = 0, other = 0;
    for (let i = 0; i < N; i++) {
      const bits = encoder.encode(v).payload[0][1];
      assert.equal(ones(bits), params.omega);
      if (bits[v] === "1") own++;
      if (bits[u] === "1") other++;
    }
    bernoulliWithin(own, N, params.p, "value");
    bernoulliWithin(other, N, params.q, "another value");
  });
}

auditVectors(ss, SSParams);
