/**
 * The uploader (`ldp/client/uploader.py`): sends a device's outbox to an `ldp serve` collector, `POST url` per
 * batch with `Authorization: Bearer <token>`, `Content-Type: application/x-ndjson`, `Ldp-Batch-Id` and, where the
 * platform has `CompressionStream`, `Content-Encoding: gzip`.
 *
 * * The batch (its outbox ids and id) is pinned in the device's state before it is first sent, so a retry, a crash
 *   or a lost answer resends the same lines under the same id, and the collector stores them once.
 * * A 2xx acknowledges the batch only when its JSON answer is sane (`checkAnswer`: its batch id, counts that add up
 *   to the lines sent); any other 2xx is an `UploadProtocolError`, acknowledging nothing.
 * * 413 splits the batch in two (nothing was stored); 429 waits `Retry-After` (delta-seconds or an HTTP date,
 *   capped at `maxDelay`); no answer within `timeout`, network errors, 408, 503 and other 5xx retry, after
 *   `Retry-After` (503) or exponential backoff with full jitter (uniform in [0, min(maxDelay, 2^(n-1))] s for the
 *   part's n-th wait); `maxAttempts` tries per batch in all; any other status is an `UploadError`. Redirects are
 *   refused (they would carry the token elsewhere).
 * * Several endpoints (`endpoints.ts`, issue 50): each call starts with the first; the failures that retry move the
 *   next try of the part to the next endpoint at once, and the uploader waits only when every endpoint has failed in
 *   a row; a part goes to the endpoint that acknowledged the last one. 429 and 413 stay on the endpoint; the other
 *   refusals stop (every replica would answer the same). `maxAttempts` counts the tries on every endpoint.
 * * The reply is read whole under the request's deadline, and at most 64 KiB of it (`readReply`): a body that
 *   trickles in past the deadline or breaks off is retried like a request that failed; a longer one is cut there
 *   (and a 2xx answer cut so is not sane).
 * * `callTimeout` bounds the whole call: no request, wait or retry goes past it; the parts not sent by then stay in
 *   the outbox (the one in flight stays pinned, resent under its id by the next call), and the result says
 *   `stopped: "deadline"`.
 * * One upload at a time per outbox (issue 73, as the Python and Kotlin clients): the calls on one outbox in this
 *   JavaScript realm take turns, in the order they were made, whichever clients and stores make them
 *   (`StateStore.outboxKey`). A call that finds another one running waits for it, at most its own `callTimeout` in
 *   all, then uploads what is still pending: the parts the other call sent are not sent again. A call whose deadline
 *   passes while it waits returns `stopped: "deadline"` having sent nothing.
 *
 * No report line and no token is ever logged: the one log line (`UploadOptions.log`, on a switch of endpoint) names
 * the two hosts and the status or kind of failure.
 *
 * The batches (pinned, prepared, acknowledged) are `upload-batch.ts`; what the collector answers, `upload-answer.ts`.
 */
import { UploadError, UploadProtocolError } from "./errors.js";
import { CollectionSpec } from "./spec.js";
import { Endpoints, Rotation, checkEndpoints } from "./endpoints.js";
import { live } from "./state.js";
import type { StateStore } from "./state.js";
import { MAX_ANSWER, checkAnswer, parseRetryAfter, readReply } from "./upload-answer.js";
import { KEEPALIVE_BYTES, PreparedUpload, acknowledge, nextUploadAt, pin, prepareUpload } from "./upload-batch.js";

/** What one `upload` call did (Python's `UploadResult`). */
export interface UploadResult {
  batches: number;
  acknowledged: number;
  accepted: number;
  rejected: Record<string, number>;
  duplicates: number;
  stopped: "empty" | "interval" | "deadline" | "error";
  /** When the next batch may go, as the store says when the call ends (`TelemetryClient.nextUploadAt`): the last
   * acknowledged upload plus `upload.min_interval_seconds`; `-Infinity` before the first, `Infinity` opted out. */
  nextUploadAt: number;
}

/** How to upload: seconds per request (`timeout`, from sending to the end of the reply: default 30) and for the whole
 * call (`callTimeout`: default none), tries per batch (on every endpoint: default 8), the backoff cap (`maxDelay`
 * seconds: default 300), gzip, where log lines go; `fetch`, `sleep`, `clock` and `random` are for tests. */
