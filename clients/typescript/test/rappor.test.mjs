// RAPPOR beyond the conformance vectors: bad inputs of every JSON type (a seeded generator), the report law through
// the platform CSPRNG (20,000 reports, within 4 standard errors), memoization, and the exact audits of the vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { refusal } from "../test-support/refusal.mjs";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { RapporParams, RapporEncoder, bloomBits, rappor } from "../dist/protocols/rappor.js";
import { fromDict } from "../dist/params/base.js";
import { reportJson, isMemoized } from "../dist/encoders/base.js";
import { CryptoRandomSource, realizedProbability } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";
import { prng, assertValidReport, isRefusal, N } from "../test-support/domain.mjs";

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "vectors");

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

const LDP = { num_bloombits: 16, num_hashes: 2, num_cohorts: 4, p: 0.25, q: 0.75, f: 0.5 };
const GOOGLE = { ...LDP, p: 0.5, f: 0.3, mode: "google" };

test("rappor: any value is a valid report or a refusal", () => {
  const r = prng(32);
  for (const d of [LDP, GOOGLE, { ...LDP, f: 0 }, { ...LDP, num_bloombits: 300, num_hashes: 5 }]) {
    const params = fromDict(RapporParams, d);
    const encoder = rappor.makeEncoder(params, { secret: new Uint8Array([1, 2, 3]), cohort: 1 });
    let reports = 0, refusals = 0;
    for (let i = 0; i < 3000; i++) {
      const v = randomValue(r);
      let report;
      try {
        report = encoder.encode(v);
      } catch (err) {
        assert.ok(isRefusal(err), `${JSON.stringify(v)}: ${err}`);
        refusals++;
        continue;
      }
      assert.ok(typeof v === "string" || v instanceof Uint8Array, `accepted ${typeof v}`);
      assertValidReport(report, params);
      reports++;
    }
    assert.ok(reports > 500 && refusals > 500, `${reports} reports, ${refusals} refusals`);
  }
});

test("rappor: any params dict is RapporParams or a refusal", () => {
  const r = prng(33);
  const names = ["num_bloombits", "num_hashes", "num_cohorts", "p", "q", "f", "mode"];
  let made = 0;
  for (let i = 0; i < 5000; i++) {
    const d = { ...(r() < 0.5 ? LDP : GOOGLE) };
    for (const name of names) {
      const c = r();
      if (c < 0.15) d[name] = randomValue(r);
      else if (c < 0.2) delete d[name];
      else if (c < 0.35 && name.startsWith("num")) d[name] = Math.floor(r() * 70) - 2;
      else if (c < 0.5 && name.length === 1) d[name] = r() < 0.2 ? 2 ** -(60 + Math.floor(r() * 10)) : r();
    }
    if (r() < 0.03) d.extra = 1;
    let params;
    try {
      params = fromDict(RapporParams, d);
    } catch (err) {
      assert.ok(isRefusal(err), `${JSON.stringify(d)}: ${err}`);
      continue;
    }
    made++;
    try {
      const e = params.privacyCost.epsilon;
      assert.ok(e >= 0 && Number.isFinite(e)); // 0 in Google mode when f rounds up to 1 (Python accepts it)
    } catch (err) {
      assert.ok(isRefusal(err), `${JSON.stringify(d)}: ${err}`);
    }
    try {
      assertValidReport(rappor.makeEncoder(params, { secret: "s", cohort: 0 }).encode("x"), params);
    } catch (err) {
      assert.ok(isRefusal(err), `${JSON.stringify(d)}: ${err}`);
    }
  }
  assert.ok(made > 300, `${made} valid params`);
});

test("rappor: too large for an upload line or an aggregate is refused as Python refuses it", () => {
  assert.throws(() => fromDict(RapporParams, { ...LDP, num_bloombits: 5000000, num_cohorts: 1 }),
    refusal("ValueError", "param_limit", { limit: "line_bytes", got: 5000196, max: 4194304 }));
  assert.throws(() => fromDict(RapporParams, { ...LDP, num_bloombits: 4607, num_cohorts: 65536 }),
    refusal("ValueError", "param_limit", { limit: "aggregate_cells", got: 301989888, max: 268435456 }));
});

test("rappor: the encoder's own checks (cohort, secret, Google's client)", () => {
  const params = fromDict(RapporParams, LDP);
  assert.throws(() => rappor.makeEncoder(params, { secret: "s", cohort: 4 }),
    refusal("ValueError", "param_range", { param: "cohort", got: 4, min: 0, max: 3 }));
  assert.throws(() => rappor.makeEncoder(params, { secret: new Uint8Array(0), cohort: 0 }),
    refusal("TypeError", "param_length", { param: "secret", got: 0, min: 1 }));
  const wide = fromDict(RapporParams, { ...GOOGLE, num_bloombits: 33 });
  assert.throws(() => rappor.makeEncoder(wide, { secret: "s", cohort: 0 }), 
    refusal("ValueError", "param_relation", { params: ["num_bloombits", "num_hashes", "mode"], rule: "google_client" }));
  assert.equal(rappor.assignedCohorts(params), 4);
  assert.ok(rappor.needsSecret);
});

