/**
 * The client runtime (`ldp.client.TelemetryClient`): one device's reports for one collection. `record(metric,
 * value)` checks the value, then in ONE atomic update of the device's state (`StateStore`) checks every cap,
 * charges, randomizes and puts the envelope line in the outbox; `upload` sends the outbox to `ldp serve`
 * (`uploader.ts`). Budgets as docs/client.md "Budgets": per window (`floor(unix seconds / window_seconds)`) and
 * lifetime, for the collection and per metric, with Python's 1e-9 relative slack; memoized charges (RAPPOR's PRR)
 * are cut so that one value's total never exceeds its cap.
 */
import { ALL_METRICS, BudgetExceeded, LdpValueError } from "./errors.js";
import { CryptoRandomSource, RandomSource } from "./random.js";
import { fromHex, toHex } from "./bytes.js";
import { hmacSha256 } from "./hash/sha256.js";
import { pyRepr } from "./canonical.js";
import { Charge, Encoder, envelopeJson, isChange, isMemoized } from "./encoders/base.js";
import { PrivacyCost } from "./params/base.js";
import { CollectionSpec } from "./spec.js";
import { DeviceState, STATE_FORMAT, StateStore, StoreTransaction } from "./state.js";
import { Endpoints, checkEndpoints } from "./endpoints.js";
import {
  KEEPALIVE_BYTES, PreparedUpload, UploadOptions, UploadResult, acknowledge, checkAnswer, checkUploadOptions, prepareUpload,
  readReply, upload,
} from "./uploader.js";

const METRIC_SECRET_TAG = new TextEncoder().encode("ldp/client/metric-secret/v1\0");
const REL_TOL = 1e-9;
const DELTA_MAX = 1 - 2 ** -53;

/** `HMAC-SHA256(device secret, "ldp/client/metric-secret/v1\0" ‖ metric)`: a memoizing metric's secret. */
export function metricSecret(deviceSecret: Uint8Array, metric: string): Uint8Array {
  const name = new TextEncoder().encode(metric);
  const msg = new Uint8Array(METRIC_SECRET_TAG.length + name.length);
  msg.set(METRIC_SECRET_TAG);
  msg.set(name, METRIC_SECRET_TAG.length);
  return hmacSha256(deviceSecret, msg);
}

/** What a client is opened with: a clock (Unix seconds) and randomness (default: the platform CSPRNG). */
export interface ClientOptions {
  readonly clock?: () => number;
  readonly rng?: RandomSource;
}

/** The transaction's state, which `open` made. */
function live(tx: StoreTransaction): DeviceState {
  if (tx.state === null) throw new LdpValueError("the client's state is gone");
  return tx.state;
}

function limit(cap: PrivacyCost): [number, number] {
  return [cap.epsilon * (1 + REL_TOL) + 1e-15, cap.delta * (1 + REL_TOL) + 1e-15];
}

/**
 * One device's client of one collection. Open it with `TelemetryClient.open(spec, store)`. `M` types the metrics
 * and their values (`MetricValues<typeof SPEC>` of a spec written `as const`, or the `Metrics` interface that
 * `ldp-spec-types spec.json` writes); without it any metric name and value type-checks and the spec decides.
 */
export class TelemetryClient<M extends object = Record<string, unknown>> {
  private readonly encoders = new Map<string, Encoder>();
  private readonly recordListeners = new Set<() => void>();

  private constructor(readonly spec: CollectionSpec, private readonly store: StateStore,
    private readonly clock: () => number, private readonly rng: RandomSource, private readonly secret: Uint8Array) {}

  /** Open (or create) the device's state in `store` for `spec`'s collection: a state of another collection is
   * refused, never reset. */
  static async open<M extends object = Record<string, unknown>>(spec: CollectionSpec, store: StateStore,
    options: ClientOptions = {}): Promise<TelemetryClient<M>> {
    const rng = options.rng ?? new CryptoRandomSource();
    const state = await store.transact((tx) => {
      const s = tx.state;
      if (s !== null) {
        if (s.format !== STATE_FORMAT || s.collection !== spec.name) {
          throw new LdpValueError(`this state belongs to collection ${pyRepr(String(s.collection))}, not ` +
            `${pyRepr(spec.name)}: use another store (a budget is never reset)`);
        }
        return s;
      }
      const fresh: DeviceState = { format: STATE_FORMAT, collection: spec.name, secret: toHex(rng.tokenBytes(32)),
        salt: toHex(rng.tokenBytes(32)), clock: 0, totals: {}, memo: {}, cohorts: {}, nextId: 1, batch: null,
        lastUpload: null, uploaded: {} };
      tx.state = fresh;
      return fresh;
    });
    return new TelemetryClient<M>(spec, store, options.clock ?? (() => Date.now() / 1000), rng, fromHex(state.secret));
  }

