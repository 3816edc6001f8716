/**
 * Unary encoding, client side (`ldp/encoders/unary.py`): symmetric (`sue`, basic one-time RAPPOR) and optimized
 * (`oue`) unary encoding (Wang, Blocki, Li, Jha, USENIX Security 2017).
 *
 * A value v of [0, d) is one-hot encoded as d bits, each reported independently: bit v is 1 with probability p, every
 * other bit with probability q. SUE: p = realized(σ(−ε/2)), q = realized(σ(ε/2)); OUE: p = 1/2, q = realized(σ(ε)).
 * The charge is max(ε, ε*) with ε* = ln(p(1−q)/((1−p)q)) computed exactly in rationals (`unaryEpsilon`).
 * Draws: `BB(q, d)` (the other bits; bit v cleared), then `B(p)` (bit v).
 *
 * `UnaryParams` (the domain, the labels, `checkUnary` and the `bits` schema) is shared with Hadamard Response and
 * Subset Selection, as in Python.
 */
import { Fraction, div, fraction, integer, logRatio, mul, sub } from "../rational.js";
import { RandomSource, realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, logisticTail, relation,
} from "../params/base.js";
import { OUE_PARAMS, SUE_PARAMS } from "../params/tables.js";
import { DomainEncoder, ProtocolEntry, Report, bitsString, checkLabels, withFrozenLabels } from "../encoders/base.js";

/**
 * `unary_epsilon(p, q)` = ln(p(1−q)/((1−p)q)): the worst log-ratio of a unary report whose own bit is 1 w.p. p,
 * the others w.p. q (doubles or exact fractions). As Python: the ratio exactly in rationals, reduced, then
 * `log(numerator) − log(denominator)` of the two integers (`logRatio`). Needs 0 < q and p < 1.
 */
export function unaryEpsilon(p: number | Fraction, q: number | Fraction): number {
  const fp = typeof p === "number" ? fraction(p) : p;
  const fq = typeof q === "number" ? fraction(q) : q;
  const one = integer(1);
  return logRatio(div(mul(fp, sub(one, fq)), mul(sub(one, fp), fq)));
}

/** `unary_draw`: the d report bits of `index` as a bigint: bit `index` Bernoulli(p), the others Bernoulli(q). */
export function unaryDraw(p: number, q: number, d: number, index: number, rng: RandomSource): bigint {
  const own = 1n << BigInt(index);
  const bits = rng.bernoulliBits(q, d) & ~own;
  return rng.bernoulli(p) ? bits | own : bits;
}

/**
 * What SUE, OUE, Hadamard Response and Subset Selection share (`UnaryParams` with `LabeledDomain`): `epsilon`,
 * `domain_size`, `labels`, the realized probabilities `p` (own bit) and `q` (every other bit), `checkUnary` and the
 * wire format `bits` (d bits). A leaf class's constructor checks its table (ε, the domain), then calls `checkUnary`,
 * then `checkCollectable`.
 */
export abstract class UnaryParams extends ProtocolParams {
  private labels_: readonly string[] | null = null;
  private unaryFields: readonly Field[] | undefined;
  private cost: PrivacyCost | undefined;

  constructor(values: ParamsDict) {
    super(withFrozenLabels(values));
  }

  /** Realized Pr[bit v = 1 | value v]. */
  abstract get p(): number;
  /** Realized Pr[bit u = 1 | value v], u ≠ v. */
  abstract get q(): number;

  get epsilon(): number {
    return this.values.epsilon as number;
  }

  override get domainSize(): number {
    return this.values.domain_size as number;
  }

  get labels(): readonly string[] | null {
    return this.labels_;
  }

  /** What p and q derive from: the `params` of an `epsilon_too_large`/`_small` refusal. */
  protected get unaryParams(): readonly string[] {
    return ["epsilon"];
  }

