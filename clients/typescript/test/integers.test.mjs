// The client's integer rule (issue 73, item 4; `isPyInt` in src/params/check.ts, docs/typescript-client.md
// "Numbers"): a `number` is an int when it is integral and within ±2^53, any other number is a float; a `bigint` is
// an int of any size. So each value stands for one Python value — an int, or the float of the same double — and is
// refused as the Python client refuses that value: the same category, code and fields, `got` exactly the integer given
// (a number within ±2^53, a bigint beyond). Checked for every protocol, and for each of `multi`'s attributes, at 1,
// 2^53 − 1, 2^53, 2^53 + 1, 2^64, −2^53 and −2^53 − 1, as numbers and as bigints, against what the Python client does
// (test/data/python_integers.json, written by test/data/make_python_integers.py with the repository's Python).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";

import { PROTOCOLS } from "../dist/protocols/index.js";
import { fromDict } from "../dist/params/base.js";
import { LdpRefusal, LdpTypeError, LdpValueError, isPyInt, kindOf } from "../dist/index.js";
import { exactInt } from "../dist/errors.js";

const PYTHON = JSON.parse(readFileSync(new URL("data/python_integers.json", import.meta.url), "utf8"));
const MAX = 2 ** 53;

/** The values tried, as this client is given them: numbers (2^53 + 1 is 2^53 as a double, −2^53 − 1 is −2^53), and
 * the same integers as bigints. */
const INPUTS = [
  1, MAX - 1, MAX, MAX + 1, 2 ** 64, -MAX, -MAX - 1,
  1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 64n, -(2n ** 53n), -(2n ** 53n) - 1n,
];

/** The Python value `v` stands for by the rule as the docs state it (not by the client's code), typed as the table
 * types it. */
function pythonOf(v) {
  if (typeof v === "bigint" || (Number.isInteger(v) && Math.abs(v) <= MAX)) return { int: String(v) };
  return { float: v };
}

/** A typed value of the table as this client holds it: an int exactly (`exactInt`), a float as its number. */
function plain(t) {
  if (t !== null && typeof t === "object") {
    if ("int" in t && Object.keys(t).length === 1) return exactInt(BigInt(t.int));
    if ("float" in t && Object.keys(t).length === 1) return Number(t.float);
    if (Array.isArray(t)) return t.map(plain);
    return Object.fromEntries(Object.entries(t).map(([k, x]) => [k, plain(x)]));
  }
  return t;
}

/** Whether typed value `t` of the table is the Python value `p` (`pythonOf`). */
function same(t, p) {
  return "int" in p ? t.int === p.int : "float" in t && Number(t.float) === p.float;
}

function encoderFor(name, params) {
  const entry = PROTOCOLS[name];
  const p = fromDict(entry.Params, params);
  const options = {};
  if (entry.assignedCohorts(p)) options.cohort = 0;
  if (entry.needsSecret) options.secret = new Uint8Array([115]);
  return entry.makeEncoder(p, options);
}

/** `encoder.prepare(value)` came out as the table's `expected` outcome (`"accepted"`, or a refusal). */
function assertOutcome(encoder, value, expected, context) {
  let error = null;
  try {
    encoder.prepare(value);
  } catch (err) {
    error = err;
  }
  if (expected === "accepted") {
    assert.equal(error, null, `${context}: accepted by Python, refused here: ${error?.message}`);
    return;
  }
  assert.ok(error instanceof LdpRefusal, `${context}: refused by Python (${expected.code}), here: ${error?.stack ?? "accepted"}`);
  const Kind = expected.type === "TypeError" ? LdpTypeError : LdpValueError;
  assert.ok(error instanceof Kind, `${context}: ${error.name}, Python's is a ${expected.type}`);
  assert.equal(error.code, expected.code, `${context}: code (${error.message})`);
  const fields = plain(expected.fields);
  assert.ok(isDeepStrictEqual({ ...error.fields }, fields),
    `${context}: fields ${JSON.stringify(error.fields, (k, x) => (typeof x === "bigint" ? `${x}n` : x))}, ` +
    `Python's ${JSON.stringify(fields, (k, x) => (typeof x === "bigint" ? `${x}n` : x))}`);
}

test("every protocol of this client has Python's outcomes in the table", () => {
  assert.deepEqual(Object.keys(PYTHON).sort(), Object.keys(PROTOCOLS).sort());
});

