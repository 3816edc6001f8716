// Per-report `encode` time in Node, as the Kotlin client's `EncodeBenchmark` measures it (simulations/bench_kotlin.py
// CASES): for each case, one encoder from the platform CSPRNG encodes the value `calls` times after a warm-up of the
// same length, each report turned into its JSON text; batches of 1,000. Prints one JSON object
// `{case: {"us_mean", "us_median_of_batches", "us_best_batch", "calls", "batch"}, "node": version}`.
// Usage: node scripts/bench-encode.mjs '<cases JSON>' [calls]
import { PROTOCOLS } from "../dist/protocols/index.js";
import { fromDict } from "../dist/params/base.js";
import { reportJson } from "../dist/encoders/base.js";

const cases = JSON.parse(process.argv[2]);
const calls = Number(process.argv[3] ?? 200_000);
const batch = 1_000;
const out = {};
for (const [name, c] of Object.entries(cases)) {
  const entry = PROTOCOLS[c.protocol];
  if (entry === undefined) throw new Error(`no protocol ${c.protocol}`);
  const params = fromDict(entry.Params, c.params);
  const options = {};
  if (entry.needsSecret) options.secret = Uint8Array.from({ length: 32 }, (_, i) => i);
  if (entry.assignedCohorts(params) > 0) options.cohort = 0;
  const encoder = entry.makeEncoder(params, options);
  const value = c.value;
  let sink = 0;
  for (let i = 0; i < calls; i++) sink += reportJson(encoder.encode(value)).length; // warm-up: the JIT
  const perBatch = [];
  for (let b = 0; b < Math.floor(calls / batch); b++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) sink += reportJson(encoder.encode(value)).length;
    perBatch.push(Number(process.hrtime.bigint() - t0) / 1e3 / batch);
  }
  const sorted = [...perBatch].sort((a, b) => a - b);
  out[name] = {
    us_mean: perBatch.reduce((a, b) => a + b, 0) / perBatch.length,
    us_median_of_batches: sorted[sorted.length >> 1],
    us_best_batch: sorted[0],
    calls: perBatch.length * batch,
    batch,
    check: sink > 0,
  };
}
out.node = process.version;
console.log(JSON.stringify(out));
