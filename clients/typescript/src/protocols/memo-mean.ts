/**
 * Memoized 1BitMean with α-point rounding (`memo-mean`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §4), client side
 * (`MemoMeanParams`/`MemoMeanEncoder` of `ldp/encoders/longitudinal.py`).
 *
 * [low, high] is cut into s = `buckets` equal buckets with edges j = 0..s. A device holds a uniform 64-bit offset α
 * (the first `randbits(64)` of the keyed stream of its metric secret and "ldp/longitudinal/alpha/v1\0" ‖ fp); x with
 * u = s·unit(x) = j0 + φ is rounded up to edge j0 + 1 iff α < floor(φ·2^64), so E_α[j] = u and no draw is made. The
 * 1BitMean bit of edge j, `B(j/s) XOR B(q)` with Duchi's q at ε, is memoized per edge from the secret (`Memo`); each
 * report replays it, flipped with probability γ' = realized(`gamma`) when γ' > 0 (the injected stream's only draw,
 * `B(γ')`). One report's ε is ln((1 − q')/q') with q' = γ' + (1 − 2γ')q; every report of one edge together costs
 * at most the memoized bit's ε.
 */
import { concatBytes, utf8Encode } from "../bytes.js";
import { log1p } from "../pymath.js";
import { KeyedRandomSource, bernoulliThreshold, realizedProbability } from "../random.js";
import { Field, ParamsDict, PrivacyCost, checkCollectable, checkParams } from "../params/base.js";
import { MEMO_MEAN_PARAMS } from "../params/tables.js";
import { Charge, Encoder, EncoderOptions, ProtocolEntry, Report } from "../encoders/base.js";
import { Memo } from "../encoders/memo.js";
import { DuchiParams, NumericParams } from "./numeric.js";

/** Most buckets (a device memoizes at most `buckets + 1` bits). */
export const MAX_BUCKETS = 1 << 16;

const ALPHA_DOMAIN = utf8Encode("ldp/longitudinal/alpha/v1\0");
const TWO_64 = 1n << 64n;
const SCHEMA: readonly Field[] = Object.freeze([{ name: "bit", kind: "uint", size: 2 }] as Field[]);

/** Memoized 1BitMean with α-point rounding to `buckets` buckets and output flips `gamma`. */
export class MemoMeanParams extends NumericParams {
  static readonly className = "MemoMeanParams";
  static readonly fields = MEMO_MEAN_PARAMS;
  readonly protocol = "memo-mean";
  readonly buckets: number;
  /** The output flip probability, as given. */
  readonly gamma: number;
  /** The memoized bit's parameters (its ε bounds every report of one edge). */
  readonly memo: DuchiParams;

  constructor(values: ParamsDict) {
    super(values);
    checkParams(this.values, MEMO_MEAN_PARAMS, "buckets");
    this.buckets = this.values.buckets as number;
    this.gamma = this.values.gamma as number;
    this.memo = new DuchiParams({ epsilon: this.epsilon, low: this.low, high: this.high, clip: this.clip });
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** γ' = realized(γ). */
  get gammaRealized(): number {
    return realizedProbability(this.gamma);
  }

  /** Realized Pr[report = 1 | x = low]: γ' + (1 − 2γ')·q of the memoized bit. */
  get q(): number {
    const g = this.gammaRealized;
    return g + (1.0 - 2.0 * g) * this.memo.q;
  }

  /** ε of one report, ln((1 − q')/q') (the memoized bit's ε when γ = 0, less when γ > 0). */
  get realizedEpsilon(): number {
    const q = this.q;
    return log1p((1.0 - 2.0 * q) / q);
  }

  /** Every report of one edge together: the memoized bit's realized ε. */
  get memoCap(): PrivacyCost {
    return this.memo.privacyCost;
  }

  /** `[j0, φ]` with s·unit(x) = j0 + φ, 0 <= φ < 1 (j0 = s, φ = 0 at `high`). */
  rounding(x: number): [number, number] {
    const s = this.buckets;
    const u = this.unit(x) * s;
    const j0 = Math.min(Math.floor(u), s);
    return [j0, j0 < s ? u - j0 : 0.0];
  }

  get schema(): readonly Field[] {
    return SCHEMA;
  }

  get aggregateCells(): number {
    return 2;
  }
}

/** What a memo-mean encoder is made with, beyond randomness and secret. */
export interface MemoMeanOptions extends EncoderOptions {
  /** The device's offset α, an integer in [0, 2^64) (audits and tests; default: from the secret). */
  readonly alpha?: bigint;
}

/** Client encoder for `MemoMeanParams`; values are numbers in [low, high]. Needs the metric secret. */
export class MemoMeanEncoder extends Encoder<MemoMeanParams, number> {
  /** The device's α-point offset. */
  readonly alpha: bigint;
  private readonly memo: Memo<number>;

  constructor(params: MemoMeanParams, options: MemoMeanOptions = {}) {
    super(params, options);
    this.memo = new Memo(params.protocol, params.fingerprint, options);
    let alpha = options.alpha;
    if (alpha === undefined) {
      const message = concatBytes(ALPHA_DOMAIN, utf8Encode(params.fingerprint));
      alpha = new KeyedRandomSource(this.memo.metricSecret, message).randbits(64);
    } else if (typeof alpha !== "bigint") {
      throw new TypeError(`alpha must be a bigint, got ${typeof alpha}`);
    } else if (alpha < 0n || alpha >= TWO_64) {
      throw new RangeError(`alpha must be in [0, ${TWO_64 - 1n}], got ${alpha}`);
    }
    this.alpha = alpha;
  }

  /** The rounded value: the edge j in [0, buckets] (α-point rounding, no draw). */
  prepare(value: unknown): number {
    const [j0, frac] = this.params.rounding(this.params.checkValue(value));
    return j0 + (this.alpha < bernoulliThreshold(frac) ? 1 : 0);
  }

  /** The memoized 1BitMean bit of edge j: `B(j/s) XOR B(q)` on the keyed stream. */
  memoBit(j: number): number {
    const pr = this.params;
    return this.memo.get(j, (src) => (src.bernoulli(j / pr.buckets) !== src.bernoulli(pr.memo.q) ? 1 : 0));
  }

  randomize(prepared: number): Report {
    const bit = this.memoBit(prepared);
    const g = this.params.gammaRealized;
    return this.report([["bit", g > 0 ? bit ^ (this.rng.bernoulli(g) ? 1 : 0) : bit]]);
  }

  /** One report's ε per report, at most the memoized bit's ε per edge, under the edge's memo key. */
  override chargeFor(prepared: number): Charge {
    return this.memo.charge(prepared, this.params.privacyCost, this.params.memoCap);
  }

  /** The memo key of an edge (what the ledger counts its reports under). */
  memoKey(j: number): Uint8Array {
    return this.memo.key(j);
  }
}

export const memoMean: ProtocolEntry<MemoMeanParams, number> = {
  name: "memo-mean",
  Params: MemoMeanParams,
  makeEncoder: (params, options) => new MemoMeanEncoder(params, options),
  needsSecret: true,
  assignedCohorts: () => 0,
};
