// Python's text forms canonical JSON needs: repr(float), canonical JSON and fingerprints, against tables
// written by Python (test/data/make_float_repr.py) and the conformance vectors (conformance/vectors/primitives.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { createHash } from "node:crypto";

import {
  PyFloat, canonicalJson, compareCodePoints, fingerprint, pyFloatRepr, pyJsonString, sha256Hex16,
} from "../dist/canonical.js";
import { LdpTypeError, LdpValueError } from "../dist/errors.js";
import { bitsString, bitsStringOfWords, reportJson } from "../dist/encoders/base.js";

const here = new URL(".", import.meta.url);
const load = (rel) => JSON.parse(readFileSync(new URL(rel, here), "utf8"));
const PRIMITIVES = new URL("../../../conformance/vectors/primitives.json", here);

function fromBits(hex) {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt("0x" + hex));
  return view.getFloat64(0);
}

test("pyFloatRepr matches Python on 8,000 doubles", () => {
  const table = load("data/float_repr.json");
  assert.equal(table.rows.length, 8000);
  let checked = 0;
  for (const [bits, repr] of table.rows) {
    const x = fromBits(bits);
    assert.equal(pyFloatRepr(x), repr, `repr of ${bits}`);
    checked++;
  }
  assert.equal(checked, 8000);
});

test("pyFloatRepr: the layout rule's examples", () => {
  const cases = [
    [1e-5, "1e-05"], [1.5e-7, "1.5e-07"], [1e16, "1e+16"], [1.2345678901234568e17, "1.2345678901234568e+17"],
    [1, "1.0"], [100, "100.0"], [0.0001, "0.0001"], [123456789012345.6, "123456789012345.6"], [-0, "-0.0"],
    [0, "0.0"], [5e-324, "5e-324"], [1.7976931348623157e308, "1.7976931348623157e+308"], [1e22, "1e+22"],
    [9999999999999998, "9999999999999998.0"], [NaN, "nan"], [Infinity, "inf"], [-Infinity, "-inf"], [0.1, "0.1"],
  ];
  for (const [x, want] of cases) assert.equal(pyFloatRepr(x), want);
});

/** The typed tree of canonical.json back to a JS value: ints as numbers (bigints beyond 2^53), floats as PyFloat. */
function rebuild(t) {
  if (t === null || typeof t === "boolean" || typeof t === "string") return t;
  if (Array.isArray(t)) return t.map(rebuild);
  if ("int" in t) {
    const n = BigInt(t.int);
    return n >= -(2n ** 53n) + 1n && n <= 2n ** 53n - 1n ? Number(n) : n;
  }
  if ("float" in t) return new PyFloat(fromBits(t.float));
  const out = {};
  for (const [k, v] of t.dict) out[k] = rebuild(v);
  return out;
}

test("canonicalJson and sha256Hex16 match Python's json.dumps on random nested objects", () => {
  const { cases } = load("data/canonical.json");
  assert.ok(cases.length >= 500);
  for (const c of cases) {
    const text = canonicalJson(rebuild(c.typed));
    assert.equal(text, c.canonical);
    assert.equal(sha256Hex16(text), c.sha256_16);
  }
});

test("canonicalJson: escapes, key order by code point, ints and floats", () => {
  assert.equal(canonicalJson({ b: 1, a: [new PyFloat(1), 2, null, true, false] }), '{"a":[1.0,2,null,true,false],"b":1}');
  assert.equal(canonicalJson({ s: "\x00\"\\\u2028\u{1F600}\x7f\b\f\n\r\t/é" }),
               '{"s":"\\u0000\\"\\\\\\u2028\\ud83d\\ude00\\u007f\\b\\f\\n\\r\\t/\\u00e9"}');
  // code point order puts U+1F600 after U+FFFF; UTF-16 unit order would put it before
  assert.equal(canonicalJson({ "\u{1F600}": 1, "\uffff": 2, z: 3, A: 4 }), '{"A":4,"z":3,"\\uffff":2,"\\ud83d\\ude00":1}');
  assert.equal(canonicalJson({ n: [1e-5, 1e16, -0, 0.30000000000000004].map((x) => new PyFloat(x)) }),
               '{"n":[1e-05,1e+16,-0.0,0.30000000000000004]}');
  assert.equal(canonicalJson(-0), "0");
  assert.equal(canonicalJson(2n ** 70n), "1180591620717411303424");
  assert.equal(canonicalJson(Object.create(null)), "{}");
  assert.equal(canonicalJson("\ud800"), '"\\ud800"');
});

