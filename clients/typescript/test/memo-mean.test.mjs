// Memoized 1BitMean (`memo-mean`) beyond the conformance vectors: any value or params dict gives a report or
// Python's error type, the memoized bit per edge and its memo key, α-point rounding (E[j] = s·unit(x)), the law of
// one device's reports (its memoized bit flipped w.p. γ') and of many devices' (unbiased for x), within 4 standard
// errors.
import { test } from "node:test";
import assert from "node:assert/strict";

import { fromDict } from "../dist/params/base.js";
import { MemoMeanParams, memoMean } from "../dist/protocols/memo-mean.js";

import { N, prng, randomValue, show, assertValidReport, isRefusal, bernoulliWithin, encodeOrRefuse } from "../test-support/domain.mjs";
import { SECRET, memoChecks, seeded, secretOf } from "../test-support/memo.mjs";

test("memo-mean: any value is a valid report (a finite number in range, or clipped) or a refusal", () => {
  const r = prng(81);
  for (const d of [{ epsilon: 1, low: 0, high: 1 }, { epsilon: 2, low: -5, high: 5, clip: true, buckets: 3, gamma: 0.2 }]) {
    const params = fromDict(MemoMeanParams, d);
    const encoder = memoMean.makeEncoder(params, { secret: SECRET, rng: seeded("fuzz") });
    let reports = 0, refusals = 0;
    for (let i = 0; i < 3000; i++) {
      let v = randomValue(r);
      if (r() < 0.3) v = params.low + r() * (params.high - params.low);
      const x = typeof v === "number" || typeof v === "bigint" ? Number(v) : NaN;
      const ok = Number.isFinite(x) && (params.clip || (x >= params.low && x <= params.high));
      const report = encodeOrRefuse(encoder, params, v, ok);
      if (report === null) {
        refusals++;
        continue;
      }
      const j = encoder.prepare(v);
      assert.ok(Number.isInteger(j) && j >= 0 && j <= params.buckets);
      reports++;
    }
    assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
  }
});

test("memo-mean: any params dict is MemoMeanParams or a refusal", () => {
  const r = prng(82);
  let made = 0;
  for (let i = 0; i < 3000; i++) {
    const d = { epsilon: r() * 6, low: -r() * 10, high: r() * 10, clip: r() < 0.5, buckets: 1 + Math.floor(r() * 40), gamma: r() * 0.6 };
    for (const f of Object.keys(d)) {
      const c = r();
      if (c < 0.08) d[f] = randomValue(r);
      else if (c < 0.12) delete d[f];
    }
    let params;
    try {
      params = fromDict(MemoMeanParams, d);
    } catch (err) {
      assert.ok(isRefusal(err), `${show(d)}: ${err}`);
      continue;
    }
    made++;
    const e = params.privacyCost.epsilon;
    assert.ok(e > 0 && e <= params.epsilon && e <= params.memoCap.epsilon, `${show(d)}: ${e}`);
    assertValidReport(memoMean.makeEncoder(params, { secret: SECRET }).encode(params.high), params);
  }
  assert.ok(made > 1000, `${made} valid params`);
});

memoChecks(memoMean, MemoMeanParams, { epsilon: 1, low: 0, high: 1, buckets: 4, gamma: 0.1 },
  [[0, 0], [0.25, 1], [1, 4]], (enc, j) => enc.memoBit(j));

test("memo-mean: α-point rounding goes up w.p. φ over devices; α comes from the secret", () => {
  const params = fromDict(MemoMeanParams, { epsilon: 1, low: 0, high: 10, buckets: 4 });
  const [j0, phi] = params.rounding(3.3);
  assert.equal(j0, 1);
  let up = 0;
  for (let i = 0; i < N; i++) {
    const encoder = memoMean.makeEncoder(params, { secret: secretOf(i, "alpha") });
    const j = encoder.prepare(3.3);
    assert.ok(j === j0 || j === j0 + 1);
    up += j - j0;
    if (i < 50) assert.equal(memoMean.makeEncoder(params, { secret: secretOf(i, "alpha") }).alpha, encoder.alpha);
  }
  bernoulliWithin(up, N, phi, "rounded up");
  const fixed = memoMean.makeEncoder(params, { secret: SECRET, alpha: 0n });
  assert.equal(fixed.prepare(3.3), j0 + 1, "α = 0 rounds up any φ > 0");
  assert.equal(memoMean.makeEncoder(params, { secret: SECRET, alpha: (1n << 64n) - 1n }).prepare(3.3), j0);
  assert.throws(() => memoMean.makeEncoder(params, { secret: SECRET, alpha: 1n << 64n }), RangeError);
});

test("memo-mean: one device's reports are its memoized bit, flipped w.p. γ'", () => {
  const params = fromDict(MemoMeanParams, { epsilon: 1, low: 0, high: 1, buckets: 4, gamma: 0.2 });
  const encoder = memoMean.makeEncoder(params, { secret: secretOf(5), rng: seeded("memo-mean-one") });
  const bit = encoder.memoBit(encoder.prepare(0.5));
  let flipped = 0;
  for (let i = 0; i < N; i++) flipped += encoder.encode(0.5).payload[0][1] !== bit ? 1 : 0;
  bernoulliWithin(flipped, N, params.gammaRealized, "flipped");
  const still = memoMean.makeEncoder(fromDict(MemoMeanParams, { epsilon: 1, low: 0, high: 1 }), { secret: secretOf(5) });
  const b0 = still.memoBit(still.prepare(1));
  for (let i = 0; i < 100; i++) assert.equal(still.encode(1).payload[0][1], b0, "γ = 0: replayed as is");
});

test("memo-mean: over devices, Pr[bit = 1 | x] = q' + (1 − 2γ')(1 − 2q)·unit(x)", () => {
  const params = fromDict(MemoMeanParams, { epsilon: 1.5, low: 0, high: 10, buckets: 4, gamma: 0.1 });
  const rng = seeded("memo-mean-devices");
  let ones = 0;
  for (let i = 0; i < N; i++) ones += memoMean.makeEncoder(params, { secret: secretOf(i, "mm"), rng }).encode(3.3).payload[0][1];
  const g = params.gammaRealized, q = params.memo.q;
  bernoulliWithin(ones, N, params.q + (1 - 2 * g) * (1 - 2 * q) * 0.33, "ones");
  assert.ok(Math.abs(params.privacyCost.epsilon - Math.log((1 - params.q) / params.q)) < 1e-12);
});
