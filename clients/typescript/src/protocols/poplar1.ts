/**
 * The spec's metric kind for strings over two aggregators (issue 89, item 3; Python's `ldp/encoders/poplar1.py`):
 * `protocol: "poplar1"`, the VDAF of VDAF draft 18 §8 (Boneh, Boyle, Corrigan-Gibbs, Gilboa and Ishai,
 * "Lightweight techniques for private heavy hitters", IEEE S&P 2021), whose collector walks the prefix tree
 * (`ldp collect --heavy-hitters`).
 *
 * A metric of this kind has **no local randomizer**: the device splits the exact string into two IDPF keys, one per
 * aggregator, so its only trust model is `two-aggregator` (`trustModels`) and what one report costs the device's
 * ledger is the spec's `budget.per_report`; against both aggregators together its local ε is unbounded, so
 * `privacyCost` states none (it throws). Its report is a sealed DAP-09 report of the metric's task, made by
 * `ldp-telemetry-client/dap` (the native client's `Poplar1ReportBuilder` compiled to WebAssembly); without that
 * task a record is refused (`trust_model`) before its value is looked at, as for the Prio3 metrics.
 *
 * The parameters (all required, integers): `bits`, a multiple of 8 in [8, 256] (strings of bits/8 bytes);
 * `threshold` >= 1, the collector's T (a prefix is kept when its noised count is at least T); `max_candidates` in
 * [2, 2^20], the most candidate prefixes of one level of the walk.
 *
 * A value (`measurementBytes`) is a string (its UTF-8 bytes, strict: a lone surrogate is refused, as Python's
 * `str.encode`) or a `Uint8Array` (as it is), at most bits/8 bytes, not ending in a 0x00 byte (the pad would make
 * "ab" and "ab\0" one string); the measurement is those bytes right-padded with 0x00 to bits/8 bytes, its first bit
 * the most significant bit of the first byte (Python's `ldp.prio.poplar1.bits_of`, the native client's
 * `measurement_from_bytes`). Refusals, in this order: `value_type`, `not_encodable`, `value_too_long`,
 * `not_in_alphabet` (char NUL).
 */
import { LdpTypeError, LdpValueError, kindOf, showValue } from "../errors.js";
import { valueBytes } from "../bytes.js";
import { Field, ParamsDict, PrivacyCost, ProtocolParams, checkInt } from "../params/base.js";
import type { ParamRow } from "../params/base.js";
import { Encoder, ProtocolEntry, Report } from "../encoders/base.js";

/** The shortest string, in bits: one byte. */
export const MIN_BITS = 8;
/** The longest string, in bits: 32 bytes (the native client's bound, `ldp_client::poplar1::MAX_BITS`). */
export const MAX_BITS = 256;
/** The most candidate prefixes one level of the walk may ask (each costs every report one IDPF evaluation per
 * aggregator): the spec's bound on `max_candidates`. */
export const MAX_CANDIDATES = 2 ** 20;

/** The parameters of `poplar1`, in Python's declaration order. Not in the generated tables (`params/tables.ts`):
 * those are the protocols with a local randomizer and conformance vectors; this kind is replayed against
 * conformance/specs/poplar1.json. */
export const POPLAR1_PARAMS = [
  /** the string's length in bits, a multiple of 8 (strings of bits/8 bytes) */
  { name: "bits", type: "int", ranges: [{ min: MIN_BITS, max: MAX_BITS }] },
  /** the collector's T: a prefix is kept when its noised count is at least T */
  { name: "threshold", type: "int", ranges: [{ min: 1 }] },
  /** the most candidate prefixes of one level of the walk */
  { name: "max_candidates", type: "int", ranges: [{ min: 2, max: MAX_CANDIDATES }] },
] as const satisfies readonly ParamRow[];

/** A string metric's parameters (module docstring): `bits`, `threshold`, `max_candidates`. */
export class Poplar1Params extends ProtocolParams {
  static readonly className = "Poplar1Params";
  static readonly fields = POPLAR1_PARAMS;
  readonly protocol = "poplar1";
  override readonly localRandomizer = false as const;
  /** The trust models a metric of this kind may name (Python's `trust_models`). */
  readonly trustModels = ["two-aggregator"] as const;
  readonly bits: number;
  readonly threshold: number;
  readonly maxCandidates: number;

