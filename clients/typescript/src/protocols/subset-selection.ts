/**
 * Subset Selection, client side (`ldp/encoders/subset_selection.py`; Ye & Barg 2018, Wang et al. 2016).
 *
 * With ω = max(1, floor(d·σ(ε) + 1/2)), a user of value v reports a subset S of ω values (a `bits` field of length
 * d): with probability p = realized(σ(ln((d − ω)/ω) − ε)) it holds v and ω − 1 of the d − 1 others, else ω of the
 * others, each drawn uniformly by Floyd's algorithm (one exact `randbelow` per element). ε* = ln(p(d−ω)/((1−p)ω)),
 * charged max(ε, ε*).
 *
 * Draws: `B(p)`, then `R(d−ω+o)`, `R(d−ω+o+1)`, …, `R(d−1)`, with o = 1 if `B(p)` was true.
 */
import { log, log1p } from "../pymath.js";
import { RandomSource, realizedProbability } from "../random.js";
import { ParamsDict, logisticTail } from "../params/base.js";
import { DomainEncoder, ProtocolEntry, Report } from "../encoders/base.js";
import { SS_PARAMS } from "../params/tables.js";
import { UnaryParams } from "./unary.js";

/** `subset_size`: ω = max(1, floor(d/(e^ε+1) + 1/2)), the subset size minimizing the variance, rounded half up. */
export function subsetSize(epsilon: number, domainSize: number): number {
  return Math.max(1, Math.floor(domainSize * logisticTail(epsilon) + 0.5));
}

/**
 * `floyd_subset`: a uniform k-subset of [0, n) by Floyd's algorithm (`k` exact `randbelow`: R(n−k+1), …, R(n)), as a
 * byte per element (1: in the subset). Python returns the same set as an int bit mask.
 */
export function floydSubset(n: number, k: number, rng: RandomSource): Uint8Array {
  const chosen = new Uint8Array(n);
  for (let j = n - k; j < n; j++) {
    const t = rng.randbelow(j + 1);
    chosen[chosen[t] ? j : t] = 1;
  }
  return chosen;
}

/** Subset Selection at `epsilon` over `domain_size` values (optionally named by `labels`). */
export class SSParams extends UnaryParams {
  protected override get unaryParams(): readonly string[] {
    return ["epsilon", "domain_size"];
  }

  static readonly className = "SSParams";
  static readonly fields = SS_PARAMS;
  readonly protocol = "ss";
  private omega_: number | undefined;
  private p_: number | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkAll();
  }

  /** ω, the size of every reported subset (`subsetSize`). */
  get omega(): number {
    if (this.omega_ === undefined) this.omega_ = subsetSize(this.epsilon, this.domainSize);
    return this.omega_;
  }

  /** Pr[v ∈ S | v] = ωe^ε/(ωe^ε + d − ω), as realized. */
  get p(): number {
    if (this.p_ === undefined) {
      const w = this.omega, d = this.domainSize;
      this.p_ = realizedProbability(logisticTail(log((d - w) / w) - this.epsilon));
    }
    return this.p_;
  }

  /** Pr[u ∈ S | v ≠ u] = (ω − p)/(d − 1). */
  get q(): number {
    return (this.omega - this.p) / (this.domainSize - 1);
  }

  /** ln(p(d−ω)/((1−p)ω)) of the realized p. */
  override get effectiveEpsilon(): number {
    const w = this.omega, p = this.p;
    return log(p) - log1p(-p) + log((this.domainSize - w) / w);
  }
}

const ZERO = 48, ONE = 49; // '0', '1'

/** Client encoder for `SSParams`; values are labels or indices in [0, d). */
export class SSEncoder extends DomainEncoder<SSParams> {
  /** The report's subset as one byte per value (1: in S). */
  draw(prepared: number): Uint8Array {
    const pr = this.params, rng = this.rng, v = prepared, d = pr.domainSize;
    const own = rng.bernoulli(pr.p);
    const others = floydSubset(d - 1, pr.omega - (own ? 1 : 0), rng); // over the d − 1 others, v removed
    const mask = new Uint8Array(d); // the others around the value: index i < v stays, i >= v moves to i + 1
    mask.set(others.subarray(0, v), 0);
    mask.set(others.subarray(v), v + 1);
    mask[v] = own ? 1 : 0;
    return mask;
  }

  randomize(prepared: number): Report {
    const mask = this.draw(prepared);
    const chars = new Uint8Array(mask.length);
    for (let i = 0; i < mask.length; i++) chars[i] = mask[i] ? ONE : ZERO;
    return this.report([["bits", new TextDecoder().decode(chars)]]);
  }
}

export const ss: ProtocolEntry<SSParams, number> = {
  name: "ss",
  Params: SSParams,
  makeEncoder: (params, options) => new SSEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
