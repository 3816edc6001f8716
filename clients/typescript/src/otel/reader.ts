/**
 * A privatizing `MetricReader` for the OpenTelemetry JS SDK (`@opentelemetry/sdk-metrics`): what an app measures
 * with plain OpenTelemetry code leaves the device only as locally private reports of the instruments its spec
 * declares. The Python client's `ldp/otel/reader.py`, with the same window values. Added to an existing setup in one
 * line:
 *
 * ```ts
 * const provider = new MeterProvider({ readers: [
 *   new PrivatizingMetricReader({ spec, store, url: COLLECTOR, token: TOKEN }),
 * ] });
 * ```
 *
 * **Where it makes sense.** OpenTelemetry aggregates per process; local privacy needs one report per person per
 * window. So the reader is for apps where one process is one person: a browser tab, a desktop or command-line app in
 * Node. On a server that serves many people it would report the server.
 *
 * **What it does.** The SDK asks a reader how to aggregate each instrument by its type only (counter, histogram...),
 * never its name: so every instrument of a type no declared metric uses gets the drop aggregation (not even added up
 * for this reader), and an instrument of a declared type that the spec does not declare is dropped at each
 * collection, before anything is added up for a window (the app's other readers are not affected either way). A
 * declared instrument collected as another kind than the spec says is dropped too, named in `misfits` (and the
 * OpenTelemetry diagnostic log), and its metrics are not reported while it does not fit. The declared ones are
 * collected with delta temporality every `collectIntervalMillis` and at each window's end (`nextCollectionMillis`),
 * and added to the window's tally (`WindowTally`);
 * what a collection brings counts in the window the measurements began in (the collection comes first, then the
 * window is rolled). When the spec's window ends, each metric's value of the window is recorded through
 * `TelemetryClient`: validated, charged to the device's budget ledger at its protocol's cost, randomized and queued;
 * the queue is uploaded to `url` when the spec's upload interval allows. A window's reports carry that window: the
 * client's clock reads the window's last millisecond while they are recorded (the ledger never reopens a window it
 * has moved past).
 *
 * **Stopping mid-window.** The tally is kept in the device's state (`StateStore`, beside the budget ledger: a
 * `FileStore` in Node, an `IndexedDBStore` in a page, by default `IndexedDBStore("ldp-telemetry")`) at each
 * collection, so a process or page that stops mid-window continues it at its next start, and a window that ended
 * while nothing ran is reported at that start.
 * `reportOnShutdown` instead reports the window at shutdown and drops the rest of it (for a process that runs once
 * per window); `closeWindow()` does so on demand. An ended window is taken off the device before its reports are
 * recorded, so that a process killed in between loses them, never reports the window twice.
 *
 * **Budget.** Each window costs at most the declared metrics' per-report costs; a metric whose budget is spent is
 * skipped for the window, never reported twice. While the device is opted out (`TelemetryClient.optOut`), the
 * reader keeps no tally and records nothing.
 *
 * **Two-aggregator metrics** (`trust` `two-aggregator` or `two-aggregator+local`, docs/two-aggregators.md): the reader
 * is given their tasks as `twoAggregator` (what `twoAggregatorMetrics` of `ldp-telemetry-client/dap` makes, after
 * `loadDap()`), which it hands to its client, and is refused at construction when a declared one has none. The
 * window's value is the one the spec's `otel` table gives, a boolean or a category index: the protocol's value, which
 * the client turns into the task's Prio3 measurement, charges and queues as a DAP report line. Uploads with `url` and
 * `token` send these reports to their tasks' leaders first (`TelemetryClient.upload`); without them, a reader given
 * tasks still sends them (`TelemetryClient.uploadReports`, until the outbox's head is a report for the ingest
 * service). This entry only imports the `dap` entry's types: its WebAssembly is loaded by the app that uses it.
 *
 * Browser-safe: nothing here imports `node:*`. What the SDK is told about the instruments is `instruments.ts`; the
 * window values, `window.ts`; the tally in the device's state, `tally-store.ts`.
 */
