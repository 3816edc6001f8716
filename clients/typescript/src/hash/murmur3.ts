/**
 * The hash family of every encoder (docs/hashing.md): `hash_j(value) = MurmurHash3_x86_32(value_bytes(value),
 * seed = j)`, unsigned, and `bucket_j(value, m) = hash_j(value) mod m`, with Python's checks and texts
 * (`ldp/hashing.py`).
 */
import { HashValue, valueBytes } from "../bytes.js";
import { LdpTypeError, LdpValueError, kindOf } from "../errors.js";

/** The largest hash-function index: MurmurHash3's seed is an unsigned 32-bit integer (`MAX_SEED`). */
export const MAX_SEED = 0xffffffff;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** A 32-bit block (or the tail's bytes) scrambled: k·c1, rotated left 15, ·c2. */
function scramble(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

/** The state after mixing in one whole 4-byte block `k`. */
function mixBlock(h: number, k: number): number {
  h ^= scramble(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** The finalization of a state after `n` bytes: the length mixed in, then fmix32; unsigned. */
function finish(h: number, n: number): number {
  h ^= n; // the length mod 2^32 (a Uint8Array is shorter than 2^32 bytes)
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** MurmurHash3_x86_32 of `data` with an already checked `seed`, unsigned (docs/hashing.md §2). */
function murmur3(data: Uint8Array, seed: number): number {
  const n = data.length;
  const blocks = n & ~3;
  let h = seed >>> 0;
  for (let i = 0; i < blocks; i += 4) {
    h = mixBlock(h, data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24));
  }
  const tail = n & 3;
  if (tail) {
    let k = 0;
    if (tail === 3) k ^= data[blocks + 2] << 16;
    if (tail >= 2) k ^= data[blocks + 1] << 8;
    k ^= data[blocks];
    h ^= scramble(k);
  }
  return finish(h, n);
}

/** MurmurHash3_x86_32 of the four little-endian bytes of `x` in [0, 2^32) (`x.to_bytes(4, "little")`), with an
 * already checked `seed`: one block, no byte array made (local hashing hashes value indices so). */
export function hashUint32LE(x: number, seed: number): number {
  return finish(mixBlock(seed | 0, x | 0), 4);
}

function checkSeed(seed: unknown): number {
  if (typeof seed !== "number" || !Number.isInteger(seed)) {
    throw new LdpTypeError("param_type", { param: "seed", expected: "int", got: kindOf(seed) });
  }
  if (!(seed >= 0 && seed <= MAX_SEED)) throw new LdpValueError("param_range", { param: "seed", got: seed, min: 0, max: MAX_SEED });
  return seed;
}

function checkWidth(m: unknown): number {
  if (typeof m !== "number" || !Number.isInteger(m)) {
    throw new LdpTypeError("param_type", { param: "m", expected: "int", got: kindOf(m) });
  }
  if (!(m >= 1 && m <= 2 ** 32)) throw new LdpValueError("param_range", { param: "m", got: m, min: 1, max: 2 ** 32 });
  return m;
}

/** `hash32(value, seed)`: MurmurHash3_x86_32 of `valueBytes(value)`, unsigned, in `[0, 2^32)`. */
export function hash32(value: HashValue, seed = 0): number {
  const data = valueBytes(value);
  return murmur3(data, checkSeed(seed));
}

/** `bucket(value, m, seed)`: `hash32(value, seed) mod m` for `1 <= m <= 2^32` (docs/hashing.md §4). */
export function bucket(value: HashValue, m: number, seed = 0): number {
  const h = hash32(value, seed);
  return h % checkWidth(m);
}

/** `buckets(value, m, seeds)`: the buckets of one value under several hash functions, in the order of `seeds`. */
export function buckets(value: HashValue, m: number, seeds: Iterable<number>): number[] {
  const data = valueBytes(value);
  const width = checkWidth(m);
  const out: number[] = [];
  for (const s of seeds) out.push(murmur3(data, checkSeed(s)) % width);
  return out;
}

/** `bucket_of_bytes`: the bucket of bytes already made, for a width and seed already validated (hot path). */
export function bucketOfBytes(data: Uint8Array, m: number, seed: number): number {
  return murmur3(data, seed) % m;
}
