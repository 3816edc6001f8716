/**
 * `math.exp`, `math.log`, `math.log1p` and `math.expm1` as CPython computes them on the platforms the Python client
 * runs on (glibc), so that derived probabilities and costs are the same doubles in both clients.
 *
 * Why not `Math.exp`/`Math.log`: V8's are fdlibm ports, with errors up to about 1 ulp; glibc's `exp` and `log`
 * (since 2.28) are within about 0.502 ulp, i.e. nearly always correctly rounded. Measured on 200,000 random
 * arguments each (glibc 2.36, Node 20): `Math.exp` differs from Python's `math.exp` in 9.6% of them, `Math.log` in
 * 4.4%; the correctly rounded values below differ in none. A one-ulp difference matters where Python searches for
 * a probability by comparing a cost with ε (numeric.py's `q`, `p_in`): it can move the probability a step, and the
 * cost by tens of ulps. glibc's `log1p` and `expm1` are fdlibm's, like V8's `Math.log1p`/`Math.expm1`, and agree
 * with them (but for rare last-bit differences): those are used as they are.
 *
 * `exp` and `log` here are correctly rounded (round half to even on a 256-bit approximation): BigInt fixed-point
 * argument reduction and series. They cost microseconds: for parameters, not per report.
 */
import { decompose } from "./pytext.js";

const P = 256; // fractional bits of the fixed-point arithmetic
const ONE = 1n << BigInt(P);

/** ln 2 with P + 32 fractional bits, then rounded to P: ln 2 = Σ_{k>=1} 1/(k·2^k). */
const LN2: bigint = (() => {
  const extra = 32n;
  const one = 1n << (BigInt(P) + extra);
  let sum = 0n;
  for (let k = 1n; k < BigInt(P) + 64n; k++) sum += one / (k << k);
  return sum >> extra;
})();

/** Fixed-point multiply: a·b / 2^P, truncated toward zero (so a series of shrinking terms reaches 0). */
function mul(a: bigint, b: bigint): bigint {
  return (a * b) / ONE;
}

export { decompose }; // the exact value of a finite double (pytext.ts, a leaf, which needs it too)

/** x as a fixed-point BigInt (x·2^P, truncated toward zero). */
function toFixed(x: number): bigint {
  const [m, e] = decompose(x);
  const s = e + P;
  return s >= 0 ? m << BigInt(s) : m >> BigInt(-s); // `>>` floors; only used where the lost bits do not matter
}

function bitLength(n: bigint): number {
  return n.toString(2).length;
}

/** The double nearest to m·2^e (m a signed BigInt), half to even, with subnormals, underflow and overflow. */
export function nearestDouble(m: bigint, e: number): number {
  if (m === 0n) return 0;
  const neg = m < 0n;
  const a = neg ? -m : m;
  const top = bitLength(a) - 1 + e; // exponent of the leading bit
  if (top > 1023) return neg ? -Infinity : Infinity;
  const lsb = Math.max(top - 52, -1074); // exponent of the result's last bit
  const shift = lsb - e;
  let q: bigint;
  if (shift > 0) {
    q = a >> BigInt(shift);
    const rem = a - (q << BigInt(shift));
    const half = 1n << BigInt(shift - 1);
    if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  } else {
    q = a << BigInt(-shift);
  }
  const r = Number(q) * 2 ** lsb; // q <= 2^53 and 2^lsb exact: one rounding at most (overflow to Infinity)
  return neg ? -r : r;
}

/** e^r for a fixed-point |r| <= 1 (Taylor series), fixed point. */
function expSmall(r: bigint): bigint {
  let term = ONE, sum = ONE;
  for (let n = 1n; term !== 0n; n++) {
    term = mul(term, r) / n;
    sum += term;
  }
  return sum;
}

/** Python's `math.exp(x)` (correctly rounded). */
export function exp(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x === Infinity) return Infinity;
  if (x === -Infinity) return 0;
  if (x > 709.8) return Infinity;
  if (x < -745.2) return 0;
  if (Math.abs(x) < 2 ** -60) return 1 + x; // e^x = 1 + x + x²/2…: rounds as 1 + x does
  const fx = toFixed(x);
  // x = k·ln2 + r, |r| <= ln2/2
  let k = fx / LN2;
  let r = fx - k * LN2;
  if (r > LN2 / 2n) { r -= LN2; k += 1n; }
  else if (r < -LN2 / 2n) { r += LN2; k -= 1n; }
  return nearestDouble(expSmall(r), Number(k) - P);
}

/** ln(v) for a fixed-point v in [1/√2, √2]: 2·atanh((v−1)/(v+1)), fixed point. */
function logNear1(v: bigint): bigint {
  const s = ((v - ONE) << BigInt(P)) / (v + ONE);
  const s2 = mul(s, s);
  let power = s, sum = 0n;
  for (let k = 1n; power !== 0n; k += 2n) {
    sum += power / k;
    power = mul(power, s2);
  }
  return 2n * sum;
}

/** Integer square root (floor) of n >= 0. */
function isqrt(n: bigint): bigint {
  if (n < 2n) return n;
  let x = 1n << BigInt(Math.ceil(bitLength(n) / 2));
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

/** √2 in fixed point. */
const SQRT2_FIXED = isqrt(2n << BigInt(2 * P));

/** ln of m·2^e for a BigInt m > 0: e'·ln2 + ln(mantissa in [1/√2, √2)), fixed point. */
function logOf(m: bigint, e: number): bigint {
  const len = bitLength(m);
  // v = m / 2^(len-1), in [1, 2), as fixed point
  let v = len - 1 > P ? m >> BigInt(len - 1 - P) : m << BigInt(P - (len - 1));
  let k = len - 1 + e;
  if (v > SQRT2_FIXED) { v >>= 1n; k += 1; }
  return BigInt(k) * LN2 + logNear1(v);
}

/** Python's `math.log(x)` of a float (correctly rounded); `x <= 0` and NaN give NaN here (Python raises). */
export function log(x: number): number {
  if (Number.isNaN(x) || x < 0) return NaN;
  if (x === 0) return -Infinity;
  if (x === Infinity) return Infinity;
  if (x === 1) return 0;
  const [m, e] = decompose(x);
  return nearestDouble(logOf(m, e), -P);
}

/** Python's `math.log1p(x)`: glibc's is fdlibm's, as V8's `Math.log1p`. */
export function log1p(x: number): number {
  return Math.log1p(x);
}

/** Python's `math.expm1(x)`: glibc's is fdlibm's, as V8's `Math.expm1`. */
export function expm1(x: number): number {
  return Math.expm1(x);
}
