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

// ---- shared by the enc-A test files (each keeps its own copy: every .mjs under test/ is run as a test file) ----

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "vectors");
const N = 20000;

/** A small seeded PRNG (mulberry32): the same inputs every run. */
function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const UNITS = ["a", "l0", "l1", "é", "\u0000", "\ud800", "\ud83d\ude00", "'", '"', "\\", " "];

/** Any JSON-like value (and a few JS ones: bytes, bigints, NaN, ±Infinity, -0, undefined). */
function randomValue(r, depth = 0) {
  switch (Math.floor(r() * (depth > 2 ? 10 : 12))) {
    case 0: return null;
    case 1: return r() < 0.5;
    case 2: case 3: return Math.floor(r() * 40) - 10;
    case 4: return [2 ** 53, -(2 ** 53), 2 ** 32, 1e300, -0, NaN, Infinity, -Infinity, 0.5, 1e-300, 1.5][Math.floor(r() * 11)];
    case 5: return [0n, 1n, 3n, -1n, 2n ** 64n][Math.floor(r() * 5)];
    case 6: return (r() - 0.5) * 10 ** Math.floor(r() * 20 - 10);
    case 7: return Array.from({ length: Math.floor(r() * 4) }, () => UNITS[Math.floor(r() * UNITS.length)]).join("");
    case 8: return Uint8Array.from({ length: Math.floor(r() * 4) }, () => Math.floor(r() * 256));
    case 9: return undefined;
    case 10: return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: return Object.fromEntries(Array.from({ length: Math.floor(r() * 3) }, (_, i) => [`k${i}`, randomValue(r, depth + 1)]));
  }
}

function show(v) {
  return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `${x}n` : x)) ?? String(v);
}

/** The report has the params' protocol, fingerprint and schema: every uint below its size, every bit string its
 * length of 0/1; its JSON line parses. */
function assertValidReport(report, params) {
  assert.equal(report.protocol, params.protocol);
  assert.equal(report.params, params.fingerprint);
  assert.deepEqual(report.payload.map(([k]) => k), params.schema.map((f) => f.name));
  for (const [i, f] of params.schema.entries()) {
    const v = report.payload[i][1];
    if (f.kind === "uint") assert.ok(Number.isInteger(v) && v >= 0 && v < f.size, `${f.name}=${v}`);
    else assert.ok(typeof v === "string" && v.length === f.size && /^[01]+$/.test(v), `${f.name}=${v}`);
  }
  JSON.parse(reportJson(report));
}

function isPythonError(err) {
  return err instanceof Error && (err.name === "ValueError" || err.name === "TypeError");
}

function withinSE(mean, expected, se, label) {
  assert.ok(Math.abs(mean - expected) <= 4 * se, `${label}: ${mean} vs ${expected} (4 SE = ${4 * se})`);
}

function bernoulliWithin(count, n, p, label) {
  withinSE(count / n, p, Math.sqrt((p * (1 - p)) / n), label);
}

/** Whether a fixed-domain encoder must accept `v`: an int index in range (a bigint too), or one of the labels. */
function inDomain(v, d, labels) {
  if (typeof v === "bigint") return v >= 0n && v < BigInt(d);
  if (typeof v === "number") return Number.isInteger(v) && v >= 0 && v < d;
  return typeof v === "string" && labels !== null && labels.includes(v);
}

/** Any value given to a fixed-domain encoder: a valid report exactly when the value is in the domain, else a
 * ValueError/TypeError (and nothing else). `extra` checks each report. */
function fuzzDomainValues(entry, Params, dicts, seed, extra = () => {}) {
  test(`${entry.name}: any value is a valid report (in the domain) or a ValueError/TypeError`, () => {
    const r = prng(seed);
    for (const d of dicts) {
      const params = fromDict(Params, d);
      const encoder = entry.makeEncoder(params);
      const labels = params.labels;
      let reports = 0, refusals = 0;
      for (let i = 0; i < 3000; i++) {
        let v = randomValue(r);
        if (r() < 0.2) v = Math.floor(r() * params.domainSize);
        else if (labels !== null && r() < 0.2) v = labels[Math.floor(r() * labels.length)];
        let report;
        try {
          report = encoder.encode(v);
        } catch (err) {
          assert.ok(isPythonError(err), `${show(v)}: ${err}`);
          assert.ok(!inDomain(v, params.domainSize, labels), `${show(v)} refused: ${err.message}`);
          refusals++;
          continue;
        }
        assert.ok(inDomain(v, params.domainSize, labels), `${show(v)} accepted`);
        assertValidReport(report, params);
        extra(report, params, v);
        reports++;
      }
      assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
    }
  });
}

