/**
 * Blocked Hadamard Response, client side (`ldp/encoders/hadamard_block.py`; Acharya, Sun & Zhang, AISTATS 2019, §5).
 *
 * The d values are dealt into B blocks: value x goes to block x mod B as row ⌊x/B⌋ + 1 of that block's b×b Sylvester
 * Hadamard matrix, b the smallest power of 2 above m = ⌈d/B⌉. A report is j in [0, K), K = B·b: with probability
 * γ = realized(2B/(2B + e^ε − 1)) uniform on [0, K), else uniform on the b/2 positions of x's block where x's row is
 * +1. ε* = ln(1 + 2B(1 − γ)/γ) of the realized γ, exactly; charged max(ε, ε*). `blocks` left out (null) is the
 * planner's `bestBlocks`, and the resolved value is part of the parameters (and their fingerprint).
 *
 * Draws: `B(γ)`, then `R(K)` if true; else `R(b)`, flipped at the lowest set bit of the row when the parity of
 * pos & row is odd (a bijection between the row's halves).
 */
import { decompose, expm1, log } from "../pymath.js";
import { RandomSource, realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, relation,
} from "../params/base.js";
import { HR_BLOCK_PARAMS } from "../params/tables.js";
import { DomainEncoder, ProtocolEntry, Report, checkLabels, withFrozenLabels } from "../encoders/base.js";
import { hrOrder } from "./hadamard-response.js";

/** `block_layout`: [m, b], the most values a block holds (⌈d/B⌉) and its Hadamard order (the power of 2 above). */
export function blockLayout(domainSize: number, blocks: number): [number, number] {
  const m = Math.ceil(domainSize / blocks); // exact: both below 2^53
  return [m, hrOrder(m)];
}

/** `uniform_share`: γ = 2B/(2B + e^ε − 1) before rounding, 0 past ε = 700. */
export function uniformShare(epsilon: number, blocks: number): number {
  return epsilon > 700.0 ? 0.0 : (2.0 * blocks) / (2.0 * blocks + expm1(epsilon));
}

/** `rare_variance`: per-user Var[ĉ_x]/n of a value nobody holds, γ/(B(1−γ)²) + (m−1)/((d−1)(1−γ)). */
export function rareVariance(gamma: number, blocks: number, domainSize: number): number {
  const [m] = blockLayout(domainSize, blocks);
  return gamma / (blocks * (1.0 - gamma) ** 2) + (m - 1) / ((domainSize - 1) * (1.0 - gamma));
}

/** `best_blocks`: the B in [1, d] of least `rareVariance` (the smallest on a near tie), among every B <= 2√d and
 * every ⌈d/m⌉ (only the smallest B of each m can win). */
