/**
 * RAPPOR for strings nobody listed in advance (`rappor-ngrams`; Fanti, Pihur & Erlingsson, "Building a RAPPOR with
 * the Unknown", PoPETs 2016; `ldp/encoders/rappor_ngrams.py`, `rappor_ngrams_text.py`).
 *
 * A string over `alphabet`, padded with `pad` to L characters and cut into P = L/n n-grams, is reported as three
 * `"ldp"`-mode RAPPOR reports: the n-grams at a pair of positions `a < b` (pair index `R(P(P−1)/2)` in lexicographic
 * order, drawn when the value is prepared, since the charge depends on it; it is independent of the value) and the
 * whole string. The two RAPPOR encoders' secrets and, unless given, cohorts derive from the metric secret
 * (HMAC-SHA256 under `"ldp/rappor-ngrams/v1/" ‖ label`; a cohort is the first 8 bytes, big-endian, mod m).
 * Draws at randomize: n-gram a's report, n-gram b's, then the whole string's. Charged ε₁(full) + 2·ε₁(gram) per
 * report, memoized per triple of permanent responses up to ε∞(full) + 2·ε∞(gram).
 */
import { compareCodePoints } from "../canonical.js";
import { concatBytes, toHex, utf8Encode } from "../bytes.js";
import { LdpTypeError, LdpValueError, kindOf } from "../errors.js";
import { hmacSha256, sha256 } from "../hash/sha256.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, relation, renaming,
} from "../params/base.js";
import { RAPPOR_NGRAMS_PARAMS } from "../params/tables.js";
import { Charge, Encoder, EncoderOptions, ProtocolEntry, Report, isMemoized } from "../encoders/base.js";
import { RapporEncoder, RapporParams, RapporPrepared, clientSecret } from "./rappor.js";

/** The n-gram RAPPOR's parameter names here (its refusals' fields). */
const GRAM_NAMES: Readonly<Record<string, string>> = {
  num_bloombits: "gram_bloombits", num_hashes: "gram_hashes", num_cohorts: "gram_cohorts", p: "gram_p", q: "gram_q",
  f: "gram_f",
};

/** `_check_text`, the alphabet: a non-empty string of distinct characters (code points). */
export function checkAlphabet(a: unknown): string[] {
  if (typeof a !== "string") throw new LdpValueError("param_type", { param: "alphabet", expected: "string", got: kindOf(a) });
  if (a.length === 0) throw new LdpValueError("param_length", { param: "alphabet", got: 0, min: 1 }, "alphabet must not be empty");
  const chars = [...a];
  if (new Set(chars).size !== chars.length) {
    throw relation("distinct", ["alphabet"], `alphabet must not repeat a character: ${JSON.stringify(a)}`);
  }
  return chars;
}

/** `_check_text`, the pad: one character, not in `alphabet`. */
export function checkPad(pad: unknown, alphabet: readonly string[]): string {
  if (typeof pad !== "string") throw new LdpValueError("param_type", { param: "pad", expected: "string", got: kindOf(pad) });
  const n = [...pad].length;
  if (n !== 1) throw new LdpValueError("param_length", { param: "pad", got: n, min: 1, max: 1 }, `pad must be one character, got ${JSON.stringify(pad)}`);
  if (alphabet.includes(pad)) {
    throw relation("pad_not_in_alphabet", ["pad", "alphabet"], `pad ${JSON.stringify(pad)} must not be a character of the alphabet`);
  }
  return pad;
}

/** The most n-gram positions P (`MAX_POSITIONS`). */
export const MAX_POSITIONS = 64;
const SUB_SECRET = utf8Encode("ldp/rappor-ngrams/v1/");
const AUDIT_SECRET = utf8Encode("audit");

/** The string the n-gram RAPPOR hashes and memoizes for `gram` at `position` (`gram_value`): `"{position}|{gram}"`. */
export function gramValue(position: number, gram: string): string {
  return `${position}|${gram}`;
}