  constructor(values: ParamsDict) {
    super(values);
    this.bits = checkInt(this.values.bits, "bits", MIN_BITS, MAX_BITS);
    if (this.bits % 8) {
      // Python's fields ({params, rule}) and `param`, which names the spec's path (params.bits) as Python's text does
      throw new LdpValueError("param_relation", { param: "bits", params: ["bits"], rule: "whole_bytes" },
        `bits must be a multiple of 8 (a string of whole bytes), got ${this.bits}`);
    }
    this.threshold = checkInt(this.values.threshold, "threshold", 1);
    this.maxCandidates = checkInt(this.values.max_candidates, "max_candidates", 2, MAX_CANDIDATES);
  }

  /** The spec's `.trust` error of a trust model other than `trustModels`' (Python's words). */
  override trustRefusal(trust: string): string | undefined {
    if ((this.trustModels as readonly string[]).includes(trust)) return undefined;
    return `must be ${this.trustModels.join(" or ")} for ${this.protocol} (its devices share the exact value: no local ` +
      `randomizer), got ${showValue(trust)}`;
  }

  /** Bytes of a string: bits / 8. */
  get length(): number {
    return this.bits / 8;
  }

  /** Refused: no local randomizer bounds what a report reveals to both aggregators together (the ledger is charged
   * the spec's `budget.per_report`). */
  get privacyCost(): PrivacyCost {
    throw new Error("poplar1 has no local randomizer: a report shares the exact string between two aggregators, its " +
      "local ε is unbounded (the device is charged the spec's budget.per_report)");
  }

  /** No envelope report: a report is a sealed DAP-09 report of the metric's task. */
  get schema(): readonly Field[] {
    return [];
  }

  /** The VDAF type and the parameters the metric's task must state (Python's `task_vdaf`). */
  taskVdaf(): { readonly type: "Poplar1"; readonly bits: number; readonly max_candidates: number } {
    return { type: "Poplar1", bits: this.bits, max_candidates: this.maxCandidates };
  }

  /** The bits/8 bytes of `value` (module docstring), or its refusal. */
  measurementBytes(value: unknown): Uint8Array {
    if (typeof value !== "string" && !(value instanceof Uint8Array)) {
      throw new LdpTypeError("value_type", { expected: "string_or_bytes", got: kindOf(value) },
        `poplar1 values must be strings or Uint8Array, got ${kindOf(value)}`);
    }
    const raw = valueBytes(value);
    if (raw.length > this.length) {
      throw new LdpValueError("value_too_long", { got: raw.length, max: this.length, unit: "bytes" },
        `poplar1 value of ${raw.length} bytes is over the metric's ${this.length} (bits=${this.bits})`);
    }
    if (raw.length && raw[raw.length - 1] === 0) {
      throw new LdpValueError("not_in_alphabet", { char: "\u0000" },
        "poplar1 values must not end in a NUL byte (the pad: \"ab\" and \"ab\\0\" would be one string)");
    }
    const out = new Uint8Array(this.length);
    out.set(raw);
    return out;
  }
}

/** What the client runtime prepares a value with: `measurementBytes`. It makes no local report: the `dap` entry
 * seals the prepared bytes to the metric's task (`randomize` throws). */
export class Poplar1Encoder extends Encoder<Poplar1Params, Uint8Array> {
  prepare(value: unknown): Uint8Array {
    return this.params.measurementBytes(value);
  }

  randomize(): Report {
    throw new Error("poplar1 has no local randomizer: its reports are sealed to its task's aggregators " +
      "(twoAggregatorMetrics of ldp-telemetry-client/dap)");
  }
}

/** The `poplar1` kind, for `SpecOptions.protocols` (the main entry's `CollectionSpec` knows it). */
export const poplar1: ProtocolEntry<Poplar1Params, Uint8Array> = {
  name: "poplar1",
  Params: Poplar1Params,
  makeEncoder: (params, options) => new Poplar1Encoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
