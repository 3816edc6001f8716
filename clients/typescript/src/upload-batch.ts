/**
 * The batches of an upload (`ldp/client/uploader.py`): the next one pinned in the device's state before it is first
 * sent (`prepareUpload`), so that a retry, a crash or a lost answer resends the same lines under the same id
 * (`batchId`), which the collector stores once; dropped from the outbox once acknowledged (`acknowledge`).
 */
import { fromHex, toHex } from "./bytes.js";
import { HmacSha256 } from "./hash/sha256.js";
import { CollectionSpec } from "./spec.js";
import { live, outboxBytes } from "./state.js";
import type { DeviceState, OutboxItem, StateStore, StoreTransaction } from "./state.js";
import { MAX_ANSWER, checkAnswer, readReply } from "./upload-answer.js";

const BATCH_TAG = new TextEncoder().encode("ldp/client/batch-id/v1\0");

/** The most bytes of lines in one batch pinned for a keepalive request (browsers allow 64 KiB in flight). */
export const KEEPALIVE_BYTES = 60 * 1024;

/** `batch_id`: HMAC-SHA256(salt, tag ‖ ids joined by "," ‖ 0x00 ‖ lines joined by "\n"), the first 32 hex digits. */
export function batchId(salt: Uint8Array, ids: readonly number[], lines: readonly string[]): string {
  const enc = new TextEncoder();
  return toHex(new HmacSha256(salt).mac(BATCH_TAG, enc.encode(ids.join(",")), new Uint8Array(1),
    enc.encode(lines.join("\n")))).slice(0, 32);
}

/** `text` gzipped where the platform has `CompressionStream`, else `null` (the body is sent as it is). */
async function gzipped(text: string): Promise<Uint8Array | null> {
  const CS = (globalThis as { CompressionStream?: new (f: string) => TransformStream }).CompressionStream;
  if (CS === undefined) return null;
  const stream = new Blob([text]).stream().pipeThrough(new CS("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A batch pinned in the device's state: its id and its reports. */
interface Pinned {
  id: string;
  items: OutboxItem[];
}

/** Unix seconds from which the next batch may be sent (Python's `next_upload_at`): the last acknowledged upload plus
 * `upload.min_interval_seconds`; `-Infinity` before the first upload, `Infinity` while the device opted out. */
export function nextUploadAt(state: DeviceState, spec: CollectionSpec): number {
  if (state.optedOut) return Infinity;
  return state.lastUpload === null ? -Infinity : state.lastUpload + spec.upload.min_interval_seconds;
}

/** Pin the next batch: the one already pinned, else up to `max_batch` (and `limit`) of the oldest reports (`null`:
 * none, or the upload interval has not passed). */
export function pin(tx: StoreTransaction, spec: CollectionSpec, now: number, limit = Infinity, maxBytes = Infinity): Pinned | null {
  const state = live(tx);
  if (state.batch === null) {
    const interval = spec.upload.min_interval_seconds;
    if (!tx.pending || (state.lastUpload !== null && now < state.lastUpload + interval)) return null;
    let items = tx.head(Math.min(spec.upload.max_batch, limit));
    const dap = items.findIndex((i) => i.line.startsWith('{"task_id"')); // a two-aggregator report: its leader's
    if (dap >= 0) items = items.slice(0, dap);
    if (!items.length) return null;
    if (maxBytes !== Infinity) {
      const encoder = new TextEncoder();
      let bytes = 0, n = 0;
      while (n < items.length && (n === 0 || bytes + encoder.encode(items[n].line).length + 1 <= maxBytes)) {
        bytes += encoder.encode(items[n].line).length + 1;
        n++;
      }
      items = items.slice(0, n);
    }
    state.batch = { id: batchId(fromHex(state.salt), items.map((i) => i.id), items.map((i) => i.line)), count: items.length };
    return { id: state.batch.id, items };
  }
  return { id: state.batch.id, items: tx.head(state.batch.count) };
}

/** A batch pinned for upload, with its request: what `TelemetryClient.uploadWhenHidden` prepares ahead so that it
 * can send synchronously while the page goes. */
export interface PreparedUpload {
  readonly id: string;
  readonly items: readonly OutboxItem[];
  readonly body: string | Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
}

/** Pins the next batch (at most `maxBytes` of lines) in `store` and builds its request: `null` when nothing is due
 * (an empty outbox, or the upload interval has not passed). */
export async function prepareUpload(store: StateStore, spec: CollectionSpec, token: string, now: number,
  options: { gzip?: boolean; maxBytes?: number } = {}): Promise<PreparedUpload | null> {
  const batch = await store.transact((tx) => pin(tx, spec, now, Infinity, options.maxBytes ?? Infinity),
    { head: spec.upload.max_batch });
  if (batch === null) return null;
  const text = batch.items.map((i) => i.line).join("\n") + "\n";
  const gz = options.gzip === false ? null : await gzipped(text);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, "content-type": "application/x-ndjson",
    "ldp-batch-id": batch.id };
  if (gz !== null) headers["content-encoding"] = "gzip";
  return { id: batch.id, items: batch.items, body: gz ?? text, headers };
}

/** Drops an acknowledged batch from the outbox and counts its reports as uploaded: the number dropped (0 when
 * another uploader, a second tab, acknowledged it meanwhile). */
export function acknowledge(store: StateStore, batch: { id: string; items: readonly OutboxItem[] }, now: number): Promise<number> {
  return store.transact((tx) => {
    const state = live(tx);
    if (state.batch?.id !== batch.id) return 0;
    tx.dropHead(state.batch.count);
    for (const item of batch.items) state.uploaded[item.metric] = (state.uploaded[item.metric] ?? 0) + 1;
    if (state.outboxBytes !== undefined) state.outboxBytes = Math.max(0, state.outboxBytes - outboxBytes(batch.items));
    state.batch = null;
    state.lastUpload = Math.max(now, state.lastUpload ?? now); // as the ledger's clock, it never goes back
    return batch.items.length;
  });
}

/**
 * Sends `batch` (prepared by `prepareUpload`; `null`: nothing) to `url` at once with `fetch(..., {keepalive: true})`,
 * which outlives the page: what `TelemetryClient.uploadWhenHidden` does as the page goes. If the page lives on, a 2xx
 * answer is checked and the batch acknowledged in `store` at `clock()`. Under the request's deadline, `seconds`, as
 * any request of `upload` (the timer dies with the page: a request still out then goes on, keepalive): a collector
 * that never answers cannot hold the sender, and so every later send.
 */
export function sendKeepalive(doFetch: typeof globalThis.fetch, url: string, batch: PreparedUpload | null,
  seconds: number, store: StateStore, clock: () => number): Promise<void> {
  const signal = AbortSignal.timeout(Math.ceil(seconds * 1000));
  if (batch === null) return Promise.resolve();
  return doFetch(url, { method: "POST", headers: batch.headers, body: batch.body as BodyInit, redirect: "manual",
    keepalive: true, signal }).then(async (response) => {
    const body = await readReply(response, MAX_ANSWER, signal);
    if (response.status >= 200 && response.status < 300) {
      checkAnswer(body, batch.id, batch.items.length);
      await acknowledge(store, batch, clock());
    }
  });
}