export interface UploadOptions {
  readonly timeout?: number;
  readonly callTimeout?: number | null;
  readonly maxAttempts?: number;
  readonly maxDelay?: number;
  readonly gzip?: boolean;
  readonly fetch?: typeof globalThis.fetch;
  readonly sleep?: (seconds: number) => Promise<void>;
  readonly clock?: () => number;
  readonly random?: () => number;
  /** Where the uploader's info lines go (default: nowhere): one per switch of endpoint, naming the two hosts and
   * the reason (`HTTP 503`, `no answer within 30 s`, `network error`), never a report line or the token. */
  readonly log?: (line: string) => void;
  /** Send with `fetch(..., {keepalive: true})` (the request outlives the page) and pin batches of at most
   * `KEEPALIVE_BYTES` of lines; what `TelemetryClient.uploadWhenHidden` sets. */
  readonly keepalive?: boolean;
}

/** The end of the last upload call waiting or running, per outbox (`outboxKey`): a call's turn comes when it ends. */
const turns = new Map<unknown, Promise<void>>();

/** Waits for the upload calls on outbox `key` made before this one, at most `seconds` (`Infinity`: as long as they
 * take): the function that ends this call's turn, or `null` when `seconds` passed first (the next call's turn then
 * comes when those before this one end). */
async function takeTurn(key: unknown, seconds: number): Promise<(() => void) | null> {
  const before = turns.get(key) ?? Promise.resolve();
  let end!: () => void;
  const mine = new Promise<void>((r) => (end = r));
  const tail = before.then(() => mine);
  turns.set(key, tail);
  void tail.then(() => turns.get(key) === tail && turns.delete(key));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ready = await Promise.race([before.then(() => true),
    new Promise<boolean>((r) => seconds < Infinity && (timer = setTimeout(r, seconds * 1000, false)))]);
  clearTimeout(timer);
  if (!ready) end();
  return ready ? end : null;
}

const seconds = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && v > 0;

/** The token and the options of an upload call, refused (a `RangeError`) before anything
 * is sent: a token that is not printable ASCII without spaces, timeouts that are not finite seconds > 0, a negative
 * backoff cap, attempts that are not a whole number ≥ 1. */
export function checkUploadOptions(token: string, options: UploadOptions): void {
  if (typeof token !== "string" || !/^[\x21-\x7e]+$/.test(token)) {
    throw new RangeError("upload token must be a non-empty printable ASCII string without spaces");
  }
  const { timeout, callTimeout, maxDelay, maxAttempts } = options;
  if (timeout !== undefined && !seconds(timeout)) {
    throw new RangeError("timeout (seconds for one request, from sending it to the end of its answer) must be a " +
      `finite number > 0, got ${String(timeout)}`);
  }
  if (callTimeout !== undefined && callTimeout !== null && !seconds(callTimeout)) {
    throw new RangeError("callTimeout (seconds for the whole upload call) must be null or a finite number > 0, " +
      `got ${String(callTimeout)}`);
  }
  if (maxDelay !== undefined && !(typeof maxDelay === "number" && maxDelay >= 0)) {
    throw new RangeError(`maxDelay must be a number >= 0, got ${String(maxDelay)}`);
  }
  if (maxAttempts !== undefined && !(Number.isInteger(maxAttempts) && maxAttempts >= 1)) {
    throw new RangeError(`maxAttempts must be a whole number >= 1, got ${String(maxAttempts)}`);
  }
}

/** Counts in `result` a sane answer `a` to a batch of which the outbox dropped `acked` reports. */
function tally(result: UploadResult, a: Record<string, unknown>, acked: number): void {
  result.batches += 1;
  result.acknowledged += acked;
  if (a.duplicate === true) result.duplicates += 1;
  if (typeof a.accepted === "number") result.accepted += a.accepted;
  for (const [k, v] of Object.entries((a.rejected ?? {}) as Record<string, number>)) {
    result.rejected[k] = (result.rejected[k] ?? 0) + v;
  }
}

/** After a 413 (nothing was stored): the pinned batch `batch` unpinned, and the first half of its reports (at most
 * `maxBytes` of lines) pinned in its place; the upload interval does not apply to a split. */
