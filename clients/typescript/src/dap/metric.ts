/**
 * Two-aggregator metrics on the device (Python's `ldp/client/dap.py`): what the client runtime needs to record a
 * metric whose `trust` is `two-aggregator` or `two-aggregator+local` — its task (a `TwoAggregatorTask`, made by the
 * `ldp-telemetry-client/dap` entry from the task file, whose cryptography is the native client's compiled to
 * WebAssembly), checked against the spec; the Prio3 measurement of a value; the ledger's charge and per-window cap;
 * and the outbox line that holds the sealed report. Nothing here imports the WebAssembly: a page that never records
 * such a metric never loads it.
 */
import { LdpValueError } from "../errors.js";
import type { Encoder, PayloadValue } from "../encoders/base.js";
import type { PrivacyCost, ProtocolParams } from "../params/base.js";
import type { CollectionSpec } from "../spec.js";

/** A two-aggregator task as the `ldp-telemetry-client/dap` entry gives it (`dapTask`): the members of its task file
 * a device uses, and `report`, which makes the DAP-09 report of a measurement (its randomness from
 * `crypto.getRandomValues`). */
export interface TwoAggregatorTask {
  /** The task ID, unpadded base64url (as in the leader's URL). */
  readonly taskId: string;
  readonly metric: string;
  readonly leaderUrl: string;
  /** `"two-aggregator"` or `"two-aggregator+local"`. */
  readonly trust: string;
  readonly windowSeconds: number;
  readonly timePrecision: number;
  /** The most reports a device sends a window (`undefined`: the spec caps none, one assumed). */
  readonly reportsPerWindow: number | undefined;
  /** The local protocol as JSON, `{"protocol": …, "params": {…}}` (`undefined` without local noise). */
  readonly localJson: string | undefined;
  /** `Prio3Count`, `Prio3Histogram`, `Prio3SumVec` or `Prio3Sum`. */
  readonly vdafType: string;
  /** Entries of the aggregate (1 for Count and Sum). */
  readonly length: number;
  /** The report's bytes: the body of `PUT {leaderUrl}/tasks/{taskId}/reports`. */
  report(measurement: number[], time: number): Uint8Array;
}

/** How a protocol's report enters Prio3 (Python's `ProtocolParams.prio3_fit()`): its type, the randomized payload's
 * field that is the measurement, and the aggregate's length. */
export interface Prio3Fit {
  readonly vdaf: "Prio3Count" | "Prio3Histogram" | "Prio3SumVec";
  readonly field: string;
  readonly length: number;
}

/** The protocol's fit, or `null` (not one of rr, grr, sue, oue, pgr, hpg). */
export function prio3Fit(params: ProtocolParams): Prio3Fit | null {
  const d = params.values.domain_size as number;
  switch (params.protocol) {
    case "rr": return { vdaf: "Prio3Count", field: "bit", length: 1 };
    case "grr": return { vdaf: "Prio3Histogram", field: "index", length: d };
    case "sue": case "oue": return { vdaf: "Prio3SumVec", field: "bits", length: d };
    case "pgr": case "hpg": return { vdaf: "Prio3Histogram", field: "j", length: (params as unknown as { order: number }).order };
    default: return null;
  }
}

/** The most reports of `metric` a device sends a window (Python's `CollectionSpec.reports_per_window`): its
 * per-window cap (the metric's, else the collection's) over its per-report cost; `undefined` without a cap. */
export function reportsPerWindow(spec: CollectionSpec, metric: string): number | undefined {
  const m = spec.metric(metric);
  const cap = m.budget.per_window ?? spec.budget.per_window;
  const per = m.budget.per_report ?? m.params.privacyCost;
  if (cap === undefined || per.epsilon <= 0) return undefined;
  return Math.max(1, Math.floor(cap.epsilon / per.epsilon + 1e-9));
}

/** What the ledger is charged for one report (Python's `CollectionSpec.report_charge`): the protocol's local cost,
 * but for a `two-aggregator` metric (the exact value shared), the spec's `per_report`. */
export function reportCharge(spec: CollectionSpec, metric: string): PrivacyCost {
  const m = spec.metric(metric);
  return m.trust === "two-aggregator" ? m.budget.per_report ?? m.params.privacyCost : m.params.privacyCost;
}

/** The metric's per-window cap on the device (Python's `CollectionSpec.device_window_cap`): the spec's, but for a
 * two-aggregator metric k reports' charges, k its task's `reports_per_window` (one when the spec caps none). */
