/**
 * Local hashing, client side (`ldp/encoders/local_hashing.py`): binary (`blh`, g = 2) and optimized (`olh`,
 * g = floor(e^ε + 1/2) + 1) local hashing (Wang, Blocki, Li, Jha, USENIX Security 2017).
 *
 * A report of value index x is `(seed, y)`: `seed = R(seed_range)` names the hash function
 * h_seed(x) = MurmurHash3_x86_32(uint32_LE(x), seed) mod g (the index is hashed, never a label), and y is GRR over
 * [0, g) of h_seed(x): kept w.p. p = realized(1/(1 + (g − 1)·e^−ε)), else a uniform other value (`R(g − 1)`).
 * ε* = ln(p(g − 1)/(1 − p)), charged max(ε, ε*).
 */
import { exp, log } from "../pymath.js";
import { hashUint32LE } from "../hash/murmur3.js";
import { realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkEpsilon, checkInt, checkParams, relation,
} from "../params/base.js";
import { BLH_PARAMS, OLH_PARAMS } from "../params/tables.js";
import { DomainEncoder, ProtocolEntry, Report, checkLabels, domainIndexOf, withFrozenLabels } from "../encoders/base.js";

/** Default number of hash seeds a report draws from: every MurmurHash3 seed (`SEED_RANGE`). */
export const SEED_RANGE = 2 ** 32;

/** `lh_hash`: h_seed(index) = MurmurHash3_x86_32(uint32_LE(index), seed) mod g (0 <= index, seed < 2^32). */
export function lhHash(index: number, seed: number, g: number): number {
  return hashUint32LE(index, seed) % g;
}

/** `olh_width`: OLH's g = floor(e^ε + 1/2) + 1, refusing ε > 32 (g would exceed any 32-bit hash's range). */
export function olhWidth(epsilon: number): number {
  if (epsilon > 32.0) {
    throw relation("hash_range", ["epsilon"], `epsilon=${epsilon} is too large for olh: g = round(e^ε) + 1 exceeds ` +
      "2**32, the range of a 32-bit hash");
  }
  return Math.floor(exp(epsilon) + 0.5) + 1;
}

/**
 * What BLH and OLH share (`LocalHashingParams`): the hash range g, the realized GRR probabilities over [0, g), the
 * seed range, the domain and the wire format `seed`, `y`. A leaf class's constructor calls `checkLocalHashing`.
 */
