// `record` cost against the queue length in Node (bench/record.mjs): MemoryStore and FileStore (in a fresh folder of
// the system's temporary directory). Prints JSON. Usage: node scripts/bench-record.mjs [calls]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as lib from "../dist/index.js";
import { FileStore } from "../dist/node.js";
import { benchRecord } from "../bench/record.mjs";

const calls = Number(process.argv[2] ?? 200);
const root = mkdtempSync(join(tmpdir(), "ldp-bench-record-"));
try {
  const memory = await benchRecord(lib, () => new lib.MemoryStore(), { calls: calls * 10 });
  const file = await benchRecord(lib, (i) => new FileStore(join(root, `s${i}`)), { calls });
  console.log(JSON.stringify({ memory, file }));
} finally {
  rmSync(root, { recursive: true, force: true });
}
