/**
 * Python's text forms, byte for byte: `repr(float)`, `format(x, ".Ng")`, `repr(str)`, `type(v).__name__`, and the
 * JSON string escapes (`json.dumps(ensure_ascii=True)`), and the exact value of a double (`decompose`, which
 * `pymath.ts` uses too). A leaf module: it imports nothing, so that the error
 * classes (`errors.ts`) and the byte helpers (`bytes.ts`) can use it without an import cycle
 * (`test/structure.test.mjs` checks there is none).
 */
/** A number that is a Python `float`: canonical JSON and `pyTypeName` treat it as one (`1` is written `1.0`). */
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

/** The exact decimal expansion of a finite `x > 0`: all its digits (no leading zero) and the exponent of the first. */
function exactDigits(x: number): { digits: string; exp: number } {
  const [mant, e2] = decompose(x);
  let digits: string;
  let scale: number; // x = digits × 10^scale
  if (e2 >= 0) {
    digits = (mant << BigInt(e2)).toString();
    scale = 0;
  } else {
    digits = (mant * 5n ** BigInt(-e2)).toString(); // m·2^e = m·5^-e / 10^-e
    scale = e2;
  }
  const trimmed = digits.replace(/0+$/, "");
  return { digits: trimmed, exp: digits.length - 1 + scale };
}

/** `digits` rounded to `n >= 1` significant digits, half to even on the exact value (as CPython's `format`). */
function roundDigits(digits: string, exp: number, n: number): { digits: string; exp: number } {
  if (digits.length <= n) return { digits: digits.padEnd(n, "0"), exp };
  let head = digits.slice(0, n);
  const rest = digits.slice(n);
  const first = rest.charCodeAt(0) - 48;
  const tail = /[1-9]/.test(rest.slice(1));
  const roundUp = first > 5 || (first === 5 && (tail || (head.charCodeAt(n - 1) - 48) % 2 === 1));
  if (roundUp) {
    const bumped = (BigInt(head) + 1n).toString();
    if (bumped.length > n) return { digits: bumped.slice(0, n), exp: exp + 1 };
    head = bumped;
  }
  return { digits: head, exp };
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

/**
 * Python's `format(x, f".{precision}g")` (as in `f"{eps:.6g}"`): `precision` significant digits (0 counts as 1),
 * rounded half to even on the exact binary value; positional when the exponent is in [-4, precision), else
 * scientific; trailing zeros and a trailing point removed; `nan`, `inf`, `-inf`, `-0` as Python writes them.
 */
export function pyFormatG(x: number, precision = 6): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  const p = Math.max(1, Math.floor(precision));
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const sign = x < 0 ? "-" : "";
  const exact = exactDigits(Math.abs(x));
  const { digits, exp } = roundDigits(exact.digits, exact.exp, p);
  const strip = (s: string): string => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
  if (exp >= -4 && exp < p) {
    let s: string;
    if (exp < 0) s = `0.${"0".repeat(-exp - 1)}${digits}`;
    else s = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
    return sign + strip(s);
  }
  return `${sign}${strip(`${digits[0]}.${digits.slice(1)}`)}e${expText(exp)}`;
}

// ---------------------------------------------------------------------------------------------------------------
// repr(str) and type names

/**
 * The characters Python's `str.isprintable()` rejects: general categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs (except
 * the ASCII space, handled before). Approximation: the categories come from the JS engine's Unicode tables
 * (`\p{…}`), whose version differs from the Python server's `unicodedata` (Python 3.11 has Unicode 14.0, Node 20
 * has 15.1 or later): a character assigned in a later Unicode version is printable here and escaped (`Cn`) by an
 * older Python. Every other character is classified exactly.
 */
const NOT_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, "0");
}

/**
 * Python's `repr(s)` of a string: quoted with `'`, or with `"` when `s` has a `'` and no `"`; the quote used and
 * `\` escaped with a backslash; `\t`, `\n`, `\r`; other ASCII controls and DEL as `\xNN`; non-ASCII characters as
 * themselves when printable (see `NOT_PRINTABLE`), else `\xNN`, `\uNNNN` or `\UNNNNNNNN` (lone surrogates too).
 */
export function pyRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + hex(c, 2);
    else if (c < 0x7f) out += ch;
    else if (!NOT_PRINTABLE.test(ch)) out += ch;
    else if (c <= 0xff) out += "\\x" + hex(c, 2);
    else if (c <= 0xffff) out += "\\u" + hex(c, 4);
    else out += "\\U" + hex(c, 8);
  }
  return out + quote;
}

/**
 * `type(v).__name__` of the Python value a JS value stands for: string `str`, boolean `bool`, null/undefined
 * `NoneType`, an integral number up to 2^53 or a bigint `int`, another number or a `PyFloat` `float`, an array `list`, a
 * `Uint8Array` `bytes`, a plain object `dict`; other objects their constructor's name.
 */
export function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return "NoneType";
  switch (typeof v) {
    case "string": return "str";
    case "boolean": return "bool";
    case "bigint": return "int";
    case "number": return Number.isInteger(v) && Math.abs(v) <= 2 ** 53 ? "int" : "float"; // a JSON 1e300 is a float
    case "function": return "function";
    case "symbol": return "symbol";
    default: break;
  }
  if (v instanceof PyFloat) return "float";
  if (Array.isArray(v)) return "list";
  if (v instanceof Uint8Array) return "bytes";
  const proto = Object.getPrototypeOf(v) as { constructor?: { name?: string } } | null;
  if (proto === null || proto === Object.prototype) return "dict";
  return proto.constructor?.name || "object";
}

/**
 * Python's `repr` of a scalar argument in an error text (`{k!r}`): an integral number or bigint as digits, another
 * number (or `PyFloat`) as `repr(float)`, a string by `pyRepr`, `True`/`False`/`None`; anything else by its type.
 */
export function pyReprArg(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return Number.isInteger(v) && Math.abs(v) <= 2 ** 53 ? String(v) : pyFloatRepr(v);
  if (typeof v === "string") return pyRepr(v);
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  return `<${pyTypeName(v)} object>`;
}

// ---------------------------------------------------------------------------------------------------------------
// Canonical JSON

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