  private encoder(metric: string, state: DeviceState): Encoder {
    const known = this.encoders.get(metric);
    if (known !== undefined) return known;
    const m = this.spec.metric(metric);
    const entry = m.entry;
    const options: { rng: RandomSource; secret?: Uint8Array; cohort?: number } = { rng: this.rng };
    const cohorts = entry.assignedCohorts(m.params);
    if (cohorts) {
      const key = `${metric}\0${m.params.fingerprint}`;
      if (state.cohorts[key] === undefined) state.cohorts[key] = this.rng.randbelow(cohorts);
      options.cohort = state.cohorts[key];
    }
    if (entry.needsSecret) options.secret = metricSecret(this.secret, metric);
    const enc = entry.makeEncoder(m.params, options);
    if (!cohorts) this.encoders.set(metric, enc);
    return enc;
  }

  /** Privatize `value` for `metric` and put its envelope in the outbox; return its outbox id. A bad value throws
   * `ValueError`/`TypeError` (Python's texts) and a spent budget `BudgetExceeded`, both with nothing written. */
  async record<K extends keyof M & string>(metric: K, value: M[K]): Promise<number> {
    this.spec.metric(metric);
    const now = this.clock();
    if (!(Number.isFinite(now) && now >= 0)) throw new LdpValueError(`the clock must give seconds >= 0, got ${now}`);
    return this.store.transact((tx) => {
      const state = live(tx);
      const enc = this.encoder(metric, state);
      const prepared = enc.prepare(value);
      state.clock = Math.max(state.clock, now);
      const window = Math.floor(state.clock / this.spec.windowSeconds);
      const epoch = this.charge(state, metric, enc.chargeFor(prepared), window);
      const line = envelopeJson(this.spec.fingerprint, metric, window, enc.randomize(prepared, epoch));
      const id = state.nextId++;
      tx.append({ id, metric, line });
      return id;
    }).then((id) => {
      for (const listener of this.recordListeners) listener();
      return id;
    });
  }

