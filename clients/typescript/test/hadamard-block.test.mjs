// Blocked Hadamard Response (`hr-block`) beyond the conformance vectors: bad inputs of every JSON type (a seeded
// generator), Python's refusals the vectors do not reach, `blocks` resolved by `bestBlocks` (the least variance of every
// B, checked by brute force), the exact ε*, and the report law over 20,000 reports of a keyed stream (within 4 SE).
import { test } from "node:test";
import assert from "node:assert/strict";

import { fromDict } from "../dist/params/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { utf8Encode } from "../dist/bytes.js";
import {
  HRBlockParams, bestBlocks, blockLayout, hrBlock, rareVariance, uniformShare,
} from "../dist/protocols/hadamard-block.js";

import { N, fuzzDomainValues, fuzzDomainParams, auditVectors, refuses, bernoulliWithin } from "../test-support/domain.mjs";

fuzzDomainValues(hrBlock, HRBlockParams, [
  { epsilon: 1, domain_size: 4 },
  { epsilon: 3, domain_size: 6, blocks: 3, labels: ["l0", "é", "\ud83d\ude00", "a", "b", "c"] },
  { epsilon: 5, domain_size: 300 },
], 91, (report, params) => assert.ok(report.payload[0][1] < params.order));

fuzzDomainParams(hrBlock, HRBlockParams, {}, 92);

auditVectors(hrBlock, HRBlockParams);

test("hr-block: Python's refusals for blocks and for ε the client cannot realize", () => {
  refuses(HRBlockParams, { epsilon: 1, domain_size: 5, blocks: 6 }, "ValueError", "param_range", { param: "blocks", got: 6, min: 1, max: 5 });
  refuses(HRBlockParams, { epsilon: 1, domain_size: 5, blocks: 0 }, "ValueError", "param_range", { param: "blocks", got: 0, min: 1, max: 5 });
  refuses(HRBlockParams, { epsilon: 1, domain_size: 5, blocks: 1.5 }, "TypeError", "param_type", { param: "blocks", expected: "int", got: "float" });
  refuses(HRBlockParams, { epsilon: 800, domain_size: 5, blocks: 2 }, "ValueError", "param_relation", { params: ["epsilon", "domain_size", "blocks"], rule: "epsilon_too_large" });
  refuses(HRBlockParams, { epsilon: 1e-300, domain_size: 5, blocks: 2 }, "ValueError", "param_relation", { params: ["epsilon", "domain_size", "blocks"], rule: "epsilon_too_small" });
  refuses(HRBlockParams, { epsilon: -1, domain_size: 5 }, "ValueError", "param_range", { param: "epsilon", got: -1, min: 0, min_exclusive: true, finite: true });
  refuses(HRBlockParams, { epsilon: 1, domain_size: 1 }, "ValueError", "param_range", { param: "domain_size", got: 1, min: 2, max: 4294967296 });
});

test("hr-block: blocks left out is bestBlocks, the least rare-value variance of every B (the smallest on a tie)", () => {
  for (const d of [2, 3, 5, 17, 100, 257]) {
    for (const eps of [0.1, 1, 2.5, 4, 8]) {
      const chosen = bestBlocks(eps, d);
      const v = rareVariance(uniformShare(eps, chosen), chosen, d);
      for (let b = 1; b <= d; b++) {
        const g = uniformShare(eps, b);
        if (g > 0 && g < 1) assert.ok(rareVariance(g, b, d) >= v * (1 - 1e-9), `d=${d} ε=${eps}: B=${b} beats ${chosen}`);
      }
      const params = fromDict(HRBlockParams, { epsilon: eps, domain_size: d });
      assert.equal(params.blocks, chosen);
      assert.equal(params.toDict().blocks, chosen);
      assert.equal(params.fingerprint, fromDict(HRBlockParams, { epsilon: eps, domain_size: d, blocks: chosen }).fingerprint);
    }
  }
  assert.deepEqual(blockLayout(6, 3), [2, 4]);
  assert.deepEqual(blockLayout(5, 5), [1, 2]);
});

test("hr-block: ε* = ln(1 + 2B(1 − γ)/γ); with one block the law is plain HR's", () => {
  const p = fromDict(HRBlockParams, { epsilon: 3, domain_size: 6, blocks: 3 });
  const g = p.gamma;
  assert.ok(Math.abs(p.effectiveEpsilon - Math.log(1 + (6 * (1 - g)) / g)) < 1e-12);
  assert.ok(Math.abs(p.effectiveEpsilon - 3) < 1e-12);
  assert.equal(p.privacyCost.epsilon, Math.max(3, p.effectiveEpsilon));
  assert.equal(fromDict(HRBlockParams, { epsilon: 1, domain_size: 3, blocks: 1 }).order, 4);
});

for (const [eps, d, blocks, x] of [[3, 6, 3, 4], [1, 3, 1, 2], [4, 5, null, 3]]) {
  test(`hr-block ε=${eps} d=${d} blocks=${blocks}: 20,000 reports, Pr[j] = γ/K + (1 − γ)/s on x's half, γ/K elsewhere`, () => {
    const params = fromDict(HRBlockParams, { epsilon: eps, domain_size: d, blocks });
    const encoder = hrBlock.makeEncoder(params, { rng: new KeyedRandomSource(utf8Encode("hr-block"), utf8Encode(`${eps}`)) });
    const K = params.order, b = params.blockOrder, B = params.blocks, s = b / 2, g = params.gamma;
    const counts = new Array(K).fill(0);
    for (let i = 0; i < N; i++) counts[encoder.encode(x).payload[0][1]]++;
    const row = Math.floor(x / B) + 1;
    const popcount = (v) => v.toString(2).split("1").length - 1;
    for (let j = 0; j < K; j++) {
      const inC = Math.floor(j / b) === x % B && popcount((j % b) & row) % 2 === 0;
      bernoulliWithin(counts[j], N, g / K + (inC ? (1 - g) / s : 0), `j=${j}`);
    }
  });
}
