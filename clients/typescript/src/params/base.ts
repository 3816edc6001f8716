/**
 * What every protocol's parameters share: their fields and types, `fromDict` with Python's checks, the
 * canonical dict the fingerprint hashes, and the checks of `ldp/encoders/base.py`.
 *
 * JS has one number type. A field's declared type says how it is written in canonical JSON: a `float` field as
 * Python writes a float (`1.0`, `1e-05`), an `int` field as digits. A refusal is an `LdpRefusal` with Python's
 * `code` and `fields` (docs/conformance.md, "Refusals"); its message is this client's own.
 */
import { PyFloat, compareCodePoints, fingerprint as fingerprintOf } from "../canonical.js";
import { LdpRefusal, LdpTypeError, LdpValueError, RefusalFields, kindOf } from "../errors.js";
import { exp as pyExp } from "../pymath.js";
import { isPyInt } from "./check.js";
import type { ParamRow } from "./tables.js";

export { checkParam, checkParams, isPyInt } from "./check.js";
export type { ChoiceOf, RowName } from "./check.js";

/** A cost in (ε, δ), as Python's `PrivacyCost`. */
export interface PrivacyCost {
  readonly epsilon: number;
  readonly delta: number;
}

/** One payload field of a report: a `uint` below `size`, or a `bits` string of `size` bits. */
export interface Field {
  readonly name: string;
  readonly kind: "uint" | "bits";
  readonly size: number;
}

export type { ParamRange, ParamRow, ParamType } from "./tables.js";

/** A params field: a row of the protocol's generated table (name, type, default, ranges, choices). */
export type FieldSpec = ParamRow;

/** A JSON-like dict of params, as `Params.to_dict()` gives it. */
export type ParamsDict = Record<string, unknown>;

/** Sort strings by code point (Python's `sorted` of `str`), not by UTF-16 unit. */
export function sortedByCodePoint(names: Iterable<string>): string[] {
  return [...names].sort(compareCodePoints);
}

function isReal(v: unknown): v is number {
  return typeof v === "number";
}

/** `check_epsilon`: a finite real > 0 (`param_type` with `expected: "float"`, `param_range`). */
export function checkEpsilon(epsilon: unknown, name = "epsilon"): number {
  if (!isReal(epsilon)) throw new LdpTypeError("param_type", { param: name, expected: "float", got: kindOf(epsilon) });
  if (!(epsilon > 0 && Number.isFinite(epsilon))) {
    throw new LdpValueError("param_range", { param: name, got: epsilon, min: 0, min_exclusive: true, finite: true });
  }
  return epsilon;
}

/** `check_finite`: a finite real (`param_type` with `expected: "float"`, `param_range` with `finite`). */
export function checkFinite(value: unknown, name: string, extra: RefusalFields = {}): number {
  if (!isReal(value)) throw new LdpTypeError("param_type", { param: name, expected: "float", got: kindOf(value), ...extra });
  if (!Number.isFinite(value)) throw new LdpValueError("param_range", { param: name, got: value, finite: true, ...extra });
  return value;
}

/** `check_int`: an int in `[low, high]` (`high` absent: no upper bound); `extra`: more fields (`index`). */
export function checkInt(value: unknown, name: string, low: number, high?: number, extra: RefusalFields = {}): number {
  name = name.split(" ", 1)[0]; // "width (m)": the parameter is width
  if (!isPyInt(value)) throw new LdpTypeError("param_type", { param: name, expected: "int", got: kindOf(value), ...extra });
  if (value < low || (high !== undefined && value > high)) {
    const bounds = high === undefined ? { min: low } : { min: low, max: high };
    throw new LdpValueError("param_range", { param: name, got: value, ...bounds, ...extra });
  }
  return value;
}

export { checkProbability } from "../random.js"; // `check_probability`: a real in [0, 1]

/** `check_choice`: one of the strings `choices` (`param_choice`, `got` the value given). */
export function checkChoice<T extends string>(value: unknown, name: string, choices: readonly T[],
  extra: RefusalFields = {}): T {
  if (!(typeof value === "string" && (choices as readonly string[]).includes(value))) {
    throw new LdpValueError("param_choice", { param: name, choices, got: value === undefined ? null : value, ...extra });
  }
  return value as T;
}

/** A `param_relation` refusal: `params` break `rule` (`message`: what it means, in these parameters' values). */
export function relation(rule: string, params: readonly string[], message?: string, extra: RefusalFields = {}): LdpValueError {
  return new LdpValueError("param_relation", { params, rule, ...extra }, message);
}

