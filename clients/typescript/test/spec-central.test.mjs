// The spec's server-side central target (release.central): accepted, and refused with the Python validator's texts.
import { test } from "node:test";
import assert from "node:assert/strict";

import { CollectionSpec } from "../dist/index.js";

const base = () => ({ spec_version: 1, name: "app", budget: { per_window: 4, lifetime: 40 },
  metrics: { m: { protocol: "grr", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 } } } });

test("release.central: a valid target is accepted and moves no fingerprint", () => {
  const doc = base();
  doc.release = { central: { epsilon: 2.5, delta: 1e-9, windows: 365 } };
  doc.metrics.m.release = { min_z: 2, central: { epsilon: 1, delta: 0.5 } };
  assert.equal(CollectionSpec.fromDict(doc).fingerprint, "1e330e9e1ad92b95");
  assert.equal(CollectionSpec.fromDict(base()).fingerprint, "1e330e9e1ad92b95");
});

test("release.central: bad values are refused with their JSON paths (Python's texts)", () => {
  const doc = base();
  doc.release = { central: { epsilon: 0, delta: 1, windows: 0, x: 1 } };
  doc.metrics.m.release = { central: { epsilon: "1", windows: 1000001 } };
  assert.throws(() => CollectionSpec.fromDict(doc), (e) => {
    assert.deepEqual(e.errors, [
      "release.central.x: unknown key (expected one of delta, epsilon, windows)",
      "release.central.epsilon: must be > 0, got 0",
      "release.central.delta: must be in (0, 1), got 1",
      "release.central.windows: must be >= 1, got 0",
      "metrics.m.release.central.delta: required",
      "metrics.m.release.central.epsilon: must be a finite number > 0, got a string",
      "metrics.m.release.central.windows: must be <= 1,000,000 (a horizon the accountant composes), got 1,000,001",
    ]);
    return true;
  });
});
