/**
 * The client runtime (`ldp.client.TelemetryClient`): one device's reports for one collection. `record(metric,
 * value)` checks the value, then in ONE atomic update of the device's state (`StateStore`) checks every cap,
 * charges, randomizes and puts the envelope line in the outbox; `upload` sends the outbox to `ldp serve`
 * (`uploader.ts`). Budgets as docs/client.md "Budgets": per window (`floor(unix seconds / window_seconds)`) and
 * lifetime, for the collection and per metric, with Python's 1e-9 relative slack; memoized charges (RAPPOR's PRR)
 * are cut so that one value's total never exceeds its cap.
 *
 * On the device (docs/client.md, "On the device"): the outbox keeps at most `maxOutboxBytes` of reports (a record
 * past it is an `OutboxFullError`, nothing charged); `optOut` deletes what collection left on the device and stops
 * it until `optIn`; queries write nothing; a store whose state is gone while traces remain refuses to open.
 */
import { ALL_METRICS, LdpRefusal, LdpValueError, OptedOutError, OutboxFullError } from "./errors.js";
import { CryptoRandomSource, RandomSource } from "./random.js";
import { fromHex, toHex } from "./bytes.js";
import { HmacSha256 } from "./hash/sha256.js";
import { Encoder, envelopeJson } from "./encoders/base.js";
import { chargeLedger } from "./ledger-charge.js";
import type { TwoAggregatorMetrics } from "./dap-hooks.js";
import { PrivacyCost } from "./params/base.js";
import { CollectionSpec } from "./spec.js";
import { DeviceState, STATE_FORMAT, StateStore, live, outboxBytes } from "./state.js";
import { Endpoints, checkEndpoints } from "./endpoints.js";
import { KEEPALIVE_BYTES, PreparedUpload, nextUploadAt, prepareUpload, sendKeepalive } from "./upload-batch.js";
import { UploadOptions, UploadResult, checkUploadOptions, upload } from "./uploader.js";

const METRIC_SECRET_TAG = new TextEncoder().encode("ldp/client/metric-secret/v1\0");

/** `HMAC-SHA256(device secret, "ldp/client/metric-secret/v1\0" ‖ metric)`: a memoizing metric's secret. */
export function metricSecret(deviceSecret: Uint8Array, metric: string): Uint8Array {
  return new HmacSha256(deviceSecret).mac(METRIC_SECRET_TAG, new TextEncoder().encode(metric));
}

/** The outbox's default cap: 1 MiB of envelope lines (each counted with its newline) waiting for upload. */
export const DEFAULT_MAX_OUTBOX_BYTES = 1 << 20;

/** What a client is opened with: a clock (Unix seconds), randomness (default: the platform CSPRNG), and the most
 * bytes of reports the outbox keeps waiting for upload (`maxOutboxBytes`, a positive integer: default 1 MiB; each
 * report counts its envelope line's UTF-8 bytes plus one, pinned batches included). */
export interface ClientOptions {
  readonly clock?: () => number;
  readonly rng?: RandomSource;
  readonly maxOutboxBytes?: number;
  /** The two-aggregator metrics' tasks, from `twoAggregatorMetrics` of `ldp-telemetry-client/dap` (each metric's
   * task file, both aggregators' HPKE configs inside, checked against the spec). A two-aggregator metric without
   * one is refused when recorded (`trust_model`). */
  readonly twoAggregator?: TwoAggregatorMetrics;
}

/** What one metric's reports became on this device (`TelemetryClient.counts`): always
 * `reports === pending + uploaded + discarded`. */
export interface Counts {
  /** Reports recorded (each was charged). */
  readonly reports: number;
  /** Waiting in the outbox, a pinned batch included. */
  readonly pending: number;
  /** Acknowledged by a collector. */
  readonly uploaded: number;
  /** Deleted unsent by `optOut`. */
  readonly discarded: number;
}

/** One item of `recordMany`: a metric and its value, typed by `M` as `record`'s are. */
export type MetricValue<M extends object> = { [K in keyof M & string]: readonly [K, M[K]] }[keyof M & string];

/** `err` (a refused value of item `i` of `recordMany`, or its unknown metric) naming its item in its message: a
 * refusal of the same class, `code` and `fields`; a `RangeError` (no such metric) as one. */
function itemError(err: unknown, i: number, metric: string): unknown {
  const prefix = `recordMany item ${i} (${JSON.stringify(String(metric))}): `;
  if (err instanceof LdpRefusal) {
    const out = err.withFields({});
    out.message = prefix + err.message;
    return out;
  }
  return err instanceof RangeError ? new RangeError(prefix + err.message) : err;
}

