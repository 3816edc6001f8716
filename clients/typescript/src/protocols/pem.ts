/**
 * PEM, the prefix extending method (Wang, Li, Jha et al., "Locally differentially private heavy hitter
 * identification", IEEE TDSC 2019), client side (`ldp/encoders/pem.py`).
 *
 * A value is a string of at most `max_length` bytes (a string as UTF-8, a `Uint8Array` as it is), NUL-padded to
 * `max_length` bytes and read as one big-endian integer of L = 8·max_length bits. Refused before any charge: an
 * empty value, one holding a NUL byte (the pad), and one over `max_length` bytes unless `truncate` (then cut to
 * `max_length` bytes, a string at a character boundary; a value left empty is refused).
 *
 * Users fall in G = 1 + ceil((L − start_bits)/step_bits) groups; group j reports the prefix of
 * b_j = min(start_bits + j·step_bits, L) bits through its oracle, at the full ε (`oracle`: "olh", "grr", or "auto",
 * per group the one of smaller null variance):
 * - OLH: the prefix's 32-bit key (the prefix itself up to 32 bits, else MurmurHash3_x86_32 of its ceil(b_j/8)
 *   big-endian bytes under `KEY_SEED`), then `R(seed_range)`, and GRR over [0, g) of its hash, as `olh` reports
 *   index `key`;
 * - GRR over the group's whole prefix domain [0, 2^b_j) (b_j <= `MAX_GRR_BITS`), seed 0.
 * Draws: `R(G)`, then the group's oracle's. Payload `group`, `seed`, `y`. The cost is the largest of the oracles'.
 */
import { LdpRefusal, LdpTypeError, LdpValueError, kindOf } from "../errors.js";
import { valueBytes } from "../bytes.js";
import { hash32 } from "../hash/murmur3.js";
import {
  ChoiceOf, Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkInt, checkParams, relation,
} from "../params/base.js";
import { PEM_PARAMS } from "../params/tables.js";
import { Encoder, ProtocolEntry, Report } from "../encoders/base.js";
import { GRRParams, grrDraw } from "./randomized-response.js";
import { OLHParams, lhHash } from "./local-hashing.js";

/** MurmurHash3 seed of the 32-bit key of a prefix over 32 bits ("PEM"). */
export const KEY_SEED = 0x50454d;
/** The server enumerates every prefix of `start_bits` bits: at most 2^24. */
export const MAX_START_BITS = 24;
/** The server extends each kept prefix by every `step_bits` pattern: at most 2^16. */
export const MAX_STEP_BITS = 16;
/** GRR reports a prefix over its whole domain: at most 2^16 values (longer prefixes use OLH). */
export const MAX_GRR_BITS = 16;
/** `oracle`: OLH in every group, GRR in every group, or per group the smaller variance (its table's choices). */
export type PemOracle = ChoiceOf<typeof PEM_PARAMS, "oracle">;

/** V0 = q(1 − q)/(p − q)²: the variance per report of the unbiased count of a value nobody holds, for an oracle
 * supporting the true value w.p. p and any other given value w.p. q. */
export function nullVariance(p: number, q: number): number {
  return q * (1.0 - q) / (p - q) ** 2;
}

/** The 32-bit key OLH hashes for a `bits`-bit prefix: the prefix itself up to 32 bits, else MurmurHash3_x86_32 of
 * its ceil(bits/8) big-endian bytes under `KEY_SEED`. */
export function prefixKey(prefix: bigint, bits: number): number {
  if (bits <= 32) return Number(prefix);
  const n = Math.ceil(bits / 8);
  const bytes = new Uint8Array(n);
  let v = prefix;
  for (let i = n - 1; i >= 0; i--, v >>= 8n) bytes[i] = Number(v & 0xffn);
  return hash32(bytes, KEY_SEED);
}

/** UTF-8 bytes cut inside a character: that incomplete trailing character dropped (Python's
 * `decode("utf-8", "ignore")` of a cut valid encoding). */
function dropIncompleteTail(raw: Uint8Array): Uint8Array {
  let i = raw.length - 1;
  while (i >= 0 && (raw[i] & 0xc0) === 0x80) i--;
  if (i < 0) return raw;
  const lead = raw[i];
  const need = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return raw.length - i < need ? raw.subarray(0, i) : raw;
}

