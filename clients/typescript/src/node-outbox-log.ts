/**
 * Node only: the outbox logs of a `FileStore` folder (`node.ts`). `outbox.<gen>.log` holds the reports, one
 * `id TAB metric TAB line` per line; the state's cursor says which bytes of which log are the waiting reports. Bytes
 * past the cursor's `end` (a crash between an append and the state that counts it) are not reports and are cut off
 * by the next append; acknowledged reports are dropped by moving `start`, and a log is copied forward (compacted)
 * into the next one once its dropped head outweighs what remains.
 */
import {
  closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, rmSync, writeSync, constants as fsConstants,
} from "node:fs";
import { join } from "node:path";
import { LedgerError, RESET, diskFull, fileError } from "./node-errors.js";
import type { OutboxItem } from "./state.js";

/** Where the waiting reports are: bytes `start` to `end` of log `gen`, `count` reports, the first of them the
 * outbox's report number `first`. */
export interface Cursor {
  gen: number;
  start: number;
  end: number;
  first: number;
  count: number;
}

/** Log `gen` of folder `dir`. */
export function logPath(dir: string, gen: number): string {
  return join(dir, `outbox.${gen}.log`);
}

/** Up to `n` records from byte `from` (below `end`) of the log at `path`, each with its length in bytes. */
export function readRecords(path: string, from: number, end: number, n: number): Array<[OutboxItem, number]> {
  const out: Array<[OutboxItem, number]> = [];
  if (n <= 0 || from >= end) return out;
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw fileError(path, err);
    throw new LedgerError(`${path} is damaged: missing, yet the state counts ${end - from} bytes of reports in it` +
      RESET);
  }
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
        out.push([parseRecord(path, buf.subarray(0, nl).toString("utf8")), nl + 1]);
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

/** One record of the log at `path`, `id TAB metric TAB line` (a `LedgerError` when it is malformed). */
function parseRecord(path: string, record: string): OutboxItem {
  const t1 = record.indexOf("\t"), t2 = t1 < 0 ? -1 : record.indexOf("\t", t1 + 1);
  const id = Number(record.slice(0, t1));
  if (t2 < 0 || !Number.isSafeInteger(id)) throw new LedgerError(`${path} is damaged: a record is malformed`);
  return { id, metric: record.slice(t1 + 1, t2), line: record.slice(t2 + 1) };
}

/** Appends `items` to the log at `path` at the cursor's `end` (bytes past it, a torn append, cut off first), synced,
 * and moves `end` and `count` past them. `written` is told once the bytes are written, before they are synced. */
export function appendRecords(path: string, cursor: Cursor, items: readonly OutboxItem[], written: () => void): void {
  const text = items.map((r) => `${r.id}\t${r.metric}\t${r.line}\n`).join("");
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
    written();
    fsyncSync(fd);
    cursor.end += bytes.length;
    cursor.count += items.length;
  } catch (err) {
    throw fileError(path, err);
  } finally {
    closeSync(fd);
  }
}

/** Copies the reports of log `cursor.gen` of folder `dir` that wait into log `cursor.gen + 1`, synced; `false` (the
 * copy removed, the log kept as it is) when the disk has no room for it: compacting can wait, an acknowledgement
 * cannot. */
export function compactLog(dir: string, cursor: Cursor): boolean {
  const old = logPath(dir, cursor.gen), fresh = logPath(dir, cursor.gen + 1);
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
