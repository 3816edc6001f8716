/**
 * The client's errors. A parameter set or value a protocol refuses is an `LdpRefusal` (`LdpTypeError`: the wrong
 * kind of thing; `LdpValueError`: the right kind, out of range or breaking a rule) carrying a stable machine `code`
 * and its structured `fields`, the same as the Python client's (`ldp.errors.Refusal`) and as the conformance vectors
 * hold them (docs/conformance.md, "Refusals"). The message is this client's own, in JavaScript's terms: read the
 * `code` and `fields`, not the text.
 */
import { PyFloat } from "./pytext.js";

/** Every refusal code (docs/conformance.md, "Refusals"). */
export type RefusalCode =
  | "missing_params" | "unknown_params" | "param_type" | "param_range" | "param_choice" | "param_length"
  | "param_relation" | "param_limit"
  | "value_type" | "value_range" | "unknown_label" | "empty_value" | "value_too_long" | "not_in_alphabet"
  | "not_encodable" | "missing_attributes" | "unknown_attributes" | "trust_model";

/** The kind of a JSON value, what `got` of `param_type` and `value_type` says was given (`"bytes"`: a
 * `Uint8Array`; `"other"`: anything else JSON has no word for). */
export type ValueKind = "null" | "bool" | "int" | "float" | "string" | "list" | "object" | "bytes" | "other";

/** What `expected` of `param_type` and `value_type` says was wanted (docs/conformance.md, the `expected` table). */
export type ExpectedKind =
  | "int" | "float" | "bool" | "string" | "list" | "object" | "labels" | "attribute" | "index" | "label_or_index"
  | "string_or_bytes" | "bool_or_01";

/**
 * A refusal's structured details: exactly the fields its code's row of docs/conformance.md lists, named as there
 * (and as the vector files' `fields`). Parameter names are the protocol's own, as `fromDict` takes them.
 */
export interface RefusalFields {
  /** The parameter refused (`param_type`, `param_range`, `param_choice`, `param_length`). */
  readonly param?: string;
  /** The parameters missing (`missing_params`, declaration order), unknown (`unknown_params`, sorted) or in a
   * broken rule (`param_relation`). */
  readonly params?: readonly string[];
  /** The kind wanted (`param_type`, `value_type`). */
  readonly expected?: ExpectedKind;
  /** What was given: a `ValueKind` (`*_type`), the number given (ranges, as given), a size (`param_length`,
   * `param_limit`, `value_too_long`), the value given (`param_choice`: any JSON) or the string (`unknown_label`). */
  readonly got?: unknown;
  readonly min?: number;
  readonly max?: number;
  readonly min_exclusive?: true;
  readonly max_exclusive?: true;
  /** A non-finite number is refused. */
  readonly finite?: true;
  /** The strings `param` may be (`param_choice`). */
  readonly choices?: readonly string[];
  /** A stable rule id (`param_relation`): docs/conformance.md's table of rules. */
  readonly rule?: string;
  /** A stable limit id (`param_limit`). */
  readonly limit?: string;
  /** Which entry of a list parameter. */
  readonly index?: number;
  /** The `multi` attribute whose parameters or value were refused. */
  readonly attribute?: string;
  /** The attributes missing from or unknown to a `multi` record. */
  readonly attributes?: readonly string[];
  /** The character not in the alphabet (`not_in_alphabet`). */
  readonly char?: string;
  /** `"utf-8"` (`not_encodable`). */
  readonly encoding?: string;
  /** `"bytes"` or `"characters"` (`value_too_long`). */
  readonly unit?: string;
  /** The metric whose values the spec sends to the two-aggregator mode (`trust_model`). */
  readonly metric?: string;
  /** The metric's trust model, `"two-aggregator"` or `"two-aggregator+local"` (`trust_model`). */
  readonly trust?: string;
}

/** `v` as JSON writes it in a message (`undefined` as such, a `PyFloat` as its number, `-0` kept). */
export function showValue(v: unknown): string {
  if (v === undefined) return "undefined";
  if (v instanceof PyFloat) return showValue(v.value);
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : String(v);
  if (typeof v === "bigint") return `${v}n`;
  try {
    return JSON.stringify(v, (_k, x: unknown) => (x instanceof PyFloat ? x.value : typeof x === "bigint" ? String(x) : x)) ?? String(v);
  } catch {
    return String(v);
  }
}

function bounds(f: RefusalFields): string {
  const parts: string[] = [];
  if (f.finite) parts.push("finite");
  if (f.min !== undefined && f.max !== undefined && !f.min_exclusive && !f.max_exclusive) {
    parts.push(`in [${showValue(f.min)}, ${showValue(f.max)}]`);
  } else {
    if (f.min !== undefined) parts.push(`${f.min_exclusive ? ">" : ">="} ${showValue(f.min)}`);
    if (f.max !== undefined) parts.push(`${f.max_exclusive ? "<" : "<="} ${showValue(f.max)}`);
  }
  return parts.join(" and ");
}

