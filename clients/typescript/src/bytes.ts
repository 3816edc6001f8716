/**
 * Bytes: strict UTF-8, hex, concatenation, big-endian integers, and the bytes a value hashes as
 * (`ldp/hashing.py` `value_bytes` and `namespaced`; docs/hashing.md §1 and §5).
 */
import { LdpTypeError, LdpValueError, kindOf } from "./errors.js";

/**
 * The UTF-8 encoding of `s`, strict: a lone surrogate (no UTF-8 form) is an `LdpValueError` with code
 * `not_encodable` (`value_bytes`). (A JS string cannot hold a Python string with a *paired* surrogate sequence: JS
 * reads a well-formed pair as one astral character.)
 */
export function utf8Encode(s: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : -1;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else {
        throw new LdpValueError("not_encodable", { encoding: "utf-8" },
          `value is not encodable as UTF-8: it holds a lone surrogate (\\u${c.toString(16)}) at index ${i}`);
      }
    }
    if (c < 0x80) {
      out.push(c);
    } else if (c < 0x800) {
      out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    } else {
      out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    }
  }
  return Uint8Array.from(out);
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Lowercase hex of `bytes` (Python's `bytes.hex()`). */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]];
  return s;
}

/** The bytes of an even-length hex string (either case; Python's `bytes.fromhex` without spaces). */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new RangeError(`not an even-length hex string: ${JSON.stringify(hex.length > 40 ? hex.slice(0, 40) + "…" : hex)}`);
  }
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** The concatenation of byte arrays. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Whether two byte arrays are equal. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Four bytes, most significant first: `n.to_bytes(4, "big")` for an integer `0 <= n < 2^32`. */
export function uint32BE(n: number): Uint8Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
    throw new RangeError(`a uint32 must be an integer in [0, 2**32), got ${n}`);
  }
  return Uint8Array.of((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

/** A value the hash family hashes: a string (UTF-8) or bytes (docs/hashing.md §1). */
export type HashValue = string | Uint8Array;

/**
 * The bytes hashed for `value` (`value_bytes`): a string's strict UTF-8 encoding, a `Uint8Array` itself (a copy is
 * not made: do not mutate it while hashing), anything else a `LdpTypeError` with Python's text.
 */
export function valueBytes(value: unknown): Uint8Array {
  if (typeof value === "string") return utf8Encode(value);
  if (value instanceof Uint8Array) return value;
  throw new LdpTypeError("value_type", { expected: "string_or_bytes", got: kindOf(value) },
    `values to hash must be strings or Uint8Array, got ${kindOf(value)}`);
}

/**
 * `uint32_BE(namespace) || value_bytes(value)`: the bytes hashed within a namespace (RAPPOR's cohort; docs/hashing.md
 * §5). `namespaced(3, "foo")` is `00 00 00 03 66 6f 6f`. Python's checks and texts for the namespace.
 */
export function namespaced(namespace: number, value: HashValue): Uint8Array {
  if (typeof namespace !== "number" || !Number.isInteger(namespace)) {
    throw new LdpTypeError("param_type", { param: "namespace", expected: "int", got: kindOf(namespace) });
  }
  if (!(namespace >= 0 && namespace <= 0xffffffff)) {
    throw new LdpValueError("param_range", { param: "namespace", got: namespace, min: 0, max: 0xffffffff });
  }
  return concatBytes(uint32BE(namespace), valueBytes(value));
}

/** The little-endian integer of `bytes` (`int.from_bytes(b, "little")`). */
export function bytesToBigIntLE(bytes: Uint8Array): bigint {
  const n = bytes.length;
  if (n <= 6) {
    let v = 0;
    for (let i = n - 1; i >= 0; i--) v = v * 256 + bytes[i];
    return BigInt(v);
  }
  if (n <= 16) {
    // 32-bit words, most significant first (cheaper than a hex string for the common 64-bit draws)
    let v = 0n;
    let i = n;
    const head = n & 3;
    if (head) {
      let w = 0;
      for (let j = n - 1; j >= n - head; j--) w = w * 256 + bytes[j];
      v = BigInt(w);
      i -= head;
    }
    for (; i > 0; i -= 4) {
      const w = ((bytes[i - 1] << 24) | (bytes[i - 2] << 16) | (bytes[i - 3] << 8) | bytes[i - 4]) >>> 0;
      v = (v << 32n) | BigInt(w);
    }
    return v;
  }
  let hex = "";
  for (let i = n - 1; i >= 0; i--) hex += HEX[bytes[i]];
  return BigInt("0x" + hex);
}

/** The `n` little-endian bytes of `value` (`value.to_bytes(n, "little")`; `value` must fit). */
export function bigIntToBytesLE(value: bigint, n: number): Uint8Array {
  if (value < 0n || value >> BigInt(8 * n) !== 0n) throw new RangeError("int too big to convert");
  const out = new Uint8Array(n);
  const hex = value.toString(16).padStart(2 * n, "0");
  for (let i = 0; i < n; i++) out[i] = parseInt(hex.slice(2 * (n - 1 - i), 2 * (n - i)), 16);
  return out;
}
