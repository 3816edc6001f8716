// rappor-ngrams beyond the vectors: the pair order and its uniform law, cohorts and secrets derived from the metric
// secret (stable, in range), the memo key of a triple (the same for the same value and pair, another under another
// secret), and any value giving a valid report or a Python error.
import { test } from "node:test";
import assert from "node:assert/strict";

import { fromDict } from "../dist/params/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { utf8Encode, toHex } from "../dist/bytes.js";
import { PROTOCOLS } from "../dist/protocols/index.js";
import { RapporNgramsParams, pairOf } from "../dist/protocols/rappor-ngrams.js";
import { N, bernoulliWithin, prng, randomValue, encodeOrRefuse } from "../test-support/domain.mjs";

const BASE = { num_bloombits: 16, num_hashes: 2, num_cohorts: 4, p: 0.25, q: 0.75, f: 0.5, gram_bloombits: 8,
  gram_hashes: 2, gram_cohorts: 4, gram_p: 0.45, gram_q: 0.55, gram_f: 0.75, n: 2, max_length: 8, alphabet: "abc" };
const seeded = (tag) => new KeyedRandomSource(utf8Encode("ngrams-test"), utf8Encode(tag));

test("rappor-ngrams: pairOf lists every pair a < b once, in lexicographic order", () => {
  for (let P = 2; P <= 12; P++) {
    const pairs = Array.from({ length: (P * (P - 1)) / 2 }, (_, i) => pairOf(i, P));
    const expected = [];
    for (let a = 0; a < P; a++) for (let b = a + 1; b < P; b++) expected.push([a, b]);
    assert.deepEqual(pairs, expected, `P=${P}`);
  }
});

test("rappor-ngrams: the pair is uniform over the P(P−1)/2 pairs", () => {
  const params = fromDict(RapporNgramsParams, BASE);
  const enc = PROTOCOLS["rappor-ngrams"].makeEncoder(params, { rng: seeded("pairs"), secret: utf8Encode("s") });
  const counts = new Map();
  for (let i = 0; i < N; i++) {
    const key = enc.prepare("abc").pair.join(",");
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  assert.equal(counts.size, 6);
  for (const [k, c] of counts) bernoulliWithin(c, N, 1 / 6, `pair ${k}`);
});

test("rappor-ngrams: cohorts and sub-secrets derive from the secret; a triple's memo key is stable", () => {
  const params = fromDict(RapporNgramsParams, BASE);
  const make = (secret) => PROTOCOLS["rappor-ngrams"].makeEncoder(params, { rng: seeded("m"), secret: utf8Encode(secret) });
  const a1 = make("device-1"), a2 = make("device-1"), b = make("device-2");
  assert.deepEqual([a1.full.cohort, a1.gram.cohort], [a2.full.cohort, a2.gram.cohort]);
  assert.ok(a1.full.cohort < 4 && a1.gram.cohort < 4);
  assert.notEqual(toHex(a1.full.secret), toHex(a1.gram.secret));
  const prep = (enc) => ({ ...enc.prepare("abca"), pair: [0, 2] });
  const k1 = toHex(a1.chargeFor(prep(a1)).key), k2 = toHex(a2.chargeFor(prep(a2)).key), k3 = toHex(b.chargeFor(prep(b)).key);
  assert.equal(k1, k2);
  assert.notEqual(k1, k3);
  const charge = a1.chargeFor(prep(a1));
  assert.ok(Math.abs(charge.cap.epsilon - (params.full.epsilonInf + 2 * params.gram.epsilonInf)) < 1e-12);
  const plain = fromDict(RapporNgramsParams, { ...BASE, gram_f: 0.0 });
  const enc = PROTOCOLS["rappor-ngrams"].makeEncoder(plain, { rng: seeded("p"), secret: utf8Encode("s") });
  assert.deepEqual(enc.chargeFor(enc.prepare("ab")), plain.privacyCost, "nothing memoized when f = 0");
});

test("rappor-ngrams: any value is a valid report or a refusal", () => {
  const r = prng(46);
  const params = fromDict(RapporNgramsParams, { ...BASE, truncate: r() < 2 });
  const enc = PROTOCOLS["rappor-ngrams"].makeEncoder(params, { rng: seeded("fuzz"), secret: utf8Encode("s") });
  for (let i = 0; i < 2000; i++) {
    const v = r() < 0.4 ? randomValue(r) : Array.from({ length: Math.floor(r() * 11) }, () => "abc_z\ud800"[Math.floor(r() * 6)]).join("");
    encodeOrRefuse(enc, params, v);
  }
});
