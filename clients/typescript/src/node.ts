/**
 * Node only: `FileStore`, a device's state and outbox in a folder of files safe against crashes and shared safely
 * by every process of the machine.
 *
 * * `state.json`: `{"device": <DeviceState>, "outbox": [gen, start, end, first, count]}` — the state, and which
 *   bytes of which log are the waiting reports. Replaced whole (a temporary file written, fsynced, renamed over it,
 *   the folder fsynced), so a crash leaves the old state or the new one.
 * * `outbox.<gen>.log`: the reports, one `id TAB metric TAB line` per line, appended and fsynced BEFORE the state
 *   that counts them is written: bytes past the state's `end` (a crash between the two) are not reports and are cut
 *   off by the next append. Acknowledged reports are dropped by moving `start`; a log is copied forward (compacted)
 *   once its dropped head outweighs what remains.
 * * The lock is one the operating system releases when its holder dies, at any step and however long ago: an
 *   abstract Unix socket bound under a name derived from the folder (Linux), a named pipe (Windows), or an open
 *   file with `O_EXLOCK` (macOS and the BSDs). Binding or opening is the whole act of taking it, so no step exists at
 *   which a killed process could leave it held. Transactions of one process on one folder also queue in-process.
 *
 * Reads write nothing: opening a store and every query read `state.json` and the log under the lock and leave every
 * file as it was (no temporary file, no `fsync`). Temporary files and logs no state refers to, which a killed
 * process leaves, are removed by the next transaction that writes. The store fails closed: a `state.json` that
 * cannot be read, or one that is missing while an `outbox.<n>.log` or a temporary state file remains (`lock` alone
 * is not a trace), is a `LedgerError`: the budget is never silently reset, and a device is started over only by
 * deleting the whole folder.
 */
import {
  closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, readdirSync,
  realpathSync, renameSync, rmSync, statSync, writeSync, constants as fsConstants,
} from "node:fs";
import { createHash } from "node:crypto";
import { createServer, Server } from "node:net";
import { join } from "node:path";
import { LdpValueError, StateError } from "./errors.js";
import { PendingTransaction, migrateFormat1 } from "./state.js";
import type { DeviceState, OutboxItem, StateStore, StoreTransaction, TransactOptions } from "./state.js";

export { TelemetryClient } from "./client.js";
export { MemoryStore } from "./state.js";

/** The steps of a `FileStore` transaction, in order (what `FileStoreOptions.onStep` is told). */
export const FILE_STORE_STEPS = [
  "lock", "locked", "read", "log-written", "log-synced", "state-written", "state-synced", "state-renamed",
  "folder-synced", "retired", "unlocked",
] as const;
export type FileStoreStep = (typeof FILE_STORE_STEPS)[number];

/** How a `FileStore` is opened. */
export interface FileStoreOptions {
  /** How long a transaction waits for another process's lock before it fails (default 30 000 ms). */
  readonly lockWaitMs?: number;
  /** Dropped bytes at the head of a log past which it is compacted (default 1 MiB). */
  readonly compactBytes?: number;
  /** Told each step of each transaction (crash tests kill the process there); not for production use. */
  readonly onStep?: (step: FileStoreStep) => void;
}

/** A `FileStore` that could not be read or locked (the state is left as it was): a `StateError`. */
export class LedgerError extends StateError {
  override name = "LedgerError";
}

/** The traces of a state in a folder: a temporary state file, an outbox log (not `lock`). */
const TRACE = /^(?:state\.json\..*\.tmp|outbox\.\d+\.log)$/;
const RESET = "; to start over deliberately as a new device, delete the whole folder first";

interface Cursor {
  gen: number;
  start: number;
  end: number;
  first: number;
  count: number;
}

