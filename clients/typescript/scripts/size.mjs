// Bundle sizes, minified and gzipped (level 9): the core encoders (src/core.ts: every protocol, params, randomness,
// hashing, canonical JSON, envelopes) against the target of 30 kB, and the whole browser client
// (src/index.ts: the core, the spec, the budget ledger, the uploader, the client). Prints JSON; exits 1 over target.
import { build } from "esbuild";
import { gzipSync } from "node:zlib";

const TARGET_CORE = 30 * 1024;

async function size(entry) {
  const out = await build({ entryPoints: [entry], bundle: true, minify: true, format: "esm", write: false,
    platform: "browser", target: "es2020" });
  const bytes = out.outputFiles[0].contents;
  return { minified: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
}

const core = await size("src/core.ts");
const full = await size("src/index.ts");
const report = { core_encoders: { ...core, target_gzip: TARGET_CORE, meets: core.gzip <= TARGET_CORE }, browser_client: full };
console.log(JSON.stringify(report, null, 2));
if (!report.core_encoders.meets) process.exit(1);