/** The constructor side of a params class, for `fromDict`. */
export interface ParamsClass<T extends ProtocolParams> {
  readonly className: string;
  /** The protocol's generated table (`params/tables.ts`). */
  readonly fields: readonly ParamRow[];
  new (values: ParamsDict): T;
}

/**
 * Parameters from their `to_dict()` form, as Python's `ProtocolParams.from_dict`: an unknown name is a
 * `ValueError` (`unknown_params`, the names sorted), a missing required one a `TypeError` (`missing_params`, in the
 * table's order); defaults fill the rest; a `bigint` is taken as the number it equals; then the class checks.
 */
export function fromDict<T extends ProtocolParams>(cls: ParamsClass<T>, d: ParamsDict): T {
  if (d === null || typeof d !== "object" || Array.isArray(d)) {
    throw new TypeError(`${cls.className} parameters must be an object, got ${kindOf(d)}`);
  }
  const names = new Set(cls.fields.map((f) => f.name));
  const unknown = Object.keys(d).filter((k) => !names.has(k));
  if (unknown.length) {
    const params = sortedByCodePoint(unknown);
    throw new LdpValueError("unknown_params", { params });
  }
  const missing = cls.fields.filter((f) => !("default" in f) && !(f.name in d)).map((f) => f.name);
  if (missing.length) {
    throw new LdpTypeError("missing_params", { params: missing });
  }
  const values: ParamsDict = {};
  for (const f of cls.fields) values[f.name] = asNumbers(f.name in d ? d[f.name] : f.default);
  return new cls(values);
}

/** A parameter with each `bigint` (itself, or an entry of a list) as the number it equals: parameters are numbers, as
 * a spec's JSON gives them. Exact within ±2^53 (`5n` is `5`, Python's int 5); beyond, the nearest double, a float by
 * the integer rule (`isPyInt`). */
function asNumbers(v: unknown): unknown {
  return typeof v === "bigint" ? Number(v) : Array.isArray(v) ? v.map(asNumbers) : v;
}

/**
 * A protocol's validated parameters. Subclasses declare `protocol`, the static `className` and `fields`, check
 * their values in the constructor in the same order as the Python `__post_init__` (so the first error is the same),
 * and define `privacyCost` and `schema`.
 */
export abstract class ProtocolParams {
  abstract readonly protocol: string;
  /** `false` for a kind whose devices share the exact value with a VDAF between two aggregators (`poplar1`): no
   * local randomizer, its `privacyCost` refused (no local ε bounds it). Absent: the protocol randomizes. */
  declare readonly localRandomizer?: false;
  /** Why a metric of these parameters may not name the trust model `trust` (the spec's `.trust` error, its text
   * ending in `, got …`), `undefined` when it may. Absent: any model, the two-aggregator ones when the protocol fits
   * in Prio3 (the spec's own rule). */
  trustRefusal?(trust: string): string | undefined;
  readonly values: Readonly<ParamsDict>;
  private fp: string | undefined;

  constructor(values: ParamsDict) {
    this.values = Object.freeze({ ...values });
  }

  /** The params class's field list. */
  get fieldSpecs(): readonly FieldSpec[] {
    return (this.constructor as unknown as ParamsClass<ProtocolParams>).fields;
  }

  /** `to_dict()`: the fields in order, as JSON values (floats as plain numbers). */
  toDict(): ParamsDict {
    const out: ParamsDict = {};
    for (const f of this.fieldSpecs) out[f.name] = this.values[f.name];
    return out;
  }

  /** The dict the fingerprint hashes: float fields marked as `PyFloat` so canonical JSON writes them as Python. */
  canonicalDict(): ParamsDict {
    const out: ParamsDict = {};
    for (const f of this.fieldSpecs) {
      const v = this.values[f.name];
      if (f.type === "float") out[f.name] = new PyFloat(v as number);
      else if (f.type === "floats") out[f.name] = (v as number[]).map((x) => new PyFloat(x));
      else out[f.name] = v;
    }
    return out;
  }

  /** 16 hex digits naming protocol and parameters (`ldp.reports.fingerprint`). */
  get fingerprint(): string {
    if (this.fp === undefined) this.fp = fingerprintOf(this.protocol, this.canonicalDict());
    return this.fp;
  }

  /** The number of distinct values of a fixed domain (`domain_size`); `null` for the open-domain protocols (any
   * string) and the numeric ones. A protocol whose domain is not its `domain_size` field overrides this. */
  get domainSize(): number | null {
    const d = this.values.domain_size;
    return typeof d === "number" ? d : null;
  }

