// CMS and HCMS beyond the conformance vectors: bad inputs of every JSON type (a seeded generator), the report law
// through the platform CSPRNG (20,000 reports, within 4 standard errors), and the exact audits of the vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { refusal } from "../test-support/refusal.mjs";
import { kindOf } from "../dist/errors.js";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { CmsParams, HcmsParams, cms, hcms } from "../dist/protocols/sketches.js";
import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";
import { CryptoRandomSource, realizedProbability } from "../dist/random.js";
import { audit, matches } from "../dist/audit.js";
import { prng, assertValidReport, isRefusal, withinSE, bernoulliWithin, N } from "../test-support/domain.mjs";

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

const FIELDS = ["epsilon", "num_hashes", "width", "hash_seed"];

for (const [entry, Params, name] of [[cms, CmsParams, "CMS"], [hcms, HcmsParams, "HCMS"]]) {
  test(`${entry.name}: any value is a valid report or a refusal`, () => {
    const r = prng(entry.name.length);
    for (const d of [{ epsilon: 2, num_hashes: 2, width: 8 }, { epsilon: 0.5, num_hashes: 64, width: 1024, hash_seed: 7 }]) {
      const params = fromDict(Params, d);
      const encoder = entry.makeEncoder(params);
      let reports = 0, refusals = 0;
      for (let i = 0; i < 3000; i++) {
        const v = randomValue(r);
        let report;
        try {
          report = encoder.encode(v);
        } catch (err) {
          assert.ok(isRefusal(err), `${JSON.stringify(v)}: ${err}`);
          if (typeof v !== "string") assert.ok(refusal("TypeError", "value_type", { expected: "string_or_bytes", got: kindOf(v) })(err), err.message);
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

  test(`${entry.name}: any params dict is ${Params.className} or a refusal`, () => {
    const r = prng(7 * entry.name.length);
    let made = 0;
    for (let i = 0; i < 5000; i++) {
      const d = { epsilon: 1 + r() * 4, num_hashes: 1 + Math.floor(r() * 30), width: 2 ** (1 + Math.floor(r() * 10)), hash_seed: 0 };
      for (const f of FIELDS) {
        const c = r();
        if (c < 0.12) d[f] = randomValue(r);
        else if (c < 0.17) delete d[f];
        else if (c < 0.3) d[f] = [0, -1, 1, 2, 3, 100, 2 ** 24, 2 ** 24 + 1, 2 ** 32 - 1, 2 ** 32, 65536, 65537, 745, 1e-300][Math.floor(r() * 14)];
      }
      if (r() < 0.03) d.zz = 0;
      let params;
      try {
        params = fromDict(Params, d);
      } catch (err) {
        assert.ok(isRefusal(err), `${JSON.stringify(d)}: ${err}`);
        continue;
      }
      made++;
      const e = params.privacyCost.epsilon;
      assert.ok(e >= params.epsilon && Number.isFinite(e), `${JSON.stringify(d)}: ${e}`);
      if (params.width <= 4096) assertValidReport(entry.makeEncoder(params).encode("x"), params);
    }
    assert.ok(made > 1000, `${made} valid params`);
  });
}

test("cms: too wide for an upload line or too many counters is refused as Python refuses it", () => {
  assert.throws(() => fromDict(CmsParams, { epsilon: 1, num_hashes: 1, width: 2 ** 23 }),
    refusal("ValueError", "param_limit", { limit: "line_bytes", got: 8388799, max: 4194304 }));
  assert.throws(() => fromDict(HcmsParams, { epsilon: 1, num_hashes: 65536, width: 2 ** 13 }),
    refusal("ValueError", "param_limit", { limit: "aggregate_cells", got: 536936448, max: 268435456 }));
  assert.throws(() => fromDict(HcmsParams, { epsilon: 1, num_hashes: 2, width: 12 }),
    refusal("ValueError", "param_relation", { params: ["width"], rule: "power_of_two" }));
});

test("cms: 20,000 reports keep the value's bucket w.p. 1 − flip and set each other bit w.p. flip", () => {
  const params = fromDict(CmsParams, { epsilon: 2, num_hashes: 4, width: 16, hash_seed: 3 });
  const encoder = cms.makeEncoder(params, { rng: new CryptoRandomSource() });
  const buckets = params.bucketsOf("value");
  const flip = realizedProbability(params.flipProbability);
  let kept = 0, others = 0, hashSum = 0;
  for (let i = 0; i < N; i++) {
    const [[, j], [, bits]] = encoder.encode("value").payload;
    hashSum += j;
    for (let b = 0; b < bits.length; b++) {
      if (b === buckets[j]) kept += bits[b] === "1" ? 1 : 0;
      else others += bits[b] === "1" ? 1 : 0;
    }
  }
  bernoulliWithin(kept, N, 1 - flip, "kept");
  bernoulliWithin(others, N * (params.width - 1), flip, "others");
  withinSE(hashSum / N, 1.5, Math.sqrt(1.25 / N), "hash index"); // uniform on 0..3: variance (4² − 1)/12
});

test("hcms: 20,000 reports give H[h_j(v), row] w.p. 1 − flip, rows uniform", () => {
  const params = fromDict(HcmsParams, { epsilon: 1, num_hashes: 3, width: 32 });
  const encoder = hcms.makeEncoder(params, { rng: new CryptoRandomSource() });
  const buckets = params.bucketsOf("value");
  const flip = realizedProbability(params.flipProbability);
  let kept = 0, rowSum = 0;
  for (let i = 0; i < N; i++) {
    const [[, j], [, row], [, bit]] = encoder.encode("value").payload;
    rowSum += row;
    let a = buckets[j] & row, odd = 0;
    for (; a; a &= a - 1) odd ^= 1;
    if (bit === (odd ? 0 : 1)) kept++; // bit 1 = +1
  }
  bernoulliWithin(kept, N, 1 - flip, "kept");
  withinSE(rowSum / N, 15.5, Math.sqrt((32 ** 2 - 1) / 12 / N), "row");
});

for (const [entry, Params] of [[cms, CmsParams], [hcms, HcmsParams]]) {
  test(`${entry.name}: the exact audits of the vectors attain the claimed ε`, () => {
    const doc = JSON.parse(readFileSync(join(VECTORS, `${entry.name}.json`), "utf8"));
    for (const item of doc.audits) {
      const params = fromDict(Params, item.params);
      const result = audit(item.inputs, (x, src) => reportJson(entry.makeEncoder(params, { rng: src }).encode(x)));
      assert.ok(matches(result.epsilon, item.epsilon), `${result.epsilon} vs ${item.epsilon}`);
    }
  });
}