/**
 * One device's client of one collection. Open it with `TelemetryClient.open(spec, store)`. `M` types the metrics
 * and their values (`MetricValues<typeof SPEC>` of a spec written `as const`, or the `Metrics` interface that
 * `ldp-spec-types spec.json` writes); without it any metric name and value type-checks and the spec decides.
 */
export class TelemetryClient<M extends object = Record<string, unknown>> {
  private readonly encoders = new Map<string, Encoder>();
  private readonly recordListeners = new Set<() => void>();
  /** The device secret the cached encoders were made with (another client of the store may opt out and in). */
  private secret: string | null = null;

  private constructor(readonly spec: CollectionSpec, private readonly store: StateStore,
    private readonly clock: () => number, private readonly rng: RandomSource,
    /** The most bytes of reports the outbox keeps (`ClientOptions.maxOutboxBytes`). */
    readonly maxOutboxBytes: number,
    private readonly dap: TwoAggregatorMetrics | undefined) {}

  /** Open (or create) the device's state in `store` for `spec`'s collection: a state of another collection is
   * refused, never reset. Opening an existing state writes nothing. */
  static async open<M extends object = Record<string, unknown>>(spec: CollectionSpec, store: StateStore,
    options: ClientOptions = {}): Promise<TelemetryClient<M>> {
    const rng = options.rng ?? new CryptoRandomSource();
    const cap = options.maxOutboxBytes ?? DEFAULT_MAX_OUTBOX_BYTES;
    if (!(Number.isSafeInteger(cap) && cap > 0)) {
      throw new RangeError(`maxOutboxBytes must be a positive integer, got ${String(cap)}`);
    }
    const known = (s: DeviceState | null): boolean => {
      if (s !== null && (s.format !== STATE_FORMAT || s.collection !== spec.name)) {
        throw new Error(`this state belongs to collection ${JSON.stringify(String(s.collection))}, not ` +
          `${JSON.stringify(spec.name)}: use another store (a budget is never reset)`);
      }
      return s !== null;
    };
    if (!(await store.transact((tx) => known(tx.state), { readOnly: true }))) {
      await store.transact((tx) => {
        if (!known(tx.state)) {
          tx.state = { format: STATE_FORMAT, collection: spec.name, secret: toHex(rng.tokenBytes(32)),
            salt: toHex(rng.tokenBytes(32)), clock: 0, totals: {}, memo: {}, cohorts: {}, nextId: 1, batch: null,
            lastUpload: null, uploaded: {}, outboxBytes: 0 };
        }
      });
    }
    return new TelemetryClient<M>(spec, store, options.clock ?? (() => Date.now() / 1000), rng, cap, options.twoAggregator);
  }

  private encoder(metric: string, state: DeviceState): Encoder {
    if (state.secret !== this.secret) {
      this.encoders.clear();
      this.secret = state.secret;
    }
    const known = this.encoders.get(metric);
    if (known !== undefined) return known;
    const m = this.spec.metric(metric);
    // A value the spec sends to two aggregators is sealed to its task's aggregators: without the task, refused before
    // its value is looked at, as Python's client does.
    if (m.trust.startsWith("two-aggregator") && !this.dap?.metrics.has(metric)) {
      throw new LdpValueError("trust_model", { metric, trust: m.trust });
    }
    const entry = m.entry;
    const options: { rng: RandomSource; secret?: Uint8Array; cohort?: number } = { rng: this.rng };
    const cohorts = entry.assignedCohorts(m.params);
    if (cohorts) {
      const key = `${metric}\0${m.params.fingerprint}`;
      if (state.cohorts[key] === undefined) state.cohorts[key] = this.rng.randbelow(cohorts);
      options.cohort = state.cohorts[key];
    }
    if (entry.needsSecret) options.secret = metricSecret(fromHex(state.secret as string), metric);
    const enc = entry.makeEncoder(m.params, options);
    if (!cohorts) this.encoders.set(metric, enc);
    return enc;
  }

  /** Privatize `value` for `metric` and put its envelope in the outbox; return its outbox id. A refused value throws
   * an `LdpRefusal` (`LdpValueError`/`LdpTypeError`, with `code` and `fields`), a spent budget `BudgetExceeded`, an
   * outbox that the report would take past `maxOutboxBytes` `OutboxFullError`, and an opted-out device
   * `OptedOutError`: each with nothing written. */
  async record<K extends keyof M & string>(metric: K, value: M[K]): Promise<number> {
    return (await this.commit([[metric, value]], false))[0];
  }

