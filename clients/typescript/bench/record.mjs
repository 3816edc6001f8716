// What one `record` costs with 10, 1,000 and 10,000 reports already queued, for a state store: the same code in Node
// (MemoryStore, FileStore: scripts/bench-record.mjs) and in a browser page (IndexedDBStore:
// simulations/bench_typescript.py drives headless Chromium). The queue is filled through the store's own
// transactions (one append per queued report, in transactions of 1,000), then `record` is timed `calls` times.
// The cost must not grow with the queue (the outbox is appended to, never rewritten).

const SPEC = {
  spec_version: 1, name: "bench_record", budget: { per_window: 1e9, lifetime: 1e9 },
  upload: { min_interval_seconds: 0, max_batch: 1000 },
  metrics: { cat: { protocol: "grr", params: { epsilon: 1.0, domain_size: 8 }, budget: { per_report: 1.0 } } },
};

/** `{queued: µs per record}` for each queue length of `sizes`, each on a fresh store from `makeStore(i)` (store
 * `sizes.length` warms the code up first): the median over 5 blocks of `calls / 5` records, and the mean. */
export async function benchRecord(lib, makeStore, { sizes = [10, 1000, 10000], calls = 200 } = {}) {
  const { CollectionSpec, TelemetryClient } = lib;
  const spec = CollectionSpec.fromDict(SPEC);
  const warm = await TelemetryClient.open(spec, await makeStore(sizes.length), { clock: () => 1 });
  for (let k = 0; k < calls; k++) await warm.record("cat", k % 8);
  const out = {};
  for (const [i, size] of sizes.entries()) {
    const store = await makeStore(i);
    const client = await TelemetryClient.open(spec, store, { clock: () => 1 });
    await client.record("cat", 0);
    const line = await store.transact((tx) => tx.head(1)[0].line, { readOnly: true });
    for (let queued = 1; queued < size;) {
      const n = Math.min(1000, size - queued);
      await store.transact((tx) => {
        for (let k = 0; k < n; k++) tx.append({ id: tx.state.nextId++, metric: "cat", line });
      });
      queued += n;
    }
    const block = Math.max(1, Math.floor(calls / 5));
    const blocks = [];
    for (let b = 0; b < 5; b++) {
      const t0 = performance.now();
      for (let k = 0; k < block; k++) await client.record("cat", k % 8);
      blocks.push(((performance.now() - t0) * 1000) / block);
    }
    const round = (x) => Math.round(x * 10) / 10;
    const mean = blocks.reduce((a, b) => a + b, 0) / blocks.length;
    out[size] = { us_per_record: round([...blocks].sort((a, b) => a - b)[2]), us_mean: round(mean),
      queued_after: await client.pending() };
  }
  return out;
}
