/**
 * A device's state for one collection, and where it is kept: the device secret and the upload salt, the budget
 * totals, the memoized charges, the metrics' cohorts and the pinned upload batch (`DeviceState`, one small JSON
 * document), and the outbox of envelope lines (kept apart, appended to and dropped from its head). Both change only
 * in a `StateStore` transaction, which commits the state and the outbox together or not at all: a crash never leaves
 * a report without its charge, nor a charge counted twice, and a second tab or process waits for the first one's
 * transaction, so two never spend the same budget. Because the outbox is not rewritten, recording costs the same
 * with ten reports queued or ten thousand. The Python client's state file (`ldp.client.state`, SQLite) keeps the
 * same things.
 *
 * Reads write nothing: a transaction that changed neither the state nor the outbox commits nothing (no write, no
 * sync), so opening an existing store and every query leave it as they found it, and only a transaction that
 * changes something repairs what a killed process left. A store fails closed: a state that is missing while
 * traces of it remain (outbox records, a log, a temporary state file), or that cannot be read, is a `StateError`,
 * never a new device with nothing spent beside reports charged to the old one.
 *
 * The stores: `MemoryStore` here; `IndexedDBStore` in a page (`indexeddb-store.ts`); `FileStore` in Node (`node.ts`).
 */
/** The state format this version writes (1: the outbox inside the document, 0.1.x). */
export const STATE_FORMAT = 2;

/** One device's state for one collection (everything but the outbox). */
export interface DeviceState {
  readonly format: 2;
  readonly collection: string;
  /** 32 bytes of the CSPRNG, hex; each memoizing metric's secret derives from it. Never sent. `null` while the
   * device opted out (`optedOut`): `optIn` draws a fresh one. */
  secret: string | null;
  /** 32 random bytes, hex: keys the upload batch ids (`batchId`). */
  readonly salt: string;
  /** The latest clock reading seen (seconds): the ledger's clock never goes back. */
  clock: number;
  /** Per scope (a metric, or `*` for the collection): the current window, its (ε, δ) and the lifetime's. */
  totals: Record<string, { window: number; spent: [number, number]; lifetime: [number, number] }>;
  /** Memoized charges: per `metric\0memo key hex`, [reports, ε, δ] charged so far. */
  memo: Record<string, [number, number, number]>;
  /** Charge-on-change streams (`thresh`): per `metric\0stream key hex`, [the last value's key hex, its epoch]
   * (absent in states made before the first such metric). */
  changes?: Record<string, [string, number]>;
  /** Each metric's cohort, per `metric\0params fingerprint` (drawn once, kept). */
  cohorts: Record<string, number>;
  /** The next outbox id (ids are local, increasing, never reused, never sent). */
  nextId: number;
  /** The batch pinned for upload — the `count` oldest reports of the outbox, under batch id `id` — until the
   * collector acknowledged it. */
  batch: { id: string; count: number } | null;
  /** When the last batch was acknowledged (seconds; `null`: never). */
  lastUpload: number | null;
  /** Reports acknowledged, per metric. */
  uploaded: Record<string, number>;
  /** Reports deleted unsent by `TelemetryClient.optOut`, per metric (absent in states made before it was kept, and
   * until the first opt-out that deleted a report: none). The Kotlin client's `state.json` keeps the same key. */
  discarded?: Record<string, number>;
  /** Bytes of the reports in the outbox, pinned ones included: each envelope line's UTF-8 bytes plus one (its
   * newline), what `maxOutboxBytes` caps (absent in states made before the cap: counted by the next record). */
  outboxBytes?: number;
  /** The opt-out marker (`TelemetryClient.optOut`): while `true`, nothing is recorded, and the outbox, the secret,
   * the cohorts and the memoized and charge-on-change records are gone; the budget totals stay. */
  optedOut?: boolean;
  /** The OpenTelemetry reader's tally of the current window (`ldp-telemetry-client/otel`): what the instruments the
   * spec declares measured in it so far, kept so that a restart continues the window (absent without the reader, and
   * while opted out). Never sent. */
  otel?: unknown;
}

/** One report waiting in the outbox: its local id, its metric and its upload line (an envelope, one line). */
export interface OutboxItem {
  readonly id: number;
  readonly metric: string;
  readonly line: string;
}

/** What a transaction sees and changes. Nothing is written unless the transaction's function returns having changed
 * the state or the outbox. */
export interface StoreTransaction {
  /** The device's state (`null` before the first commit). Change it in place, or assign a new one; a transaction
   * that leaves it `null` writes nothing. */
  state: DeviceState | null;
  /** Reports waiting: the committed ones not dropped, and those appended in this transaction. */
  readonly pending: number;
  /** Adds a report to the outbox, committed with the state. */
  append(item: OutboxItem): void;
  /** The `n` oldest committed reports not dropped in this transaction (fewer if fewer wait); `n` at most the `head`
   * the transaction was opened with. */
  head(n: number): OutboxItem[];
  /** Drops the `n` oldest committed reports (they were acknowledged). */
  dropHead(n: number): void;
}

/** How a transaction is opened: `head`, the most reports its function may read with `head(n)` (read before it
 * runs, since the function itself is synchronous). */
