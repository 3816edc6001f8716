/**
 * The Python text forms canonical JSON (and so every fingerprint) needs, byte for byte: `repr(float)`, the code point
 * order of `sorted(str)` and the JSON string escapes (`json.dumps(ensure_ascii=True)`); and the exact value of a
 * double (`decompose`, which `pymath.ts` uses too). A leaf module: it imports nothing, so that the error classes
 * (`errors.ts`) can use it without an import cycle (`test/structure.test.mjs` checks there is none).
 */
/** A number that is a Python `float`: canonical JSON writes it as one (`1` is written `1.0`); a refusal's `got`
 * names its kind `"float"`. */
export class PyFloat {
  constructor(readonly value: number) {}
}

// ---------------------------------------------------------------------------------------------------------------
// Decimal digits of doubles

/** The shortest round-trip decimal digits of a finite `x > 0` and the exponent of the first one: x ≈ d.ddd × 10^exp.
 * `Number.prototype.toExponential()` without an argument gives as many digits as needed to round-trip, and no more
 * (ECMA-262 Number::toString), as Python's `repr` (David Gay's shortest mode) does. */
function shortestDigits(x: number): { digits: string; exp: number } {
  const s = x.toExponential();
  const e = s.indexOf("e");
  return { digits: s.slice(0, e).replace(".", ""), exp: Number(s.slice(e + 1)) };
}

/** The exact value of a finite double as `[m, e]`, x = m·2^e with m a (signed) BigInt. */
export function decompose(x: number): [bigint, number] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0), lo = view.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let e: number;
  if (biased === 0) e = -1074; // subnormal
  else {
    m |= 1n << 52n;
    e = biased - 1075;
  }
  return [hi >>> 31 ? -m : m, e];
}

/** A decimal exponent as Python writes it: sign always, at least two digits (`e-05`, `e+16`, `e+308`). */
function expText(exp: number): string {
  return (exp < 0 ? "-" : "+") + String(Math.abs(exp)).padStart(2, "0");
}

/**
 * `repr(float(x))` exactly: `nan`, `inf`, `-inf`; else the shortest round-trip digits, laid out by Python's rule
 * (`format_float_short`, mode "r"): scientific when the decimal exponent is below -4 or at least 16 (`1e-05`,
 * `1.5e-07`, `1e+16`, `1.2345678901234568e+17`), else positional with at least one digit after the point (`1.0`,
 * `100.0`, `0.0001`, `123456789012345.6`); `-0.0` for negative zero.
 */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const { digits, exp } = shortestDigits(Math.abs(x));
  if (exp < -4 || exp >= 16) {
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${mant}e${expText(exp)}`;
  }
  const point = exp + 1; // digits before the decimal point
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}.0`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Canonical JSON

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, "0");
}

/** Code point order of two strings (Python's `str` order), not UTF-16 unit order: they differ when a surrogate
 * pair meets a unit in U+E000..U+FFFF. A lone surrogate counts as its own code point, as in Python. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const prev = i > 0 ? a.charCodeAt(i - 1) : 0; // the same in b
    if (prev >= 0xd800 && prev <= 0xdbff) {
      // unit i may complete a pair begun at i - 1: then the pair, or the lone high surrogate, is the code point
      const xPair = x >= 0xdc00 && x <= 0xdfff;
      const yPair = y >= 0xdc00 && y <= 0xdfff;
      if (xPair || yPair) {
        const cx = xPair ? 0x10000 + ((prev - 0xd800) << 10) + (x - 0xdc00) : prev;
        const cy = yPair ? 0x10000 + ((prev - 0xd800) << 10) + (y - 0xdc00) : prev;
        return cx - cy;
      }
    }
    // i starts a code point in both strings
    return (a.codePointAt(i) as number) - (b.codePointAt(i) as number);
  }
  return a.length - b.length;
}

/** A JSON string as Python's `json.dumps(..., ensure_ascii=True)` writes it: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`,
 * `\f`; every other unit below 0x20 or above 0x7e as `\u00xx` (lowercase hex), astral characters as their two
 * surrogates, lone surrogates as themselves (`py_encode_basestring_ascii`). */
export function pyJsonString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e) {
      out += c === 0x22 ? '\\"' : c === 0x5c ? "\\\\" : s[i];
      continue;
    }
    switch (c) {
      case 0x0a: out += "\\n"; break;
      case 0x0d: out += "\\r"; break;
      case 0x09: out += "\\t"; break;
      case 0x08: out += "\\b"; break;
      case 0x0c: out += "\\f"; break;
      default: out += "\\u" + hex(c, 4);
    }
  }
  return out + '"';
}
