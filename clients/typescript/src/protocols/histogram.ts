/**
 * Histograms of numbers over the buckets of `edges`, client side (`ldp/encoders/histogram.py`): GRR and OUE over the
 * buckets (`bucket-grr`, `bucket-oue`) and dBitFlip (`dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017). The
 * buckets are `histogram-buckets.ts`'s; the memoized dBitFlip (`memo-dbitflip`) is `dbitflip-memo.ts`. Draws
 * (docs/conformance.md):
 *
 * - bucket-grr: `B(p)`, then `R(k−1)` if false (GRR over the k buckets).
 * - bucket-oue: `BB(q, k)`, `B(1/2)` (OUE over the k buckets).
 * - dbitflip: the sample of d buckets (nothing if d = k; `R(C(k, d))` into the lexicographic list of d-subsets when
 *   C(k, d) <= 4096; else Floyd's algorithm), then `BB(p0, k)` if d > 8, else `B(p0)` per sampled bucket other than
 *   the value's (lowest first), then `B(p1)` if the value's bucket is sampled.
 */
import { log } from "../pymath.js";
import { RandomSource, realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, checkCollectable, checkParams, logisticTail, relation, renaming,
} from "../params/base.js";
import { BUCKET_GRR_PARAMS, BUCKET_OUE_PARAMS, DBITFLIP_PARAMS } from "../params/tables.js";
import { ProtocolEntry, Report, bitsString } from "../encoders/base.js";
import { BucketEncoder, BucketParams } from "./histogram-buckets.js";
import { GRRParams } from "./randomized-response.js";
import { OUEParams, unaryDraw } from "./unary.js";
import { floydSubset } from "./subset-selection.js";

// ---------------------------------------------------------------------------------------------------------------
// bucket-grr, bucket-oue

/** GRR over the buckets of `edges` (Python's `BucketGRRParams`; the bucket labels are its values). */
export class BucketGRRParams extends BucketParams {
  static readonly className = "BucketGRRParams";
  static readonly fields = BUCKET_GRR_PARAMS;
  readonly protocol = "bucket-grr";
  /** The GRR these parameters run: `epsilon` over the k bucket labels. */
  readonly grr: GRRParams;

  constructor(values: ParamsDict) {
    super(values);
    this.checkBuckets();
    this.grr = renaming({ domain_size: "edges" },
      () => new GRRParams({ epsilon: this.epsilon, domain_size: this.numBuckets, labels: this.labels }));
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  get privacyCost(): PrivacyCost {
    return this.grr.privacyCost;
  }

  get schema(): readonly Field[] {
    return this.grr.schema;
  }

  get aggregateCells(): number {
    return this.grr.aggregateCells;
  }
}

/** The GRR report of bucket `index`: kept with probability p, else a uniform other bucket. */
export function drawBucketGrr(params: BucketGRRParams, index: number, rng: RandomSource): number {
  if (rng.bernoulli(params.grr.p)) return index;
  const other = rng.randbelow(params.numBuckets - 1);
  return other + (other >= index ? 1 : 0);
}

/** Client encoder for `BucketGRRParams`: a number's bucket, reported by GRR. */
export class BucketGRREncoder extends BucketEncoder<BucketGRRParams> {
  randomize(prepared: number): Report {
    return this.report([["index", drawBucketGrr(this.params, prepared, this.rng)]]);
  }
}

/** OUE over the buckets of `edges` (Python's `BucketOUEParams`; the bucket labels are its values). */
export class BucketOUEParams extends BucketParams {
  static readonly className = "BucketOUEParams";
  static readonly fields = BUCKET_OUE_PARAMS;
  readonly protocol = "bucket-oue";
  /** The OUE these parameters run: `epsilon` over the k bucket labels. */
  readonly oue: OUEParams;

