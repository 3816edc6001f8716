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

// ---- rr ----

test("rr: any value is a valid report (bool, 0 or 1) or a ValueError/TypeError", () => {
  const r = prng(11);
  const params = fromDict(BinaryRRParams, { p: 0.25, q: 0.75 });
  const encoder = rr.makeEncoder(params);
  let reports = 0, refusals = 0;
  for (let i = 0; i < 3000; i++) {
    const v = randomValue(r);
    const ok = v === true || v === false || v === 0 || v === 1 || v === 0n || v === 1n;
    let report;
    try {
      report = encoder.encode(v);
    } catch (err) {
      assert.ok(isPythonError(err), `${show(v)}: ${err}`);
      assert.ok(!ok, `${show(v)} refused: ${err.message}`);
      refusals++;
      continue;
    }
    assert.ok(ok, `${show(v)} accepted`);
    assertValidReport(report, params);
    reports++;
  }
  assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
});

test("rr: any params dict is BinaryRRParams or a ValueError/TypeError", () => {
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
      assert.ok(isPythonError(err), `${show(d)}: ${err}`);
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

test("rr: Python's texts for probabilities the client cannot realize", () => {
  refuses(BinaryRRParams, { p: 1.2 * 2 ** -64, q: 1.5 * 2 ** -64 }, "ValueError",
    "p=6.505213034913026e-20 and q=8.131516293641283e-20 are equal at the client's 2^-64 resolution: reports would " +
    "carry no information");
  refuses(BinaryRRParams, { p: 2 ** -65, q: 0.5 }, "ValueError",
    "p=2.710505431213761e-20 is below the client's 2^-64 resolution: it would be drawn with probability 0 (use 0 if " +
    "that is meant, or a value >= 2^-64)");
  refuses(BinaryRRParams, { p: 0.75, q: 0.25 }, "ValueError",
    "binary RR needs 0 < p < q < 1 (finite ε, truthful bias), got p=0.75, q=0.25");
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

test("grr: Python's texts for parameters the client cannot realize or collect", () => {
  refuses(GRRParams, { epsilon: 1e-17, domain_size: 3 }, "ValueError",
    "epsilon=1e-17 is too small for domain_size=3: the keep probability rounds to 1/d, so reports would carry no " +
    "information");
  refuses(GRRParams, { epsilon: 50, domain_size: 3 }, "ValueError",
    "epsilon=50.0 is too large for domain_size=3: the keep probability rounds to 1 at the client's resolution, so " +
    "reports would not be private");
  refuses(GRRParams, { epsilon: 1, domain_size: 2 ** 30 }, "ValueError",
    "the grr aggregate of these parameters needs 1,073,741,824 counters (8.0 GiB), over the limit of 268,435,456 " +
    "(2 GiB)");
  refuses(GRRParams, { epsilon: 1, domain_size: 3, labels: ["a", "a", "b"] }, "ValueError", "labels must be distinct");
  refuses(GRRParams, { epsilon: 1, domain_size: 3, labels: ["a", 1, "b"] }, "TypeError", "labels must be strings");
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