for (const [name, { params, cases }] of Object.entries(PYTHON)) {
  test(`${name}: integers at 2^53 and 2^64, as numbers and bigints, come out as in the Python client`, () => {
    const encoder = encoderFor(name, params);
    let checked = 0;
    for (const value of INPUTS) {
      const py = pythonOf(value);
      const found = cases.filter((c) => typeof c.value === "object" && !("a" in c.value) && same(c.value, py));
      assert.equal(found.length, 1, `${name}: the table has Python's ${JSON.stringify(py)} once`);
      assertOutcome(encoder, value, found[0].outcome, `${name} ${typeof value} ${value}`);
      checked++;
    }
    if (name === "multi") {
      // The table's records: its first audit input, {a: 0, x: 0.0, s: 0}, with one attribute set to each value.
      const base = { a: 0, x: 0, s: 0 };
      const records = cases.filter((c) => "a" in c.value).map((c) => {
        const [attribute] = Object.keys(base).filter((k) => plain(c.value[k]) !== base[k]);
        return { attribute, value: c.value[attribute], outcome: c.outcome };
      });
      for (const attribute of Object.keys(base)) {
        for (const value of INPUTS) {
          const py = pythonOf(value);
          const found = records.filter((r) => r.attribute === attribute && same(r.value, py));
          assert.equal(found.length, 1, `multi: the table has a record with ${attribute} = ${JSON.stringify(py)}`);
          assertOutcome(encoder, { ...base, [attribute]: value }, found[0].outcome, `multi ${attribute} = ${typeof value} ${value}`);
          checked++;
        }
      }
    }
    assert.equal(checked, INPUTS.length * (name === "multi" ? 4 : 1));
  });
}

test("the rule: a number is an int when integral and within ±2^53; a bigint at any size; got is exact", () => {
  for (const v of [0, 1, -1, MAX - 1, MAX, -MAX, Number.MAX_SAFE_INTEGER]) {
    assert.equal(isPyInt(v), true, String(v));
    assert.equal(kindOf(v), "int", String(v));
  }
  for (const v of [MAX + 2, -MAX - 2, 2 ** 64, 1e300, 0.5, -1.5, Infinity, -Infinity, NaN]) {
    assert.equal(isPyInt(v), false, String(v));
    assert.equal(kindOf(v), "float", String(v));
  }
  assert.equal(MAX + 1, MAX, "2^53 + 1 has no double: it is 2^53");
  for (const v of [0n, 2n ** 53n + 1n, 2n ** 64n, -(2n ** 80n)]) {
    assert.equal(isPyInt(v), false, "isPyInt is about numbers");
    assert.equal(kindOf(v), "int", String(v));
  }
  assert.deepEqual([exactInt(5n), exactInt(2n ** 53n), exactInt(-(2n ** 53n)), exactInt(2n ** 53n + 1n), exactInt(7)],
    [5, MAX, -MAX, 2n ** 53n + 1n, 7], "a number where a number is exact, else the bigint");
});

test("parameters are numbers: a bigint is taken as the number it equals (exact within ±2^53, a float beyond)", () => {
  const { Params } = PROTOCOLS.grr;
  const five = fromDict(Params, { epsilon: 1, domain_size: 5 });
  const big = fromDict(Params, { epsilon: 1n, domain_size: 5n });
  assert.equal(big.fingerprint, five.fingerprint, "5n is 5 (Python: domain_size=5), 1n is 1 (Python: epsilon=1 is 1.0)");
  assert.deepEqual(big.canonicalDict(), five.canonicalDict());
  // Python: domain_size=2**53 -> ValueError param_range {param: domain_size, got: 9007199254740992, min: 2,
  // max: 4294967296}; the same here, for 2^53 as a number or a bigint.
  for (const d of [MAX, 2n ** 53n]) {
    assert.throws(() => fromDict(Params, { epsilon: 1, domain_size: d }), (e) => e instanceof LdpValueError &&
      e.code === "param_range" && isDeepStrictEqual({ ...e.fields }, { param: "domain_size", got: MAX, min: 2, max: 4294967296 }));
  }
  // Python: domain_size=2**64 -> param_range (an int of any size); here the nearest double, a float by the rule:
  // param_type, as Python's domain_size=2.0**64. The one difference, stated in docs/typescript-client.md.
  assert.throws(() => fromDict(Params, { epsilon: 1, domain_size: 2n ** 64n }), (e) => e instanceof LdpTypeError &&
    e.code === "param_type" && isDeepStrictEqual({ ...e.fields }, { param: "domain_size", expected: "int", got: "float" }));
  // A list's entries too: bucket-grr's edges [0n, 1n, 4n] are the edges [0, 1, 4].
  const edges = fromDict(PROTOCOLS["bucket-grr"].Params, { epsilon: 1, edges: [0n, 1n, 4n] });
  assert.equal(edges.fingerprint, fromDict(PROTOCOLS["bucket-grr"].Params, { epsilon: 1, edges: [0, 1, 4] }).fingerprint);
});
