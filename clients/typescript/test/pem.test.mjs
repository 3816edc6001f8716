// PEM (`pem`) beyond the conformance vectors: any value or params dict gives a report or Python's error type,
// padding and truncation at a character boundary, the prefix keys (over 32 bits: MurmurHash3 under KEY_SEED), the
// "auto" oracle choice, the law of the reports (uniform group, the group's oracle keeping w.p. p; 20,000 reports,
// within 4 standard errors) and Python's refusals the vectors do not reach.
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertRefusal, refusal } from "../test-support/refusal.mjs";

import { fromDict } from "../dist/params/base.js";
import { hash32 } from "../dist/hash/murmur3.js";
import { lhHash } from "../dist/protocols/local-hashing.js";
import { KEY_SEED, PEMParams, pem, prefixKey } from "../dist/protocols/pem.js";

import { N, prng, randomValue, show, assertValidReport, isRefusal, bernoulliWithin, refuses } from "../test-support/domain.mjs";
import { seeded } from "../test-support/memo.mjs";

const utf8 = (s) => new TextEncoder().encode(s);

/** The bytes a value is reported as, or null when it must be refused (Python's `pad_value`, written anew). */
function expectedBytes(v, maxLength, truncate) {
  let raw;
  if (typeof v === "string") {
    if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(v)) return null;
    raw = utf8(v);
  } else if (v instanceof Uint8Array) raw = v;
  else return null;
  if (raw.includes(0)) return null;
  if (raw.length > maxLength) {
    if (!truncate) return null;
    raw = raw.subarray(0, maxLength);
    if (typeof v === "string") raw = utf8(new TextDecoder("utf-8", { ignoreBOM: true }).decode(raw).replace(/\ufffd$/, ""));
  }
  return raw.length ? raw : null;
}

test("pem: any value is a valid report or a refusal, as pad_value decides", () => {
  const r = prng(101);
  for (const d of [{ epsilon: 2, max_length: 3 }, { epsilon: 3, max_length: 2, truncate: true, oracle: "auto", start_bits: 4, step_bits: 4 }]) {
    const params = fromDict(PEMParams, d);
    const encoder = pem.makeEncoder(params, { rng: seeded("pem-fuzz") });
    let reports = 0, refusals = 0;
    for (let i = 0; i < 3000; i++) {
      let v = randomValue(r);
      if (r() < 0.3) v = ["a", "ab", "abc", "abcd", "é", "aé", "éé", "\ud83d\ude00", "x\u0000"][Math.floor(r() * 9)];
      const want = expectedBytes(v, params.maxLength, params.truncate);
      let report;
      try {
        report = encoder.encode(v);
      } catch (err) {
        assert.ok(isRefusal(err), `${show(v)}: ${err}`);
        assert.equal(want, null, `${show(v)} refused: ${err.message}`);
        refusals++;
        continue;
      }
      assert.notEqual(want, null, `${show(v)} accepted`);
      assertValidReport(report, params);
      const padded = new Uint8Array(params.maxLength);
      padded.set(want);
      assert.deepEqual(params.padded(v), padded);
      reports++;
    }
    assert.ok(reports > 300 && refusals > 300, `${reports} reports, ${refusals} refusals`);
  }
});

test("pem: any params dict is PEMParams or a refusal", () => {
  const r = prng(102);
  const oracles = ["olh", "grr", "auto"];
  let made = 0;
  for (let i = 0; i < 1500; i++) {
    const d = {
      epsilon: r() * 6, max_length: 1 + Math.floor(r() * 6), start_bits: 1 + Math.floor(r() * 12),
      step_bits: 1 + Math.floor(r() * 10), oracle: oracles[Math.floor(r() * 3)], truncate: r() < 0.5,
      seed_range: r() < 0.5 ? 2 ** 32 : 1 + Math.floor(r() * 100), top_k: 1 + Math.floor(r() * 100),
    };
    for (const f of Object.keys(d)) {
      const c = r();
      if (c < 0.05) d[f] = randomValue(r);
      else if (c < 0.08) delete d[f];
    }
    let params;
    try {
      params = fromDict(PEMParams, d);
    } catch (err) {
      assert.ok(isRefusal(err), `${show(d)}: ${err}`);
      continue;
    }
    made++;
    const e = params.privacyCost.epsilon;
    assert.ok(e >= params.epsilon && Number.isFinite(e), `${show(d)}: ${e}`);
    assertValidReport(pem.makeEncoder(params, { rng: seeded(`pem-${i}`) }).encode("a"), params);
  }
  assert.ok(made > 500, `${made} valid params`);
});

