/**
 * The uploader (`ldp/client/uploader.py`): sends a device's outbox to an `ldp serve` collector, `POST url` per
 * batch with `Authorization: Bearer <token>`, `Content-Type: application/x-ndjson`, `Ldp-Batch-Id` and, where the
 * platform has `CompressionStream`, `Content-Encoding: gzip`.
 *
 * * The batch (its outbox ids and id) is pinned in the device's state before it is first sent, so a retry, a crash
 *   or a lost answer resends the same lines under the same id, and the collector stores them once.
 * * A 2xx acknowledges the batch only when its JSON answer is sane (`checkAnswer`: its batch id, counts that add up
 *   to the lines sent); any other 2xx is an `UploadProtocolError`, acknowledging nothing.
 * * 413 splits the batch in two (nothing was stored); 429/503 wait `Retry-After` (delta-seconds or an HTTP date,
 *   capped at `maxDelay`); no answer within `timeout`, network errors, 408 and other 5xx retry with exponential
 *   backoff and full jitter (uniform in [0, min(maxDelay, 2^(attempt-1))] s); `maxAttempts` tries per batch in all;
 *   any other status is an `UploadError`. Redirects are refused (they would carry the token elsewhere).
 *
 * Nothing here logs a line or the token.
 */
import { UploadError, UploadProtocolError } from "./errors.js";
import { fromHex } from "./bytes.js";
import { hmacSha256 } from "./hash/sha256.js";
import { toHex } from "./bytes.js";
import { CollectionSpec } from "./spec.js";
import { DeviceState, StateStore } from "./state.js";

const BATCH_TAG = new TextEncoder().encode("ldp/client/batch-id/v1\0");
const MAX_ANSWER = 1 << 16;
const MAX_BATCH = 1 << 20;

/** What one `upload` call did (Python's `UploadResult`). */
export interface UploadResult {
  batches: number;
  acknowledged: number;
  accepted: number;
  rejected: Record<string, number>;
  duplicates: number;
  stopped: "empty" | "interval" | "deadline" | "error";
  nextUploadAt: number;
}

/** How to upload: seconds per request (`timeout`), tries per batch, the backoff cap, gzip; `fetch`, `sleep`,
 * `clock` and `random` are for tests. */
export interface UploadOptions {
  readonly timeout?: number;
  readonly maxAttempts?: number;
  readonly maxDelay?: number;
  readonly gzip?: boolean;
  readonly fetch?: typeof globalThis.fetch;
  readonly sleep?: (seconds: number) => Promise<void>;
  readonly clock?: () => number;
  readonly random?: () => number;
}

/** `batch_id`: HMAC-SHA256(salt, tag ‖ ids joined by "," ‖ 0x00 ‖ lines joined by "\n"), the first 32 hex digits. */
export function batchId(salt: Uint8Array, ids: readonly number[], lines: readonly string[]): string {
  const enc = new TextEncoder();
  const parts = [BATCH_TAG, enc.encode(ids.join(",")), new Uint8Array([0]), enc.encode(lines.join("\n"))];
  const msg = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    msg.set(p, at);
    at += p.length;
  }
  return toHex(hmacSha256(salt, msg)).slice(0, 32);
}

/** Seconds to wait from a `Retry-After` value (delta-seconds or an HTTP date; a past date gives 0), else `null`. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^[0-9]+$/.test(v)) return Number(v);
  const when = Date.parse(v);
  return Number.isNaN(when) ? null : Math.max(0, when / 1000 - now);
}

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length <= 40 ? text : text.slice(0, 37) + "...";
}

function count(answer: Record<string, unknown>, key: string): number {
  const v = answer[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new Error(`${key} is ${show(v)}, not an integer >= 0`);
  return v;
}

/** `check_answer`: the collector's 2xx answer to batch `batch` of `sent` lines if it is sane, else an `Error` saying
 * what is wrong. */
