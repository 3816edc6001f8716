/**
 * RAPPOR (Erlingsson, Pihur & Korolova, CCS 2014), client side: `ldp/encoders/rappor.py`.
 *
 * A device holds a secret (kept, never sent) and a cohort in `[0, num_cohorts)` (kept, sent with every report). To
 * report a string: its Bloom filter in the cohort (`h` of `k` bits); the permanent randomized response (PRR),
 * memoized per value by deriving its randomness from the secret and the value (HMAC-SHA256, `KeyedRandomSource`);
 * then the instantaneous randomized response (IRR), fresh per report, from the encoder's source.
 *
 * Two modes: `"ldp"` (Bloom bit j = MurmurHash3 of `uint32_BE(cohort) ‖ value` with seed j, mod k; the PRR drawn
 * from `KeyedRandomSource(secret, PRR domain ‖ params fingerprint ‖ uint32_BE(cohort) ‖ value)`), and `"google"`
 * (Google's reference client: bit j = byte j of MD5(...) mod k, h <= 16; the PRR masks from the bytes of
 * HMAC-SHA256(secret, uint32_BE(Bloom filter)), k <= 32, which quantizes f to ceil(128 f)/128).
 */
import { concatBytes, uint32BE, utf8Encode, valueBytes, namespaced } from "../bytes.js";
import { LdpTypeError, LdpValueError, kindOf } from "../errors.js";
import { log } from "../pymath.js";
import { md5Buckets } from "../hash/md5.js";
import { bucketOfBytes } from "../hash/murmur3.js";
import { hmacSha256 } from "../hash/sha256.js";
import {
  KeyedRandomSource, RandomSource, bernoulliWords, bigIntOfWords, checkResolvable, realizedProbability, wordsOfBigInt,
} from "../random.js";
import {
  ChoiceOf, Field, ParamsDict, PrivacyCost, ProtocolParams, checkChoice, checkCollectable, checkInt, checkParams,
  relation,
} from "../params/base.js";
import { RAPPOR_PARAMS } from "../params/tables.js";
import {
  Charge, Encoder, EncoderOptions, MemoizedCharge, ProtocolEntry, Report, bitsStringOfWords,
} from "../encoders/base.js";

/** The two modes (a parameter, so part of the fingerprint; its table's choices). */
export type RapporMode = ChoiceOf<typeof RAPPOR_PARAMS, "mode">;
/** How reports of one value are charged: `min(t·ε₁, ε∞)` (default), or ε∞ on the first report and 0 after. */
export const CHARGING = ["min", "upfront"] as const;
export type Charging = (typeof CHARGING)[number];
/** The most cohorts (`MAX_COHORTS`). */
export const MAX_COHORTS = 1 << 16;
/** Values whose Bloom filter, PRR and memo key an encoder keeps (least recently used evicted). */
export const MEMO_ENTRIES = 256;
/** Longest value (UTF-16 units of a string here; Python counts characters) whose PRR is kept in memory. */
export const MEMO_MAX_VALUE = 512;
/** Bytes of a client secret drawn when none is given (`SECRET_BYTES`). */
export const SECRET_BYTES = 32;

const PRR_DOMAIN = utf8Encode("ldp/rappor/prr/v1\0");
const MEMO_DOMAIN = utf8Encode("ldp/rappor/memo/v1\0");

/** RAPPOR parameters: Bloom filter (k bits, h hashes), m cohorts, IRR p/q, PRR f, and the mode. */
export class RapporParams extends ProtocolParams {
  static readonly className = "RapporParams";
  static readonly fields = RAPPOR_PARAMS;
  readonly protocol = "rappor";
  /** k, h, m */
  readonly numBloombits: number;
  readonly numHashes: number;
  readonly numCohorts: number;
  readonly p: number;
  readonly q: number;
  readonly f: number;
  readonly mode: RapporMode;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    const v = this.values;
    checkParams(v, RAPPOR_PARAMS, undefined, "num_cohorts");
    this.numBloombits = v.num_bloombits as number;
    this.numHashes = v.num_hashes as number;
    this.numCohorts = v.num_cohorts as number;
    if (this.numHashes > this.numBloombits) {
      throw relation("h<=k", ["num_hashes", "num_bloombits"],
        `num_hashes (h=${this.numHashes}) must be <= num_bloombits (k=${this.numBloombits})`);
    }
    for (const name of ["p", "q", "f"] as const) { // each in [0, 1] and resolvable (f also below 1: f = 1 is noise)
      checkParams(v, RAPPOR_PARAMS, name, name);
      checkResolvable(v[name], name);
    }
    const p = v.p as number, q = v.q as number, f = v.f as number;
    if (!(p < q)) {
      throw relation("p<q", ["p", "q"], "RAPPOR needs 0 <= p < q <= 1 (a 1 in the PRR must be reported more often), " +
        `got p=${p}, q=${q}`);
    }
    checkParams(v, RAPPOR_PARAMS, "mode", "mode");
    this.p = p;
    this.q = q;
    this.f = f;
    this.mode = v.mode as RapporMode;
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  get k(): number {
    return this.numBloombits;
  }

