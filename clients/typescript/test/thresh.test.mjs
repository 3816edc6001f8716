// Charge on change (`thresh`) beyond the shared vector test: the vectors replayed with their change charges
// (stream, value, cost) and the ledger's epochs, the epochs (a replay within one, a fresh response after a change,
// even back to an earlier value), any value or params dict gives a report or Python's error type, and the law of the
// epoch responses (20,000, within 4 standard errors).
import { test } from "node:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";

import { fromDict } from "../dist/params/base.js";
import { envelopeJson, isChange, isMemoized } from "../dist/encoders/base.js";
import { ReplaySource } from "../dist/random.js";
import { CollectionSpec } from "../dist/index.js";
import { fromHex, toHex } from "../dist/bytes.js";
import { hmacSha256 } from "../dist/hash/sha256.js";
import { ThreshParams, thresh } from "../dist/protocols/thresh.js";

import { VECTORS, N, bernoulliWithin, fuzzDomainValues, fuzzDomainParams } from "../test-support/domain.mjs";
import { SECRET, seeded, secretOf, withSecret } from "../test-support/memo.mjs";

const utf8 = (s) => new TextEncoder().encode(s);
const closeUlps = (a, b) => a === b || Math.abs(a - b) <= 4 * Math.max(Math.abs(a), Math.abs(b)) * Number.EPSILON;

fuzzDomainValues(withSecret(thresh), ThreshParams, [
  { epsilon: 1, domain_size: 4 },
  { epsilon: 2, domain_size: 3, labels: ["l0", "é", "\ud83d\ude00"] },
  { epsilon: 0.5, domain_size: 200 },
], 91);

fuzzDomainParams(withSecret(thresh), ThreshParams, {}, 92);

test("thresh: every vector case with its change charges, reported in the ledger's epochs", () => {
  const doc = JSON.parse(readFileSync(join(VECTORS, "thresh.json"), "utf8"));
  const spec = CollectionSpec.fromDict(doc.spec);
  let charges = 0;
  for (const [i, c] of doc.cases.entries()) {
    const secret = fromHex(c.metric_secret);
    const encoder = thresh.makeEncoder(spec.params(c.metric), { rng: new ReplaySource(c.draws), secret });
    let epoch = -1, last = null;
    for (const [j, r] of c.reports.entries()) {
      const prepared = encoder.prepare(r.value);
      const charge = encoder.chargeFor(prepared);
      assert.ok(isChange(charge) && !isMemoized(charge), `case ${i} report ${j}: a change charge`);
      assert.equal(toHex(charge.stream), r.charge.change_stream);
      assert.equal(toHex(charge.value), r.charge.change_value);
      assert.ok(closeUlps(charge.cost.epsilon, r.charge.cost.epsilon) && charge.cost.delta === r.charge.cost.delta);
      if (toHex(charge.value) !== last) epoch++; // what the ledger does
      last = toHex(charge.value);
      const line = envelopeJson(spec.fingerprint, c.metric, c.window, encoder.randomize(prepared, epoch));
      assert.equal(line, r.line, `case ${i} report ${j}`);
      charges++;
    }
  }
  assert.ok(charges > 10);
});

test("thresh: the charge's keys are HMAC-SHA256 of the secret (stream, value), as docs/conformance.md says", () => {
  const params = fromDict(ThreshParams, { epsilon: 1, domain_size: 4, labels: ["n", "e", "s", "w"] });
  const encoder = thresh.makeEncoder(params, { secret: SECRET });
  const fp = utf8(params.fingerprint);
  const charge = encoder.chargeFor(encoder.prepare("s"));
  assert.equal(toHex(charge.stream), toHex(hmacSha256(SECRET, new Uint8Array([...utf8("ldp/thresh/stream/v1\0"), ...fp]))));
  assert.equal(toHex(charge.value),
    toHex(hmacSha256(SECRET, new Uint8Array([...utf8("ldp/thresh/value/v1\0"), ...fp, 0, 0, 0, 2]))));
  assert.deepEqual(charge.cost, params.privacyCost);
  assert.equal(toHex(encoder.chargeFor(2).stream), toHex(charge.stream), "one stream per metric");
  assert.notEqual(toHex(encoder.chargeFor(1).value), toHex(charge.value));
  assert.notEqual(toHex(thresh.makeEncoder(params, { secret: secretOf(1) }).chargeFor(2).value), toHex(charge.value));
  assert.deepEqual(params.changeCost(2), { epsilon: 3 * params.privacyCost.epsilon, delta: 0 });
  assert.throws(() => thresh.makeEncoder(params), TypeError);
});

test("thresh: a run of one value replays its epoch's response; a change opens a new epoch, even back to a value", () => {
  const params = fromDict(ThreshParams, { epsilon: 0.5, domain_size: 3 });
  const encoder = thresh.makeEncoder(params, { secret: SECRET, rng: new ReplaySource([]) }); // no injected draw
  const seq = [0, 0, 0, 1, 1, 0, 0, 2];
  const epochs = [], ys = [];
  for (const v of seq) {
    ys.push(encoder.encode(v).payload[0][1]);
    epochs.push(encoder.epoch);
  }
  assert.deepEqual(epochs, [0, 0, 0, 1, 1, 2, 2, 3]);
  for (let k = 1; k < seq.length; k++) if (epochs[k] === epochs[k - 1]) assert.equal(ys[k], ys[k - 1]);
  // a function of (secret, epoch, value): another encoder of the secret, given the epochs, reports the same
  const again = thresh.makeEncoder(params, { secret: SECRET });
  for (let k = seq.length - 1; k >= 0; k--) assert.equal(again.randomize(seq[k], epochs[k]).payload[0][1], ys[k]);
  assert.equal(again.response(2, 0), encoder.response(2, 0));
  assert.throws(() => again.randomize(0, -1), RangeError);
  assert.throws(() => again.randomize(0, 0.5), RangeError);
});

test("thresh: an epoch's response keeps the value w.p. p, else a uniform other value (over epochs and devices)", () => {
  const params = fromDict(ThreshParams, { epsilon: 1, domain_size: 4 });
  const encoder = thresh.makeEncoder(params, { secret: secretOf(9) });
  const counts = [0, 0, 0, 0];
  for (let e = 0; e < N; e++) counts[encoder.response(e, 1)]++;
  bernoulliWithin(counts[1], N, params.p, "kept over epochs");
  for (const y of [0, 2, 3]) bernoulliWithin(counts[y], N, params.q, `other ${y}`);
  let kept = 0;
  const rng = seeded("thresh");
  for (let i = 0; i < N / 4; i++) kept += thresh.makeEncoder(params, { secret: secretOf(i, "t"), rng }).encode(3).payload[0][1] === 3;
  bernoulliWithin(kept, N / 4, params.p, "kept over devices");
});
