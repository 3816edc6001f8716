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

/**
 * The state in the browser's IndexedDB: database `ldp-telemetry`, object store `state`, one JSON value under `key`.
 * Every update is ONE readwrite transaction (read, `fn`, write): IndexedDB runs readwrite transactions on the same
 * store one at a time across every tab and worker of the origin, and commits each whole or not at all, so a second
 * tab waits and then sees the first one's charge, and a tab closed mid-update leaves the state before it.
 *
 * Not localStorage: Chromium keeps a copy of localStorage per renderer and syncs the tabs' copies asynchronously, so a
 * tab can read a stale state even under a Web Lock — the two-tab test (tests/clients/test_typescript_e2e.py) saw two
 * tabs spend 213 ε of a 200 ε budget that way.
 */
export class IndexedDBStore implements StateStore {
  private db: Promise<IDBDatabase> | undefined;

  constructor(readonly key: string, private readonly factory: IDBFactory | undefined = globalThis.indexedDB) {
    if (factory === undefined) throw new LdpValueError("IndexedDBStore needs indexedDB (a browser page or worker)");
  }

  private open(): Promise<IDBDatabase> {
    if (this.db === undefined) {
      this.db = new Promise((resolve, reject) => {
        const req = (this.factory as IDBFactory).open("ldp-telemetry", 1);
        req.onupgradeneeded = () => req.result.createObjectStore("state");
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    }
    return this.db;
  }

  async update<T>(fn: (state: DeviceState | null) => [DeviceState, T]): Promise<T> {
    const db = await this.open();
    return new Promise<T>((resolve, reject) => {
      const tx = db.transaction("state", "readwrite", { durability: "strict" });
      const store = tx.objectStore("state");
      let out: T;
      let failed: unknown;
      const get = store.get(this.key);
      get.onsuccess = () => {
        try {
          const raw = get.result as string | undefined;
          const [next, value] = fn(raw === undefined ? null : (JSON.parse(raw) as DeviceState));
          out = value;
          store.put(JSON.stringify(next), this.key);
        } catch (err) {
          failed = err;
          tx.abort(); // nothing is written
        }
      };
      tx.oncomplete = () => resolve(out);
      tx.onabort = () => reject(failed ?? tx.error);
      tx.onerror = () => undefined; // onabort follows
    });
  }
}