  constructor(values: ParamsDict) {
    super(values);
    this.checkBuckets();
    this.oue = new OUEParams({ epsilon: this.epsilon, domain_size: this.numBuckets, labels: this.labels });
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** 1/2: Pr[the value's bucket's bit is 1]. */
  get p(): number {
    return this.oue.p;
  }

  /** Pr[another bucket's bit is 1], as realized. */
  get q(): number {
    return this.oue.q;
  }

  get privacyCost(): PrivacyCost {
    return this.oue.privacyCost;
  }

  get schema(): readonly Field[] {
    return this.oue.schema;
  }

  get aggregateCells(): number {
    return this.oue.aggregateCells;
  }
}

/** The OUE bits of bucket `index` as a bigint (bit i: bucket i). */
export function drawBucketOue(params: BucketOUEParams, index: number, rng: RandomSource): bigint {
  return unaryDraw(params.p, params.q, params.numBuckets, index, rng);
}

/** Client encoder for `BucketOUEParams`: a number's bucket, reported by OUE. */
export class BucketOUEEncoder extends BucketEncoder<BucketOUEParams> {
  randomize(prepared: number): Report {
    return this.report([["bits", bitsString(drawBucketOue(this.params, prepared, this.rng), this.params.numBuckets)]]);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// dbitflip

/** Subset lists are kept only up to this many subsets; beyond, Floyd's algorithm draws the sample. */
const MAX_SUBSETS = 4096;

/** The d-subsets of [0, k) in lexicographic order (`itertools.combinations`), or `null` when there are more than
 * `MAX_SUBSETS`. */
function subsetList(k: number, d: number): number[][] | null {
  let count = 1;
  for (let i = 0; i < d; i++) {
    count = (count * (k - i)) / (i + 1); // C(k, i + 1), exact while small
    if (count > MAX_SUBSETS) return null;
  }
  const out: number[][] = [];
  const idx = Array.from({ length: d }, (_, i) => i);
  for (;;) {
    out.push([...idx]);
    let i = d - 1;
    while (i >= 0 && idx[i] === k - d + i) i--;
    if (i < 0) return out;
    idx[i]++;
    for (let j = i + 1; j < d; j++) idx[j] = idx[j - 1] + 1;
  }
}

/** `sample_mask`: a uniform d-subset of [0, k) by Floyd's algorithm (everything, nothing drawn, when d = k), as a
 * byte per bucket (1: sampled). */
export function floydSample(k: number, d: number, rng: RandomSource): Uint8Array {
  return d === k ? new Uint8Array(k).fill(1) : floydSubset(k, d, rng);
}

/** The ε of a dBitFlip report at the realized p1, p0 (`effective_epsilon`): ln(p1/p0) + ln((1−p0)/(1−p1)) when two
 * buckets may be sampled (d >= 2), the larger of the two terms when one is. */
export function dbitflipEpsilon(p1: number, p0: number, d: number): number {
  const up = log(p1 / p0), down = log((1.0 - p0) / (1.0 - p1));
  return d >= 2 ? up + down : Math.max(up, down);
}

/** A mask of a byte per bucket as a `bits` field: `"0"`/`"1"` per byte. */
export function maskString(mask: Uint8Array): string {
  let s = "";
  for (let i = 0; i < mask.length; i++) s += mask[i] ? "1" : "0";
  return s;
}

/** The wire of dBitFlip and memoized dBitFlip: `sampled` and `bits`, k bits each. */
export function sampledBitsSchema(k: number): readonly Field[] {
  return Object.freeze([{ name: "sampled", kind: "bits", size: k }, { name: "bits", kind: "bits", size: k }] as Field[]);
}

/**
 * dBitFlip over the buckets of `edges` (Python's `DBitFlipParams`): each report samples `d` of the k buckets and sends
 * each sampled bucket's bit, 1 with p1 = realized(σ(−ε/2)) for the value's bucket and p0 = realized(σ(ε/2)) for the
 * others. Charged max(ε_nominal, ε*), ε_nominal = ε (ε/2 when d = 1).
 */
export class DBitFlipParams extends BucketParams {
  static readonly className = "DBitFlipParams";
  static readonly fields = DBITFLIP_PARAMS;
  readonly protocol = "dbitflip";
  /** Buckets sampled per report. */
  readonly d: number;
  /** Pr[bit = 1 | the value's bucket], as realized. */
  readonly p1: number;
  /** Pr[bit = 1 | another sampled bucket], as realized. */
  readonly p0: number;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;
  private subsets_: number[][] | null | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkBuckets();
    checkParams(this.values, DBITFLIP_PARAMS, "d", "d", { d: () => this.numBuckets });
    this.d = this.values.d as number;
    const epsilon = this.epsilon;
    this.p1 = realizedProbability(logisticTail(-epsilon / 2));
    this.p0 = realizedProbability(logisticTail(epsilon / 2));
    if (this.p0 === 0.0 || this.p1 >= 1.0) {
      throw relation("epsilon_too_large", ["epsilon"], `epsilon=${epsilon} is too large for dBitFlip: 1/(e^(ε/2)+1) ` +
        "rounds to 0 at the client's resolution, so reports would not be private");
    }
    if (this.p1 <= this.p0) {
      throw relation("epsilon_too_small", ["epsilon"], `epsilon=${epsilon} is too small for dBitFlip: p0 and p1 are ` +
        "equal at the client's resolution, so reports would carry no information");
    }
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** The exact worst log-ratio of the realized law. */
  get effectiveEpsilon(): number {
    return dbitflipEpsilon(this.p1, this.p0, this.d);
  }

  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      const nominal = this.d >= 2 ? this.epsilon : this.epsilon / 2;
      this.cost = Object.freeze({ epsilon: Math.max(nominal, this.effectiveEpsilon), delta: 0.0 });
    }
    return this.cost;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) this.fields_ = sampledBitsSchema(this.numBuckets);
    return this.fields_;
  }

