/**
 * The two-aggregator reports' upload (Python's `ldp/client/dap_upload.py`): the reports at the head of the outbox,
 * oldest first, each alone to its task's leader, `PUT {leader}/tasks/{taskId}/reports` with `Content-Type:
 * application/dap-report` (DAP-09 §4.4.2; no token: a leader takes reports from anyone). The outbox is a queue
 * (`state.ts`): this lane sends while the head is a two-aggregator report, and the ingest lane (`uploader.ts`) while
 * it is not, so reports leave in the order they were recorded.
 *
 * What each answer does (the report leaves the outbox only once the leader has it, or never will):
 * 201 — stored (`accepted`); 409 `report_replayed` — stored before, its answer lost (`duplicates`); 400 with a code
 * no retry changes (`GONE`, or DAP's `reportRejected`, `outdatedConfig`, `invalidMessage` from a leader of another
 * implementation) — dropped and counted in `rejected` by code; 400 `report_too_early` — kept, the call stops
 * (`"interval"`); no answer within `timeout`, a network error, 408, 429 or 5xx — tried again after `Retry-After` or a
 * backoff with full jitter, `maxAttempts` tries, then an `UploadError`; anything else (a wrong task or URL) — an
 * `UploadError`, the report kept.
 */
import { UploadError } from "../errors.js";
import type { CollectionSpec } from "../spec.js";
import { live, outboxBytes } from "../state.js";
import type { OutboxItem, StateStore } from "../state.js";
import { parseRetryAfter, readReply } from "../upload-answer.js";
import { nextUploadAt } from "../upload-batch.js";
import type { UploadOptions, UploadResult } from "../uploader.js";
import { parseDapLine } from "./metric.js";

/** The media type of a DAP report upload. */
export const DAP_MEDIA_TYPE = "application/dap-report";
/** Refusal codes after which no retry can make the leader store the report: it is dropped and counted. */
export const GONE: ReadonlySet<string> = new Set(["invalid_message", "report_too_late", "batch_collected",
  "hpke_unknown_config_id", "hpke_decrypt_error", "report_rejected", "outdated_config", "vdaf_invalid"]);
const DAP_TYPE = "urn:ietf:params:ppm:dap:error:";

/** The refusal code of a leader's problem document: `ldp`'s `code`, else DAP's problem `type` in snake case
 * (`reportTooEarly`: `report_too_early`); `null` when the body says neither. */
export function refusalCode(body: string): string | null {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof doc !== "object" || doc === null) return null;
  const { code, type } = doc as { code?: unknown; type?: unknown };
  if (typeof code === "string" && /^[a-z_]{1,40}$/.test(code)) return code;
  if (typeof type === "string" && type.startsWith(DAP_TYPE) && /^[A-Za-z]{1,40}$/.test(type.slice(DAP_TYPE.length))) {
    return type.slice(DAP_TYPE.length).replace(/(?<!^)([A-Z])/g, "_$1").toLowerCase();
  }
  return null;
}

type Outcome = "stored" | "replayed" | "later" | "deadline" | string;

/** Upload the two-aggregator reports at the head of `store`'s outbox (module docstring); `leaders` maps each task ID
 * to its leader's URL. */
