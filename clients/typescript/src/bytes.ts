/**
 * Bytes: strict UTF-8, hex, concatenation, big-endian integers, and the bytes a value hashes as
 * (`ldp/hashing.py` `value_bytes` and `namespaced`; docs/hashing.md §1 and §5).
 */
import { pyTypeName } from "./pytext.js";
import { LdpTypeError, LdpValueError } from "./errors.js";

/** Python's `repr` of one lone surrogate (`'\ud800'`), as it appears in a `UnicodeEncodeError`. */
function surrogateRepr(unit: number): string {
  return `'\\u${unit.toString(16).padStart(4, "0")}'`;
}

/**
 * The UTF-8 encoding of `s`, strict: a lone surrogate (no UTF-8 form) is a `LdpValueError` with Python's text,
 * `value is not encodable as UTF-8: 'utf-8' codec can't encode character '\ud800' in position 1: surrogates not
 * allowed` (`value_bytes`). Positions count code points, as Python's `str` does; a run of lone surrogates is one
 * error (`characters in position 1-2`), as CPython's encoder reports it. (A JS string cannot hold a Python string
 * with a *paired* surrogate sequence: JS reads a well-formed pair as one astral character.)
 */
export function utf8Encode(s: string): Uint8Array {
  const out: number[] = [];
  let position = 0; // code point index
  for (let i = 0; i < s.length; i++, position++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : -1;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else {
        // a run of lone surrogates: the next units that are surrogates and do not start a well-formed pair
        let end = position + 1;
        let j = i + 1;
        while (j < s.length) {
          const u = s.charCodeAt(j);
          if (u < 0xd800 || u > 0xdfff) break;
          const after = j + 1 < s.length ? s.charCodeAt(j + 1) : -1;
          if (u <= 0xdbff && after >= 0xdc00 && after <= 0xdfff) break;
          j++;
          end++;
        }
        const what = end - position === 1
          ? `character ${surrogateRepr(c)} in position ${position}`
          : `characters in position ${position}-${end - 1}`;
        throw new LdpValueError(`value is not encodable as UTF-8: 'utf-8' codec can't encode ${what}: surrogates not allowed`);
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
    throw new LdpValueError(`not an even-length hex string: ${JSON.stringify(hex.length > 40 ? hex.slice(0, 40) + "…" : hex)}`);
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
    throw new LdpValueError(`a uint32 must be an int in [0, 2**32), got ${n}`);
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
  throw new LdpTypeError(`values to hash must be str or bytes (or bytearray), got ${pyTypeName(value)}`);
}

/**
 * `uint32_BE(namespace) || value_bytes(value)`: the bytes hashed within a namespace (RAPPOR's cohort; docs/hashing.md
 * §5). `namespaced(3, "foo")` is `00 00 00 03 66 6f 6f`. Python's checks and texts for the namespace.
 */
export function namespaced(namespace: number, value: HashValue): Uint8Array {
  if (typeof namespace !== "number" || !Number.isInteger(namespace)) {
    throw new LdpTypeError(`namespace must be an int, got ${pyTypeName(namespace)}`);
  }
  if (!(namespace >= 0 && namespace <= 0xffffffff)) {
    throw new LdpValueError(`namespace must be in [0, 2**32), got ${namespace}`);
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
  if (value < 0n || value >> BigInt(8 * n) !== 0n) throw new LdpValueError("int too big to convert");
  const out = new Uint8Array(n);
  const hex = value.toString(16).padStart(2 * n, "0");
  for (let i = 0; i < n; i++) out[i] = parseInt(hex.slice(2 * (n - 1 - i), 2 * (n - i)), 16);
  return out;
}
