// The generated parameter tables (src/params/tables.ts, written by `python conformance/docs_tables.py` from the
// Python declarations) agree with the fields each protocol of this client declares: the same names in the same
// order, the same defaults, compatible types.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PROTOCOLS } from "../dist/protocols/index.js";
import { PARAM_TABLES } from "../dist/params/tables.js";

// This client's field types against the table's (`ints` and `optint` are read as `ints` and `int` or null).
const COMPATIBLE = {
  float: ["float"], int: ["int", "optint"], bool: ["bool"], str: ["str"], floats: ["floats"], ints: ["ints"],
  labels: ["labels"], optstr: ["optstr"], any: ["any", "ints"],
};

test("every protocol's fields are the generated table's", () => {
  for (const [name, entry] of Object.entries(PROTOCOLS)) {
    const rows = PARAM_TABLES[name];
    assert.ok(rows, `${name}: no table`);
    assert.deepEqual(entry.Params.fields.map((f) => f.name), rows.map((r) => r.name), `${name}: the fields`);
    entry.Params.fields.forEach((field, i) => {
      const row = rows[i];
      assert.ok(COMPATIBLE[field.type]?.includes(row.type), `${name}.${field.name}: ${field.type} against ${row.type}`);
      assert.equal(!("default" in field), row.required, `${name}.${field.name}: required`);
      if (!row.required) assert.deepEqual(field.default, row.default, `${name}.${field.name}: the default`);
      assert.ok(row.doc.length > 0, `${name}.${field.name}: no meaning`);
    });
  }
});

test("the table's ranges and choices are well formed", () => {
  for (const rows of Object.values(PARAM_TABLES)) {
    for (const row of rows) {
      for (const r of row.ranges) {
        assert.ok(r.min !== undefined || r.max !== undefined || r.finite || r.dynamic, JSON.stringify(r));
        if (r.min !== undefined && r.max !== undefined) assert.ok(r.min <= r.max, JSON.stringify(r));
      }
      for (const c of row.choices ?? []) assert.equal(typeof c, "string");
    }
  }
});
