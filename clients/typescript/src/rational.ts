/**
 * Exact rationals (Python's `fractions.Fraction`), for the realized ε of probabilities that compose (unary
 * encoding's ε*, the longitudinal protocols' two rounds): a fraction is `[numerator, denominator]` of bigints with a
 * positive denominator, not necessarily reduced. Only for parameters, never per report.
 */
import { decompose, log, nearestDouble } from "./pymath.js";

/** `[num, den]`, den > 0. */
export type Fraction = readonly [bigint, bigint];

/** The exact value of a finite double (`Fraction(x)`; the denominator a power of two). */
export function fraction(x: number): Fraction {
  const [m, e] = decompose(x);
  return e >= 0 ? [m << BigInt(e), 1n] : [m, 1n << BigInt(-e)];
}

/** `Fraction(n)` of an integer. */
export function integer(n: number | bigint): Fraction {
  return [BigInt(n), 1n];
}

export function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a;
  if (b < 0n) b = -b;
  while (b) [a, b] = [b, a % b];
  return a;
}

/** In lowest terms, the denominator positive (how `Fraction` keeps it). */
export function reduce([n, d]: Fraction): Fraction {
  if (d < 0n) [n, d] = [-n, -d];
  const g = gcd(n, d);
  return g > 1n ? [n / g, d / g] : [n, d];
}

export function add(a: Fraction, b: Fraction): Fraction {
  return [a[0] * b[1] + b[0] * a[1], a[1] * b[1]];
}

export function sub(a: Fraction, b: Fraction): Fraction {
  return [a[0] * b[1] - b[0] * a[1], a[1] * b[1]];
}

export function mul(a: Fraction, b: Fraction): Fraction {
  return [a[0] * b[0], a[1] * b[1]];
}

/** a/b (b non-zero). */
export function div(a: Fraction, b: Fraction): Fraction {
  return b[0] < 0n ? [-a[0] * b[1], a[1] * -b[0]] : [a[0] * b[1], a[1] * b[0]];
}

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** `float(Fraction)`: the nearest double, half to even (a quotient of at least 56 bits with a sticky bit, rounded
 * once by `nearestDouble`). */
export function toFloat(f: Fraction): number {
  const [n, d] = reduce(f);
  if (n === 0n) return 0;
  const a = n < 0n ? -n : n;
  const shift = Math.max(0, 56 - (bitLength(a) - bitLength(d)));
  const scaled = a << BigInt(shift);
  const q = scaled / d;
  const sticky = scaled - q * d === 0n ? 0n : 1n;
  const v = nearestDouble((q << 1n) | sticky, -shift - 1);
  return n < 0n ? -v : v;
}

/** `math.log(r.numerator) - math.log(r.denominator)` of the reduced fraction: how the Python client takes the log
 * of an exact ratio (each integer converted to the nearest double, as `math.log` of an int below 2^1024 does). */
export function logRatio(f: Fraction): number {
  const [n, d] = reduce(f);
  return log(Number(n)) - log(Number(d));
}

/** `math.fsum` of finite doubles: their exact sum, correctly rounded to the nearest double. */
export function fsum(xs: Iterable<number>): number {
  let acc: Fraction = [0n, 1n];
  for (const x of xs) acc = add(acc, fraction(x));
  return toFloat(acc);
}
