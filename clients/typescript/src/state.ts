/**
 * A device's state for one collection, and where it is kept: the device secret and the upload salt, the budget
 * totals, the memoized charges, the metrics' cohorts, the outbox of envelope lines and the pinned upload batch, all
 * in ONE JSON document, changed only through `StateStore.update` — one atomic read-modify-write. A charge and the
 * report it pays for are written together or not at all, so a crash never leaves a report without its charge, nor
 * a charge counted twice; a second tab or process waits for the first one's update (the store's lock), so two never
 * spend the same budget. The Python client's state file (`ldp.client.state`, SQLite) keeps the same things.
 */
import { LdpValueError } from "./errors.js";

/** One JSON document per device and collection. */
export interface DeviceState {
  readonly format: 1;
  readonly collection: string;
  /** 32 bytes of `crypto.getRandomValues`, hex; each memoizing metric's secret derives from it. Never sent. */
  readonly secret: string;
  /** 32 random bytes, hex: keys the upload batch ids (`batch_id`). */
  readonly salt: string;
  /** The latest clock reading seen (seconds): the ledger's clock never goes back. */
  clock: number;
  /** Per scope (a metric, or `*` for the collection): the current window, its (ε, δ) and the lifetime's. */
  totals: Record<string, { window: number; spent: [number, number]; lifetime: [number, number] }>;
  /** Memoized charges: per `metric\0memo key hex`, [reports, ε, δ] charged so far. */
  memo: Record<string, [number, number, number]>;
  /** Each metric's cohort, per `metric\0params fingerprint` (drawn once, kept). */
  cohorts: Record<string, number>;
  /** Envelope lines waiting for upload, oldest first; ids are local, never reused, never sent. */
  outbox: Array<{ id: number; metric: string; window: number; line: string }>;
  nextId: number;
  /** The batch pinned for upload (its id and outbox ids) until the collector acknowledged it. */
  batch: { id: string; ids: number[] } | null;
  /** When the last batch was acknowledged (seconds; `null`: never). */
  lastUpload: number | null;
  /** Reports acknowledged, per metric. */
  uploaded: Record<string, number>;
}

/** Where a device's state lives. `update` runs `fn` on the current state (`null` before the first write) and
 * stores what it returns, atomically and exclusively: if `fn` throws, nothing is stored. */
export interface StateStore {
  update<T>(fn: (state: DeviceState | null) => [DeviceState, T]): Promise<T>;
}

/** The state in memory (tests, simulations, a page that keeps nothing): updates run one at a time. */
export class MemoryStore implements StateStore {
  private text: string | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  update<T>(fn: (state: DeviceState | null) => [DeviceState, T]): Promise<T> {
    const run = this.queue.then(() => {
      const [next, out] = fn(this.text === null ? null : (JSON.parse(this.text) as DeviceState));
      this.text = JSON.stringify(next);
      return out;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}

interface LockManagerLike {
  request<T>(name: string, options: { mode: "exclusive" }, callback: () => Promise<T> | T): Promise<T>;
}

interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/**
 * The state in the browser's `localStorage` under `key`, one JSON value. Safe against a crash: `setItem` replaces
 * the value whole, so a tab closed mid-update leaves the previous state. Safe against a second tab: every update
 * runs under the Web Locks API's exclusive lock of that name (`navigator.locks`), which the browser holds across
 * the tabs of the origin; a browser without Web Locks is refused, since two tabs could then both spend one budget.
 */
export class LocalStorageStore implements StateStore {
  constructor(readonly key: string, private readonly storage: StorageLike = globalThis.localStorage,
    private readonly locks: LockManagerLike | undefined = (globalThis as { navigator?: { locks?: LockManagerLike } })
      .navigator?.locks) {
    if (storage === undefined) throw new LdpValueError("LocalStorageStore needs localStorage (a browser page)");
    if (locks === undefined) {
      throw new LdpValueError("LocalStorageStore needs the Web Locks API (navigator.locks) so that two tabs never " +
        "spend one budget; this browser lacks it");
    }
  }

  update<T>(fn: (state: DeviceState | null) => [DeviceState, T]): Promise<T> {
    return (this.locks as LockManagerLike).request(`ldp-state:${this.key}`, { mode: "exclusive" }, () => {
      const raw = this.storage.getItem(this.key);
      const [next, out] = fn(raw === null ? null : (JSON.parse(raw) as DeviceState));
      this.storage.setItem(this.key, JSON.stringify(next));
      return out;
    });
  }
}
