// The conformance vectors (../../conformance/vectors, docs/conformance.md): every protocol this client implements
// must reproduce the Python client's canonical params, fingerprints, costs, envelope lines and refusals exactly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { readdirSync } from "node:fs";
import { NOT_YET, PROTOCOLS } from "../dist/protocols/index.js";
import { fromDict } from "../dist/params/base.js";
import { envelopeJson, isChange, isMemoized } from "../dist/encoders/base.js";
import { ReplaySource } from "../dist/random.js";
import { canonicalJson } from "../dist/canonical.js";
import { assertRefusal } from "../test-support/refusal.mjs";
import { fromHex as hexToBytes, toHex as bytesToHex } from "../dist/bytes.js";
import { hmacSha256 } from "../dist/hash/sha256.js";
import { CollectionSpec } from "../dist/index.js";
import { parseKeepingFloats } from "../test-support/json-floats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const VECTORS = join(here, "..", "..", "..", "conformance", "vectors");

/** The vector file with float tokens kept as `PyFloat` (`7.0` is a float, `7` an int, in a refusal's `got`). */
function loadVectorsKeepingFloats(protocol) {
  return parseKeepingFloats(readFileSync(join(VECTORS, `${protocol}.json`), "utf8"));
}

export function loadVectors(protocol) {
  return JSON.parse(readFileSync(join(VECTORS, `${protocol}.json`), "utf8"));
}

/** Within `ulps` units in the last place (probabilities from exp/log may differ by an ulp between math libraries). */
function closeUlps(a, b, ulps = 4) {
  if (a === b) return true;
  const scale = Math.max(Math.abs(a), Math.abs(b)) * Number.EPSILON;
  return Math.abs(a - b) <= ulps * scale;
}

const METRIC_SECRET_TAG = new TextEncoder().encode("ldp/client/metric-secret/v1\0");

function metricSecret(deviceHex, metric) {
  const device = hexToBytes(deviceHex);
  const msg = new Uint8Array([...METRIC_SECRET_TAG, ...new TextEncoder().encode(metric)]);
  return hmacSha256(device, msg);
}

for (const name of Object.keys(PROTOCOLS).sort()) {
  const entry = PROTOCOLS[name];
  const path = join(VECTORS, `${name}.json`);
  test(`${name}: vectors exist`, () => assert.ok(existsSync(path), path));
  if (!existsSync(path)) continue;
  const doc = loadVectors(name);

  test(`${name}: params, canonical JSON, fingerprints and costs`, () => {
    for (const item of doc.params) {
      const params = fromDict(entry.Params, item.params);
      assert.equal(canonicalJson({ protocol: name, params: params.canonicalDict() }), item.canonical);
      assert.equal(params.fingerprint, item.fingerprint);
      const cost = params.privacyCost;
      assert.ok(closeUlps(cost.epsilon, item.privacy_cost.epsilon), `${cost.epsilon} vs ${item.privacy_cost.epsilon}`);
      assert.ok(closeUlps(cost.delta, item.privacy_cost.delta), `${cost.delta} vs ${item.privacy_cost.delta}`);
    }
  });

  test(`${name}: the spec's canonical form and fingerprint`, () => {
    const spec = CollectionSpec.fromDict(doc.spec);
    assert.equal(spec.canonical(), doc.spec_canonical);
    assert.equal(spec.fingerprint, doc.spec_fingerprint);
  });

  test(`${name}: every case replayed gives its lines byte for byte`, () => {
    const spec = CollectionSpec.fromDict(doc.spec);
    for (const [i, c] of doc.cases.entries()) {
      const params = spec.params(c.metric);
      const rng = new ReplaySource(c.draws);
      const options = { rng };
      if (c.cohort !== undefined) options.cohort = c.cohort;
      if (c.device_secret !== undefined) {
        const secret = metricSecret(c.device_secret, c.metric);
        assert.equal(bytesToHex(secret), c.metric_secret);
        options.secret = secret;
      }
      const encoder = entry.makeEncoder(params, options);
      for (const [j, r] of c.reports.entries()) {
        const prepared = encoder.prepare(r.value);
        const charge = encoder.chargeFor(prepared);
        if (r.charge.change_stream !== undefined) {
          assert.ok(isChange(charge), `case ${i} report ${j}: a change charge`);
          assert.equal(bytesToHex(charge.stream), r.charge.change_stream);
          assert.equal(bytesToHex(charge.value), r.charge.change_value);
          assert.ok(closeUlps(charge.cost.epsilon, r.charge.cost.epsilon) && charge.cost.delta === r.charge.cost.delta);
        } else if (r.charge.memo_key !== undefined) {
          assert.ok(isMemoized(charge), `case ${i} report ${j}: a memoized charge`);
          assert.equal(bytesToHex(charge.key), r.charge.memo_key);
          for (const k of ["first", "then", "cap"]) assert.ok(closeUlps(charge[k].epsilon, r.charge[k].epsilon));
        } else {
          assert.ok(!isMemoized(charge) && !isChange(charge) && closeUlps(charge.epsilon, r.charge.epsilon),
            `case ${i} report ${j}: charge`);
        }
        const line = envelopeJson(spec.fingerprint, c.metric, c.window, encoder.randomize(prepared));
        assert.equal(line, r.line, `case ${i} report ${j} (value ${JSON.stringify(r.value)})`);
      }
      assert.equal(rng.remaining(), 0, `case ${i}: every recorded draw consumed`);
    }
  });

  test(`${name}: parameter refusals have Python's type category, code and fields`, () => {
    for (const item of doc.refusals.params) {
      if (item.error) {
        assert.throws(() => fromDict(entry.Params, item.params), (err) => {
          assertRefusal(err, item.error, JSON.stringify(item.params));
          return true;
        });
      } else {
        assert.equal(fromDict(entry.Params, item.params).fingerprint, item.fingerprint, JSON.stringify(item.params));
      }
    }
  });

  test(`${name}: value refusals have Python's type category, code and fields`, () => {
    const spec = CollectionSpec.fromDict(doc.spec);
    for (const item of loadVectorsKeepingFloats(name).refusals.values) {
      const params = spec.params(item.metric);
      const options = {};
      if (entry.assignedCohorts(params)) options.cohort = 0;
      if (entry.needsSecret) options.secret = new Uint8Array([115]);
      const encoder = entry.makeEncoder(params, options);
      assert.throws(() => encoder.prepare(item.value), (err) => {
        assertRefusal(err, item.error, JSON.stringify(item.value));
        return true;
      });
    }
  });
}

test("every vector file has a replay here, or is on the declared not-yet list", () => {
  const files = readdirSync(VECTORS).filter((f) => f.endsWith(".json") && f !== "primitives.json").map((f) => f.slice(0, -5));
  const missing = files.filter((p) => !(p in PROTOCOLS) && !NOT_YET.includes(p));
  assert.deepEqual(missing, [], "vector files with neither a replay nor a not-yet listing");
  assert.deepEqual(NOT_YET.filter((p) => p in PROTOCOLS), [], "listed as not yet, yet implemented");
  assert.deepEqual(NOT_YET.filter((p) => !files.includes(p)), [], "listed as not yet, with no vector file");
});