  /**
   * Record several `[metric, value]` pairs in ONE transaction, all or nothing; their outbox ids, in order. Every
   * value is checked first (a bad one is a `ValueError`/`TypeError` naming its item); then each is charged seeing
   * the ones before it, as the same `record` calls in a row would (`BudgetExceeded.index` names the item refused);
   * then each report takes its room in the outbox (`OutboxFullError.index` names the first that did not fit). A
   * refusal keeps nothing of the batch.
   */
  async recordMany(items: Iterable<MetricValue<M>>): Promise<number[]> {
    return this.commit([...items] as ReadonlyArray<readonly [string, unknown]>, true);
  }

  private async commit(items: ReadonlyArray<readonly [string, unknown]>, batch: boolean): Promise<number[]> {
    const now = this.clock();
    if (!(Number.isFinite(now) && now >= 0)) throw new RangeError(`the clock must give seconds >= 0, got ${now}`);
    const ids = await this.store.transact((tx) => {
      const state = live(tx);
      if (state.optedOut) {
        throw new OptedOutError("this device opted out of collection: nothing is recorded until optIn()");
      }
      let bytes = state.outboxBytes ?? outboxBytes(tx.head(tx.pending)); // before any draw: a store may rerun this
      const work = items.map(([metric, value], i) => {
        try {
          const enc = this.encoder(metric, state);
          return [metric, enc, enc.prepare(value)] as const;
        } catch (err) {
          throw batch ? itemError(err, i, metric) : err;
        }
      });
      state.clock = Math.max(state.clock, now);
      const window = Math.floor(state.clock / this.spec.windowSeconds);
      const epochs = work.map(([metric, enc, prepared], i) => chargeLedger(this.spec, state, metric,
        this.dap?.metrics.get(metric)?.charge ?? enc.chargeFor(prepared), window, batch ? i : null,
        this.dap?.metrics.get(metric)?.windowCap));
      const encoder = new TextEncoder();
      return work.map(([metric, enc, prepared], i) => {
        const dap = this.dap?.metrics.get(metric);
        const line = dap ? dap.line(enc, prepared, state.clock, window)
          : envelopeJson(this.spec.fingerprint, metric, window, enc.randomize(prepared, epochs[i]));
        const needed = encoder.encode(line).length + 1;
        const cap = this.maxOutboxBytes;
        if (bytes + needed > cap) throw new OutboxFullError(bytes, needed, cap, batch ? i : null);
        state.outboxBytes = bytes += needed;
        const id = state.nextId++;
        tx.append({ id, metric, line });
        return id;
      });
    });
    for (const listener of this.recordListeners) listener();
    return ids;
  }

  /** (ε, δ) spent on `metric` (default: all metrics) in the current window, or over the lifetime. */
  async spent(metric: (keyof M & string) | typeof ALL_METRICS = ALL_METRICS,
    period: "window" | "lifetime" = "window"): Promise<PrivacyCost> {
    const now = this.clock();
    return this.store.transact((tx) => {
      const s = live(tx);
      const t = s.totals[metric];
      const window = Math.floor(Math.max(s.clock, now) / this.spec.windowSeconds);
      const [e, d] = !t ? [0, 0] : period === "lifetime" ? t.lifetime : t.window === window ? t.spent : [0, 0];
      return { epsilon: e, delta: d };
    }, { readOnly: true });
  }

  /** Envelopes waiting for upload. */
  async pending(): Promise<number> {
    return this.store.transact((tx) => {
      live(tx);
      return tx.pending;
    }, { readOnly: true });
  }

  /**
   * Per metric, what its reports became: `reports` recorded, `pending` in the outbox (a pinned batch included),
   * `uploaded` (acknowledged) and `discarded` (deleted unsent by `optOut`), with
   * `reports === pending + uploaded + discarded`; a metric appears once it has a report. As Python's `counts()`
   * and Kotlin's `counts()`. A read: it writes nothing. It reads the whole outbox (at most `maxOutboxBytes`).
   */
  async counts(): Promise<Record<string, Counts>> {
    return this.store.transact((tx) => {
      const state = live(tx), out: Record<string, { -readonly [K in keyof Counts]: number }> = {};
      const add = (metric: string, key: "pending" | "uploaded" | "discarded", n: number) => {
        const c = out[metric] ??= { reports: 0, pending: 0, uploaded: 0, discarded: 0 };
        c[key] += n;
        c.reports += n;
      };
      for (const item of tx.head(tx.pending)) add(item.metric, "pending", 1);
      for (const [metric, n] of Object.entries(state.uploaded)) add(metric, "uploaded", n);
      for (const [metric, n] of Object.entries(state.discarded ?? {})) add(metric, "discarded", n);
      return out;
    }, { readOnly: true, head: Infinity });
  }