const SPECIAL_INTS = [0, -1, 1, 2, 3, 100, 2 ** 20, 2 ** 22, 2 ** 23, 2 ** 28, 2 ** 28 + 1, 2 ** 32, 2 ** 32 + 1, 1e-300, 745, 1e300];

/** Any params dict: the params, or a ValueError/TypeError; valid ones cost at least ε (finite), and their reports
 * (for domains up to 4096) are valid. */
function fuzzDomainParams(entry, Params, base, seed, extra = () => {}) {
  test(`${entry.name}: any params dict is ${Params.className} or a ValueError/TypeError`, () => {
    const r = prng(seed);
    let made = 0;
    for (let i = 0; i < 3000; i++) {
      const d = { ...base, epsilon: r() < 0.8 ? r() * 6 : 10 ** (r() * 8 - 6), domain_size: 2 + Math.floor(r() * 60) };
      if (r() < 0.2) d.labels = Array.from({ length: d.domain_size }, (_, k) => `l${k}`);
      for (const f of Object.keys(Params.fields.reduce((o, x) => ({ ...o, [x.name]: 1 }), {}))) {
        const c = r();
        if (c < 0.08) d[f] = randomValue(r);
        else if (c < 0.12) delete d[f];
        else if (c < 0.22 && f !== "labels") d[f] = SPECIAL_INTS[Math.floor(r() * SPECIAL_INTS.length)];
      }
      if (r() < 0.03) d.zz = 0;
      let params;
      try {
        params = fromDict(Params, d);
      } catch (err) {
        assert.ok(isPythonError(err), `${show(d)}: ${err}`);
        continue;
      }
      made++;
      const e = params.privacyCost.epsilon;
      assert.ok(e >= params.epsilon && Number.isFinite(e), `${show(d)}: ${e}`);
      if (params.domainSize <= 4096) {
        const report = entry.makeEncoder(params).encode(params.domainSize - 1);
        assertValidReport(report, params);
        extra(report, params);
      }
    }
    assert.ok(made > 1000, `${made} valid params`);
  });
}

/** The exact audits of the vector file attain the claimed ε. */
function auditVectors(entry, Params) {
  test(`${entry.name}: the exact audits of the vectors attain the claimed ε`, () => {
    const doc = JSON.parse(readFileSync(join(VECTORS, `${entry.name}.json`), "utf8"));
    assert.ok(doc.audits.length > 0);
    for (const item of doc.audits) {
      const params = fromDict(Params, item.params);
      const result = audit(item.inputs, (x, src) => reportJson(entry.makeEncoder(params, { rng: src }).encode(x)));
      assert.ok(matches(result.epsilon, item.epsilon), `${result.epsilon} vs ${item.epsilon}`);
      assert.ok(matches(result.epsilon, params.privacyCost.epsilon), `${result.epsilon} vs ${params.privacyCost.epsilon}`);
    }
  });
}

/** `ValueError`/`TypeError` with exactly Python's text. */
function refuses(Params, d, name, message) {
  assert.throws(() => fromDict(Params, d), (err) => {
    assert.equal(`${err.name}: ${err.message}`, `${name}: ${message}`, show(d));
    return true;
  });
}

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
  refuses(SSParams, { epsilon: 40, domain_size: 10 }, "ValueError",
    "epsilon=40.0 is too large for ss: a bit probability rounds to 0 or 1 at the client's resolution, so reports " +
    "would not be private");
  refuses(SSParams, { epsilon: 1, domain_size: 2 ** 22 }, "ValueError",
    "ss reports of these parameters take up to 4,194,485 bytes as an upload line, over the 4,194,304-byte limit of " +
    "every server job: all would be rejected");
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
