// Hierarchical histograms (`hh`) beyond the conformance vectors: the vectors' value refusals with their float tokens
// kept (`8.0`), Python's refusals the vectors do not reach, the levels' oracles ("auto": GRR on top, OUE below), bad
// inputs of every JSON type, any params dict, and the report law over 20,000 reports of a keyed stream (the level
// drawn uniformly or by its weights, each level's GRR or OUE law; within 4 standard errors).
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertRefusal, refusal } from "../test-support/refusal.mjs";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { fromDict } from "../dist/params/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { PyFloat } from "../dist/canonical.js";
import { utf8Encode } from "../dist/bytes.js";
import { CollectionSpec } from "../dist/index.js";
import { GRRParams } from "../dist/protocols/randomized-response.js";
import { HHParams, hh, nullVariance } from "../dist/protocols/range-tree.js";

import { VECTORS, N, prng, randomValue, show, assertValidReport, isRefusal, bernoulliWithin, refuses, auditVectors, encodeOrRefuse } from "../test-support/domain.mjs";
import { parseKeepingFloats } from "../test-support/json-floats.mjs";

function stream(label) {
  return new KeyedRandomSource(utf8Encode("range tree test"), utf8Encode(label));
}

auditVectors(hh, HHParams);

test("hh: the vectors' value refusals, float tokens kept, have Python's codes and fields", () => {
  const text = readFileSync(join(VECTORS, "hh.json"), "utf8");
  const doc = parseKeepingFloats(text);
  const spec = CollectionSpec.fromDict(JSON.parse(text).spec);
  let floats = 0;
  for (const item of doc.refusals.values) {
    const encoder = hh.makeEncoder(spec.params(item.metric));
    if (item.value instanceof PyFloat) floats++;
    assert.throws(() => encoder.prepare(item.value), (err) => {
      assertRefusal(err, item.error, show(item.value));
      return true;
    });
  }
  assert.ok(floats >= 2, `${floats} float values`);
});

test("hh: Python's refusals for the tree's shape, the weights and the bounds", () => {
  const base = { epsilon: 1, low: 0, high: 1 };
  refuses(HHParams, { ...base, branching: 4, depth: 9 }, "ValueError", "param_limit", { limit: "leaves", got: 262144, max: 65536 });
  refuses(HHParams, { ...base, branching: 2, depth: 3, level_weights: [1, 2] }, "ValueError", "param_length", { param: "level_weights", got: 2, min: 3, max: 3 });
  refuses(HHParams, { ...base, branching: 2, depth: 2, level_weights: [1, 0] }, "ValueError", "param_relation", { params: ["level_weights"], rule: "leaf_weight" });
  refuses(HHParams, { ...base, branching: 2, depth: 2, level_weights: [1, 1.5] }, "TypeError", "param_type", { param: "level_weights", expected: "int", got: "float", index: 1 });
  refuses(HHParams, { ...base, branching: 2, depth: 2, level_weights: [-1, 1] }, "ValueError", "param_range", { param: "level_weights", got: -1, min: 0, max: 4294967296, index: 0 });
  refuses(HHParams, { ...base, clip: "yes" }, "TypeError", "param_type", { param: "clip", expected: "bool", got: "string" });
  refuses(HHParams, { ...base, low: Infinity }, "ValueError", "param_range", { param: "low", got: Infinity, finite: true });
  refuses(HHParams, { epsilon: 1, low: 1, high: 1 + 2 ** -40, branching: 4, depth: 8 }, "ValueError", "param_relation", { params: ["low", "high", "branching", "depth"], rule: "distinct_edges" });
  refuses(HHParams, { ...base, oracle: "grr", epsilon: 1000, branching: 2, depth: 1 }, "ValueError", "param_relation", { params: ["epsilon", "branching", "depth", "oracle"], rule: "epsilon_too_large" });
  refuses(HHParams, { ...base, oracle: "OUE" }, "ValueError", "param_choice", { param: "oracle", choices: ["auto", "oue", "grr"], got: "OUE" });
});

test("hh: 'auto' takes GRR at a level while its null variance is below OUE's; the schema follows the oracles", () => {
  const params = fromDict(HHParams, { epsilon: 2, low: 0, high: 1, branching: 4, depth: 4 });
  const kinds = params.oracles.map((o) => (o instanceof GRRParams ? "grr" : "oue"));
  assert.deepEqual(kinds, ["grr", "grr", "oue", "oue"]);
  for (const o of params.oracles) {
    const grr = fromDict(GRRParams, { epsilon: 2, domain_size: o.domainSize });
    const oueVar = nullVariance(0.5, params.oracles[3].q);
    assert.equal(o instanceof GRRParams, nullVariance(grr.p, grr.q) < oueVar);
  }
  assert.deepEqual(params.schema.map((f) => [f.name, f.kind, f.size]), [["level", "uint", 4], ["y", "uint", 16], ["bits", "bits", 256]]);
  const oue = fromDict(HHParams, { epsilon: 1, low: 0, high: 1, branching: 2, depth: 3, oracle: "oue" });
  assert.deepEqual(oue.schema.map((f) => f.name), ["level", "bits"]);
  const grr = fromDict(HHParams, { epsilon: 1, low: 0, high: 1, branching: 2, depth: 3, oracle: "grr" });
  assert.deepEqual(grr.schema.map((f) => [f.name, f.size]), [["level", 3], ["y", 8]]);
  assert.equal(params.privacyCost.epsilon, Math.max(...params.oracles.map((o) => o.privacyCost.epsilon)));
  assert.equal(params.toDict().level_weights.length, 0);
});

