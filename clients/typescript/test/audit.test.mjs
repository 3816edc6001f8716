// The exact privacy audit of every TypeScript encoder (src/audit.ts): each audit configuration of the vectors
// (small enough to enumerate every outcome of every draw) is run through the encoder's real code with an
// enumerating source; the worst likelihood ratio over the outputs must equal the ε the Python audit attains
// (`audits[].epsilon`, itself checked against the claimed cost there), and never exceed the claimed cost.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { PROTOCOLS } from "../dist/protocols/index.js";
import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";
import { audit, matches } from "../dist/audit.js";

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "vectors");
const SECRET = new TextEncoder().encode("audit");

/** An encoder drawing every bit from `src`: for a memoizing protocol under a fixed secret, its permanent
 * response from `src` too, and its cohort drawn from `src` (Python's `for_audit`). */
function auditEncoder(entry, params, src) {
  const options = { rng: src };
  if (entry.needsSecret) Object.assign(options, { secret: SECRET, prrRng: src });
  return entry.makeEncoder(params, options);
}

for (const name of Object.keys(PROTOCOLS).sort()) {
  const entry = PROTOCOLS[name];
  const doc = JSON.parse(readFileSync(join(VECTORS, `${name}.json`), "utf8"));
  test(`${name}: the exact audit attains the audited ε and no more than the claimed cost`, () => {
    assert.ok(doc.audits.length >= 1);
    for (const item of doc.audits) {
      const params = fromDict(entry.Params, item.params);
      const result = audit(item.inputs, (x, src) => reportJson(auditEncoder(entry, params, src).encode(x)));
      assert.ok(matches(result.epsilon, item.epsilon), `${JSON.stringify(item.params)}: audited ${result.epsilon}, ` +
        `Python's audit ${item.epsilon}`);
      assert.ok(result.epsilon <= params.privacyCost.epsilon * (1 + 1e-9), "never above the claimed cost");
      assert.ok(result.outputs >= 2, "more than one output");
    }
  });
}

test("the audit can fail: a GRR that reports its value unchanged has ε = inf", () => {
  const entry = PROTOCOLS.grr;
  const params = fromDict(entry.Params, { epsilon: 1, domain_size: 3 });
  const leaky = (x, src) => { src.randbelow(2); return `{"index":${x}}`; };
  assert.equal(audit([0, 1, 2], leaky).epsilon, Infinity);
  const honest = audit([0, 1, 2], (x, src) => reportJson(entry.makeEncoder(params, { rng: src }).encode(x)));
  assert.ok(matches(honest.epsilon, params.privacyCost.epsilon));
});
