/**
 * Client randomness, exactly as docs/randomness.md and `ldp/randomness/base.py`: every draw reduces to
 * `randbits(k)`, a uniform integer in `[0, 2^k)` (a `bigint`); `bernoulli`, `bernoulliBits`, `randbelow` and
 * `tokenBytes` are built on it with the same algorithms, so a source fed the same stream as Python's draws the same
 * results in the same order (what the conformance vectors check with `ReplaySource`).
 *
 * The hot paths work on 32-bit words rather than bigints: a source hands a `randbits(k)` draw over as little-endian
 * `Uint32Array` words (`randbitsWords`; the platform and keyed sources read their bytes straight into words), and
 * `bernoulli`, `randbelow` and `bernoulliWords` (`bernoulliBits` in words) compare and combine words. The draws,
 * their order and their results are those of the bigint forms (`bitslicedBelow` stays the reference the tests check
 * against).
 */
import { uint32BE } from "./bytes.js";
import { LdpTypeError, LdpValueError, ReplayError, kindOf, showValue } from "./errors.js";
import { HmacSha256 } from "./hash/sha256.js";

/** Bits of uniform randomness behind every client Bernoulli draw (`PRECISION_BITS`). */
export const PRECISION_BITS = 64;

/** `check_probability`: `p` if it is a number in [0, 1] (NaN refused), else an `LdpTypeError` (`param_type`) or
 * `LdpValueError` (`param_range`) naming `name`. */
export function checkProbability(p: unknown, name = "p"): number {
  if (typeof p !== "number") throw new LdpTypeError("param_type", { param: name, expected: "float", got: kindOf(p) });
  if (!(p >= 0 && p <= 1)) throw new LdpValueError("param_range", { param: name, got: p, min: 0, max: 1 });
  return p;
}

/**
 * `bernoulli_threshold(p)` = floor(p · 2^64) (docs/randomness.md "Bernoulli draws, exact to 2^-64"): scaling a
 * double by 2^64 is exact, and a double below 2^65 converts to a bigint exactly.
 */
export function bernoulliThreshold(p: number): bigint {
  return BigInt(Math.floor(checkProbability(p) * 2 ** 64));
}

/**
 * The probability a client's `bernoulli(p)` really has: floor(p·2^64)/2^64 (`realized_probability`). Exact as a
 * double: `p` itself for p >= 2^-11, and a threshold below 2^53 otherwise.
 */
export function realizedProbability(p: number): number {
  return Number(bernoulliThreshold(p)) * 2 ** -64;
}

/** `check_resolvable`: `checkProbability`, refusing a positive `p` the client would round to 0 (p < 2^-64). */
export function checkResolvable(p: unknown, name = "p"): number {
  const q = checkProbability(p, name);
  if (q > 0 && bernoulliThreshold(q) === 0n) {
    throw new LdpValueError("param_relation", { params: [name], rule: "below_resolution" },
      `${name}=${q} is below the client's 2^-64 resolution: it would be drawn with probability 0 (use 0 if that is ` +
      "meant, or a value >= 2^-64)");
  }
  return q;
}

/**
 * `bitsliced_below`: `k` independent bits, bit i = [U_i < threshold] for uniform `precision`-bit lanes U_i
 * (docs/randomness.md "k bits at once"). `randbits(k)` supplies one bit plane of all lanes, most significant plane
 * first; the loop stops once no lane is tied, or once the threshold's remaining low bits are all zero.
 */
export function bitslicedBelow(threshold: bigint, precision: number, k: number,
                               randbits: (k: number) => bigint): bigint {
  if (threshold <= 0n || k === 0) return 0n;
  const full = (1n << BigInt(k)) - 1n;
  if (threshold >= 1n << BigInt(precision)) return full;
  let below = 0n;
  let tied = full;
  for (let plane = precision - 1; plane >= 0; plane--) {
    const r = randbits(k);
    const bit = 1n << BigInt(plane);
    if (threshold & bit) {
      below |= tied & ~r;
      tied &= r;
    } else {
      tied &= ~r;
    }
    if (tied === 0n || (threshold & (bit - 1n)) === 0n) break;
  }
  return below & full;
}