/** The position pair `[a, b]`, a < b, of pair `index` in lexicographic order (`pair_of`). */
export function pairOf(index: number, positions: number): [number, number] {
  let a = 0;
  while (index >= positions - 1 - a) {
    index -= positions - 1 - a;
    a += 1;
  }
  return [a, a + 1 + index];
}

/** rappor-ngrams parameters: the whole string's RAPPOR, the n-grams' (`gram_…`), n, L, the alphabet, the pad. */
export class RapporNgramsParams extends ProtocolParams {
  static readonly className = "RapporNgramsParams";
  static readonly fields = RAPPOR_NGRAMS_PARAMS;
  readonly protocol = "rappor-ngrams";
  /** n, the gram length, and L, the padded length in characters. */
  readonly n: number;
  readonly maxLength: number;
  readonly alphabet: ReadonlySet<string>;
  readonly pad: string;
  readonly truncate: boolean;
  /** The whole string's RAPPOR, and each n-gram's. */
  readonly full: RapporParams;
  readonly gram: RapporParams;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    const v = this.values;
    checkParams(v, RAPPOR_NGRAMS_PARAMS, "n", "max_length"); // first, as Python (the RAPPORs' rows: their own checks)
    this.n = v.n as number;
    this.maxLength = v.max_length as number;
    if (this.maxLength % this.n !== 0) {
      throw relation("multiple_of_n", ["max_length", "n"], `max_length (L=${this.maxLength}) must be a multiple of n=${this.n}`);
    }
    const positions = this.positions;
    if (!(positions >= 2 && positions <= MAX_POSITIONS)) {
      const message = `positions (L/n) must be in [2, ${MAX_POSITIONS}], got ${positions}`;
      if (positions < 2) throw relation("two_positions", ["max_length", "n"], message);
      throw new LdpValueError("param_limit", { limit: "positions", got: positions, max: MAX_POSITIONS }, message);
    }
    const alphabet = checkAlphabet(v.alphabet);
    this.pad = checkPad(v.pad, alphabet);
    checkParams(v, RAPPOR_NGRAMS_PARAMS, "truncate", "truncate");
    this.truncate = v.truncate as boolean;
    this.alphabet = new Set(alphabet);
    const rappor = (prefix: string, bits: string, hashes: string, cohorts: string) => new RapporParams({
      num_bloombits: v[bits], num_hashes: v[hashes], num_cohorts: v[cohorts], p: v[`${prefix}p`], q: v[`${prefix}q`],
      f: v[`${prefix}f`], mode: "ldp",
    });
    this.full = rappor("", "num_bloombits", "num_hashes", "num_cohorts");
    this.gram = renaming(GRAM_NAMES, () => rappor("gram_", "gram_bloombits", "gram_hashes", "gram_cohorts"));
    void this.full.privacyCost; // both RAPPORs must be private (a finite ε₁)
    renaming(GRAM_NAMES, () => this.gram.privacyCost);
    checkCollectable(this.protocol, this.schema, this.full.aggregateCells);
  }

  /** P = L/n n-gram positions. */
  get positions(): number {
    return Math.floor(this.maxLength / this.n);
  }

  /** P(P−1)/2 position pairs. */
  get pairs(): number {
    return (this.positions * (this.positions - 1)) / 2;
  }

  /** One report: ε₁(full) + 2·ε₁(gram). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      this.cost = Object.freeze({ epsilon: this.full.privacyCost.epsilon + 2 * this.gram.privacyCost.epsilon, delta: 0.0 });
    }
    return this.cost;
  }

  /** A string from an open domain. */
  override get domainSize(): number | null {
    return null;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      const P = this.positions;
      this.fields_ = Object.freeze([
        { name: "cohort", kind: "uint", size: this.full.numCohorts },
        { name: "bits", kind: "bits", size: this.full.numBloombits },
        { name: "gram_cohort", kind: "uint", size: this.gram.numCohorts },
        { name: "pos_a", kind: "uint", size: P },
        { name: "pos_b", kind: "uint", size: P },
        { name: "gram_a", kind: "bits", size: this.gram.numBloombits },
        { name: "gram_b", kind: "bits", size: this.gram.numBloombits },
      ] as Field[]);
    }
    return this.fields_;
  }

  /** `padded`: the value checked (a str, or UTF-8 bytes; non-empty; characters of the alphabet; at most L of them
   * unless `truncate`, which cuts it) and padded with `pad` to L characters. */
  padded(value: unknown): string[] {
    let text: string;
    if (typeof value === "string") text = value;
    else if (value instanceof Uint8Array) {
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(value);
      } catch {
        throw new LdpValueError("not_encodable", { encoding: "utf-8" }, `${this.protocol} values given as bytes must be UTF-8`);
      }
    } else throw new LdpTypeError("value_type", { expected: "string_or_bytes", got: kindOf(value) });
    if (text.length === 0) throw new LdpValueError("empty_value", {}, `${this.protocol} values must be non-empty strings`);
    let cps = [...text];
    const bad = [...new Set(cps.filter((c) => !this.alphabet.has(c)))].sort(compareCodePoints);
    if (bad.length) {
      throw new LdpValueError("not_in_alphabet", { char: bad[0] },
        `${this.protocol} value has characters outside the alphabet: ${JSON.stringify(bad.join(""))}`);
    }
    if (cps.length > this.maxLength) {
      if (!this.truncate) {
        throw new LdpValueError("value_too_long", { got: cps.length, max: this.maxLength, unit: "characters" },
          `${this.protocol} value of ${cps.length} characters is over max_length=${this.maxLength} (set truncate: true ` +
          "to cut it)");
      }
      cps = cps.slice(0, this.maxLength);
    }
    while (cps.length < this.maxLength) cps.push(this.pad);
    return cps;
  }
}