export async function uploadReports(store: StateStore, spec: CollectionSpec, leaders: ReadonlyMap<string, string>,
  options: UploadOptions = {}): Promise<UploadResult> {
  const result: UploadResult = { batches: 0, acknowledged: 0, accepted: 0, rejected: {}, duplicates: 0,
    stopped: "empty", nextUploadAt: -Infinity };
  const callEnd = options.callTimeout == null ? Infinity : performance.now() / 1000 + options.callTimeout;
  const end = async (stopped?: UploadResult["stopped"]): Promise<UploadResult> => {
    const [pending, next] = await store.transact((tx) => [tx.pending, nextUploadAt(live(tx), spec)], { readOnly: true });
    return Object.assign(result, { stopped: stopped ?? (pending ? "interval" : "empty"), nextUploadAt: next });
  };
  for (;;) {
    const head = await store.transact((tx) => (live(tx).optedOut ? null : tx.head(1)[0] ?? null),
      { readOnly: true, head: 1 });
    const parsed = head === null ? null : parseDapLine(head.line);
    if (head === null || parsed === null) return end(); // empty, or a report for the ingest service next
    const leader = leaders.get(parsed.taskId);
    if (leader === undefined) return end("interval"); // its task was not given to this client now
    const outcome = await send(`${leader.replace(/\/+$/, "")}/tasks/${parsed.taskId}/reports`, parsed.report, callEnd,
      options, result);
    if (outcome === "deadline") return end("deadline");
    if (outcome === "later") return end("interval");
    if (await drop(store, head)) {
      result.batches += 1;
      result.acknowledged += 1;
      if (outcome === "stored") result.accepted += 1;
      else if (outcome === "replayed") result.duplicates += 1;
      else result.rejected[outcome] = (result.rejected[outcome] ?? 0) + 1;
    }
  }
}

/** Drop `item` from the head of the outbox (if another uploader has not), counting it as uploaded. */
function drop(store: StateStore, item: OutboxItem): Promise<boolean> {
  return store.transact((tx) => {
    const state = live(tx);
    if (tx.head(1)[0]?.id !== item.id) return false;
    tx.dropHead(1);
    state.uploaded[item.metric] = (state.uploaded[item.metric] ?? 0) + 1;
    if (state.outboxBytes !== undefined) state.outboxBytes = Math.max(0, state.outboxBytes - outboxBytes([item]));
    return true;
  }, { head: 1 });
}

/** One report to its leader, tried until an answer decides it (module docstring): the outcome, or a thrown
 * `UploadError`. */
async function send(url: string, report: Uint8Array, callEnd: number, options: UploadOptions,
  result: UploadResult): Promise<Outcome> {
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const sleep = options.sleep ?? ((s: number) => new Promise<void>((r) => setTimeout(r, s * 1000)));
  const timeout = options.timeout ?? 30, maxAttempts = options.maxAttempts ?? 8, maxDelay = options.maxDelay ?? 300;
  const left = () => callEnd - performance.now() / 1000;
  let last = "";
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (left() <= 0) return "deadline";
    const signal = AbortSignal.timeout(Math.ceil(Math.min(timeout, left()) * 1000));
    let status: number | null = null, body = "", retryAfter: string | null = null;
    try {
      const response = await doFetch(url, { method: "PUT", headers: { "content-type": DAP_MEDIA_TYPE },
        body: report as BodyInit, redirect: "manual", signal });
      status = response.status;
      retryAfter = response.headers.get("retry-after");
      body = await readReply(response, 16 * 1024, signal);
    } catch {
      last = signal.aborted ? `no answer within ${timeout} s` : "network error";
    }
    const code = status === null ? null : refusalCode(body);
    if (status !== null && status >= 200 && status < 300) return "stored";
    if (status === 409 && code === "report_replayed") return "replayed";
    if (status === 400 && code !== null && GONE.has(code)) return code;
    if (status === 400 && code === "report_too_early") return "later";
    if (status !== null && !(status === 408 || status === 429 || status >= 500)) {
      result.stopped = "error";
      throw new UploadError(`the leader refused a report with HTTP ${status} (${code ?? "no code"})`,
        { status, reason: code ?? `HTTP ${status}`, result });
    }
    if (status !== null) last = `HTTP ${status}`;
    const now = options.clock ? options.clock() : Date.now() / 1000;
    const wait = status === 429 || status === 503 ? parseRetryAfter(retryAfter, now) : null;
    const delay = Math.min(maxDelay, wait ?? (options.random ?? Math.random)() * Math.min(maxDelay, 2 ** (attempt - 1)));
    if (attempt < maxAttempts) {
      if (delay >= left()) return "deadline";
      await sleep(delay);
    }
  }
  result.stopped = "error";
  throw new UploadError(`a report was not delivered to its leader in ${maxAttempts} attempts (last: ${last})`,
    { status: null, reason: "undelivered", result });
}
