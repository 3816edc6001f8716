// Projective Geometry Response (`pgr`) and its hybrid (`hpg`) beyond the conformance vectors: the numbering of the
// points (a round trip over whole spaces), the hyperplane bijection (every r a distinct point orthogonal to v), the
// default layouts (and their variances) and what the params make of a few dicts against the Python client's answers
// (../../conformance/layouts/projective.json, written by conformance/layout_vectors.py; the Kotlin and Rust clients
// check the same file), the refusals when the search finds no layout (the least excess, `two_blocks`) and when no layout's γ is inside (0, 1) (`epsilon_too_large`,
// `epsilon_too_small`) as Python's, bad inputs of every JSON type
// (a seeded generator), and the report law over 20,000 reports of a keyed stream (within 4 SE).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { fromDict } from "../dist/params/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { utf8Encode } from "../dist/bytes.js";
import { exactInt } from "../dist/errors.js";
import {
  MAX_FIELD, hyperplanePoint, isPrime, pointIndex, pointVector, points, primesUpTo,
} from "../dist/protocols/projective-space.js";
import {
  HPGParams, PGRParams, bestHpgLayout, bestPgrField, dimension, fieldCandidates, hpg, hpgLayouts, leastExcess,
  ownPoint, pgr, pgrLayouts, rareVariance,
} from "../dist/protocols/projective-geometry.js";

import { N, fuzzDomainValues, fuzzDomainParams, refuses, bernoulliWithin } from "../test-support/domain.mjs";

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "layouts", "projective.json");

/** The fixture, each integer token of 16 digits or more (a refusal's `got` may pass 2^53, which `JSON.parse` would
 * round) read as `{"int": "digits"}` first: no string of the file holds one after a `:`, `,` or `[`. */
const PYTHON = JSON.parse(readFileSync(FIXTURE, "utf8").replace(/(?<=[:,[]\s*)-?\d{16,}(?=\s*[,\]}])/g, (m) => `{"int":"${m}"}`));

/** An int of the fixture as the client holds it (a `{"int": "digits"}` exactly: a bigint beyond 2^53). */
const plain = (v) => (v !== null && typeof v === "object" && "int" in v ? exactInt(BigInt(v.int)) : v);

/** A variance of the fixture: `null` is an infinite one (no γ strictly inside (0, 1)). */
const variance = (v) => (v === null ? Infinity : v);

/** The spaces walked whole: PG(t−1, q). */
const SPACES = [[2, 2], [2, 3], [2, 4], [2, 6], [2, 8], [3, 2], [3, 3], [3, 4], [5, 2], [5, 3], [7, 3], [13, 2], [11, 3]];

const dot = (u, v, q) => u.reduce((acc, x, i) => (acc + x * v[i]) % q, 0);
const isCanonical = (v, q) => v.every((c) => Number.isInteger(c) && c >= 0 && c < q) && v.find((c) => c !== 0) === 1;

test("points: P_m = (q^m − 1)/(q − 1); the primes are the sieve's, up to 65521", () => {
  assert.deepEqual([points(2, 0), points(2, 1), points(2, 3), points(3, 3), points(5, 3), points(65521, 2)], [0, 1, 7, 13, 31, 65522]);
  assert.equal(points(2, 28), 2 ** 28 - 1);
  const primes = primesUpTo(MAX_FIELD);
  assert.equal(primes.length, 6542);
  assert.equal(primes.at(-1), 65521);
  assert.deepEqual(primesUpTo(20), [2, 3, 5, 7, 11, 13, 17, 19]);
  assert.deepEqual(primesUpTo(1), []);
  for (let q = 0; q < 2000; q++) assert.equal(isPrime(q), primes.includes(q), String(q));
  assert.ok(isPrime(65521) && isPrime(65519) && !isPrime(65520) && !isPrime(65523));
  // ε = 1: q ≤ 2(e − 1) + 6 = 9.43…; every prime up to 65521 from ε ≈ 10.4 (2(e^ε − 1) + 6 ≥ 65521), and past ε = 700
  // too (Python takes min(ε, 700): the bound stays finite)
  assert.deepEqual(fieldCandidates(1), [2, 3, 5, 7]);
  assert.deepEqual(fieldCandidates(1e-9), [2, 3, 5]);
  assert.deepEqual(fieldCandidates(10.3), primesUpTo(Math.floor(2 * Math.expm1(10.3) + 6)));
  assert.ok(fieldCandidates(10.3).length < 6542);
  for (const e of [10.4, 19.9, 20, 25, 40, 700, 701, 1e308]) assert.equal(fieldCandidates(e).length, 6542, `ε=${e}`);
});

