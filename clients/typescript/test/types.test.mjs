// Typed specs: `ldp-spec-types` writes a module typing a spec's metrics (checked here against a spec with labels,
// binary RR, numbers, strings and a poplar1 string metric, and refusing a bad spec), and tsc compiles test/types/typed-spec.ts, whose
// `@ts-expect-error` lines must each find an error (a wrong label, an unknown metric, a wrong value type).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const BIN = join(root, "bin", "ldp-spec-types.mjs");
const SPEC = {
  spec_version: 1, name: "generated", budget: { per_window: 10, lifetime: 100 },
  metrics: {
    app_category: { protocol: "grr", params: { epsilon: 2, domain_size: 3, labels: ["games", "news", "it's"] },
      budget: { per_report: 2 }, description: "what the app is */" },
    dark_mode: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 } },
    load_time: { protocol: "duchi", params: { epsilon: 1, low: 0, high: 1000 }, budget: { per_report: 1 } },
    word: { protocol: "sfp", params: { word_epsilon: 1, fragment_epsilon: 1 }, budget: { per_report: 2 } },
    shared: { protocol: "sue", params: { epsilon: 1, domain_size: 2 }, budget: { per_report: 1 }, trust: "two-aggregator+local" },
    shuffled: { protocol: "grr", params: { epsilon: 1, domain_size: 2 }, budget: { per_report: 1 }, trust: "shuffle" },
    words: { protocol: "poplar1", params: { bits: 64, threshold: 20, max_candidates: 1024 }, budget: { per_report: 1 },
      trust: "two-aggregator" },
  },
};

test("ldp-spec-types writes each metric's value type, and refuses a bad spec", () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-types-"));
  const path = join(dir, "spec.json");
  writeFileSync(path, JSON.stringify(SPEC));
  const out = execFileSync(process.execPath, [BIN, path], { encoding: "utf8" });
  assert.match(out, /export interface Metrics \{/);
  assert.match(out, /app_category: "games" \| "news" \| "it's" \| number;/);
  assert.match(out, /dark_mode: boolean \| 0 \| 1;/);
  assert.match(out, /load_time: number;/);
  assert.match(out, /word: string;/);
  assert.match(out, /shared: number; \/\/ trust two-aggregator\+local: recorded given its task/);
  assert.match(out, /shuffled: number;/);
  assert.match(out, /words: string \| Uint8Array; \/\/ trust two-aggregator: recorded given its task/);
  assert.ok(!out.includes("is */"), "a description cannot close the comment");
  writeFileSync(join(here, "types", "metrics.generated.ts"), out);
  writeFileSync(path, JSON.stringify({ ...SPEC, metrics: { x: { protocol: "nope", params: {}, budget: { per_report: 1 } } } }));
  const bad = spawnSync(process.execPath, [BIN, path], { encoding: "utf8" });
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /unknown protocol "nope"/);
  assert.equal(spawnSync(process.execPath, [BIN], { encoding: "utf8" }).status, 2);
});

test("tsc: typed metrics accept their values and refuse others", () => {
  const tsc = join(root, "node_modules", ".bin", "tsc");
  const r = spawnSync(tsc, ["-p", join(here, "types", "tsconfig.json")], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("VALUE_KINDS names every protocol of the registry and every shared kind (poplar1), and only those", async () => {
  const { VALUE_KINDS } = await import("../dist/types.js");
  const { PROTOCOLS, SHARED_KINDS } = await import("../dist/protocols/index.js");
  assert.deepEqual(Object.keys(VALUE_KINDS).sort(), [...Object.keys(PROTOCOLS), ...SHARED_KINDS.map((e) => e.name)].sort());
});