const EXPECTED_TEXT: Record<string, string> = {
  int: "an integer", float: "a number", bool: "a boolean", string: "a string", list: "an array",
  object: "an object", labels: "an array of distinct strings or null", attribute: "[name, protocol, params]",
  index: "an integer index", label_or_index: "a declared label or an integer index", string_or_bytes: "a string",
  bool_or_01: "true, false, 0 or 1",
};

/** The message of a refusal with no text of its own: what `code` and `fields` say, in JavaScript's terms. */
export function describeRefusal(code: RefusalCode, f: RefusalFields): string {
  const what = f.param === undefined ? "value" : f.index === undefined ? f.param : `${f.param}[${f.index}]`;
  const got = `got ${showValue(f.got)}`;
  const list = (xs: readonly string[] | undefined) => showValue(xs ?? []);
  let text: string;
  switch (code) {
    case "missing_params": text = `missing parameters ${list(f.params)}`; break;
    case "unknown_params": text = `unknown parameters ${list(f.params)}`; break;
    case "param_type":
    case "value_type": text = `${what} must be ${EXPECTED_TEXT[f.expected ?? ""] ?? f.expected}, got ${f.got}`; break;
    case "param_range":
    case "value_range": text = `${what} must be ${bounds(f)}, ${got}`; break;
    case "param_choice": text = `${what} must be one of ${list(f.choices)}, ${got}`; break;
    case "param_length": text = `${what} must have ${bounds(f)} entries, ${got}`; break;
    case "param_relation": text = `parameters ${list(f.params)} break the rule ${showValue(f.rule)}`; break;
    case "param_limit": text = `these parameters give ${f.limit} ${showValue(f.got)}, over the limit ${showValue(f.max)}`; break;
    case "unknown_label": text = `value ${showValue(f.got)} is not one of the declared labels`; break;
    case "empty_value": text = "value is empty"; break;
    case "value_too_long": text = `value has ${showValue(f.got)} ${f.unit}, over the maximum of ${showValue(f.max)}`; break;
    case "not_in_alphabet": text = `value holds ${showValue(f.char)}, which is not in the alphabet`; break;
    case "not_encodable": text = `value has no ${f.encoding} form (it holds a lone surrogate)`; break;
    case "missing_attributes": text = `record lacks attributes ${list(f.attributes)}`; break;
    case "unknown_attributes": text = `record has unknown attributes ${list(f.attributes)}`; break;
    case "trust_model": text = `metric ${showValue(f.metric)} goes to the ${f.trust} mode: open the client with its task (twoAggregatorMetrics of ldp-telemetry-client/dap)`; break;
    default: text = String(code);
  }
  return text;
}

/**
 * A parameter set (`fromDict`, a protocol's params constructor) or a value (an encoder's `prepare`, a client's
 * `record`) the protocol refuses, before anything is drawn or charged. `code` and `fields` say why, as the Python
 * client and the conformance vectors do; `message` is readable text made from them (or a more specific one).
 */
export abstract class LdpRefusal extends Error {
  readonly code: RefusalCode;
  readonly fields: Readonly<RefusalFields>;

  constructor(code: RefusalCode, fields: RefusalFields, message?: string) {
    super(message ?? describeRefusal(code, fields));
    this.code = code;
    this.fields = Object.freeze({ ...fields });
  }

  /** The same refusal (class, code, message) with `extra` fields added (`multi`: the attribute refused). */
  withFields(extra: RefusalFields): this {
    const C = this.constructor as new (code: RefusalCode, fields: RefusalFields, message?: string) => this;
    return new C(this.code, { ...this.fields, ...extra }, this.message);
  }
}

/** A refusal of the wrong kind of thing (Python's `TypeError`): `param_type`, `value_type`, `missing_params`. */
export class LdpTypeError extends LdpRefusal {
  override readonly name: string = "LdpTypeError";
}

/** A refusal of the right kind of thing that is out of range, unknown or breaks a rule (Python's `ValueError`). */
export class LdpValueError extends LdpRefusal {
  override readonly name: string = "LdpValueError";
}

/** The kind of a value, as a refusal's `got` names it, by the client's integer rule (`isPyInt`): a `bigint` and an
 * integral `number` within ±2^53 are `"int"`; any other number (a fraction, beyond ±2^53, not finite) and a `PyFloat`
 * are `"float"`, as Python's `int` and `float` of the same value. */
export function kindOf(v: unknown): ValueKind {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "bigint") return "int";
  if (typeof v === "number") return Number.isInteger(v) && Math.abs(v) <= 2 ** 53 ? "int" : "float";
  if (typeof v === "string") return "string";
  if (v instanceof PyFloat) return "float";
  if (Array.isArray(v)) return "list";
  if (v instanceof Uint8Array) return "bytes";
  if (typeof v === "object") {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto === null || proto === Object.prototype) return "object";
  }
  return "other";
}

/** The integer `v` as a refusal's `got` holds it, exactly (Python's `got` is the int given): a `number` when it is
 * within ±2^53, where every integer is one, a `bigint` beyond. A `number` is returned as it is. */
export function exactInt(v: number | bigint): number | bigint {
  return typeof v === "bigint" && v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v;
}

/** An (ε, δ) cost as `BudgetExceeded` reports it (Python's `PrivacyCost`). */
export interface CostLike {
  readonly epsilon: number;
  readonly delta: number;
}

