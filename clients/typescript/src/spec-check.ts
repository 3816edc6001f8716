/**
 * The spec validator's rules (`ldp/spec/schema.py`'s `_Checker`): `Checker` collects every problem of a document as
 * `json.path: message` (a `SpecError` lists them), with Python's words for each kind of JSON value (`kind`) and
 * Python's JSON paths (`join`). `fitsWithin` is `PrivacyCost.fits_within`, with its 1e-9 relative slack.
 */
import { compareCodePoints } from "./canonical.js";
import { costText, showValue as num } from "./errors.js";
import { PrivacyCost, isPyInt } from "./params/base.js";

/** The largest `release.min_reports`. */
const MAX_MIN_REPORTS = 2 ** 62;
/** Longest planned horizon of `release.central.windows` (as the Python package's `MAX_TARGET_WINDOWS`). */
const MAX_TARGET_WINDOWS = 1_000_000;

/** A metric's name (a key that `join` writes after a dot). */
export const METRIC_RE = /^[a-z][a-z0-9_]{0,31}$/;
/** The relative slack of `fitsWithin`. */
const REL_TOL = 1e-9;

/** An invalid spec: `errors` lists every problem as `json.path: message` (Python's `SpecError`). */
export class SpecError extends Error {
  override readonly name: string = "SpecError";
  readonly errors: string[];
  constructor(errors: string[], source = "spec") {
    super(`${source}: ${errors.length} error(s):\n  ${errors.join("\n  ")}`);
    this.errors = errors;
  }
}

/** `PrivacyCost.fits_within`: both parts at most the cap's, with a 1e-9 relative slack. */
export function fitsWithin(c: PrivacyCost, cap: PrivacyCost): boolean {
  const fits = (a: number, b: number) => a <= b * (1 + REL_TOL) + 1e-15;
  return fits(c.epsilon, cap.epsilon) && fits(c.delta, cap.delta);
}

/** `n` with its thousands separated by commas, as Python's `f"{n:,}"`. */
function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** `_kind`: how the validator names a JSON value's type. */
export function kind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "string") return "a string";
  if (typeof v === "boolean") return "a boolean";
  if (typeof v === "object") return "an object";
  return `${isPyInt(v) ? "integer" : typeof v} ${num(v)}`;
}

/** `_join`: the JSON path of `key` inside `path`. */
export function join(path: string, key: string): string {
  if (!METRIC_RE.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path === "$" ? key : `${path}.${key}`;
}

/** Whether `v` is a JSON object (not null, not a list). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** `keys` in Python's order (by code point). */
export function sortedKeys(keys: Iterable<string>): string[] {
  return [...keys].sort(compareCodePoints);
}

/** The validator's error list (Python's `_Checker`): every problem as `json.path: message`. */
export class Checker {
  readonly errors: string[] = [];

  fail(path: string, msg: string): void {
    this.errors.push(`${path}: ${msg}`);
  }

  obj(value: unknown, path: string, required: string[], optional: string[]): Record<string, unknown> | null {
    if (!isObject(value)) {
      this.fail(path, `must be an object, got ${kind(value)}`);
      return null;
    }
    const allowed = new Set([...required, ...optional]);
    for (const key of sortedKeys(Object.keys(value).filter((k) => !allowed.has(k)))) {
      this.fail(join(path, key), `unknown key (expected one of ${sortedKeys(allowed).join(", ")})`);
    }
    for (const key of sortedKeys(required.filter((k) => !(k in value)))) this.fail(join(path, key), "required");
    return value;
  }

  int(value: unknown, path: string, low: number, high: number, why: string): number | null {
    if (typeof value !== "number" || !isPyInt(value)) {
      this.fail(path, `must be an integer, got ${kind(value)}`);
    } else if (value < low) {
      this.fail(path, `must be >= ${low}, got ${value}`);
    } else if (value > high) {
      this.fail(path, `must be <= ${thousands(high)} (${why}), got ${thousands(value)}`);
    } else {
      return value;
    }
    return null;
  }

  cost(value: unknown, path: string): PrivacyCost | null {
    let parts: Array<[unknown, string]>;
    let wanted: string;
    if (isObject(value)) {
      if (this.obj(value, path, ["epsilon"], ["delta"]) === null || !("epsilon" in value)) return null;
      parts = [[value.epsilon, join(path, "epsilon")], ["delta" in value ? value.delta : 0, join(path, "delta")]];
      wanted = "a finite number";
    } else {
      parts = [[value, path], [0, path]];
      wanted = 'a finite number (ε) or {"epsilon": ε, "delta": δ}';
    }
    for (const [v, p] of parts) {
      if (typeof v !== "number" || !Number.isFinite(v)) {
        this.fail(p, `must be ${wanted}, got ${kind(v)}`);
        return null;
      }
    }
    const [[eps, epsPath], [delta, deltaPath]] = parts as Array<[number, string]>;
    if (!(eps > 0)) this.fail(epsPath, `must be > 0, got ${num(eps)}`);
    else if (!(delta >= 0 && delta < 1)) this.fail(deltaPath, `must be in [0, 1), got ${num(delta)}`);
    else return { epsilon: eps, delta };
    return null;
  }

  release(value: unknown, path: string): void {
    const v = this.obj(value, path, [], ["min_reports", "min_z", "central"]);
    if (v === null) return;
    if ("central" in v) this.central(v.central, join(path, "central"));
    if ("min_reports" in v) this.int(v.min_reports, join(path, "min_reports"), 0, MAX_MIN_REPORTS, "a count of reports");
    if ("min_z" in v) {
      const z = v.min_z;
      if (typeof z !== "number" || !Number.isFinite(z)) this.fail(join(path, "min_z"), `must be a finite number >= 0, got ${kind(z)}`);
      else if (z < 0) this.fail(join(path, "min_z"), `must be >= 0, got ${num(z)}`);
    }
  }

  /** A central target: `epsilon` finite > 0, `delta` in (0, 1), `windows` an integer in [1, 1,000,000] (optional). */
  central(value: unknown, path: string): void {
    const v = this.obj(value, path, ["epsilon", "delta"], ["windows"]);
    if (v === null) return;
    for (const [key, rule] of [["epsilon", "> 0"], ["delta", "in (0, 1)"]] as const) {
      if (!(key in v)) continue;
      const x = v[key];
      if (typeof x !== "number" || !Number.isFinite(x)) this.fail(join(path, key), `must be a finite number ${rule}, got ${kind(x)}`);
      else if (!(key === "epsilon" ? x > 0 : x > 0 && x < 1)) this.fail(join(path, key), `must be ${rule}, got ${num(x)}`);
    }
    if ("windows" in v) this.int(v.windows, join(path, "windows"), 1, MAX_TARGET_WINDOWS, "a horizon the accountant composes");
  }

  le(small: PrivacyCost | undefined, big: PrivacyCost | undefined, path: string, what: string): void {
    if (small !== undefined && big !== undefined && !fitsWithin(small, big)) {
      this.fail(path, `${costText(small)} exceeds ${what} (${costText(big)})`);
    }
  }
}
