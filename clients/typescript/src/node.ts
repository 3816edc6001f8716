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
 *
 * A full disk: `state.reserve` is `RESERVE_BYTES` (256 KiB) of zeros that a transaction which wrote leaves beside the
 * state when it is missing and the disk has room for it and as much again (written to a temporary file and renamed;
 * failing, for lack of room above all, is ignored: the next transaction that writes tries again). Reads never make
 * it. A transaction that fails for lack of room (`ENOSPC`, `EDQUOT`) without adding a report — an acknowledgement,
 * pinning a batch, an opt-out or opt-in — deletes the reserve and runs once more, so an app can still upload and
 * acknowledge on a full disk, which frees room; a record fails (`LedgerError`, `code` `ENOSPC` or `EDQUOT`) with
 * nothing charged and the reserve kept. The reserve holds no data: it is neither a trace of a state nor a temporary
 * file. The Python client keeps the same reserve (`ldp.client.reserve`).
 */
import {
  closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, readdirSync,
  realpathSync, renameSync, rmSync, statSync, unlinkSync, writeSync, constants as fsConstants,
} from "node:fs";
import * as fs from "node:fs";
import { createHash } from "node:crypto";
import { createServer, Server } from "node:net";
import { join } from "node:path";
import { StateError } from "./errors.js";
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

/** A `FileStore` that could not be read, locked or written (the state is left as it was): a `StateError`. `code` is
 * the system's error code when a file operation failed (`ENOSPC` and `EDQUOT`: the disk is full). */
export class LedgerError extends StateError {
  override name = "LedgerError";

  constructor(message: string, readonly code?: string) {
    super(message);
  }
}

/** The size of a `FileStore`'s reserve, `state.reserve`: 256 KiB of zeros, as the Python client's. */
export const RESERVE_BYTES = 256 * 1024;

/** The error codes of a full disk (or of a full quota). */
const FULL = ["ENOSPC", "EDQUOT"];

/** The traces of a state in a folder: a temporary state file, an outbox log (not `lock`, not `state.reserve`). */
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

/** `err`, a failed file operation on `path`, as a `LedgerError` keeping its code. */
function fileError(path: string, err: unknown): LedgerError {
  return new LedgerError(`${path}: ${(err as Error).message}`, (err as NodeJS.ErrnoException).code);
}

/** Whether `err` is a `LedgerError` of a file operation that failed for lack of room. */
function diskFull(err: unknown): err is LedgerError {
  return err instanceof LedgerError && FULL.includes(err.code ?? "");
}

/** Bytes free to this process on the filesystem of `dir` (`Infinity` where Node cannot say: `statfsSync` is Node
 * 19.6 or later, and some filesystems do not answer). */
