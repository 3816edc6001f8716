// SFP beyond the vectors: the law of one report (the position uniform over L/r; the word's CMS row keeps its bucket
// with probability 1 − p_flip), the fragment record's bytes (two-byte symbol indices past 256 symbols), replacement
// and truncation, and any value giving a valid report or a Python error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { refusal } from "../test-support/refusal.mjs";

import { fromDict } from "../dist/params/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { PROTOCOLS } from "../dist/protocols/index.js";
import { SfpParams } from "../dist/protocols/sfp.js";
import { utf8Encode } from "../dist/bytes.js";
import { hash32 } from "../dist/hash/murmur3.js";
import { N, bernoulliWithin, encodeOrRefuse, prng, randomValue, show } from "../test-support/domain.mjs";

const BASE = { word_epsilon: 2.0, fragment_epsilon: 3.0, alphabet: "abc", length: 6, fragment_length: 2, hash_bits: 8,
  word_num_hashes: 4, word_width: 16, fragment_num_hashes: 4, fragment_width: 16 };

test("sfp: the position is uniform and the word's row keeps its bucket with probability 1 − p_flip", () => {
  const params = fromDict(SfpParams, BASE);
  const enc = PROTOCOLS.sfp.makeEncoder(params, { rng: new KeyedRandomSource(utf8Encode("sfp-law"), utf8Encode("1")) });
  const word = enc.prepare("abca");
  const positions = [0, 0, 0];
  let kept = 0;
  for (let i = 0; i < N; i++) {
    const payload = Object.fromEntries(enc.randomize(word).payload);
    positions[payload.position]++;
    const bucket = params.word.bucketOfBytes(word.data, payload.word_hash);
    if (payload.word_bits[bucket] === "1") kept++;
  }
  positions.forEach((c, i) => bernoulliWithin(c, N, 1 / 3, `position ${i}`));
  bernoulliWithin(kept, N, 1 - params.word.flipProbability, "the word's own bucket");
});

test("sfp: the fragment record is the word hash big-endian then each symbol's index (two bytes past 256 symbols)", () => {
  const alphabet = Array.from({ length: 300 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join("");
  const params = fromDict(SfpParams, { ...BASE, alphabet, hash_bits: 12, length: 4, fragment_length: 2 });
  const w = params.prepareWord(alphabet[299] + alphabet[1]);
  const h = hash32(utf8Encode(alphabet[299] + alphabet[1]), params.wordHashSeed) % 4096;
  assert.equal(w.hash, h);
  assert.deepEqual([...params.fragmentRecord(w, 0)], [h >> 8, h & 255, 1, 43, 0, 1]); // 299 = 0x012b
  assert.deepEqual([...params.fragmentRecord(w, 1)], [h >> 8, h & 255, 1, 44, 1, 44]); // the pad is symbol 300
});

test("sfp: replacement and truncation, or Python's refusals", () => {
  const strict = fromDict(SfpParams, BASE);
  assert.throws(() => strict.prepareWord("abz"), refusal("ValueError", "not_in_alphabet", { char: "z" }));
  assert.throws(() => strict.prepareWord("abcabca"), refusal("ValueError", "value_too_long", { got: 7, max: 6, unit: "characters" }));
  assert.throws(() => strict.prepareWord("ab_"), refusal("ValueError", "not_in_alphabet", { char: "_" }), "the pad is not a letter of a word");
  const lenient = fromDict(SfpParams, { ...BASE, replacement: "a", truncate: true });
  assert.deepEqual(lenient.prepareWord("zb\ud800cabcx").padded, [0, 1, 0, 2, 0, 1]);
  assert.deepEqual(lenient.prepareWord("b").padded, [1, 3, 3, 3, 3, 3]);
  assert.throws(() => fromDict(SfpParams, { ...BASE, replacement: "z" }),
    refusal("ValueError", "param_relation", { params: ["replacement", "alphabet"], rule: "replacement_in_alphabet" }));
  assert.throws(() => fromDict(SfpParams, { ...BASE, word_width: 1 }), (e) => e.message.startsWith("word sketch: width must be") &&
    refusal("ValueError", "param_range", { param: "word_width", got: 1, min: 2, max: e.fields.max })(e));
});

test("sfp: any value is a valid report or a refusal", () => {
  const r = prng(47);
  const params = fromDict(SfpParams, { ...BASE, replacement: "b" });
  const enc = PROTOCOLS.sfp.makeEncoder(params, { rng: new KeyedRandomSource(utf8Encode("sfp-fuzz"), utf8Encode("")) });
  for (let i = 0; i < 3000; i++) {
    const v = r() < 0.5 ? randomValue(r) : Array.from({ length: Math.floor(r() * 9) }, () => "abcxé\ud83d"[Math.floor(r() * 6)]).join("");
    if (encodeOrRefuse(enc, params, v) !== null) assert.equal(typeof v, "string", show(v));
  }
});
