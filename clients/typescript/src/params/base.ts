/**
 * What every protocol's parameters share: their fields and types, `fromDict` with Python's checks and texts, the
 * canonical dict the fingerprint hashes, and the checks of `ldp/encoders/base.py`.
 *
 * JS has one number type. A field's declared type says how it is written in canonical JSON: a `float` field as
 * Python writes a float (`1.0`, `1e-05`), an `int` field as digits. A number in an error text is written as
 * Python would write the value the user gave: a safe integer as digits, anything else as a float (`pyNum`).
 */
import { PyFloat, compareCodePoints, fingerprint as fingerprintOf, pyFloatRepr, pyRepr, pyTypeName } from "../canonical.js";
import { LdpTypeError, LdpValueError } from "../errors.js";
import { exp as pyExp } from "../pymath.js";

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

/** How a params field is typed (its Python annotation): decides its canonical JSON form (`floats`: a list of floats,
 * `ints`: a list of ints). */
export type FieldType = "float" | "int" | "bool" | "str" | "floats" | "ints" | "labels" | "optstr" | "any";

/** A params field: its name, type and default (absent: required). */
export interface FieldSpec {
  readonly name: string;
  readonly type: FieldType;
  readonly default?: unknown;
}

/** A JSON-like dict of params, as `Params.to_dict()` gives it. */
export type ParamsDict = Record<string, unknown>;

/** Whether a JS number stands for a Python int: integral with |x| <= 2^53 (a JSON integer beyond that is not exact
 * in a double anyway). A JSON `2.0` is therefore an int here, where Python reads a float: JS cannot tell them apart. */
export function isPyInt(x: unknown): x is number {
  return typeof x === "number" && Number.isInteger(x) && Math.abs(x) <= 2 ** 53;
}

/** Python's `str(x)` of a number the user gave: an int (`isPyInt`) as digits, else Python's float repr. */
export function pyNum(x: number): string {
  return isPyInt(x) ? String(x) : pyFloatRepr(x);
}

/**
 * Python's `repr` of a value that came from JSON: strings quoted as Python does, `None`, `True`, `False`, numbers
 * by `pyNum`, arrays as tuples when `tuples` (params: `from_dict` makes lists tuples) else as lists, objects as dicts.
 */
export function pyReprValue(v: unknown, tuples = false): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return pyNum(v);
  if (typeof v === "string") return pyRepr(v);
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (Array.isArray(v)) {
    const items = v.map((x) => pyReprValue(x, tuples));
    if (!tuples) return `[${items.join(", ")}]`;
    return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
  }
  if (typeof v === "object") {
    const parts = Object.entries(v as Record<string, unknown>).map(([k, x]) => `${pyRepr(k)}: ${pyReprValue(x, tuples)}`);
    return `{${parts.join(", ")}}`;
  }
  return String(v);
}

/** `type(v).__name__` of the Python value a JSON value stands for (`pyTypeName`: numbers by `isPyInt`). */
export const pyType = pyTypeName;

/** The Python type name of a params value (after `from_dict`: a list is a `tuple`). */
export function paramTypeName(v: unknown): string {
  return Array.isArray(v) ? "tuple" : pyType(v);
}

/** Python's list repr of strings: `['a', 'b']`. */
export function pyList(names: readonly string[]): string {
  return `[${names.map(pyRepr).join(", ")}]`;
}

/** Sort strings by code point (Python's `sorted` of `str`), not by UTF-16 unit. */
export function sortedByCodePoint(names: Iterable<string>): string[] {
  return [...names].sort(compareCodePoints);
}

function isReal(v: unknown): v is number {
  return typeof v === "number";
}

/** `check_epsilon`: a finite real > 0. */
export function checkEpsilon(epsilon: unknown, name = "epsilon"): number {
  if (!isReal(epsilon)) throw new LdpTypeError(`${name} must be a real number, got ${paramTypeName(epsilon)}`);
  if (!(epsilon > 0 && Number.isFinite(epsilon))) throw new LdpValueError(`${name} must be finite and > 0, got ${pyNum(epsilon)}`);
  return epsilon;
}

/** `check_int`: an int in `[low, high]` (`high` absent: no upper bound). */
export function checkInt(value: unknown, name: string, low: number, high?: number): number {
  if (!isPyInt(value)) {
    throw new LdpTypeError(`${name} must be an int, got ${paramTypeName(value)}`);
  }
  if (value < low || (high !== undefined && value > high)) {
    const bound = high === undefined ? `>= ${low}` : `in [${low}, ${high}]`;
    throw new LdpValueError(`${name} must be ${bound}, got ${value}`);
  }
  return value;
}

