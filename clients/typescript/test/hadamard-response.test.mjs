// Hadamard Response (`hr`) beyond the conformance vectors: bad inputs of every JSON type (a seeded generator),
// Python's refusal texts and derived values the vectors do not reach, the report law through the platform CSPRNG
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

import { HRParams, hr, hrOrder } from "../dist/protocols/hadamard-response.js";

import { VECTORS, N, prng, UNITS, randomValue, show, assertValidReport, isRefusal, withinSE, bernoulliWithin, inDomain, fuzzDomainValues, SPECIAL_INTS, fuzzDomainParams, auditVectors, refuses } from "../test-support/domain.mjs";

/** Whether column j is in C_v = {j : H[v+1, j] = +1} (an even popcount of j & (v+1)). */
function inC(j, v) {
  let a = j & (v + 1), odd = 0;
  for (; a; a &= a - 1) odd ^= 1;
  return odd === 0;
}

fuzzDomainValues(hr, HRParams, [
  { epsilon: 1, domain_size: 3 },
  { epsilon: 2, domain_size: 5, labels: ["l0", "l1", "é", "\ud83d\ude00", "'"] },
  { epsilon: 0.5, domain_size: 1000 },
], 71);

fuzzDomainParams(hr, HRParams, {}, 72);

test("hr: K = 2^bit_length(d) and p = realized(σ(−ε)), as Python's; its texts for parameters it refuses", () => {
  assert.deepEqual([2, 3, 4, 5, 7, 8, 100, 2 ** 27].map(hrOrder), [4, 4, 8, 8, 8, 16, 128, 2 ** 28]);
  assert.equal(hrOrder(2 ** 32), 2 ** 33);
  const params = fromDict(HRParams, { epsilon: 2, domain_size: 7 });
  assert.equal(params.order, 8);
  assert.equal(params.p, 0.8807970779778823);
  assert.equal(params.privacyCost.epsilon, 2.0);
  assert.deepEqual(params.schema, [{ name: "j", kind: "uint", size: 8 }]);
  refuses(HRParams, { epsilon: 1000, domain_size: 5 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_large" });
  refuses(HRParams, { epsilon: 1e-20, domain_size: 5 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_small" });
  refuses(HRParams, { epsilon: 1, domain_size: 2 ** 28 }, "ValueError", "param_limit", { limit: "aggregate_cells", got: 536870912, max: 268435456 });
});

test("hr: the largest collectable domain (2^28 − 1 values, K = 2^28) reports columns below K", () => {
  const params = fromDict(HRParams, { epsilon: 1, domain_size: 2 ** 28 - 1 });
  const encoder = hr.makeEncoder(params);
  for (const v of [0, 1, 2 ** 27, 2 ** 28 - 2]) {
    const report = encoder.encode(v);
    assertValidReport(report, params);
  }
});

for (const [epsilon, d, v] of [[1, 5, 3], [2, 8, 7], [0.5, 100, 42]]) {
  test(`hr: 20,000 reports fall in C_v w.p. p and each column of C_v w.p. 2p/K, of the rest 2(1 − p)/K (ε=${epsilon}, d=${d})`, () => {
    const params = fromDict(HRParams, { epsilon, domain_size: d });
    const encoder = hr.makeEncoder(params, { rng: new CryptoRandomSource() });
    const K = params.order;
    const out = Array.from({ length: K }, (_, j) => j).find((j) => !inC(j, v)); // j = 0 is always in C_v
    let inside = 0, zero = 0, first = 0;
    for (let i = 0; i < N; i++) {
      const j = encoder.encode(v).payload[0][1];
      if (inC(j, v)) inside++;
      if (j === 0) zero++;
      if (j === out) first++;
    }
    bernoulliWithin(inside, N, params.p, "in C_v");
    bernoulliWithin(zero, N, (2 * params.p) / K, "j = 0 (in C_v: 2p/K)");
    bernoulliWithin(first, N, (2 * (1 - params.p)) / K, `j = ${out} (outside: 2(1 − p)/K)`);
  });
}

auditVectors(hr, HRParams);