test("hh: any value is a valid report (a real number in range) or a refusal", () => {
  const r = prng(111);
  for (const d of [{ epsilon: 1, low: -1, high: 3, branching: 2, depth: 3 }, { epsilon: 2, low: 0, high: 90, branching: 3, depth: 2,
    level_weights: [1, 2], clip: true }, { epsilon: 0.5, low: 0, high: 1, oracle: "grr", branching: 5, depth: 2 }]) {
    const params = fromDict(HHParams, d);
    const encoder = hh.makeEncoder(params);
    let reports = 0, refusals = 0;
    for (let i = 0; i < 1500; i++) {
      const v = r() < 0.3 ? params.low + (params.high - params.low) * (r() * 1.2 - 0.1) : randomValue(r);
      const real = (typeof v === "number" && Number.isFinite(v)) || typeof v === "bigint";
      const ok = real && (params.clip || (v >= params.low && v <= params.high));
      const report = encodeOrRefuse(encoder, params, v, ok);
      if (report === null) {
        refusals++;
        continue;
      }
      reports++;
    }
    assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
  }
});

test("hh: any params dict is HHParams or a refusal", () => {
  const r = prng(112);
  const SPECIAL = [0, -1, 1, 2, 3, 16, 17, 256, 65536, 65537, 1e300, -1e300, 0.5, 1e-300, 2 ** 53];
  let made = 0;
  for (let i = 0; i < 1500; i++) {
    const d = { epsilon: r() * 5, low: -r() * 10, high: r() * 10, branching: 2 + Math.floor(r() * 4), depth: 1 + Math.floor(r() * 4) };
    if (r() < 0.3) d.oracle = ["auto", "oue", "grr"][Math.floor(r() * 3)];
    if (r() < 0.3) d.level_weights = Array.from({ length: d.depth }, () => Math.floor(r() * 4));
    for (const f of HHParams.fields.map((x) => x.name)) {
      const c = r();
      if (c < 0.06) d[f] = randomValue(r);
      else if (c < 0.09) delete d[f];
      else if (c < 0.15) d[f] = SPECIAL[Math.floor(r() * SPECIAL.length)];
    }
    let params;
    try {
      params = fromDict(HHParams, d);
    } catch (err) {
      assert.ok(isRefusal(err), `${show(d)}: ${err}`);
      continue;
    }
    made++;
    assert.ok(Number.isFinite(params.privacyCost.epsilon) && params.privacyCost.epsilon >= params.epsilon, show(d));
    if (params.numBuckets <= 4096) assertValidReport(hh.makeEncoder(params).encode(params.high), params);
  }
  assert.ok(made > 300, `${made} valid params`);
});

test("hh: 20,000 reports draw the level by its weights; a GRR level keeps the node w.p. p, an OUE level sets its bit w.p. 1/2", () => {
  // ε = 1: GRR over the 4 nodes of level 1, OUE over the 16 of level 2 (the vectors' trees are all-GRR or all-OUE)
  const params = fromDict(HHParams, { epsilon: 1, low: 0, high: 16, branching: 4, depth: 2, level_weights: [1, 2] });
  assert.ok(params.oracles[0] instanceof GRRParams && !(params.oracles[1] instanceof GRRParams));
  assert.deepEqual(params.schema.map((f) => [f.name, f.size]), [["level", 2], ["y", 4], ["bits", 16]]);
  const encoder = hh.makeEncoder(params, { rng: stream("weighted") });
  const x = 9.5; // bucket 9 of 16: node 2 of 4 at level 1, node 9 at level 2
  const levels = [0, 0], ys = [0, 0, 0, 0];
  let own = 0, others = 0;
  for (let i = 0; i < N; i++) {
    const report = encoder.encode(x);
    assertValidReport(report, params);
    const p = Object.fromEntries(report.payload);
    levels[p.level]++;
    if (p.level === 0) {
      ys[p.y]++;
      assert.equal(p.bits, "0".repeat(16));
    } else {
      assert.equal(p.y, 0);
      for (let j = 0; j < 16; j++) (j === 9 ? own += +p.bits[j] : others += +p.bits[j]);
    }
  }
  bernoulliWithin(levels[0], N, 1 / 3, "level 1");
  const g = params.oracles[0];
  bernoulliWithin(ys[2], levels[0], g.p, "GRR: own node");
  for (const y of [0, 1, 3]) bernoulliWithin(ys[y], levels[0], g.q, `GRR: node ${y}`);
  bernoulliWithin(own, levels[1], 0.5, "OUE: own bit");
  bernoulliWithin(others, 15 * levels[1], params.oracles[1].q, "OUE: other bits");
});

test("hh: 20,000 reports draw the level uniformly; OUE bits only in the level's first B^l positions", () => {
  const params = fromDict(HHParams, { epsilon: 1, low: 0, high: 64, branching: 4, depth: 3, oracle: "oue" });
  const encoder = hh.makeEncoder(params, { rng: stream("uniform") });
  const levels = [0, 0, 0];
  let own = 0;
  for (let i = 0; i < N; i++) {
    const [[, level], [, bits]] = encoder.encode(63.5).payload;
    levels[level]++;
    const m = 4 ** (level + 1);
    assert.ok(!bits.slice(m).includes("1"), `level ${level}: bits beyond ${m}`);
    own += +bits[m - 1]; // the last bucket's node is the level's last
  }
  for (let l = 0; l < 3; l++) bernoulliWithin(levels[l], N, 1 / 3, `level ${l + 1}`);
  bernoulliWithin(own, N, 0.5, "own bit");
});
