/**
 * MD5 (RFC 1321) and Google RAPPOR's Bloom hashing (`md5_buckets`, docs/hashing.md "Google RAPPOR's family"):
 * bucket `j` is byte `j` of `MD5(data)` mod `k`, for `j < h <= 16`. Only RAPPOR's `mode="google"` uses it.
 */
import { LdpTypeError, LdpValueError, kindOf } from "../errors.js";

const S = [
  7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
  5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
  4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
  6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/** T[i] = floor(2^32 · |sin(i + 1)|), as RFC 1321 tabulates it. */
const T = Uint32Array.from([
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
]);

/** MD5 of `data` (16 bytes). */
export function md5(data: Uint8Array): Uint8Array {
  const n = data.length;
  const total = ((n + 8) >> 6) * 64 + 64; // padded length: a multiple of 64 with room for 0x80 and the length
  const buf = new Uint8Array(total);
  buf.set(data);
  buf[n] = 0x80;
  const bits = n * 8;
  const lo = bits >>> 0;
  const hi = Math.floor(bits / 2 ** 32);
  for (let i = 0; i < 4; i++) {
    buf[total - 8 + i] = (lo >>> (8 * i)) & 0xff;
    buf[total - 4 + i] = (hi >>> (8 * i)) & 0xff;
  }
  let a0 = 0x67452301, b0 = 0xefcdab89, c0 = 0x98badcfe, d0 = 0x10325476;
  const m = new Int32Array(16);
  for (let off = 0; off < total; off += 64) {
    for (let i = 0; i < 16; i++) {
      const j = off + 4 * i;
      m[i] = buf[j] | (buf[j + 1] << 8) | (buf[j + 2] << 16) | (buf[j + 3] << 24);
    }
    let a = a0, b = b0, c = c0, d = d0;
    for (let i = 0; i < 64; i++) {
      let f: number, g: number;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) & 15;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) & 15;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) & 15;
      }
      const x = (a + f + T[i] + m[g]) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + ((x << S[i]) | (x >>> (32 - S[i])))) | 0;
    }
    a0 = (a0 + a) | 0; b0 = (b0 + b) | 0; c0 = (c0 + c) | 0; d0 = (d0 + d) | 0;
  }
  const out = new Uint8Array(16);
  [a0, b0, c0, d0].forEach((v, w) => {
    for (let i = 0; i < 4; i++) out[4 * w + i] = (v >>> (8 * i)) & 0xff;
  });
  return out;
}

/**
 * Google RAPPOR's Bloom hashing (`md5_buckets`): bucket `j` = byte `j` of `MD5(data)` mod `k`, for `j < h`,
 * `1 <= h <= 16` (one byte per hash: `k <= 256` for every bucket to be reachable). Python's checks and texts.
 * `md5Buckets(namespaced(0, "foo"), 16, 2)` is `[6, 6]`.
 */
export function md5Buckets(data: Uint8Array, k: number, h: number): number[] {
  if (!(h >= 1 && h <= 16)) {
    throw new LdpValueError("param_range", { param: "count", got: h, min: 1, max: 16 }, `MD5 gives at most 16 one-byte hashes, asked for ${h}`);
  }
  if (typeof h === "number" && !Number.isInteger(h)) throw new TypeError(`the number of hashes must be an integer, got ${h}`);
  const digest = md5(data);
  if (typeof k !== "number" || !Number.isInteger(k)) {
    throw new LdpTypeError("param_type", { param: "m", expected: "int", got: kindOf(k) });
  }
  if (!(k >= 1 && k <= 2 ** 32)) throw new LdpValueError("param_range", { param: "m", got: k, min: 1, max: 2 ** 32 });
  const out: number[] = [];
  for (let j = 0; j < h; j++) out.push(digest[j] % k);
  return out;
}
