/**
 * What every encoder shares: the report and its JSON line, the upload envelope, charges, and the labeled domain of
 * the fixed-domain protocols (`ldp/encoders/base.py`, `base_domain.py`, `ldp/wire.py`, `ldp/spec/envelope.py`).
 */
import { LdpTypeError, LdpValueError, exactInt, kindOf } from "../errors.js";
import { CryptoRandomSource, RandomSource, wordsOfBigInt } from "../random.js";
import { PrivacyCost, ProtocolParams, isPyInt } from "../params/base.js";

/** A payload value: a `uint` (number, or bigint beyond 2^53) or a `bits` string of '0'/'1' (character i = bit i). */
export type PayloadValue = number | bigint | string;

/** One privatized report (`ldp.reports.Report`): protocol, params fingerprint, payload fields in schema order. */
export interface Report {
  readonly protocol: string;
  readonly params: string;
  readonly payload: ReadonlyArray<readonly [string, PayloadValue]>;
}

/** A charge whose total per value is capped (Python's `MemoizedCharge`): RAPPOR's memoized PRR. */
export interface MemoizedCharge {
  readonly key: Uint8Array;
  readonly first: PrivacyCost;
  readonly then: PrivacyCost;
  readonly cap: PrivacyCost;
}

/** A charge made only when a stream's value changes (Python's `ChangeCharge`; `thresh`): the ledger keeps, per
 * `stream`, the last `value` (a keyed hash, never the value) and an epoch counter; a report whose `value` differs
 * from the last (or the stream's first) opens the next epoch and is charged `cost`, any other report nothing. The
 * encoder then reports in the ledger's epoch. */
export interface ChangeCharge {
  readonly stream: Uint8Array;
  readonly value: Uint8Array;
  readonly cost: PrivacyCost;
}

export type Charge = PrivacyCost | MemoizedCharge | ChangeCharge;

export function isMemoized(c: Charge): c is MemoizedCharge {
  return (c as MemoizedCharge).key !== undefined;
}

export function isChange(c: Charge): c is ChangeCharge {
  return (c as ChangeCharge).stream !== undefined;
}

/** The eight characters of a byte's bits, least significant first ("10000000" for 1). */
const BYTE_BITS: readonly string[] = /* @__PURE__ */ Array.from({ length: 256 }, (_, b) => {
  let s = "";
  for (let i = 0; i < 8; i++) s += (b >> i) & 1;
  return s;
});

/** The bits string of the low `k` bits of little-endian 32-bit words: character i is bit i (bit i % 32 of word
 * i / 32), built a byte at a time. */
export function bitsStringOfWords(words: Uint32Array, k: number): string {
  let out = "";
  for (let i = 0; i < k; i += 8) out += BYTE_BITS[(words[i >>> 5] >>> (i & 31)) & 0xff];
  return k % 8 === 0 ? out : out.slice(0, k);
}

/** The bits string of `value`'s low `k` bits: character i is bit i (`frozenbitarray.to01()`, little-endian). */
export function bitsString(value: bigint, k: number): string {
  return bitsStringOfWords(wordsOfBigInt(value, k), k);
}

/**
 * The report's JSON (`Report.to_json`): `{"v":1,"protocol":…,"params":…,"payload":{…}}`, no spaces.
 *
 * A `uint` from 1024 up is written through a bigint: V8 keeps the text of every number it turns into a string in a
 * cache that each young-generation collection copies, and a report's fresh 32-bit numbers (OLH's hash seed) filling
 * it cost several times the formatting itself; small values (indices, cohorts) recur and are served from it.
 */
export function reportJson(r: Report): string {
  let out = `{"v":1,"protocol":"${r.protocol}","params":"${r.params}","payload":{`;
  const payload = r.payload;
  for (let i = 0; i < payload.length; i++) {
    const [k, v] = payload[i];
    out += `${i === 0 ? "" : ","}"${k}":`;
    out += typeof v === "string" ? `"${v}"` : typeof v === "number" && v >= 1024 ? BigInt(v).toString() : `${v}`;
  }
  return out + "}}";
}

/** One upload line (`Envelope.to_json`): spec fingerprint, metric, window, report, in that order; no newline. */
export function envelopeJson(spec: string, metric: string, window: number, r: Report): string {
  return `{"spec":"${spec}","metric":"${metric}","window":${window},"report":${reportJson(r)}}`;
}

/** What an encoder is made with: randomness (default: the platform CSPRNG), and a memoizing client's secret and
 * an assigned cohort where the protocol has them. */
export interface EncoderOptions {
  readonly rng?: RandomSource;
  readonly secret?: Uint8Array;
  readonly cohort?: number;
  /** Audits only: a memoizing encoder draws its permanent responses from this source instead of the keyed (HMAC)
   * stream of its secret, so the exact audit enumerates them too (Python's `for_audit`, `prr_rng=`). */
  readonly prrRng?: RandomSource;
}

let systemSource: RandomSource | undefined;

/** The default randomness: one `CryptoRandomSource` (crypto.getRandomValues) shared by encoders. */
export function defaultSource(): RandomSource {
  if (systemSource === undefined) systemSource = new CryptoRandomSource();
  return systemSource;
}

/**
 * A client encoder (`ldp.encoders.base.Encoder`): `prepare` checks a value (throwing Python's error type and
 * text), `randomize` draws only through the source's `bernoulli`, `bernoulliBits`, `randbelow` and `tokenBytes`
 * (docs/randomness.md, "The rule for encoders"), `chargeFor` says what the ledger charges.
 */
