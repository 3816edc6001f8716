/**
 * Longitudinal unary encoding (`loue`), client side (`LOUEParams`/`LOUEEncoder` of `ldp/encoders/unary.py`): a
 * permanent OUE (or SUE, `permanent`) response at `epsilon_perm`, memoized per value from the metric secret
 * (`Memo`), then every bit flipped afresh with probability `flip` per report, so that one report is `epsilon`-LDP.
 *
 * With a = p1 − 1/2, b = q1 − 1/2 (the permanent round's bit probabilities) and E = e^ε, the keep-minus-flip
 * λ2 = 1 − 2·flip is the root of ab(E − 1)λ² + (a − b)(E + 1)λ/2 − (E − 1)/4 = 0, taken in the form that does not
 * cancel; flip = realized((1 − λ2)/2). A report's bit v is 1 w.p. p* = p1(1 − flip) + (1 − p1)·flip, another bit
 * w.p. q* likewise, both exact in rationals. Draws: the permanent response on the keyed stream, then `BB(flip, d)`
 * on the injected one (the report is their XOR).
 *
 * Charged per report the `memoReportCharge` of the exact leakage of t reports (`loueLeakage`), at most the
 * permanent response's cost per value.
 */
import { expm1, log, log1p } from "../pymath.js";
import { Fraction, add, fraction, integer, mul, sub, toFloat } from "../rational.js";
import { realizedProbability } from "../random.js";
import { ParamsDict, PrivacyCost, checkCollectable, checkInt, checkParams, relation, renaming } from "../params/base.js";
import { LOUE_PARAMS } from "../params/tables.js";
import { Charge, DomainEncoder, EncoderOptions, ProtocolEntry, Report, bitsString } from "../encoders/base.js";
import { Memo, logaddexp, memoReportCharge } from "../encoders/memo.js";
import { OUEParams, SUEParams, UnaryParams, unaryDraw, unaryEpsilon } from "./unary.js";

/**
 * `loue_leakage`: the exact worst log-ratio of `t` L-OUE reports of one value. With
 * P_π(c) = π(1 − f)^c f^{t−c} + (1 − π) f^c (1 − f)^{t−c} the law of c ones among one bit's t reports when its
 * permanent bit is 1 w.p. π, L(t) = max_c F(c) − min_c F(c) with F = ln(P_p1/P_q1).
 */
export function loueLeakage(p1: number, q1: number, flip: number, t: number): number {
  const keep = log1p(-flip), fl = log(flip);
  const logP = (pi: number, c: number): number =>
    logaddexp(log(pi) + c * keep + (t - c) * fl, log1p(-pi) + c * fl + (t - c) * keep);
  let max = -Infinity, min = Infinity;
  for (let c = 0; c <= t; c++) {
    const f = logP(p1, c) - logP(q1, c);
    max = Math.max(max, f);
    min = Math.min(min, f);
  }
  return max - min;
}

/** Longitudinal unary encoding: a memoized OUE (or SUE) at `epsilon_perm`, then fresh flips per report such that
 * one report is `epsilon`-LDP (`epsilon < epsilon_perm`). */
export class LOUEParams extends UnaryParams {
  static readonly className = "LOUEParams";
  static readonly fields = LOUE_PARAMS;
  readonly protocol = "loue";
  readonly epsilonPerm: number;
  /** Round 1, the memoized OUE or SUE at `epsilon_perm`. */
  readonly perm: OUEParams | SUEParams;
  /** Round 2's realized flip probability. */
  readonly flip: number;
  private readonly pStar: Fraction;
  private readonly qStar: Fraction;
  private readonly p_: number;
  private readonly q_: number;
  private reportCharge_: PrivacyCost | undefined;