/** The number of bits of a non-negative safe integer (`int.bit_length`). */
function bitLength(n: number): number {
  return n < 2 ** 32 ? 32 - Math.clz32(n) : 64 - Math.clz32(n / 2 ** 32); // clz32 truncates n / 2^32 to an integer
}

/** `bernoulli_threshold(p)` = floor(p·2^64) as two 32-bit halves `[hi, lo]`, hi·2^32 + lo (`p` checked; hi = 2^32
 * when it is 2^64). Exact: p·2^64 is an exact double, its floor an integer, and lo an integer below 2^32. */
function threshold64(p: number): [number, number] {
  const t = Math.floor(checkProbability(p) * 2 ** 64);
  const hi = Math.floor(t / 2 ** 32);
  return [hi, t - hi * 2 ** 32];
}

/** The number of 32-bit words of `k` bits. */
function wordCount(k: number): number {
  return (k + 31) >>> 5;
}

/** The mask of the bits of `k` bits' last word (all ones when k is a multiple of 32). */
function topWordMask(k: number): number {
  return k % 32 === 0 ? 0xffffffff : 2 ** (k % 32) - 1;
}

/** Reads `ceil(k/8)` little-endian bytes of `bytes` from `offset` into the first `ceil(k/32)` words of `out`,
 * keeping the low `k` bits (the word form of `int.from_bytes(b, "little") & (2^k - 1)`). */
function readWordsLE(bytes: Uint8Array, offset: number, k: number, out: Uint32Array): void {
  const nbytes = Math.ceil(k / 8);
  for (let w = 0; w < wordCount(k); w++) {
    let word = 0;
    for (let j = Math.min(4 * w + 4, nbytes) - 1; j >= 4 * w; j--) word = (word << 8) | bytes[offset + j];
    out[w] = word;
  }
  out[wordCount(k) - 1] &= topWordMask(k);
}

/** The low `k` bits of a non-negative bigint as little-endian 32-bit words (word i holds bits 32i..32i+31), into
 * `out` (by default a new array of `ceil(k/32)` words). */
export function wordsOfBigInt(value: bigint, k: number, out: Uint32Array = new Uint32Array(wordCount(k))): Uint32Array {
  let v = value;
  for (let w = 0; w < wordCount(k); w++) {
    out[w] = Number(BigInt.asUintN(32, v));
    v >>= 32n;
  }
  if (k > 0) out[wordCount(k) - 1] &= topWordMask(k);
  return out;
}

/** The bigint of little-endian 32-bit words `words[from..to)`: halves joined, so that many words cost O(n log n). */
export function bigIntOfWords(words: Uint32Array, from = 0, to = words.length): bigint {
  if (to - from > 8) {
    const mid = (from + to) >>> 1;
    return (bigIntOfWords(words, mid, to) << BigInt(32 * (mid - from))) | bigIntOfWords(words, from, mid);
  }
  let v = 0n;
  for (let w = to - 1; w >= from; w--) v = (v << 32n) | BigInt(words[w]);
  return v;
}

/**
 * `rng.bernoulliBits(p, k)` as `ceil(k/32)` little-endian 32-bit words (word i holds bits 32i..32i+31), for encoders
 * that keep their bits in words (RAPPOR): the same `randbits(k)` planes, most significant first, with the same early
 * stops (`bitslicedBelow`), compared a word at a time. A source that replaces `bernoulliBits` (the audit's
 * enumerating source) is asked for the bits themselves, and so is any source for a `k` that is not a non-negative int
 * (refused there with Python's text). A function, not a method, so that pages without such an encoder do not ship it.
 */
