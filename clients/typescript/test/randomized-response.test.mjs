// Binary RR (`rr`) and GRR (`grr`) beyond the conformance vectors: bad inputs of every JSON type (a seeded
// generator), Python's refusal texts the vectors do not reach, the report law through the platform CSPRNG (20,000
// reports, within 4 standard errors), and the exact audits of the vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";
import { CryptoRandomSource } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";

import { BinaryRRParams, GRRParams, rr, grr } from "../dist/protocols/randomized-response.js";

import { VECTORS, N, prng, UNITS, randomValue, show, assertValidReport, isRefusal, withinSE, bernoulliWithin, inDomain, fuzzDomainValues, SPECIAL_INTS, fuzzDomainParams, auditVectors, refuses, encodeOrRefuse } from "../test-support/domain.mjs";

// ---- rr ----

test("rr: any value is a valid report (bool, 0 or 1) or a refusal", () => {
  const r = prng(11);
  const params = fromDict(BinaryRRParams, { p: 0.25, q: 0.75 });
  const encoder = rr.makeEncoder(params);
  let reports = 0, refusals = 0;
  for (let i = 0; i < 3000; i++) {
    const v = randomValue(r);
    const ok = v === true || v === false || v === 0 || v === 1 || v === 0n || v === 1n;
    const report = encodeOrRefuse(encoder, params, v, ok);
    if (report === null) {
      refusals++;
      continue;
    }
    reports++;
  }
  assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
});

test("rr: any params dict is BinaryRRParams or a refusal", () => {
  const r = prng(12);
  const special = [0, 1, -0, 0.5, 2 ** -64, 2 ** -65, 2 ** -63, 1 - 2 ** -53, 1e-300, 2, true, null, "p", []];
  let made = 0;
  for (let i = 0; i < 5000; i++) {
    const pick = () => (r() < 0.2 ? special[Math.floor(r() * special.length)] : r() < 0.5 ? r() : Math.exp(-r() * 50));
    let p = pick(), q = pick();
    if (typeof p === "number" && typeof q === "number" && p > q && r() < 0.7) [p, q] = [q, p];
    const d = { p, q };
    if (r() < 0.05) delete d[r() < 0.5 ? "p" : "q"];
    if (r() < 0.03) d.zz = 0;
    let params;
    try {
      params = fromDict(BinaryRRParams, d);
    } catch (err) {
      assert.ok(isRefusal(err), `${show(d)}: ${err}`);
      continue;
    }
    made++;
    assert.ok(params.p > 0 && params.p < params.q && params.q < 1);
    const e = params.privacyCost.epsilon;
    assert.ok(e > 0 && Number.isFinite(e), `${show(d)}: ${e}`);
    assertValidReport(rr.makeEncoder(params).encode(1), params);
  }
  assert.ok(made > 1000, `${made} valid params`);
});

test("rr: Python's refusals for probabilities the client cannot realize", () => {
  refuses(BinaryRRParams, { p: 1.2 * 2 ** -64, q: 1.5 * 2 ** -64 }, "ValueError", "param_relation", { params: ["p", "q"], rule: "p_q_resolvable" });
  refuses(BinaryRRParams, { p: 2 ** -65, q: 0.5 }, "ValueError", "param_relation", { params: ["p"], rule: "below_resolution" });
  refuses(BinaryRRParams, { p: 0.75, q: 0.25 }, "ValueError", "param_relation", { params: ["p", "q"], rule: "0<p<q<1" });
  // p = 2^-64, q = 2^-63: realizable, ε = ln 2 exactly as Python
  assert.equal(fromDict(BinaryRRParams, { p: 2 ** -64, q: 2 ** -63 }).privacyCost.epsilon, 0.6931471805599453);
  assert.equal(fromDict(BinaryRRParams, { p: 0.25, q: 0.75 }).domainSize, 2);
});

for (const [p, q] of [[0.25, 0.75], [0.5599999999999999, 0.8599999999999999], [1e-3, 0.999]]) {
  test(`rr: 20,000 reports of 1 are 1 w.p. q, of 0 w.p. p (p=${p}, q=${q})`, () => {
    const params = fromDict(BinaryRRParams, { p, q });
    const encoder = rr.makeEncoder(params, { rng: new CryptoRandomSource() });
    let ones1 = 0, ones0 = 0;
    for (let i = 0; i < N; i++) {
      ones1 += encoder.encode(true).payload[0][1];
      ones0 += encoder.encode(0).payload[0][1];
    }
    bernoulliWithin(ones1, N, q, "1");
    bernoulliWithin(ones0, N, p, "0");
  });
}

// ---- grr ----

fuzzDomainValues(grr, GRRParams, [
  { epsilon: 1, domain_size: 3 },
  { epsilon: 2, domain_size: 4, labels: ["l0", "l1", "é", "\ud83d\ude00"] },
  { epsilon: 0.1, domain_size: 2 },
], 21);

fuzzDomainParams(grr, GRRParams, {}, 22);

test("grr: Python's refusals for parameters the client cannot realize or collect", () => {
  refuses(GRRParams, { epsilon: 1e-17, domain_size: 3 }, "ValueError", "param_relation", { params: ["epsilon", "domain_size"], rule: "epsilon_too_small" });
  refuses(GRRParams, { epsilon: 50, domain_size: 3 }, "ValueError", "param_relation", { params: ["epsilon", "domain_size"], rule: "epsilon_too_large" });
  refuses(GRRParams, { epsilon: 1, domain_size: 2 ** 30 }, "ValueError", "param_limit", { limit: "aggregate_cells", got: 1073741824, max: 268435456 });
  refuses(GRRParams, { epsilon: 1, domain_size: 3, labels: ["a", "a", "b"] }, "ValueError", "param_relation", { params: ["labels"], rule: "distinct" });
  refuses(GRRParams, { epsilon: 1, domain_size: 3, labels: ["a", 1, "b"] }, "TypeError", "param_type", { param: "labels", expected: "string", got: "int", index: 1 });
});

test("grr: labels are copied: changing the given array changes neither the params nor the fingerprint", () => {
  const labels = ["a", "b", "c"];
  const params = fromDict(GRRParams, { epsilon: 1, domain_size: 3, labels });
  const fp = params.fingerprint;
  labels[0] = "z";
  assert.deepEqual([...params.labels], ["a", "b", "c"]);
  assert.equal(fromDict(GRRParams, { epsilon: 1, domain_size: 3, labels: ["a", "b", "c"] }).fingerprint, fp);
  assert.equal(params.labelOf(2), "c");
});

test("grr: 20,000 reports keep the value w.p. p, else a uniform other value (q each)", () => {
  const params = fromDict(GRRParams, { epsilon: 1, domain_size: 5 });
  const encoder = grr.makeEncoder(params, { rng: new CryptoRandomSource() });
  const counts = [0, 0, 0, 0, 0];
  for (let i = 0; i < N; i++) counts[encoder.encode(2).payload[0][1]]++;
  bernoulliWithin(counts[2], N, params.p, "kept");
  for (const u of [0, 1, 3, 4]) bernoulliWithin(counts[u], N, params.q, `other ${u}`);
});

auditVectors(rr, BinaryRRParams);
auditVectors(grr, GRRParams);