  constructor(values: ParamsDict) {
    super(values);
    const v = this.values;
    checkParams(v, LOUE_PARAMS, "epsilon_perm", "epsilon");
    checkParams(v, LOUE_PARAMS, "permanent", "permanent"); // before the domain, as Python
    this.epsilonPerm = v.epsilon_perm as number;
    const epsilon = v.epsilon as number;
    if (!(epsilon < this.epsilonPerm)) {
      throw relation("epsilon<epsilon_perm", ["epsilon", "epsilon_perm"], "L-OUE needs epsilon < epsilon_perm (a " +
        "report is post-processing of the permanent response, so it cannot leak more), got epsilon=" +
        `${epsilon}, epsilon_perm=${this.epsilonPerm}`);
    }
    const perm = renaming({ epsilon: "epsilon_perm" }, () => {
      checkParams(v, LOUE_PARAMS, "domain_size", "domain_size");
      const d = v.domain_size as number;
      const Kind = v.permanent === "oue" ? OUEParams : SUEParams;
      return new Kind({ epsilon: this.epsilonPerm, domain_size: d, labels: null });
    });
    this.perm = perm;
    this.flip = this.flipOf(perm, epsilon);
    const f = fraction(this.flip);
    this.pStar = LOUEParams.star(fraction(perm.p), f);
    this.qStar = LOUEParams.star(fraction(perm.q), f);
    this.p_ = toFloat(this.pStar);
    this.q_ = toFloat(this.qStar);
    this.checkUnary(`epsilon=${epsilon}`);
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** realized((1 − λ2)/2), λ2 the root of the quadratic (module docstring). */
  private flipOf(perm: OUEParams | SUEParams, epsilon: number): number {
    const a = perm.p - 0.5, b = perm.q - 0.5, e1 = expm1(epsilon);
    const qa = a * b * e1, qb = (a - b) * (e1 + 2.0) / 2.0, qc = e1 / 4.0;
    const disc = qb * qb + 4.0 * qa * qc;
    const lam = disc >= 0.0 ? 2.0 * qc / (qb + Math.sqrt(disc)) : Infinity;
    if (!(0.0 < lam && lam < 1.0)) {
      throw relation("epsilon<realized_epsilon_perm", ["epsilon", "epsilon_perm", "permanent"], `epsilon=${epsilon} is ` +
        `not below the realized permanent ε ${perm.effectiveEpsilon}: no instantaneous round gives it`);
    }
    const flip = realizedProbability((1.0 - lam) / 2.0);
    if (flip <= 0.0) {
      throw relation("instantaneous_realizable", ["epsilon", "epsilon_perm", "permanent"], "the instantaneous round of " +
        `these L-OUE parameters is not realizable: its flip probability ${(1.0 - lam) / 2.0} rounds to 0 at the ` +
        "client's resolution");
    }
    return flip;
  }

  /** π(1 − f) + (1 − π)f: a report bit's probability of 1 when its permanent bit is 1 w.p. π. */
  private static star(pi: Fraction, f: Fraction): Fraction {
    const one = integer(1);
    return add(mul(pi, sub(one, f)), mul(sub(one, pi), f));
  }

  /** Realized p* = p1(1 − flip) + (1 − p1)·flip. */
  get p(): number {
    return this.p_;
  }

  /** Realized q* = q1(1 − flip) + (1 − q1)·flip. */
  get q(): number {
    return this.q_;
  }

  /** ε of one report from the exact p*, q* (not their rounded doubles), as the exact audit computes it. */
  override get effectiveEpsilon(): number {
    return unaryEpsilon(this.pStar, this.qStar);
  }

  /** Every report of one value together: the permanent response's cost. */
  get memoCap(): PrivacyCost {
    return this.perm.privacyCost;
  }

  /** The exact worst-case ε of `t` reports of one value (`loueLeakage` of the realized probabilities). */
  leakage(t: number): number {
    return loueLeakage(this.perm.p, this.perm.q, this.flip, checkInt(t, "t", 1));
  }

  /** The per-report charge of `charging="min"` (`memoReportCharge`); computed on first use. */
  get reportCharge(): PrivacyCost {
    if (this.reportCharge_ === undefined) {
      this.reportCharge_ = Object.freeze(memoReportCharge(this.privacyCost, this.memoCap, (t) => this.leakage(t)));
    }
    return this.reportCharge_;
  }
}

/** Client encoder for `LOUEParams`; values are labels or indices in [0, d). Needs the metric secret. */
export class LOUEEncoder extends DomainEncoder<LOUEParams> {
  private readonly memo: Memo<bigint>;

  constructor(params: LOUEParams, options: EncoderOptions = {}) {
    super(params, options);
    this.memo = new Memo(params.protocol, params.fingerprint, options);
  }

  /** The memoized round-1 bits of `index` (bit i = value i; the same for the same value, always). */
  permanentResponse(index: number): bigint {
    const perm = this.params.perm;
    return this.memo.get(index, (src) => unaryDraw(perm.p, perm.q, perm.domainSize, index, src));
  }

  randomize(prepared: number): Report {
    const pr = this.params, d = pr.domainSize;
    const bits = this.permanentResponse(prepared) ^ this.rng.bernoulliBits(pr.flip, d);
    return this.report([["bits", bitsString(bits, d)]]);
  }

  /** `reportCharge` per report, at most `memoCap` per value, under the value's memo key. */
  override chargeFor(prepared: number): Charge {
    return this.memo.charge(prepared, this.params.reportCharge, this.params.memoCap);
  }

  /** The memo key of a value's index (what the ledger counts its reports under). */
  memoKey(index: number): Uint8Array {
    return this.memo.key(index);
  }
}

export const loue: ProtocolEntry<LOUEParams, number> = {
  name: "loue",
  Params: LOUEParams,
  makeEncoder: (params, options) => new LOUEEncoder(params, options),
  needsSecret: true,
  assignedCohorts: () => 0,
};
