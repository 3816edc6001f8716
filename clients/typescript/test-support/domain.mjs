// Helpers shared by the fixed-domain protocols' tests (test/{unary,randomized-response,local-hashing,
// hadamard-response,subset-selection}.test.mjs): a seeded PRNG, random JSON values and params dicts, the checks of
// a valid report and of Python's refusal texts, the law within 4 standard errors, and the vectors' exact audits.
// Kept outside test/ because `node --test` runs every file under a test/ folder.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { readFileSync } from "node:fs";

import { fromDict } from "../dist/params/base.js";
import { LdpRefusal, LdpTypeError, LdpValueError } from "../dist/errors.js";
import { reportJson } from "../dist/encoders/base.js";
import { CryptoRandomSource } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";

export const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "vectors");
export const N = 20000;

/** A small seeded PRNG (mulberry32): the same inputs every run. */
export function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const UNITS = ["a", "l0", "l1", "é", "\u0000", "\ud800", "\ud83d\ude00", "'", '"', "\\", " "];

/** Any JSON-like value (and a few JS ones: bytes, bigints, NaN, ±Infinity, -0, undefined). */
export function randomValue(r, depth = 0) {
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

export function show(v) {
  return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `${x}n` : x)) ?? String(v);
}

/** The report has the params' protocol, fingerprint and schema: every uint below its size, every bit string its
 * length of 0/1; its JSON line parses. */
export function assertValidReport(report, params) {
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

/** Whether `err` is a refusal: an `LdpTypeError` or `LdpValueError` with a `code` and `fields`. */
export function isRefusal(err) {
  return err instanceof LdpRefusal && typeof err.code === "string" && typeof err.fields === "object";
}

/** `encoder.encode(v)`: a valid report of `params`, or `null` if refused — and a refusal must be an
 * LdpRefusal. With `ok` given, the value must be accepted exactly when `ok` is true. */
export function encodeOrRefuse(encoder, params, v, ok) {
  let report;
  try {
    report = encoder.encode(v);
  } catch (err) {
    assert.ok(isRefusal(err), `${show(v)}: ${err}`);
    if (ok !== undefined) assert.ok(!ok, `${show(v)} refused: ${err.message}`);
    return null;
  }
  if (ok !== undefined) assert.ok(ok, `${show(v)} accepted`);
  assertValidReport(report, params);
  return report;
}

export function withinSE(mean, expected, se, label) {
  assert.ok(Math.abs(mean - expected) <= 4 * se, `${label}: ${mean} vs ${expected} (4 SE = ${4 * se})`);
}

export function bernoulliWithin(count, n, p, label) {
  withinSE(count / n, p, Math.sqrt((p * (1 - p)) / n), label);
}

/** Whether a fixed-domain encoder must accept `v`: an int index in range (a bigint too), or one of the labels. */
export function inDomain(v, d, labels) {
  if (typeof v === "bigint") return v >= 0n && v < BigInt(d);
  if (typeof v === "number") return Number.isInteger(v) && v >= 0 && v < d;
  return typeof v === "string" && labels !== null && labels.includes(v);
}

/** Any value given to a fixed-domain encoder: a valid report exactly when the value is in the domain, else a
 * refusal (LdpValueError/LdpTypeError) (and nothing else). `extra` checks each report. */
export function fuzzDomainValues(entry, Params, dicts, seed, extra = () => {}) {
  test(`${entry.name}: any value is a valid report (in the domain) or a refusal (LdpValueError/LdpTypeError)`, () => {
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
        const report = encodeOrRefuse(encoder, params, v, inDomain(v, params.domainSize, labels));
        if (report === null) {
          refusals++;
          continue;
        }
        extra(report, params, v);
        reports++;
      }
      assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
    }
  });
}

export const SPECIAL_INTS = [0, -1, 1, 2, 3, 100, 2 ** 20, 2 ** 22, 2 ** 23, 2 ** 28, 2 ** 28 + 1, 2 ** 32, 2 ** 32 + 1, 1e-300, 745, 1e300];

/** Any params dict: the params, or a refusal (LdpValueError/LdpTypeError); valid ones cost at least ε (finite), and their reports
 * (for domains up to 4096) are valid. */
export function fuzzDomainParams(entry, Params, base, seed, extra = () => {}) {
  test(`${entry.name}: any params dict is ${Params.className} or a refusal (LdpValueError/LdpTypeError)`, () => {
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
        assert.ok(isRefusal(err), `${show(d)}: ${err}`);
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
export function auditVectors(entry, Params) {
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

/** `fromDict(Params, d)` refused as Python refuses it: `kind` `"TypeError"` (an `LdpTypeError`) or `"ValueError"`
 * (an `LdpValueError`), with `code` and exactly `fields`. */
export function refuses(Params, d, kind, code, fields) {
  assert.throws(() => fromDict(Params, d), (err) => {
    assert.ok(isRefusal(err), `${show(d)}: ${err}`);
    assert.ok(err instanceof (kind === "TypeError" ? LdpTypeError : LdpValueError), `${show(d)}: ${err.name}, not a ${kind}`);
    assert.equal(err.code, code, `${show(d)}: ${err.message}`);
    if (fields !== undefined) assert.deepStrictEqual({ ...err.fields }, fields, `${show(d)}: ${err.message}`);
    return true;
  });
}
