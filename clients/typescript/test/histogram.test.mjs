// bucket-grr, bucket-oue, dbitflip and memo-dbitflip beyond the conformance vectors: the buckets of numbers (ends,
// clipping, bigints), the value refusals of the vectors with their float tokens kept (`7.0`), bad inputs of every JSON
// type, the report laws over 20,000 reports of a keyed stream (within 4 standard errors), and memoization: the same
// bucket gives the same permanent response and the same memo key, the sample is the device's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertRefusal, refusal } from "../test-support/refusal.mjs";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { fromDict } from "../dist/params/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { PyFloat } from "../dist/canonical.js";
import { concatBytes, uint32BE, utf8Encode } from "../dist/bytes.js";
import { hmacSha256 } from "../dist/hash/sha256.js";
import { CollectionSpec } from "../dist/index.js";
import { bucketIndex, bucketLabels } from "../dist/protocols/histogram-buckets.js";
import {
  BucketGRRParams, BucketOUEParams, DBitFlipParams, bucketGrr, bucketOue, dbitflip,
} from "../dist/protocols/histogram.js";
import { MemoDBitFlipParams, memoDbitflip } from "../dist/protocols/dbitflip-memo.js";

import { VECTORS, N, prng, randomValue, show, bernoulliWithin, refuses, encodeOrRefuse } from "../test-support/domain.mjs";
import { parseKeepingFloats } from "../test-support/json-floats.mjs";

const ENTRIES = [[bucketGrr, BucketGRRParams], [bucketOue, BucketOUEParams], [dbitflip, DBitFlipParams],
  [memoDbitflip, MemoDBitFlipParams]];
const SECRET = utf8Encode("histogram test secret");

/** A seeded stream: the keyed (HMAC) source of `label`. */
function stream(label) {
  return new KeyedRandomSource(SECRET, utf8Encode(label));
}

function encoderOf(entry, params, options = {}) {
  return entry.makeEncoder(params, entry.needsSecret ? { secret: SECRET, ...options } : options);
}

test("bucketIndex: [e_i, e_i+1), the last bucket closed, ints and bigints exactly, clipping", () => {
  const edges = [0, 1, 2.5, 4];
  assert.deepEqual([0, 0.999, 1, 2.4999, 2.5, 3.99, 4, -0].map((v) => bucketIndex(edges, v, false)), [0, 0, 1, 1, 2, 2, 2, 0]);
  assert.equal(bucketIndex(edges, 3n, false), 2);
  assert.equal(bucketIndex(edges, new PyFloat(1), false), 1);
  assert.equal(bucketIndex(edges, -5, true), 0);
  assert.equal(bucketIndex(edges, 2n ** 80n, true), 2);
  assert.equal(bucketIndex(edges, 1e300, true), 2);
  // a bigint beyond 2^53 compares exactly with a double edge
  const big = [0, 2 ** 60, 2 ** 61];
  assert.equal(bucketIndex(big, 2n ** 60n - 1n, false), 0);
  assert.equal(bucketIndex(big, 2n ** 60n, false), 1);
  assert.throws(() => bucketIndex(big, 2n ** 61n + 1n, false), // got: the int given, exactly, as Python's
    refusal("ValueError", "value_range", { got: 2n ** 61n + 1n, min: 0, max: 2 ** 61 }));
  assert.throws(() => bucketIndex(edges, NaN, true), refusal("ValueError", "value_range", { got: NaN, min: 0, max: 4, finite: true }));
  assert.throws(() => bucketIndex(edges, -Infinity, true),
    refusal("ValueError", "value_range", { got: -Infinity, min: 0, max: 4, finite: true }));
  assert.throws(() => bucketIndex(edges, "1", true), refusal("TypeError", "value_type", { expected: "float", got: "string" }));
});

test("bucketLabels: integral edges as ints, others as Python's float repr", () => {
  assert.deepEqual(bucketLabels([-0, 0.5, 1e16, 1e17]), ["[0, 0.5)", "[0.5, 1e+16)", "[1e+16, 1e+17]"]);
  assert.deepEqual(bucketLabels([-3, 2, 9999999999999998]), ["[-3, 2)", "[2, 9999999999999998]"]);
});

