/**
 * Hadamard Response, client side (`ldp/encoders/hadamard_response.py`; Acharya, Sun, Zhang, AISTATS 2019).
 *
 * With K the smallest power of 2 above d, item v is row v + 1 of the K×K Sylvester Hadamard matrix
 * H[i, j] = (−1)^popcount(i & j); C_v = {j : H[v+1, j] = +1}. The client reports j uniform in C_v with probability
 * p = realized(σ(−ε)), else uniform in the complement, as a `uint` below K. ε* = ln(p/(1−p)) (the unary ε with
 * q = 1/2), charged max(ε, ε*).
 *
 * Draws: `B(p)` (in or out), `R(K)`; if the parity of j & (v+1) is not the one wanted, j is flipped at the lowest set
 * bit of v + 1 (a bijection between the two halves).
 */
import { realizedProbability } from "../random.js";
import { Field, ParamsDict, logisticTail } from "../params/base.js";
import { DomainEncoder, ProtocolEntry, Report } from "../encoders/base.js";
import { HR_PARAMS } from "../params/tables.js";
import { UnaryParams } from "./unary.js";

/** `hr_order`: K, the smallest power of 2 strictly above `domainSize` (2^bit_length(d)). */
export function hrOrder(domainSize: number): number {
  return 2 ** (domainSize === 0 ? 0 : domainSize.toString(2).length);
}

/** Hadamard Response at `epsilon` over `domain_size` values (optionally named by `labels`). */
export class HRParams extends UnaryParams {
  static readonly className = "HRParams";
  static readonly fields = HR_PARAMS;
  readonly protocol = "hr";
  private p_: number | undefined;
  private hrFields: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkAll();
  }

  /** K, the Hadamard order: reports are j in [0, K). */
  get order(): number {
    return hrOrder(this.domainSize);
  }

  /** Pr[j ∈ C_v | v] = e^ε/(e^ε+1), as realized. */
  get p(): number {
    if (this.p_ === undefined) this.p_ = realizedProbability(logisticTail(-this.epsilon));
    return this.p_;
  }

  /** Pr[j ∈ C_v | u ≠ v] = 1/2 exactly. */
  get q(): number {
    return 0.5;
  }

  override get schema(): readonly Field[] {
    if (this.hrFields === undefined) {
      this.hrFields = Object.freeze([{ name: "j", kind: "uint", size: this.order }] as Field[]);
    }
    return this.hrFields;
  }

  override get aggregateCells(): number {
    return this.order;
  }
}

/** The parity of the set bits of a 32-bit unsigned integer (`int.bit_count() & 1`). */
function parity(x: number): number {
  let v = x >>> 0;
  v ^= v >>> 16;
  v ^= v >>> 8;
  v ^= v >>> 4;
  v ^= v >>> 2;
  v ^= v >>> 1;
  return v & 1;
}

/** Client encoder for `HRParams`; values are labels or indices in [0, d). */
export class HREncoder extends DomainEncoder<HRParams> {
  /** The reported column j. */
  draw(prepared: number): number {
    const rng = this.rng, pr = this.params;
    const row = prepared + 1;
    const want = rng.bernoulli(pr.p) ? 0 : 1; // parity of j & row: 0 inside C_v, 1 outside
    let j = rng.randbelow(pr.order);
    // j < K <= 2^28 (the aggregate limit) and row <= d < K: 32-bit integer operations are exact
    if (parity((j & row) >>> 0) !== want) j = (j ^ (row & -row)) >>> 0;
    return j;
  }

  randomize(prepared: number): Report {
    return this.report([["j", this.draw(prepared)]]);
  }
}

export const hr: ProtocolEntry<HRParams, number> = {
  name: "hr",
  Params: HRParams,
  makeEncoder: (params, options) => new HREncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