export function bernoulliWords(rng: RandomSource, p: number, k: number): Uint32Array {
  if (rng.bernoulliBits !== RandomSource.prototype.bernoulliBits || !(Number.isInteger(k) && k >= 0)) {
    return wordsOfBigInt(rng.bernoulliBits(p, k), k);
  }
  const [hi, lo] = threshold64(p);
  const n = wordCount(k);
  const below = new Uint32Array(n);
  if (k === 0 || hi + lo === 0) return below;
  const top = topWordMask(k);
  if (hi === 2 ** 32) {
    below.fill(0xffffffff);
    below[n - 1] = top;
    return below;
  }
  const tied = new Uint32Array(n).fill(0xffffffff); // lanes whose U_i equals T in every plane drawn so far
  tied[n - 1] = top;
  const r = new Uint32Array(n);
  // past T's lowest set bit no lane can newly fall below it: the planes stop there
  const lowest = lo !== 0 ? 31 - Math.clz32(lo & -lo) : 63 - Math.clz32(hi & -hi);
  for (let plane = PRECISION_BITS - 1; plane >= lowest; plane--) {
    rng.randbitsWords(k, r);
    const one = plane >= 32 ? (hi >>> (plane - 32)) & 1 : (lo >>> plane) & 1;
    let anyTied = 0;
    for (let w = 0; w < n; w++) {
      if (one) {
        below[w] |= tied[w] & ~r[w];
        tied[w] &= r[w];
      } else {
        tied[w] &= ~r[w];
      }
      anyTied |= tied[w];
    }
    if (anyTied === 0) break;
  }
  return below;
}

/**
 * The random choices a client encoder may make (`ldp.randomness.RandomSource`). Subclasses provide `randbits`;
 * encoders draw only through `bernoulli`, `bernoulliBits` (or its word form, `bernoulliWords`), `randbelow` and
 * `tokenBytes` (docs/randomness.md, "The rule for encoders"), whose draw sequences are Python's.
 */
export abstract class RandomSource {
  /** Two words for the draws of `bernoulli` and `randbelow` (at most 64 bits each). */
  private readonly pair = new Uint32Array(2);

  /** A uniform integer in `[0, 2^k)`; `0n` for `k <= 0`, drawing nothing. */
  abstract randbits(k: number): bigint;

  /**
   * One `randbits(k)` draw (`k >= 1`) as `ceil(k/32)` little-endian 32-bit words written to `out` (word i holds bits
   * 32i..32i+31; bits from k up are 0): the primitive of the word-based draws, not for encoders. This converts the
   * bigint; a source that holds bytes overrides it to read them straight into words, consuming exactly what
   * `randbits(k)` would.
   */
  randbitsWords(k: number, out: Uint32Array): void {
    wordsOfBigInt(this.randbits(k), k, out);
  }

  /** `true` with probability floor(p·2^64)/2^64: one `randbits(64)` compared with the threshold, drawn only when
   * the threshold is strictly between 0 and 2^64 (so p = 0 and p = 1 draw nothing). */
  bernoulli(p: number): boolean {
    const [hi, lo] = threshold64(p);
    if (hi === 2 ** 32 || hi + lo === 0) return hi > 0; // p = 1, or a threshold of 0
    const u = this.pair;
    this.randbitsWords(PRECISION_BITS, u);
    return u[1] < hi || (u[1] === hi && u[0] < lo);
  }

  /** A bigint whose bits 0..k-1 are independent Bernoulli(p) at 2^-64 resolution: the bit-sliced comparison
   * (`bitslicedBelow`). `k` is checked first, then `p`, as in Python. */
  bernoulliBits(p: number, k: number): bigint {
    if (typeof k !== "number" || !Number.isInteger(k) || k < 0) {
      throw new RangeError(`the number of bits must be a non-negative integer, got ${showValue(k)}`);
    }
    return bitslicedBelow(bernoulliThreshold(p), PRECISION_BITS, k, (n) => this.randbits(n));
  }

  /** A uniform integer in `[0, n)`, exactly: draws of `bit_length(n - 1)` bits, retried while `>= n`; `n = 1`
   * draws nothing. `n` is an integer in [1, 2^53] (a JS number holds no larger exact integer). */
  randbelow(n: number): number {
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 2 ** 53) {
      throw new RangeError(`randbelow needs an integer n in [1, 2^53], got ${showValue(n)}`);
    }
    if (n === 1) return 0;
    const bits = bitLength(n - 1);
    const u = this.pair;
    for (;;) {
      this.randbitsWords(bits, u);
      const r = bits > 32 ? u[1] * 2 ** 32 + u[0] : u[0];
      if (r < n) return r;
    }
  }

  /** `n` uniform bytes: `randbits(8n)` as `n` little-endian bytes; empty (no draw) for `n <= 0`. */
  tokenBytes(n: number): Uint8Array {
    if (typeof n !== "number" || !Number.isInteger(n)) throw new TypeError(`tokenBytes needs an integer, got ${showValue(n)}`);
    if (n <= 0) return new Uint8Array(0);
    const words = new Uint32Array(wordCount(8 * n));
    this.randbitsWords(8 * n, words);
    return Uint8Array.from({ length: n }, (_, i) => words[i >>> 2] >>> (8 * (i & 3)));
  }
}

