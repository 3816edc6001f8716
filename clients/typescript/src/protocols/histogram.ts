/**
 * Histograms of numbers over the buckets of `edges`, client side (`ldp/encoders/histogram_buckets.py`, `histogram.py`,
 * `dbitflip_memo.py`): GRR and OUE over the buckets (`bucket-grr`, `bucket-oue`), dBitFlip (`dbitflip`; Ding,
 * Kulkarni & Yekhanin, NeurIPS 2017) and its memoized form (`memo-dbitflip`, ibid. §3–4).
 *
 * Bucket i is [edges[i], edges[i+1]), the last one closed; a number outside [edges[0], edges[k]] is refused unless
 * `clip` puts it in the first or last bucket. Draws (docs/conformance.md):
 *
 * - bucket-grr: `B(p)`, then `R(k−1)` if false (GRR over the k buckets).
 * - bucket-oue: `BB(q, k)`, `B(1/2)` (OUE over the k buckets).
 * - dbitflip: the sample of d buckets (nothing if d = k; `R(C(k, d))` into the lexicographic list of d-subsets when
 *   C(k, d) <= 4096; else Floyd's algorithm), then `BB(p0, k)` if d > 8, else `B(p0)` per sampled bucket other than
 *   the value's (lowest first), then `B(p1)` if the value's bucket is sampled.
 * - memo-dbitflip: the sample (Floyd) and each bucket's response from the keyed stream of the metric secret; on the
 *   injected stream only `B(γ)` per sampled bucket (lowest first) when γ > 0, each flipping its bit.
 */
import { concatBytes, utf8Encode } from "../bytes.js";
import { PyFloat, pyFloatRepr } from "../canonical.js";
import { LdpTypeError, LdpValueError, exactInt, kindOf, showValue } from "../errors.js";
import { log } from "../pymath.js";
import { KeyedRandomSource, RandomSource, realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkFinite, checkParams, logisticTail, relation,
  renaming,
} from "../params/base.js";
import {
  BUCKET_GRR_PARAMS, BUCKET_OUE_PARAMS, DBITFLIP_PARAMS, MEMO_DBITFLIP_PARAMS,
} from "../params/tables.js";
import {
  Encoder, EncoderOptions, MemoizedCharge, ProtocolEntry, Report, bitsString,
} from "../encoders/base.js";
import { Memo } from "../encoders/memo.js";
import { GRRParams } from "./randomized-response.js";
import { OUEParams, unaryDraw } from "./unary.js";
import { floydSubset } from "./subset-selection.js";

/** Most buckets a histogram may have (`MAX_BUCKETS`: its edges must fit an aggregate file's header). */
export const MAX_BUCKETS = 1 << 15;

// ---------------------------------------------------------------------------------------------------------------
// Buckets (`histogram_buckets.py`)

/** `check_edges`: `edges` as doubles: a list of 3 to MAX_BUCKETS + 1 finite real numbers, strictly increasing. */
export function checkEdges(edges: unknown): number[] {
  if (!Array.isArray(edges)) throw new LdpTypeError("param_type", { param: "edges", expected: "list", got: kindOf(edges) });
  if (!(edges.length >= 3 && edges.length <= MAX_BUCKETS + 1)) {
    throw new LdpValueError("param_length", { param: "edges", got: edges.length, min: 3, max: MAX_BUCKETS + 1 },
      `edges must have between 3 and ${MAX_BUCKETS + 1} entries (2 to ${MAX_BUCKETS} buckets), got ${edges.length}`);
  }
  const out: number[] = [];
  for (const [i, e] of edges.entries()) {
    checkFinite(e, "edges", { index: i });
    if (out.length && e <= out[out.length - 1]) {
      throw relation("edges_increasing", ["edges"], `edges must be strictly increasing, got ${out[out.length - 1]} ` +
        `then ${e} at index ${i}`);
    }
    out.push(e);
  }
  return out;
}

/** An edge in a label: an integral edge below 1e16 as digits, anything else as Python's float repr. */
function edgeText(e: number): string {
  return Number.isInteger(e) && Math.abs(e) < 1e16 ? String(Math.trunc(e)) : pyFloatRepr(e);
}

/** `bucket_labels`: `"[a, b)"` per bucket, `"[a, b]"` for the last (closed) one. */
export function bucketLabels(edges: readonly number[]): string[] {
  const k = edges.length - 1;
  return Array.from({ length: k }, (_, i) => `[${edgeText(edges[i])}, ${edgeText(edges[i + 1])}${i === k - 1 ? "]" : ")"}`);
}

