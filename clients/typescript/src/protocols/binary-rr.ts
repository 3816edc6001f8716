/**
 * Binary randomized response, client side (`rr`; Python's `BinaryRRParams`/`BinaryRREncoder` in
 * `ldp/encoders/randomized_response.py`): a true bit x is reported as 1 with probability q if x = 1 and p if x = 0
 * (0 < p < q < 1); ε = max(ln(q/p), ln((1−p)/(1−q))) of the realized p and q. Draws: `B(q)` for a 1, `B(p)` for a
 * 0. Re-exported by `randomized-response.ts`; a module of its own so that a page using only `grr` does not ship it.
 */
import { LdpTypeError, LdpValueError, exactInt, kindOf } from "../errors.js";
import { log } from "../pymath.js";
import { checkResolvable, realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, isPyInt, relation,
} from "../params/base.js";
import { RR_PARAMS } from "../params/tables.js";
import { Encoder, ProtocolEntry, Report } from "../encoders/base.js";

/** Binary randomized response: Pr[report 1 | 0] = p, Pr[report 1 | 1] = q, 0 < p < q < 1. */
export class BinaryRRParams extends ProtocolParams {
  static readonly className = "BinaryRRParams";
  static readonly fields = RR_PARAMS;
  readonly protocol = "rr";
  readonly p: number;
  readonly q: number;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    checkParams(this.values, RR_PARAMS);
    const p = this.values.p as number, q = this.values.q as number;
    if (!(0.0 < p && p < q && q < 1.0)) {
      throw relation("0<p<q<1", ["p", "q"], `binary RR needs 0 < p < q < 1 (finite ε, truthful bias), got p=${p}, q=${q}`);
    }
    checkResolvable(p, "p");
    if (realizedProbability(p) === realizedProbability(q)) {
      throw relation("p_q_resolvable", ["p", "q"],
        `p=${p} and q=${q} are equal at the client's 2^-64 resolution: reports would carry no information`);
    }
    this.p = p;
    this.q = q;
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** ε = max(ln(q/p), ln((1−p)/(1−q))) of the realized p and q (equal to p and q above 2^-11). */
  get epsilon(): number {
    const p = realizedProbability(this.p), q = realizedProbability(this.q);
    return Math.max(log(q / p), log((1.0 - p) / (1.0 - q)));
  }

  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: this.epsilon, delta: 0.0 });
    return this.cost;
  }

  /** Two values: 0 and 1. */
  override get domainSize(): number {
    return 2;
  }

  get aggregateCells(): number {
    return 1;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) this.fields_ = Object.freeze([{ name: "bit", kind: "uint", size: 2 }] as Field[]);
    return this.fields_;
  }
}

/** Client encoder for `BinaryRRParams`; values are booleans or 0/1. */
export class BinaryRREncoder extends Encoder<BinaryRRParams, number> {
  prepare(value: unknown): number {
    if (value === true || value === false) return value ? 1 : 0;
    if (isPyInt(value) || typeof value === "bigint") {
      const n = Number(value);
      if (n === 0 || n === 1) return n;
      throw new LdpValueError("value_range", { got: exactInt(value), min: 0, max: 1 });
    }
    throw new LdpTypeError("value_type", { expected: "bool_or_01", got: kindOf(value) });
  }

  randomize(prepared: number): Report {
    const bit = this.rng.bernoulli(prepared ? this.params.q : this.params.p);
    return this.report([["bit", bit ? 1 : 0]]);
  }
}


export const rr: ProtocolEntry<BinaryRRParams, number> = {
  name: "rr",
  Params: BinaryRRParams,
  makeEncoder: (params, options) => new BinaryRREncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