  /** Whether a report waits for upload. */
  async hasPending(): Promise<boolean> {
    return (await this.pending()) > 0;
  }

  /** Unix seconds from which `upload` sends the next batch: the last acknowledged upload plus the spec's
   * `upload.min_interval_seconds`; `-Infinity` before the first, `Infinity` while opted out. */
  async nextUploadAt(): Promise<number> {
    return this.store.transact((tx) => nextUploadAt(live(tx), this.spec), { readOnly: true });
  }

  /** Whether this device opted out of collection (as the store says now: another tab or process may have). */
  async optedOut(): Promise<boolean> {
    return this.store.transact((tx) => !!live(tx).optedOut, { readOnly: true });
  }

  /**
   * Stop collection on this device, in one transaction (crash-safe): delete every pending report and the pinned
   * batch, the device secret, the cohorts, the memoized and charge-on-change records, and leave the opt-out marker.
   * The budget spent stays spent. Until `optIn`, `record` throws `OptedOutError` before charging anything,
   * `pending` is 0, `upload` sends nothing and `nextUploadAt` is `Infinity`. The deleted reports are counted as
   * `discarded` (`counts`). Idempotent; resolves to the number of reports deleted.
   */
  async optOut(): Promise<number> {
    const deleted = await this.store.transact((tx) => {
      const state = live(tx), n = tx.pending;
      for (const { metric } of tx.head(n)) (state.discarded ??= {})[metric] = (state.discarded[metric] ?? 0) + 1;
      tx.dropHead(n);
      Object.assign(state, { secret: null, cohorts: {}, memo: {}, batch: null, outboxBytes: 0, optedOut: true });
      delete state.changes;
      return n;
    }, { head: Infinity });
    this.encoders.clear();
    return deleted;
  }

  /** Resume collection with a fresh device secret: new cohorts and new memoized responses, each charged afresh when
   * first used. Idempotent; resolves to whether the device had opted out. */
  async optIn(): Promise<boolean> {
    return this.store.transact((tx) => {
      const state = live(tx);
      if (!state.optedOut) return false;
      state.secret = toHex(this.rng.tokenBytes(32));
      delete state.optedOut;
      return true;
    });
  }

  /**
   * Send the outbox to an `ldp serve` collector (`POST url`, bearer `token`) until it is empty or the upload
   * interval stops it (`uploader.ts`). `endpoints` is one URL or a list of replicas: each call starts with the first,
   * and a try that finds a replica unable to take the batch (no answer, a network error, 408, 5xx) moves to the next
   * (`endpoints.ts`).
   *
   * One upload at a time per outbox: the calls on this client's outbox in this JavaScript realm — concurrent calls
   * of this client, and of other clients on the same store (the same `FileStore` folder, `IndexedDBStore` key or
   * `MemoryStore`) — take turns, in the order they were made. A call that finds another one running waits for it, at
   * most its own `callTimeout` in all (with none, as long as it takes), then uploads what is still pending: the parts
   * the other call sent are not sent again (often nothing is left: `stopped: "empty"` or `"interval"`). A call whose
   * deadline passes while it waits resolves to `stopped: "deadline"`, having sent nothing. Do not call `upload` from
   * the `fetch` or `sleep` given to it: that call would wait for the one it is part of. Other processes and tabs
   * are not waited for: a pinned batch they send as well is stored once by the collector (its batch id).
   */
  async upload(endpoints: Endpoints, token: string, options: UploadOptions = {}): Promise<UploadResult> {
    const ingest = () => upload(this.store, this.spec, endpoints, token, { clock: this.clock, ...options });
    if (!this.dap) return ingest();
    const sum = await this.uploadReports(options);
    const add = (part: UploadResult) => {
      for (const k of ["batches", "acknowledged", "accepted", "duplicates"] as const) sum[k] += part[k];
      for (const [k, n] of Object.entries(part.rejected)) sum.rejected[k] = (sum.rejected[k] ?? 0) + n;
      Object.assign(sum, { stopped: part.stopped, nextUploadAt: part.nextUploadAt });
    };
    // the queue's head alternates between the lanes: each sends while the head is its own
    for (let moved = true; moved && (sum.stopped === "empty" || sum.stopped === "interval");) {
      add(await ingest());
      if (sum.stopped !== "empty" && sum.stopped !== "interval") break;
      const before = sum.acknowledged;
      add(await this.uploadReports(options));
      moved = sum.acknowledged > before;
    }
    return sum;
  }