/** Fills an array with random bytes: `crypto.getRandomValues` (at most 65,536 bytes a call). */
export type FillRandom = (array: Uint8Array) => void;

const GET_RANDOM_VALUES_MAX = 65536;

function platformFill(): FillRandom {
  const c = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  const get = c?.getRandomValues;
  if (c === undefined || typeof get !== "function") {
    throw new Error("crypto.getRandomValues is not available: a client needs the platform's CSPRNG " +
                    "(browsers, Node >= 19, Deno and Bun have it)");
  }
  return (a) => {
    get.call(c, a);
  };
}

/**
 * The platform's CSPRNG (`crypto.getRandomValues`): the default for every client, as Python's `SystemRandomSource`.
 * `randbits(k)` takes the next `ceil(k/8)` bytes, little-endian, keeping the low `k` bits. Bytes come from a pool
 * refilled 4 KiB at a time, each byte going to one draw at most (a draw wider than the pool reads its own bytes).
 * `tokenBytes` (client secrets) reads fresh bytes and never touches the pool. `fill` may be given for tests.
 */
export class CryptoRandomSource extends RandomSource {
  private readonly fill: FillRandom;
  private readonly pool = new Uint8Array(4096);
  private offset = 4096; // bytes of the pool already used

  constructor(fill?: FillRandom) {
    super();
    this.fill = fill ?? platformFill();
  }

  /** `n` fresh bytes, read in chunks of at most 65,536 (the `getRandomValues` limit). */
  private fresh(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let off = 0; off < n; off += GET_RANDOM_VALUES_MAX) {
      this.fill(out.subarray(off, Math.min(n, off + GET_RANDOM_VALUES_MAX)));
    }
    return out;
  }

  randbits(k: number): bigint {
    if (!(k > 0)) return 0n;
    const words = new Uint32Array(wordCount(k));
    this.randbitsWords(k, words);
    return bigIntOfWords(words);
  }

  override randbitsWords(k: number, out: Uint32Array): void {
    const nbytes = Math.ceil(k / 8);
    if (nbytes > this.pool.length) {
      readWordsLE(this.fresh(nbytes), 0, k, out);
      return;
    }
    if (this.offset + nbytes > this.pool.length) {
      this.fill(this.pool);
      this.offset = 0;
    }
    const start = this.offset;
    readWordsLE(this.pool, start, k, out);
    this.offset += nbytes;
    for (let i = start; i < this.offset; i++) this.pool[i] = 0; // a used byte is not kept (a loop: cheaper than fill)
  }

  override tokenBytes(n: number): Uint8Array {
    if (typeof n !== "number" || !Number.isInteger(n)) throw new TypeError(`tokenBytes needs an integer, got ${showValue(n)}`);
    return n > 0 ? this.fresh(n) : new Uint8Array(0);
  }

  override toString(): string {
    return "CryptoRandomSource()";
  }
}

/**
 * Deterministic randomness from a secret key and a message (`ldp.randomness.KeyedRandomSource`; docs/randomness.md
 * "Keyed, deterministic randomness"): the stream is HMAC-SHA256(key, message ‖ uint32_BE(0)) ‖
 * HMAC-SHA256(key, message ‖ uint32_BE(1)) ‖ …; `randbits(n)` takes the next `ceil(n/8)` bytes, little-endian,
 * keeping the low `n` bits. The same key and message always give the same draws (memoized responses).
 */
export class KeyedRandomSource extends RandomSource {
  private readonly hmac: HmacSha256;
  private readonly message: Uint8Array;
  private block = 0;
  private buffer = new Uint8Array(0);
  private offset = 0;

