// The generated parameter tables (src/params/tables.ts, written by `python conformance/docs_tables.py` from the
// Python declarations) are what the protocols check: each protocol's `fields` is its table, and the generic checker
// (`checkParam`) refuses a value just outside each static bound with `param_range` and exactly that range's bounds,
// each non-choice string with `param_choice` naming the choices, and takes each bound and each choice.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PROTOCOLS } from "../dist/protocols/index.js";
import { checkParam } from "../dist/params/base.js";
import { PARAM_TABLES } from "../dist/params/tables.js";
import { refusal } from "../test-support/refusal.mjs";

/** The double next to `x` towards `up` (+inf) or down (-inf). */
function nextDouble(x, up) {
  if (x === 0) return up ? Number.MIN_VALUE : -Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + ((x > 0) === up ? 1n : -1n));
  return view.getFloat64(0);
}

/** A number just outside `bound` ("min" or "max") of `range`, for a row of `type`; the bound itself when excluded. */
function outside(range, bound, type) {
  const x = range[bound];
  if (range[`${bound}_exclusive`]) return x;
  if (type === "int" || type === "optint") return bound === "min" ? x - 1 : x + 1;
  return nextDouble(x, bound === "max");
}

/** The refusal's bounds of `range`: its keys but `dynamic`. */
function boundsOf(range) {
  const { dynamic: _, ...bounds } = range;
  return bounds;
}

/** The rows of every table with their protocol. */
function* rows() {
  for (const [protocol, table] of Object.entries(PARAM_TABLES)) for (const row of table) yield [protocol, row];
}

test("every protocol checks its own generated table, and every table is a protocol's", () => {
  assert.deepEqual(Object.keys(PROTOCOLS).sort(), Object.keys(PARAM_TABLES).sort());
  for (const [name, entry] of Object.entries(PROTOCOLS)) assert.equal(entry.Params.fields, PARAM_TABLES[name], name);
});

test("the generic checker refuses a value just outside each static bound, with exactly that range's bounds", () => {
  let probes = 0;
  for (const [protocol, row] of rows()) {
    const ranges = row.ranges ?? [];
    for (const range of ranges) {
      for (const bound of ["min", "max"]) {
        if (range[bound] === undefined) continue;
        const value = outside(range, bound, row.type);
        // the first range it breaks is refused, with its bounds (gamma's [0, 1] before [0, 0.5)); a dynamic max is
        // what the protocol computes, here 2^40
        const first = ranges.find((r) => !holds(r, value));
        const expected = { param: row.name, got: value, ...boundsOf(first), ...(first.dynamic ? { max: 2 ** 40 } : {}) };
        assert.throws(() => checkParam(value, row, () => 2 ** 40), refusal("ValueError", "param_range", expected),
          `${protocol}.${row.name} = ${value}`);
        probes++;
      }
      if (range.finite) {
        for (const value of [Infinity, -Infinity, NaN]) {
          assert.throws(() => checkParam(value, row), (err) => err.code === "param_range" && err.fields.param === row.name,
            `${protocol}.${row.name} = ${value}`);
        }
      }
    }
    // each bound itself is taken (a value inside every static range is not refused)
    for (const range of ranges.filter((r) => !r.dynamic)) {
      for (const bound of ["min", "max"]) {
        const x = range[bound];
        if (x === undefined || range[`${bound}_exclusive`] || !ranges.every((r) => holds(r, x))) continue;
        assert.doesNotThrow(() => checkParam(x, row), `${protocol}.${row.name} = ${x}`);
      }
    }
  }
  assert.ok(probes > 100, `only ${probes} bounds probed`);
});

/** Whether `x` passes `range`'s static checks. */
function holds(range, x) {
  if (range.finite && !Number.isFinite(x)) return false;
  if (range.min !== undefined && !(range.min_exclusive ? x > range.min : x >= range.min)) return false;
  return range.max === undefined || (range.max_exclusive ? x < range.max : x <= range.max);
}

test("the generic checker refuses each string that is not a choice, naming the choices, and takes each choice", () => {
  let choices = 0;
  for (const [protocol, row] of rows()) {
    if (!row.choices) continue;
    for (const value of ["zz-not-a-choice", "", row.choices[0].toUpperCase(), null, 1, true]) {
      assert.throws(() => checkParam(value, row),
        refusal("ValueError", "param_choice", { param: row.name, choices: row.choices, got: value }),
        `${protocol}.${row.name} = ${JSON.stringify(value)}`);
    }
    for (const choice of row.choices) assert.doesNotThrow(() => checkParam(choice, row), `${protocol}.${row.name}`);
    choices++;
  }
  assert.ok(choices >= 7, `only ${choices} choice parameters`);
});

test("the generic checker refuses a value of the wrong type with param_type, and optint takes null", () => {
  const EXPECTED = { float: "float", int: "int", optint: "int", bool: "bool" };
  const KINDS = { string: "string", boolean: "bool" };
  for (const [protocol, row] of rows()) {
    const expected = EXPECTED[row.type];
    if (expected === undefined || row.choices) continue;
    for (const value of ["x", [], {}, ...(row.type === "bool" ? [0, 1.5] : [true]), ...(expected === "int" ? [0.5] : [])]) {
      assert.throws(() => checkParam(value, row), refusal("TypeError", "param_type", { param: row.name, expected,
        got: KINDS[typeof value] ?? (Array.isArray(value) ? "list" : typeof value === "object" ? "object" :
          Number.isInteger(value) ? "int" : "float") }),
      `${protocol}.${row.name} = ${JSON.stringify(value)}`);
    }
    if (row.type === "optint") assert.doesNotThrow(() => checkParam(null, row), `${protocol}.${row.name} = null`);
    else assert.throws(() => checkParam(null, row), refusal("TypeError", "param_type"), `${protocol}.${row.name} = null`);
  }
});