test("the numbering of the points: index ↔ canonical vector, a round trip over whole spaces, Python's order", () => {
  for (const [q, t] of SPACES) {
    const seen = new Set();
    for (let i = 0; i < points(q, t); i++) {
      const v = pointVector(i, q, t);
      assert.equal(v.length, t);
      assert.ok(isCanonical(v, q), `q=${q} t=${t} ${i}: ${v}`);
      assert.equal(pointIndex(v, q), i, `q=${q} t=${t} ${v}`);
      seen.add(v.join(","));
    }
    assert.equal(seen.size, points(q, t), `q=${q} t=${t}: distinct`);
    // index 0 is (0, …, 0, 1); 1 … q are (0, …, 0, 1, *); the last is (1, q−1, …, q−1)
    assert.deepEqual(pointVector(0, q, t), [...new Array(t - 1).fill(0), 1]);
    for (let x = 0; x < q; x++) assert.deepEqual(pointVector(1 + x, q, t), [...new Array(t - 2).fill(0), 1, x]);
    assert.deepEqual(pointVector(points(q, t) - 1, q, t), [1, ...new Array(t - 1).fill(q - 1)]);
  }
  for (const [q, t] of [[65521, 2], [4093, 3], [2, 28], [3, 17]]) {
    for (const i of [0, 1, q, q + 1, points(q, t - 1), points(q, t) - 1, Math.floor(points(q, t) / 3)].filter((i) => i < points(q, t))) {
      const v = pointVector(i, q, t);
      assert.ok(isCanonical(v, q));
      assert.equal(pointIndex(v, q), i, `q=${q} t=${t} ${i}`);
    }
  }
});

test("the hyperplane bijection: every r in [0, P_{t−1}) maps to a distinct point orthogonal to v", () => {
  for (const [q, t] of SPACES) {
    const s = points(q, t - 1);
    for (let x = 0; x < points(q, t); x++) {
      const v = pointVector(x, q, t);
      const seen = new Set();
      for (let r = 0; r < s; r++) {
        const u = hyperplanePoint(v, r, q);
        assert.ok(isCanonical(u, q), `q=${q} t=${t} v=${v} r=${r}: ${u}`);
        assert.equal(dot(u, v, q), 0, `q=${q} t=${t} v=${v} r=${r}: ${u}`);
        seen.add(pointIndex(u, q));
      }
      assert.equal(seen.size, s, `q=${q} t=${t} v=${v}: ${seen.size} distinct points of ${s}`);
    }
  }
  // large fields and dimensions: Python's own points (`hyperplane_point`, `point_index`)
  assert.ok(PYTHON.hyperplanes.length >= 100);
  for (const [q, t, point, r, index] of PYTHON.hyperplanes) {
    const v = pointVector(point, q, t);
    const u = hyperplanePoint(v, r, q);
    assert.equal(dot(u, v, q), 0);
    assert.equal(pointIndex(u, q), index, `q=${q} t=${t} point=${point} r=${r}`);
  }
});