/**
 * `bucket_index`: the bucket of a real value (a number, a bigint compared exactly with the edges, or a `PyFloat`)
 * among the buckets of `edges`; a value out of range is clipped to the first or last bucket when `clip`, else refused
 * with Python's text, which names the value as Python would: an integral number as an int (`7`), a `PyFloat` as a
 * float (`7.0`).
 */
export function bucketIndex(edges: readonly number[], given: unknown, clip: boolean): number {
  const value = given instanceof PyFloat ? given.value : given;
  if (typeof value !== "number" && typeof value !== "bigint") {
    throw new LdpTypeError("value_type", { expected: "float", got: kindOf(given) });
  }
  if (typeof value === "number" && !Number.isFinite(value)) {
    throw new LdpValueError("value_range", { got: value, min: edges[0], max: edges[edges.length - 1], finite: true });
  }
  const k = edges.length - 1;
  // number and bigint compare exactly in JS, as Python compares an int with a float
  const below = value < edges[0], above = value > edges[k];
  if (!below && !above) {
    let lo = 0, hi = edges.length; // bisect_right: the number of edges <= value
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (value < edges[mid]) hi = mid;
      else lo = mid + 1;
    }
    return Math.min(lo - 1, k - 1);
  }
  if (clip) return below ? 0 : k - 1;
  throw new LdpValueError("value_range", { got: exactInt(value), min: edges[0], max: edges[k] },
    `value ${showValue(given)} is outside the histogram's range [${edges[0]}, ${edges[k]}] (pass clip: true in the ` +
    "params to clip it)");
}

/** `values` with a list of `edges` copied and frozen (Python's `from_dict` makes it a tuple), so a caller's later
 * change to its array cannot change the parameters or their fingerprint. */
function withFrozenEdges(values: ParamsDict): ParamsDict {
  return Array.isArray(values.edges) ? { ...values, edges: Object.freeze([...values.edges]) } : values;
}

/**
 * What every histogram protocol's params share (Python's `_Buckets`): `epsilon`, the checked `edges`, `clip`, the
 * buckets and their labels. A leaf class's constructor calls `checkBuckets` first, as Python's `__post_init__`.
 */
export abstract class BucketParams extends ProtocolParams {
  private edges_: readonly number[] = [];
  private clip_ = false;
  private labels_: readonly string[] | undefined;

  constructor(values: ParamsDict) {
    super(withFrozenEdges(values));
  }

  /** `check_epsilon`, then `_check_buckets`: the edges, then `clip`. */
  protected checkBuckets(): void {
    const v = this.values, rows = this.fieldSpecs;
    checkParams(v, rows, "epsilon", "epsilon");
    this.edges_ = Object.freeze(checkEdges(v.edges));
    checkParams(v, rows, "clip", "clip");
    this.clip_ = v.clip as boolean;
  }

  get epsilon(): number {
    return this.values.epsilon as number;
  }

  /** The edges as doubles. */
  get edges(): readonly number[] {
    return this.edges_;
  }

  /** Whether numbers outside the edges go to the first or last bucket (else they are refused). */
  get clip(): boolean {
    return this.clip_;
  }

  /** k, the number of buckets. */
  get numBuckets(): number {
    return this.edges_.length - 1;
  }

  override get domainSize(): number {
    return this.numBuckets;
  }

  /** Each bucket's label (`"[0, 1)"`, …, the last `"[a, b]"`). */
  get labels(): readonly string[] {
    if (this.labels_ === undefined) this.labels_ = Object.freeze(bucketLabels(this.edges_));
    return this.labels_;
  }

  /** The bucket of a number (`bucketIndex`). */
  bucketOf(value: unknown): number {
    return bucketIndex(this.edges_, value, this.clip_);
  }
}

/** An encoder whose values are numbers, prepared as their bucket. */
export abstract class BucketEncoder<P extends BucketParams> extends Encoder<P, number> {
  prepare(value: unknown): number {
    return this.params.bucketOf(value);
  }
}

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
function dbitflipEpsilon(p1: number, p0: number, d: number): number {
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
function sampledBitsSchema(k: number): readonly Field[] {
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
// memo-dbitflip

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

export const memoDbitflip: ProtocolEntry<MemoDBitFlipParams, number> = {
  name: "memo-dbitflip",
  Params: MemoDBitFlipParams,
  makeEncoder: (params, options) => new MemoDBitFlipEncoder(params, options),
  needsSecret: true,
  assignedCohorts: () => 0,
};