  /** `_check_unary` once the domain is checked: that p and q are realizable and informative (`what`: the ε named),
   * the labels. */
  protected checkUnary(what: string): void {
    const params = this.unaryParams;
    if (this.q <= 0.0 || this.p >= 1.0) {
      throw relation("epsilon_too_large", params, `${what} is too large for ${this.protocol}: a bit probability ` +
        "rounds to 0 or 1 at the client's resolution, so reports would not be private");
    }
    if (this.p <= this.q) {
      throw relation("epsilon_too_small", params, `${what} is too small for ${this.protocol}: p and q are equal at ` +
        "the client's resolution, so reports would carry no information");
    }
    this.labels_ = checkLabels(this.values.labels, this.domainSize);
  }

  /** The common checks of a leaf class, in Python's order: its table (ε, the domain), `checkUnary`,
   * `checkCollectable`. */
  protected checkAll(): void {
    checkParams(this.values, this.fieldSpecs);
    this.checkUnary(`epsilon=${this.epsilon}`);
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** The exact worst log-ratio of one report's realized law, ln(p(1−q)/((1−p)q)). */
  get effectiveEpsilon(): number {
    return unaryEpsilon(this.p, this.q);
  }

  /** max(epsilon, effectiveEpsilon). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: Math.max(this.epsilon, this.effectiveEpsilon), delta: 0.0 });
    return this.cost;
  }

  get aggregateCells(): number {
    return this.domainSize;
  }

  get schema(): readonly Field[] {
    if (this.unaryFields === undefined) {
      this.unaryFields = Object.freeze([{ name: "bits", kind: "bits", size: this.values.domain_size as number }] as Field[]);
    }
    return this.unaryFields;
  }

  /** The name of value `index`: its label, else the index. */
  labelOf(index: number): string {
    return this.labels !== null ? this.labels[index] : String(index);
  }
}

/** Symmetric unary encoding (basic one-time RAPPOR): every bit kept w.p. e^{ε/2}/(e^{ε/2}+1). */
export class SUEParams extends UnaryParams {
  static readonly className = "SUEParams";
  static readonly fields = SUE_PARAMS;
  readonly protocol = "sue";
  private p_: number | undefined;
  private q_: number | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkAll();
  }

  /** e^{ε/2}/(e^{ε/2}+1), as realized. */
  get p(): number {
    if (this.p_ === undefined) this.p_ = realizedProbability(logisticTail(-this.epsilon / 2));
    return this.p_;
  }

  /** 1/(e^{ε/2}+1), as realized. */
  get q(): number {
    if (this.q_ === undefined) this.q_ = realizedProbability(logisticTail(this.epsilon / 2));
    return this.q_;
  }
}

/** Optimized unary encoding: own bit 1 w.p. 1/2, every other bit w.p. 1/(e^ε+1). */
export class OUEParams extends UnaryParams {
  static readonly className = "OUEParams";
  static readonly fields = OUE_PARAMS;
  readonly protocol = "oue";
  private q_: number | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkAll();
  }

  /** 1/2 (exactly realized). */
  get p(): number {
    return 0.5;
  }

  /** 1/(e^ε+1), as realized. */
  get q(): number {
    if (this.q_ === undefined) this.q_ = realizedProbability(logisticTail(this.epsilon));
    return this.q_;
  }
}

/** Client encoder for `SUEParams` and `OUEParams`; values are labels or indices in [0, d). */
export class UnaryEncoder<P extends SUEParams | OUEParams = SUEParams | OUEParams> extends DomainEncoder<P> {
  /** The report's bits as a bigint (bit i = character i). */
  draw(prepared: number): bigint {
    const pr = this.params;
    return unaryDraw(pr.p, pr.q, pr.domainSize, prepared, this.rng);
  }

  randomize(prepared: number): Report {
    return this.report([["bits", bitsString(this.draw(prepared), this.params.domainSize)]]);
  }
}

export const sue: ProtocolEntry<SUEParams, number> = {
  name: "sue",
  Params: SUEParams,
  makeEncoder: (params, options) => new UnaryEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const oue: ProtocolEntry<OUEParams, number> = {
  name: "oue",
  Params: OUEParams,
  makeEncoder: (params, options) => new UnaryEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
