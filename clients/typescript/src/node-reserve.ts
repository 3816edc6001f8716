/**
 * Node only: the reserve of a `FileStore` folder (`node.ts`, "A full disk"), `state.reserve`: `RESERVE_BYTES` of
 * zeros kept beside the state, so that a transaction that fails for lack of room without adding a report can delete
 * it and run once more. It holds no data: it is neither a trace of a state nor a temporary file. The Python client
 * keeps the same reserve (`ldp.client.reserve`).
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from "node:fs";
import * as fs from "node:fs";
import { join } from "node:path";

/** The size of a `FileStore`'s reserve, `state.reserve`: 256 KiB of zeros, as the Python client's. */
export const RESERVE_BYTES = 256 * 1024;

/** The reserve of folder `dir`. */
function reservePath(dir: string): string {
  return join(dir, "state.reserve");
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

/** Makes the reserve of folder `dir` when it is missing and the disk has room for it and as much again, so that
 * making it never takes a disk's last free bytes (under the lock, after a transaction that wrote: never on a read).
 * Any failure leaves no file and is ignored: the transaction it follows is committed, and the next one that writes
 * tries again. */
export function ensureReserve(dir: string): void {
  const path = reservePath(dir);
  try {
    if (statSync(path).size === RESERVE_BYTES) return;
  } catch {
    /* missing: made below */
  }
  if (freeBytes(dir) < 2 * RESERVE_BYTES) return;
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    const fd = openSync(tmp, "w", 0o600);
    try {
      const zeros = Buffer.alloc(RESERVE_BYTES);
      for (let at = 0; at < zeros.length;) at += writeSync(fd, zeros, at, zeros.length - at);
      fsyncSync(fd); // whole after a crash, or not there: never an empty file that would pass for the reserve
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      /* swept by the next transaction that writes */
    }
  }
}

/** Deletes the reserve of folder `dir`, giving its room to a transaction that needs it; whether there was one. */
export function releaseReserve(dir: string): boolean {
  try {
    unlinkSync(reservePath(dir));
    return true;
  } catch {
    return false;
  }
}