function freeBytes(dir: string): number {
  const statfs = (fs as { statfsSync?: typeof fs.statfsSync }).statfsSync;
  try {
    if (statfs !== undefined) {
      const st = statfs(dir);
      return st.bavail * st.bsize;
    }
  } catch {
    /* unknown: below */
  }
  return Infinity;
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
    if (!st.isDirectory()) throw new Error(`${dir} is not a folder: a FileStore keeps its files in a folder`);
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

  private get reservePath(): string {
    return join(this.dir, "state.reserve");
  }

  /** Makes the reserve when it is missing and the disk has room for it and as much again, so that making it never
   * takes a disk's last free bytes (under the lock, after a transaction that wrote: never on a read). Any failure
   * leaves no file and is ignored: the transaction it follows is committed, and the next one that writes tries
   * again. */
  private ensureReserve(): void {
    try {
      if (statSync(this.reservePath).size === RESERVE_BYTES) return;
    } catch {
      /* missing: made below */
    }
    if (freeBytes(this.dir) < 2 * RESERVE_BYTES) return;
    const tmp = `${this.reservePath}.${process.pid}.tmp`;
    try {
      const fd = openSync(tmp, "w", 0o600);
      try {
        const zeros = Buffer.alloc(RESERVE_BYTES);
        for (let at = 0; at < zeros.length;) at += writeSync(fd, zeros, at, zeros.length - at);
        fsyncSync(fd); // whole after a crash, or not there: never an empty file that would pass for the reserve
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.reservePath);
    } catch {
      try {
        rmSync(tmp, { force: true });
      } catch {
        /* swept by the next transaction that writes */
      }
    }
  }

  /** Deletes the reserve, giving its room to a transaction that needs it; whether there was one. */
  private releaseReserve(): boolean {
    try {
      unlinkSync(this.reservePath);
      return true;
    } catch {
      return false;
    }
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
      throw fileError(this.statePath, err);
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
      throw fileError(target, err);
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

  /** Removes what a killed process left: temporary files (a state's or a reserve's) and logs other than the current
   * one, `gen` (under the lock, in a transaction that writes, after the state was read: a damaged state or a missing
   * one beside traces never gets here). `state.reserve` stays. */
  private sweep(gen: number): void {
    for (const name of readdirSync(this.dir)) {
      if (name.endsWith(".tmp") || (/^outbox\.\d+\.log$/.test(name) && name !== `outbox.${gen}.log`)) {
        rmSync(join(this.dir, name), { force: true });
      }
    }
  }

  /** Runs one transaction under the lock: `fn` on the state read afresh, then what it changed written (a read writes
   * nothing), then the reserve made if it is missing. `spare`: whether a transaction that adds no report and fails
   * for lack of room may delete the reserve and run once more. */
  private runLocked<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions, spare = true): T {
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
    try {
      this.write(next, cursor, tx, migrated);
    } catch (err) {
      if (!diskFull(err)) throw err;
      if (tx.appended.length > 0) {
        throw new LedgerError(`the disk of ${this.dir} is full (${err.code}): nothing was recorded and nothing ` +
          `charged; uploading what waits frees room, and so does any other file deleted (${err.message})`, err.code);
      }
      if (spare && this.releaseReserve()) return this.runLocked(fn, options, false);
      throw err;
    }
    this.ensureReserve();
    return out;
  }

  /** Writes what transaction `tx` changed: the reports it appended, then the state `next` (the commit), then retires
   * a log nothing refers to any more. `cursor` is the outbox as read; `migrated`, a format-1 state's outbox. */
  private write(next: DeviceState, cursor: Cursor, tx: PendingTransaction, migrated: OutboxItem[] | null): void {
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
        throw fileError(path, err);
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
        throw fileError(path, err);
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
    } else if (cursor.start > this.compactBytes && cursor.start >= cursor.end - cursor.start && this.compact(cursor)) {
      retired = this.log(cursor.gen);
      cursor.gen += 1;
      cursor.end -= cursor.start;
      cursor.start = 0;
    }
    const doc = { device: next, outbox: [cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count] };
    this.writeAtomically(this.statePath, JSON.stringify(doc));
    if (retired !== null) rmSync(retired, { force: true });
    this.step("retired");
  }

  /** Copies the reports of log `cursor.gen` that wait into log `cursor.gen + 1`, synced; `false` (the copy removed,
   * the log kept as it is) when the disk has no room for it: compacting can wait, an acknowledgement cannot. */
  private compact(cursor: Cursor): boolean {
    const old = this.log(cursor.gen), fresh = this.log(cursor.gen + 1);
    const src = openSync(old, "r");
    try {
      const live = Buffer.alloc(cursor.end - cursor.start);
      for (let at = 0; at < live.length;) {
        const got = readSync(src, live, at, live.length - at, cursor.start + at);
        if (got === 0) throw new LedgerError(`${old} is damaged: shorter than its committed ${cursor.end} bytes`);
        at += got;
      }
      try {
        const dst = openSync(fresh, "w", 0o600);
        try {
          for (let at = 0; at < live.length;) at += writeSync(dst, live, at, live.length - at);
          fsyncSync(dst);
        } finally {
          closeSync(dst);
        }
      } catch (err) {
        if (!diskFull(fileError(fresh, err))) throw err;
        rmSync(fresh, { force: true });
        return false;
      }
    } finally {
      closeSync(src);
    }
    return true;
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
