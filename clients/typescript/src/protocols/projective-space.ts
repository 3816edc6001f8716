/**
 * The projective space PG(t−1, q) as Projective Geometry Response uses it (`ldp/encoders/projective_space.py`;
 * Feldman, Nelson, Nguyen & Talwar, ICML 2022, §3).
 *
 * A point is a line through the origin of F_q^t (q prime), named by its canonical vector: the one whose first
 * nonzero coordinate is 1. There are P_t = (q^t − 1)/(q − 1) points (`points`), numbered by where the leading 1 sits,
 * rightmost first: a canonical vector whose leading 1 is at position ℓ has index P_{t−1−ℓ} plus its coordinates after
 * ℓ read as a base-q number, most significant first (index 0 is (0, …, 0, 1)).
 *
 * A point v is also the hyperplane S_v = {u : ⟨u, v⟩ = 0} of P_{t−1} points; `hyperplanePoint` numbers them by the
 * linear bijection F_q^{t−1} → v^⊥ that keeps every coordinate but v's leading one, i, and sets
 * u_i = −Σ_{j≠i} v_j·u_j.
 *
 * Integers stay exact as numbers: q ≤ `MAX_FIELD` < 2^16, so a product of two coordinates is below 2^32, and the
 * indices of a collectable layout are below 2^28.
 */

/** The largest field order q taken (`MAX_FIELD`): the largest prime below 2^16. */
export const MAX_FIELD = 65521;

/** P_m = (q^m − 1)/(q − 1), the points of PG(m−1, q) (0 for m = 0): exact while below 2^53. */
export function points(q: number, m: number): number {
  let p = 0;
  for (let i = 0; i < m; i++) p = p * q + 1;
  return p;
}

/** Whether `q` is prime (trial division; q ≤ `MAX_FIELD` here). */
export function isPrime(q: number): boolean {
  if (q < 2) return false;
  for (let k = 2; k * k <= q; k++) if (q % k === 0) return false;
  return true;
}

let primes: number[] | undefined;

/** The primes ≤ `limit` (at most `MAX_FIELD`), increasing: a prefix of one sieve of Eratosthenes, made once. */
export function primesUpTo(limit: number): number[] {
  if (primes === undefined) {
    const composite = new Uint8Array(MAX_FIELD + 1);
    primes = [];
    for (let i = 2; i <= MAX_FIELD; i++) {
      if (composite[i]) continue;
      primes.push(i);
      for (let j = i * i; j <= MAX_FIELD; j += i) composite[j] = 1;
    }
  }
  let n = 0;
  while (n < primes.length && primes[n] <= limit) n++;
  return primes.slice(0, n);
}

/** The canonical vector (t coordinates) of point `index` in [0, P_t). */
export function pointVector(index: number, q: number, t: number): number[] {
  let lead = t - 1, size = 1; // the leading 1's position; the points whose leading 1 sits there: q^(t−1−lead)
  while (index >= size) {
    index -= size;
    lead--;
    size *= q;
  }
  const vec = new Array<number>(t).fill(0);
  vec[lead] = 1;
  for (let j = t - 1; j > lead; j--) {
    vec[j] = index % q;
    index = (index - vec[j]) / q;
  }
  return vec;
}

/** The index of a canonical vector (its first nonzero coordinate 1). */
export function pointIndex(vec: readonly number[], q: number): number {
  const lead = vec.findIndex((c) => c !== 0);
  let rest = 0;
  for (let j = lead + 1; j < vec.length; j++) rest = rest * q + vec[j];
  return points(q, vec.length - 1 - lead) + rest;
}

/** The inverse of `a` (in [1, q)) modulo the prime `q` (the extended Euclidean algorithm: the one inverse that
 * Python's `pow(a, q − 2, q)` gives too). */
function inverse(a: number, q: number): number {
  let [r0, r1, s0, s1] = [q, a, 0, 1];
  while (r1 !== 0) {
    const k = Math.floor(r0 / r1);
    [r0, r1, s0, s1] = [r1, r0 - k * r1, s1, s0 - k * s1];
  }
  return s0 < 0 ? s0 + q : s0;
}

/** `vec` (nonzero, coordinates in [0, q)) divided by its first nonzero coordinate, in place; returned. */
export function canonical(vec: number[], q: number): number[] {
  const lead = vec.findIndex((c) => c !== 0);
  if (vec[lead] === 1) return vec;
  const inv = inverse(vec[lead], q);
  for (let j = lead; j < vec.length; j++) vec[j] = (vec[j] * inv) % q; // < 2^32: exact
  return vec;
}

/** The `r`-th point (r in [0, P_{t−1})) of the hyperplane S_v of the canonical vector `v`, as a canonical vector:
 * point r of PG(t−2, q) with a coordinate inserted at v's leading position i, set so that ⟨u, v⟩ = 0 mod q. */
export function hyperplanePoint(v: readonly number[], r: number, q: number): number[] {
  const t = v.length;
  const i = v.findIndex((c) => c !== 0); // v's leading 1
  const u = pointVector(r, q, t - 1);
  u.splice(i, 0, 0);
  let dot = 0; // v_j = 0 before i
  for (let j = i + 1; j < t; j++) dot = (dot + v[j] * u[j]) % q; // a product < 2^32, a sum < 2^33: exact
  u[i] = dot === 0 ? 0 : q - dot;
  return canonical(u, q);
}
