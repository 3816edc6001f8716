// A small IndexedDB in memory, for testing `IndexedDBStore` under Node (which has no IndexedDB): the calls the store
// makes — `open` with an upgrade, transactions over object stores, `get`, `getAll`, `getAllKeys`, `count`, `put` and
// `delete` over array keys and key ranges, `abort` — with IndexedDB's rules where the store relies on them:
// transactions run one at a time in the order they were made, each on its own copy of the data that replaces the
// database's only when it completes (so an aborted one leaves nothing), a transaction completes once no request is
// pending when its last one has been answered, and a `readonly` one refuses writes. It counts what was written
// (`writes`: each `put` or `delete`) and the transactions of each mode (`transactions`), so a test can say that
// reading wrote nothing. `install()` sets the global `IDBKeyRange` the store uses; `uninstall()` restores it.

/** IndexedDB's order of keys: numbers, then strings, then arrays (element by element). */
export function compareKeys(a, b) {
  const rank = (k) => {
    if (typeof k === "number") return 0;
    if (typeof k === "string") return 1;
    if (Array.isArray(k)) return 2;
    throw new TypeError(`not a key this fake knows: ${String(k)}`);
  };
  const ra = rank(a), rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 2) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const c = compareKeys(a[i], b[i]);
      if (c !== 0) return c;
    }
    return a.length - b.length;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

export class FakeKeyRange {
  constructor(lower, upper) {
    this.lower = lower;
    this.upper = upper;
  }

  static bound(lower, upper) {
    return new FakeKeyRange(lower, upper);
  }

  includes(key) {
    return compareKeys(this.lower, key) <= 0 && compareKeys(key, this.upper) <= 0;
  }
}

const serial = (key) => JSON.stringify(key);
const matches = (query, key) => (query instanceof FakeKeyRange ? query.includes(key) : compareKeys(query, key) === 0);

class FakeRequest {
  result = undefined;
  error = null;
  onsuccess = null;
  onerror = null;
  onupgradeneeded = null;
}

class FakeObjectStore {
  constructor(tx, name) {
    this.tx = tx;
    this.name = name;
  }

  /** The entries of this store in the transaction's copy, in key order. */
  entries(query) {
    const data = this.tx.data.get(this.name);
    return [...data.values()].filter((e) => query === undefined || matches(query, e.key))
      .sort((x, y) => compareKeys(x.key, y.key));
  }

  get(key) {
    return this.tx.request(() => structuredClone(this.tx.data.get(this.name).get(serial(key))?.value));
  }

  getAll(query, count) {
    return this.tx.request(() => this.entries(query).slice(0, count ?? Infinity).map((e) => structuredClone(e.value)));
  }

  getAllKeys(query, count) {
    return this.tx.request(() => this.entries(query).slice(0, count ?? Infinity).map((e) => structuredClone(e.key)));
  }

  count(query) {
    return this.tx.request(() => this.entries(query).length);
  }

  put(value, key) {
    this.tx.writable();
    return this.tx.request(() => {
      this.tx.data.get(this.name).set(serial(key), { key: structuredClone(key), value: structuredClone(value) });
      return key;
    });
  }

  delete(query) {
    this.tx.writable();
    return this.tx.request(() => {
      const data = this.tx.data.get(this.name);
      for (const e of this.entries(query)) data.delete(serial(e.key));
    });
  }
}

class FakeTransaction {
  oncomplete = null;
  onabort = null;
  error = null;
  queue = [];
  finished = false;
  started = false;
  data = null;

  constructor(db, mode) {
    this.db = db;
    this.mode = mode;
    db.factory.transactions[mode] += 1;
  }

  objectStore(name) {
    if (!this.db.stores.has(name)) throw new Error(`NotFoundError: no object store ${name}`);
    return new FakeObjectStore(this, name);
  }

  writable() {
    if (this.mode !== "readwrite") {
      const err = new Error("the transaction is read-only");
      err.name = "ReadOnlyError";
      throw err;
    }
    if (this.finished) throw new Error("TransactionInactiveError");
    this.db.factory.writes += 1;
  }

