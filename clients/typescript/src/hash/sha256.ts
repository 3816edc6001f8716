/**
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), synchronous and dependency-free.
 *
 * The client cannot use WebCrypto's asynchronous `crypto.subtle`: memoized responses are drawn inside a synchronous
 * encode (`KeyedRandomSource`, docs/randomness.md "Keyed, deterministic randomness"), and a spec's fingerprint is
 * computed synchronously (`fingerprint`, `ldp/wire.py`).
 */

/**
 * The round constants and the initial state (FIPS 180-4 §4.2.2, §5.3.3): the first 32 bits of the fractional parts of
 * the cube roots of the first 64 primes, and of the square roots of the first 8. Computed here in doubles rather than
 * shipped as 72 literals: each lies at least 0.005·2^-32 from where its 32 bits would change, over a thousand times
 * what an engine's last-bit error in `Math.cbrt` could move it, so every engine gets the standard's table (the digest
 * tests would fail on any other).
 */
const K = new Uint32Array(64), INIT = new Uint32Array(8);
for (let n = 2, i = 0; i < 64; n++) {
  let prime = true;
  for (let d = 2; d * d <= n; d++) if (n % d === 0) prime = false;
  if (!prime) continue;
  if (i < 8) INIT[i] = (Math.sqrt(n) % 1) * 2 ** 32;
  K[i++] = (Math.cbrt(n) % 1) * 2 ** 32;
}

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
    const view = new DataView(b.buffer); // big-endian words
    view.setUint32(56, bits / 2 ** 32);
    view.setUint32(60, bits);
    this.compress(b, 0);
    const out = new DataView(new ArrayBuffer(32));
    this.h.forEach((v, j) => out.setUint32(4 * j, v));
    return new Uint8Array(out.buffer);
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
