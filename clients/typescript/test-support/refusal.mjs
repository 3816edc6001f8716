// Checking refusals by meaning (docs/conformance.md, "Refusals"): the category (`TypeError`: an `LdpTypeError`,
// `ValueError`: an `LdpValueError`), the `code` and the `fields`; the message is the client's own.
// Kept outside test/ because `node --test` runs every file under a test/ folder.
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { PyFloat } from "../dist/canonical.js";
import { LdpRefusal, LdpTypeError, LdpValueError } from "../dist/errors.js";

/** A refusal's fields as plain JSON values: a `PyFloat` (a float token of a vector file) as its number, absent fields
 * dropped. Numbers compare as numbers (`-1` and `-1.0` are equal; `-0` and `0` are not): the client's `got` is the
 * JS number given, which cannot say whether its token had a fraction. */
export function plainFields(v) {
  if (v instanceof PyFloat) return v.value;
  if (Array.isArray(v)) return v.map(plainFields);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => [k, plainFields(x)]));
  }
  return v;
}

/** `err` is the refusal `expected` (a vector's `error`: `type`, `code`, `fields`): the same category, code and
 * fields (deep-equal), and some message. */
export function assertRefusal(err, expected, context) {
  assert.ok(err instanceof LdpRefusal, `${context}: not a refusal: ${err?.stack ?? err}`);
  const Kind = expected.type === "TypeError" ? LdpTypeError : LdpValueError;
  assert.ok(err instanceof Kind, `${context}: ${err.name} (${err.code}: ${err.message}), expected a ${Kind.name}`);
  assert.equal(err.code, expected.code, `${context}: code (${err.message})`);
  assert.deepStrictEqual(plainFields(err.fields), plainFields(expected.fields),
    `${context}: fields of ${err.code} (${err.message})`);
  assert.ok(err.message.length > 0);
}

/** A predicate for `assert.throws`: a refusal of `type` ("TypeError" or "ValueError") with `code` and exactly
 * `fields` (when given). */
export function refusal(type, code, fields) {
  return (err) => err instanceof (type === "TypeError" ? LdpTypeError : LdpValueError) && err.code === code &&
    (fields === undefined || isDeepStrictEqual(plainFields(err.fields), plainFields(fields)));
}