  get h(): number {
    return this.numHashes;
  }

  get m(): number {
    return this.numCohorts;
  }

  /** `ValueError` unless Google's client can encode with these parameters: k <= 32 and h <= 16 (Google mode). */
  checkGoogleClient(): void {
    if (this.mode === "google" && (this.numBloombits > 32 || this.numHashes > 16)) {
      throw relation("google_client", ["num_bloombits", "num_hashes", "mode"], "Google's client needs k <= 32 (PRR message is a 32-bit integer) and h <= 16 " +
        `(one MD5 byte per hash), got k=${this.numBloombits}, h=${this.numHashes}; ` +
        "these parameters can decode Google's files but not encode");
    }
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      this.fields_ = Object.freeze([
        { name: "cohort", kind: "uint", size: this.numCohorts },
        { name: "bits", kind: "bits", size: this.numBloombits },
      ] as Field[]);
    }
    return this.fields_;
  }

  /** Reports per cohort and ones per cohort and bit: m·(k+1). */
  get aggregateCells(): number {
    return this.numCohorts * (this.numBloombits + 1);
  }

  /** The f the client really applies: floor(f·2^64)/2^64, or ceil(128 f)/128 in Google mode. */
  get fEffective(): number {
    return this.mode === "google" ? Math.ceil(this.f * 128) / 128 : realizedProbability(this.f);
  }

  /** Pr[report bit = 1 | Bloom bit = 1] = f(p+q)/2 + (1−f)q (realized f, p, q). */
  get qStar(): number {
    const f = this.fEffective, p = realizedProbability(this.p), q = realizedProbability(this.q);
    return 0.5 * f * (p + q) + (1.0 - f) * q;
  }

  /** Pr[report bit = 1 | Bloom bit = 0] = f(p+q)/2 + (1−f)p (realized f, p, q). */
  get pStar(): number {
    const f = this.fEffective, p = realizedProbability(this.p), q = realizedProbability(this.q);
    return 0.5 * f * (p + q) + (1.0 - f) * p;
  }

  /** ε₁ = h·|ln(q*(1−p*) / (p*(1−q*)))|: one report (`Infinity` if p* = 0 or q* = 1). */
  get epsilonOne(): number {
    const ps = this.pStar, qs = this.qStar;
    if (ps <= 0.0 || qs >= 1.0) return Infinity;
    return this.numHashes * Math.abs(log((qs * (1.0 - ps)) / (ps * (1.0 - qs))));
  }

  /** ε∞ = 2h·ln((1−f/2)/(f/2)): any number of reports of one value (`Infinity` if f = 0). */
  get epsilonInf(): number {
    const f = this.fEffective;
    return f === 0.0 ? Infinity : 2 * this.numHashes * log((1.0 - f / 2) / (f / 2));
  }

  /** The cost of one report, ε₁ (a `ValueError` if these parameters give no finite ε₁). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      const eps = this.epsilonOne;
      if (!Number.isFinite(eps)) {
        throw relation("finite_epsilon", ["p", "q", "f"],
          "these RAPPOR parameters give no finite ε₁ (p* = 0 or q* = 1): reports are not private");
      }
      this.cost = Object.freeze({ epsilon: eps, delta: 0.0 });
    }
    return this.cost;
  }
}

/** The h Bloom bit indices of `value` in `cohort` (repeats when hashes collide): `bloom_bits`. */
export function bloomBits(params: RapporParams, value: string | Uint8Array, cohort: number): number[] {
  const data = namespaced(cohort, value);
  if (params.mode === "google") return md5Buckets(data, params.numBloombits, params.numHashes);
  const out: number[] = [];
  for (let j = 0; j < params.numHashes; j++) out.push(bucketOfBytes(data, params.numBloombits, j));
  return out;
}

/** The Bloom filter as a bigint: bit i set iff some hash of `value` in `cohort` is i (`bloom_filter`). */
export function bloomFilter(params: RapporParams, value: string | Uint8Array, cohort: number): bigint {
  let bloom = 0n;
  for (const i of bloomBits(params, value, cohort)) bloom |= 1n << BigInt(i);
  return bloom;
}

/**
 * Google's `get_prr_masks` (`google_prr_masks`): D = HMAC-SHA256(secret, message); for bit i < k the fair coin is
 * bit 0 of D[i] and the f-mask is `(D[i] >> 1) < 128 f`. Returns `[uniform, fmask]` (bit i = Bloom index i).
 */
