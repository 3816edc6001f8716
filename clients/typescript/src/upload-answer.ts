/**
 * What a collector answers an upload (`ldp/client/uploader.py`): the reply read whole under the request's deadline,
 * at most `MAX_ANSWER` bytes of it (`readReply`: a body that trickles in past the deadline or breaks off fails as the
 * request would have); a 2xx answer acknowledges its batch only when it is sane (`checkAnswer`: its batch id, counts
 * that add up to the lines sent); how long a `Retry-After` asks to wait (`parseRetryAfter`).
 */

/** The most bytes of a reply read (64 KiB): a longer one is cut there (and a 2xx answer cut so is not sane). */
export const MAX_ANSWER = 1 << 16;
/** The most lines a batch may have (what a duplicate's answer may count). */
const MAX_BATCH = 1 << 20;

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

/**
 * The reply's body as text, at most `limit` bytes of it (the rest is not read: the download is cancelled), read
 * under `signal` — the same deadline as the request. A body that fails or outlasts the deadline throws, as the
 * request would have.
 */
export async function readReply(response: Response, limit: number, signal: AbortSignal): Promise<string> {
  const body = response.body;
  if (body === null) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason ?? new Error("the reply took too long"));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  try {
    while (size < limit) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) break;
      const room = limit - size;
      chunks.push(value.length > room ? value.subarray(0, room) : value);
      size += Math.min(value.length, room);
    }
  } finally {
    signal.removeEventListener("abort", onAbort as () => void);
    reader.cancel().catch(() => undefined); // stop a body longer than the limit, or one still trickling in
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}