/** A checked value: the whole string's RAPPOR preparation, its P n-grams and the drawn pair. */
export interface NgramsPrepared {
  readonly full: RapporPrepared;
  readonly grams: readonly string[];
  readonly pair: readonly [number, number];
}

/** `HMAC-SHA256(secret, "ldp/rappor-ngrams/v1/" ‖ label)`. */
function derived(secret: Uint8Array, label: string): Uint8Array {
  return hmacSha256(secret, concatBytes(SUB_SECRET, utf8Encode(label)));
}

/** A cohort derived from the secret: the first 8 bytes of `derived(label)`, big-endian, mod m. */
function derivedCohort(secret: Uint8Array, label: string, m: number): number {
  const d = derived(secret, label);
  let top = 0n;
  for (let i = 0; i < 8; i++) top = (top << 8n) | BigInt(d[i]);
  return Number(top % BigInt(m));
}

/**
 * One rappor-ngrams client: a secret (default: fresh from the source) from which the two RAPPOR encoders' secrets
 * and cohorts derive; `cohort` overrides the whole string's cohort. With `prrRng` (audits only) both cohorts and every
 * permanent response are drawn from it, under the secret `"audit"` unless one is given.
 */
export class RapporNgramsEncoder extends Encoder<RapporNgramsParams, NgramsPrepared> {
  readonly secret: Uint8Array;
  readonly full: RapporEncoder;
  readonly gram: RapporEncoder;

