// Longitudinal unary encoding (`loue`) beyond the conformance vectors: any value or params dict gives a report or
// Python's error type, the memoized permanent bits and memo key, the law of one device's reports (flips of its
// permanent bits) and of many devices' (p*, q*), within 4 standard errors, the leakage bound of the per-report
// charge, and Python's refusals for parameters the vectors do not reach.
import { test } from "node:test";
import assert from "node:assert/strict";

import { fromDict } from "../dist/params/base.js";
import { LOUEParams, loue, loueLeakage } from "../dist/protocols/loue.js";
import { unaryEpsilon } from "../dist/protocols/unary.js";

import { N, bernoulliWithin, fuzzDomainValues, fuzzDomainParams, refuses } from "../test-support/domain.mjs";
import { memoChecks, seeded, secretOf, withSecret } from "../test-support/memo.mjs";

fuzzDomainValues(withSecret(loue), LOUEParams, [
  { epsilon_perm: 3, epsilon: 1, domain_size: 4 },
  { epsilon_perm: 2, epsilon: 1, domain_size: 3, labels: ["l0", "é", "\ud83d\ude00"], permanent: "sue" },
  { epsilon_perm: 2, epsilon: 0.5, domain_size: 200 },
], 71);

fuzzDomainParams(withSecret(loue), LOUEParams, { epsilon_perm: 7 }, 72);

memoChecks(loue, LOUEParams, { epsilon_perm: 3, epsilon: 1, domain_size: 4, labels: ["n", "e", "s", "w"] },
  [["n", 0], [1, 1], ["w", 3]], (enc, i) => enc.permanentResponse(i));

const popcount = (x) => x.toString(2).split("1").length - 1;

for (const permanent of ["oue", "sue"]) {
  test(`loue (${permanent}): one device's report is its permanent bits, each flipped w.p. flip`, () => {
    const params = fromDict(LOUEParams, { epsilon_perm: 2, epsilon: 0.5, domain_size: 6, permanent });
    const encoder = loue.makeEncoder(params, { secret: secretOf(3), rng: seeded(`loue-one-${permanent}`) });
    const perm = encoder.permanentResponse(4);
    let flips = 0;
    for (let i = 0; i < N; i++) {
      const bits = encoder.encode(4).payload[0][1];
      const value = BigInt("0b" + [...bits].reverse().join(""));
      flips += popcount(value ^ perm);
    }
    bernoulliWithin(flips, 6 * N, params.flip, "flipped bits");
  });

  test(`loue (${permanent}): over devices, the value's bit is 1 w.p. p*, another bit w.p. q*`, () => {
    const params = fromDict(LOUEParams, { epsilon_perm: 3, epsilon: 1, domain_size: 5, permanent });
    const rng = seeded(`loue-devices-${permanent}`);
    let own = 0, others = 0;
    for (let i = 0; i < N; i++) {
      const encoder = loue.makeEncoder(params, { secret: secretOf(i, "loue"), rng });
      const bits = encoder.encode(2).payload[0][1];
      for (let b = 0; b < 5; b++) {
        if (b === 2) own += bits[b] === "1" ? 1 : 0;
        else others += bits[b] === "1" ? 1 : 0;
      }
    }
    bernoulliWithin(own, N, params.p, "own bit");
    bernoulliWithin(others, 4 * N, params.q, "other bits");
    const p1 = params.perm.p, q1 = params.perm.q, f = params.flip;
    assert.ok(Math.abs(params.p - (p1 * (1 - f) + (1 - p1) * f)) < 1e-15);
    assert.ok(Math.abs(params.q - (q1 * (1 - f) + (1 - q1) * f)) < 1e-15);
    assert.ok(Math.abs(unaryEpsilon(params.p, params.q) - params.effectiveEpsilon) < 1e-12);
  });
}

test("loue: the per-report charge c bounds the leakage of t reports, min(t·c, cap) >= L(t), up to the cap", () => {
  for (const d of [
    { epsilon_perm: 2, epsilon: 0.5, domain_size: 3 },
    { epsilon_perm: 1, epsilon: 0.9, domain_size: 3, permanent: "sue" },
    { epsilon_perm: 8, epsilon: 0.2, domain_size: 10 },
  ]) {
    const params = fromDict(LOUEParams, d);
    const c = params.reportCharge.epsilon, cap = params.memoCap.epsilon;
    assert.ok(c >= params.privacyCost.epsilon && c <= cap, JSON.stringify(d));
    assert.ok(Math.abs(params.leakage(1) - params.effectiveEpsilon) < 1e-9, "L(1) is one report's ε");
    for (let t = 1; t <= 64; t++) {
      const l = params.leakage(t);
      assert.ok(Math.min(t * c, cap) >= l * (1 - 1e-12), `${JSON.stringify(d)} t=${t}: ${l} > min(${t}·${c}, ${cap})`);
      assert.ok(l <= cap * (1 + 1e-12), "never above the permanent response's ε");
    }
  }
  assert.equal(loueLeakage(0.5, 0.25, 0.25, 1), loueLeakage(0.5, 0.25, 0.25, 1));
});

test("loue: Python's refusals for parameters the vectors do not reach", () => {
  refuses(LOUEParams, { epsilon_perm: 2, epsilon: 1, domain_size: 3, permanent: "grr" }, "ValueError", "param_choice", { param: "permanent", choices: ["oue", "sue"], got: "grr" });
  refuses(LOUEParams, { epsilon_perm: 2, epsilon: 1, domain_size: 3, permanent: ["oue"] }, "ValueError", "param_choice", { param: "permanent", choices: ["oue", "sue"], got: ["oue"] });
  refuses(LOUEParams, { epsilon_perm: 1000, epsilon: 1, domain_size: 3 }, "ValueError", "param_relation", { params: ["epsilon_perm"], rule: "epsilon_too_large" });
  refuses(LOUEParams, { epsilon_perm: 1e-20, epsilon: 1e-21, domain_size: 3, permanent: "sue" }, "ValueError", "param_relation", { params: ["epsilon_perm"], rule: "epsilon_too_small" });
  refuses(LOUEParams, { epsilon_perm: 2, epsilon: 1, domain_size: 2 ** 23 }, "ValueError", "param_limit", { limit: "line_bytes", got: 8388790, max: 4194304 });
});