import { diag } from "@opentelemetry/api";
import { AggregationTemporality, DataPointType, MetricReader } from "@opentelemetry/sdk-metrics";
import type { MetricData } from "@opentelemetry/sdk-metrics";
import { TelemetryClient } from "../client.js";
import type { TwoAggregatorMetrics } from "../dap-hooks.js";
import type { Endpoints } from "../endpoints.js";
import { BudgetExceeded, LdpRefusal, OptedOutError, OutboxFullError } from "../errors.js";
import type { RandomSource } from "../random.js";
import type { CollectionSpec } from "../spec.js";
import { IndexedDBStore } from "../indexeddb-store.js";
import type { StateStore } from "../state.js";
import type { UploadOptions } from "../uploader.js";
import { checkIngestUrl, shownUrl, uploadFailure } from "./ingest-url.js";
import { aggregationFor, checkTasks, declaredMetrics, kindOfData } from "./instruments.js";
import { loadTally, saveTally } from "./tally-store.js";
import { MIN_COLLECT_INTERVAL_MILLIS, WindowTally, nextCollectionMillis } from "./window.js";
import type { Declared, TallyPoint, WindowValue } from "./window.js";

/** How often the reader collects by default (ms): the tally in the store is at most this old. */
export const DEFAULT_COLLECT_INTERVAL_MILLIS = 60_000;

/** What became of one metric's value of a window: `"recorded"` (charged, randomized, queued), or why not:
 * `"budget"` (its budget is spent), `"opted out"`, `"outbox full"`, or `"refused: <code>"` (a value its protocol
 * refuses, e.g. a string an `sfp` alphabet does not hold: nothing charged). */
export type RecordOutcome = "recorded" | "budget" | "opted out" | "outbox full" | `refused: ${string}`;

/** One window reported: its index (`floor(unix seconds / window_seconds)`), what became of each metric that had a
 * value, and how many data points could not be mapped (never reported). */
export interface WindowReport {
  readonly window: number;
  readonly outcome: Readonly<Record<string, RecordOutcome>>;
  readonly unfit: number;
}

/** The store of the main example of the README: the page's IndexedDB, key `ldp-telemetry`. */
export const DEFAULT_STORE_KEY = "ldp-telemetry";

/** How a `PrivatizingMetricReader` is made. */
export interface PrivatizingReaderOptions {
  /** The collection spec: the main entry's `CollectionSpec`, or this entry's (which reads the `otel` keys too). */
  readonly spec: CollectionSpec;
  /** The device's state: its budget ledger, outbox and window tally (one per device: a `FileStore` folder in Node,
   * an `IndexedDBStore` key in a page, a `MemoryStore` for a test or a simulation). Default, where the platform has
   * IndexedDB (a page, a worker): `new IndexedDBStore("ldp-telemetry")`; elsewhere it must be given. */
  readonly store?: StateStore;
  /** The `ldp serve` upload endpoint, `https://<host>/v1/reports` (the path it takes reports on, after any prefix a
   * proxy adds), or a list of replicas' endpoints, with `token`; leave both out to record only (the app uploads with
   * its own `TelemetryClient` on the same store). Refused when made if it is not one (the service's base URL, say). An
   * upload that fails is logged through the OpenTelemetry diagnostic logger (`diag.warn`, with its HTTP status and
   * the URL) and tried again at the next collection. */
  readonly url?: Endpoints;
  /** The app's upload token, with `url`. */
  readonly token?: string;
  /** The instrument names the app means to privatize, each checked against the spec now (default: every instrument
   * the spec declares). */
  readonly instruments?: readonly string[];
  /** How often to collect, in milliseconds (default 60 000; 0: only on `forceFlush`, `closeWindow` and shutdown). */
  readonly collectIntervalMillis?: number;
  /** Report the window at shutdown and drop the rest of it (for a process that runs once per window). */
  readonly reportOnShutdown?: boolean;
  /** Unix seconds (default `Date.now() / 1000`): the windows and the client's clock. */
  readonly clock?: () => number;
  /** The client's randomness (default: the platform CSPRNG). */
  readonly rng?: RandomSource;
  /** The client's outbox cap (`ClientOptions.maxOutboxBytes`). */
  readonly maxOutboxBytes?: number;
  /** How to upload (`TelemetryClient.upload`'s options). */
  readonly uploadOptions?: UploadOptions;
  /** The two-aggregator metrics' tasks, for the client (`ClientOptions.twoAggregator`: `twoAggregatorMetrics(spec,
   * tasks)` of `ldp-telemetry-client/dap`); required when a declared metric's `trust` is a two-aggregator one. */
  readonly twoAggregator?: TwoAggregatorMetrics;
}

