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
 * * The lock is one the operating system releases when its holder dies, at any step and however long ago, so no
 *   step exists at which a killed process could leave it held: on Linux (and Android), an abstract Unix socket bound
 *   under a name derived from the folder's device and inode, and for writing, a Unix socket in the folder (below); a
 *   named pipe on Windows; an open file with `O_EXLOCK` on macOS and the BSDs. Transactions of one process on one
 *   folder also queue in-process.
 *
 * The lock on Linux. An abstract socket is the kernel's own lock, released with the process, but the kernel keeps one
 * set of abstract names per network namespace: two containers sharing a volume (or a recorder under `unshare -n`) each
 * took "the" lock, wrote at once and damaged the store. Node has no `flock` or `fcntl` locks, so the lock has a second
 * part, reached through the folder itself as the volume is: a transaction that writes, while holding its namespace's
 * abstract socket, listens on a pathname socket `lock.<n>.sock` in the folder, `n` the inode of its network namespace
 * (`/proc/self/ns/net`), and only then connects to every other `lock.<m>.sock` there. One that accepts is a live
 * holder in another namespace: the transaction closes and removes its own socket, lets the abstract one go, and tries
 * again after a random pause (up to `lockWaitMs`, then the usual `LedgerError`). One that refuses (`ECONNREFUSED`) is
 * what a holder killed in namespace `m` left: nothing listens there. Announcing, then looking, lets at most one of two
 * namespaces through: each listens before it looks, so the one that looks last sees the other. Only namespace `n`
 * removes or binds `lock.<n>.sock`, and only under its own abstract socket, so no process removes a name another may
 * have just bound; the owner removes its socket when it releases the lock, and a socket a killed owner left is removed
 * by the next writer of that namespace (the OS closed the listening socket: the lock is free, as the abstract one).
 * A folder path too long for a socket address (108 bytes) is reached through `/proc/self/fd/<folder fd>/`. The
 * sockets of dead namespaces stay (one empty file each, never a trace of a state: delete them only while no process
 * uses the folder); each costs writers one refused connection.
 *
 * Reads do not announce themselves (that would create a file, and reads write nothing): under the abstract socket
 * they read `state.json`, replaced whole by a rename, and the bytes of the log it names, which no writer changes while
 * the state names them. A writer of another namespace can only make a read fail, never make it wrong: the log it
 * names deleted (retired or compacted), or a new device's first log there before its state. So a read (or the read
 * part of any transaction) that finds a log short or missing, or traces without a state, looks again before saying
 * so: if another namespace's lock socket answers, or `state.json` changed meanwhile, it runs again after a pause.
 * A transaction that writes read its state before it announced itself: once announced, it reads `state.json` again,
 * and if another namespace committed in between, it runs again on the new state (its function, like any store's,
 * may run more than once).
 *
 * Reads write nothing: opening a store and every query read `state.json` and the log under the lock and leave every
 * file as it was (no temporary file, no `fsync`, no lock socket: the folder's entries and times are unchanged), and so
 * does a transaction that ends up writing nothing (it announces itself only once it has something to write).
 * Temporary files and logs no state refers to, which a killed process leaves, are removed by the next transaction
 * that writes. The store fails closed: a `state.json` that cannot be read, or one that is missing while an
 * `outbox.<n>.log` or a temporary state file remains (`lock` and `lock.<n>.sock` are not traces), is a `LedgerError`:
 * the budget is never silently reset, and a device is started over only by deleting the whole folder.
 *
 * A full disk: `state.reserve` is `RESERVE_BYTES` (256 KiB) of zeros that a transaction which wrote leaves beside the
 * state when it is missing and the disk has room for it and as much again (written to a temporary file and renamed;
 * failing, for lack of room above all, is ignored: the next transaction that writes tries again). Reads never make
 * it. A transaction that fails for lack of room (`ENOSPC`, `EDQUOT`) without adding a report — an acknowledgement,
 * pinning a batch, an opt-out or opt-in — deletes the reserve and runs once more, so an app can still upload and
 * acknowledge on a full disk, which frees room; a record fails (`LedgerError`, `code` `ENOSPC` or `EDQUOT`) with
 * nothing charged and the reserve kept. The reserve holds no data: it is neither a trace of a state nor a temporary
 * file. The Python client keeps the same reserve (`ldp.client.reserve`).
 *
 * The parts, a module each: the lock (`node-lock.ts`), `state.json` (`node-state-file.ts`), the outbox logs
 * (`node-outbox-log.ts`), the reserve (`node-reserve.ts`) and `LedgerError` (`node-errors.ts`); this module runs a
 * transaction over them.
 */
import { mkdirSync, readdirSync, realpathSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { LedgerError, diskFull, fileError } from "./node-errors.js";
import { HeldLock, lockName, tryLock } from "./node-lock.js";
import { Cursor, appendRecords, compactLog, logPath, readRecords } from "./node-outbox-log.js";
import { ensureReserve, releaseReserve } from "./node-reserve.js";
import { parseState, readStateText, statePath, writeAtomically } from "./node-state-file.js";
import type { StateRead } from "./node-state-file.js";
import { PendingTransaction } from "./state.js";
import type { DeviceState, OutboxItem, StateStore, StoreTransaction, TransactOptions } from "./state.js";

export { TelemetryClient } from "./client.js";
export { LedgerError } from "./node-errors.js";
export { RESERVE_BYTES } from "./node-reserve.js";
export { MemoryStore } from "./state.js";

/** The steps of a `FileStore` transaction, in order (what `FileStoreOptions.onStep` is told). `announced`: the
 * lock keeps out every process that shares the folder, as a transaction that writes needs (on Linux its socket in
 * the folder listens; a read never gets there). A transaction that must try again (another namespace's writer held
 * the folder) goes from `unlocked` back to `locked`. */
export const FILE_STORE_STEPS = [
  "lock", "locked", "read", "announced", "log-written", "log-synced", "state-written", "state-synced",
  "state-renamed", "folder-synced", "retired", "unlocked",
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

/** What one try of a transaction under the lock came to: its value, or a reason to try again after a pause (a live
 * holder of another namespace's lock socket, `blocker`, or what looked like damage while another namespace wrote,
 * `anomaly`). */
type Attempt<T> = { done: true; value: T } | { done: false; blocker?: string; anomaly?: unknown };

const queues = new Map<string, Promise<unknown>>();

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
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
    this.lockName = lockName(this.dir, st);
  }

  /** Every `FileStore` of this process on this folder (by its real path) has this folder's outbox. */
  get outboxKey(): string {
    return `file\0${this.dir}`;
  }

  private step(s: FileStoreStep): void {
    if (this.onStep !== undefined) this.onStep(s);
  }

  private log(gen: number): string {
    return logPath(this.dir, gen);
  }

  /** Takes this namespace's part of the folder's lock (the whole lock elsewhere than Linux), waiting for a process
   * that holds it until `deadline` (then a `LedgerError`). */
  private async lock(deadline: number): Promise<HeldLock> {
    let pause = 1;
    for (;;) {
      const held = await tryLock(this.dir, this.lockName).catch((err: Error) => {
        throw new LedgerError(`${this.dir}: ${err.message}`, (err as NodeJS.ErrnoException).code);
      });
      if (held !== null) return held;
      if (Date.now() > deadline) throw this.lockTimeout(null);
      await sleep(pause);
      pause = Math.min(pause * 2, 50);
    }
  }

  /** The error of a lock held by another process past `lockWaitMs`; `blocker`: the lock socket of another network
   * namespace that last answered. */
  private lockTimeout(blocker: string | null): LedgerError {
    const where = blocker === null ? "" : ` (a process of another network namespace: its ${blocker} answers)`;
    return new LedgerError(`${this.dir}: another process held the state for over ${this.lockWaitMs} ms${where}`);
  }

  /** Whether what a try under `lock` read may have been cut from under it by a writer of another namespace, so that
   * the failure it saw (`state.json` having been `text`) is to be tried again rather than reported: another
   * namespace's lock socket answers, or `state.json` is no longer `text`. Never while `lock` keeps everyone out.
   * Writes nothing. */
  private async mayBeStale(lock: HeldLock, text: string | null): Promise<boolean> {
    if (lock.exclusive) return false;
    if ((await lock.othersLive()) !== null) return true; // first: a writer that has let go committed, or died
    return readStateText(this.dir) !== text;
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

  /**
   * One try of a transaction under `lock`: `fn` on the state read afresh, then, if it changed something, the lock
   * made to keep out every process sharing the folder (`announce`) and what it changed written, then the reserve made
   * if it is missing; a read writes nothing and announces nothing. What it read is checked where a writer of another
   * namespace could have cut it short (`mayBeStale`); the state is read again once announced, and `fn` runs again on
   * it if another namespace committed in between. `spare`: whether a transaction that adds no report and fails for
   * lack of room may delete the reserve and run once more.
   */
  private async runLocked<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions, lock: HeldLock,
    spare = true): Promise<Attempt<T>> {
    const text = readStateText(this.dir);
    let read: StateRead;
    try {
      read = parseState(this.dir, text);
    } catch (err) {
      if (await this.mayBeStale(lock, text)) return { done: false, anomaly: err };
      throw err;
    }
    const { state, cursor, migrated } = read;
    this.step("read");
    const committed = migrated !== null ? migrated.length : cursor.count;
    let anomaly: { error: unknown } | undefined;
    const tx = new PendingTransaction(state, committed, (skip, n) => {
      if (migrated !== null) return migrated.slice(skip, skip + n);
      try {
        return readRecords(this.log(cursor.gen), cursor.start, cursor.end, skip + n).slice(skip).map(([r]) => r);
      } catch (err) {
        anomaly ??= { error: err };
        throw err;
      }
    }, options.head ?? Infinity);
    let out: T;
    try {
      out = fn(tx);
    } catch (err) {
      if (anomaly !== undefined && await this.mayBeStale(lock, text)) return { done: false, anomaly: anomaly.error };
      throw err;
    }
    if (anomaly !== undefined && await this.mayBeStale(lock, text)) return { done: false, anomaly: anomaly.error };
    const next: DeviceState | null = tx.state;
    if (next === null || options.readOnly || (migrated === null && !tx.changed)) return { done: true, value: out };
    let again = false;
    try {
      if (!lock.exclusive) {
        const blocker = await lock.announce().catch((err: Error) => {
          throw err instanceof LedgerError ? err : fileError(this.dir, err);
        });
        if (blocker !== null) return { done: false, blocker };
        again = readStateText(this.dir) !== text; // another namespace committed between the read and the announcement
      }
      this.step("announced");
      if (!again) this.write(next, cursor, tx, migrated);
    } catch (err) {
      if (!diskFull(err)) throw err;
      if (tx.appended.length > 0) {
        throw new LedgerError(`the disk of ${this.dir} is full (${err.code}): nothing was recorded and nothing ` +
          `charged; uploading what waits frees room, and so does any other file deleted (${err.message})`, err.code);
      }
      if (spare && releaseReserve(this.dir)) return this.runLocked(fn, options, lock, false);
      throw err;
    }
    if (again) return this.runLocked(fn, options, lock, spare);
    ensureReserve(this.dir);
    return { done: true, value: out };
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
      const dropped = readRecords(this.log(cursor.gen), cursor.start, cursor.end, tx.dropped);
      cursor.start += dropped.reduce((s, [, len]) => s + len, 0);
      cursor.count -= dropped.length;
      cursor.first += dropped.length;
    }
    if (appended.length > 0) {
      appendRecords(this.log(cursor.gen), cursor, appended, () => this.step("log-written"));
      this.step("log-synced");
    }
    let retired: string | null = null;
    if (cursor.count === 0 && cursor.end > 0) {
      retired = this.log(cursor.gen);
      cursor.gen += 1;
      cursor.start = 0;
      cursor.end = 0;
    } else if (cursor.start > this.compactBytes && cursor.start >= cursor.end - cursor.start && compactLog(this.dir, cursor)) {
      retired = this.log(cursor.gen);
      cursor.gen += 1;
      cursor.end -= cursor.start;
      cursor.start = 0;
    }
    const doc = { device: next, outbox: [cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count] };
    writeAtomically(this.dir, statePath(this.dir), JSON.stringify(doc), (step) => this.step(step));
    if (retired !== null) rmSync(retired, { force: true });
    this.step("retired");
  }

  /** Runs `fn` as one transaction (`StateStore.transact`): under the lock, trying again after a random pause while a
   * writer of another network namespace holds the folder, until `lockWaitMs` (then a `LedgerError`, or the damage
   * the last try saw). `fn` may run more than once; only its last run's changes are committed. */
  transact<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions = {}): Promise<T> {
    const previous = queues.get(this.dir) ?? Promise.resolve();
    const run = previous.then(() => this.attempt(fn, options));
    const tail = run.catch(() => undefined);
    queues.set(this.dir, tail);
    void tail.then(() => {
      if (queues.get(this.dir) === tail) queues.delete(this.dir);
    });
    return run;
  }

  private async attempt<T>(fn: (tx: StoreTransaction) => T, options: TransactOptions): Promise<T> {
    this.step("lock");
    const deadline = Date.now() + this.lockWaitMs;
    let pause = 1;
    for (;;) {
      const lock = await this.lock(deadline);
      let attempt: Attempt<T>;
      try {
        this.step("locked");
        attempt = await this.runLocked(fn, options, lock);
      } finally {
        lock.release();
        this.step("unlocked");
      }
      if (attempt.done) return attempt.value;
      if (Date.now() > deadline) {
        if (attempt.anomaly !== undefined) throw attempt.anomaly;
        throw this.lockTimeout(attempt.blocker ?? null);
      }
      await sleep(pause * (0.5 + Math.random())); // at random: two namespaces that gave way to each other part
      pause = Math.min(pause * 2, 50);
    }
  }
}