  /** The ε (and δ) one report costs, as Python's `privacy_cost` computes it. */
  abstract get privacyCost(): PrivacyCost;

  /** The payload fields of a report, in order. */
  abstract get schema(): readonly Field[];
}

// ---------------------------------------------------------------------------------------------------------------
// What every protocol's parameters must allow (enc-B, additive): upload lines within `MAX_LINE` and aggregates
// within `MAX_AGGREGATE_CELLS` (`ldp/wire.py` `max_line_bytes`, `ProtocolParams.check_collectable`), and
// `logistic_tail` (`ldp/randomness/base.py`), which the derived probabilities of many protocols use.

/** The longest upload line a server job accepts, in bytes (`MAX_LINE`). */
export const MAX_LINE = 2 ** 22;
/** The largest window index an envelope may carry (`MAX_WINDOW`). */
export const MAX_WINDOW = 2 ** 53;
/** Counters a server aggregate of one metric may hold (`MAX_AGGREGATE_CELLS`, 2 GiB of int64). */
export const MAX_AGGREGATE_CELLS = 2 ** 28;

/** `1/(1+e^x)` without overflow (`logistic_tail`): `e^-x` once `e^x` would overflow. `exp` is Python's (glibc's,
 * correctly rounded but in rare near-ties), not `Math.exp` (fdlibm, one ulp off in ~10% of arguments): see pymath.ts. */
export function logisticTail(x: number): number {
  return x < 700.0 ? 1.0 / (1.0 + pyExp(x)) : pyExp(-x);
}

/**
 * `max_line_bytes`: bytes of the longest upload line (envelope JSON and its newline) a report with `schema` can
 * make: 16-hex fingerprints, a 32-character metric name, window `MAX_WINDOW`, every `uint` at `size - 1`, every
 * `bits` field `size` characters.
 */
export function maxLineBytes(protocol: string, schema: readonly Field[]): number {
  const payload = schema.map((f) => `"${f.name}":${f.kind === "uint" ? (BigInt(f.size) - 1n).toString() : '""'}`).join(",");
  const report = `{"v":1,"protocol":"${protocol}","params":"${"0".repeat(16)}","payload":{${payload}}}`;
  const envelope = `{"spec":"${"0".repeat(16)}","metric":"${"m".repeat(32)}","window":${MAX_WINDOW},"report":${report}}`;
  let bits = 0;
  for (const f of schema) if (f.kind === "bits") bits += f.size;
  return envelope.length + bits + 1;
}

/**
 * `ProtocolParams.check_collectable`: a `param_limit` refusal (`line_bytes`, `aggregate_cells`) unless every upload
 * line of these parameters is within `MAX_LINE` bytes and the server aggregate within `MAX_AGGREGATE_CELLS`
 * counters. Call it where the Python `__post_init__` does (last), with the params' `schema` and `aggregate_cells`.
 */
export function checkCollectable(protocol: string, schema: readonly Field[], aggregateCells: number): void {
  const line = maxLineBytes(protocol, schema);
  if (line > MAX_LINE) throw new LdpValueError("param_limit", { limit: "line_bytes", got: line, max: MAX_LINE });
  if (aggregateCells > MAX_AGGREGATE_CELLS) {
    throw new LdpValueError("param_limit", { limit: "aggregate_cells", got: aggregateCells, max: MAX_AGGREGATE_CELLS });
  }
}

/** `renamed`: `err` (a refusal of a part a protocol is built from) restated in the protocol's own names: `param` and
 * `params` mapped by `names`, `extra` fields added, its message after `prefix`. Anything else is returned as is. */
export function renamed(err: unknown, names: Readonly<Record<string, string>>, extra: RefusalFields = {}, prefix = ""): unknown {
  if (!(err instanceof LdpRefusal)) return err;
  const f = err.fields;
  const out = err.withFields({
    ...(f.param === undefined ? {} : { param: names[f.param] ?? f.param }),
    ...(f.params === undefined ? {} : { params: f.params.map((p) => names[p] ?? p) }),
    ...extra,
  });
  if (prefix) out.message = prefix + out.message;
  return out;
}

/** `renaming`: `f()`, a refusal it throws `renamed`. */
export function renaming<T>(names: Readonly<Record<string, string>>, f: () => T, extra: RefusalFields = {}, prefix = ""): T {
  try {
    return f();
  } catch (err) {
    throw renamed(err, names, extra, prefix);
  }
}
