/**
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), synchronous and dependency-free.
 *
 * The client cannot use WebCrypto's asynchronous `crypto.subtle`: memoized responses are drawn inside a synchronous
 * encode (`KeyedRandomSource`, docs/randomness.md "Keyed, deterministic randomness"), and a spec's fingerprint is
 * computed synchronously (`fingerprint`, `ldp/wire.py`).
 */

const K = Uint32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const INIT = Uint32Array.from([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

/** An incremental SHA-256: `update` any number of times, then `digest` once. `clone` copies the state (HMAC keeps
 * its keyed inner and outer states and clones them per message). */
export class Sha256 {
  private readonly h = Uint32Array.from(INIT);
  private readonly block = new Uint8Array(64);
  private readonly w = new Uint32Array(64);
  private fill = 0;
  private length = 0; // bytes hashed so far (below 2^53)
  private done = false;

  /** Hash more bytes. */
  update(data: Uint8Array): this {
    if (this.done) throw new Error("Sha256: update after digest");
    let i = 0;
    const n = data.length;
    this.length += n;
    if (this.fill > 0) {
      const take = Math.min(64 - this.fill, n);
      this.block.set(data.subarray(0, take), this.fill);
      this.fill += take;
      i = take;
      if (this.fill < 64) return this;
      this.compress(this.block, 0);
      this.fill = 0;
    }
    for (; i + 64 <= n; i += 64) this.compress(data, i);
    if (i < n) {
      this.block.set(data.subarray(i), 0);
      this.fill = n - i;
    }
    return this;
  }

  /** The 32-byte digest (the object is then finished). */
  digest(): Uint8Array {
    if (this.done) throw new Error("Sha256: digest twice");
    this.done = true;
    const bits = this.length * 8;
    const b = this.block;
    b[this.fill++] = 0x80;
    if (this.fill > 56) {
      b.fill(0, this.fill);
      this.compress(b, 0);
      this.fill = 0;
    }
    b.fill(0, this.fill, 56);
    const hi = Math.floor(bits / 2 ** 32);
    const lo = bits >>> 0;
    b[56] = hi >>> 24; b[57] = hi >>> 16; b[58] = hi >>> 8; b[59] = hi;
    b[60] = lo >>> 24; b[61] = lo >>> 16; b[62] = lo >>> 8; b[63] = lo;
    this.compress(b, 0);
    const out = new Uint8Array(32);
    for (let j = 0; j < 8; j++) {
      const v = this.h[j];
      out[4 * j] = v >>> 24; out[4 * j + 1] = v >>> 16; out[4 * j + 2] = v >>> 8; out[4 * j + 3] = v;
    }
    return out;
  }

  /** A copy of the running state. */
  clone(): Sha256 {
    const c = new Sha256();
    c.h.set(this.h);
    c.block.set(this.block);
    c.fill = this.fill;
    c.length = this.length;
    c.done = this.done;
    return c;
  }

  private compress(data: Uint8Array, off: number): void {
    const w = this.w;
    for (let t = 0; t < 16; t++) {
      const j = off + 4 * t;
      w[t] = (data[j] << 24) | (data[j + 1] << 16) | (data[j + 2] << 8) | data[j + 3];
    }
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15];
      const y = w[t - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    const h = this.h;
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + K[t] + w[t]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      hh = g; g = f; f = e; e = (d + t1) | 0;
      d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
}

/** SHA-256 of `data` (32 bytes). */
export function sha256(data: Uint8Array): Uint8Array {
  return new Sha256().update(data).digest();
}

/**
 * HMAC-SHA256 with a fixed key (RFC 2104): the key's inner and outer pads are hashed once, so each message costs
 * only its own blocks. A key longer than the 64-byte block is first hashed, as the RFC says.
 */
export class HmacSha256 {
  private readonly inner: Sha256;
  private readonly outer: Sha256;

  constructor(key: Uint8Array) {
    const k = new Uint8Array(64);
    k.set(key.length > 64 ? sha256(key) : key);
    const pad = new Uint8Array(64);
    for (let i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    this.inner = new Sha256().update(pad);
    for (let i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    this.outer = new Sha256().update(pad);
  }

  /** HMAC of the concatenation of `parts` (one message; parts saves copying a prefix and a counter together). */
  mac(...parts: Uint8Array[]): Uint8Array {
    const inner = this.inner.clone();
    for (const p of parts) inner.update(p);
    return this.outer.clone().update(inner.digest()).digest();
  }
}

/** HMAC-SHA256(key, message), 32 bytes. */
export function hmacSha256(key: Uint8Array, message: Uint8Array): Uint8Array {
  return new HmacSha256(key).mac(message);
}