function pinHalf(store: StateStore, spec: CollectionSpec, batch: PreparedUpload, maxBytes: number): Promise<void> {
  const half = Math.ceil(batch.items.length / 2);
  return store.transact((tx) => {
    const state = live(tx);
    if (state.batch?.id === batch.id) {
      state.batch = null;
      pin(tx, spec, Infinity, half, maxBytes);
    }
  }, { head: half });
}

/** The reason a collector gave for refusing a batch: its JSON answer's `error` (at most 100 characters), else the
 * status. */
function refusalReason(status: number, body: string): string {
  try {
    const e = JSON.parse(body) as { error?: unknown };
    if (typeof e.error === "string") return e.error.slice(0, 100);
  } catch {
    /* not JSON: the status says it */
  }
  return `HTTP ${status}`;
}

/** Upload `store`'s outbox to `endpoints` (one URL, or a list tried as the module says; a bad list, token or option
 * is a `RangeError` before anything is sent) until it is empty, the upload interval stops it or `callTimeout`
 * passes. One call at a time per outbox (`store.outboxKey`): a call waits for those made before it, at most its
 * `callTimeout` (then it returns `stopped: "deadline"`, having sent nothing). Do not call it from the `fetch` or
 * `sleep` given to it: that call would wait for the one it is part of.
 *
 * Size exception: the call's steps (`end`, `failure`, `pause`, `failOver`, the parts' loop) share its deadline, its
 * options with their defaults, the endpoints' rotation and the result as closures over its locals, which a minifier
 * shortens to a letter each. Split into functions or a class, that state becomes an object whose property names stay
 * whole: the one-metric page of `npm run size` grew by 84 to 172 bytes gzipped (a class, functions of a call object,
 * a factory of the closures), past its budget. What needs none of that state is out (`tally`, `pinHalf`,
 * `refusalReason`, `prepareUpload`, `checkAnswer`, `readReply`).
 */
