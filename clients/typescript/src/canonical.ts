/**
 * The canonical JSON that fingerprints hash (`ldp/wire.py` `canonical_json` and `fingerprint`), and (re-exported
 * from `pytext.ts`) the Python text forms it needs: `repr(float)` and JSON string escapes.
 *
 * JS has one number type. Canonical JSON writes a plain JS number as a Python int (digits; it must be a safe
 * integer) and a {@link PyFloat} as a Python float (`1.0`, `1e-05`): the caller marks floats explicitly, from the
 * field's declared type.
 */
import { toHex, utf8Encode } from "./bytes.js";
import { sha256 } from "./hash/sha256.js";
import { compareCodePoints, PyFloat, pyFloatRepr, pyJsonString } from "./pytext.js";

export { PyFloat, pyFloatRepr, compareCodePoints, pyJsonString } from "./pytext.js";

/** A value canonical JSON can write: null, booleans, strings, ints (safe-integer numbers or bigints), `PyFloat`s,
 * arrays and plain objects of them. */
export type JsonValue = null | boolean | string | number | bigint | PyFloat | JsonValue[] | { [key: string]: JsonValue };

function notSerializable(v: unknown): never {
  throw new TypeError(`canonical JSON cannot write ${v === undefined ? "undefined" : typeof v}`);
}

function writeJson(v: unknown, parents: Set<object>): string {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "string") return pyJsonString(v);
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v)) {
      throw new RangeError(`canonical JSON writes a plain number as an int, got ${v} ` +
      "(mark a float as PyFloat; an int beyond 2**53 as a bigint)");
    }
    return String(v); // -0 is written 0, as Python's int
  }
  if (v instanceof PyFloat) {
    if (!Number.isFinite(v.value)) throw new RangeError("canonical JSON cannot write NaN or an infinity");
    return pyFloatRepr(v.value);
  }
  if (typeof v !== "object") return notSerializable(v);
  if (parents.has(v)) throw new TypeError("canonical JSON cannot write a circular structure");
  if (Array.isArray(v)) {
    parents.add(v);
    const items = v.map((x) => writeJson(x, parents));
    parents.delete(v);
    return `[${items.join(",")}]`;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return notSerializable(v);
  parents.add(v);
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj).sort(compareCodePoints);
  const items = keys.map((k) => `${pyJsonString(k)}:${writeJson(obj[k], parents)}`);
  parents.delete(v);
  return `{${items.join(",")}}`;
}

/**
 * Python's `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`
 * (`canonical_json`, `ldp/wire.py`): keys sorted by code point, no spaces, ASCII only (`pyJsonString`), `true`,
 * `false`, `null`, ints as digits (a plain JS number must be a safe integer, else a `RangeError`; bigints allowed),
 * floats only as `PyFloat`, written by `pyFloatRepr` (NaN and infinities refused: a `RangeError`).
 */
export function canonicalJson(value: unknown): string {
  return writeJson(value, new Set());
}

/** The first 16 hex digits of SHA-256 of the UTF-8 text (ASCII for canonical JSON). */
export function sha256Hex16(text: string): string {
  return toHex(sha256(utf8Encode(text))).slice(0, 16);
}

/**
 * `fingerprint(protocol, params)` (`ldp/wire.py`): the first 16 hex digits of SHA-256 of
 * `canonicalJson({"protocol": protocol, "params": params})`. Mark float fields of `params` as `PyFloat`.
 */
export function fingerprint(protocol: string, params: Record<string, unknown>): string {
  return sha256Hex16(canonicalJson({ protocol, params }));
}