/** The outcome of a refused record, or `null` for an error that is not a refusal (thrown on). */
function outcomeOf(err: unknown): RecordOutcome | null {
  if (err instanceof BudgetExceeded) return "budget";
  if (err instanceof OptedOutError) return "opted out";
  if (err instanceof OutboxFullError) return "outbox full";
  if (err instanceof LdpRefusal) return `refused: ${err.code}`;
  return null;
}

/**
 * A `MetricReader` that turns each window of the instruments a spec declares into one locally private report per
 * metric, recorded (and uploaded) by a `TelemetryClient` of the device's store. The module says how.
 *
 * Refused at construction, with a `RangeError` that says why: a spec that declares none of the instruments, an
 * `instruments` list naming one the spec does not declare, a bad `collectIntervalMillis`, a `url` that is not an
 * upload endpoint (`checkIngestUrl`), `url` without `token` (or the reverse), no `store` where there is no IndexedDB
 * (Node), a declared two-aggregator metric without its task in `twoAggregator`. The spec itself refuses a mapping
 * whose window value its protocol cannot encode (`SpecError`). Opening the device's state is asynchronous: a store that cannot be opened
 * makes `forceFlush`, `closeWindow` and `shutdown` reject (and is logged).
 */
export class PrivatizingMetricReader extends MetricReader {
  readonly spec: CollectionSpec;
  /** The metrics each declared instrument feeds, by its name in lowercase. */
  readonly declared: ReadonlyMap<string, readonly Declared[]>;
  /** Instruments dropped because they do not fit their declaration: name -> why. */
  readonly misfits = new Map<string, string>();
  /** Per window reported: its index and what became of each metric's value. */
  readonly reported: WindowReport[] = [];
  private readonly all: readonly Declared[];
  /** The instruments (lowercase) dropped as misfits: their metrics are not reported. */
  private readonly misfitKeys = new Set<string>();
  private readonly store: StateStore;
  private readonly url: Endpoints | undefined;
  private readonly token: string | undefined;
  private readonly interval: number;
  private readonly reportOnShutdown: boolean;
  private readonly clock: () => number;
  private readonly uploadOptions: UploadOptions;
  /** Whether the reader was given tasks: without `url`, it then sends the two-aggregator reports alone. */
  private readonly dap: boolean;
  private readonly opened: Promise<TelemetryClient>;
  private tally: WindowTally;
  /** The client's clock while a window's reports are recorded (the window's last millisecond). */
  private backdate: number | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private uploading: Promise<void> | null = null;

  constructor(options: PrivatizingReaderOptions) {
    const declared = declaredMetrics(options.spec, options.instruments);
    checkTasks(options.spec, declared, options.twoAggregator);
    const interval = options.collectIntervalMillis ?? DEFAULT_COLLECT_INTERVAL_MILLIS;
    if (!(interval === 0 || (interval >= MIN_COLLECT_INTERVAL_MILLIS && Number.isFinite(interval)))) {
      throw new RangeError("collectIntervalMillis must be 0 or a number of milliseconds >= " +
        `${MIN_COLLECT_INTERVAL_MILLIS}, got ${String(interval)}`);
    }
    if ((options.url === undefined) !== (options.token === undefined)) {
      throw new RangeError("give url and token together (or neither, to record only)");
    }
    if (options.url !== undefined) checkIngestUrl(options.url);
    if (options.store === undefined && (globalThis as { indexedDB?: unknown }).indexedDB === undefined) {
      throw new RangeError("give the device's store: there is no IndexedDB here (in Node: new FileStore(folder), " +
        "from ldp-telemetry-client/node)");
    }
    super({
      aggregationSelector: aggregationFor(declared),
      aggregationTemporalitySelector: () => AggregationTemporality.DELTA,
    });
    this.spec = options.spec;
    this.declared = declared;
    this.all = [...declared.values()].flat().sort((a, b) => (a.metric < b.metric ? -1 : 1));
    this.store = options.store ?? new IndexedDBStore(DEFAULT_STORE_KEY);
    this.url = options.url;
    this.token = options.token;
    this.interval = interval;
    this.reportOnShutdown = !!options.reportOnShutdown;
    const clock = options.clock ?? (() => Date.now() / 1000);
    this.clock = clock;
    this.uploadOptions = { ...options.uploadOptions };
    this.dap = options.twoAggregator !== undefined;
    // The window the reader starts in: the first collection's measurements were made from now on, so the open rolls
    // to it (not to the clock when the state opens, which may be later: they would count in a window after theirs).
    const born = this.window();
    this.tally = new WindowTally(born);
    this.opened = this.serial(async () => {
      const client = await TelemetryClient.open(this.spec, this.store, {
        clock: () => this.backdate ?? clock(), rng: options.rng, maxOutboxBytes: options.maxOutboxBytes,
        twoAggregator: options.twoAggregator,
      });
      this.tally = await loadTally(this.store, this.spec, this.tally);
      await this.roll(client, born); // a window that ended while nothing ran is reported now
      return client;
    });
    this.opened.catch((err) => diag.error(`ldp: the device's state could not be opened: ${String(err)}`));
  }

