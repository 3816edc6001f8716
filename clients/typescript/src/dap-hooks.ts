/**
 * What the client runtime needs of the two-aggregator metrics (`ldp-telemetry-client/dap`, `dap/index.ts`), as
 * types only: the core bundle carries no code of that mode, and a page that never records such a metric never loads
 * its WebAssembly. `twoAggregatorMetrics` of the `dap` entry makes a `TwoAggregatorMetrics`; `TelemetryClient.open`
 * takes it as `ClientOptions.twoAggregator`.
 */
import type { Encoder } from "./encoders/base.js";
import type { PrivacyCost } from "./params/base.js";
import type { CollectionSpec } from "./spec.js";
import type { StateStore } from "./state.js";
import type { UploadOptions, UploadResult } from "./uploader.js";

/** One two-aggregator metric: what a report costs the ledger, its per-window cap on the device (its task's k reports),
 * and its outbox line (the measurement of a prepared value, sealed to its task's aggregators). */
export interface TwoAggregatorMetric {
  readonly charge: PrivacyCost;
  readonly windowCap: PrivacyCost;
  line(enc: Encoder, prepared: unknown, now: number, window: number): string;
}

/** The two-aggregator metrics of a spec, and the upload of their reports to their leaders. */
export interface TwoAggregatorMetrics {
  readonly metrics: ReadonlyMap<string, TwoAggregatorMetric>;
  /** Send the reports at the head of the outbox, oldest first, each to its task's leader, until the head is a report
   * for the ingest service, the outbox is empty or the call's deadline passes. */
  upload(store: StateStore, spec: CollectionSpec, options: UploadOptions): Promise<UploadResult>;
}