/** `pad_value`: the value (str as UTF-8, or bytes) checked, cut if allowed, NUL-padded to `maxLength` bytes. */
export function padValue(value: unknown, maxLength: number, truncate: boolean, protocol = "pem"): Uint8Array {
  if (typeof value !== "string" && !(value instanceof Uint8Array)) {
    throw new LdpTypeError("value_type", { expected: "string_or_bytes", got: kindOf(value) });
  }
  let raw = valueBytes(value);
  if (raw.includes(0)) {
    throw new LdpValueError("not_in_alphabet", { char: "\u0000" }, `${protocol} values must not contain a NUL byte (the pad)`);
  }
  if (raw.length > maxLength) {
    if (!truncate) {
      throw new LdpValueError("value_too_long", { got: raw.length, max: maxLength, unit: "bytes" },
        `${protocol} value of ${raw.length} bytes is over max_length=${maxLength} (set truncate: true to cut it)`);
    }
    raw = raw.subarray(0, maxLength);
    if (typeof value === "string") raw = dropIncompleteTail(raw);
  }
  if (raw.length === 0) {
    throw new LdpValueError("empty_value", {}, `${protocol} values must be non-empty strings` +
      (value.length ? " (after truncation)" : ""));
  }
  const out = new Uint8Array(maxLength);
  out.set(raw);
  return out;
}

/** The big-endian integer of `bytes` (`int.from_bytes(b, "big")`). */
function bigEndian(bytes: Uint8Array): bigint {
  let hex = "0x0";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return BigInt(hex);
}

/** PEM: `epsilon` per report, strings of up to `max_length` bytes, group prefixes of `start_bits + j·step_bits`
 * bits (the last clipped to 8·max_length), the server's `top_k` (it does not change reports), `oracle`, `truncate`
 * and the OLH groups' `seed_range`. */
export class PEMParams extends ProtocolParams {
  static readonly className = "PEMParams";
  static readonly fields = PEM_PARAMS;
  readonly protocol = "pem";
  readonly epsilon: number;
  readonly maxLength: number;
  readonly startBits: number;
  readonly stepBits: number;
  readonly seedRange: number;
  readonly oracle: PemOracle;
  readonly truncate: boolean;
  /** G = 1 + ceil((L − start_bits)/step_bits). */
  readonly groups: number;
  /** Each group's oracle. */
  readonly oracles: readonly ("olh" | "grr")[];
  private olh_: OLHParams | undefined;
  private readonly grrs = new Map<number, GRRParams>();
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    const v = this.values;
    checkParams(v, PEM_PARAMS, "epsilon", "top_k",
      { start_bits: () => Math.min(MAX_START_BITS, 8 * (v.max_length as number)) });
    checkParams(v, PEM_PARAMS, "seed_range"); // before the oracle, as Python
    checkParams(v, PEM_PARAMS, "oracle", "truncate");
    this.epsilon = v.epsilon as number;
    this.maxLength = v.max_length as number;
    this.startBits = v.start_bits as number;
    this.stepBits = v.step_bits as number;
    this.seedRange = v.seed_range as number;
    this.oracle = v.oracle as PemOracle;
    this.truncate = v.truncate as boolean;
    this.groups = 1 + Math.ceil((this.totalBits - this.startBits) / this.stepBits);
    if (!(this.groups >= 1 && this.groups <= 1 << 16)) {
      throw new LdpValueError("param_limit", { limit: "groups", got: this.groups, max: 1 << 16 },
        `groups (1 + ceil((8·max_length − start_bits)/step_bits)) must be in [1, ${1 << 16}], got ${this.groups}`);
    }
    const lastBits = this.prefixBits(this.groups - 1);
    if (this.oracle === "grr" && lastBits > MAX_GRR_BITS) {
      throw new LdpValueError("param_limit", { limit: "grr_prefix_bits", got: lastBits, max: MAX_GRR_BITS },
        `oracle "grr" reports each prefix over its whole domain of 2^bits values, at most 2^${MAX_GRR_BITS}: the ` +
        `last group's prefixes have ${lastBits} bits (use oracle "auto", GRR where it is smaller and allowed, OLH ` +
        "elsewhere)");
    }
    try {
      this.oracles = Object.freeze(this.chooseOracles());
      if (this.oracles.includes("olh")) void this.olh; // OLH's checks: ε neither too large nor too small
    } catch (err) {
      // a GRR group's ε too large or too small for its 2^b_j prefixes: a rule of these parameters
      if (!(err instanceof LdpRefusal && err.code === "param_relation" && err.fields.params?.includes("domain_size"))) throw err;
      throw relation(err.fields.rule as string, ["epsilon", "max_length", "start_bits", "step_bits", "oracle"], err.message);
    }
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** `oracles`: with "auto", GRR for a group iff its domain 2^b_j is at most 2^`MAX_GRR_BITS` and GRR's null
   * variance per report is below OLH's, both of the realized probabilities (a tie goes to OLH). */
  private chooseOracles(): ("olh" | "grr")[] {
    const out: ("olh" | "grr")[] = [];
    for (let j = 0; j < this.groups; j++) {
      if (this.oracle === "olh") out.push("olh");
      else if (this.oracle === "grr") {
        this.grr(j); // its checks: ε neither too large nor too small for the client
        out.push("grr");
      } else {
        const grr = this.prefixBits(j) <= MAX_GRR_BITS ? this.grr(j) : null;
        const use = grr !== null && nullVariance(grr.p, grr.q) < nullVariance(this.olh.p, this.olh.qStar);
        out.push(use ? "grr" : "olh");
      }
    }
    return out;
  }