export function googlePrrMasks(secret: Uint8Array, message: Uint8Array, f: number, k: number): [bigint, bigint] {
  if (k > 32) {
    throw new LdpValueError("param_range", { param: "num_bloombits", got: k, max: 32 },
      `Google's PRR draws one HMAC-SHA256 byte per bit: k <= 32, got ${k}`);
  }
  const digest = hmacSha256(secret, message);
  const threshold = f * 128;
  let uniform = 0n, fmask = 0n;
  for (let i = 0; i < k; i++) {
    if (digest[i] & 1) uniform |= 1n << BigInt(i);
    if (digest[i] >> 1 < threshold) fmask |= 1n << BigInt(i);
  }
  return [uniform, fmask];
}

/** A value as the encoder needs it: Bloom filter, the message its PRR is memoized on, and (filled in on first use)
 * the PRR, as a bigint and as the little-endian 32-bit words each report's IRR is drawn against, and the ledger's
 * memo key. */
export interface RapporPrepared {
  readonly bloom: bigint;
  readonly message: Uint8Array;
  prr: bigint | null;
  prrWords: Uint32Array | null;
  memoKey: Uint8Array | null;
}

/** What a RAPPOR encoder is made with, beyond randomness, secret and cohort. */
export interface RapporOptions extends EncoderOptions {
  /** `"min"` (default) or `"upfront"`: see `chargeFor`. */
  readonly charging?: Charging;
  /** For audits and simulation only: the PRR drawn from this source instead of from the secret (nothing memoized;
   * "ldp" mode only). */
  readonly prrRng?: RandomSource;
}

/** `client_secret`: the given secret (a string is UTF-8 encoded), or `SECRET_BYTES` fresh bytes from `rng`. */
export function clientSecret(secret: unknown, rng: RandomSource): Uint8Array {
  if (secret === undefined || secret === null) return rng.tokenBytes(SECRET_BYTES);
  const bytes = typeof secret === "string" ? utf8Encode(secret) : secret;
  if (!(bytes instanceof Uint8Array)) throw new LdpTypeError("param_type", { param: "secret", expected: "string_or_bytes", got: kindOf(bytes) });
  if (bytes.length === 0) throw new LdpTypeError("param_length", { param: "secret", got: 0, min: 1 }, "the secret must not be empty");
  return Uint8Array.from(bytes);
}

/**
 * One RAPPOR client: a secret and a cohort, which the app keeps for good (a new secret gives every value a new PRR,
 * and the ledger then charges it anew). `secret` and `cohort` default to fresh ones from the encoder's source (the
 * secret first, then the cohort, as Python draws them); the client runtime passes both.
 */
export class RapporEncoder extends Encoder<RapporParams, RapporPrepared> {
  readonly secret: Uint8Array;
  readonly cohort: number;
  readonly charging: Charging;
  private readonly prrRng: RandomSource | undefined;
  private readonly hexFp: Uint8Array;
  private readonly memo = new Map<string, RapporPrepared>();
  /** The memo's most recently used entry (already last in its order: a repeat needs no reordering). */
  private newest: RapporPrepared | undefined;

  constructor(params: RapporParams, options: RapporOptions = {}) {
    super(params, options);
    params.checkGoogleClient();
    const charging = options.charging ?? "min";
    checkChoice(charging, "charging", CHARGING);
    this.secret = clientSecret(options.secret, this.rng);
    this.cohort = options.cohort === undefined || options.cohort === null
      ? this.rng.randbelow(params.numCohorts)
      : checkInt(options.cohort, "cohort", 0, params.numCohorts - 1);
    if (options.prrRng !== undefined && params.mode === "google") {
      throw new TypeError("prrRng replaces the PRR derivation of 'ldp' mode only");
    }
    this.charging = charging;
    this.prrRng = options.prrRng;
    this.hexFp = utf8Encode(params.fingerprint);
  }

  /** What the app must persist to keep memoization: `{secret: hex, cohort}`. */
  state(): { secret: string; cohort: number } {
    let hex = "";
    for (const b of this.secret) hex += b.toString(16).padStart(2, "0");
    return { secret: hex, cohort: this.cohort };
  }

