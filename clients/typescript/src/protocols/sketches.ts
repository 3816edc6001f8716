/**
 * Apple's private Count Mean Sketch (CMS) and Hadamard Count Mean Sketch (HCMS), client side (`ldp/encoders/cms.py`,
 * `ldp/encoders/hcms.py`; "Learning with Privacy at Scale", 2017).
 *
 * CMS: draw a hash index j uniformly from [k], encode the value as the ±1 vector of length m that is +1 only at
 * h_j(value), flip every entry with probability 1/(1+e^{ε/2}), send (j, m bits) (bit 1 = +1).
 * HCMS: draw j from [k] and a Hadamard row r from [m] (m a power of two), send (j, r, bit) where the bit encodes
 * H[h_j(value), r] = (−1)^{popcount(h_j(value) & r)}, flipped with probability 1/(1+e^ε).
 *
 * Hash function j is MurmurHash3 of the value's UTF-8 bytes with seed `hash_seed + j`, mod m (docs/hashing.md).
 */
import { valueBytes } from "../bytes.js";
import { LdpTypeError, kindOf } from "../errors.js";
import { exp, log } from "../pymath.js";
import { MAX_SEED, bucketOfBytes } from "../hash/murmur3.js";
import { bernoulliThreshold } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, logisticTail, relation,
} from "../params/base.js";
import { CMS_PARAMS, HCMS_PARAMS } from "../params/tables.js";
import { Encoder, ProtocolEntry, Report, bitsString } from "../encoders/base.js";

/** The widest sketch (`MAX_WIDTH`). */
export const MAX_WIDTH = 1 << 24;

/** What CMS and HCMS parameters share: ε, `num_hashes` k, `width` m and the hash family (`SketchParams`). */
export abstract class SketchParams extends ProtocolParams {
  /** Whether a report is one Hadamard coefficient of the sketch row (HCMS), not the whole row (CMS). */
  abstract readonly hadamard: boolean;
  /** ε = this × ln((1−p)/p) for flip probability p. */
  protected abstract readonly epsilonPerFlip: number;
  private flip = NaN;
  private cost: PrivacyCost | undefined;

  constructor(values: ParamsDict) {
    super(values);
  }

  get epsilon(): number {
    return this.values.epsilon as number;
  }

  get numHashes(): number {
    return this.values.num_hashes as number;
  }

  get width(): number {
    return this.values.width as number;
  }

  get hashSeed(): number {
    return this.values.hash_seed as number;
  }

  get k(): number {
    return this.numHashes;
  }

  get m(): number {
    return this.width;
  }

  /** The flip probability before realization, from ε (each subclass's formula). */
  protected abstract flipOf(epsilon: number): number;

  /** `_check_sketch`, in Python's order; the subclass constructor calls it first. */
  protected checkSketch(): void {
    const v = this.values, rows = this.fieldSpecs;
    checkParams(v, rows, "epsilon", "epsilon");
    const epsilon = this.epsilon;
    this.flip = this.flipOf(epsilon);
    if (bernoulliThreshold(this.flip) === 0n) {
      throw relation("epsilon_too_large", ["epsilon"], `epsilon=${epsilon} is too large: the flip probability rounds to ` +
        "0 at the client's 2^-64 resolution, so reports would not be private");
    }
    checkParams(v, rows, "num_hashes", undefined, { hash_seed: () => MAX_SEED - this.numHashes + 1 });
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** Probability that the client flips one ±1 entry (CMS) or the one Hadamard coefficient (HCMS). */
  get flipProbability(): number {
    return this.flip;
  }

  /** Reports per hash function and sums per hash function and bucket: k·(m+1). */
  get aggregateCells(): number {
    return this.numHashes * (this.width + 1);
  }

  /** The ε the client really gives (the flip probability is floor(p·2^64)/2^64): at least `epsilon`. */
  get effectiveEpsilon(): number {
    const pq = Number(bernoulliThreshold(this.flip)) / 2.0 ** 64;
    return this.epsilonPerFlip * log((1.0 - pq) / pq);
  }

  /** The cost charged per report: max(epsilon, effectiveEpsilon). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: Math.max(this.epsilon, this.effectiveEpsilon), delta: 0.0 });
    return this.cost;
  }

  /** h_j(value) of bytes already made by `valueBytes`. */
  bucketOfBytes(data: Uint8Array, j: number): number {
    return bucketOfBytes(data, this.width, this.hashSeed + j);
  }

  /** [h_0(value), ..., h_{k-1}(value)]. */
  bucketsOf(value: string | Uint8Array): number[] {
    const data = valueBytes(value);
    return Array.from({ length: this.numHashes }, (_, j) => this.bucketOfBytes(data, j));
  }
}

/** Count Mean Sketch: ε per report, k hash functions, width m (`hash_seed` picks the family). */
export class CmsParams extends SketchParams {
  static readonly className = "CmsParams";
  static readonly fields = CMS_PARAMS;
  readonly protocol = "cms";
  readonly hadamard = false;
  protected readonly epsilonPerFlip = 2.0; // two entries differ between inputs, each ln((1−p)/p) = ε/2
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkSketch();
  }

