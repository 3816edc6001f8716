// Two-aggregator reports in Node, ldp's web client beside divviup-ts (issue 87, item 6), for
// simulations/bench_typescript.py: per case (a Prio3Histogram of 16 and of 1,024 buckets), the milliseconds of one
// report — Prio3 sharding and both HPKE seals, no upload — by `@divviup/dap`'s `Task.generateReport` (VDAF-08) and by
// `ldp-telemetry-client/dap`'s `dapTask(...).report` (the Rust client in WebAssembly; VDAF-08, the draft divviup-ts
// speaks, and draft 18), in one process, rounds alternating, each path warmed first (the JIT's tiers, WebAssembly's
// too). The same X25519 configs for both. Prints JSON: per case and path, the median and best of the rounds' means.
//
// node bench_web_dap.mjs DIVVIUP_DAP_ENTRY LDP_DAP_ENTRY [REPORTS_PER_ROUND] [ROUNDS]
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const [divviupEntry, ldpEntry] = process.argv.slice(2, 4);
const perRound = Number(process.argv[4] ?? 20), rounds = Number(process.argv[5] ?? 7);
const { Task } = await import(pathToFileURL(divviupEntry).href);
const dap = await import(pathToFileURL(ldpEntry).href);
await dap.loadDap();

const taskId = Buffer.alloc(32, 0xa5);
const x25519 = (id, last) => Buffer.concat([Buffer.from([id, 0x00, 0x20, 0x00, 0x01, 0x00, 0x01, 0x00, 0x20]),
  Buffer.alloc(31, 0x41 + id), Buffer.from([last])]);
const configs = { leader: x25519(1, 0x11), helper: x25519(2, 0x22) };
const list = (c) => Buffer.concat([Buffer.from([0, c.length]), c]);

function divviup(length, chunkLength) {
  const task = new Task({ type: "histogram", length, chunkLength, id: taskId, leader: "https://leader.example/",
    helper: "https://helper.example/", timePrecisionSeconds: 3600 });
  task.fetch = async (url) => new Response(list(String(url).startsWith("https://leader") ? configs.leader : configs.helper),
    { status: 200, headers: { "content-type": "application/dap-hpke-config-list" } });
  return async () => { await task.generateReport(3); };
}

function ours(length, chunkLength, draft) {
  const task = dap.dapTask(JSON.stringify({ format: "ldp-task/1", task_id: taskId.toString("base64url"), app: "bench",
    metric: "m", vdaf: { type: "Prio3Histogram", draft, length, chunk_length: chunkLength }, window_seconds: 86400,
    time_precision: 3600, leader_url: "https://leader.example", local: null,
    hpke_configs: { leader: configs.leader.toString("base64url"), helper: configs.helper.toString("base64url") } }));
  return async () => { task.report([3], 1_700_000_000); };
}

async function timeRound(fn) {
  const t = performance.now();
  for (let i = 0; i < perRound; i++) await fn();
  return (performance.now() - t) / perRound;
}

const out = { node: process.version, reports_per_round: perRound, rounds, cases: [] };
// chunk lengths: the prio crate's optimal_chunk_length of each draft (what `ldp collect task` writes), for both
for (const [length, chunk08, chunk18] of [[16, 4, 4], [1024, 32, 32]]) {
  const paths = { divviup_ts_vdaf08: divviup(length, chunk08), ldp_wasm_vdaf08: ours(length, chunk08, 8),
    ldp_wasm_vdaf18: ours(length, chunk18, 18) };
  for (const fn of Object.values(paths)) for (let i = 0; i < Math.max(5, perRound); i++) await fn(); // warm-up
  const ms = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) for (const [k, fn] of Object.entries(paths)) ms[k].push(await timeRound(fn));
  const row = { buckets: length };
  for (const [k, v] of Object.entries(ms)) {
    v.sort((a, b) => a - b);
    row[k] = { median_ms: v[Math.floor(v.length / 2)], best_ms: v[0] };
  }
  out.cases.push(row);
}
process.stdout.write(JSON.stringify(out) + "\n");
