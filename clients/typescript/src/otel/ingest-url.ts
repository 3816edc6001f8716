/**
 * The ingest endpoint a `PrivatizingMetricReader` uploads to, checked when the reader is made, and what the
 * diagnostic log says of an upload that failed (the Python client's `ldp/otel/endpoint.py`).
 *
 * `ldp serve` takes reports on `POST /v1/reports` and answers anything else at its root with an error (a `POST` to
 * the base URL: 405). A reader given the base URL would queue every report and fail each upload, so its `url` must
 * name the endpoint itself: an http(s) URL whose path ends with `/v1/reports` (a reverse proxy may put a prefix before
 * it: `https://example.com/telemetry/v1/reports`; in a page, a relative URL is resolved against the page's).
 */
import { checkEndpoints } from "../endpoints.js";
import type { Endpoints } from "../endpoints.js";
import { UploadError } from "../errors.js";

/** The path `ldp serve` takes reports on. */
export const INGEST_PATH = "/v1/reports";

/** The page's base URL, where there is one (relative URLs resolve against it, as `fetch` does). */
function pageBase(): string | undefined {
  const page = globalThis as { document?: { baseURI?: string }; location?: { href?: string } };
  return page.document?.baseURI ?? page.location?.href;
}

/** `url` as a log line or an error may show it: scheme, host, port and path only (no user, password, query or
 * fragment, which may carry secrets). */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url, pageBase());
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

/**
 * Checks the reader's `url`: the upload's own checks (`checkEndpoints`: http(s), a host, none twice), then that each
 * endpoint is an ingest service's upload endpoint. A `RangeError` saying which one is not and what was probably
 * meant.
 */
export function checkIngestUrl(url: Endpoints): void {
  checkEndpoints(url);
  const list = typeof url === "string" ? [url] : url;
  list.forEach((one, i) => {
    if (new URL(one, pageBase()).pathname.endsWith(INGEST_PATH)) return;
    const which = list.length === 1 ? "url" : `url ${i}`, shown = shownUrl(one);
    throw new RangeError(`${which} ${JSON.stringify(shown)} is not an ingest service's upload endpoint: ` +
      `\`ldp serve\` takes reports on POST ${INGEST_PATH}, so the URL must end with it (did you mean ` +
      `${JSON.stringify(shown.replace(/\/+$/, "") + INGEST_PATH)}?)`);
  });
}

/** What a failed upload's log line says of `err`: the HTTP status and the server's reason of an `UploadError` (`no
 * answer` when none came), the error's name and message otherwise. Never a report line or the token. */
export function uploadFailure(err: unknown): string {
  if (err instanceof UploadError) {
    return `${err.status === null ? "no answer" : `HTTP ${err.status}`} (${err.reason}), ${err.name}`;
  }
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