  constructor(key: Uint8Array, message: Uint8Array) {
    super();
    if (!(key instanceof Uint8Array) || key.length === 0) throw new TypeError("the key must be a non-empty Uint8Array");
    if (!(message instanceof Uint8Array)) throw new TypeError(`the message must be a Uint8Array, got ${kindOf(message)}`);
    this.hmac = new HmacSha256(key);
    this.message = Uint8Array.from(message);
  }

  private take(nbytes: number): Uint8Array {
    const available = this.buffer.length - this.offset;
    if (available < nbytes) {
      const blocks = Math.ceil((nbytes - available) / 32);
      const next = new Uint8Array(available + 32 * blocks);
      next.set(this.buffer.subarray(this.offset));
      for (let b = 0; b < blocks; b++) {
        next.set(this.hmac.mac(this.message, uint32BE(this.block)), available + 32 * b);
        this.block++;
      }
      this.buffer = next;
      this.offset = 0;
    }
    const out = this.buffer.subarray(this.offset, this.offset + nbytes);
    this.offset += nbytes;
    return out;
  }

  randbits(k: number): bigint {
    if (!(k > 0)) return 0n;
    const words = new Uint32Array(wordCount(k));
    this.randbitsWords(k, words);
    return bigIntOfWords(words);
  }

  override randbitsWords(k: number, out: Uint32Array): void {
    readWordsLE(this.take(Math.ceil(k / 8)), 0, k, out);
  }

  override toString(): string {
    return "KeyedRandomSource(<secret>)";
  }
}

/** One recorded `randbits(k)` call: `[k, value as lowercase hex without 0x]` (the conformance vectors' `draws`). */
export type Draw = readonly [number, string];

/**
 * Replays recorded draws (`ldp.randomness.ReplaySource`): `randbits(k)` returns the next recorded value after
 * checking the recorded `k` is `k`, else a `ReplayError` naming the position; a call past the end is a
 * `ReplayError` too. `randbits(0)` returns `0n` without consuming a record (a recording never holds `k = 0` draws:
 * Python's `RecordingSource` does not record them). `remaining()` counts the records not consumed.
 */
export class ReplaySource extends RandomSource {
  private readonly draws: Array<readonly [number, bigint]> = [];
  private next = 0;

  constructor(draws: Iterable<Draw>) {
    super();
    let i = 0;
    for (const item of draws) {
      const [k, hex] = item;
      let value: bigint | null = null;
      if (typeof hex === "string" && /^[0-9a-f]+$/.test(hex)) value = BigInt("0x" + hex);
      if (!(typeof k === "number" && Number.isInteger(k) && k > 0 && value !== null && value < 1n << BigInt(k))) {
        throw new RangeError(`draw ${i}: expected [k >= 1, hex of a value in [0, 2^k)], got ${showValue(item)}`);
      }
      this.draws.push([k, value]);
      i++;
    }
  }

  randbits(k: number): bigint {
    if (!(k > 0)) return 0n;
    const i = this.next;
    if (i >= this.draws.length) {
      throw new ReplayError(`draw ${i}: randbits(${k}) asked past the end of the ${this.draws.length} recorded draws`);
    }
    const [want, value] = this.draws[i];
    if (want !== k) throw new ReplayError(`draw ${i}: randbits(${k}) asked where the recording has randbits(${want})`);
    this.next = i + 1;
    return value;
  }

  /** Recorded draws not consumed yet (a replay that leaves some drew less than the recording did). */
  remaining(): number {
    return this.draws.length - this.next;
  }
}

/**
 * Records every `randbits` call of an inner source (`ldp.randomness.RecordingSource`), as `[k, hex]` draws a
 * `ReplaySource` replays. `randbits(0)` draws nothing and is not recorded.
 */
export class RecordingSource extends RandomSource {
  readonly draws: Array<[number, string]> = [];

  constructor(private readonly inner: RandomSource) {
    super();
  }

  randbits(k: number): bigint {
    if (!(k > 0)) return 0n;
    const value = this.inner.randbits(k);
    this.draws.push([k, value.toString(16)]);
    return value;
  }
}