test("pem: a value is NUL-padded, cut at a character boundary when truncated; refusals have Python's codes and fields", () => {
  const params = fromDict(PEMParams, { epsilon: 2, max_length: 2, truncate: true });
  assert.deepEqual(params.padded("a"), Uint8Array.of(0x61, 0));
  assert.deepEqual(params.padded("aé"), Uint8Array.of(0x61, 0), "é (2 bytes) cut inside: dropped");
  assert.deepEqual(params.padded("abc"), Uint8Array.of(0x61, 0x62));
  assert.deepEqual(params.padded(Uint8Array.of(0x61, 0xc3, 0xa9)), Uint8Array.of(0x61, 0xc3), "bytes are cut as they are");
  const encoder = pem.makeEncoder(params);
  const refused = (v, code, fields) => assert.throws(() => encoder.prepare(v), refusal("ValueError", code, fields));
  refused("\ud83d\ude00", "empty_value", {});
  refused("", "empty_value", {});
  refused(new Uint8Array(0), "empty_value", {});
  refused("a\u0000", "not_in_alphabet", { char: "\u0000" });
  const strict = pem.makeEncoder(fromDict(PEMParams, { epsilon: 2, max_length: 2 }));
  assert.throws(() => strict.prepare("aé"), refusal("ValueError", "value_too_long", { got: 3, max: 2, unit: "bytes" }));
  assert.equal(encoder.prepare("ab"), 0x6162n);
});

test("pem: prefix keys: the prefix up to 32 bits, else MurmurHash3 of its big-endian bytes under KEY_SEED", () => {
  assert.equal(prefixKey(0xabcdef12n, 32), 0xabcdef12);
  assert.equal(prefixKey(0x1abcdef12n, 33), hash32(Uint8Array.of(0x01, 0xab, 0xcd, 0xef, 0x12), KEY_SEED));
  assert.equal(prefixKey(0x12n << 40n, 48), hash32(Uint8Array.of(0x12, 0, 0, 0, 0, 0), KEY_SEED));
  const params = fromDict(PEMParams, { epsilon: 2, max_length: 6, start_bits: 8, step_bits: 16 });
  const v = pem.makeEncoder(params).prepare("abcdef");
  assert.deepEqual([0, 1, 2, 3].map((j) => params.prefixBits(j)), [8, 24, 40, 48]);
  assert.equal(params.keyOf(v, 0), 0x61);
  assert.equal(params.keyOf(v, 1), 0x616263);
  assert.equal(params.keyOf(v, 2), hash32(utf8("abcde"), KEY_SEED));
  assert.equal(params.keyOf(v, 3), hash32(utf8("abcdef"), KEY_SEED));
});

test("pem: 'auto' picks GRR where its null variance is smaller (about d − 2 < 3e^ε), OLH elsewhere", () => {
  const params = fromDict(PEMParams, { epsilon: 3, max_length: 1, start_bits: 4, step_bits: 4, oracle: "auto" });
  assert.deepEqual(params.oracles, ["grr", "olh"]);
  assert.deepEqual(params.schema.map((f) => f.size), [2, 2 ** 32, 21], "y: up to OLH's g = round(e^3) + 1");
  const high = fromDict(PEMParams, { epsilon: 6, max_length: 1, start_bits: 4, step_bits: 4, oracle: "auto" });
  assert.deepEqual(high.oracles, ["grr", "grr"]);
  assert.deepEqual(fromDict(PEMParams, { epsilon: 1, max_length: 3, oracle: "auto" }).oracles, ["olh", "olh", "olh"]);
  assert.equal(params.privacyCost.epsilon, Math.max(params.olh.privacyCost.epsilon, params.grr(0).privacyCost.epsilon));
});

test("pem: 20,000 reports: a uniform group, the group's prefix kept w.p. its oracle's p", () => {
  const params = fromDict(PEMParams, { epsilon: 2.5, max_length: 2, start_bits: 4, step_bits: 6, oracle: "auto", seed_range: 1000 });
  assert.deepEqual(params.oracles, ["grr", "olh", "olh"]); // 4, 10 and 16 bits
  const encoder = pem.makeEncoder(params, { rng: seeded("pem-law") });
  const v = encoder.prepare("hi");
  const groups = [0, 0, 0], kept = [0, 0, 0];
  for (let i = 0; i < N; i++) {
    const [[, group], [, seed], [, y]] = encoder.randomize(v).payload;
    groups[group]++;
    const key = params.keyOf(v, group);
    if (params.oracleOf(group) === "grr") {
      assert.equal(seed, 0);
      kept[group] += y === key ? 1 : 0;
    } else kept[group] += y === lhHash(key, seed, params.olh.g) ? 1 : 0;
  }
  for (let j = 0; j < 3; j++) {
    bernoulliWithin(groups[j], N, 1 / 3, `group ${j}`);
    bernoulliWithin(kept[j], groups[j], j === 0 ? params.grr(j).p : params.olh.p, `kept in group ${j}`);
  }
});

test("pem: Python's refusals for parameters the vectors do not reach", () => {
  refuses(PEMParams, { epsilon: 2, max_length: 3, oracle: "grr" }, "ValueError", "param_limit", { limit: "grr_prefix_bits", got: 24, max: 16 });
  refuses(PEMParams, { epsilon: 40 }, "ValueError", "param_relation", { params: ["epsilon"], rule: "hash_range" });
  refuses(PEMParams, { epsilon: 2, truncate: 1 }, "TypeError", "param_type", { param: "truncate", expected: "bool", got: "int" });
  refuses(PEMParams, { epsilon: 2, max_length: 2, start_bits: 17 }, "ValueError", "param_range", { param: "start_bits", got: 17, min: 1, max: 16 });
  assert.throws(() => fromDict(PEMParams, { epsilon: 2, max_length: 5, oracle: "auto" }).grr(4),
    refusal("ValueError", "param_limit", { limit: "grr_prefix_bits", got: 40, max: 16 }));
});
