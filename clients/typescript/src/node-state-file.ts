/**
 * Node only: the state file of a `FileStore` folder (`node.ts`), `state.json`:
 * `{"device": <DeviceState>, "outbox": [gen, start, end, first, count]}` — the state, and the cursor of the outbox
 * log that holds its waiting reports. Read whole and checked (a format-1 state, 0.1.x's, is migrated); replaced whole
 * (a temporary file written, fsynced, renamed over it, the folder fsynced), so a crash leaves the old state or the
 * new one. Missing beside traces of a state, or damaged, it is a `LedgerError`: the budget is never silently reset.
 */
import { closeSync, fsyncSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { LedgerError, RESET, fileError } from "./node-errors.js";
import { Cursor, logPath } from "./node-outbox-log.js";
import { migrateFormat1 } from "./state.js";
import type { OutboxItem } from "./state.js";

/** The traces of a state in a folder: a temporary state file, an outbox log (not `lock`, not `lock.<n>.sock`, not
 * `state.reserve`). */
const TRACE = /^(?:state\.json\..*\.tmp|outbox\.\d+\.log)$/;

/** A state file as read: the device state as JSON text (`null`: no state yet), its outbox's cursor, and a format-1
 * state's outbox (`migrated`, else `null`). */
export interface StateRead {
  state: string | null;
  cursor: Cursor;
  migrated: OutboxItem[] | null;
}

/** The steps of writing a state file (`FileStoreStep`s). */
export type StateFileStep = "state-written" | "state-synced" | "state-renamed" | "folder-synced";

/** The state file of folder `dir`. */
export function statePath(dir: string): string {
  return join(dir, "state.json");
}

/** The state file of folder `dir` as text, `null` when it is missing (any other failure to read it is a
 * `LedgerError`). */
export function readStateText(dir: string): string | null {
  const path = statePath(dir);
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw fileError(path, err);
  }
}

/** The state of folder `dir` whose state file is `text` (`null`: missing), with its outbox's cursor (or a format-1
 * state's outbox); a `LedgerError` when it is damaged, or missing beside traces of a state. */
export function parseState(dir: string, text: string | null): StateRead {
  const path = statePath(dir);
  if (text === null) {
    const traces = readdirSync(dir).filter((name) => TRACE.test(name)).sort();
    if (traces.length > 0) {
      throw new LedgerError(`${path} is missing but ${traces.join(", ")} remain(s) in the folder: a ` +
        `device recorded here and what it spent cannot be known, so it is not opened as a new device${RESET}`);
    }
    return { state: null, cursor: { gen: 0, start: 0, end: 0, first: 1, count: 0 }, migrated: null };
  }
  let doc: { device?: unknown; outbox?: unknown; format?: unknown };
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new LedgerError(`${path} is damaged: ${(err as Error).message}${RESET}`);
  }
  if (doc !== null && typeof doc === "object" && doc.format === 1) {
    const m = migrateFormat1(doc as Record<string, unknown>);
    return { state: JSON.stringify(m.state), cursor: { gen: 0, start: 0, end: 0, first: 1, count: 0 }, migrated: m.outbox };
  }
  const o = doc?.outbox;
  if (doc === null || typeof doc !== "object" || typeof doc.device !== "object" || doc.device === null ||
    !Array.isArray(o) || o.length !== 5 || !o.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    throw new LedgerError(`${path} is damaged: not a FileStore state${RESET}`);
  }
  const cursor = { gen: o[0], start: o[1], end: o[2], first: o[3], count: o[4] };
  if (cursor.count > 0) checkLogLength(dir, cursor);
  return { state: JSON.stringify(doc.device), cursor, migrated: null };
}

/** A `LedgerError` when the log of `cursor` is shorter than the bytes the state committed to it. */
function checkLogLength(dir: string, cursor: Cursor): void {
  let size = 0;
  try {
    size = statSync(logPath(dir, cursor.gen)).size;
  } catch {
    /* missing: size 0 */
  }
  if (size < cursor.end) {
    throw new LedgerError(`${logPath(dir, cursor.gen)} is damaged: shorter than its committed ${cursor.end} bytes` +
      RESET);
  }
}

/** Replaces file `target` of folder `dir` with `text`: a temporary file written, synced and renamed over it, then the
 * folder synced; `step` is told each step. A failure before the rename leaves `target` as it was (a `LedgerError`). */
export function writeAtomically(dir: string, target: string, text: string, step: (s: StateFileStep) => void): void {
  const tmp = `${target}.${process.pid}.${Date.now().toString(16)}.tmp`;
  try {
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, text);
      step("state-written");
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    step("state-synced");
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw fileError(target, err);
  }
  step("state-renamed");
  if (process.platform !== "win32") {
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  }
  step("folder-synced");
}