export abstract class LocalHashingParams extends ProtocolParams {
  private labels_: readonly string[] | null = null;
  private p_: number | undefined;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    const v = withFrozenLabels(values);
    super(v.seed_range === undefined ? { ...v, seed_range: SEED_RANGE } : v);
  }

  /** The hash range: reports carry y in [0, g). */
  abstract get g(): number;

  get epsilon(): number {
    return this.values.epsilon as number;
  }

  override get domainSize(): number {
    return this.values.domain_size as number;
  }

  get labels(): readonly string[] | null {
    return this.labels_;
  }

  get seedRange(): number {
    return this.values.seed_range as number;
  }

  /** `_check`, in Python's order: the table (ε, the domain, the seed range), then the rules. */
  protected checkLocalHashing(): void {
    checkParams(this.values, this.fieldSpecs);
    const epsilon = this.epsilon;
    const g = this.g;
    if (g > 2 ** 32) {
      throw relation("hash_range", ["epsilon"], `epsilon=${epsilon} is too large for ${this.protocol}: g = ${g} ` +
        "exceeds 2**32, the range of a 32-bit hash");
    }
    if (this.p >= 1.0) {
      throw relation("epsilon_too_large", ["epsilon"], `epsilon=${epsilon} is too large for ${this.protocol}: the keep ` +
        "probability rounds to 1 at the client's resolution, so reports would not be private");
    }
    if (this.p <= this.q) {
      throw relation("epsilon_too_small", ["epsilon"], `epsilon=${epsilon} is too small for ${this.protocol}: the keep ` +
        "probability rounds to 1/g, so reports would carry no information");
    }
    this.labels_ = checkLabels(this.values.labels, this.domainSize);
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** Pr[y = h_seed(v)]: e^ε/(e^ε+g−1), as the client realizes it. */
  get p(): number {
    if (this.p_ === undefined) this.p_ = realizedProbability(1.0 / (1.0 + (this.g - 1) * exp(-this.epsilon)));
    return this.p_;
  }

  /** Pr[y = u] for one given u ≠ h_seed(v): (1−p)/(g−1), exactly as drawn. */
  get q(): number {
    return (1.0 - this.p) / (this.g - 1);
  }

  /** Pr[a report supports v | value v] = p. */
  get pStar(): number {
    return this.p;
  }

  /** Pr[a report supports v | value u ≠ v] = 1/g. */
  get qStar(): number {
    return 1.0 / this.g;
  }

  /** The ε of the realized GRR over [0, g): ln(p(g−1)/(1−p)). */
  get effectiveEpsilon(): number {
    return log(this.p * (this.g - 1) / (1.0 - this.p));
  }

  /** max(epsilon, effectiveEpsilon). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: Math.max(this.epsilon, this.effectiveEpsilon), delta: 0.0 });
    return this.cost;
  }

  get aggregateCells(): number {
    return this.domainSize;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      this.fields_ = Object.freeze([
        { name: "seed", kind: "uint", size: this.values.seed_range as number },
        { name: "y", kind: "uint", size: this.g },
      ] as Field[]);
    }
    return this.fields_;
  }

  /** `hash_of`: h_seed of a value (label or index), the bucket a report with this seed keeps w.p. p. */
  hashOf(value: unknown, seed: number): number {
    const index = domainIndexOf(this, value);
    return lhHash(index, checkInt(seed, "seed", 0, this.seedRange - 1), this.g);
  }

  /** The name of value `index`: its label, else the index. */
  labelOf(index: number): string {
    return this.labels !== null ? this.labels[index] : String(index);
  }
}

/** Binary local hashing: g = 2. */
export class BLHParams extends LocalHashingParams {
  static readonly className = "BLHParams";
  static readonly fields = BLH_PARAMS;
  readonly protocol = "blh";

  constructor(values: ParamsDict) {
    super(values);
    this.checkLocalHashing();
  }

  get g(): number {
    return 2;
  }
}

/** Optimized local hashing: g = round(e^ε) + 1 (`olhWidth`). */
export class OLHParams extends LocalHashingParams {
  static readonly className = "OLHParams";
  static readonly fields = OLH_PARAMS;
  readonly protocol = "olh";
  private g_: number | undefined;

  constructor(values: ParamsDict) {
    super(values);
    this.checkLocalHashing();
  }

  /** floor(e^ε + 1/2) + 1. */
  get g(): number {
    if (this.g_ === undefined) this.g_ = olhWidth(checkEpsilon(this.values.epsilon));
    return this.g_;
  }
}

/** Client encoder for `BLHParams` and `OLHParams`; values are labels or indices in [0, d). */
export class LocalHashingEncoder<P extends LocalHashingParams = LocalHashingParams> extends DomainEncoder<P> {
  /** The payload's values `[seed, y]`: draws `R(seed_range)`, `B(p)`, then `R(g − 1)` if false. */
  draw(prepared: number): [number, number] {
    const rng = this.rng, pr = this.params;
    const g = pr.g;
    const seed = rng.randbelow(pr.seedRange);
    const x = lhHash(prepared, seed, g);
    if (rng.bernoulli(pr.p)) return [seed, x];
    const other = rng.randbelow(g - 1); // uniform over the g − 1 other hash values
    return [seed, other + (other >= x ? 1 : 0)];
  }

  randomize(prepared: number): Report {
    const [seed, y] = this.draw(prepared);
    return this.report([["seed", seed], ["y", y]]);
  }
}

export const olh: ProtocolEntry<OLHParams, number> = {
  name: "olh",
  Params: OLHParams,
  makeEncoder: (params, options) => new LocalHashingEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const blh: ProtocolEntry<BLHParams, number> = {
  name: "blh",
  Params: BLHParams,
  makeEncoder: (params, options) => new LocalHashingEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