test("histograms: the vectors' value refusals, float tokens kept, have Python's codes and fields", () => {
  for (const [entry] of ENTRIES) {
    const doc = parseKeepingFloats(readFileSync(join(VECTORS, `${entry.name}.json`), "utf8"));
    const spec = CollectionSpec.fromDict(JSON.parse(readFileSync(join(VECTORS, `${entry.name}.json`), "utf8")).spec);
    let floats = 0;
    for (const item of doc.refusals.values) {
      const encoder = encoderOf(entry, spec.params(item.metric));
      if (item.value instanceof PyFloat) floats++;
      assert.throws(() => encoder.prepare(item.value), (err) => {
        assertRefusal(err, item.error, show(item.value));
        return true;
      });
    }
    assert.ok(floats >= 2, `${entry.name}: ${floats} float values`);
  }
});

test("histograms: Python's refusals for bad edges, d and gamma", () => {
  refuses(DBitFlipParams, { epsilon: 1, edges: [0, 1, 1] }, "ValueError", "param_relation", { params: ["edges"], rule: "edges_increasing" });
  refuses(DBitFlipParams, { epsilon: 1, edges: [0, "a", 2] }, "TypeError", "param_type", { param: "edges", expected: "float", got: "string", index: 1 });
  refuses(DBitFlipParams, { epsilon: 1, edges: [0, [], 2] }, "TypeError", "param_type", { param: "edges", expected: "float", got: "list", index: 1 });
  refuses(DBitFlipParams, { epsilon: 1, edges: [0, 1, Infinity] }, "ValueError", "param_range", { param: "edges", got: Infinity, finite: true, index: 2 });
  refuses(DBitFlipParams, { epsilon: 1, edges: [0, 1] }, "ValueError", "param_length", { param: "edges", got: 2, min: 3, max: 32769 });
  refuses(BucketOUEParams, { epsilon: 1, edges: "abc" }, "TypeError", "param_type", { param: "edges", expected: "list", got: "string" });
  refuses(DBitFlipParams, { epsilon: 1, edges: [0, 1, 2], d: 3 }, "ValueError", "param_range", { param: "d", got: 3, min: 1, max: 2 });
  refuses(DBitFlipParams, { epsilon: 1e-30, edges: [0, 1, 2] }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_small" });
  refuses(DBitFlipParams, { epsilon: 1000, edges: [0, 1, 2] }, "ValueError", "param_relation", { params: ["epsilon"], rule: "epsilon_too_large" });
  refuses(BucketGRRParams, { epsilon: 1000, edges: [0, 1, 2] }, "ValueError", "param_relation", { params: ["epsilon", "edges"], rule: "epsilon_too_large" });
  refuses(MemoDBitFlipParams, { epsilon: 1, edges: [0, 1, 2], gamma: 0.5 }, "ValueError", "param_range", { param: "gamma", got: 0.5, min: 0, max: 0.5, max_exclusive: true });
  refuses(MemoDBitFlipParams, { epsilon: 1, edges: [0, 1, 2], clip: 1 }, "TypeError", "param_type", { param: "clip", expected: "bool", got: "int" });
});

test("histograms: the parameters keep a copy of the edges (a caller's later change cannot move the buckets)", () => {
  const edges = [0, 1, 2];
  const params = fromDict(DBitFlipParams, { epsilon: 1, edges });
  const fp = params.fingerprint;
  edges[1] = 1.5;
  assert.deepEqual(params.edges, [0, 1, 2]);
  assert.equal(params.bucketOf(1.2), 1);
  assert.equal(fromDict(DBitFlipParams, { epsilon: 1, edges: [0, 1, 2] }).fingerprint, fp);
});

for (const [[entry, Params], seed] of ENTRIES.map((e, i) => [e, 71 + i])) {
  test(`${entry.name}: any value is a valid report (a real number in range) or a refusal`, () => {
    const r = prng(seed);
    for (const d of [{ epsilon: 1, edges: [-1, 0, 0.5, 1, 3] }, { epsilon: 2, edges: [0, 10, 20], clip: true },
      { epsilon: 2, edges: Array.from({ length: 21 }, (_, i) => i * 0.25), ...(entry.name.includes("dbitflip") ? { d: 10 } : {}) }]) {
      const params = fromDict(Params, d);
      const encoder = encoderOf(entry, params);
      const [lo, hi] = [params.edges[0], params.edges[params.edges.length - 1]];
      let reports = 0, refusals = 0;
      for (let i = 0; i < 1500; i++) {
        const v = r() < 0.3 ? lo + (hi - lo) * (r() * 1.2 - 0.1) : randomValue(r);
        const real = (typeof v === "number" && Number.isFinite(v)) || typeof v === "bigint";
        const inRange = real && v >= lo && v <= hi;
        const report = encodeOrRefuse(encoder, params, v, inRange || (real && params.clip));
        if (report === null) {
          refusals++;
          continue;
        }
        if (entry.name.includes("dbitflip")) {
          const [[, sampled], [, bits]] = report.payload;
          assert.equal(sampled.split("1").length - 1, params.d);
          for (let j = 0; j < bits.length; j++) assert.ok(bits[j] === "0" || sampled[j] === "1");
        }
        reports++;
      }
      assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
    }
  });
}

test("bucket-grr: 20,000 reports keep the bucket w.p. p, else a uniform other bucket", () => {
  const params = fromDict(BucketGRRParams, { epsilon: 1, edges: [0, 1, 2, 4, 8] });
  const encoder = bucketGrr.makeEncoder(params, { rng: stream("bucket-grr") });
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < N; i++) counts[encoder.encode(1.5).payload[0][1]]++;
  bernoulliWithin(counts[1], N, params.grr.p, "own bucket");
  for (const b of [0, 2, 3]) bernoulliWithin(counts[b], N, params.grr.q, `bucket ${b}`);
});