  /** The OLH oracle of the OLH groups (its g, p, q* and cost; the domain is unused). */
  get olh(): OLHParams {
    if (this.olh_ === undefined) {
      this.olh_ = new OLHParams({ epsilon: this.epsilon, domain_size: 2, labels: null, seed_range: this.seedRange });
    }
    return this.olh_;
  }

  /** GRR over group `group`'s whole prefix domain, 2^b_j values (up to 2^`MAX_GRR_BITS`). */
  grr(group: number): GRRParams {
    const bits = this.prefixBits(group);
    if (bits > MAX_GRR_BITS) {
      throw new LdpValueError("param_limit", { limit: "grr_prefix_bits", got: bits, max: MAX_GRR_BITS },
        `group ${group} has ${bits}-bit prefixes: GRR over 2^${bits} values is over the cap of 2^${MAX_GRR_BITS}`);
    }
    let g = this.grrs.get(bits);
    if (g === undefined) {
      g = new GRRParams({ epsilon: this.epsilon, domain_size: 2 ** bits, labels: null });
      this.grrs.set(bits, g);
    }
    return g;
  }

  /** "olh" or "grr": the oracle group `group` reports through. */
  oracleOf(group: number): "olh" | "grr" {
    return this.oracles[checkInt(group, "group", 0, this.groups - 1)];
  }

  /** The range of y in group `group`'s reports: OLH's g or GRR's 2^b_j. */
  ySize(group: number): number {
    return this.oracleOf(group) === "grr" ? 2 ** this.prefixBits(group) : this.olh.g;
  }

  /** L = 8·max_length. */
  get totalBits(): number {
    return 8 * this.maxLength;
  }

  /** b_j = min(start_bits + j·step_bits, L). */
  prefixBits(group: number): number {
    return Math.min(this.startBits + group * this.stepBits, this.totalBits);
  }

  /** One report's cost: the largest of its groups' oracles' (the group is public and independent of the value). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      let e = -Infinity;
      for (const [j, o] of this.oracles.entries()) {
        e = Math.max(e, (o === "olh" ? this.olh : this.grr(j)).privacyCost.epsilon);
      }
      this.cost = Object.freeze({ epsilon: e, delta: 0.0 });
    }
    return this.cost;
  }

  get aggregateCells(): number {
    return this.groups;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      let ys = 0;
      if (this.oracle === "olh") ys = this.olh.g;
      else for (let j = 0; j < this.groups; j++) ys = Math.max(ys, this.ySize(j));
      this.fields_ = Object.freeze([
        { name: "group", kind: "uint", size: this.groups },
        { name: "seed", kind: "uint", size: this.seedRange },
        { name: "y", kind: "uint", size: ys },
      ] as Field[]);
    }
    return this.fields_;
  }

  /** The value as the client encodes it: checked, cut if allowed, NUL-padded. */
  padded(value: unknown): Uint8Array {
    return padValue(value, this.maxLength, this.truncate);
  }

  /** The 32-bit key group `group` reports for a padded value (its big-endian integer). */
  keyOf(padded: bigint, group: number): number {
    const bits = this.prefixBits(group);
    return prefixKey(padded >> BigInt(this.totalBits - bits), bits);
  }
}

/** Client encoder for `PEMParams`; values are strings or bytes (the prepared value: the padded integer). */
export class PEMEncoder extends Encoder<PEMParams, bigint> {
  prepare(value: unknown): bigint {
    return bigEndian(this.params.padded(value));
  }

  randomize(prepared: bigint): Report {
    const rng = this.rng, pr = this.params;
    const group = rng.randbelow(pr.groups);
    const key = pr.keyOf(prepared, group);
    if (pr.oracleOf(group) === "grr") {
      const grr = pr.grr(group); // the key is the prefix itself (at most 16 bits)
      return this.report([["group", group], ["seed", 0], ["y", grrDraw(grr.p, grr.domainSize, key, rng)]]);
    }
    const olh = pr.olh, g = olh.g;
    const seed = rng.randbelow(pr.seedRange);
    return this.report([["group", group], ["seed", seed], ["y", grrDraw(olh.p, g, lhHash(key, seed, g), rng)]]);
  }
}

export const pem: ProtocolEntry<PEMParams, bigint> = {
  name: "pem",
  Params: PEMParams,
  makeEncoder: (params, options) => new PEMEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
