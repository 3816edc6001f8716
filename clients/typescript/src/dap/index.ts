/**
 * `ldp-telemetry-client/dap`: two-aggregator metrics (a spec's `trust` `two-aggregator` or `two-aggregator+local`)
 * in a browser or Node app. Each report is a DAP-09 report made by the native client's Rust code compiled to
 * WebAssembly (`wasm/`: Prio3 of VDAF draft 18 or 08, and Poplar1 of draft 18 for the `poplar1` string metrics,
 * through the `prio` crate, HPKE through the `hpke` crate; no cryptography is written in TypeScript), its randomness from `crypto.getRandomValues`; charged to the device's
 * ledger and kept in its outbox like any other report, and sent to its task's leader by `TelemetryClient.upload`
 * (or `uploadReports`).
 *
 * ```ts
 * import { CollectionSpec, TelemetryClient } from "ldp-telemetry-client";
 * import { loadDap, twoAggregatorMetrics } from "ldp-telemetry-client/dap";
 * await loadDap();                                 // the WebAssembly, once per page or process
 * const twoAggregator = twoAggregatorMetrics(spec, { crashed: crashedTaskFileText });
 * const client = await TelemetryClient.open(spec, store, { twoAggregator });
 * await client.record("crashed", true);
 * await client.uploadReports();                    // PUT {leader}/tasks/{task}/reports, one report each
 * ```
 *
 * The rules are the Python client's (`ldp/client/dap.py`, docs/client.md "Two-aggregator metrics"): the task file
 * must be the metric's task under the spec; the charge is the protocol's ε with local randomization inside, else
 * the spec's `per_report`; the metric's per-window cap on the device is k such charges, k the task's
 * `reports_per_window` (one when the spec caps none).
 */
import init, { DapTask, Poplar1Task } from "./wasm/ldp_dap.js";
import type { TwoAggregatorMetric, TwoAggregatorMetrics } from "../dap-hooks.js";
import type { CollectionSpec } from "../spec.js";
import {
  TwoAggregatorTask, checkTask, dapLine, deviceWindowCap, measurement, prio3Fit, reportCharge, reportTime,
} from "./metric.js";
import { Poplar1TaskFile, isPoplar1, poplar1Metric } from "./poplar1.js";
import { uploadReports } from "./upload.js";

export type { TwoAggregatorTask } from "./metric.js";
export type { Poplar1TaskFile } from "./poplar1.js";
export { DAP_MEDIA_TYPE, GONE, refusalCode } from "./upload.js";

let loaded: Promise<unknown> | null = null;

/** Load the WebAssembly (once; later calls share the first): `source` its bytes or URL, by default the
 * `ldp_dap_bg.wasm` beside this module (read from disk in Node, fetched in a page; a bundler such as Vite copies it
 * and rewrites the URL). */
export function loadDap(source?: BufferSource | URL | string | Response): Promise<unknown> {
  loaded ??= (async () => {
    const url = new URL("./wasm/ldp_dap_bg.wasm", import.meta.url);
    let module: unknown = source ?? url;
    if (source === undefined && url.protocol === "file:") { // Node: fetch reads no file: URL
      const fs = "node:fs/promises"; // not a literal: a page's bundler leaves it alone
      const { readFile } = (await import(/* @vite-ignore */ fs)) as typeof import("node:fs/promises");
      module = await readFile(url);
    }
    return init({ module_or_path: module as BufferSource });
  })();
  return loaded;
}

/** A task as `dapTask` gives it: with `reportWithRandom`, the report of given randomness (`randLength` bytes, and a
 * 16-byte report ID), for test vectors only (VDAF draft 18): randomness used twice breaks the measurement's privacy. */
export interface DapTaskFile extends TwoAggregatorTask {
  readonly draft: number;
  readonly randLength: number;
  reportWithRandom(measurement: number[], time: number, reportId: Uint8Array, rand: Uint8Array): Uint8Array;
}

function requireLoaded(): void {
  if (loaded === null) throw new Error("call loadDap() first: the two-aggregator reports are made by WebAssembly");
}

/** The task of a task file's JSON text (what `ldp collect task --leader-config … --helper-config …` wrote), after
 * `loadDap`: its members, and `report(measurement, time)`, the DAP-09 report's bytes. A malformed file, or one
 * without both aggregators' configs, throws an `Error` saying which member. */
