/**
 * Longitudinal GRR (`lgrr`), client side (`ldp/encoders/longitudinal.py`, `longitudinal_charges.py`): RAPPOR's
 * permanent/instantaneous responses for a value of [0, k).
 *
 * Round 1, memoized per value from the metric secret (`Memo`): m = GRR at `epsilon_perm` of the value, keep
 * probability p1. Round 2, fresh per report: y = GRR of m, keep probability p2. A GRR keeps with λ = p − q and
 * otherwise reports a uniform value of the whole domain, so the rounds compose to one GRR with λ = λ1·λ2; one report
 * is ε-LDP when λ2 = expm1(ε)/(expm1(ε) + k)/(p1 − q1), i.e. round 2 is a GRR at ε2 = log1p(kλ2/(1 − λ2)) (needs
 * ε < ε_perm). Draws (injected stream): `B(p2)`, then `R(k − 1)` if false; the permanent response takes the same
 * draws from the keyed stream.
 *
 * Charged per report the smallest c with min(t·c, cap) ≥ L(t) for every t (`memoReportCharge`, L the exact leakage
 * of t reports of one value, `leakage`), at most cap = max(ε_perm, realized ε_perm) per value.
 */
import { LdpValueError } from "../errors.js";
import { expm1, log, log1p } from "../pymath.js";
import { add, div, fraction, integer, logRatio, mul, sub } from "../rational.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkInt, checkParams, relation, renaming,
} from "../params/base.js";
import { LGRR_PARAMS } from "../params/tables.js";
import {
  Charge, Encoder, EncoderOptions, ProtocolEntry, Report, domainIndexOf, withFrozenLabels,
} from "../encoders/base.js";
import { Memo, logaddexp, memoReportCharge } from "../encoders/memo.js";
import { GRRParams, grrDraw } from "./randomized-response.js";

/** ln n of small positive integers, kept (the leakage search asks for the same few many times). */
const LOG_INT = new Map<number, number>();
function logInt(n: number): number {
  let v = LOG_INT.get(n);
  if (v === undefined) {
    v = log(n);
    if (LOG_INT.size < 4096) LOG_INT.set(n, v);
  }
  return v;
}

/**
 * `lgrr_leakage`: the exact worst log-likelihood ratio of `t` L-GRR reports of one value, over every report sequence
 * and pair of values, for keep probabilities `p1` (memoized) and `p2` over `k` values. Pr[reports | v] is
 * proportional to q1·Σ_m ρ^{c_m} + (p1 − q1)·ρ^{c_v} (c_m the reports naming m, ρ = p2/q2): for two values with
 * counts a ≥ b the ratio is worst when the other t − a − b reports are spread evenly over the other k − 2 values,
 * so the search is over (a, b) only.
 */
export function lgrrLeakage(p1: number, p2: number, k: number, t: number): number {
  const q1 = (1.0 - p1) / (k - 1), q2 = (1.0 - p2) / (k - 1);
  const lr = log(p2 / q2), dd = log(p1 - q1);
  const lq1 = log(q1);
  const others = k - 2;
  let worst = 0.0;
  for (let a = 0; a <= t; a++) {
    for (let b = 0; b <= Math.min(a, t - a); b++) {
      const rest = t - a - b;
      let logS: number;
      if (others === 0) {
        if (rest) continue;
        logS = logaddexp(a * lr, b * lr);
      } else {
        const base = Math.floor(rest / others), extra = rest % others;
        logS = logaddexp(a * lr, b * lr);
        logS = logaddexp(logS, logInt(others - extra) + base * lr);
        if (extra) logS = logaddexp(logS, logInt(extra) + (base + 1) * lr);
      }
      const num = logaddexp(lq1 + logS, dd + a * lr);
      const den = logaddexp(lq1 + logS, dd + b * lr);
      worst = Math.max(worst, num - den);
    }
  }
  return worst;
}

/** L-GRR over `domain_size` values: permanent GRR at `epsilon_perm`, then a fresh GRR per report such that one
 * report is `epsilon`-LDP (`epsilon < epsilon_perm`). */