/** The scope of the budget across all metrics (Python's `ALL_METRICS`). */
export const ALL_METRICS = "*";

/** A cost as text: `ε=` and 6 significant digits, then `, δ=` and 3 when δ is not 0 (`ε=0.693147, δ=1e-7`). */
export function costText(cost: CostLike): string {
  const g = (x: number, n: number) => String(Number(x.toPrecision(n)));
  return `ε=${g(cost.epsilon, 6)}` + (cost.delta ? `, δ=${g(cost.delta, 3)}` : "");
}

/**
 * A charge would exceed a cap; nothing was charged and no report may be produced (`ldp.errors.BudgetExceeded`).
 *
 * Fields as Python's: `scope` is the metric's name, or `"*"` (`ALL_METRICS`) for the collection's total; `period`
 * is `"window"` or `"lifetime"`; `requested`, `spent` and `cap` are costs; `index` says which charge of a batch was
 * refused (then nothing of the batch was charged). The message reads
 * `privacy budget exceeded for metric "m" (window): spent ε=1, requested ε=0.5, cap ε=1`.
 * `metric` (the metric's name, `null` for the total) and `cost` (= `requested`) are convenience aliases.
 */
export class BudgetExceeded extends Error {
  readonly scope: string;
  readonly period: string;
  readonly requested: CostLike;
  readonly spent: CostLike;
  readonly cap: CostLike;
  readonly index: number | null;

  constructor(scope: string, period: string, requested: CostLike, spent: CostLike, cap: CostLike,
              index: number | null = null) {
    const where = scope === ALL_METRICS ? "all metrics" : `metric ${JSON.stringify(scope)}`;
    const item = index === null ? "" : ` at charge ${index} of a batch (nothing of the batch was charged)`;
    super(`privacy budget exceeded for ${where} (${period})${item}: spent ${costText(spent)}, ` +
          `requested ${costText(requested)}, cap ${costText(cap)}`);
    this.name = "BudgetExceeded";
    this.scope = scope;
    this.period = period;
    this.requested = requested;
    this.spent = spent;
    this.cap = cap;
    this.index = index;
  }

  /** The metric whose cap was hit, or `null` when it is the collection's total (scope `"*"`). */
  get metric(): string | null {
    return this.scope === ALL_METRICS ? null : this.scope;
  }

  /** The refused charge (Python's `requested`). */
  get cost(): CostLike {
    return this.requested;
  }
}

/**
 * A report would take the outbox past `maxOutboxBytes` (`ClientOptions`): nothing was charged or stored. Uploading
 * frees room. `pendingBytes` wait for upload (in `recordMany`, with the batch's earlier items), the report needs
 * `needed` more, `cap` is the limit; `index` is the first item of a `recordMany` batch that did not fit (then nothing
 * of the batch was kept), `null` for `record`.
 */
export class OutboxFullError extends Error {
  override name = "OutboxFullError";

  constructor(readonly pendingBytes: number, readonly needed: number, readonly cap: number,
    readonly index: number | null = null) {
    super(`the outbox is full${index === null ? "" : ` at item ${index} of a batch (nothing of the batch was kept)`}: ` +
      `${pendingBytes} bytes of reports wait for upload, this report needs ${needed} more, maxOutboxBytes is ${cap}: ` +
      "upload to make room");
  }
}

/** The device opted out of collection (`TelemetryClient.optOut`): nothing is recorded or charged until `optIn`. */
export class OptedOutError extends Error {
  override name = "OptedOutError";
}

/**
 * A store whose state cannot be used: damaged, or missing while traces of it remain (reports charged to a budget
 * that cannot be known). Nothing was changed: the budget is never reset silently.
 */
export class StateError extends Error {
  override name = "StateError";
}

/** The result an `UploadError` carries: what was done before the failure (Python's `UploadResult`). */
export type UploadErrorResult = unknown;

/**
 * An upload stopped: the server refused the batch, or it could not be delivered in `maxAttempts`
 * (`ldp.errors.UploadError`). Nothing of the failed part was acknowledged. `status` is the last HTTP status (`null`:
 * no answer), `reason` the server's `error` field or a short description, `result` what was done before.
 */
export class UploadError extends Error {
  readonly status: number | null;
  readonly reason: string;
  readonly result: UploadErrorResult;

  constructor(message: string, options: { status: number | null; reason: string; result?: UploadErrorResult }) {
    super(message);
    this.name = "UploadError";
    this.status = options.status;
    this.reason = options.reason;
    this.result = options.result;
  }
}

/** A collector's 2xx answer that is not a sane answer of the upload protocol (`ldp.errors.UploadProtocolError`). */
export class UploadProtocolError extends UploadError {
  constructor(message: string, options: { status: number | null; reason: string; result?: UploadErrorResult }) {
    super(message, options);
    this.name = "UploadProtocolError";
  }
}

/**
 * A replayed stream drawn from in another order (another `k`) or beyond its end (`ldp.randomness.ReplayError`, an
 * `AssertionError` in Python): the client does not draw as the recording did.
 */
export class ReplayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReplayError";
  }
}