/** `check_probability`: a real in [0, 1] (the text shows it as a float, as Python's `float(p)` does). */
export function checkProbability(p: unknown, name = "p"): number {
  if (!isReal(p)) throw new LdpTypeError(`${name} must be a real number, got ${paramTypeName(p)}`);
  if (!(p >= 0 && p <= 1)) throw new LdpValueError(`${name} must be in [0, 1], got ${pyFloatRepr(p)}`);
  return p;
}

/** A `bool` field (Python: `isinstance(v, bool)`). */
export function checkBool(value: unknown, name: string): boolean {
  if (typeof value !== "boolean") throw new LdpTypeError(`${name} must be a bool, got ${paramTypeName(value)}`);
  return value;
}

/** The constructor side of a params class, for `fromDict`. */
export interface ParamsClass<T extends ProtocolParams> {
  readonly className: string;
  readonly fields: readonly FieldSpec[];
  new (values: ParamsDict): T;
}

/**
 * Parameters from their `to_dict()` form, as Python's `ProtocolParams.from_dict`: an unknown name is a
 * `ValueError` (`unknown GRRParams parameters: ['x']`, sorted), a missing required one a `TypeError`
 * (`missing GRRParams parameters: ['domain_size']`, in field order); defaults fill the rest; then the class checks.
 */
export function fromDict<T extends ProtocolParams>(cls: ParamsClass<T>, d: ParamsDict): T {
  if (d === null || typeof d !== "object" || Array.isArray(d)) {
    throw new LdpTypeError(`${cls.className} parameters must be an object, got ${pyTypeName(d)}`);
  }
  const names = new Set(cls.fields.map((f) => f.name));
  const unknown = Object.keys(d).filter((k) => !names.has(k));
  if (unknown.length) throw new LdpValueError(`unknown ${cls.className} parameters: ${pyList(sortedByCodePoint(unknown))}`);
  const missing = cls.fields.filter((f) => !("default" in f) && !(f.name in d)).map((f) => f.name);
  if (missing.length) throw new LdpTypeError(`missing ${cls.className} parameters: ${pyList(missing)}`);
  const values: ParamsDict = {};
  for (const f of cls.fields) values[f.name] = f.name in d ? d[f.name] : f.default;
  return new cls(values);
}

/**
 * A protocol's validated parameters. Subclasses declare `protocol`, the static `className` and `fields`, check
 * their values in the constructor in the same order as the Python `__post_init__` (so the first error is the same),
 * and define `privacyCost` and `schema`.
 */
export abstract class ProtocolParams {
  abstract readonly protocol: string;
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

/** Python's `f"{n:,}"` of a non-negative integer. */
export function pyThousands(n: number | bigint): string {
  return BigInt(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Python's `f"{x:.1f}"` of a finite `x >= 0`: `toFixed(1)`, except that an exact tie (x = odd multiple of 1/4)
 * rounds half to even as Python does (`2.25` -> `2.2`, where `toFixed` gives `2.3`). */
function pyFixed1(x: number): string {
  const quarter = x * 4;
  if (Number.isInteger(quarter) && quarter % 2 === 1) {
    let tenths = Math.floor(x * 10); // x·10 = 2.5·(odd) is exact
    if (tenths % 2 === 1) tenths += 1;
    return `${Math.floor(tenths / 10)}.${tenths % 10}`;
  }
  return x.toFixed(1);
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
 * `ProtocolParams.check_collectable`: a `ValueError` with Python's text unless every upload line of these
 * parameters is within `MAX_LINE` bytes and the server aggregate within `MAX_AGGREGATE_CELLS` counters. Call it
 * where the Python `__post_init__` does (last), with the params' `schema` and `aggregate_cells`.
 */
export function checkCollectable(protocol: string, schema: readonly Field[], aggregateCells: number): void {
  const line = maxLineBytes(protocol, schema);
  if (line > MAX_LINE) {
    throw new LdpValueError(`${protocol} reports of these parameters take up to ${pyThousands(line)} bytes as an upload ` +
      `line, over the ${pyThousands(MAX_LINE)}-byte limit of every server job: all would be rejected`);
  }
  if (aggregateCells > MAX_AGGREGATE_CELLS) {
    throw new LdpValueError(`the ${protocol} aggregate of these parameters needs ${pyThousands(aggregateCells)} counters ` +
      `(${pyFixed1(aggregateCells * 8 / 2 ** 30)} GiB), over the limit of ${pyThousands(MAX_AGGREGATE_CELLS)} (2 GiB)`);
  }
}
