/**
 * The public exports of the ldp TypeScript client (browser-safe: nothing here imports `node:*`; the Node file store
 * is exported by `./node.js`): the core (`./core.js`).
 */
export * from "./core.js";
export { IndexedDBStore, MemoryStore } from "./state.js";
export type { DeviceState, StateStore } from "./state.js";
export { TelemetryClient, metricSecret } from "./client.js";
export type { ClientOptions } from "./client.js";
export { batchId, checkAnswer, parseRetryAfter, upload } from "./uploader.js";
export type { UploadOptions, UploadResult } from "./uploader.js";