test("hpg's values: value x is point x mod b of block ⌊x/b⌋, its own set in its own block", () => {
  const params = fromDict(HPGParams, { epsilon: 3, domain_size: 20, q: 3, blocks: 2 });
  const { blockPoints: b, setSize: s, q, dimension: t } = params;
  assert.deepEqual([b, s, params.order, t], [13, 4, 26, 3]);
  for (let x = 0; x < 20; x++) {
    const own = new Set(Array.from({ length: s }, (_, r) => ownPoint(params, x, r)));
    assert.equal(own.size, s);
    for (const j of own) {
      assert.equal(Math.floor(j / b), Math.floor(x / b), `x=${x}: j=${j} in its block`);
      assert.equal(dot(pointVector(j % b, q, t), pointVector(x % b, q, t), q), 0);
    }
  }
});

test("default layouts: bestPgrField and bestHpgLayout choose Python's q and blocks on a grid of (ε, d)", () => {
  assert.ok(PYTHON.pgr.length > 1500 && PYTHON.hpg.length > 2000);
  for (const e of [20, 25, 40]) assert.ok(PYTHON.pgr.some((row) => row[0] === e && row[2] !== null), `ε=${e} in the grid`);
  for (const [e, d, q, v] of PYTHON.pgr) {
    assert.equal(bestPgrField(e, d), q, `pgr ε=${e} d=${d}`);
    if (q !== null) assert.equal(rareVariance(e, q, dimension(q, 1, d), 1, d), variance(v), `pgr ε=${e} d=${d} q=${q}`);
  }
  // q and blocks as given to the search (null: searched for)
  for (const [e, d, q, blocks, layout, v] of PYTHON.hpg) {
    const context = `hpg ε=${e} d=${d} q=${q} blocks=${blocks}`;
    assert.deepEqual(bestHpgLayout(e, d, q, blocks), layout, context);
    if (layout !== null) {
      const [lq, h] = layout;
      assert.equal(rareVariance(e, lq, dimension(lq, h, d), h, d), variance(v), context);
    }
  }
});

test("rareVariance: the same doubles as Python's rare_variance", () => {
  assert.ok(PYTHON.variances.length > 300);
  for (const [e, q, t, blocks, d, v] of PYTHON.variances) {
    assert.equal(rareVariance(e, q, t, blocks, d), variance(v), `ε=${e} q=${q} t=${t} h=${blocks} d=${d}`);
  }
});

test("params: Python's resolved layout, γ and exact ε*, or Python's refusal (the checks in Python's order)", () => {
  for (const item of PYTHON.params) {
    const Params = item.protocol === "pgr" ? PGRParams : HPGParams;
    const context = `${item.protocol} ${JSON.stringify(item.given)}`;
    if (item.error) {
      const fields = Object.fromEntries(Object.entries(item.error.fields).map(([k, v]) => [k, plain(v)]));
      refuses(Params, item.given, item.error.type, item.error.code, fields);
      continue;
    }
    const p = fromDict(Params, item.given);
    assert.deepEqual(p.toDict(), item.resolved, context);
    assert.equal(p.fingerprint, item.fingerprint, context);
    assert.equal(p.fingerprint, fromDict(Params, item.resolved).fingerprint, context);
    assert.deepEqual([p.dimension, p.order, p.setSize], [item.t, item.order, item.set_size], context);
    assert.equal(p.gamma, item.gamma, context);
    assert.equal(p.effectiveEpsilon, item.effective_epsilon, context);
    assert.equal(p.privacyCost.epsilon, item.cost, context);
  }
  // among them, ε refused for what it is where the search had to choose q (every candidate's γ 0 or 1)
  const chosen = PYTHON.params.filter((item) => item.given.q == null && item.error?.fields.rule?.startsWith("epsilon_too_"));
  assert.deepEqual([...new Set(chosen.map((item) => `${item.protocol} ${item.error.fields.rule}`))].sort(),
    ["hpg epsilon_too_large", "hpg epsilon_too_small", "pgr epsilon_too_large", "pgr epsilon_too_small"]);
});

