// Helpers shared by the memoized protocols' tests (test/{lgrr,loue,memo-mean}.test.mjs): a seeded injected stream,
// per-device secrets, the memo key computed independently from docs/conformance.md, and the checks every memoized
// encoder must pass (the secret required, the same permanent response for the same value, the charge's key).
import { test } from "node:test";
import assert from "node:assert/strict";

import { fromDict } from "../dist/params/base.js";
import { isMemoized } from "../dist/encoders/base.js";
import { KeyedRandomSource } from "../dist/random.js";
import { hmacSha256 } from "../dist/hash/sha256.js";
import { toHex } from "../dist/bytes.js";

const utf8 = (s) => new TextEncoder().encode(s);

/** A seeded injected stream: the keyed (HMAC-SHA256) stream of a test key and `label`. */
export function seeded(label) {
  return new KeyedRandomSource(utf8("test-seed"), utf8(label));
}

/** A device's metric secret, `i`-th of a family. */
export function secretOf(i, family = "device") {
  return utf8(`${family}-${i}`);
}

export const SECRET = secretOf(0);

/** `entry` whose encoders get `secret` unless given one (for the fixed-domain helpers of domain.mjs). */
export function withSecret(entry, secret = SECRET) {
  return { ...entry, makeEncoder: (params, options = {}) => entry.makeEncoder(params, { secret, ...options }) };
}

/** memo_key(i) = HMAC-SHA256(secret, "ldp/longitudinal/memo/v1\0" ‖ fp ‖ uint32_BE(i)), computed here. */
export function expectedMemoKey(secret, fingerprint, i) {
  const msg = new Uint8Array([...utf8("ldp/longitudinal/memo/v1\0"), ...utf8(fingerprint),
    (i >>> 24) & 255, (i >>> 16) & 255, (i >>> 8) & 255, i & 255]);
  return toHex(hmacSha256(secret, msg));
}

/**
 * The checks of a memoized protocol: no secret or an empty one is a `TypeError` (a usage error); the same value
 * gives the same permanent response (across encoders of one secret, and between reports), another secret another
 * family of responses; the charge is `{memo_key(i), first = then = reportCharge, cap = memoCap}`.
 * `values`: inputs and their memo indices `[value, i]`; `response(encoder, i)`: the permanent response of `i`.
 */
export function memoChecks(entry, Params, dict, values, response) {
  test(`${entry.name}: the metric secret is required and checked`, () => {
    const params = fromDict(Params, dict);
    assert.throws(() => entry.makeEncoder(params), (err) => err instanceof TypeError &&
      err.message === `${entry.name} needs the metric secret (options.secret): its permanent responses derive from it`);
    assert.throws(() => entry.makeEncoder(params, { secret: new Uint8Array(0) }),
      (err) => err instanceof TypeError && err.message === "the key must be a non-empty Uint8Array");
  });

  test(`${entry.name}: the same value, the same permanent response and memo key; the charge is memoized`, () => {
    const params = fromDict(Params, dict);
    const a = entry.makeEncoder(params, { secret: SECRET, rng: seeded("a") });
    const b = entry.makeEncoder(params, { secret: SECRET, rng: seeded("b") });
    let differs = false;
    for (const [v, i] of values) {
      const first = response(a, i);
      a.encode(v);
      assert.deepEqual(response(a, i), first, "kept within an encoder");
      assert.deepEqual(response(b, i), first, "derived from the secret alone");
      for (let s = 1; s <= 8 && !differs; s++) {
        const other = entry.makeEncoder(params, { secret: secretOf(s), rng: seeded("c") });
        differs = JSON.stringify(response(other, i), (_k, x) => (typeof x === "bigint" ? `${x}` : x)) !==
          JSON.stringify(first, (_k, x) => (typeof x === "bigint" ? `${x}` : x));
      }
      const prepared = a.prepare(v);
      assert.equal(prepared, i);
      const charge = a.chargeFor(prepared);
      assert.ok(isMemoized(charge));
      assert.equal(toHex(charge.key), expectedMemoKey(SECRET, params.fingerprint, i));
      assert.equal(toHex(b.chargeFor(b.prepare(v)).key), toHex(charge.key));
      assert.notEqual(toHex(entry.makeEncoder(params, { secret: secretOf(1) }).chargeFor(prepared).key), toHex(charge.key));
      assert.deepEqual(charge.first, params.reportCharge ?? params.privacyCost);
      assert.deepEqual(charge.then, charge.first);
      assert.deepEqual(charge.cap, params.memoCap);
      assert.ok(charge.first.epsilon <= charge.cap.epsilon && charge.first.epsilon >= params.privacyCost.epsilon);
    }
    assert.ok(differs, "another secret, other permanent responses");
  });
}
