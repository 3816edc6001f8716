/**
 * Randomized response, client side (`ldp/encoders/randomized_response.py`): binary RR (`rr`, Python's
 * `BinaryRRParams`/`BinaryRREncoder`, kept in `binary-rr.ts` and re-exported here) and generalized (k-ary) RR
 * (`grr`).
 *
 * - rr: a true bit x is reported as 1 with probability q if x = 1 and p if x = 0 (0 < p < q < 1);
 *   ε = max(ln(q/p), ln((1−p)/(1−q))) of the realized p and q. Draws: `B(q)` for a 1, `B(p)` for a 0.
 * - grr: a value of [0, d) is kept with p = realized(1/(1 + (d − 1)·e^−ε)), else a uniform other value is reported;
 *   ε* = ln(p(d − 1)/(1 − p)), charged max(ε, ε*). Draws: `B(p)`, then `R(d − 1)` if false.
 *
 * The two live in separate modules so that a page with only `grr` does not ship `rr`: a class's static fields are
 * assignments after it once compiled to ES2020, which a bundler keeps (with the class) unless the whole module goes.
 */
import { exp, log } from "../pymath.js";
import { RandomSource, realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, relation,
} from "../params/base.js";
import { GRR_PARAMS } from "../params/tables.js";
import { DomainEncoder, ProtocolEntry, Report, checkLabels, withFrozenLabels } from "../encoders/base.js";

export { BinaryRREncoder, BinaryRRParams, rr } from "./binary-rr.js";

/** Generalized randomized response over `domain_size` values, optionally named by `labels`. */
export class GRRParams extends ProtocolParams {
  static readonly className = "GRRParams";
  static readonly fields = GRR_PARAMS;
  readonly protocol = "grr";
  readonly epsilon: number;
  readonly labels: readonly string[] | null;
  /** Probability of reporting the true value, e^ε/(e^ε+d−1), as the client realizes it. */
  readonly p: number;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(withFrozenLabels(values));
    checkParams(this.values, GRR_PARAMS);
    this.epsilon = this.values.epsilon as number;
    const d = this.values.domain_size as number;
    this.p = realizedProbability(1.0 / (1.0 + (d - 1) * exp(-this.epsilon)));
    if (this.p >= 1.0) {
      throw relation("epsilon_too_large", ["epsilon", "domain_size"], `epsilon=${this.epsilon} is too large for ` +
        `domain_size=${d}: the keep probability rounds to 1, so reports would not be private`);
    }
    if (this.p <= this.q) {
      throw relation("epsilon_too_small", ["epsilon", "domain_size"], `epsilon=${this.epsilon} is too small for ` +
        `domain_size=${d}: the keep probability rounds to 1/d, so reports would carry no information`);
    }
    this.labels = checkLabels(this.values.labels, d);
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  override get domainSize(): number {
    return this.values.domain_size as number;
  }

  /** Probability of reporting one given other value: (1−p)/(d−1), exactly as the client draws it. */
  get q(): number {
    return (1.0 - this.p) / (this.domainSize - 1);
  }

  /** The ε of the realized probabilities, ln(p(d−1)/(1−p)). */
  get effectiveEpsilon(): number {
    return log(this.p * (this.domainSize - 1) / (1.0 - this.p));
  }

  /** The cost charged per report: max(epsilon, effectiveEpsilon). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: Math.max(this.epsilon, this.effectiveEpsilon), delta: 0.0 });
    return this.cost;
  }

  get aggregateCells(): number {
    return this.domainSize;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      this.fields_ = Object.freeze([{ name: "index", kind: "uint", size: this.values.domain_size as number }] as Field[]);
    }
    return this.fields_;
  }

  /** The name of value `index`: its label, else the index. */
  labelOf(index: number): string {
    return this.labels !== null ? this.labels[index] : String(index);
  }
}

/** `grr_draw`: one GRR response of `index` in [0, d): `index` kept with probability `p` (`B(p)`), else a uniform
 * other value (`R(d − 1)`). */
export function grrDraw(p: number, d: number, index: number, rng: RandomSource): number {
  if (rng.bernoulli(p)) return index;
  const other = rng.randbelow(d - 1); // uniform over the d − 1 other values
  return other + (other >= index ? 1 : 0);
}

/** Client encoder for `GRRParams`; values are labels or indices in [0, d). */
export class GRREncoder extends DomainEncoder<GRRParams> {
  randomize(prepared: number): Report {
    return this.report([["index", grrDraw(this.params.p, this.params.domainSize, prepared, this.rng)]]);
  }
}

export const grr: ProtocolEntry<GRRParams, number> = {
  name: "grr",
  Params: GRRParams,
  makeEncoder: (params, options) => new GRREncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