export abstract class Encoder<P extends ProtocolParams = ProtocolParams, V = unknown> {
  readonly params: P;
  protected readonly rng: RandomSource;

  constructor(params: P, options: EncoderOptions = {}) {
    this.params = params;
    this.rng = options.rng ?? defaultSource();
  }

  abstract prepare(value: unknown): V;
  /** One report of `prepared`; `epoch` is the ledger's epoch of a `ChangeCharge` (`thresh`), ignored otherwise. */
  abstract randomize(prepared: V, epoch?: number): Report;

  /** What one report of `prepared` costs (memoizing protocols override). */
  chargeFor(_prepared: V): Charge {
    return this.params.privacyCost;
  }

  /** One report of `value` (no ledger: the client runtime charges before it randomizes). */
  encode(value: unknown): Report {
    return this.randomize(this.prepare(value));
  }

  protected report(payload: Array<readonly [string, PayloadValue]>): Report {
    return { protocol: this.params.protocol, params: this.params.fingerprint, payload };
  }
}

/** `LabeledDomain.check_labels`: labels, if given, are `domain_size` distinct strings. */
export function checkLabels(labels: unknown, domainSize: number): string[] | null {
  if (labels === null || labels === undefined) return null;
  if (!Array.isArray(labels)) {
    throw new LdpTypeError("param_type", { param: "labels", expected: "labels", got: kindOf(labels) });
  }
  if (labels.length !== domainSize) {
    throw new LdpValueError("param_length", { param: "labels", got: labels.length, min: domainSize, max: domainSize },
      `labels must have domain_size=${domainSize} entries, got ${labels.length}`);
  }
  const bad = labels.findIndex((s) => typeof s !== "string");
  if (bad >= 0) throw new LdpTypeError("param_type", { param: "labels", expected: "string", got: kindOf(labels[bad]), index: bad });
  if (new Set(labels).size !== labels.length) {
    throw new LdpValueError("param_relation", { params: ["labels"], rule: "distinct" }, "labels must be distinct");
  }
  return labels as string[];
}

/** `LabeledDomain.index_of`: the index of a label, or an int index in range, with Python's errors. */
export function indexOf(domainSize: number, labels: readonly string[] | null, value: unknown): number {
  if (typeof value === "string" && labels !== null) {
    const i = labels.indexOf(value);
    if (i < 0) {
      throw new LdpValueError("unknown_label", { got: value }); // `value "x" is not one of the declared labels`
    }
    return i;
  }
  if (isPyInt(value)) {
    if (!(value >= 0 && value < domainSize)) throw indexRange(value, domainSize);
    return value;
  }
  const expected = labels !== null ? "label_or_index" : "index";
  throw new LdpTypeError("value_type", { expected, got: kindOf(value) }); // its message: `describeRefusal`'s
}

function indexRange(value: number | bigint, d: number): LdpValueError {
  return new LdpValueError("value_range", { got: exactInt(value), min: 0, max: d, max_exclusive: true });
}

/** A protocol as the client runtime and the tests see it: its name, params class and how to make its encoder. */
export interface ProtocolEntry<P extends ProtocolParams = ProtocolParams, V = unknown> {
  readonly name: string;
  readonly Params: import("../params/base.js").ParamsClass<P>;
  makeEncoder(params: P, options?: EncoderOptions): Encoder<P, V>;
  /** Whether reports derive from the metric's secret (memoized responses). */
  readonly needsSecret: boolean;
  /** How many cohorts the caller assigns a device to (0: none). */
  assignedCohorts(params: P): number;
}

// ---------------------------------------------------------------------------------------------------------------
// A fixed domain named by indices or labels (enc-A, additive): Python's `LabeledDomain` (the params' `labels`) and
// `DomainPrepare` (the encoders' `prepare`), shared by grr, sue, oue, olh, blh, hr and ss.

/** Parameters of a fixed domain of `domainSize` values, optionally named by distinct `labels` (`LabeledDomain`). */
export interface LabeledDomainParams extends ProtocolParams {
  readonly domainSize: number;
  readonly labels: readonly string[] | null;
}

/** `values` with a list of `labels` copied and frozen (Python's `from_dict` makes it a tuple), so a caller's later
 * change to its array cannot change the parameters (or their fingerprint), and `labels` absent or `undefined` made
 * `null` (the default, Python's `None`). Anything else is left for the checks. */
export function withFrozenLabels<T extends Record<string, unknown>>(values: T): T {
  const labels = values.labels;
  if (labels === undefined) return { ...values, labels: null };
  return Array.isArray(labels) ? { ...values, labels: Object.freeze([...labels]) } : values;
}

/** `LabeledDomain.index_of` of the params: the index of a label, or of an int index in range (a `bigint` stands for a
 * Python int), with Python's errors (`indexOf`). */
export function domainIndexOf(params: LabeledDomainParams, value: unknown): number {
  const d = params.domainSize;
  if (typeof value === "bigint") {
    if (!(value >= 0n && value < BigInt(d))) throw indexRange(value, d);
    return Number(value);
  }
  return indexOf(d, params.labels, value);
}

/** `DomainPrepare`: an encoder's `prepare` for a labeled domain: the value's index (`domainIndexOf`). */
export abstract class DomainEncoder<P extends LabeledDomainParams = LabeledDomainParams> extends Encoder<P, number> {
  prepare(value: unknown): number {
    return domainIndexOf(this.params, value);
  }
}