  /** The device's client (the one the reader records with), once its state is open: for `optOut`, `counts`,
   * `uploadWhenHidden`... */
  client(): Promise<TelemetryClient> {
    return this.opened;
  }

  /** The report lines waiting for upload, oldest first: the exact bytes that will leave the device (one envelope
   * each; a two-aggregator report's line holds its task ID and the sealed DAP report its leader gets). */
  async pending(): Promise<string[]> {
    await this.opened;
    const items = await this.store.transact((tx) => tx.head(tx.pending), { readOnly: true, head: Infinity });
    return items.map((item) => item.line);
  }

  /** What the device's ledger has charged (`TelemetryClient.spent`: one metric or all, this window or the
   * lifetime). */
  async spent(metric?: string, period: "window" | "lifetime" = "window"): Promise<{ epsilon: number; delta: number }> {
    return (await this.opened).spent(metric, period);
  }

  /** Bound to a `MeterProvider`: start collecting every `collectIntervalMillis`, and at each window's end. */
  protected override onInitialized(): void {
    if (this.interval > 0) this.schedule();
  }

  /** The next timed collection (`nextCollectionMillis`); the one after it is scheduled when it is done, until
   * shutdown. */
  private schedule(): void {
    this.timer = setTimeout(() => {
      this.collectNow().catch((err) => diag.error(`ldp: collection failed: ${String(err)}`))
        .finally(() => {
          if (this.timer !== undefined) this.schedule(); // not after shutdown
        });
    }, nextCollectionMillis(this.clock(), this.spec.windowSeconds, this.interval));
    (this.timer as { unref?: () => void }).unref?.(); // in Node, the reader does not keep the process alive
  }

  /** Collect now (and report a window that has ended), then upload if due. */
  protected override async onForceFlush(): Promise<void> {
    await this.collectNow();
  }

  /** Collect a last time, report the window if `reportOnShutdown`, wait for an upload under way. */
  protected override async onShutdown(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.collectNow();
    if (this.reportOnShutdown) await this.closeNow();
    await this.uploading;
  }

  /**
   * Report the current window now and drop the rest of it (what it measures later is not reported): for a process
   * that runs once per window. Collects first (a window that ended meanwhile is reported as usual), then records the
   * window's values with the client's own clock, then uploads if due. Resolves to what became of each metric (`{}`:
   * the window was closed already).
   */
  async closeWindow(): Promise<Readonly<Record<string, RecordOutcome>>> {
    await this.collectNow(false);
    return this.closeNow();
  }

  private async closeNow(): Promise<Readonly<Record<string, RecordOutcome>>> {
    const client = await this.opened;
    const outcome = await this.serial(async () => {
      const tally = this.tally;
      if (tally.closed) return {};
      const values = this.valuesOf(tally), unfit = tally.unfit;
      tally.close();
      // closed on the device before anything is recorded: never reported twice
      await saveTally(this.store, this.spec, this.tally);
      return this.report(client, tally.window, values, unfit, false);
    });
    await this.upload();
    return outcome;
  }

  /** The window of the clock now. */
  private window(): number {
    return Math.floor(this.clock() / this.spec.windowSeconds);
  }

