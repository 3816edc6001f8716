/**
 * Charge on change (`thresh`; after Joseph, Roth, Ullman & Waggoner, "Local Differential Privacy for Evolving Data",
 * NeurIPS 2018), client side (`ldp/encoders/thresh.py`).
 *
 * A device's reports of one metric form a stream cut into epochs: the first report opens epoch 0, and each report
 * whose value differs from the previous report's opens the next. An epoch's response is one GRR of its value at
 * `epsilon`, drawn from the keyed stream of (metric secret, "ldp/thresh/epoch/v1\0" ‖ fp ‖ uint64_BE(e) ‖
 * uint32_BE(x)) and replayed by every report of the epoch; nothing is drawn from the injected stream. The charge is a
 * `ChangeCharge`: the ledger charges ε for a report that opens an epoch and nothing for a replay, so c changes cost
 * (c + 1)·ε however many reports. With a ledger the epoch is the ledger's (given to `randomize`); without one it is
 * tracked in memory from the encoder's first report.
 */
import { concatBytes, uint32BE, utf8Encode } from "../bytes.js";
import { hmacSha256 } from "../hash/sha256.js";
import { KeyedRandomSource } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkInt, checkParams,
} from "../params/base.js";
import { THRESH_PARAMS } from "../params/tables.js";
import {
  ChangeCharge, Encoder, EncoderOptions, ProtocolEntry, Report, domainIndexOf, withFrozenLabels,
} from "../encoders/base.js";
import { Memo } from "../encoders/memo.js";
import { GRRParams, grrDraw } from "./randomized-response.js";

const EPOCH_DOMAIN = utf8Encode("ldp/thresh/epoch/v1\0");
const STREAM_DOMAIN = utf8Encode("ldp/thresh/stream/v1\0");
const VALUE_DOMAIN = utf8Encode("ldp/thresh/value/v1\0");

/** Eight bytes, most significant first, of an integer in [0, 2^53]. */
function uint64BE(n: number): Uint8Array {
  return concatBytes(uint32BE(Math.floor(n / 2 ** 32)), uint32BE(n % 2 ** 32));
}

/** Charge on change over `domain_size` values: an epoch's GRR at `epsilon`, replayed until the value changes. */
export class ThreshParams extends ProtocolParams {
  static readonly className = "ThreshParams";
  static readonly fields = THRESH_PARAMS;
  readonly protocol = "thresh";
  readonly epsilon: number;
  /** An epoch's response: GRR at `epsilon` over the values (also the labels' index). */
  readonly grr: GRRParams;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(withFrozenLabels(values));
    checkParams(this.values, THRESH_PARAMS);
    this.epsilon = this.values.epsilon as number;
    this.grr = new GRRParams({ epsilon: this.epsilon, domain_size: this.values.domain_size, labels: this.values.labels });
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** One epoch's response (every report of an epoch together): GRR's max(ε, realized ε). */
  get privacyCost(): PrivacyCost {
    return this.grr.privacyCost;
  }

  /** What the ledger charges a stream with `changes` changes, however many reports: (c + 1)·ε. */
  changeCost(changes: number): PrivacyCost {
    const n = checkInt(changes, "changes", 0) + 1;
    const one = this.privacyCost;
    return { epsilon: one.epsilon * n, delta: one.delta * n };
  }

  override get domainSize(): number {
    return this.grr.domainSize;
  }

  get labels(): readonly string[] | null {
    return this.grr.labels;
  }

  get p(): number {
    return this.grr.p;
  }

  get q(): number {
    return this.grr.q;
  }

  get aggregateCells(): number {
    return this.domainSize;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      this.fields_ = Object.freeze([{ name: "index", kind: "uint", size: this.values.domain_size as number }] as Field[]);
    }
    return this.fields_;
  }

  /** The name of value `index`: its label, else the index. */
  labelOf(index: number): string {
    return this.grr.labelOf(index);
  }
}

/** Client encoder for `ThreshParams`; values are labels or indices in [0, k), checked as the epoch GRR's (a refusal
 * names `grr`, as Python's does). Needs the metric secret. */
export class ThreshEncoder extends Encoder<ThreshParams, number> {
  /** The epoch of the last report (−1 before the first). */
  epoch = -1;
  private last: number | null = null;
  private readonly keys: Memo<number>;
  private readonly fp: Uint8Array;
  private readonly stream: Uint8Array;
  private readonly responses = new Map<string, number>();

  constructor(params: ThreshParams, options: EncoderOptions = {}) {
    super(params, options);
    this.keys = new Memo(params.protocol, params.fingerprint, options);
    this.fp = utf8Encode(params.fingerprint);
    this.stream = hmacSha256(this.keys.metricSecret, concatBytes(STREAM_DOMAIN, this.fp));
  }

  prepare(value: unknown): number {
    return domainIndexOf(this.params.grr, value);
  }

  /** Epoch `epoch`'s response to value `index`: GRR drawn from (secret, epoch, value) (in an audit, from the audit
   * source, once per epoch and value). */
  response(epoch: number, index: number): number {
    const key = `${epoch}:${index}`;
    const known = this.responses.get(key);
    if (known !== undefined) return known;
    const audit = this.keys.auditRng;
    const src = audit ?? new KeyedRandomSource(this.keys.metricSecret,
      concatBytes(EPOCH_DOMAIN, this.fp, uint64BE(epoch), uint32BE(index)));
    const r = grrDraw(this.params.p, this.params.domainSize, index, src);
    if (audit === undefined) this.responses.clear(); // a function of (secret, epoch, value): keep the current one only
    this.responses.set(key, r);
    return r;
  }

  /**
   * The report of `prepared` in epoch `epoch`: the ledger's, returned with the `ChangeCharge` it charged; without it
   * the epoch is tracked here (a new one when the value differs from the last report's).
   */
  randomize(prepared: number, epoch?: number): Report {
    let e: number;
    if (epoch === undefined) e = this.epoch + (prepared !== this.last ? 1 : 0);
    else if (Number.isSafeInteger(epoch) && epoch >= 0) e = epoch;
    else throw new RangeError(`the epoch must be an integer >= 0, got ${epoch}`);
    this.last = prepared;
    this.epoch = e;
    return this.report([["index", this.response(e, prepared)]]);
  }

  /** ε when the value differs from the stream's last one (the ledger compares keyed hashes of the values), else 0. */
  override chargeFor(prepared: number): ChangeCharge {
    const value = hmacSha256(this.keys.metricSecret, concatBytes(VALUE_DOMAIN, this.fp, uint32BE(prepared)));
    return { stream: this.stream.slice(), value, cost: this.params.privacyCost };
  }
}

export const thresh: ProtocolEntry<ThreshParams, number> = {
  name: "thresh",
  Params: ThreshParams,
  makeEncoder: (params, options) => new ThreshEncoder(params, options),
  needsSecret: true,
  assignedCohorts: () => 0,
};