test("bucket-oue: 20,000 reports set the bucket's bit w.p. 1/2, every other w.p. q", () => {
  const params = fromDict(BucketOUEParams, { epsilon: 1.5, edges: [0, 1, 10, 100, 1000] });
  const encoder = bucketOue.makeEncoder(params, { rng: stream("bucket-oue") });
  let own = 0, others = 0;
  for (let i = 0; i < N; i++) {
    const bits = encoder.encode(50).payload[0][1];
    for (let b = 0; b < 4; b++) (b === 2 ? own += +bits[b] : others += +bits[b]);
  }
  bernoulliWithin(own, N, 0.5, "own bit");
  bernoulliWithin(others, 3 * N, params.q, "other bits");
});

for (const [d, k] of [[1, 4], [2, 5], [8, 16], [10, 20]]) {
  test(`dbitflip d=${d} k=${k}: each bucket sampled w.p. d/k, its bit 1 w.p. p1 (own) or p0 (others)`, () => {
    const params = fromDict(DBitFlipParams, { epsilon: 2, edges: Array.from({ length: k + 1 }, (_, i) => i), d });
    const encoder = dbitflip.makeEncoder(params, { rng: stream(`dbitflip ${d}`) });
    const n = k >= 16 ? N / 4 : N;
    const sampledCount = new Array(k).fill(0);
    let own = 0, ownSampled = 0, others = 0, othersSampled = 0;
    for (let i = 0; i < n; i++) {
      const [[, sampled], [, bits]] = encoder.encode(1.5).payload;
      for (let j = 0; j < k; j++) {
        if (sampled[j] !== "1") continue;
        sampledCount[j]++;
        if (j === 1) ownSampled++, own += +bits[j];
        else othersSampled++, others += +bits[j];
      }
    }
    for (let j = 0; j < k; j++) bernoulliWithin(sampledCount[j], n, d / k, `bucket ${j} sampled`);
    bernoulliWithin(own, ownSampled, params.p1, "own bit");
    bernoulliWithin(others, othersSampled, params.p0, "other bits");
  });
}