  /** Runs `fn` after every operation before it (collections, reports, saves take turns). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Collect into the current window's tally (what was measured since the last collection counts in the window it
   * began in), then report the window if it has ended, else save the tally; then upload if due (`upload`: false leaves
   * that to the caller). */
  private async collectNow(upload = true): Promise<void> {
    const client = await this.opened;
    await this.serial(async () => {
      const { resourceMetrics, errors } = await this.collect();
      for (const err of errors) diag.warn(`ldp: an instrument's callback failed: ${String(err)}`);
      for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) this.add(metric);
      if (!(await this.roll(client, this.window()))) await saveTally(this.store, this.spec, this.tally);
    });
    if (upload) await this.upload();
  }

  /** Add a collected metric to the tally if the spec declares its instrument (dropped otherwise). */
  private add(metric: MetricData): void {
    const declared = this.declared.get(metric.descriptor.name.toLowerCase());
    if (declared === undefined) return; // an instrument of a declared type that is not declared: dropped here
    const kind = kindOfData(metric);
    if (kind === null || declared.some((d) => d.source.kind !== kind)) {
      this.misfit(metric.descriptor.name, `declared as a ${declared[0].source.kind}, collected as ` +
        `${kind ?? DataPointType[metric.dataPointType].toLowerCase().replace(/_/g, " ")}`);
      return;
    }
    for (const d of declared) this.tally.add(d, kind, metric.dataPoints as readonly TallyPoint[]);
  }

  /** Drop instrument `name`: its metrics are not reported while it does not fit. */
  private misfit(name: string, why: string): void {
    this.misfitKeys.add(name.toLowerCase());
    if (this.misfits.has(name)) return;
    this.misfits.set(name, why);
    diag.error(`ldp: instrument ${name} dropped: ${why} (fix the app or the spec's otel key)`);
  }

  /** Report the tally's window if `now` is a later one, and start (and save) a tally of `now`: whether it did. The
   * ended window is taken off the device first: a process killed before its reports are recorded loses them, never
   * reports them twice. */
  private async roll(client: TelemetryClient, now: number): Promise<boolean> {
    const ended = this.tally;
    if (ended.window >= now) return false;
    this.tally = new WindowTally(now);
    await saveTally(this.store, this.spec, this.tally);
    if (!ended.closed) await this.report(client, ended.window, this.valuesOf(ended), ended.unfit, true);
    return true;
  }

  /** The values of `tally`'s metrics, but those of misfit instruments. */
  private valuesOf(tally: WindowTally): Map<string, WindowValue> {
    return tally.values(this.all.filter((d) => !this.misfitKeys.has(d.source.instrument.toLowerCase())));
  }

  /** Record each metric's value of window `window` (in the metrics' order), with the client's clock at the window's
   * last millisecond if `backdate`. */
  private async report(client: TelemetryClient, window: number, values: ReadonlyMap<string, WindowValue>, unfit: number,
    backdate: boolean): Promise<Record<string, RecordOutcome>> {
    const outcome: Record<string, RecordOutcome> = {};
    this.backdate = backdate ? (window + 1) * this.spec.windowSeconds - 0.001 : null;
    try {
      for (const [metric, value] of values) {
        try {
          await client.record(metric, value);
          outcome[metric] = "recorded";
        } catch (err) {
          const why = outcomeOf(err);
          if (why === null) throw err;
          outcome[metric] = why;
        }
      }
    } finally {
      this.backdate = null;
    }
    this.reported.push({ window, outcome, unfit });
    const recorded = Object.values(outcome).filter((o) => o === "recorded").length;
    diag.info(`ldp: window ${window}: ${recorded} metric(s) recorded, ${values.size - recorded} skipped, ` +
      `${unfit} point(s) unfit`);
    return outcome;
  }

  /** Upload the outbox if reports wait and the spec's interval allows (one upload at a time; a failure leaves the
   * reports queued for the next try): to `url`, the two-aggregator reports first, to their leaders; without `url`,
   * the two-aggregator reports alone when the reader was given tasks. */
  private upload(): Promise<void> {
    const url = this.url, token = this.token;
    if ((url === undefined || token === undefined) && !this.dap) return Promise.resolve();
    this.uploading ??= (async () => {
      const client = await this.opened;
      if (!(await client.hasPending()) || (await client.nextUploadAt()) > this.clock()) return;
      try {
        if (url !== undefined && token !== undefined) await client.upload(url, token, this.uploadOptions);
        else await client.uploadReports(this.uploadOptions);
      } catch (err) {
        const where = url === undefined ? "the tasks' leaders"
          : (typeof url === "string" ? [url] : url).map(shownUrl).join(", ");
        diag.warn(`ldp: upload to ${where} failed: ${uploadFailure(err)}; the reports stay queued`);
      }
    })().finally(() => (this.uploading = null));
    return this.uploading;
  }
}
