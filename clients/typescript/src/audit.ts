/**
 * The exact privacy audit (`ldp/privacy/audit.py`): run an encoder's real code with a source that enumerates every
 * outcome of every primitive draw (depth first, replaying a prefix of choices), weigh each path by its exact
 * rational probability — Bernoulli draws with the probability the client really uses, floor(p·2^64)/2^64 — and
 * compare the worst likelihood ratio over the outputs, `max_o ln(max_x Pr[o|x] / min_x Pr[o|x])`, with the ε claimed.
 * No sampling error. Only small configurations are enumerable.
 */
import { RandomSource, bernoulliThreshold } from "./random.js";

export class AuditError extends Error {
  override name = "AuditError";
}

/** An exact probability as a fraction of bigints. */
interface Rational {
  num: bigint;
  den: bigint;
}

const ONE: Rational = { num: 1n, den: 1n };
const TWO64 = 1n << 64n;

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a < 0n ? -a : a;
}

function reduce(r: Rational): Rational {
  const g = gcd(r.num, r.den);
  return g > 1n ? { num: r.num / g, den: r.den / g } : r;
}

function mul(a: Rational, b: Rational): Rational {
  return reduce({ num: a.num * b.num, den: a.den * b.den });
}

function add(a: Rational, b: Rational): Rational {
  return reduce({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
}

function cmp(a: Rational, b: Rational): number {
  const l = a.num * b.den, r = b.num * a.den;
  return l < r ? -1 : l > r ? 1 : 0;
}

/** ln(x) of a positive bigint, to double precision. */
function lnBig(x: bigint): number {
  const bits = x.toString(2).length;
  const shift = Math.max(0, bits - 60);
  return Math.log(Number(x >> BigInt(shift))) + shift * Math.LN2;
}

function popcount(x: number): number {
  let c = 0;
  for (; x; x &= x - 1) c++;
  return c;
}

/** Follows a prefix of choices, then the first branch of each new choice, recording the arities. */
class EnumeratingSource extends RandomSource {
  readonly arities: number[] = [];
  prob: Rational = ONE;

  constructor(readonly choices: number[]) {
    super();
  }

  private choose(weights: Rational[]): number {
    const depth = this.arities.length;
    if (depth === this.choices.length) this.choices.push(0);
    this.arities.push(weights.length);
    const c = this.choices[depth];
    this.prob = mul(this.prob, weights[c]);
    return c;
  }

  randbits(_k: number): bigint {
    throw new AuditError("encoders must draw through bernoulli/bernoulliBits/randbelow, not randbits");
  }

  override tokenBytes(_n: number): Uint8Array {
    throw new AuditError("tokenBytes (secrets) cannot be enumerated; audit with a fixed secret");
  }

  override bernoulli(p: number): boolean {
    const t = bernoulliThreshold(p);
    return this.choose([{ num: TWO64 - t, den: TWO64 }, { num: t, den: TWO64 }]) === 1;
  }

  override bernoulliBits(p: number, k: number): bigint {
    if (k > 20) throw new AuditError(`bernoulliBits with k=${k} has too many outcomes to enumerate`);
    const t = bernoulliThreshold(p);
    const den = TWO64 ** BigInt(k);
    const weights: Rational[] = [];
    for (let m = 0; m < 1 << k; m++) {
      const j = popcount(m);
      weights.push({ num: t ** BigInt(j) * (TWO64 - t) ** BigInt(k - j), den });
    }
    return BigInt(this.choose(weights));
  }

  override randbelow(n: number): number {
    if (n > 1 << 20) throw new AuditError(`randbelow(${n}) has too many outcomes to enumerate`);
    return this.choose(Array.from({ length: n }, () => ({ num: 1n, den: BigInt(n) })));
  }
}

/** The exact distribution of `run(source)` over all of its random paths, by output. */
export function outputDistribution(run: (source: RandomSource) => string, maxPaths = 1 << 20): Map<string, Rational> {
  const dist = new Map<string, Rational>();
  let prefix: number[] = [];
  for (let i = 0; ; i++) {
    if (i >= maxPaths) throw new AuditError(`more than ${maxPaths} random paths`);
    const src = new EnumeratingSource(prefix);
    const out = run(src);
    if (src.prob.num !== 0n) dist.set(out, add(dist.get(out) ?? { num: 0n, den: 1n }, src.prob));
    prefix = src.choices.slice(0, src.arities.length);
    while (prefix.length && prefix[prefix.length - 1] + 1 >= src.arities[prefix.length - 1]) prefix.pop();
    if (!prefix.length) break;
    prefix[prefix.length - 1] += 1;
  }
  let total: Rational = { num: 0n, den: 1n };
  for (const p of dist.values()) total = add(total, p);
  if (cmp(total, ONE) !== 0) throw new AuditError("path probabilities do not sum to 1 (the draws are not enumerable)");
  return dist;
}

/** What an audit found: the worst ε, where it is attained, and the number of distinct outputs. */
export interface AuditResult {
  readonly epsilon: number;
  readonly worstOutput: string;
  readonly worstInputs: readonly [unknown, unknown];
  readonly outputs: number;
}

/** Audit a mechanism `run(input, source) -> output` over `inputs` (at least two). */
export function audit(inputs: readonly unknown[], run: (x: unknown, source: RandomSource) => string,
  maxPaths = 1 << 20): AuditResult {
  if (inputs.length < 2) throw new Error("an audit needs at least two inputs");
  const dists = inputs.map((x) => outputDistribution((src) => run(x, src), maxPaths));
  const outputs = new Set<string>();
  for (const d of dists) for (const o of d.keys()) outputs.add(o);
  let worst = { eps: -1, out: "", hi: 0, lo: 0 };
  const zero: Rational = { num: 0n, den: 1n };
  for (const o of outputs) {
    let hi = 0, lo = 0;
    for (let i = 1; i < inputs.length; i++) {
      if (cmp(dists[i].get(o) ?? zero, dists[hi].get(o) ?? zero) > 0) hi = i;
      if (cmp(dists[i].get(o) ?? zero, dists[lo].get(o) ?? zero) < 0) lo = i;
    }
    const a = dists[hi].get(o) ?? zero, b = dists[lo].get(o) ?? zero;
    const eps = b.num === 0n ? Infinity : lnBig(a.num * b.den) - lnBig(b.num * a.den);
    if (eps > worst.eps) worst = { eps, out: o, hi, lo };
  }
  return { epsilon: worst.eps, worstOutput: worst.out, worstInputs: [inputs[worst.hi], inputs[worst.lo]], outputs: outputs.size };
}

/** Whether an audited ε equals the claimed one (relative tolerance 1e-9, as Python's `AuditResult.matches`). */
export function matches(audited: number, claimed: number, relTol = 1e-9): boolean {
  if (!Number.isFinite(audited) || !Number.isFinite(claimed)) return audited === claimed;
  return Math.abs(audited - claimed) <= Math.max(relTol * Math.max(Math.abs(audited), Math.abs(claimed)), 1e-12);
}