test("memo-dbitflip: over 20,000 devices, a sampled bucket's bit is 1 w.p. γ + (1 − 2γ)·p (p1 own, p0 others)", () => {
  const params = fromDict(MemoDBitFlipParams, { epsilon: 1, edges: [0, 10, 20, 40, 80], d: 2, gamma: 0.1 });
  const rng = stream("memo-dbitflip flips");
  let own = 0, ownSampled = 0, others = 0, othersSampled = 0;
  const sampledCount = [0, 0, 0, 0];
  for (let i = 0; i < N; i++) {
    const encoder = memoDbitflip.makeEncoder(params, { rng, secret: uint32BE(i + 1) });
    const [[, sampled], [, bits]] = encoder.encode(25).payload;
    for (let j = 0; j < 4; j++) {
      if (sampled[j] !== "1") continue;
      sampledCount[j]++;
      if (j === 2) ownSampled++, own += +bits[j];
      else othersSampled++, others += +bits[j];
    }
  }
  for (let j = 0; j < 4; j++) bernoulliWithin(sampledCount[j], N, 0.5, `bucket ${j} sampled`);
  bernoulliWithin(own, ownSampled, params.p1, "own bit");
  bernoulliWithin(others, othersSampled, params.p0, "other bits");
});

test("memo-dbitflip: one device's sample is fixed, a bucket's response is permanent (γ = 0), its memo key", () => {
  const params = fromDict(MemoDBitFlipParams, { epsilon: 2, edges: Array.from({ length: 17 }, (_, i) => i), d: 8 });
  const secret = utf8Encode("device 1");
  const encoder = memoDbitflip.makeEncoder(params, { secret, rng: stream("unused") });
  const again = memoDbitflip.makeEncoder(params, { secret });
  const first = new Map();
  let sampled0;
  for (let i = 0; i < 200; i++) {
    const b = i % 16;
    const report = encoder.encode(b + 0.5);
    const [[, sampled], [, bits]] = report.payload;
    sampled0 ??= sampled;
    assert.equal(sampled, sampled0, "the same sample every report");
    if (!first.has(b)) first.set(b, bits);
    assert.equal(bits, first.get(b), `bucket ${b}: the permanent response`);
    assert.equal(again.encode(b).payload[1][1], bits, "recomputed from the secret by another encoder");
    const charge = encoder.chargeFor(b);
    const key = hmacSha256(secret, concatBytes(utf8Encode("ldp/longitudinal/memo/v1\0"), utf8Encode(params.fingerprint),
      uint32BE(b)));
    assert.deepEqual(charge.key, key);
    assert.equal(charge.first, params.privacyCost);
    assert.equal(charge.cap, params.memoCap);
  }
  assert.ok(new Set(first.values()).size > 1, "buckets have their own responses");
  const other = memoDbitflip.makeEncoder(params, { secret: utf8Encode("device 2") });
  assert.notEqual(other.encode(0).payload[0][1] + other.encode(0).payload[1][1], sampled0 + first.get(0));
  assert.throws(() => memoDbitflip.makeEncoder(params, {}), { name: "TypeError" });
});

test("memo-dbitflip: with γ > 0 each report flips the permanent bits afresh, only inside the sample", () => {
  const params = fromDict(MemoDBitFlipParams, { epsilon: 1, edges: [0, 1, 2, 3, 4, 5], d: 3, gamma: 0.25 });
  const encoder = memoDbitflip.makeEncoder(params, { secret: utf8Encode("device"), rng: stream("flips") });
  const seen = new Set();
  for (let i = 0; i < 400; i++) {
    const [[, sampled], [, bits]] = encoder.encode(2).payload;
    for (let j = 0; j < 5; j++) assert.ok(sampled[j] === "1" || bits[j] === "0");
    seen.add(bits);
  }
  assert.equal(seen.size, 8, "every pattern of the 3 sampled bits");
  assert.ok(params.privacyCost.epsilon < params.memoCap.epsilon);
});
