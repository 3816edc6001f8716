/**
 * The `lite` entry (`ldp-telemetry-client/lite`): the whole client — core, spec, state stores, client runtime,
 * uploader — without any protocol. A page names the protocols its spec uses, and a bundler ships only those:
 *
 * ```ts
 * import { CollectionSpec, IndexedDBStore, TelemetryClient } from "ldp-telemetry-client/lite";
 * import { grr } from "ldp-telemetry-client/protocols";
 * const spec = CollectionSpec.fromDict(specJson, { protocols: [grr] });
 * ```
 */
export * from "./core.js";
export { CollectionSpec } from "./spec.js";
export { IndexedDBStore } from "./indexeddb-store.js";
export { MemoryStore } from "./state.js";
export type { DeviceState, OutboxItem, StateStore, StoreTransaction, TransactOptions } from "./state.js";
export { DEFAULT_MAX_OUTBOX_BYTES, TelemetryClient, metricSecret } from "./client.js";
export type { ClientOptions, Counts, MetricValue } from "./client.js";
export { KEEPALIVE_BYTES, batchId } from "./upload-batch.js";
export { checkAnswer, parseRetryAfter, readReply } from "./upload-answer.js";
export { upload } from "./uploader.js";
export { checkEndpoints } from "./endpoints.js";
export type { Endpoint, Endpoints } from "./endpoints.js";
export { VALUE_KINDS } from "./types.js";
export type { MetricValues, SpecShape, ValueKind, ValueOf } from "./types.js";
export type { UploadOptions, UploadResult } from "./uploader.js";
