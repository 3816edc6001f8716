/**
 * The spec's `poplar1` string metrics on the device (issue 89, item 3; Python's `ldp/client/dap.py`): a metric's
 * Poplar1 task (a `Poplar1TaskFile`, made by `poplar1Task` from the task file, whose cryptography is the native
 * client's `Poplar1ReportBuilder` compiled to WebAssembly: Poplar1 of VDAF draft 18 through the `prio` crate, HPKE
 * through the `hpke` crate), checked against the spec; and the outbox line of a string, a sealed DAP-09 report that
 * the two-aggregator upload sends to the task's leader as it sends a Prio3 report.
 *
 * A value is checked and prepared by the `poplar1` kind's `measurementBytes` (bits/8 bytes, NUL-padded) before any
 * charge; the report shares those bytes, the first bit the most significant of the first byte. The charge is the
 * spec's `budget.per_report`, the per-window cap k such charges (k the task's `reports_per_window`), as for the Prio3
 * metrics without local noise.
 */
import type { TwoAggregatorMetric } from "../dap-hooks.js";
import type { Poplar1Params } from "../protocols/poplar1.js";
import type { CollectionSpec } from "../spec.js";
import { dapLine, deviceWindowCap, reportCharge, reportTime, reportsPerWindow, sameTask } from "./metric.js";

/** A Poplar1 task as `poplar1Task` gives it (`ldp-telemetry-client/dap`): the members of its task file a device
 * uses, and `report`, which seals a measurement's DAP-09 report (its randomness from `crypto.getRandomValues`). */
export interface Poplar1TaskFile {
  /** The task ID, unpadded base64url (as in the leader's URL). */
  readonly taskId: string;
  readonly metric: string;
  readonly leaderUrl: string;
  readonly windowSeconds: number;
  readonly timePrecision: number;
  /** The most reports a device sends a window (`undefined`: the spec caps none, one assumed). */
  readonly reportsPerWindow: number | undefined;
  /** The bit length of a measurement (the spec's `bits`). */
  readonly bits: number;
  /** The most candidate prefixes of one level (the spec's `max_candidates`). */
  readonly maxCandidates: number;
  /** The report of `packed` (bits/8 bytes, `Poplar1Params.measurementBytes`) made at `time` (Unix seconds, rounded
   * down to the task's precision): the body of `PUT {leaderUrl}/tasks/{taskId}/reports`. */
  report(packed: Uint8Array, time: number): Uint8Array;
}

/** Whether `params` are of the `poplar1` kind. */
export function isPoplar1(params: { readonly protocol: string }): params is Poplar1Params {
  return params.protocol === "poplar1";
}

/** Throws a `RangeError` naming the first member in which `task` is not `metric`'s Poplar1 task under `spec` (its
 * name, window, bit length, candidates a level, reports a window), as Python's `device_task`. */
export function checkPoplar1Task(spec: CollectionSpec, metric: string, task: Poplar1TaskFile): void {
  const params = spec.metric(metric).params as Poplar1Params;
  sameTask(spec, metric, [
    ["metric", metric, task.metric], ["window_seconds", spec.windowSeconds, task.windowSeconds],
    ["bits", params.bits, task.bits], ["max_candidates", params.maxCandidates, task.maxCandidates],
    ["reports_per_window", reportsPerWindow(spec, metric), task.reportsPerWindow],
  ]);
}

/** The client's hooks of a `poplar1` metric with its task (checked first): the spec's charge and the task's cap, and
 * the outbox line of a prepared value (`Poplar1Params.measurementBytes`' bytes) sealed at the recording time clamped
 * into the charged window. */
export function poplar1Metric(spec: CollectionSpec, metric: string, task: Poplar1TaskFile): TwoAggregatorMetric {
  checkPoplar1Task(spec, metric, task);
  return {
    charge: reportCharge(spec, metric),
    windowCap: deviceWindowCap(spec, metric)!,
    line: (_enc, prepared, now, window) => dapLine(task.taskId, task.report(prepared as Uint8Array,
      reportTime(now, window, task.windowSeconds, task.timePrecision))),
  };
}