export async function upload(store: StateStore, spec: CollectionSpec, endpoints: Endpoints, token: string,
  options: UploadOptions = {}): Promise<UploadResult> {
  const ring = new Rotation(checkEndpoints(endpoints));
  checkUploadOptions(token, options);
  const monotonic = () => performance.now() / 1000;
  const callEnd = options.callTimeout == null ? Infinity : monotonic() + options.callTimeout;
  const left = () => callEnd - monotonic();
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const sleep = options.sleep ?? ((s: number) => new Promise<void>((r) => setTimeout(r, s * 1000)));
  const clock = options.clock ?? (() => Date.now() / 1000);
  const random = options.random ?? Math.random;
  const timeout = options.timeout ?? 30, maxAttempts = options.maxAttempts ?? 8, maxDelay = options.maxDelay ?? 300;
  const result: UploadResult = { batches: 0, acknowledged: 0, accepted: 0, rejected: {}, duplicates: 0, stopped: "empty",
    nextUploadAt: -Infinity };
  /** The call ends, `stopped` (default: `"interval"` if reports wait, else `"empty"`): the result, with when the next
   * batch may go as the store says now (Python's `next_upload_at`). */
  const end = async (stopped?: UploadResult["stopped"]): Promise<UploadResult> => {
    const [pending, next] = await store.transact((tx) => [tx.pending, nextUploadAt(live(tx), spec)], { readOnly: true });
    result.stopped = stopped ?? (pending ? "interval" : "empty");
    result.nextUploadAt = next;
    return result;
  };
  /** The call fails: the error to throw, with the result so far. */
  const failure = async (message: string, status: number | null, reason: string,
    Kind: typeof UploadError = UploadError): Promise<UploadError> => {
    result.stopped = "error";
    await end("error").catch(() => undefined);
    return new Kind(message, { status, reason, result });
  };
  const backoff = (n: number) => random() * Math.min(maxDelay, 2 ** (n - 1));
  /** Wait `delay` seconds, unless that would pass the call's deadline: then `false` (the call stops there). */
  const pause = async (delay: number): Promise<boolean> => {
    if (delay >= left()) return false;
    await sleep(delay);
    return true;
  };
  /** The current endpoint cannot take the part now: the next try goes to the next endpoint, at once unless every
   * endpoint has failed in a row (then after `retryAfter`, or the backoff). `false`: that wait would pass the
   * call's deadline. */
  const failOver = async (reason: string, retryAfter: number | null): Promise<boolean> => {
    const from = ring.current.host;
    const waits = ring.fail();
    const delay = waits === 0 ? 0 : Math.min(maxDelay, retryAfter ?? backoff(waits));
    if (ring.endpoints.length > 1) {
      options.log?.(`upload to ${from}: ${reason}; switching to ${ring.current.host}` +
        (waits === 0 ? " at once" : ` in ${delay.toFixed(3)} s (every endpoint failed)`));
    }
    return waits === 0 || pause(delay);
  };
  /** The parts sent one by one until the outbox is empty, the interval or the deadline stops the call, or it fails. */
  const uploadParts = async (): Promise<UploadResult> => {
    for (;;) {
      if (left() <= 0) return end("deadline"); // what is not sent stays in the outbox
      const maxBytes = options.keepalive ? KEEPALIVE_BYTES : Infinity;
      const batch = await prepareUpload(store, spec, token, clock(), { gzip: options.gzip, maxBytes });
      if (batch === null) return end();
      let answered = false, stopped = false; // stopped: by the call's deadline
      ring.startPart();
      for (let attempt = 1; attempt <= maxAttempts && !answered && !stopped; attempt++) {
        const last = attempt === maxAttempts;
        let response: Response, body: string;
        const callBound = left() < timeout; // this request's timer is the call's deadline
        const signal = AbortSignal.timeout(Math.ceil(Math.max(0, Math.min(timeout, left())) * 1000)); // whole ms
        try {
          const keepalive = options.keepalive === true && batch.body.length <= 64 * 1024;
          response = await doFetch(ring.current.url, { method: "POST", headers: batch.headers,
            body: batch.body as BodyInit, redirect: "manual", signal, keepalive });
          body = await readReply(response, MAX_ANSWER, signal);
        } catch {
          // the timer's clock may run a little ahead of monotonic(): an abort by the call's timer is its deadline
          if (left() <= 0 || (callBound && signal.aborted)) stopped = true;
          else if (!last) stopped = !(await failOver(signal.aborted ? `no answer within ${timeout} s` : "network error", null));
          continue;
        }
        const status = response.status;
        if (response.type === "opaqueredirect" || (status >= 300 && status < 400)) {
          throw await failure(`the collector redirected the upload (refused: it would carry the token elsewhere)`,
            status || null, "redirect");
        }
        if (status >= 200 && status < 300) {
          let a: Record<string, unknown>;
          try {
            a = checkAnswer(body, batch.id, batch.items.length);
          } catch (err) {
            throw await failure(`the collector's answer to batch ${batch.id} is not sane: ${(err as Error).message}`,
              status, "bad_answer", UploadProtocolError);
          }
          tally(result, a, await acknowledge(store, batch, clock()));
          answered = true;
        } else if (status === 413) {
          if (batch.items.length <= 1) {
            throw await failure("the collector refused a one-line batch as too large", status, "too_large");
          }
          await pinHalf(store, spec, batch, maxBytes);
          answered = true;
        } else if (status === 429 || status === 408 || status >= 500) {
          if (left() <= 0) stopped = true;
          if (last || stopped) continue;
          const wait = status === 429 || status === 503 ? parseRetryAfter(response.headers.get("retry-after"), clock()) : null;
          if (status === 429) stopped = !(await pause(Math.min(maxDelay, wait ?? backoff(ring.hold()))));
          else stopped = !(await failOver(`HTTP ${status}`, wait));
        } else {
          const reason = refusalReason(status, body);
          throw await failure(`the collector refused batch ${batch.id}: ${reason}`, status, reason);
        }
      }
      if (stopped) return end("deadline");
      if (!answered) throw await failure(`batch ${batch.id} was not delivered in ${maxAttempts} attempts`, null, "undelivered");
    }
  };
  const endTurn = await takeTurn(store.outboxKey ?? store, left());
  if (endTurn === null) return end("deadline"); // another call on this outbox ran past this one's deadline
  try {
    return await uploadParts();
  } finally {
    endTurn();
  }
}