export function checkAnswer(body: string, batch: string, sent: number): Record<string, unknown> {
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch (err) {
    throw new Error(`the answer is not JSON (${String((err as Error).message).slice(0, 80)})`);
  }
  if (answer === null || typeof answer !== "object" || Array.isArray(answer)) throw new Error("the answer is not a JSON object");
  const a = answer as Record<string, unknown>;
  if ("batch_id" in a && a.batch_id !== batch) throw new Error(`the answer names batch ${show(a.batch_id)}, not ${batch}`);
  const duplicate = "duplicate" in a ? a.duplicate : false;
  if (typeof duplicate !== "boolean") throw new Error(`duplicate is ${show(duplicate)}, not a boolean`);
  const counted = !(duplicate && !("accepted" in a) && !("rejected" in a));
  const needed = counted ? ["batch_id", "accepted", "rejected", "lines"] : ["batch_id", "lines"];
  const missing = needed.filter((k) => !(k in a));
  if (missing.length) throw new Error(`the answer lacks ${missing.join(", ")}`);
  const lines = count(a, "lines");
  if (counted) {
    const accepted = count(a, "accepted");
    const rejected = a.rejected;
    if (rejected === null || typeof rejected !== "object" || Array.isArray(rejected)) {
      throw new Error(`rejected is ${show(rejected)}, not an object of counts by reason`);
    }
    let total = 0;
    for (const reason of Object.keys(rejected)) {
      if (!(reason.length > 0 && reason.length <= 100 && !/[\p{C}]/u.test(reason))) throw new Error(`rejected names reason ${show(reason)}`);
      total += count(rejected as Record<string, unknown>, reason);
    }
    if (accepted + total !== lines) throw new Error(`accepted (${accepted}) + rejected (${total}) != lines (${lines})`);
  }
  if (!(duplicate ? sent <= lines && lines <= MAX_BATCH : lines === sent)) {
    throw new Error(`the answer counts ${lines} line(s); ${sent} were sent`);
  }
  return a;
}