export class LGRRParams extends ProtocolParams {
  static readonly className = "LGRRParams";
  static readonly fields = LGRR_PARAMS;
  readonly protocol = "lgrr";
  readonly epsilonPerm: number;
  readonly epsilon: number;
  /** Round 1, the memoized GRR at `epsilon_perm` (also the labels' index). */
  readonly permanent: GRRParams;
  /** Round 2, the fresh GRR of each report, at ε2. */
  readonly instantaneous: GRRParams;
  private cost: PrivacyCost | undefined;
  private reportCharge_: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(withFrozenLabels(values));
    const v = this.values;
    checkParams(v, LGRR_PARAMS);
    this.epsilonPerm = v.epsilon_perm as number;
    this.epsilon = v.epsilon as number;
    const k = v.domain_size as number;
    if (!(this.epsilon < this.epsilonPerm)) {
      throw relation("epsilon<epsilon_perm", ["epsilon", "epsilon_perm"], "L-GRR needs epsilon < epsilon_perm (a " +
        "report is post-processing of the permanent response, so it cannot leak more), got epsilon=" +
        `${this.epsilon}, epsilon_perm=${this.epsilonPerm}`);
    }
    const perm = renaming({ epsilon: "epsilon_perm" },
      () => new GRRParams({ epsilon: this.epsilonPerm, domain_size: k, labels: v.labels }));
    this.permanent = perm;
    const e = expm1(this.epsilon);
    const lam = e / (e + k) / (perm.p - perm.q);
    if (!(0.0 < lam && lam < 1.0)) {
      throw relation("epsilon<realized_epsilon_perm", ["epsilon", "epsilon_perm", "domain_size"], `epsilon=` +
        `${this.epsilon} is not below the realized permanent ε ${perm.effectiveEpsilon} at domain_size=${k}: no ` +
        "instantaneous round gives it");
    }
    const eps2 = log1p(k * lam / (1.0 - lam));
    try {
      this.instantaneous = new GRRParams({ epsilon: eps2, domain_size: k, labels: null });
    } catch (err) {
      if (err instanceof LdpValueError) {
        throw relation("instantaneous_realizable", ["epsilon", "epsilon_perm", "domain_size"],
          `the instantaneous round of these L-GRR parameters is not realizable: ${err.message}`);
      }
      throw err;
    }
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  override get domainSize(): number {
    return this.permanent.domainSize;
  }

  get labels(): readonly string[] | null {
    return this.permanent.labels;
  }

  /** Realized Pr[report = v | v] = p1·p2 + (1 − p1)·q2. */
  get pStar(): number {
    const a = this.permanent, b = this.instantaneous;
    return a.p * b.p + (1.0 - a.p) * b.q;
  }

  /** Realized Pr[report = u | v] for each u ≠ v: (1 − p*)/(k − 1). */
  get qStar(): number {
    return (1.0 - this.pStar) / (this.domainSize - 1);
  }

  /** ε of one report, ln(p*(k − 1)/(1 − p*)) of the realized probabilities, exactly in rationals. */
  get realizedEpsilon(): number {
    const km1 = integer(this.domainSize - 1), one = integer(1);
    const p1 = fraction(this.permanent.p), p2 = fraction(this.instantaneous.p);
    const ps = add(mul(p1, p2), div(mul(sub(one, p1), sub(one, p2)), km1));
    return logRatio(div(mul(ps, km1), sub(one, ps)));
  }

  /** One report: max(epsilon, realizedEpsilon). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: Math.max(this.epsilon, this.realizedEpsilon), delta: 0.0 });
    return this.cost;
  }

  /** Every report of one value together: max(epsilon_perm, the permanent GRR's realized ε). */
  get memoCap(): PrivacyCost {
    return { epsilon: Math.max(this.epsilonPerm, this.permanent.effectiveEpsilon), delta: 0.0 };
  }

  /** The exact worst-case ε of `t` reports of one value (`lgrrLeakage` of the realized probabilities). */
  leakage(t: number): number {
    return lgrrLeakage(this.permanent.p, this.instantaneous.p, this.domainSize, checkInt(t, "t", 1));
  }

  /** The per-report charge of `charging="min"` (`memoReportCharge`); computed on first use, as Python does. */
  get reportCharge(): PrivacyCost {
    if (this.reportCharge_ === undefined) {
      this.reportCharge_ = Object.freeze(memoReportCharge(this.privacyCost, this.memoCap, (t) => this.leakage(t)));
    }
    return this.reportCharge_;
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
    return this.permanent.labelOf(index);
  }
}

/** Client encoder for `LGRRParams`; values are labels or indices in [0, k), checked as the permanent GRR's (so a
 * refusal names `grr`, as Python's does). Needs the metric secret. */
export class LGRREncoder extends Encoder<LGRRParams, number> {
  private readonly memo: Memo<number>;

  constructor(params: LGRRParams, options: EncoderOptions = {}) {
    super(params, options);
    this.memo = new Memo(params.protocol, params.fingerprint, options);
  }

  prepare(value: unknown): number {
    return domainIndexOf(this.params.permanent, value);
  }

  /** The memoized round-1 response of `index` (the same for the same value, always). */
  permanentResponse(index: number): number {
    const perm = this.params.permanent;
    return this.memo.get(index, (src) => grrDraw(perm.p, perm.domainSize, index, src));
  }

  randomize(prepared: number): Report {
    const pr = this.params;
    return this.report([["index", grrDraw(pr.instantaneous.p, pr.domainSize, this.permanentResponse(prepared), this.rng)]]);
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

export const lgrr: ProtocolEntry<LGRRParams, number> = {
  name: "lgrr",
  Params: LGRRParams,
  makeEncoder: (params, options) => new LGRREncoder(params, options),
  needsSecret: true,
  assignedCohorts: () => 0,
};