test("no layout found: Python's refusal of every search of the grid that finds none", () => {
  const none = new Set([
    ...PYTHON.pgr.filter((row) => row[2] === null).map(([e, d]) => JSON.stringify(["pgr", e, d, null, null])),
    ...PYTHON.hpg.filter((row) => row[4] === null).map(([e, d, q, blocks]) => JSON.stringify(["hpg", e, d, q, blocks])),
  ]);
  const seen = new Set();
  for (const item of PYTHON.params) {
    const { epsilon, domain_size: d, q = null, blocks = null } = item.given;
    if (!none.delete(JSON.stringify([item.protocol, epsilon, d, q, blocks]))) continue;
    const Params = item.protocol === "pgr" ? PGRParams : HPGParams;
    const { fields } = item.error;
    refuses(Params, item.given, item.error.type, item.error.code, Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, plain(v)])));
    seen.add(`${item.protocol} ${fields.limit ?? fields.rule}`);
  }
  assert.equal(none.size, 0, `searches without Python's answer: ${[...none].slice(0, 5)}`);
  assert.deepEqual([...seen].sort(), ["hpg aggregate_cells", "hpg decode_work", "hpg two_blocks", "pgr aggregate_cells", "pgr decode_work"]);
});

test("no layout found: the least excess of the candidates (aggregate_cells, else decode_work), or two_blocks", () => {
  const cells = (got) => ({ limit: "aggregate_cells", got, max: 2 ** 28 });
  const work = (got) => ({ limit: "decode_work", got, max: 2 ** 32 });
  // every q's K = P_t over 2^28: the fewest, q = 5 (P_13 = 305,175,781)
  refuses(PGRParams, { epsilon: 1, domain_size: 2 ** 28 }, "ValueError", "param_limit", cells(305175781));
  assert.deepEqual(leastExcess(2 ** 28, pgrLayouts(1)), ["aggregate_cells", 305175781, 2 ** 28]);
  // two blocks of 2^28 at the least
  refuses(HPGParams, { epsilon: 1, domain_size: 2 ** 29 }, "ValueError", "param_limit", cells(2 ** 29));
  // some K within 2^28, but every K·q·t over 2^32: the least
  refuses(PGRParams, { epsilon: 8, domain_size: 2 ** 26 }, "ValueError", "param_limit", work(7069666240));
  // past ε = 700 too, when no candidate is feasible
  refuses(PGRParams, { epsilon: 701, domain_size: 2 ** 26 }, "ValueError", "param_limit", work(7069666240));
  assert.equal(bestHpgLayout(701, 2 ** 32, null, 2), null);
  // hpg's q given, and P_2 = q + 1 ≥ d: one block at every t, no candidate at all
  for (const [d, q] of [[5, 5], [20, 19], [20, 65521], [4, 3]]) {
    assert.deepEqual(hpgLayouts(1, d, q), []);
    refuses(HPGParams, { epsilon: 1, domain_size: d, q }, "ValueError", "param_relation", { params: ["domain_size", "q"], rule: "two_blocks" });
  }
  assert.deepEqual(hpgLayouts(1, 20, 17), [[17, 2]]);
  assert.equal(fromDict(HPGParams, { epsilon: 1, domain_size: 20, q: 17 }).blocks, 2);
  // the field's checks come first: q not prime, or out of range
  refuses(HPGParams, { epsilon: 1, domain_size: 20, q: 20 }, "ValueError", "param_relation", { params: ["q"], rule: "prime_field" });
  refuses(HPGParams, { epsilon: 1, domain_size: 20, q: 65537 }, "ValueError", "param_range", { param: "q", got: 65537, min: 2, max: 65521 });
  // the candidates: hpg's h ≥ 2 in increasing q then t, or the given blocks at every candidate q
  assert.deepEqual(hpgLayouts(1, 20), [[2, 7], [2, 3], [2, 2], [3, 5], [3, 2], [5, 4], [7, 3]]);
  assert.deepEqual(hpgLayouts(1, 20, null, 4), [[2, 4], [3, 4], [5, 4], [7, 4]]);
  assert.deepEqual(pgrLayouts(1), [[2, 1], [3, 1], [5, 1], [7, 1]]);
});

