/**
 * Memoized dBitFlip (`memo-dbitflip`, `ldp/encoders/dbitflip_memo.py`; Ding, Kulkarni & Yekhanin, NeurIPS 2017,
 * §3–4): dBitFlip (`histogram.ts`) over the buckets of `edges`, its sample and each bucket's response drawn once per
 * device from the metric secret. Draws (docs/conformance.md): the sample (Floyd) and each bucket's response from the
 * keyed stream of the metric secret; on the injected stream only `B(γ)` per sampled bucket (lowest first) when γ > 0,
 * each flipping its bit.
 */
import { concatBytes, utf8Encode } from "../bytes.js";
import { KeyedRandomSource, realizedProbability } from "../random.js";
import { Field, ParamsDict, PrivacyCost, checkCollectable, checkParams } from "../params/base.js";
import { MEMO_DBITFLIP_PARAMS } from "../params/tables.js";
import { EncoderOptions, MemoizedCharge, ProtocolEntry, Report } from "../encoders/base.js";
import { Memo } from "../encoders/memo.js";
import { BucketEncoder, BucketParams } from "./histogram-buckets.js";
import { DBitFlipParams, dbitflipEpsilon, floydSample, maskString, sampledBitsSchema } from "./histogram.js";

const SAMPLE_DOMAIN = utf8Encode("ldp/dbitflip-memo/sample/v1\0");

/**
 * Memoized dBitFlip (Python's `MemoDBitFlipParams`): a permanent sample of `d` buckets and a permanent dBitFlip
 * response per value bucket, both from the metric secret; each report's bits flipped afresh with probability `gamma`.
 * One report costs the memoized dBitFlip's ε when γ = 0, else dBitFlip's ε at p' = γ + (1 − 2γ)·p; every report of
 * one bucket together at most `memoCap`, the memoized dBitFlip's ε.
 */
export class MemoDBitFlipParams extends BucketParams {
  static readonly className = "MemoDBitFlipParams";
  static readonly fields = MEMO_DBITFLIP_PARAMS;
  readonly protocol = "memo-dbitflip";
  /** Buckets sampled (once per device). */
  readonly d: number;
  /** The per-report flip probability, as given. */
  readonly gamma: number;
  /** The memoized responses' dBitFlip. */
  readonly memo: DBitFlipParams;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkBuckets();
    checkParams(this.values, MEMO_DBITFLIP_PARAMS, "d", "gamma", { d: () => this.numBuckets });
    this.d = this.values.d as number;
    this.gamma = this.values.gamma as number;
    this.memo = new DBitFlipParams({ epsilon: this.epsilon, edges: this.edges, d: this.d, clip: this.clip });
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** γ as the client draws it. */
  get gammaRealized(): number {
    return realizedProbability(this.gamma);
  }

  /** Pr[bit = 1] at the value's own sampled bucket in one report: γ + (1 − 2γ)·p1 of the memo. */
  get p1(): number {
    const g = this.gammaRealized;
    return g + (1.0 - 2.0 * g) * this.memo.p1;
  }

  /** Pr[bit = 1] at another sampled bucket in one report: γ + (1 − 2γ)·p0 of the memo. */
  get p0(): number {
    const g = this.gammaRealized;
    return g + (1.0 - 2.0 * g) * this.memo.p0;
  }

  /** One report's worst log-ratio (dBitFlip's at p1, p0). */
  get effectiveEpsilon(): number {
    return dbitflipEpsilon(this.p1, this.p0, this.d);
  }

  /** One report: the memoized dBitFlip's cost when γ = 0, else `effectiveEpsilon`. */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      this.cost = this.gammaRealized === 0.0
        ? this.memo.privacyCost
        : Object.freeze({ epsilon: this.effectiveEpsilon, delta: 0.0 });
    }
    return this.cost;
  }

  /** Every report of one bucket together: the memoized dBitFlip's cost. */
  get memoCap(): PrivacyCost {
    return this.memo.privacyCost;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) this.fields_ = sampledBitsSchema(this.numBuckets);
    return this.fields_;
  }

  get aggregateCells(): number {
    return 2 * this.numBuckets;
  }
}

/**
 * Client encoder for `MemoDBitFlipParams` (Python's `MemoDBitFlipEncoder`); values are numbers in the edges' range.
 * Needs the metric secret: the sample is drawn once from `KeyedRandomSource(secret, "ldp/dbitflip-memo/sample/v1\0" ‖
 * fp)`, each bucket's response from its keyed message (`Memo`). Charged one report's ε per report, at most
 * `memoCap` per bucket (`charging="min"`).
 */
export class MemoDBitFlipEncoder extends BucketEncoder<MemoDBitFlipParams> {
  private readonly memo: Memo<Uint8Array>;
  private sampled_: Uint8Array | undefined;

  constructor(params: MemoDBitFlipParams, options: EncoderOptions = {}) {
    super(params, options);
    this.memo = new Memo("memo-dbitflip", params.fingerprint, options);
  }

  /** The device's permanent sample of d buckets (a byte per bucket), from its secret. */
  get sampled(): Uint8Array {
    if (this.sampled_ === undefined) {
      const pr = this.params;
      const src = this.memo.auditRng ??
        new KeyedRandomSource(this.memo.metricSecret, concatBytes(SAMPLE_DOMAIN, utf8Encode(pr.fingerprint)));
      this.sampled_ = floydSample(pr.numBuckets, pr.d, src);
    }
    return this.sampled_;
  }

  /** The memoized response of bucket `bucket`: per sampled bucket j (lowest first), 1 with p1 if j is `bucket`, else
   * p0. Kept by the memo: not to be modified. */
  memoBits(bucket: number): Uint8Array {
    const sampled = this.sampled, memo = this.params.memo;
    return this.memo.get(bucket, (src) => {
      const bits = new Uint8Array(sampled.length);
      for (let j = 0; j < sampled.length; j++) {
        if (sampled[j] && src.bernoulli(j === bucket ? memo.p1 : memo.p0)) bits[j] = 1;
      }
      return bits;
    });
  }

  randomize(prepared: number): Report {
    const bits = Uint8Array.from(this.memoBits(prepared));
    const sampled = this.sampled, g = this.params.gammaRealized;
    if (g > 0) {
      for (let j = 0; j < sampled.length; j++) if (sampled[j] && this.rng.bernoulli(g)) bits[j] ^= 1;
    }
    return this.report([["sampled", maskString(sampled)], ["bits", maskString(bits)]]);
  }

  override chargeFor(prepared: number): MemoizedCharge {
    return this.memo.charge(prepared, this.params.privacyCost, this.params.memoCap);
  }
}

export const memoDbitflip: ProtocolEntry<MemoDBitFlipParams, number> = {
  name: "memo-dbitflip",
  Params: MemoDBitFlipParams,
  makeEncoder: (params, options) => new MemoDBitFlipEncoder(params, options),
  needsSecret: true,
  assignedCohorts: () => 0,
};
