// Client randomness (docs/randomness.md): thresholds, the draw sequences of bernoulli / bernoulliBits / randbelow /
// tokenBytes, the keyed HMAC stream, replay, and the platform CSPRNG source. Python's Mersenne Twister examples cannot
// be replayed here, so the laws are tested: against per-lane references on the same stream, by exhaustive enumeration,
// against node:crypto's HMAC, and against the recorded streams of conformance/vectors/primitives.json.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { createHmac } from "node:crypto";

import {
  CryptoRandomSource, KeyedRandomSource, PRECISION_BITS, RandomSource, RecordingSource, ReplaySource,
  bernoulliThreshold, bernoulliWords, bigIntOfWords, bitslicedBelow, checkProbability, checkResolvable,
  realizedProbability, wordsOfBigInt,
} from "../dist/random.js";
import { isDeepStrictEqual } from "node:util";
import { LdpTypeError, LdpValueError, ReplayError } from "../dist/errors.js";
import { fromHex, toHex, uint32BE, concatBytes } from "../dist/bytes.js";

const here = new URL(".", import.meta.url);
const PRIMITIVES = new URL("../../../conformance/vectors/primitives.json", here);
const errorWith = (cls, message) => (e) => e instanceof cls && e.message === message;
/** A refusal of class `cls` with `code` and exactly `fields`. */
const refusal = (cls, code, fields) => (e) => e instanceof cls && e.code === code && isDeepStrictEqual({ ...e.fields }, fields);