async function gzipped(text: string): Promise<Uint8Array | null> {
  const CS = (globalThis as { CompressionStream?: new (f: string) => TransformStream }).CompressionStream;
  if (CS === undefined) return null;
  const stream = new Blob([text]).stream().pipeThrough(new CS("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

interface Pinned {
  id: string;
  ids: number[];
  lines: string[];
}

/** Pin the next batch: the one already pinned, else up to `max_batch` of the oldest lines (`null`: none, or the
 * upload interval has not passed). */
function pin(state: DeviceState, spec: CollectionSpec, now: number, limit?: number): Pinned | null {
  if (state.batch === null) {
    const interval = spec.upload.min_interval_seconds;
    if (!state.outbox.length || (state.lastUpload !== null && now < state.lastUpload + interval)) return null;
    const items = state.outbox.slice(0, Math.min(spec.upload.max_batch, limit ?? Infinity));
    const ids = items.map((i) => i.id);
    state.batch = { id: batchId(fromHex(state.salt), ids, items.map((i) => i.line)), ids };
  }
  const wanted = new Set(state.batch.ids);
  const lines = state.outbox.filter((i) => wanted.has(i.id)).map((i) => i.line);
  return { id: state.batch.id, ids: state.batch.ids, lines };
}

/** Upload `store`'s outbox (see the module). */
export async function upload(store: StateStore, spec: CollectionSpec, url: string, token: string,
  options: UploadOptions = {}): Promise<UploadResult> {
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const sleep = options.sleep ?? ((s: number) => new Promise<void>((r) => setTimeout(r, s * 1000)));
  const clock = options.clock ?? (() => Date.now() / 1000);
  const random = options.random ?? Math.random;
  const timeout = options.timeout ?? 30, maxAttempts = options.maxAttempts ?? 8, maxDelay = options.maxDelay ?? 300;
  const result: UploadResult = { batches: 0, acknowledged: 0, accepted: 0, rejected: {}, duplicates: 0, stopped: "empty",
    nextUploadAt: -Infinity };
  const fail = (message: string, status: number | null, reason: string): never => {
    result.stopped = "error";
    throw new UploadError(message, { status, reason, result });
  };
  for (;;) {
    const batch = await store.update((s) => {
      const state = s as DeviceState;
      return [state, pin(state, spec, clock())];
    });
    if (batch === null) {
      const s = await store.update((st) => [st as DeviceState, st as DeviceState]);
      if (s.outbox.length) {
        result.stopped = "interval";
        result.nextUploadAt = (s.lastUpload ?? 0) + spec.upload.min_interval_seconds;
      }
      return result;
    }
    const text = batch.lines.join("\n") + "\n";
    const gz = options.gzip === false ? null : await gzipped(text);
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, "content-type": "application/x-ndjson",
      "ldp-batch-id": batch.id };
    if (gz !== null) headers["content-encoding"] = "gzip";
    let answered = false;
    for (let attempt = 1; attempt <= maxAttempts && !answered; attempt++) {
      let response: Response;
      try {
        response = await doFetch(url, { method: "POST", headers, body: (gz ?? text) as BodyInit, redirect: "manual",
          signal: AbortSignal.timeout(timeout * 1000) });
      } catch {
        if (attempt < maxAttempts) await sleep(random() * Math.min(maxDelay, 2 ** (attempt - 1)));
        continue;
      }
      const status = response.status;
      if (response.type === "opaqueredirect" || (status >= 300 && status < 400)) {
        fail(`the collector redirected the upload (refused: it would carry the token elsewhere)`, status || null, "redirect");
      }
      const body = (await response.text()).slice(0, MAX_ANSWER);
      if (status >= 200 && status < 300) {
        let a: Record<string, unknown>;
        try {
          a = checkAnswer(body, batch.id, batch.lines.length);
        } catch (err) {
          result.stopped = "error";
          throw new UploadProtocolError(`the collector's answer to batch ${batch.id} is not sane: ${(err as Error).message}`,
            { status, reason: "bad_answer", result });
        }
        const acked = await store.update((s) => {
          const state = s as DeviceState;
          const ids = new Set(batch.ids);
          const before = state.outbox.length;
          for (const item of state.outbox) {
            if (ids.has(item.id)) state.uploaded[item.metric] = (state.uploaded[item.metric] ?? 0) + 1;
          }
          state.outbox = state.outbox.filter((i) => !ids.has(i.id));
          state.batch = null;
          state.lastUpload = clock();
          return [state, before - state.outbox.length];
        });
        result.batches += 1;
        result.acknowledged += acked;
        if (a.duplicate === true) result.duplicates += 1;
        if (typeof a.accepted === "number") result.accepted += a.accepted;
        for (const [k, v] of Object.entries((a.rejected ?? {}) as Record<string, number>)) {
          result.rejected[k] = (result.rejected[k] ?? 0) + v;
        }
        answered = true;
      } else if (status === 413) {
        if (batch.lines.length <= 1) fail("the collector refused a one-line batch as too large", status, "too_large");
        await store.update((s) => {
          const state = s as DeviceState;
          state.batch = null;
          return [state, pin(state, spec, Infinity, Math.ceil(batch.lines.length / 2))]; // the interval does not apply to a split
        });
        answered = true;
      } else if (status === 429 || status === 503) {
        const wait = parseRetryAfter(response.headers.get("retry-after"), clock());
        if (attempt < maxAttempts) await sleep(Math.min(maxDelay, wait ?? random() * Math.min(maxDelay, 2 ** (attempt - 1))));
      } else if (status === 408 || status >= 500) {
        if (attempt < maxAttempts) await sleep(random() * Math.min(maxDelay, 2 ** (attempt - 1)));
      } else {
        let reason = `HTTP ${status}`;
        try {
          const e = JSON.parse(body) as { error?: unknown };
          if (typeof e.error === "string") reason = e.error.slice(0, 100);
        } catch {
          /* not JSON: the status says it */
        }
        fail(`the collector refused batch ${batch.id}: ${reason}`, status, reason);
      }
    }
    if (!answered) fail(`batch ${batch.id} was not delivered in ${maxAttempts} attempts`, null, "undelivered");
  }
}
