// Duchi, Piecewise and Hybrid beyond the conformance vectors: bad inputs of every JSON type (a seeded generator),
// the report law through the platform CSPRNG (20,000 reports, within 4 standard errors), and the exact audits of the
// vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import {
  DuchiParams, PiecewiseParams, HybridParams, HYBRID_THRESHOLD, duchi, piecewise, hybrid,
} from "../dist/protocols/numeric.js";
import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";
import { CryptoRandomSource, realizedProbability } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";
import { prng, assertValidReport, isRefusal, withinSE } from "../test-support/domain.mjs";

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "vectors");
const N = 20000;
const ENTRIES = [[duchi, DuchiParams], [piecewise, PiecewiseParams], [hybrid, HybridParams]];

const UNITS = ["a", "b", "é", "\u0000", "\ud800", "\udc00", "\ud83d\ude00", "'", '"', "\\", " ", "ß", "\uffff"];

function randomString(r) {
  const n = r() < 0.05 ? 600 + Math.floor(r() * 100) : Math.floor(r() * 12);
  let s = "";
  for (let i = 0; i < n; i++) s += r() < 0.8 ? UNITS[Math.floor(r() * UNITS.length)] : String.fromCharCode(Math.floor(r() * 0x10000));
  return s;
}

/** Any JSON-like value (and a few JS ones: bytes, NaN, ±Infinity, -0, undefined). */
function randomValue(r, depth = 0) {
  switch (Math.floor(r() * (depth > 2 ? 9 : 11))) {
    case 0: return null;
    case 1: return r() < 0.5;
    case 2: return Math.floor(r() * 200) - 100;
    case 3: return [2 ** 53, -(2 ** 53), 1e300, -0, NaN, Infinity, -Infinity, 0.5, 1e-300][Math.floor(r() * 9)];
    case 4: return (r() - 0.5) * 10 ** Math.floor(r() * 20 - 10);
    case 5: case 6: return randomString(r);
    case 7: return Uint8Array.from({ length: Math.floor(r() * 8) }, () => Math.floor(r() * 256));
    case 8: return undefined;
    case 9: return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: return Object.fromEntries(Array.from({ length: Math.floor(r() * 4) }, (_, i) => [`k${i}`, randomValue(r, depth + 1)]));
  }
}

/** The report has the params' protocol, fingerprint and schema: every uint below its size, every bit string its
 * length of 0/1; its JSON line parses. */

/** A number the generator likes for bounds and values: near the bounds, huge, tiny, negative zero, non-finite. */
function randomNumber(r) {
  const c = r();
  if (c < 0.3) return (r() - 0.5) * 30;
  if (c < 0.5) return Math.floor(r() * 21) - 10;
  return [0, -0, 1e308, -1e308, 1e-300, 2 ** 53, NaN, Infinity, -Infinity, 5e-5, -5e-5, 1.0000001][Math.floor(r() * 12)];
}

test("HYBRID_THRESHOLD is Python's", () => {
  assert.equal(HYBRID_THRESHOLD, 0.6093524930273091);
});

for (const [entry, Params] of ENTRIES) {
  test(`${entry.name}: any value is a valid report or a refusal`, () => {
    const r = prng(entry.name.length * 11);
    for (const d of [{ epsilon: 1, low: 0, high: 10 }, { epsilon: 4, low: -1, high: 1, clip: true }]) {
      if (entry !== duchi) d.cells = 64;
      const params = fromDict(Params, d);
      const encoder = entry.makeEncoder(params);
      let reports = 0, refusals = 0;
      for (let i = 0; i < 4000; i++) {
        const v = r() < 0.5 ? randomNumber(r) : randomValue(r);
        let report;
        try {
          report = encoder.encode(v);
        } catch (err) {
          assert.ok(isRefusal(err), `${String(v)}: ${err}`);
          refusals++;
          continue;
        }
        assert.ok(typeof v === "number" && Number.isFinite(v) && (params.clip || (v >= params.low && v <= params.high)), `accepted ${String(v)}`);
        assertValidReport(report, params);
        if (entry === hybrid && report.payload[0][1] === 0) assert.ok(report.payload[1][1] < 2);
        reports++;
      }
      assert.ok(reports > 500 && refusals > 500, `${reports} reports, ${refusals} refusals`);
    }
  });

  test(`${entry.name}: any params dict is ${Params.className} or a refusal`, () => {
    const r = prng(entry.name.length * 13);
    let made = 0;
    for (let i = 0; i < 4000; i++) {
      const d = { epsilon: r() * 8, low: randomNumber(r), high: randomNumber(r), clip: r() < 0.5 };
      if (entry !== duchi) d.cells = r() < 0.5 ? 2 + Math.floor(r() * 100) : [1, 2, 65536, 65537, 1024][Math.floor(r() * 5)];
      for (const f of Object.keys(d)) {
        const c = r();
        if (c < 0.1) d[f] = randomValue(r);
        else if (c < 0.13) delete d[f];
        else if (c < 0.2 && f === "epsilon") d[f] = [1e-300, 1e-17, 1e-8, 0.6, 0.61, 40, 45, 1e300][Math.floor(r() * 8)];
      }
      let params;
      try {
        params = fromDict(Params, d);
      } catch (err) {
        assert.ok(isRefusal(err), `${JSON.stringify(d)}: ${err}`);
        continue;
      }
      made++;
      const e = params.privacyCost.epsilon;
      assert.ok(e > 0 && e <= params.epsilon, `${JSON.stringify(d)}: ${e}`); // realized, never above the requested ε
      assertValidReport(entry.makeEncoder(params).encode(params.low), params);
    }
    assert.ok(made > 300, `${made} valid params`);
  });
}

