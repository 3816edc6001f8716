// What the spec fixtures of the conformance folder share (`conformance/specs/trust.json`, `poplar1.json`): an accepted
// case's spec against Python's canonical form, fingerprint and trust per metric, its records replayed (a refusal of
// a two-aggregator metric with Python's code and fields), and a refused case's errors at Python's paths, each
// `.trust` error with Python's text up to its `, got`. Kept outside test/ because `node --test` runs every file there.
import assert from "node:assert/strict";

import { CollectionSpec, SpecError } from "../dist/index.js";
import { assertRefusal } from "./refusal.mjs";

const beforeGot = (message) => message.split(", got ")[0];

/** The spec of an accepted case `c`, checked against its canonical form, fingerprint and trust per metric. */
export function acceptedSpec(c) {
  const spec = CollectionSpec.fromDict(c.spec);
  assert.equal(spec.canonical(), c.canonical);
  assert.equal(spec.fingerprint, c.fingerprint);
  assert.deepEqual(Object.fromEntries([...spec.metrics].map(([n, m]) => [n, m.trust])), c.trust);
  return spec;
}

/** Each of `records` (`{metric, value, error?}`) recorded by `client`; one with an `error` refused with it. */
export async function replayRecords(client, records = []) {
  for (const [i, r] of records.entries()) {
    const context = `record ${i} (${r.metric}, ${JSON.stringify(r.value)})`;
    if (r.error === undefined) {
      await client.record(r.metric, r.value);
    } else {
      await assert.rejects(client.record(r.metric, r.value), (err) => {
        assertRefusal(err, r.error, context);
        assert.match(err.message, /two-aggregator/);
        return true;
      });
    }
  }
}

/** `specDict` refused with the errors `want` (`{path, message}`), in Python's order. */
export function assertSpecErrors(specDict, want) {
  assert.throws(() => CollectionSpec.fromDict(specDict), (err) => {
    assert.ok(err instanceof SpecError, String(err));
    const got = err.errors.map((e) => { const k = e.indexOf(": "); return { path: e.slice(0, k), message: e.slice(k + 2) }; });
    assert.deepEqual(got.map((e) => e.path), want.map((e) => e.path), err.message);
    for (const [k, w] of want.entries()) {
      if (!w.path.endsWith(".trust")) continue;
      assert.equal(beforeGot(got[k].message), beforeGot(w.message), w.path);
      assert.equal(got[k].message.includes(", got "), w.message.includes(", got "), got[k].message);
    }
    return true;
  });
}
