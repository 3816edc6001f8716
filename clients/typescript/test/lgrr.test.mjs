// Longitudinal GRR (`lgrr`) beyond the conformance vectors: any value or params dict gives a report or Python's
// error type, the memoized permanent response and memo key, the law of one device's reports and of many devices'
// (20,000 each, within 4 standard errors), the leakage bound the per-report charge guarantees, and Python's refusals
// for parameters the vectors do not reach.
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertRefusal, refusal } from "../test-support/refusal.mjs";

import { fromDict } from "../dist/params/base.js";
import { LGRRParams, lgrr, lgrrLeakage } from "../dist/protocols/lgrr.js";

import { N, bernoulliWithin, fuzzDomainValues, fuzzDomainParams, refuses } from "../test-support/domain.mjs";
import { memoChecks, seeded, secretOf, withSecret } from "../test-support/memo.mjs";

fuzzDomainValues(withSecret(lgrr), LGRRParams, [
  { epsilon_perm: 3, epsilon: 1, domain_size: 4 },
  { epsilon_perm: 4, epsilon: 2, domain_size: 3, labels: ["l0", "é", "\ud83d\ude00"] },
  { epsilon_perm: 2, epsilon: 0.5, domain_size: 200 },
], 61);

fuzzDomainParams(withSecret(lgrr), LGRRParams, { epsilon_perm: 7 }, 62);

memoChecks(lgrr, LGRRParams, { epsilon_perm: 3, epsilon: 1, domain_size: 4, labels: ["n", "e", "s", "w"] },
  [["n", 0], [1, 1], ["w", 3]], (enc, i) => enc.permanentResponse(i));

test("lgrr: one device's reports keep its permanent response w.p. p2, else a uniform other value", () => {
  const params = fromDict(LGRRParams, { epsilon_perm: 3, epsilon: 1, domain_size: 4 });
  const encoder = lgrr.makeEncoder(params, { secret: secretOf(7), rng: seeded("lgrr-one") });
  const m = encoder.permanentResponse(2);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < N; i++) counts[encoder.encode(2).payload[0][1]]++;
  const p2 = params.instantaneous.p;
  bernoulliWithin(counts[m], N, p2, "kept");
  for (let y = 0; y < 4; y++) if (y !== m) bernoulliWithin(counts[y], N, (1 - p2) / 3, `other ${y}`);
});

test("lgrr: over devices, a report is the value w.p. p* = p1·p2 + (1 − p1)·q2 (the permanent one w.p. p1)", () => {
  const params = fromDict(LGRRParams, { epsilon_perm: 2, epsilon: 1, domain_size: 5 });
  const rng = seeded("lgrr-devices");
  let kept = 0, permKept = 0;
  for (let i = 0; i < N; i++) {
    const encoder = lgrr.makeEncoder(params, { secret: secretOf(i, "lgrr"), rng });
    permKept += encoder.permanentResponse(3) === 3 ? 1 : 0;
    kept += encoder.encode(3).payload[0][1] === 3 ? 1 : 0;
  }
  bernoulliWithin(permKept, N, params.permanent.p, "permanent");
  bernoulliWithin(kept, N, params.pStar, "report");
  assert.ok(Math.abs(Math.log(params.pStar * 4 / (1 - params.pStar)) - params.privacyCost.epsilon) < 1e-12);
});

test("lgrr: the per-report charge c bounds the leakage of t reports, min(t·c, cap) >= L(t), up to the cap", () => {
  for (const d of [
    { epsilon_perm: 2, epsilon: 0.5, domain_size: 3 },
    { epsilon_perm: 4, epsilon: 1, domain_size: 10 },
    { epsilon_perm: 3, epsilon: 0.3, domain_size: 2 },
    { epsilon_perm: 1, epsilon: 0.9, domain_size: 1000 },
  ]) {
    const params = fromDict(LGRRParams, d);
    const c = params.reportCharge.epsilon, cap = params.memoCap.epsilon;
    assert.ok(c >= params.privacyCost.epsilon && c <= cap, JSON.stringify(d));
    assert.ok(Math.abs(params.leakage(1) - params.privacyCost.epsilon) < 1e-9, "L(1) is one report's ε");
    for (let t = 1; t <= 24; t++) {
      const l = params.leakage(t);
      assert.ok(Math.min(t * c, cap) >= l * (1 - 1e-12), `${JSON.stringify(d)} t=${t}: ${l} > min(${t}·${c}, ${cap})`);
    }
  }
  // k = 2: the other values hold no reports
  assert.equal(lgrrLeakage(0.75, 0.75, 2, 1), lgrrLeakage(0.75, 0.75, 2, 1));
  assert.ok(lgrrLeakage(0.75, 0.75, 2, 3) > lgrrLeakage(0.75, 0.75, 2, 1));
});

test("lgrr: Python's refusals for parameters the vectors do not reach", () => {
  refuses(LGRRParams, { epsilon_perm: 2, epsilon: 1, domain_size: 2 ** 32 }, "ValueError", "param_limit", { limit: "aggregate_cells", got: 4294967296, max: 268435456 });
  refuses(LGRRParams, { epsilon_perm: 1e-300, epsilon: 1e-301, domain_size: 3 }, "ValueError", "param_relation", { params: ["epsilon_perm", "domain_size"], rule: "epsilon_too_small" });
  refuses(LGRRParams, { epsilon_perm: 2, epsilon: 1e-300, domain_size: 3 }, "ValueError", "param_relation", { params: ["epsilon", "epsilon_perm", "domain_size"], rule: "instantaneous_realizable" });
  refuses(LGRRParams, { epsilon_perm: 1, epsilon: 0.9999999999999999, domain_size: 10 }, "ValueError", "param_relation", { params: ["epsilon", "epsilon_perm", "domain_size"], rule: "epsilon<realized_epsilon_perm" });
  refuses(LGRRParams, { epsilon_perm: 2, epsilon: 1.9999999999999998, domain_size: 3 }, "ValueError", "param_relation", { params: ["epsilon", "epsilon_perm", "domain_size"], rule: "instantaneous_realizable" });
  assert.throws(() => fromDict(LGRRParams, { epsilon_perm: 2, epsilon: 1, domain_size: 3 }).leakage(0),
    refusal("ValueError", "param_range", { param: "t", got: 0, min: 1 }));
});