  protected flipOf(epsilon: number): number {
    return logisticTail(epsilon / 2);
  }

  /** c_ε = (e^{ε/2}+1)/(e^{ε/2}−1). */
  get c(): number {
    const e = exp(this.epsilon / 2);
    return (e + 1) / (e - 1);
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      this.fields_ = Object.freeze([
        { name: "hash", kind: "uint", size: this.values.num_hashes as number },
        { name: "bits", kind: "bits", size: this.values.width as number },
      ] as Field[]);
    }
    return this.fields_;
  }
}

/** Hadamard Count Mean Sketch: ε per report, k hash functions, width m (a power of two). */
export class HcmsParams extends SketchParams {
  static readonly className = "HcmsParams";
  static readonly fields = HCMS_PARAMS;
  readonly protocol = "hcms";
  readonly hadamard = true;
  protected readonly epsilonPerFlip = 1.0;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkSketch();
    const m = this.width;
    if ((m & (m - 1)) !== 0) {
      throw relation("power_of_two", ["width"], `HCMS width m must be a power of two (Hadamard transform), got ${m}`);
    }
  }

  protected flipOf(epsilon: number): number {
    return logisticTail(epsilon);
  }

  /** c_ε = (e^ε+1)/(e^ε−1) (the full ε, not ε/2). */
  get c(): number {
    const e = exp(this.epsilon);
    return (e + 1) / (e - 1);
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      this.fields_ = Object.freeze([
        { name: "hash", kind: "uint", size: this.values.num_hashes as number },
        { name: "row", kind: "uint", size: this.values.width as number },
        { name: "bit", kind: "uint", size: 2 },
      ] as Field[]);
    }
    return this.fields_;
  }
}

/** The popcount of a non-negative int below 2^32. */
function popcount(x: number): number {
  let c = 0;
  for (let v = x >>> 0; v; v &= v - 1) c++;
  return c;
}

/** Sylvester Hadamard matrix entry H[a, row] = (−1)^{popcount(a AND row)} (+1 or −1). */
export function hadamardEntry(a: number, row: number): number {
  return popcount((a & row) >>> 0) & 1 ? -1 : 1;
}

/** The hashed bytes of a sketch value (`value_bytes(check_string_value(value, name))`). */
function sketchBytes(value: unknown, name: string): Uint8Array {
  if (typeof value !== "string" && !(value instanceof Uint8Array)) {
    throw new LdpTypeError("value_type", { expected: "string_or_bytes", got: kindOf(value) });
  }
  return valueBytes(value);
}

/** Client encoder for `CmsParams`; values are strings or bytes. */
export class CmsEncoder extends Encoder<CmsParams, Uint8Array> {
  /** The value's hashed bytes: a bad value fails here, before any charge. */
  prepare(value: unknown): Uint8Array {
    return sketchBytes(value, "CMS");
  }

  /** The payload's values in schema order: `[j, bits]` (draws: `randbelow(k)`, then the m flips). */
  draw(prepared: Uint8Array): [number, bigint] {
    const pr = this.params;
    const j = this.rng.randbelow(pr.numHashes);
    const onehot = 1n << BigInt(pr.bucketOfBytes(prepared, j));
    return [j, onehot ^ this.rng.bernoulliBits(pr.flipProbability, pr.width)];
  }

  randomize(prepared: Uint8Array): Report {
    const [j, bits] = this.draw(prepared);
    return this.report([["hash", j], ["bits", bitsString(bits, this.params.width)]]);
  }
}

/** Client encoder for `HcmsParams`; values are strings or bytes. */
export class HcmsEncoder extends Encoder<HcmsParams, Uint8Array> {
  /** The value's hashed bytes: a bad value fails here, before any charge. */
  prepare(value: unknown): Uint8Array {
    return sketchBytes(value, "HCMS");
  }

  /** The payload's values in schema order: `[j, row, bit]`; draws `randbelow(k)`, `randbelow(m)`, then the flip.
   * The bit is 1 iff H[h_j(v), row] = +1 survives (or −1 is flipped). */
  draw(prepared: Uint8Array): [number, number, number] {
    const pr = this.params;
    const j = this.rng.randbelow(pr.numHashes);
    const row = this.rng.randbelow(pr.width);
    const odd = popcount((pr.bucketOfBytes(prepared, j) & row) >>> 0) & 1;
    const kept = !this.rng.bernoulli(pr.flipProbability);
    return [j, row, odd ^ (kept ? 1 : 0)];
  }

  randomize(prepared: Uint8Array): Report {
    const [j, row, bit] = this.draw(prepared);
    return this.report([["hash", j], ["row", row], ["bit", bit]]);
  }
}

export const cms: ProtocolEntry<CmsParams, Uint8Array> = {
  name: "cms",
  Params: CmsParams,
  makeEncoder: (params, options) => new CmsEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const hcms: ProtocolEntry<HcmsParams, Uint8Array> = {
  name: "hcms",
  Params: HcmsParams,
  makeEncoder: (params, options) => new HcmsEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