/** A fixed-seed PRNG (splitmix64 in BigInt) behind a RandomSource, for streams in tests. */
class TestSource extends RandomSource {
  constructor(seed) {
    super();
    this.state = BigInt(seed);
    this.calls = 0;
  }
  next64() {
    this.state = (this.state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
    let z = this.state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
    return z ^ (z >> 31n);
  }
  randbits(k) {
    if (k <= 0) return 0n;
    this.calls++;
    let v = 0n;
    for (let got = 0; got < k; got += 64) v = (v << 64n) | this.next64();
    return v & ((1n << BigInt(k)) - 1n);
  }
  float() {
    return Number(this.next64() >> 11n) / 2 ** 53;
  }
}

test("thresholds: floor(p·2^64), exact", () => {
  assert.equal(bernoulliThreshold(0.1), 0x1999999999999a00n);
  assert.equal(realizedProbability(0.1), 0.1);
  assert.equal(bernoulliThreshold(0), 0n);
  assert.equal(bernoulliThreshold(1), 1n << 64n);
  assert.equal(bernoulliThreshold(0.5), 1n << 63n);
  assert.equal(bernoulliThreshold(2 ** -64), 1n);
  assert.equal(bernoulliThreshold(2 ** -65), 0n);
  assert.equal(bernoulliThreshold(1 - 2 ** -53), (1n << 64n) - (1n << 11n));
  assert.equal(bernoulliThreshold(5e-324), 0n);
  // below 2^-11 the realized probability is the floor
  const p = 1e-5 / 3;
  assert.equal(realizedProbability(p), Number(BigInt(Math.floor(p * 2 ** 64))) / 2 ** 64);
  assert.ok(realizedProbability(p) <= p && p - realizedProbability(p) < 2 ** -64);
  const src = new TestSource(1);
  for (let i = 0; i < 2000; i++) {
    const q = src.float() * 2 ** -(i % 70);
    const t = bernoulliThreshold(q);
    // t <= q·2^64 < t + 1, checked exactly in BigInt against q's exact binary value
    const scaled = q * 2 ** 64; // exact: a power-of-two scaling
    assert.equal(t, BigInt(Math.floor(scaled)));
    assert.ok(Number(t) <= scaled && scaled < Number(t) + 1 || scaled >= 2 ** 53);
    if (q >= 2 ** -11) assert.equal(realizedProbability(q), q);
  }
});

test("probability checks: Python's refusals", () => {
  assert.throws(() => bernoulliThreshold(1.5), refusal(LdpValueError, "param_range", { param: "p", got: 1.5, min: 0, max: 1 }));
  assert.throws(() => bernoulliThreshold(-0.1), refusal(LdpValueError, "param_range", { param: "p", got: -0.1, min: 0, max: 1 }));
  assert.throws(() => bernoulliThreshold(NaN), refusal(LdpValueError, "param_range", { param: "p", got: NaN, min: 0, max: 1 }));
  assert.throws(() => bernoulliThreshold(2), refusal(LdpValueError, "param_range", { param: "p", got: 2, min: 0, max: 1 }));
  assert.throws(() => checkProbability("0.5", "q"), refusal(LdpTypeError, "param_type", { param: "q", expected: "float", got: "string" }));
  assert.throws(() => checkProbability(true), refusal(LdpTypeError, "param_type", { param: "p", expected: "float", got: "bool" }));
  assert.throws(() => checkResolvable(1e-30, "f"), refusal(LdpValueError, "param_relation",
    { params: ["f"], rule: "below_resolution" }));
  assert.equal(checkResolvable(0), 0);
  assert.equal(checkResolvable(2 ** -64), 2 ** -64);
  const s = new TestSource(2);
  assert.throws(() => s.bernoulliBits(0.5, -1), errorWith(RangeError, 'the number of bits must be a non-negative integer, got -1'));
  assert.throws(() => s.bernoulliBits(0.5, 1.5), errorWith(RangeError, 'the number of bits must be a non-negative integer, got 1.5'));
  assert.throws(() => s.bernoulliBits(0.5, true), errorWith(RangeError, 'the number of bits must be a non-negative integer, got true'));
  assert.throws(() => s.bernoulliBits(0.5, "3"), errorWith(RangeError, 'the number of bits must be a non-negative integer, got "3"'));
  assert.throws(() => s.bernoulliBits(2, 3), refusal(LdpValueError, "param_range", { param: "p", got: 2, min: 0, max: 1 }));
  assert.throws(() => s.randbelow(0), errorWith(RangeError, "randbelow needs an integer n in [1, 2^53], got 0"));
  assert.throws(() => s.randbelow(2.5), errorWith(RangeError, "randbelow needs an integer n in [1, 2^53], got 2.5"));
  assert.throws(() => s.randbelow(false), errorWith(RangeError, "randbelow needs an integer n in [1, 2^53], got false"));
  assert.equal(s.calls, 0, "a refused call draws nothing");
});

test("bernoulli: one randbits(64) compared with T, drawn only when 0 < T < 2^64", () => {
  for (const p of [0, 1, 2 ** -70]) {
    const rec = new RecordingSource(new TestSource(3));
    rec.bernoulli(p);
    assert.equal(rec.draws.length, 0, `p = ${p} draws nothing`);
  }
  assert.equal(new TestSource(3).bernoulli(1), true);
  assert.equal(new TestSource(3).bernoulli(0), false);
  const src = new TestSource(4);
  for (let i = 0; i < 3000; i++) {
    const p = [src.float(), 0.5, 0.1, 2 ** -64, 1 - 2 ** -53][i % 5];
    const rec = new RecordingSource(new TestSource(1000 + i));
    const got = rec.bernoulli(p);
    assert.equal(rec.draws.length, 1);
    assert.equal(rec.draws[0][0], 64);
    assert.equal(got, BigInt("0x" + rec.draws[0][1]) < bernoulliThreshold(p));
  }
});

/** Per-lane reference: lane i's U_i is read from all 64 planes (plane 63 first); bit i = [U_i < T]. */
function laneReference(planes, k, threshold) {
  let out = 0n;
  for (let i = 0; i < k; i++) {
    let u = 0n;
    for (let j = 0; j < 64; j++) u = (u << 1n) | ((planes[j] >> BigInt(i)) & 1n);
    if (u < threshold) out |= 1n << BigInt(i);
  }
  return out;
}

test("bernoulliBits is k independent [U_i < T] on the same stream (differential, random p and k)", () => {
  const src = new TestSource(5);
  for (let t = 0; t < 1500; t++) {
    const k = t % 10 === 0 ? 0 : 1 + Number(src.randbits(8)) % 130;
    const kind = t % 6;
    const p = kind === 0 ? src.float()
      : kind === 1 ? src.float() * 2 ** -(Number(src.randbits(6)))        // tiny p
      : kind === 2 ? Number(src.randbits(4)) / 16                            // few threshold bits
      : kind === 3 ? 1 - src.float() * 2 ** -30
      : kind === 4 ? [0, 1, 0.5, 0.75, 0.25, 2 ** -64][t % 6]
      : Number(src.randbits(20)) / 2 ** 20;
    const planes = Array.from({ length: 64 }, () => src.randbits(k));
    const T = bernoulliThreshold(p);
    const replay = new ReplaySource(k === 0 ? [] : planes.map((r) => [k, r.toString(16)]));
    const got = replay.bernoulliBits(p, k);
    assert.equal(got, laneReference(planes, k, T), `p = ${p}, k = ${k}`);
    const used = (k === 0 ? 0 : 64) - replay.remaining();
    if (T === 0n || T === 1n << 64n || k === 0) assert.equal(used, 0, "p in {0, 1} or k = 0 draws nothing");
    // the early stops: never past T's lowest set bit
    if (T > 0n && T < 1n << 64n && k > 0) {
      const lowest = T.toString(2).length - 1 - T.toString(2).lastIndexOf("1") ; // trailing zeros
      assert.ok(used >= 1 && used <= 64 - lowest, `planes used ${used}`);
    }
    // bitslicedBelow directly, with the same planes
    let j = 0;
    assert.equal(bitslicedBelow(T, PRECISION_BITS, k, () => planes[j++]), got);
  }
});

test("bernoulliBits: p = 1/2 takes one plane, p = 3/4 two (docs/randomness.md)", () => {
  for (const [p, planes] of [[0.5, 1], [0.75, 2], [0.25, 2]]) {
    const rec = new RecordingSource(new TestSource(6));
    rec.bernoulliBits(p, 64);
    assert.ok(rec.draws.length <= planes);
    if (p === 0.5) assert.equal(rec.draws.length, 1);
  }
  // p = 1/2: bit i is 1 exactly where the single plane has a 0
  const replay = new ReplaySource([[8, "a5"]]);
  assert.equal(replay.bernoulliBits(0.5, 8), 0x5an);
  assert.equal(new TestSource(7).bernoulliBits(1, 70), (1n << 70n) - 1n);
  assert.equal(new TestSource(7).bernoulliBits(0, 70), 0n);
});

test("randbelow is exactly uniform: exhaustive over every first draw, rejection retried", () => {
  for (let n = 2; n <= 70; n++) {
    const bits = (n - 1).toString(2).length;
    const counts = new Array(n).fill(0);
    for (let v = 0; v < 2 ** bits; v++) {
      if (v < n) {
        const replay = new ReplaySource([[bits, v.toString(16)]]);
        counts[replay.randbelow(n)]++;
        assert.equal(replay.remaining(), 0);
      } else {
        // a rejected draw is followed by a fresh one of the same width
        for (const w of [0, n - 1]) {
          const replay = new ReplaySource([[bits, v.toString(16)], [bits, w.toString(16)]]);
          assert.equal(replay.randbelow(n), w);
          assert.equal(replay.remaining(), 0);
        }
      }
    }
    assert.deepEqual(counts, new Array(n).fill(1), `n = ${n}: every value from exactly one accepted draw`);
  }
  assert.equal(new ReplaySource([]).randbelow(1), 0, "n = 1 draws nothing");
  assert.equal(new ReplaySource([[53, "1fffffffffffff"]]).randbelow(2 ** 53), 2 ** 53 - 1);
  assert.equal(new ReplaySource([[32, "ffffffff"]]).randbelow(2 ** 32), 2 ** 32 - 1);
  assert.equal(new ReplaySource([[33, "100000000"]]).randbelow(2 ** 32 + 1), 2 ** 32);
  const s = new TestSource(8);
  const hist = new Array(6).fill(0);
  for (let i = 0; i < 60000; i++) hist[s.randbelow(6)]++;
  for (const c of hist) assert.ok(Math.abs(c - 10000) < 500, `${hist}`);
});

test("tokenBytes: randbits(8n) as little-endian bytes; n <= 0 draws nothing", () => {
  assert.equal(toHex(new ReplaySource([[32, "a6a3a450"]]).tokenBytes(4)), "50a4a3a6");
  assert.equal(toHex(new ReplaySource([[24, "ff"]]).tokenBytes(3)), "ff0000");
  const r = new ReplaySource([]);
  assert.equal(r.tokenBytes(0).length, 0);
  assert.equal(r.tokenBytes(-3).length, 0);
  assert.throws(() => r.tokenBytes(1.5), TypeError);
});

test("KeyedRandomSource: the HMAC-SHA256(key, message ‖ uint32_BE(i)) stream, against node:crypto", () => {
  const s = new TestSource(9);
  for (let t = 0; t < 60; t++) {
    const key = s.tokenBytes(1 + t * 3);
    const message = s.tokenBytes(t % 40);
    const stream = [];
    for (let i = 0; i < 60; i++) {
      stream.push(...createHmac("sha256", key).update(concatBytes(message, uint32BE(i))).digest());
    }
    const src = new KeyedRandomSource(key, message);
    let off = 0;
    while (off < 1500) {
      const k = Number(s.randbits(10)) % 520;
      const got = src.randbits(k);
      if (k === 0) {
        assert.equal(got, 0n);
        continue;
      }
      const n = Math.ceil(k / 8);
      let want = 0n;
      for (let i = n - 1; i >= 0; i--) want = (want << 8n) | BigInt(stream[off + i]);
      want &= (1n << BigInt(k)) - 1n;
      assert.equal(got, want, `draw of ${k} bits at byte ${off}`);
      off += n;
    }
  }
  assert.throws(() => new KeyedRandomSource(new Uint8Array(0), new Uint8Array(0)),
                errorWith(TypeError, "the key must be a non-empty Uint8Array"));
  assert.throws(() => new KeyedRandomSource("key", new Uint8Array(0)), TypeError);
  assert.equal(String(new KeyedRandomSource(Uint8Array.of(1), new Uint8Array(0))), "KeyedRandomSource(<secret>)");
  // the message is copied: changing the caller's array later does not change the stream
  const msg = Uint8Array.of(1, 2, 3);
  const a = new KeyedRandomSource(Uint8Array.of(7), msg);
  msg[0] = 9;
  const b = new KeyedRandomSource(Uint8Array.of(7), Uint8Array.of(1, 2, 3));
  assert.equal(a.randbits(256), b.randbits(256));
});

test("ReplaySource: order, width and end checked, with Python's refusals", () => {
  const r = new ReplaySource([[3, "5"], [64, "ffffffffffffffff"]]);
  assert.equal(r.remaining(), 2);
  assert.equal(r.randbits(0), 0n, "randbits(0) consumes nothing");
  assert.equal(r.randbits(3), 5n);
  assert.throws(() => r.randbits(63), errorWith(ReplayError, "draw 1: randbits(63) asked where the recording has randbits(64)"));
  assert.equal(r.remaining(), 1);
  assert.equal(r.randbits(64), (1n << 64n) - 1n);
  assert.throws(() => r.randbits(8), errorWith(ReplayError, "draw 2: randbits(8) asked past the end of the 2 recorded draws"));
  assert.equal(r.remaining(), 0);
  assert.throws(() => new ReplaySource([[3, "8"]]), errorWith(RangeError, 'draw 0: expected [k >= 1, hex of a value in [0, 2^k)], got [3,"8"]'));
  assert.throws(() => new ReplaySource([[1, "0"], [0, "0"]]), errorWith(RangeError, 'draw 1: expected [k >= 1, hex of a value in [0, 2^k)], got [0,"0"]'));
  assert.throws(() => new ReplaySource([[4, "0xf"]]), RangeError);
  assert.throws(() => new ReplaySource([[4, "F"]]), RangeError);
  // a recording replays to the same results
  const rec = new RecordingSource(new TestSource(10));
  const first = [rec.bernoulli(0.3), rec.bernoulliBits(0.1, 100), rec.randbelow(1000), toHex(rec.tokenBytes(16)), rec.randbits(0)];
  const replay = new ReplaySource(rec.draws);
  assert.deepEqual([replay.bernoulli(0.3), replay.bernoulliBits(0.1, 100), replay.randbelow(1000), toHex(replay.tokenBytes(16)), replay.randbits(0)], first);
  assert.equal(replay.remaining(), 0);
});

test("CryptoRandomSource: ceil(k/8) pool bytes per draw, little-endian, low k bits; secrets never from the pool", () => {
  let counter = 0;
  const fills = [];
  const fill = (a) => {
    fills.push(a.length);
    for (let i = 0; i < a.length; i++) a[i] = counter++ & 0xff;
  };
  const src = new CryptoRandomSource(fill);
  assert.equal(src.randbits(0), 0n);
  assert.deepEqual(fills, [], "k = 0 reads nothing");
  assert.equal(src.randbits(16), 0x0100n);
  assert.equal(src.randbits(12), 0x302n, "bytes 02 03, low 12 bits");
  assert.equal(src.randbits(1), 0n, "byte 04, low bit");
  assert.equal(src.randbits(64), 0x0c0b0a0908070605n);
  assert.deepEqual(fills, [4096]);
  // a token is read fresh, not from the pool
  const token = src.tokenBytes(3);
  assert.deepEqual([...token], [0, 1, 2].map((i) => (4096 + i) & 0xff));
  assert.deepEqual(fills, [4096, 3]);
  assert.equal(src.randbits(8), 13n, "the pool goes on where it was");
  // a draw that does not fit in the pool's rest refills it; one wider than the pool reads its own bytes
  src.randbits(8 * 4085); // 14 bytes used: 4,085 more do not fit
  assert.deepEqual(fills, [4096, 3, 4096]);
  src.randbits(8 * 70000 + 3);
  assert.deepEqual(fills, [4096, 3, 4096, 65536, 4465], "reads of at most 65,536 bytes");
  assert.equal(src.tokenBytes(0).length, 0);
  assert.equal(String(src), "CryptoRandomSource()");
});

test("CryptoRandomSource on the platform CSPRNG", () => {
  const src = new CryptoRandomSource();
  for (let k = 1; k <= 300; k++) {
    const v = src.randbits(k);
    assert.ok(v >= 0n && v < 1n << BigInt(k));
  }
  assert.equal(src.tokenBytes(100000).length, 100000);
  let ones = 0;
  for (let i = 0; i < 40000; i++) ones += src.bernoulli(0.25) ? 1 : 0;
  assert.ok(Math.abs(ones - 10000) < 600, `${ones}`);
  let bits = 0;
  for (let i = 0; i < 1000; i++) bits += src.bernoulliBits(0.75, 64).toString(2).split("1").length - 1;
  assert.ok(Math.abs(bits - 48000) < 1200, `${bits}`);
  const seen = new Set();
  for (let i = 0; i < 6000; i++) seen.add(src.randbelow(6));
  assert.equal(seen.size, 6);
});

test("conformance vectors: the recorded streams of primitives.json replay exactly", { skip: !existsSync(PRIMITIVES) }, () => {
  const { draws, keyed } = JSON.parse(readFileSync(PRIMITIVES, "utf8"));
  for (const { p, threshold } of draws.thresholds) assert.equal(bernoulliThreshold(p).toString(16), threshold);
  for (const { p, draws: d, result } of draws.bernoulli) {
    const r = new ReplaySource(d);
    assert.equal(r.bernoulli(p), result);
    assert.equal(r.remaining(), 0);
  }
  for (const { p, k, draws: d, result } of draws.bernoulli_bits) {
    const r = new ReplaySource(d);
    assert.equal(r.bernoulliBits(p, k).toString(16), result, `p = ${p}, k = ${k}`);
    assert.equal(r.remaining(), 0);
  }
  for (const { n, draws: d, result } of draws.randbelow) {
    const r = new ReplaySource(d);
    assert.equal(r.randbelow(n), result);
    assert.equal(r.remaining(), 0);
  }
  for (const { n, draws: d, result } of draws.token_bytes) {
    const r = new ReplaySource(d);
    assert.equal(toHex(r.tokenBytes(n)), result);
    assert.equal(r.remaining(), 0);
  }
  for (const c of keyed) {
    const src = new KeyedRandomSource(fromHex(c.key), fromHex(c.message));
    for (const [k, v] of c.randbits ?? []) assert.equal(src.randbits(k).toString(16), v);
    for (const [p, k, v] of c.bernoulli_bits ?? []) assert.equal(src.bernoulliBits(p, k).toString(16), v);
  }
});

// The word forms (the hot paths): the same draws and results as the bigint forms.

/** A source reading a fixed byte stream through `CryptoRandomSource`'s pool (bytes i = counter, from `start`). */
function countingSource(start = 0) {
  let counter = start;
  return new CryptoRandomSource((a) => {
    for (let i = 0; i < a.length; i++) a[i] = (counter++ * 167 + 13) & 0xff;
  });
}

test("words: wordsOfBigInt and bigIntOfWords are inverse on the low k bits, at any width", () => {
  const src = new TestSource(11);
  for (const k of [1, 7, 8, 31, 32, 33, 64, 100, 128, 257, 288, 1000, 4099, 40000]) {
    const v = src.randbits(k + 5); // wider than k: the high bits are dropped
    const words = wordsOfBigInt(v, k);
    assert.equal(words.length, Math.ceil(k / 32));
    assert.equal(bigIntOfWords(words), v & ((1n << BigInt(k)) - 1n), `k = ${k}`);
  }
  assert.equal(bigIntOfWords(new Uint32Array(0)), 0n);
  assert.equal(wordsOfBigInt(5n, 0).length, 0);
});

test("words: a byte source's randbitsWords consumes and returns what randbits does", () => {
  for (const k of [1, 3, 8, 12, 31, 32, 33, 53, 64, 65, 100, 128, 1000, 8 * 4096, 8 * 4096 + 1, 8 * 70000 + 3]) {
    const bigints = countingSource(), words = countingSource();
    for (let round = 0; round < 3; round++) { // the pool's refills land at the same draws
      const out = new Uint32Array(Math.ceil(k / 32));
      words.randbitsWords(k, out);
      assert.equal(bigIntOfWords(out), bigints.randbits(k), `k = ${k}, round ${round}`);
    }
  }
  const secret = fromHex("00112233"), message = fromHex("abcdef");
  const a = new KeyedRandomSource(secret, message), b = new KeyedRandomSource(secret, message);
  for (const k of [5, 64, 3, 130, 256, 7]) {
    const out = new Uint32Array(Math.ceil(k / 32));
    a.randbitsWords(k, out);
    assert.equal(bigIntOfWords(out), b.randbits(k), `keyed, k = ${k}`);
  }
});

test("words: bernoulliWords draws bernoulliBits' planes and gives its bits (random p and k)", () => {
  const src = new TestSource(12);
  for (let t = 0; t < 1500; t++) {
    const k = t % 10 === 0 ? 0 : 1 + Number(src.randbits(8)) % 200;
    const p = [src.float(), 0.5, 0.75, 0.25, 0, 1, 2 ** -64, 1 - 2 ** -53, Number(src.randbits(4)) / 16][t % 9];
    const planes = Array.from({ length: 64 }, () => [k, src.randbits(k).toString(16)]).filter(([n]) => n > 0);
    const bits = new ReplaySource(planes), words = new ReplaySource(planes);
    const want = bits.bernoulliBits(p, k);
    const got = bernoulliWords(words, p, k);
    assert.equal(got.length, Math.ceil(k / 32));
    assert.equal(bigIntOfWords(got), want, `p = ${p}, k = ${k}`);
    assert.equal(words.remaining(), bits.remaining(), "the same planes drawn");
  }
  // on the platform source, from the same byte stream
  for (const [p, k] of [[0.25, 128], [0.75, 128], [0.5, 64], [0.1, 1000], [0.3, 33]]) {
    const a = countingSource(), b = countingSource();
    for (let i = 0; i < 40; i++) assert.equal(bigIntOfWords(bernoulliWords(a, p, k)), b.bernoulliBits(p, k));
  }
});

test("words: bernoulliWords refuses what bernoulliBits refuses, and honours a source's own bernoulliBits", () => {
  const s = new TestSource(13);
  for (const k of [-1, 1.5, true, "3"]) assert.throws(() => bernoulliWords(s, 0.5, k), RangeError);
  assert.throws(() => bernoulliWords(s, 2, 3), refusal(LdpValueError, "param_range", { param: "p", got: 2, min: 0, max: 1 }));
  class Fixed extends TestSource {
    bernoulliBits(_p, k) {
      return (1n << BigInt(k)) - 2n;
    }
  }
  assert.deepEqual([...bernoulliWords(new Fixed(1), 0.5, 40)], [0xfffffffe, 0xff]);
});

test("words: bernoulli, randbelow and tokenBytes draw the same on the word path as on a bigint source", () => {
  // TestSource has only randbits (the bigint default of randbitsWords); the platform source reads words directly
  class ViaBigInt extends RandomSource {
    constructor() {
      super();
      this.inner = countingSource();
    }
    randbits(k) {
      return this.inner.randbits(k);
    }
  }
  const words = countingSource(), bigints = new ViaBigInt();
  for (let i = 0; i < 500; i++) {
    const p = [0.3, 0.5, 1e-9, 0.999][i % 4];
    assert.equal(words.bernoulli(p), bigints.bernoulli(p));
    const n = [2, 3, 1000, 2 ** 32, 2 ** 32 + 1, 2 ** 53, 6][i % 7];
    assert.equal(words.randbelow(n), bigints.randbelow(n), `n = ${n}`);
  }
  const rec = new RecordingSource(new TestSource(14));
  const token = rec.tokenBytes(13);
  assert.deepEqual(rec.draws.map(([k]) => k), [104]);
  const value = BigInt("0x" + rec.draws[0][1]);
  assert.equal(toHex(token), toHex(Uint8Array.from({ length: 13 }, (_, i) => Number((value >> BigInt(8 * i)) & 0xffn))));
});