export function deviceWindowCap(spec: CollectionSpec, metric: string): PrivacyCost | undefined {
  const m = spec.metric(metric);
  if (!m.trust.startsWith("two-aggregator")) return m.budget.per_window;
  const c = reportCharge(spec, metric), k = reportsPerWindow(spec, metric) ?? 1;
  return { epsilon: c.epsilon * k, delta: c.delta * k };
}

/** Canonical JSON of a JSON value: object keys sorted, no spaces (to compare two documents by meaning). */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${sortedJson(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Throws a `RangeError` naming the first member in which `task` is not `metric`'s task under `spec` (its name,
 * window, trust model, local protocol, Prio3 type and length, reports a window), as Python's `device_task`. */
export function checkTask(spec: CollectionSpec, metric: string, task: TwoAggregatorTask): void {
  const m = spec.metric(metric);
  const fit = prio3Fit(m.params);
  if (!m.trust.startsWith("two-aggregator") || fit === null) {
    throw new RangeError(`tasks: ${JSON.stringify(metric)} is no two-aggregator metric of collection ${JSON.stringify(spec.name)}`);
  }
  const local = m.trust === "two-aggregator+local" ? { protocol: m.params.protocol, params: m.params.toDict() } : null;
  sameTask(spec, metric, [
    ["metric", metric, task.metric], ["window_seconds", spec.windowSeconds, task.windowSeconds],
    ["trust", m.trust, task.trust], ["vdaf", fit.vdaf, task.vdafType], ["length", fit.length, task.length],
    ["reports_per_window", reportsPerWindow(spec, metric), task.reportsPerWindow],
    ["local", sortedJson(local), sortedJson(task.localJson === undefined ? null : JSON.parse(task.localJson))],
  ]);
}

/** Throws a `RangeError` naming the first member `[name, the spec's, the task's]` of `want` in which the task given
 * for `metric` is not its task under `spec` (Python's `device_task`). */
export function sameTask(spec: CollectionSpec, metric: string, want: ReadonlyArray<readonly [string, unknown, unknown]>): void {
  for (const [name, spec_, given] of want) {
    if (spec_ !== given) {
      throw new RangeError(`the task given for metric ${JSON.stringify(metric)} is not its task under spec ` +
        `${JSON.stringify(spec.name)}: its ${name} is ${String(given)}, the spec's ${String(spec_)} (write it again: ` +
        "ldp collect task)");
    }
  }
}

/** The Prio3 measurement of a prepared value (Python's `DapEncoder.measurement`): the randomized report's field with
 * local noise inside, else the exact value (its index; one-hot for Prio3SumVec). */
export function measurement(fit: Prio3Fit, enc: Encoder, prepared: unknown, local: boolean): number[] {
  if (local) {
    const entry = enc.randomize(prepared).payload.find(([k]) => k === fit.field);
    const value: PayloadValue | undefined = entry?.[1];
    if (typeof value === "string") return [...value].map((c) => (c === "1" ? 1 : 0));
    if (typeof value === "number") return [value];
    throw new LdpValueError("not_encodable", { metric: fit.field });
  }
  const i = prepared as number;
  return fit.vdaf === "Prio3SumVec" ? Array.from({ length: fit.length }, (_, j) => (j === i ? 1 : 0)) : [i];
}

/** A report's time (Python's `DapEncoder.report_time`): `now` clamped into the charged window, rounded down to the
 * task's precision. */
export function reportTime(now: number, window: number, windowSeconds: number, precision: number): number {
  const t = Math.min(Math.max(Math.floor(now), window * windowSeconds), window * windowSeconds + windowSeconds - 1);
  return t - (t % precision);
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The outbox line of a DAP report: `{"task_id":"…","report":"…"}` (base64url), as Python's. */
export function dapLine(taskId: string, report: Uint8Array): string {
  return `{"task_id":${JSON.stringify(taskId)},"report":"${base64url(report)}"}`;
}

/** The task ID and the report's bytes of an outbox line; `null` when the line is not a DAP report's. */
export function parseDapLine(line: string): { taskId: string; report: Uint8Array } | null {
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch {
    return null;
  }
  const d = doc as { task_id?: unknown; report?: unknown };
  if (typeof d !== "object" || d === null || typeof d.task_id !== "string" || typeof d.report !== "string") return null;
  const bin = atob(d.report.replace(/-/g, "+").replace(/_/g, "/"));
  return { taskId: d.task_id, report: Uint8Array.from(bin, (c) => c.charCodeAt(0)) };
}