/** The exact distribution of the discrete PM's cell for x: [Pr[cell = c] for c < G]. */
function piecewiseLaw(params, x) {
  const [k0, frac] = params.grid(x);
  const up = realizedProbability(frac), pIn = realizedProbability(params.pIn);
  const g = params.cells, w = params.window;
  const law = new Array(g).fill(0);
  for (const [k, pk] of [[k0, 1 - up], [k0 + 1, up]]) {
    if (pk === 0) continue;
    for (let c = 0; c < g; c++) law[c] += pk * (c >= k && c < k + w ? pIn / w : (1 - pIn) / (g - w));
  }
  return law;
}

function moments(law) {
  let m = 0, m2 = 0;
  law.forEach((p, c) => { m += p * c; m2 += p * c * c; });
  return [m, m2 - m * m];
}

test("duchi: 20,000 reports of x have mean q + φ(1 − 2q)", () => {
  const params = fromDict(DuchiParams, { epsilon: 1, low: 0, high: 10 });
  const encoder = duchi.makeEncoder(params, { rng: new CryptoRandomSource() });
  for (const x of [0, 3, 10]) {
    let ones = 0;
    for (let i = 0; i < N; i++) ones += encoder.encode(x).payload[0][1];
    const phi = realizedProbability(params.unit(x)), q = params.q;
    const p = phi * (1 - q) + (1 - phi) * q;
    withinSE(ones / N, p, Math.sqrt((p * (1 - p)) / N), `x=${x}`);
  }
});

test("piecewise: 20,000 reports of x have the discrete PM's mean cell", () => {
  const params = fromDict(PiecewiseParams, { epsilon: 2, low: -1, high: 1, cells: 32 });
  const encoder = piecewise.makeEncoder(params, { rng: new CryptoRandomSource() });
  for (const x of [-1, 0.37, 1]) {
    let sum = 0;
    const counts = new Array(params.cells).fill(0);
    for (let i = 0; i < N; i++) {
      const c = encoder.encode(x).payload[0][1];
      sum += c;
      counts[c]++;
    }
    const [mean, variance] = moments(piecewiseLaw(params, x));
    withinSE(sum / N, mean, Math.sqrt(variance / N), `x=${x}`);
  }
});

test("hybrid: 20,000 reports mix PM w.p. α and Duchi's bit otherwise, each with its law", () => {
  const params = fromDict(HybridParams, { epsilon: 3, low: 0, high: 100, cells: 32 });
  assert.ok(params.alpha > 0);
  const encoder = hybrid.makeEncoder(params, { rng: new CryptoRandomSource() });
  const x = 30;
  let pm = 0, pmSum = 0, duchiOnes = 0;
  for (let i = 0; i < N; i++) {
    const [[, branch], [, out]] = encoder.encode(x).payload;
    if (branch === 1) { pm++; pmSum += out; } else duchiOnes += out;
  }
  const a = params.alpha;
  withinSE(pm / N, a, Math.sqrt((a * (1 - a)) / N), "α");
  const [mean, variance] = moments(piecewiseLaw(params.piecewise, x));
  withinSE(pmSum / pm, mean, Math.sqrt(variance / pm), "PM branch");
  const phi = realizedProbability(params.duchi.unit(x)), q = params.duchi.q;
  const p = phi * (1 - q) + (1 - phi) * q;
  withinSE(duchiOnes / (N - pm), p, Math.sqrt((p * (1 - p)) / (N - pm)), "Duchi branch");
  const low = fromDict(HybridParams, { epsilon: 0.5, low: 0, high: 1 }); // below ε*: Duchi alone
  assert.equal(low.alpha, 0);
  assert.equal(low.privacyCost.epsilon, low.duchi.privacyCost.epsilon);
});

for (const [entry, Params] of ENTRIES) {
  test(`${entry.name}: the exact audits of the vectors attain the claimed ε`, () => {
    const doc = JSON.parse(readFileSync(join(VECTORS, `${entry.name}.json`), "utf8"));
    for (const item of doc.audits) {
      const params = fromDict(Params, item.params);
      const result = audit(item.inputs, (x, src) => reportJson(entry.makeEncoder(params, { rng: src }).encode(x)));
      assert.ok(matches(result.epsilon, item.epsilon), `${result.epsilon} vs ${item.epsilon}`);
      assert.ok(matches(result.epsilon, params.privacyCost.epsilon), `${result.epsilon} vs claimed ${params.privacyCost.epsilon}`);
    }
  });
}