export function dapTask(taskFileText: string): DapTaskFile {
  requireLoaded();
  const t = new DapTask(taskFileText);
  return {
    taskId: t.taskId, metric: t.metric, leaderUrl: t.leaderUrl, trust: t.trust, windowSeconds: t.windowSeconds,
    timePrecision: t.timePrecision, reportsPerWindow: t.reportsPerWindow, localJson: t.localJson,
    vdafType: t.vdafType, length: t.length, draft: t.draft, randLength: t.randLength,
    report: (m: number[], time: number) => t.report(Float64Array.from(m), time),
    reportWithRandom: (m: number[], time: number, id: Uint8Array, rand: Uint8Array) =>
      t.reportWithRandom(Float64Array.from(m), time, id, rand),
  };
}

/** A Poplar1 task as `poplar1Task` gives it: with `reportWithRandom`, the report of given randomness (`randLength`
 * bytes, and a 16-byte report ID), for tests only: randomness used twice breaks the string's privacy. */
export interface Poplar1TaskFileWithRandom extends Poplar1TaskFile {
  readonly randLength: number;
  reportWithRandom(packed: Uint8Array, time: number, reportId: Uint8Array, rand: Uint8Array): Uint8Array;
}

/** The Poplar1 task of a task file's JSON text (`ldp collect task` of a `poplar1` metric, with both aggregators'
 * configs), after `loadDap`: its members, and `report(packed, time)`, the DAP-09 report's bytes. A malformed file,
 * one of another VDAF, or one without both aggregators' configs, throws an `Error` saying which member. */
export function poplar1Task(taskFileText: string): Poplar1TaskFileWithRandom {
  requireLoaded();
  const t = new Poplar1Task(taskFileText);
  return {
    taskId: t.taskId, metric: t.metric, leaderUrl: t.leaderUrl, windowSeconds: t.windowSeconds,
    timePrecision: t.timePrecision, reportsPerWindow: t.reportsPerWindow, bits: t.bits,
    maxCandidates: t.maxCandidates, randLength: t.randLength,
    report: (packed: Uint8Array, time: number) => t.report(packed, time),
    reportWithRandom: (packed: Uint8Array, time: number, id: Uint8Array, rand: Uint8Array) =>
      t.reportWithRandom(packed, time, id, rand),
  };
}

/** The spec's two-aggregator metrics with their tasks (`tasks`: per metric, its task file's text, a `dapTask` or,
 * for a `poplar1` metric, a `poplar1Task`), each checked against the spec (a `RangeError` naming the first
 * difference; a task file of another VDAF than the metric's, an `Error`): what `TelemetryClient.open(spec, store,
 * { twoAggregator })` takes. */
export function twoAggregatorMetrics(spec: CollectionSpec,
  tasks: Readonly<Record<string, string | TwoAggregatorTask | Poplar1TaskFile>>): TwoAggregatorMetrics {
  const metrics = new Map<string, TwoAggregatorMetric>(), leaders = new Map<string, string>();
  for (const [name, given] of Object.entries(tasks)) {
    if (!spec.metrics.has(name)) throw new RangeError(`tasks: no metric ${JSON.stringify(name)} in the spec`);
    if (isPoplar1(spec.metric(name).params)) {
      const task = typeof given === "string" ? poplar1Task(given) : given as Poplar1TaskFile;
      metrics.set(name, poplar1Metric(spec, name, task));
      leaders.set(task.taskId, task.leaderUrl);
      continue;
    }
    const task = typeof given === "string" ? dapTask(given) : given as TwoAggregatorTask;
    checkTask(spec, name, task);
    const m = spec.metric(name), fit = prio3Fit(m.params)!, local = m.trust === "two-aggregator+local";
    leaders.set(task.taskId, task.leaderUrl);
    metrics.set(name, {
      charge: reportCharge(spec, name),
      windowCap: deviceWindowCap(spec, name)!,
      line: (enc, prepared, now, window) => dapLine(task.taskId, task.report(measurement(fit, enc, prepared, local),
        reportTime(now, window, task.windowSeconds, task.timePrecision))),
    });
  }
  return { metrics, upload: (store, s, options) => uploadReports(store, s, leaders, options) };
}