test("rappor: the PRR is memoized from the secret; the charge is capped at ε∞", () => {
  const params = fromDict(RapporParams, LDP);
  const a = new RapporEncoder(params, { secret: "device", cohort: 2 });
  const b = new RapporEncoder(params, { secret: "device", cohort: 2 });
  const c = new RapporEncoder(params, { secret: "other", cohort: 2 });
  for (const v of ["a", "b", "x".repeat(700)]) {
    assert.equal(a.permanentResponse(a.prepare(v)), b.permanentResponse(b.prepare(v)));
    const ca = a.chargeFor(a.prepare(v)), cc = c.chargeFor(c.prepare(v));
    assert.ok(isMemoized(ca) && isMemoized(cc));
    assert.notDeepEqual(ca.key, cc.key);
    assert.equal(ca.cap.epsilon, params.epsilonInf);
    assert.equal(ca.first.epsilon, params.privacyCost.epsilon);
  }
  const upfront = new RapporEncoder(params, { secret: "device", cohort: 2, charging: "upfront" }).chargeFor(a.prepare("a"));
  assert.equal(upfront.first.epsilon, params.epsilonInf);
  assert.equal(upfront.then.epsilon, 0);
  const plain = rappor.makeEncoder(fromDict(RapporParams, { ...LDP, f: 0 }), { secret: "s", cohort: 0 });
  assert.ok(!isMemoized(plain.chargeFor(plain.prepare("a")))); // f = 0: nothing memoized, plain ε₁
});

function withinSE(count, n, p, label) {
  const mean = count / n;
  const se = Math.sqrt((p * (1 - p)) / n);
  assert.ok(Math.abs(mean - p) <= 4 * se, `${label}: ${mean} vs ${p} (4 SE = ${4 * se})`);
}

for (const [label, d] of [["ldp", LDP], ["google", GOOGLE]]) {
  test(`rappor (${label}): 20,000 fresh devices report Bloom bits w.p. q* and others w.p. p*`, () => {
    const params = fromDict(RapporParams, { ...d, num_cohorts: 1 });
    const rng = new CryptoRandomSource();
    const ones = new Set(bloomBits(params, "v0", 0));
    let inOnes = 0, inN = 0, outOnes = 0, outN = 0;
    for (let i = 0; i < N; i++) {
      const encoder = new RapporEncoder(params, { rng, cohort: 0 }); // a fresh secret: a fresh PRR
      const bits = encoder.encode("v0").payload[1][1];
      for (let j = 0; j < params.numBloombits; j++) {
        if (ones.has(j)) { inN++; if (bits[j] === "1") inOnes++; }
        else { outN++; if (bits[j] === "1") outOnes++; }
      }
    }
    withinSE(inOnes, inN, params.qStar, "q*");
    withinSE(outOnes, outN, params.pStar, "p*");
  });
}

test("rappor: 20,000 reports of one device's memoized PRR report its 1s w.p. q and 0s w.p. p", () => {
  const params = fromDict(RapporParams, LDP);
  const encoder = new RapporEncoder(params, { rng: new CryptoRandomSource(), secret: "one device", cohort: 3 });
  const prr = encoder.permanentResponse(encoder.prepare("v"));
  const counts = new Array(params.numBloombits).fill(0);
  for (let i = 0; i < N; i++) {
    const bits = encoder.encode("v").payload[1][1];
    for (let j = 0; j < bits.length; j++) if (bits[j] === "1") counts[j]++;
  }
  const p = realizedProbability(params.p), q = realizedProbability(params.q);
  const prrOnes = counts.filter((_, j) => (prr >> BigInt(j)) & 1n).reduce((a, b) => a + b, 0);
  const k1 = [...prr.toString(2)].filter((c) => c === "1").length;
  if (k1) withinSE(prrOnes, N * k1, q, "q");
  const prrZeros = counts.reduce((a, b) => a + b, 0) - prrOnes;
  if (params.numBloombits - k1) withinSE(prrZeros, N * (params.numBloombits - k1), p, "p");
});

test("rappor: the exact audits of the vectors attain the claimed ε", () => {
  const doc = JSON.parse(readFileSync(join(VECTORS, "rappor.json"), "utf8"));
  for (const item of doc.audits) {
    const params = fromDict(RapporParams, item.params);
    // Python's for_audit: a fixed secret, the cohort and the PRR drawn from the enumerating source too
    const result = audit(item.inputs, (x, src) =>
      reportJson(new RapporEncoder(params, { rng: src, prrRng: src, secret: "audit" }).encode(x)));
    assert.ok(matches(result.epsilon, item.epsilon), `${result.epsilon} vs ${item.epsilon}`);
  }
});