  constructor(params: RapporNgramsParams, options: EncoderOptions = {}) {
    super(params, options);
    const prr = options.prrRng;
    this.secret = clientSecret(options.secret ?? (prr !== undefined ? AUDIT_SECRET : undefined), this.rng);
    let cohort: number, gramCohort: number;
    if (prr !== undefined) {
      cohort = prr.randbelow(params.full.numCohorts);
      gramCohort = prr.randbelow(params.gram.numCohorts);
    } else {
      cohort = derivedCohort(this.secret, "cohort", params.full.numCohorts);
      gramCohort = derivedCohort(this.secret, "gram_cohort", params.gram.numCohorts);
    }
    if (options.cohort !== undefined && options.cohort !== null) cohort = options.cohort;
    const sub = (rp: RapporParams, label: string, c: number) =>
      new RapporEncoder(rp, { rng: this.rng, secret: derived(this.secret, label), cohort: c, prrRng: prr });
    this.full = sub(params.full, "full", cohort);
    this.gram = sub(params.gram, "gram", gramCohort);
  }

  /** What the app persists to keep memoization: the secret (hex) and both cohorts. */
  state(): { secret: string; cohort: number; gram_cohort: number } {
    return { secret: toHex(this.secret), cohort: this.full.cohort, gram_cohort: this.gram.cohort };
  }

  /** Checks and pads the value (a bad one fails here, before any draw), then draws the position pair. */
  prepare(value: unknown): NgramsPrepared {
    const pr = this.params;
    const padded = pr.padded(value);
    let end = padded.length;
    while (end > 0 && padded[end - 1] === pr.pad) end--;
    const full = this.full.prepare(padded.slice(0, end).join(""));
    const pair = pairOf(this.rng.randbelow(pr.pairs), pr.positions);
    const grams: string[] = [];
    for (let i = 0; i < pr.maxLength; i += pr.n) grams.push(padded.slice(i, i + pr.n).join(""));
    return { full, grams, pair };
  }

  private gramPrepared(prepared: NgramsPrepared, pos: number): RapporPrepared {
    return this.gram.prepare(gramValue(pos, prepared.grams[pos]));
  }

  /** The three reports' exact charges: the whole string's, and the n-grams' at the pair's positions. */
  charges(prepared: NgramsPrepared): Charge[] {
    return [this.full.chargeFor(prepared.full), ...prepared.pair.map((pos) => this.gram.chargeFor(this.gramPrepared(prepared, pos)))];
  }

  /** One charge, memoized per triple of permanent responses (ε₁ per report, capped at ε∞(full) + 2·ε∞(gram)); plain
   * ε₁ when a part is not memoized (f = 0). */
  override chargeFor(prepared: NgramsPrepared): Charge {
    const parts = this.charges(prepared);
    const one = this.params.privacyCost;
    if (!parts.every(isMemoized)) return one;
    const keys = concatBytes(...parts.map((c) => (isMemoized(c) ? c.key : new Uint8Array())));
    const cap: PrivacyCost = { epsilon: this.params.full.epsilonInf + 2 * this.params.gram.epsilonInf, delta: 0.0 };
    return { key: sha256(concatBytes(SUB_SECRET, utf8Encode("triple"), keys)), first: one, then: one, cap };
  }

  randomize(prepared: NgramsPrepared): Report {
    const [a, b] = prepared.pair;
    const bitsOf = (r: Report) => r.payload.find(([k]) => k === "bits")![1];
    const ga = bitsOf(this.gram.randomize(this.gramPrepared(prepared, a)));
    const gb = bitsOf(this.gram.randomize(this.gramPrepared(prepared, b)));
    const full = this.full.randomize(prepared.full);
    return this.report([["cohort", this.full.cohort], ["bits", bitsOf(full)], ["gram_cohort", this.gram.cohort],
      ["pos_a", a], ["pos_b", b], ["gram_a", ga], ["gram_b", gb]]);
  }
}

/** rappor-ngrams as the client runtime sees it: memoized from the metric's secret; cohorts derived from it. */
export const rapporNgrams: ProtocolEntry<RapporNgramsParams, NgramsPrepared> = {
  name: "rappor-ngrams",
  Params: RapporNgramsParams,
  makeEncoder: (params, options) => new RapporNgramsEncoder(params, options),
  needsSecret: true,
  assignedCohorts: () => 0,
};
