/**
 * Node only: `FileStore`, a device's state in one JSON file (`state.ts`). An update takes the file's lock (a lock
 * file made with O_EXCL holding the owner's pid; a lock whose process is dead is removed), reads the state, writes
 * the new one to a temporary file, fsyncs it, renames it over the state and fsyncs the folder: a crash at any point
 * leaves the old state or the new one whole, and two processes never both charge from the same state.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { DeviceState, StateStore } from "./state.js";

export { TelemetryClient } from "./client.js";
export { MemoryStore } from "./state.js";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export class FileStore implements StateStore {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string, private readonly lockWaitMs = 30_000) {}

  private async lock(): Promise<number> {
    const lockPath = `${this.path}.lock`;
    const deadline = Date.now() + this.lockWaitMs;
    for (;;) {
      try {
        const fd = openSync(lockPath, "wx");
        writeFileSync(fd, String(process.pid));
        return fd;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        let owner = NaN;
        try {
          owner = Number(readFileSync(lockPath, "utf8"));
        } catch {
          continue; // removed meanwhile
        }
        if (Number.isInteger(owner) && owner > 0 && !alive(owner)) {
          rmSync(lockPath, { force: true }); // its owner died holding it
          continue;
        }
        if (Date.now() > deadline) throw new Error(`${lockPath}: held by process ${owner} for over ${this.lockWaitMs} ms`);
        await new Promise((r) => setTimeout(r, 2 + Math.random() * 8));
      }
    }
  }

  update<T>(fn: (state: DeviceState | null) => [DeviceState, T]): Promise<T> {
    const run = this.queue.then(async () => {
      const fd = await this.lock();
      try {
        let state: DeviceState | null = null;
        try {
          state = JSON.parse(readFileSync(this.path, "utf8")) as DeviceState;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        }
        const [next, out] = fn(state);
        const tmp = `${this.path}.${process.pid}.tmp`;
        const tfd = openSync(tmp, "w");
        try {
          writeFileSync(tfd, JSON.stringify(next));
          fsyncSync(tfd);
        } finally {
          closeSync(tfd);
        }
        renameSync(tmp, this.path);
        const dfd = openSync(dirname(this.path), "r");
        try {
          fsyncSync(dfd);
        } finally {
          closeSync(dfd);
        }
        return out;
      } finally {
        closeSync(fd);
        rmSync(`${this.path}.lock`, { force: true });
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}