export interface TransactOptions {
  readonly head?: number;
  /** Reads only: nothing is written, whatever the function changed. */
  readonly readOnly?: boolean;
}

/** Where a device's state and outbox live. `transact` runs `fn` exclusively (across tabs, workers and processes
 * where the store is shared) and commits what it changed atomically; if `fn` throws, nothing is written. */
export interface StateStore {
  transact<T>(fn: (tx: StoreTransaction) => T, options?: TransactOptions): Promise<T>;
  /** The same for every store of this JavaScript realm on this outbox (a `FileStore`'s folder, an `IndexedDBStore`'s
   * key), so that their uploads take turns (`upload`); absent, the store object itself. */
  readonly outboxKey?: unknown;
}

/** The transaction's state, which `TelemetryClient.open` made (a `ValueError` if it is gone). */
export function live(tx: StoreTransaction): DeviceState {
  if (tx.state === null) throw new Error("the client's state is gone");
  return tx.state;
}

/** `ValueError` unless `line` and `metric` can be kept as one outbox record (one line; a metric without tabs). */
export function checkOutboxItem(item: OutboxItem): void {
  if (item.line.includes("\n") || /[\t\n]/.test(item.metric) || !Number.isSafeInteger(item.id)) {
    throw new Error("an outbox record is one line, its metric has no tab, its id is an integer");
  }
}

/** Thrown by `head` past what the transaction read beforehand: the store runs the transaction again, reading
 * `wanted` reports first (its function sees a fresh state each time, so nothing of the first run remains). */
export class HeadBeyondPrefetch extends Error {
  override name = "HeadBeyondPrefetch";
  constructor(readonly wanted: number) {
    super(`read past the prefetched outbox (${wanted})`);
  }
}

/**
 * The transaction bookkeeping every store shares: the state (parsed afresh for each transaction, so a throwing
 * function leaves no trace), the committed head it may read, the appended items and how many were dropped.
 */
export class PendingTransaction implements StoreTransaction {
  state: DeviceState | null;
  readonly appended: OutboxItem[] = [];
  dropped = 0;

  constructor(private readonly stateText: string | null, private readonly committed: number,
    private readonly readHead: (skip: number, n: number) => OutboxItem[], private readonly headLimit: number) {
    this.state = stateText === null ? null : (JSON.parse(stateText) as DeviceState);
  }

  /** Whether there is anything to commit: a state (not `null`) that differs from the one read, or the outbox changed. */
  get changed(): boolean {
    return this.state !== null &&
      (this.appended.length > 0 || this.dropped > 0 || JSON.stringify(this.state) !== this.stateText);
  }

  get pending(): number {
    return this.committed - this.dropped + this.appended.length;
  }

  append(item: OutboxItem): void {
    checkOutboxItem(item);
    this.appended.push({ id: item.id, metric: item.metric, line: item.line });
  }

  head(n: number): OutboxItem[] {
    const take = Math.max(0, Math.min(n, this.committed - this.dropped));
    if (this.dropped + take > this.headLimit) throw new HeadBeyondPrefetch(this.dropped + take);
    return take === 0 ? [] : this.readHead(this.dropped, take);
  }

  dropHead(n: number): void {
    this.dropped += Math.max(0, Math.min(n, this.committed - this.dropped));
  }
}

/** The state and outbox in memory (tests, simulations, a page that keeps nothing): transactions run one at a time. */
export class MemoryStore implements StateStore {
  private text: string | null = null;
  private outbox: OutboxItem[] = [];
  private start = 0;
  private queue: Promise<unknown> = Promise.resolve();

  transact<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions = {}): Promise<T> {
    const run = this.queue.then(() => {
      const committed = this.outbox.length - this.start;
      const tx = new PendingTransaction(this.text, committed,
        (skip, n) => this.outbox.slice(this.start + skip, this.start + skip + n), options.head ?? Infinity);
      const out = fn(tx);
      if (tx.changed && !options.readOnly) {
        this.text = JSON.stringify(tx.state);
        this.start += tx.dropped;
        this.outbox.push(...tx.appended);
        if (this.start > 1024 && this.start * 2 > this.outbox.length) {
          this.outbox = this.outbox.slice(this.start);
          this.start = 0;
        }
      }
      return out;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** What `items` weigh in the outbox (`DeviceState.outboxBytes`): each line's UTF-8 bytes plus one. */
export function outboxBytes(items: readonly OutboxItem[]): number {
  const encoder = new TextEncoder();
  return items.reduce((n, item) => n + encoder.encode(item.line).length + 1, 0);
}

/** A format-1 state (0.1.x: the outbox inside the document) as a format-2 state and its outbox. */
export function migrateFormat1(doc: Record<string, unknown>): { state: DeviceState; outbox: OutboxItem[] } {
  const { outbox, batch, format: _format, ...rest } = doc as {
    outbox: Array<{ id: number; metric: string; line: string }>;
    batch: { id: string; ids: number[] } | null;
    format: number;
  } & Record<string, unknown>;
  const items = (outbox ?? []).map((o) => ({ id: o.id, metric: o.metric, line: o.line }));
  const state = { ...rest, format: STATE_FORMAT, batch: batch ? { id: batch.id, count: batch.ids.length } : null } as
    unknown as DeviceState; // its outboxBytes are counted by the next record
  return { state, outbox: items };
}
