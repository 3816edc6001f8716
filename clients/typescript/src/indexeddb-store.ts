/**
 * The browser's store, `IndexedDBStore`: a device's state and outbox in the origin's IndexedDB, every transaction
 * that may write ONE readwrite transaction over both (`state.ts` says what a store keeps and promises).
 */
import { StateError } from "./errors.js";
import { HeadBeyondPrefetch, PendingTransaction, migrateFormat1 } from "./state.js";
import type { OutboxItem, StateStore, StoreTransaction, TransactOptions } from "./state.js";

/** Opens a request's result as a promise. */
function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/**
 * The state in the browser's IndexedDB: database `ldp-telemetry` (version 2), object store `state` (one JSON value
 * under `key`: the device state and the outbox's size) and object store `outbox` (one record per report, under
 * `[key, id]`). Every transaction that may write is ONE readwrite transaction over both: IndexedDB runs readwrite
 * transactions on the same stores one at a time across every tab and worker of the origin, and commits each whole or
 * not at all, so a second tab waits and then sees the first one's charge, and a tab closed mid-transaction leaves the
 * state before it. A record reads and writes the small state and adds one outbox record: its cost does not grow with
 * the queue. Reads run in `readonly` transactions and write nothing; a state that is missing while outbox records
 * under `key` remain, or that cannot be read, is a `StateError`.
 *
 * Not localStorage: Chromium keeps a copy of localStorage per renderer and syncs the tabs' copies asynchronously, so a
 * tab can read a stale state even under a Web Lock — the two-tab test (tests/clients/test_typescript_e2e.py) saw two
 * tabs spend 213 ε of a 200 ε budget that way.
 */
export class IndexedDBStore implements StateStore {
  private db: Promise<IDBDatabase> | undefined;

  constructor(readonly key: string, private readonly factory: IDBFactory | undefined = globalThis.indexedDB) {
    if (factory === undefined) throw new Error("IndexedDBStore needs indexedDB (a browser page or worker)");
  }

  /** Every `IndexedDBStore` of this realm on `key` has the outbox of `key`. */
  get outboxKey(): string {
    return `indexeddb\0${this.key}`;
  }

  private open(): Promise<IDBDatabase> {
    if (this.db === undefined) {
      this.db = new Promise((resolve, reject) => {
        const req = (this.factory as IDBFactory).open("ldp-telemetry", 2);
        req.onupgradeneeded = () => {
          const db = req.result;
          for (const name of ["state", "outbox"]) if (!db.objectStoreNames.contains(name)) db.createObjectStore(name);
        };
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    }
    return this.db;
  }

  async transact<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions = {}): Promise<T> {
    for (;;) {
      try {
        return await this.attempt(fn, options);
      } catch (err) {
        if (!(err instanceof HeadBeyondPrefetch)) throw err;
        options = { ...options, head: err.wanted };
      }
    }
  }

  private async attempt<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions): Promise<T> {
    const db = await this.open();
    const mode = options.readOnly ? "readonly" : "readwrite";
    const tx = db.transaction(["state", "outbox"], mode, { durability: "strict" });
    const states = tx.objectStore("state"), outbox = tx.objectStore("outbox");
    const done = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onabort = () => reject(tx.error ?? new Error("the IndexedDB transaction was aborted"));
    });
    done.catch(() => undefined); // awaited below; a failure before then must not be reported as unhandled
    let out!: T;
    let failed: { error: unknown } | undefined;
    try {
      const [stateText, committed, migrated] = await readStored(states, outbox, this.key);
      const limit = Math.min(options.head ?? 0, committed);
      const prefetched = migrated ??
        (limit > 0 ? ((await request(outbox.getAll(keyRange(this.key), limit))) as OutboxItem[]) : []);
      const pending = new PendingTransaction(stateText, committed,
        (skip, n) => prefetched.slice(skip, skip + n), migrated !== null ? Infinity : limit);
      out = fn(pending);
      if (!options.readOnly && (migrated !== null ? pending.state !== null : pending.changed)) {
        await writeChanges(states, outbox, this.key, pending, prefetched, migrated);
      }
    } catch (error) {
      failed = { error };
      try {
        tx.abort(); // nothing is written
      } catch {
        /* already finished */
      }
    }
    try {
      await done;
    } catch (error) {
      if (failed === undefined) throw error;
    }
    if (failed !== undefined) throw failed.error;
    return out;
  }
}

/** All of `key`'s outbox records. */
function keyRange(key: string): IDBKeyRange {
  return IDBKeyRange.bound([key, -Infinity], [key, Infinity]);
}

/** The state under a key as a transaction read it: the device state as JSON text (`null`: none yet), how many reports
 * of the outbox it counts, and a format-1 state's outbox, migrated (`null` for a format-2 state). */
type Stored = [stateText: string | null, committed: number, migrated: OutboxItem[] | null];

/** Reads the state under `key` in `states` (counting `key`'s records in `outbox` when it is missing): a `StateError`
 * when it is missing while outbox records remain, or damaged. */
async function readStored(states: IDBObjectStore, outbox: IDBObjectStore, key: string): Promise<Stored> {
  const raw = (await request(states.get(key))) as string | undefined;
  const where = `IndexedDB ldp-telemetry, key ${JSON.stringify(key)}: the state is`;
  const reset = `; to start over as a new device, delete the key's records in "state" and "outbox" first`;
  if (raw === undefined) {
    const left = (await request(outbox.count(keyRange(key)))) as number;
    if (left > 0) {
      throw new StateError(`${where} missing but ${left} outbox record(s) remain: what the device spent is ` +
        `unknown, so it is not opened as a new one${reset}`);
    }
    return [null, 0, null];
  }
  let doc: Record<string, unknown> | null = null;
  try {
    doc = JSON.parse(raw);
  } catch {
    /* damaged: below */
  }
  if (doc?.format === 1) {
    const m = migrateFormat1(doc);
    return [JSON.stringify(m.state), m.outbox.length, m.outbox];
  }
  if (typeof doc?.device === "object" && doc.device !== null && Number.isSafeInteger(doc.pending)) {
    return [JSON.stringify(doc.device), doc.pending as number, null];
  }
  throw new StateError(`${where} damaged${reset}`);
}

/** Writes under `key` what transaction `pending` changed: a format-1 state's outbox (`migrated`) put in `outbox`, the
 * records it dropped deleted (found in `prefetched`, the head read beforehand, or read now), those it appended put,
 * then the state in `states`. */
async function writeChanges(states: IDBObjectStore, outbox: IDBObjectStore, key: string, pending: PendingTransaction,
  prefetched: readonly OutboxItem[], migrated: readonly OutboxItem[] | null): Promise<void> {
  if (migrated !== null) for (const item of migrated) outbox.put(item, [key, item.id]);
  if (pending.dropped > 0) {
    const last = pending.dropped <= prefetched.length
      ? prefetched[pending.dropped - 1].id
      : ((await request(outbox.getAllKeys(keyRange(key), pending.dropped))) as Array<[string, number]>)
        [pending.dropped - 1][1];
    outbox.delete(IDBKeyRange.bound([key, -Infinity], [key, last]));
  }
  for (const item of pending.appended) outbox.put(item, [key, item.id]);
  states.put(JSON.stringify({ device: pending.state, pending: pending.pending }), key);
}