export function bestBlocks(epsilon: number, domainSize: number): number {
  const d = domainSize;
  let isqrt = Math.floor(Math.sqrt(d));
  while (isqrt * isqrt > d) isqrt--;
  while ((isqrt + 1) * (isqrt + 1) <= d) isqrt++;
  const root = isqrt + 1;
  const candidates = new Set<number>();
  for (let b = 1; b <= Math.min(d, 2 * root); b++) candidates.add(b);
  for (let m = 1; m <= root; m++) candidates.add(Math.ceil(d / m));
  let best = 1, bestVar = Infinity;
  for (const blocks of [...candidates].sort((a, b) => a - b)) {
    const gamma = uniformShare(epsilon, blocks);
    if (!(gamma > 0.0 && gamma < 1.0)) continue;
    const v = rareVariance(gamma, blocks, d);
    if (v < bestVar * (1 - 1e-12)) {
      best = blocks;
      bestVar = v;
    }
  }
  return best;
}

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** ln(1 + 2B(1 − γ)/γ) as Python computes it: the ratio exactly in rationals, reduced, then log(numerator) −
 * log(denominator) of the two integers (each rounded to the nearest double, as Python's `math.log` of an int). */
function blockEpsilon(gamma: number, blocks: number): number {
  const [mant, e] = decompose(gamma); // γ = a/A exactly
  const a = e >= 0 ? mant << BigInt(e) : mant, A = e >= 0 ? 1n : 1n << BigInt(-e);
  // 1 + 2B(1 − a/A)/(a/A) = (a + 2B(A − a))/a
  let num = a + 2n * BigInt(blocks) * (A - a), den = a;
  const g = gcd(num, den);
  num /= g;
  den /= g;
  return log(Number(num)) - log(Number(den));
}

/** What resolves `blocks` when it is left out: the checks that precede it, then `bestBlocks` (Python's
 * `__post_init__` sets the field, so `toDict` and the fingerprint carry it). */
function resolveBlocks(values: ParamsDict): ParamsDict {
  if (values.blocks !== null && values.blocks !== undefined) return values;
  checkParams(values, HR_BLOCK_PARAMS, "epsilon", "domain_size");
  return { ...values, blocks: bestBlocks(values.epsilon as number, values.domain_size as number) };
}

/** Blocked Hadamard Response at `epsilon` over `domain_size` values in `blocks` blocks (null: `bestBlocks`),
 * optionally named by `labels` (Python's `HRBlockParams`). */
export class HRBlockParams extends ProtocolParams {
  static readonly className = "HRBlockParams";
  static readonly fields = HR_BLOCK_PARAMS;
  readonly protocol = "hr-block";
  readonly epsilon: number;
  /** B, resolved. */
  readonly blocks: number;
  /** γ, the realized probability of the uniform branch. */
  readonly gamma: number;
  readonly labels: readonly string[] | null;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(resolveBlocks(withFrozenLabels(values)));
    const v = this.values, d = v.domain_size as number;
    checkParams(v, HR_BLOCK_PARAMS, undefined, undefined, { blocks: () => d });
    this.epsilon = v.epsilon as number;
    this.blocks = v.blocks as number;
    this.gamma = realizedProbability(uniformShare(this.epsilon, this.blocks));
    if (this.gamma <= 0.0) {
      throw relation("epsilon_too_large", ["epsilon", "domain_size", "blocks"], `epsilon=${this.epsilon} is too large ` +
        `for hr-block with ${this.blocks} blocks: the uniform branch rounds to probability 0 at the client's resolution, ` +
        "so reports would not be private");
    }
    if (this.gamma >= 1.0) {
      throw relation("epsilon_too_small", ["epsilon", "domain_size", "blocks"], `epsilon=${this.epsilon} is too small ` +
        `for hr-block with ${this.blocks} blocks: the uniform branch rounds to probability 1, so reports would carry no ` +
        "information");
    }
    this.labels = checkLabels(this.values.labels, d);
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  override get domainSize(): number {
    return this.values.domain_size as number;
  }

  /** b, the Hadamard order of a block. */
  get blockOrder(): number {
    return blockLayout(this.domainSize, this.blocks)[1];
  }

  /** K = B·b: reports are j in [0, K). */
  get order(): number {
    return this.blocks * this.blockOrder;
  }

  /** ln(1 + 2B(1 − γ)/γ) of the realized γ, exactly. */
  get effectiveEpsilon(): number {
    return blockEpsilon(this.gamma, this.blocks);
  }

  /** max(epsilon, effectiveEpsilon). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: Math.max(this.epsilon, this.effectiveEpsilon), delta: 0.0 });
    return this.cost;
  }

  get aggregateCells(): number {
    return this.order;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) this.fields_ = Object.freeze([{ name: "j", kind: "uint", size: this.order }] as Field[]);
    return this.fields_;
  }

  /** The name of value `index`: its label, else the index. */
  labelOf(index: number): string {
    return this.labels !== null ? this.labels[index] : String(index);
  }
}

/** The parity of the set bits of a 32-bit unsigned integer. */
function parity(x: number): number {
  let v = x >>> 0;
  v ^= v >>> 16;
  v ^= v >>> 8;
  v ^= v >>> 4;
  v ^= v >>> 2;
  v ^= v >>> 1;
  return v & 1;
}

/** The reported j of value `index`. */
export function drawHRBlock(params: HRBlockParams, index: number, rng: RandomSource): number {
  if (rng.bernoulli(params.gamma)) return rng.randbelow(params.order);
  const blocks = params.blocks, b = params.blockOrder;
  const row = Math.floor(index / blocks) + 1;
  let pos = rng.randbelow(b);
  // pos < b <= K <= 2^28 (the aggregate limit) and row <= ⌈d/B⌉ < b: 32-bit integer operations are exact
  if (parity(pos & row)) pos = (pos ^ (row & -row)) >>> 0;
  return (index % blocks) * b + pos;
}

/** Client encoder for `HRBlockParams`; values are labels or indices in [0, d). */
export class HRBlockEncoder extends DomainEncoder<HRBlockParams> {
  randomize(prepared: number): Report {
    return this.report([["j", drawHRBlock(this.params, prepared, this.rng)]]);
  }
}

export const hrBlock: ProtocolEntry<HRBlockParams, number> = {
  name: "hr-block",
  Params: HRBlockParams,
  makeEncoder: (params, options) => new HRBlockEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