test("γ 0 or 1 at every feasible candidate: the first feasible one, then ε refused for what it is, as Python's", () => {
  const rule = (r) => ({ params: ["epsilon", "domain_size", "q"], rule: r });
  // past ε = 700 γ is 0, at ε = 1e-300 it is 1: no candidate has a finite variance
  for (const e of [701, 1e-300, 1e308]) {
    assert.equal(bestPgrField(e, 1000), 2, `ε=${e}`);
    assert.deepEqual(bestHpgLayout(e, 20), [2, 7], `ε=${e}`);
    assert.deepEqual(bestHpgLayout(e, 20, 3), [3, 5], `ε=${e}`);
    assert.deepEqual(bestHpgLayout(e, 10 ** 6, null, 50), [2, 50], `ε=${e}`);
    const r = rule(e > 1 ? "epsilon_too_large" : "epsilon_too_small");
    refuses(PGRParams, { epsilon: e, domain_size: 1000 }, "ValueError", "param_relation", r);
    refuses(HPGParams, { epsilon: e, domain_size: 20 }, "ValueError", "param_relation", r);
    refuses(HPGParams, { epsilon: e, domain_size: 10 ** 6, q: 7 }, "ValueError", "param_relation", r);
    refuses(HPGParams, { epsilon: e, domain_size: 10 ** 6, blocks: 50 }, "ValueError", "param_relation", r);
  }
  // the first feasible one, not the first candidate: three blocks of P_25 = 2^25 − 1 points over F_2 take
  // 5.03e9 > 2^32 decode steps, three of P_16 = 21,523,360 over F_3 take 3.10e9
  const d = 59110953;
  for (const e of [701, 1e-300]) {
    assert.deepEqual(hpgLayouts(e, d, null, 3).slice(0, 2), [[2, 3], [3, 3]]);
    assert.deepEqual(bestHpgLayout(e, d, null, 3), [3, 3]);
    refuses(HPGParams, { epsilon: e, domain_size: d, blocks: 3 }, "ValueError", "param_relation",
      rule(e > 1 ? "epsilon_too_large" : "epsilon_too_small"));
  }
  refuses(HPGParams, { epsilon: 701, domain_size: d, q: 2, blocks: 3 }, "ValueError", "param_limit",
    { limit: "decode_work", got: 3 * (2 ** 25 - 1) * 2 * 25, max: 2 ** 32 });
});

test("past ε = 20 the search takes every prime, as Python's (its ε taken at most 700)", () => {
  for (const [e, d, q] of [[20, 2 ** 20, 1123], [25, 1000, 1009], [40, 1000, 1009]]) {
    assert.equal(bestPgrField(e, d), q);
    assert.equal(fromDict(PGRParams, { epsilon: e, domain_size: d }).q, q);
  }
  assert.deepEqual(bestHpgLayout(40, 10 ** 6), [2, 333334]);
});

