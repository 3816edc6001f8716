/**
 * The collector endpoints of an upload (issue 50): one `ldp serve` URL, or a list of replicas (or balancers) over
 * shared storage, which store a batch once whichever of them gets it (the batch id is the same on every one).
 *
 * * `checkEndpoints` refuses a bad list before anything is sent.
 * * `Rotation` says where an upload call's next request goes: the first endpoint at the start of the call; the one
 *   that last acknowledged a part for the following parts (sticky); the next one in the list (cyclically), at once,
 *   after a failure that says "this replica cannot take it now" — until every endpoint has failed in a row, when the
 *   uploader waits (the backoff's exponent is the number of waits for the part so far) and starts the next round
 *   from the endpoint after the last one tried. With one endpoint every failure waits: the behaviour of one URL.
 *
 * The library never shuffles the list: callers who want to spread the load shuffle it per device.
 */

/** Where an upload goes: one collector URL, or a non-empty list of them (replicas), tried in that order. */
export type Endpoints = string | readonly string[];

/** A checked endpoint: its URL as given (what `fetch` gets) and its host (what a log line names). */
export interface Endpoint {
  readonly url: string;
  readonly host: string;
}

/**
 * The endpoints, checked before anything is sent: one URL or a non-empty list, each an http(s) URL with a host and
 * none twice (compared resolved: `http://X:80/a` is `http://x/a`). In a page a relative URL is resolved against the
 * page's base URL, as `fetch` does; elsewhere (Node) a URL must be absolute. Anything else is a `ValueError`, whose
 * message names the entry by its index (never the URL: it may be configuration a log should not carry).
 */
export function checkEndpoints(endpoints: Endpoints): Endpoint[] {
  const list: readonly unknown[] = typeof endpoints === "string" ? [endpoints] : endpoints;
  if (!Array.isArray(list) || list.length === 0) {
    throw new RangeError("upload endpoints must be a URL or a non-empty list of URLs");
  }
  const page = globalThis as { document?: { baseURI?: string }; location?: { href?: string } };
  const base = page.document?.baseURI ?? page.location?.href;
  const seen = new Map<string, number>();
  return list.map((url, i) => {
    let u: URL | null = null;
    try {
      if (typeof url === "string") u = new URL(url, base);
    } catch {
      /* not a URL: said below */
    }
    if (u === null || !/^https?:$/.test(u.protocol) || !u.hostname) {
      const got = typeof url !== "string" ? `a ${typeof url}`
        : u === null ? "not a URL" : `a URL of scheme ${u.protocol}`;
      throw new RangeError(`upload endpoint ${i} is ${got}: it must be an http(s) URL with a host`);
    }
    const first = seen.get(u.href);
    if (first !== undefined) throw new RangeError(`upload endpoint ${i} repeats endpoint ${first} (${u.host})`);
    seen.set(u.href, i);
    return { url: url as string, host: u.host };
  });
}

/** Which endpoint an upload call's next request goes to, and when the uploader waits before it (see the module). */
export class Rotation {
  private at = 0;
  private failed = 0;
  private waits = 0;

  constructor(readonly endpoints: readonly Endpoint[]) {}

  /** Where the next request goes. */
  get current(): Endpoint {
    return this.endpoints[this.at];
  }

  /** A new part: no endpoint has failed for it, nor has it waited. The endpoint stays (sticky). */
  startPart(): void {
    this.failed = this.waits = 0;
  }

  /** The current endpoint cannot take the part now: move to the next one. Returns 0 to try it at once, else the
   * exponent of the backoff to wait first (every endpoint has failed in a row since the last wait). */
  fail(): number {
    this.at = (this.at + 1) % this.endpoints.length;
    if (++this.failed < this.endpoints.length) return 0;
    this.failed = 0;
    return ++this.waits;
  }

  /** The fleet asks to slow down (429): wait on the same endpoint. Returns the exponent of the backoff. */
  hold(): number {
    this.failed = 0;
    return ++this.waits;
  }
}