test("canonicalJson refuses what Python's json.dumps refuses", () => {
  for (const x of [NaN, Infinity, -Infinity]) assert.throws(() => canonicalJson({ x: new PyFloat(x) }), RangeError);
  assert.throws(() => canonicalJson(1.5), RangeError);
  assert.throws(() => canonicalJson(2 ** 53), RangeError);
  assert.throws(() => canonicalJson(new Uint8Array(1)), TypeError);
  assert.throws(() => canonicalJson({ a: undefined }), TypeError);
  assert.throws(() => canonicalJson(new Map()), TypeError);
  const loop = { a: [] };
  loop.a.push(loop);
  assert.throws(() => canonicalJson(loop), TypeError);
  // a shared (not circular) object is fine
  const shared = { x: 1 };
  assert.equal(canonicalJson([shared, shared]), '[{"x":1},{"x":1}]');
});

test("compareCodePoints is Python's str order", () => {
  const words = ["\u{1F600}", "\uffff", "\ue000", "z", "", "a", "ab", "\ud800", "\ud800x", "\u{10000}", "\udc00",
                 "\ud800\ue000", "\u{10FFFF}", "\u00e9"];
  const cps = (s) => {
    // code points as Python sees the same string: pairs joined, lone surrogates alone
    const out = [];
    for (const ch of s) out.push(ch.codePointAt(0));
    return out;
  };
  const ref = (a, b) => {
    const x = cps(a), y = cps(b);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
    return x.length - y.length;
  };
  for (const a of words) for (const b of words) assert.equal(Math.sign(compareCodePoints(a, b)), Math.sign(ref(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  // random strings over a surrogate-heavy alphabet
  const alphabet = ["a", "\ud800", "\udc00", "\udbff", "\udfff", "\ue000", "\uffff", "\u{10000}", "\u{1F600}"];
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  for (let t = 0; t < 5000; t++) {
    const mk = () => Array.from({ length: Math.floor(rnd() * 5) }, () => alphabet[Math.floor(rnd() * alphabet.length)]).join("");
    const a = mk(), b = mk();
    assert.equal(Math.sign(compareCodePoints(a, b)), Math.sign(ref(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
});

test("pyJsonString escapes every code unit outside space..~", () => {
  for (let c = 0; c < 0x10000; c++) {
    const s = String.fromCharCode(c);
    const out = pyJsonString(s);
    if (c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c) assert.equal(out, `"${s}"`);
    else assert.match(out, /^"\\(u[0-9a-f]{4}|[\\"nrtbf])"$/);
    if (c < 0xd800 || c > 0xdfff) assert.equal(JSON.parse(out), s);
  }
});

test("fingerprint: SHA-256 of the canonical {protocol, params}, as ldp.wire.fingerprint", () => {
  // /work/venv/bin/python -c "from ldp.wire import fingerprint; print(fingerprint('grr', {'epsilon': 1.0,
  //     'domain_size': 4, 'labels': None}))"
  assert.equal(fingerprint("grr", { epsilon: new PyFloat(1), domain_size: 4, labels: null }), "c96a633c99281e12");
  const text = '{"params":{"domain_size":4,"epsilon":1.0,"labels":null},"protocol":"grr"}';
  assert.equal(canonicalJson({ protocol: "grr", params: { epsilon: new PyFloat(1), domain_size: 4, labels: null } }), text);
  assert.equal(sha256Hex16(text), createHash("sha256").update(text).digest("hex").slice(0, 16));
});

test("conformance vectors: floats and py_repr (primitives.json)", { skip: !existsSync(PRIMITIVES) }, () => {
  const doc = JSON.parse(readFileSync(PRIMITIVES, "utf8"));
  for (const { bits, repr } of doc.floats) assert.equal(pyFloatRepr(fromBits(bits)), repr);
  // canonical_json cases whose numbers are all floats or all ints can be rebuilt from JSON (JSON.parse loses 1.0)
  const first = doc.texts.canonical_json.find((c) => c.value.n !== undefined);
  assert.equal(canonicalJson({ n: first.value.n.map((x) => new PyFloat(x)) }), first.canonical);
  const strings = doc.texts.canonical_json.filter((c) => c.value.s !== undefined);
  for (const c of strings) assert.equal(canonicalJson(c.value), c.canonical);
});

test("error classes: refusals carry code and fields; BudgetExceeded's fields and text", async () => {
  const { BudgetExceeded, LdpRefusal, ReplayError, UploadError, UploadProtocolError } = await import("../dist/errors.js");
  const range = new LdpValueError("param_range", { param: "epsilon", got: -1, min: 0, min_exclusive: true, finite: true });
  assert.equal(range.name, "LdpValueError");
  assert.ok(range instanceof LdpRefusal && range instanceof Error);
  assert.equal(range.code, "param_range");
  assert.deepEqual(range.fields, { param: "epsilon", got: -1, min: 0, min_exclusive: true, finite: true });
  assert.ok(Object.isFrozen(range.fields));
  assert.equal(range.message, "epsilon must be finite and > 0, got -1");
  assert.match(range.stack, /^LdpValueError: epsilon must be finite and > 0, got -1/);
  const type = new LdpTypeError("param_type", { param: "labels", expected: "labels", got: "null" }, "own text");
  assert.equal(type.name, "LdpTypeError");
  assert.equal(type.message, "own text");
  const tagged = type.withFields({ attribute: "a" });
  assert.ok(tagged instanceof LdpTypeError);
  assert.deepEqual(tagged.fields, { param: "labels", expected: "labels", got: "null", attribute: "a" });
  assert.equal(new LdpValueError("unknown_label", { got: "x" }).message, 'value "x" is not one of the declared labels');
  assert.ok(new UploadProtocolError("bad", { status: 200, reason: "r" }) instanceof UploadError);
  assert.equal(new ReplayError("x").name, "ReplayError");
  const c = (epsilon, delta = 0) => ({ epsilon, delta });
  const e1 = new BudgetExceeded("m", "window", c(0.5), c(1), c(1));
  assert.equal(e1.message, `privacy budget exceeded for metric "m" (window): spent ε=1, requested ε=0.5, cap ε=1`);
  assert.equal(e1.name, "BudgetExceeded");
  assert.equal(e1.metric, "m");
  assert.deepEqual(e1.cost, c(0.5));
  const e2 = new BudgetExceeded("*", "lifetime", c(0.1234567891, 1e-6), c(3.0000001, 2.5e-7), c(10, 1.23456e-5), 2);
  assert.equal(e2.message, "privacy budget exceeded for all metrics (lifetime) at charge 2 of a batch (nothing of the " +
               "batch was charged): spent ε=3, δ=2.5e-7, requested ε=0.123457, δ=0.000001, cap ε=10, δ=0.0000123");
  assert.equal(e2.metric, null);
  assert.equal(e2.index, 2);
  const e3 = new BudgetExceeded("it's", "window", c(1e-7), c(123456789), c(1e16));
  assert.equal(e3.message, `privacy budget exceeded for metric "it's" (window): spent ε=123457000, requested ε=1e-7, cap ε=10000000000000000`);
});

test("a report's JSON: uints as digits at any width, bits strings little-endian from bigints or words", () => {
  const report = (payload) => ({ protocol: "olh", params: "0123456789abcdef", payload });
  for (const n of [0, 7, 1023, 1024, 65535, 2 ** 31 - 1, 2 ** 31, 4294967295, 2 ** 53]) {
    assert.equal(reportJson(report([["seed", n], ["y", 3]])),
      `{"v":1,"protocol":"olh","params":"0123456789abcdef","payload":{"seed":${String(n)},"y":3}}`);
  }
  assert.equal(reportJson(report([["big", 2n ** 70n], ["bits", "0110"]])),
    '{"v":1,"protocol":"olh","params":"0123456789abcdef","payload":{"big":1180591620717411303424,"bits":"0110"}}');
  assert.equal(reportJson(report([])), '{"v":1,"protocol":"olh","params":"0123456789abcdef","payload":{}}');
  let seed = 0x9e3779b9n;
  for (const k of [0, 1, 5, 8, 31, 32, 33, 64, 100, 128, 300]) {
    seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    const value = (seed << 256n) | (seed << 64n) | seed | (1n << 400n); // bits above k are ignored
    let want = "";
    for (let i = 0; i < k; i++) want += (value >> BigInt(i)) & 1n;
    assert.equal(bitsString(value, k), want, `k = ${k}`);
    const words = Uint32Array.from({ length: Math.ceil(k / 32) }, (_, w) => Number((value >> BigInt(32 * w)) & 0xffffffffn));
    assert.equal(bitsStringOfWords(words, k), want, `words, k = ${k}`);
  }
});