  /** Check every cap and add the charge to the totals (Python's `BudgetLedger._charge`); the epoch of a change
   * charge (`thresh`: a new one when the value differs from the stream's last, charged; else the same, free). */
  private charge(state: DeviceState, metric: string, charge: Charge, window: number): number | undefined {
    let inc: PrivacyCost = charge as PrivacyCost;
    let memoKey: string | undefined;
    let change: { key: string; value: string; epoch: number } | undefined;
    if (isChange(charge)) {
      const key = `${metric}\0${toHex(charge.stream)}`, value = toHex(charge.value);
      const last = state.changes?.[key];
      const same = last !== undefined && last[0] === value;
      change = { key, value, epoch: last === undefined ? 0 : same ? last[1] : last[1] + 1 };
      inc = same ? { epsilon: 0, delta: 0 } : charge.cost;
    } else if (isMemoized(charge)) {
      memoKey = `${metric}\0${toHex(charge.key)}`;
      const [reports, e, d] = state.memo[memoKey] ?? [0, 0, 0];
      const step = reports === 0 ? charge.first : charge.then;
      inc = { epsilon: Math.max(0, Math.min(step.epsilon, charge.cap.epsilon - e)),
        delta: Math.max(0, Math.min(step.delta, charge.cap.delta - d)) };
    }
    const m = this.spec.metric(metric);
    const scopes: Array<[string, PrivacyCost | undefined, PrivacyCost | undefined]> = [
      [metric, m.budget.per_window, m.budget.lifetime], [ALL_METRICS, this.spec.budget.per_window, this.spec.budget.lifetime]];
    for (const [scope, perWindow, lifetime] of scopes) {
      const t = state.totals[scope];
      const spent: [number, number] = t && t.window === window ? t.spent : [0, 0];
      const life: [number, number] = t ? t.lifetime : [0, 0];
      for (const [cap, total, period] of [[perWindow, spent, "window"], [lifetime, life, "lifetime"]] as const) {
        if (cap === undefined) continue;
        const [le, ld] = limit(cap);
        if (total[0] + inc.epsilon > le || Math.min(total[1] + inc.delta, DELTA_MAX) > ld) {
          throw new BudgetExceeded(scope, period, inc, { epsilon: total[0], delta: total[1] }, cap);
        }
      }
    }
    for (const [scope] of scopes) {
      const t = state.totals[scope] ?? { window, spent: [0, 0], lifetime: [0, 0] };
      if (t.window !== window) t.spent = [0, 0];
      t.window = window;
      t.spent = [t.spent[0] + inc.epsilon, Math.min(t.spent[1] + inc.delta, DELTA_MAX)];
      t.lifetime = [t.lifetime[0] + inc.epsilon, Math.min(t.lifetime[1] + inc.delta, DELTA_MAX)];
      state.totals[scope] = t;
    }
    if (memoKey !== undefined) {
      const [reports, e, d] = state.memo[memoKey] ?? [0, 0, 0];
      state.memo[memoKey] = [reports + 1, e + inc.epsilon, d + inc.delta];
    }
    if (change === undefined) return undefined;
    state.changes = { ...state.changes, [change.key]: [change.value, change.epoch] };
    return change.epoch;
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

  /** Send the outbox to an `ldp serve` collector (`POST url`, bearer `token`) until it is empty or the upload
   * interval stops it (`uploader.ts`). `endpoints` is one URL or a list of replicas: each call starts with the first,
   * and a try that finds a replica unable to take the batch (no answer, a network error, 408, 5xx) moves to the next
   * (`endpoints.ts`). */
  upload(endpoints: Endpoints, token: string, options: UploadOptions = {}): Promise<UploadResult> {
    return upload(this.store, this.spec, endpoints, token, { clock: this.clock, ...options });
  }

  /**
   * In a page: send the outbox when the page is hidden (`visibilitychange`) or left (`pagehide`), the moments a
   * browser still lets a page talk before it may be frozen or closed. A page that is going away cannot wait for
   * storage, so the next batch (at most 60 KiB of lines: the keepalive quota is 64 KiB) is pinned and its request
   * built ahead — when this is called and after each `record` — and sent at once, synchronously, with
   * `fetch(..., {keepalive: true})`, which outlives the page. If the page lives on, the answer is checked and the
   * batch acknowledged as `upload` does, and the rest of the outbox follows; if it does not, the next visit resends
   * the same pinned batch and the collector stores it once. `sendBeacon` is not used: it cannot carry the bearer
   * token. Errors are dropped (the next send retries). Returns a function that stops listening.
   *
   * `endpoints` is one URL or a list (checked now, with the token and the options: a bad one is a `ValueError`). The request sent as the page goes
   * is for the first endpoint. If the page lives on, the rest follows through `upload` over the list, by default
   * with one try per endpoint and part (`maxAttempts`: 1 for one URL) — with a list even when that first request
   * failed, since the next endpoint may take it.
   */
  uploadWhenHidden(endpoints: Endpoints, token: string, options: UploadOptions = {}): () => void {
    const doc = (globalThis as { document?: Document }).document;
    const win = globalThis as unknown as Partial<Window>;
    if (doc === undefined || typeof win.addEventListener !== "function") {
      throw new LdpValueError("uploadWhenHidden needs a page (document and window)");
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
      const first = batch === null ? Promise.resolve() : doFetch(list[0].url, { method: "POST", headers: batch.headers,
        body: batch.body as BodyInit, redirect: "manual", keepalive: true })
        .then(async (response) => {
          const body = await readReply(response, 1 << 16, AbortSignal.timeout(Math.ceil((options.timeout ?? 30) * 1000)));
          if (response.status >= 200 && response.status < 300) {
            checkAnswer(body, batch.id, batch.items.length);
            await acknowledge(this.store, batch, this.clock());
          }
        });
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
