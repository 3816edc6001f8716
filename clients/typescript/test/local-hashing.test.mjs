// BLH and OLH (`blh`, `olh`) beyond the conformance vectors: bad inputs of every JSON type (a seeded generator),
// Python's refusal texts and hashes the vectors do not reach, the report law through the platform CSPRNG (20,000
// reports, within 4 standard errors), and the exact audits of the vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertRefusal, refusal } from "../test-support/refusal.mjs";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";
import { CryptoRandomSource } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";

import { BLHParams, OLHParams, blh, lhHash, olh, olhWidth } from "../dist/protocols/local-hashing.js";

import { VECTORS, N, prng, UNITS, randomValue, show, assertValidReport, isRefusal, withinSE, bernoulliWithin, inDomain, fuzzDomainValues, SPECIAL_INTS, fuzzDomainParams, auditVectors, refuses } from "../test-support/domain.mjs";

for (const [entry, Params, seed] of [[olh, OLHParams, 51], [blh, BLHParams, 61]]) {
  fuzzDomainValues(entry, Params, [
    { epsilon: 1, domain_size: 4 },
    { epsilon: 2, domain_size: 3, labels: ["l0", "é", "\ud83d\ude00"], seed_range: 4 },
    { epsilon: 3, domain_size: 1000, seed_range: 1000 },
  ], seed, (report, params, v) => {
    const [[, s], [, y]] = report.payload;
    assert.ok(s < params.seedRange && y < params.g);
    assert.equal(params.hashOf(v, s), lhHash(typeof v === "string" ? params.labels.indexOf(v) : Number(v), s, params.g));
  });

  fuzzDomainParams(entry, Params, { seed_range: 2 ** 32 }, seed + 1);

  test(`${entry.name}: 20,000 reports give y = h_seed(v) w.p. p, seeds uniform`, () => {
    const params = fromDict(Params, { epsilon: 2, domain_size: 10 });
    const encoder = entry.makeEncoder(params, { rng: new CryptoRandomSource() });
    let kept = 0, seedSum = 0;
    for (let i = 0; i < N; i++) {
      const [[, s], [, y]] = encoder.encode(7).payload;
      seedSum += s;
      if (y === lhHash(7, s, params.g)) kept++;
    }
    bernoulliWithin(kept, N, params.p, "kept");
    withinSE(seedSum / N, (2 ** 32 - 1) / 2, Math.sqrt((2 ** 64 - 1) / 12 / N), "seed");
  });

  auditVectors(entry, Params);
}

test("olh, blh: Python's refusals for parameters the client cannot realize or collect", () => {
  refuses(OLHParams, { epsilon: 33, domain_size: 10 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "hash_range" });
  refuses(OLHParams, { epsilon: 25, domain_size: 10 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "hash_range" });
  refuses(OLHParams, { epsilon: 1e-20, domain_size: 10 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_small" });
  refuses(OLHParams, { epsilon: 1, domain_size: 10, seed_range: 2 ** 32 + 1 }, "ValueError", "param_range", { param: "seed_range", got: 4294967297, min: 1, max: 4294967296 });
  refuses(BLHParams, { epsilon: 50, domain_size: 10 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_large" });
  refuses(BLHParams, { epsilon: 1, domain_size: 2 ** 29 }, "ValueError", "param_limit", { limit: "aggregate_cells", got: 536870912, max: 268435456 });
});

test("olh: g = floor(e^ε + 1/2) + 1; lhHash is MurmurHash3 of the index's 4 little-endian bytes, as Python's", () => {
  assert.equal(olhWidth(1), 4);
  assert.equal(olhWidth(2.5), 13);
  assert.equal(fromDict(OLHParams, { epsilon: 22, domain_size: 4 }).g, 3584912847);
  // computed with Python's lh_hash
  assert.deepEqual([lhHash(0, 0, 2), lhHash(5, 123, 7), lhHash(999, 2 ** 32 - 1, 13), lhHash(2 ** 32 - 1, 7, 2 ** 32)],
    [0, 6, 3, 1935827890]);
  const params = fromDict(OLHParams, { epsilon: 1, domain_size: 3, labels: ["a", "b", "c"] });
  assert.equal(params.hashOf("c", 123), lhHash(2, 123, 4));
  assert.throws(() => params.hashOf("c", 2 ** 32), refusal("ValueError", "param_range", { param: "seed", got: 2 ** 32, min: 0, max: 2 ** 32 - 1 }));
  assert.throws(() => params.hashOf("d", 0), refusal("ValueError", "unknown_label", { got: "d" }));
});

test("olh, blh: seed_range defaults to 2^32 when built without it", () => {
  const params = new OLHParams({ epsilon: 1, domain_size: 3 });
  assert.equal(params.seedRange, 2 ** 32);
  assert.equal(params.fingerprint, fromDict(OLHParams, { epsilon: 1, domain_size: 3 }).fingerprint);
});