  get aggregateCells(): number {
    return 2 * this.numBuckets;
  }

  /** Every d-subset of the buckets in lexicographic order, or `null` when there are more than 4,096. */
  get subsets(): readonly (readonly number[])[] | null {
    if (this.subsets_ === undefined) this.subsets_ = subsetList(this.numBuckets, this.d);
    return this.subsets_;
  }
}

/** A dBitFlip report's two masks, a byte per bucket (1: set). */
export interface SampledBits {
  readonly sampled: Uint8Array;
  readonly bits: Uint8Array;
}

/** The dBitFlip report of bucket `index` (the draws of the module docstring). */
export function drawDBitFlip(params: DBitFlipParams, index: number, rng: RandomSource): SampledBits {
  const k = params.numBuckets, d = params.d;
  let sampled: Uint8Array;
  const subsets = d === k ? null : params.subsets;
  if (subsets !== null) {
    sampled = new Uint8Array(k);
    for (const i of subsets[rng.randbelow(subsets.length)]) sampled[i] = 1;
  } else {
    sampled = floydSample(k, d, rng);
  }
  const bits = new Uint8Array(k);
  if (d > 8) { // many sampled buckets: all k lanes at once, bit-sliced
    const lanes = bitsString(rng.bernoulliBits(params.p0, k), k);
    for (let j = 0; j < k; j++) if (sampled[j] && j !== index && lanes.charCodeAt(j) === 49) bits[j] = 1;
  } else {
    for (let j = 0; j < k; j++) if (sampled[j] && j !== index && rng.bernoulli(params.p0)) bits[j] = 1;
  }
  if (sampled[index] && rng.bernoulli(params.p1)) bits[index] = 1;
  return { sampled, bits };
}

/** Client encoder for `DBitFlipParams`; values are numbers in the edges' range. */
export class DBitFlipEncoder extends BucketEncoder<DBitFlipParams> {
  randomize(prepared: number): Report {
    const { sampled, bits } = drawDBitFlip(this.params, prepared, this.rng);
    return this.report([["sampled", maskString(sampled)], ["bits", maskString(bits)]]);
  }
}

// ---------------------------------------------------------------------------------------------------------------

export const bucketGrr: ProtocolEntry<BucketGRRParams, number> = {
  name: "bucket-grr",
  Params: BucketGRRParams,
  makeEncoder: (params, options) => new BucketGRREncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const bucketOue: ProtocolEntry<BucketOUEParams, number> = {
  name: "bucket-oue",
  Params: BucketOUEParams,
  makeEncoder: (params, options) => new BucketOUEEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const dbitflip: ProtocolEntry<DBitFlipParams, number> = {
  name: "dbitflip",
  Params: DBitFlipParams,
  makeEncoder: (params, options) => new DBitFlipEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