  request(op) {
    if (this.finished) throw new Error("TransactionInactiveError");
    const req = new FakeRequest();
    this.queue.push({ req, op });
    return req;
  }

  start() {
    this.started = true;
    this.data = new Map([...this.db.stores].map(([name, entries]) => [name, new Map(
      [...entries].map(([k, e]) => [k, { key: structuredClone(e.key), value: structuredClone(e.value) }]))]));
    this.pump();
  }

  /** Answers the next request, then (on a later turn of the event loop, after whatever the answer made the caller
   * ask) the next; with none left, the transaction completes. */
  pump() {
    if (this.finished) return;
    const next = this.queue.shift();
    if (next === undefined) {
      this.finish(true);
      return;
    }
    try {
      next.req.result = next.op();
    } catch (error) {
      next.req.error = error;
      next.req.onerror?.({ target: next.req });
      this.abort();
      return;
    }
    next.req.onsuccess?.({ target: next.req });
    setImmediate(() => this.pump());
  }

  abort() {
    if (this.finished) throw new Error("InvalidStateError: the transaction has finished");
    this.finish(false);
  }

  finish(committed) {
    this.finished = true;
    if (committed && this.mode === "readwrite") this.db.stores = this.data;
    this.data = null;
    setImmediate(() => {
      (committed ? this.oncomplete : this.onabort)?.({ target: this });
      this.db.next();
    });
  }
}

class FakeDatabase {
  stores = new Map();
  version = 0;
  waiting = [];
  running = null;

  constructor(factory) {
    this.factory = factory;
  }

  get objectStoreNames() {
    return { contains: (name) => this.stores.has(name) };
  }

  createObjectStore(name) {
    this.stores.set(name, new Map());
  }

  transaction(names, mode = "readonly") {
    for (const name of names) if (!this.stores.has(name)) throw new Error(`NotFoundError: no object store ${name}`);
    const tx = new FakeTransaction(this, mode);
    this.waiting.push(tx);
    if (this.running === null) setImmediate(() => this.next());
    return tx;
  }

  /** Starts the next transaction once none runs. */
  next() {
    if (this.running !== null && !this.running.finished) return;
    this.running = this.waiting.shift() ?? null;
    this.running?.start();
  }
}

export class FakeIndexedDB {
  databases = new Map();
  /** Each `put` and `delete` made. */
  writes = 0;
  /** The transactions made, per mode. */
  transactions = { readonly: 0, readwrite: 0 };

  open(name, version = 1) {
    const req = new FakeRequest();
    setImmediate(() => {
      let db = this.databases.get(name);
      if (db === undefined) {
        db = new FakeDatabase(this);
        this.databases.set(name, db);
      }
      req.result = db;
      if (db.version < version) {
        db.version = version;
        req.onupgradeneeded?.({ target: req });
      }
      req.onsuccess?.({ target: req });
    });
    return req;
  }

  /** The records of object store `store` of database `name`, as `[key, value]` in key order (for tests to look at,
   * or to damage). */
  records(store, name = "ldp-telemetry") {
    const data = this.databases.get(name)?.stores.get(store) ?? new Map();
    return [...data.values()].sort((x, y) => compareKeys(x.key, y.key)).map((e) => [e.key, e.value]);
  }

  /** Sets (or with `undefined`, deletes) one record behind the store's back. */
  poke(store, key, value, name = "ldp-telemetry") {
    const data = this.databases.get(name).stores.get(store);
    if (value === undefined) data.delete(serial(key));
    else data.set(serial(key), { key, value });
  }

  /** Zeroes the counts. */
  resetCounts() {
    this.writes = 0;
    this.transactions = { readonly: 0, readwrite: 0 };
  }
}

let saved;

/** Sets the global `IDBKeyRange` (which `IndexedDBStore` uses) to the fake's. */
export function install() {
  saved = globalThis.IDBKeyRange;
  globalThis.IDBKeyRange = FakeKeyRange;
}

export function uninstall() {
  globalThis.IDBKeyRange = saved;
}