  /** Bloom filter of `value` (a string or bytes) and the message its PRR is memoized on (memoized for strings). */
  prepare(value: unknown): RapporPrepared {
    const memoable = typeof value === "string" && value.length <= MEMO_MAX_VALUE;
    if (memoable) {
      const hit = this.memo.get(value as string);
      if (hit !== undefined) {
        if (hit !== this.newest) {
          this.memo.delete(value as string);
          this.memo.set(value as string, hit);
          this.newest = hit;
        }
        return hit;
      }
    }
    if (typeof value !== "string" && !(value instanceof Uint8Array)) {
      throw new LdpTypeError("value_type", { expected: "string_or_bytes", got: kindOf(value) });
    }
    const bloom = bloomFilter(this.params, value, this.cohort);
    const message = this.params.mode === "google"
      ? uint32BE(Number(bloom))
      : concatBytes(PRR_DOMAIN, this.hexFp, uint32BE(this.cohort), valueBytes(value));
    const prepared: RapporPrepared = { bloom, message, prr: null, prrWords: null, memoKey: null };
    if (memoable) {
      this.memo.set(value as string, prepared);
      this.newest = prepared;
      if (this.memo.size > MEMO_ENTRIES) this.memo.delete(this.memo.keys().next().value as string);
    }
    return prepared;
  }

  /** The PRR B' (bit i = Bloom index i): the same for the same value, always. */
  permanentResponse(prepared: RapporPrepared): bigint {
    if (prepared.prr !== null && this.prrRng === undefined) return prepared.prr;
    const pr = this.params, k = pr.numBloombits;
    let uniform: bigint, fmask: bigint;
    if (pr.mode === "google") {
      [uniform, fmask] = googlePrrMasks(this.secret, prepared.message, pr.f, k);
    } else {
      const src = this.prrRng ?? new KeyedRandomSource(this.secret, prepared.message);
      fmask = src.bernoulliBits(pr.f, k);
      uniform = src.bernoulliBits(0.5, k);
    }
    const prr = (prepared.bloom & ~fmask) | (uniform & fmask);
    if (this.prrRng === undefined) prepared.prr = prr;
    return prr;
  }

  /** `permanentResponse` as little-endian 32-bit words (memoized with it). */
  private permanentWords(prepared: RapporPrepared): Uint32Array {
    if (prepared.prrWords !== null && this.prrRng === undefined) return prepared.prrWords;
    const words = wordsOfBigInt(this.permanentResponse(prepared), this.params.numBloombits);
    if (this.prrRng === undefined) prepared.prrWords = words;
    return words;
  }

  /** The IRR: fresh masks P (bits 1 w.p. p) then Q (w.p. q); S = (P & ~B') | (Q & B'). */
  instantaneousResponse(prr: bigint): bigint {
    return bigIntOfWords(this.instantaneousWords(wordsOfBigInt(prr, this.params.numBloombits)));
  }

  /** `instantaneousResponse` on little-endian 32-bit words (the same draws: P then Q, by `bernoulliWords`). */
  private instantaneousWords(prr: Uint32Array): Uint32Array {
    const pr = this.params;
    const irr = bernoulliWords(this.rng, pr.p, pr.numBloombits); // P, then overwritten with S
    const qmask = bernoulliWords(this.rng, pr.q, pr.numBloombits);
    for (let w = 0; w < irr.length; w++) irr[w] = (irr[w] & ~prr[w]) | (qmask[w] & prr[w]);
    return irr;
  }

  randomize(prepared: RapporPrepared): Report {
    const irr = this.instantaneousWords(this.permanentWords(prepared));
    return this.report([["cohort", this.cohort], ["bits", bitsStringOfWords(irr, this.params.numBloombits)]]);
  }

  /**
   * The memoization-aware charge: with `charging: "min"`, ε₁ per report with the total per value capped at ε∞;
   * with `"upfront"`, ε∞ on a value's first report and nothing after. The memo key is
   * HMAC-SHA256(secret, memo domain ‖ message). Plain ε₁ when f = 0 (nothing memoized).
   */
  override chargeFor(prepared: RapporPrepared): Charge {
    const pr = this.params;
    const one = pr.privacyCost;
    const inf = pr.epsilonInf;
    if (!Number.isFinite(inf)) return one;
    const cap: PrivacyCost = { epsilon: inf, delta: 0.0 };
    if (prepared.memoKey === null) prepared.memoKey = hmacSha256(this.secret, concatBytes(MEMO_DOMAIN, prepared.message));
    const key = prepared.memoKey;
    const charge: MemoizedCharge = this.charging === "upfront"
      ? { key, first: cap, then: { epsilon: 0.0, delta: 0.0 }, cap }
      : { key, first: one, then: one, cap };
    return charge;
  }
}

/** RAPPOR as the client runtime sees it: memoized from the metric's secret, one of `num_cohorts` cohorts. */
export const rappor: ProtocolEntry<RapporParams, RapporPrepared> = {
  name: "rappor",
  Params: RapporParams,
  makeEncoder: (params: RapporParams, options?: RapporOptions) => new RapporEncoder(params, options),
  needsSecret: true,
  assignedCohorts: (params: RapporParams) => params.numCohorts,
};