const BSD_O_EXLOCK = 0x20; // <fcntl.h> of macOS, FreeBSD, OpenBSD and NetBSD
const queues = new Map<string, Promise<unknown>>();

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Binds `name` (a socket or pipe): the server if bound, `null` if another process holds the name. */
function tryListen(name: string): Promise<Server | null> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(null) : reject(err)));
    server.listen({ path: name, exclusive: true }, () => {
      server.unref();
      resolve(server);
    });
  });
}

function tryExlock(path: string): number | null {
  try {
    return openSync(path, fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_NONBLOCK | BSD_O_EXLOCK, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EAGAIN" || code === "EWOULDBLOCK") return null;
    throw err;
  }
}

function errnoText(path: string, err: unknown): string {
  return `${path}: ${(err as Error).message}`;
}

/** One device's state and outbox in folder `dir` (created if missing). */
export class FileStore implements StateStore {
  readonly dir: string;
  private readonly lockWaitMs: number;
  private readonly compactBytes: number;
  private readonly onStep: ((step: FileStoreStep) => void) | undefined;
  private readonly lockName: string;
  private swept = false;

  constructor(dir: string, options: FileStoreOptions = {}) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const st = statSync(dir);
    if (!st.isDirectory()) throw new LdpValueError(`${dir} is not a folder: a FileStore keeps its files in a folder`);
    this.dir = realpathSync(dir);
    this.lockWaitMs = options.lockWaitMs ?? 30_000;
    this.compactBytes = options.compactBytes ?? 1 << 20;
    this.onStep = options.onStep;
    const id = createHash("sha256").update(`${this.dir}\0${st.dev}\0${st.ino}`).digest("hex").slice(0, 32);
    this.lockName = process.platform === "win32" ? `\\\\?\\pipe\\ldp-telemetry-${id}` : `\0ldp-telemetry/${id}`;
  }

  private step(s: FileStoreStep): void {
    if (this.onStep !== undefined) this.onStep(s);
  }

  private log(gen: number): string {
    return join(this.dir, `outbox.${gen}.log`);
  }

  private get statePath(): string {
    return join(this.dir, "state.json");
  }

  /** Takes the OS lock of the folder: resolves to its release. */
  private async lock(): Promise<() => void> {
    const deadline = Date.now() + this.lockWaitMs;
    const bsd = ["darwin", "freebsd", "openbsd", "netbsd"].includes(process.platform);
    if (!bsd && !["linux", "android", "win32"].includes(process.platform)) {
      throw new LedgerError(`FileStore has no lock that the OS releases on ${process.platform}`);
    }
    let pause = 1;
    for (;;) {
      if (bsd) {
        const fd = tryExlock(join(this.dir, "lock"));
        if (fd !== null) return () => closeSync(fd);
      } else {
        const server = await tryListen(this.lockName);
        if (server !== null) return () => server.close();
      }
      if (Date.now() > deadline) {
        throw new LedgerError(`${this.dir}: another process held the state for over ${this.lockWaitMs} ms`);
      }
      await sleep(pause);
      pause = Math.min(pause * 2, 50);
    }
  }

  private readState(): { state: string | null; cursor: Cursor; migrated: OutboxItem[] | null } {
    let text: string;
    try {
      text = readFileSync(this.statePath, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        const traces = readdirSync(this.dir).filter((name) => TRACE.test(name)).sort();
        if (traces.length > 0) {
          throw new LedgerError(`${this.statePath} is missing but ${traces.join(", ")} remain(s) in the folder: a ` +
            `device recorded here and what it spent cannot be known, so it is not opened as a new device${RESET}`);
        }
        return { state: null, cursor: { gen: 0, start: 0, end: 0, first: 1, count: 0 }, migrated: null };
      }
      throw new LedgerError(errnoText(this.statePath, err));
    }
    let doc: { device?: unknown; outbox?: unknown; format?: unknown };
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new LedgerError(`${this.statePath} is damaged: ${(err as Error).message}${RESET}`);
    }
    if (doc !== null && typeof doc === "object" && doc.format === 1) {
      const m = migrateFormat1(doc as Record<string, unknown>);
      return { state: JSON.stringify(m.state), cursor: { gen: 0, start: 0, end: 0, first: 1, count: 0 }, migrated: m.outbox };
    }
    const o = doc?.outbox;
    if (doc === null || typeof doc !== "object" || typeof doc.device !== "object" || doc.device === null ||
      !Array.isArray(o) || o.length !== 5 || !o.every((n) => Number.isSafeInteger(n) && n >= 0)) {
      throw new LedgerError(`${this.statePath} is damaged: not a FileStore state${RESET}`);
    }
    const cursor = { gen: o[0], start: o[1], end: o[2], first: o[3], count: o[4] };
    if (cursor.count > 0) {
      let size = 0;
      try {
        size = statSync(this.log(cursor.gen)).size;
      } catch {
        /* missing: size 0 */
      }
      if (size < cursor.end) {
        throw new LedgerError(`${this.log(cursor.gen)} is damaged: shorter than its committed ${cursor.end} bytes` +
          RESET);
      }
    }
    return { state: JSON.stringify(doc.device), cursor, migrated: null };
  }

  /** Up to `n` records from byte `from` (below `end`) of log `gen`, each with its length in bytes. */
  private readRecords(gen: number, from: number, end: number, n: number): Array<[OutboxItem, number]> {
    const out: Array<[OutboxItem, number]> = [];
    if (n <= 0 || from >= end) return out;
    const path = this.log(gen);
    const fd = openSync(path, "r");
    try {
      const chunk = Buffer.allocUnsafe(1 << 16);
      let carry = Buffer.alloc(0);
      let at = from;
      while (out.length < n && at < end) {
        const got = readSync(fd, chunk, 0, Math.min(chunk.length, end - at), at);
        if (got === 0) break;
        at += got;
        let buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, got)]) : chunk.subarray(0, got);
        let nl: number;
        while (out.length < n && (nl = buf.indexOf(10)) >= 0) {
          const record = buf.subarray(0, nl).toString("utf8");
          const t1 = record.indexOf("\t"), t2 = t1 < 0 ? -1 : record.indexOf("\t", t1 + 1);
          const id = Number(record.slice(0, t1));
          if (t2 < 0 || !Number.isSafeInteger(id)) throw new LedgerError(`${path} is damaged: a record is malformed`);
          out.push([{ id, metric: record.slice(t1 + 1, t2), line: record.slice(t2 + 1) }, nl + 1]);
          buf = buf.subarray(nl + 1);
        }
        carry = Buffer.from(buf);
      }
      if (out.length < n && carry.length) throw new LedgerError(`${path} is damaged: a record is cut short`);
    } finally {
      closeSync(fd);
    }
    return out;
  }

  private writeAtomically(target: string, text: string): void {
    const tmp = `${target}.${process.pid}.${Date.now().toString(16)}.tmp`;
    try {
      const fd = openSync(tmp, "w", 0o600);
      try {
        writeSync(fd, text);
        this.step("state-written");
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      this.step("state-synced");
      renameSync(tmp, target);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw new LedgerError(errnoText(target, err));
    }
    this.step("state-renamed");
    if (process.platform !== "win32") {
      const dfd = openSync(this.dir, "r");
      try {
        fsyncSync(dfd);
      } finally {
        closeSync(dfd);
      }
    }
    this.step("folder-synced");
  }

  /** Removes what a killed process left: temporary files and logs other than the current one, `gen` (under the
   * lock, in a transaction that writes, after the state was read: a damaged state or a missing one beside traces
   * never gets here). */
  private sweep(gen: number): void {
    for (const name of readdirSync(this.dir)) {
      if (name.endsWith(".tmp") || (/^outbox\.\d+\.log$/.test(name) && name !== `outbox.${gen}.log`)) {
        rmSync(join(this.dir, name), { force: true });
      }
    }
  }

  private runLocked<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions): T {
    const { state, cursor, migrated } = this.readState();
    this.step("read");
    const committed = migrated !== null ? migrated.length : cursor.count;
    const tx = new PendingTransaction(state, committed, (skip, n) => {
      if (migrated !== null) return migrated.slice(skip, skip + n);
      return this.readRecords(cursor.gen, cursor.start, cursor.end, skip + n).slice(skip).map(([r]) => r);
    }, options.head ?? Infinity);
    const out = fn(tx);
    const next: DeviceState | null = tx.state;
    if (next === null || options.readOnly || (migrated === null && !tx.changed)) return out; // a read: nothing written
    if (!this.swept) {
      this.sweep(cursor.gen);
      this.swept = true;
    }
    const appended = migrated !== null ? [...migrated.slice(tx.dropped), ...tx.appended] : tx.appended;
    if (migrated === null && tx.dropped > 0) {
      const dropped = this.readRecords(cursor.gen, cursor.start, cursor.end, tx.dropped);
      cursor.start += dropped.reduce((s, [, len]) => s + len, 0);
      cursor.count -= dropped.length;
      cursor.first += dropped.length;
    }
    if (appended.length > 0) {
      const path = this.log(cursor.gen);
      const text = appended.map((r) => `${r.id}\t${r.metric}\t${r.line}\n`).join("");
      let fd: number;
      try {
        fd = openSync(path, fsConstants.O_WRONLY | fsConstants.O_CREAT, 0o600);
      } catch (err) {
        throw new LedgerError(errnoText(path, err));
      }
      try {
        if (fstatSync(fd).size !== cursor.end) ftruncateSync(fd, cursor.end);
        const bytes = Buffer.from(text, "utf8");
        let at = 0;
        while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at, cursor.end + at);
        this.step("log-written");
        fsyncSync(fd);
        cursor.end += bytes.length;
        cursor.count += appended.length;
      } catch (err) {
        throw new LedgerError(errnoText(path, err));
      } finally {
        closeSync(fd);
      }
      this.step("log-synced");
    }
    let retired: string | null = null;
    if (cursor.count === 0 && cursor.end > 0) {
      retired = this.log(cursor.gen);
      cursor.gen += 1;
      cursor.start = 0;
      cursor.end = 0;
    } else if (cursor.start > this.compactBytes && cursor.start >= cursor.end - cursor.start) {
      const old = this.log(cursor.gen), fresh = this.log(cursor.gen + 1);
      const src = openSync(old, "r");
      try {
        const live = Buffer.alloc(cursor.end - cursor.start);
        for (let at = 0; at < live.length;) {
          const got = readSync(src, live, at, live.length - at, cursor.start + at);
          if (got === 0) throw new LedgerError(`${old} is damaged: shorter than its committed ${cursor.end} bytes`);
          at += got;
        }
        const dst = openSync(fresh, "w", 0o600);
        try {
          writeSync(dst, live);
          fsyncSync(dst);
        } finally {
          closeSync(dst);
        }
      } finally {
        closeSync(src);
      }
      retired = old;
      cursor.gen += 1;
      cursor.end -= cursor.start;
      cursor.start = 0;
    }
    const doc = { device: next, outbox: [cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count] };
    this.writeAtomically(this.statePath, JSON.stringify(doc));
    if (retired !== null) rmSync(retired, { force: true });
    this.step("retired");
    return out;
  }

  transact<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions = {}): Promise<T> {
    const previous = queues.get(this.dir) ?? Promise.resolve();
    const run = previous.then(async () => {
      this.step("lock");
      const release = await this.lock();
      try {
        this.step("locked");
        return this.runLocked(fn, options);
      } finally {
        release();
        this.step("unlocked");
      }
    });
    const tail = run.catch(() => undefined);
    queues.set(this.dir, tail);
    void tail.then(() => {
      if (queues.get(this.dir) === tail) queues.delete(this.dir);
    });
    return run;
  }
}