  /** Send the two-aggregator metrics' reports at the head of the outbox, each to its task's leader
   * (`ldp-telemetry-client/dap`), until the head is a report for the ingest service: what `upload` does first, and
   * all an app without an ingest service calls. */
  uploadReports(options: UploadOptions = {}): Promise<UploadResult> {
    return this.dap?.upload(this.store, this.spec, { clock: this.clock, ...options }) ??
      Promise.resolve({ batches: 0, acknowledged: 0, accepted: 0, rejected: {}, duplicates: 0, stopped: "empty",
        nextUploadAt: -Infinity });
  }

  /**
   * In a page: send the outbox when the page is hidden (`visibilitychange`) or left (`pagehide`), the moments a
   * browser still lets a page talk before it may be frozen or closed. A page that is going away cannot wait for
   * storage, so the next batch (at most 60 KiB of lines: the keepalive quota is 64 KiB) is pinned and its request
   * built ahead — when this is called and after each `record` — and sent at once, synchronously, with
   * `fetch(..., {keepalive: true})`, which outlives the page. If the page lives on, the answer is checked and the
   * batch acknowledged as `upload` does, and the rest of the outbox follows; if it does not, the next visit resends
   * the same pinned batch and the collector stores it once. `sendBeacon` is not used: it cannot carry the bearer
   * token. While the page lives, that request has the request's deadline (`options.timeout`, 30 s by default), as
   * every request of `upload`; it does not wait for an upload running on the outbox (a page going away cannot wait):
   * it is the pinned batch, which the collector stores once if that upload sends it too. Errors are dropped (the next
   * send retries). Returns a function that stops listening.
   *
   * `endpoints` is one URL or a list (checked now, with the token and the options: a bad one is a `RangeError`). The
   * request sent as the page goes is for the first endpoint. If the page lives on, the rest follows through `upload` over the list, by default
   * with one try per endpoint and part (`maxAttempts`: 1 for one URL) — with a list even when that first request
   * failed, since the next endpoint may take it.
   */
  uploadWhenHidden(endpoints: Endpoints, token: string, options: UploadOptions = {}): () => void {
    const doc = (globalThis as { document?: Document }).document;
    const win = globalThis as unknown as Partial<Window>;
    if (doc === undefined || typeof win.addEventListener !== "function") {
      throw new Error("uploadWhenHidden needs a page (document and window)");
    }
    const list = checkEndpoints(endpoints);
    checkUploadOptions(token, options);
    const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    let ready: PreparedUpload | null = null;
    let preparing: Promise<void> | null = null;
    let sending = false;
    const prepare = (): Promise<void> => {
      if (ready !== null || sending) return Promise.resolve();
      preparing ??= prepareUpload(this.store, this.spec, token, this.clock(), { gzip: options.gzip, maxBytes: KEEPALIVE_BYTES })
        .then((p) => {
          ready = p;
        })
        .catch(() => undefined)
        .finally(() => {
          preparing = null;
        });
      return preparing;
    };
    const send = () => {
      if (sending) return;
      const batch = ready;
      ready = null;
      sending = true;
      const first = sendKeepalive(doFetch, list[0].url, batch, options.timeout ?? 30, this.store, () => this.clock());
      (list.length > 1 ? first.catch(() => undefined) : first)
        .then(() => this.upload(endpoints, token, { maxAttempts: list.length, ...options, keepalive: true }))
        .catch(() => undefined)
        .finally(() => {
          sending = false;
          void prepare();
        });
    };
    const onVisibility = () => {
      if (doc.visibilityState === "hidden") send();
    };
    const onRecord = () => void prepare();
    doc.addEventListener("visibilitychange", onVisibility);
    win.addEventListener("pagehide", send);
    this.recordListeners.add(onRecord);
    void prepare();
    return () => {
      doc.removeEventListener("visibilitychange", onVisibility);
      win.removeEventListener?.("pagehide", send);
      this.recordListeners.delete(onRecord);
    };
  }
}