test("pgr, hpg: Python's refusals for q, blocks and ε the client cannot realize", () => {
  const tooLarge = { params: ["epsilon", "domain_size", "q"], rule: "epsilon_too_large" };
  refuses(PGRParams, { epsilon: 1, domain_size: 13, q: 9 }, "ValueError", "param_relation", { params: ["q"], rule: "prime_field" });
  refuses(PGRParams, { epsilon: 1, domain_size: 13, q: 1 }, "ValueError", "param_range", { param: "q", got: 1, min: 2, max: 65521 });
  refuses(PGRParams, { epsilon: 1, domain_size: 13, q: 2.5 }, "TypeError", "param_type", { param: "q", expected: "int", got: "float" });
  refuses(PGRParams, { epsilon: 800, domain_size: 13, q: 3 }, "ValueError", "param_relation", tooLarge);
  refuses(PGRParams, { epsilon: -1, domain_size: 13, q: 9 }, "ValueError", "param_range", { param: "epsilon", got: -1, min: 0, min_exclusive: true, finite: true });
  refuses(PGRParams, { epsilon: 1, domain_size: 1, q: 9 }, "ValueError", "param_range", { param: "domain_size", got: 1, min: 2, max: 4294967296 });
  refuses(HPGParams, { epsilon: 1, domain_size: 3 }, "ValueError", "param_range", { param: "domain_size", got: 3, min: 4, max: 4294967296 });
  refuses(HPGParams, { epsilon: 1, domain_size: 20, blocks: 1 }, "ValueError", "param_range", { param: "blocks", got: 1, min: 2, max: 20 });
  refuses(HPGParams, { epsilon: 1, domain_size: 20, q: 4, blocks: 1 }, "ValueError", "param_range", { param: "blocks", got: 1, min: 2, max: 20 });
  refuses(HPGParams, { epsilon: 1, domain_size: 20, q: 4, blocks: 2 }, "ValueError", "param_relation", { params: ["q"], rule: "prime_field" });
  refuses(HPGParams, { epsilon: 800, domain_size: 20, q: 3, blocks: 2 }, "ValueError", "param_relation", tooLarge);
  refuses(HPGParams, { epsilon: 1, domain_size: 20, q: "3" }, "TypeError", "param_type", { param: "q", expected: "int", got: "string" });
  // undefined is left out (null)
  assert.equal(fromDict(PGRParams, { epsilon: 1, domain_size: 13, q: undefined }).q, 3);
  assert.deepEqual(new HPGParams({ epsilon: 1, domain_size: 5, q: 2 }).toDict(), { epsilon: 1, domain_size: 5, q: 2, blocks: 2, labels: null });
});

fuzzDomainValues(pgr, PGRParams, [
  { epsilon: 1, domain_size: 13, q: 3 },
  { epsilon: 3, domain_size: 6, labels: ["l0", "é", "\ud83d\ude00", "a", "b", "c"] },
  { epsilon: 5, domain_size: 300 },
], 93, (report, params) => assert.ok(report.payload[0][1] < params.order));

fuzzDomainValues(hpg, HPGParams, [
  { epsilon: 1, domain_size: 5, q: 2, blocks: 2 },
  { epsilon: 3, domain_size: 6, labels: ["l0", "é", "\ud83d\ude00", "a", "b", "c"] },
  { epsilon: 5, domain_size: 300 },
], 94, (report, params) => assert.ok(report.payload[0][1] < params.order));

fuzzDomainParams(pgr, PGRParams, {}, 95, (report, params) => assert.ok(report.payload[0][1] < params.order));
fuzzDomainParams(hpg, HPGParams, {}, 96, (report, params) => assert.ok(report.payload[0][1] < params.order));

for (const [entry, Params, dict, x] of [
  [pgr, PGRParams, { epsilon: 1, domain_size: 13, q: 3 }, 5],
  [pgr, PGRParams, { epsilon: 2, domain_size: 20 }, 19],
  [hpg, HPGParams, { epsilon: 3, domain_size: 20, q: 3, blocks: 2 }, 17],
  [hpg, HPGParams, { epsilon: 2, domain_size: 40 }, 33],
]) {
  test(`${entry.name} ${JSON.stringify(dict)}: 20,000 reports of ${x}, Pr[j] = γ/K + (1 − γ)/s on its own set, γ/K elsewhere`, () => {
    const params = fromDict(Params, dict);
    const encoder = entry.makeEncoder(params, { rng: new KeyedRandomSource(utf8Encode(entry.name), utf8Encode(JSON.stringify(dict))) });
    const { order: K, setSize: s, gamma: g, blockPoints: b, q, dimension: t } = params;
    const counts = new Array(K).fill(0);
    for (let i = 0; i < N; i++) counts[encoder.encode(x).payload[0][1]]++;
    const v = pointVector(x % b, q, t);
    for (let j = 0; j < K; j++) {
      const own = Math.floor(j / b) === Math.floor(x / b) && dot(pointVector(j % b, q, t), v, q) === 0;
      bernoulliWithin(counts[j], N, g / K + (own ? (1 - g) / s : 0), `j=${j}`);
    }
  });
}
